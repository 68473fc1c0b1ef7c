"""tinyattn beside PyTorch on the CPU: the same work, each library in fresh processes of its
own and both in one process (docs/benchmarks.md).

    PYTHONPATH=. python benchmarks/run.py                      # every case; rewrites the doc
    PYTHONPATH=. python benchmarks/run.py --quick --no-write   # a fast look, printed only
    PYTHONPATH=. python benchmarks/run.py --tiny               # every case still runs (smoke)
    PYTHONPATH=. python benchmarks/run.py --cases mha gpt_tiny --reps 15 --threads 2
    PYTHONPATH=. python benchmarks/run.py --cases gpt_tiny gpt_medium --memory  # + peak memory
    PYTHONPATH=. python benchmarks/run.py --processes own --process-count 9   # own processes

Each case is a module of benchmarks/cases/ (common.py: what they share); this file is the
runner: timing, the table, the machine, and docs/benchmarks.md.

(from the repository root; ``PYTHONPATH=.`` is not needed after ``pip install -e .``).

Each library in its own process (``--processes own``, part of the default ``both``): the
runner starts fresh processes, alternating tinyattn and torch, each building its side of the
cases and timing ``--reps`` steps (``--worker``, internal). The tinyattn process never imports
torch, as a learner's program does not: once torch has run in a process, glibc's raised mmap
threshold lets NumPy reuse freed memory, so a one-process benchmark hides the page faults and
kernel time a tinyattn program pays when it maps and unmaps its large arrays afresh. Each
process reports its median step, minor page faults and kernel CPU time per step (getrusage);
the table gives the medians over processes and the median of paired per-process ratios. The
targets are judged on these figures; the one-process table stays beside them.

Each case builds the same model in tinyattn and in torch, with the same weights, and checks
that both give the same output before timing anything. Both are warmed up, then timed in
alternation, A B, B A, A B, ..., so a change in the machine's load hits both alike. A case's
time is the median over ``--reps`` repetitions; its ratio is the median of the per-repetition
ratios tinyattn / torch (paired, so load that hits one repetition hits both sides of its
ratio), shown with the quartiles of those ratios (the middle half of the repetitions).
Without torch installed only tinyattn is timed. Both libraries run with the same number of
threads (``--threads``, default 1: NumPy's BLAS through threadpoolctl, torch through
``torch.set_num_threads``); docs/benchmarks.md says why 1. With one thread the clock is the
process's CPU time (``--clock cpu``), which leaves out the time other processes hold the core;
with more threads it is wall time (``--clock wall``).

FLOPs count the matrix multiplies of the dense computation, forward and backward (2 M N K
each; elementwise work is not counted). A case's share is its FLOP rate over the machine's
float32 matmul rate, measured by the ``matmul`` case (the better of tinyattn and torch).
The results table, the command, the date and the machine replace the text between
``<!-- bench:start -->`` and ``<!-- bench:end -->`` in docs/benchmarks.md (temp file, then
``os.replace``, so an interrupted run never leaves half a file).
"""
from __future__ import annotations

import argparse
import datetime
import gc
import json
import math
import os
import platform
import resource
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np


from cases import CASES, Case, build_cases
from cases.common import in_sequence
import memory

if os.environ.get("TINYATTN_BENCH_SIDE") == "tinyattn":
    torch = None                     # an own-process worker timing tinyattn alone
else:
    try:
        import torch
    except ImportError:  # tinyattn alone
        torch = None

try:
    import threadpoolctl
except ImportError:
    threadpoolctl = None

__all__ = ["main", "CASES"]

DOC = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "docs",
                   "benchmarks.md")
START, END = "<!-- bench:start -->", "<!-- bench:end -->"


# ---------------------------------------------------------------- timing
CLOCKS = {"cpu": time.process_time, "wall": time.perf_counter}


def time_case(case: Case, reps: int, warmup: int, clock: str) -> Dict[str, List[float]]:
    """Seconds per call for each side, ``reps`` times, sides alternating A B / B A."""
    now = CLOCKS[clock]
    sides = [("tinyattn", case.tinyattn)]
    if case.torch is not None:
        sides.append(("torch", case.torch))
    for _, run in sides:
        for _ in range(warmup * case.inner):
            run()
    times: Dict[str, List[float]] = {name: [] for name, _ in sides}
    for rep in range(reps):
        for name, run in (sides if rep % 2 == 0 else sides[::-1]):
            gc.collect()
            start = now()
            for _ in range(case.inner):
                run()
            times[name].append((now() - start) / case.inner)
    return times


def time_phases(case: Case, reps: int, warmup: int, clock: str) -> Dict[str, Dict[str, float]]:
    """Median seconds of each phase of a step (forward, backward, optimizer) per side."""
    now = CLOCKS[clock]
    sides = list(case.phases.items())
    for _, phases in sides:
        for _ in range(warmup):
            in_sequence(phases)()
    times: Dict[str, Dict[str, List[float]]] = {side: {} for side, _ in sides}
    for rep in range(reps):
        for side, phases in (sides if rep % 2 == 0 else sides[::-1]):
            gc.collect()
            for phase_name, phase in phases:
                start = now()
                phase()
                times[side].setdefault(phase_name, []).append(now() - start)
    return {side: {p: statistics.median(t) for p, t in by_phase.items()}
            for side, by_phase in times.items()}


def phase_table(name: str, medians: Dict[str, Dict[str, float]]) -> str:
    rows = [f"| `{name}` phase | tinyattn | torch | ratio |", "|---|---:|---:|---:|"]
    for phase, ours in medians["tinyattn"].items():
        theirs = medians.get("torch", {}).get(phase)
        ratio = "-" if theirs is None else f"{ours / theirs:.2f}x"
        rows.append(f"| {phase} | {_fmt_time(ours)} | {_fmt_time(theirs)} | {ratio} |")
    return "\n".join(rows)


@dataclass
class Result:
    case: Case
    ours: float                    # median seconds per call
    theirs: Optional[float]
    ratio: Optional[float]         # median of paired ratios
    spread: Tuple[float, float] = (math.nan, math.nan)  # their quartiles (the middle half)


def summarize(case: Case, times: Dict[str, List[float]]) -> Result:
    ours = statistics.median(times["tinyattn"])
    if "torch" not in times:
        return Result(case, ours, None, None)
    pairs = [a / b for a, b in zip(times["tinyattn"], times["torch"])]
    spread = (math.nan, math.nan)
    if len(pairs) >= 2:
        low, _, high = statistics.quantiles(pairs, n=4)
        spread = (low, high)
    return Result(case, ours, statistics.median(times["torch"]), statistics.median(pairs),
                  spread)


# ---------------------------------------------------------------- each library in its own process
WORKER_MARK = "bench-worker-result: "


def worker(args: argparse.Namespace) -> int:
    """``--worker SIDE``: time one side of each case in this fresh process (which, for
    tinyattn, never imports torch) and print the medians as one JSON line. Per step: the
    clock, minor page faults and kernel (system) CPU time, from getrusage."""
    side, now = args.worker, CLOCKS[args.clock]
    builders = build_cases(args.quick, args.tiny)
    found: Dict[str, Any] = {}
    for name in [n for n in builders if n in (args.cases or builders)]:
        case = builders[name]()
        run = case.tinyattn if side == "tinyattn" else case.torch
        if run is None:
            found[name] = None
            continue
        for _ in range(args.warmup * case.inner):
            run()
        times, faults, kernel = [], [], []
        for _ in range(args.reps):
            gc.collect()
            before, start = resource.getrusage(resource.RUSAGE_SELF), now()
            for _ in range(case.inner):
                run()
            elapsed, after = now() - start, resource.getrusage(resource.RUSAGE_SELF)
            times.append(elapsed / case.inner)
            faults.append((after.ru_minflt - before.ru_minflt) / case.inner)
            kernel.append((after.ru_stime - before.ru_stime) / case.inner)
        found[name] = {"time": statistics.median(times), "faults": statistics.median(faults),
                       "kernel": statistics.median(kernel), "target": case.target,
                       "label": case.label}
    found["torch imported"] = "torch" in sys.modules
    print(WORKER_MARK + json.dumps(found), flush=True)
    return 0


def _spawn(side: str, names: Sequence[str], args: argparse.Namespace) -> Dict[str, Any]:
    command = [sys.executable, os.path.abspath(__file__), "--worker", side, "--cases", *names,
               "--reps", str(args.reps), "--warmup", str(args.warmup),
               "--threads", str(args.threads), "--clock", args.clock]
    command += ["--quick"] if args.quick else []
    command += ["--tiny"] if args.tiny else []
    env = dict(os.environ, TINYATTN_BENCH_SIDE=side)
    done = subprocess.run(command, env=env, capture_output=True, text=True)
    lines = [line for line in done.stdout.splitlines() if line.startswith(WORKER_MARK)]
    if done.returncode != 0 or not lines:
        raise RuntimeError(f"the {side} worker process failed (exit status {done.returncode}):"
                           f"\n{done.stderr[-3000:]}")
    found = json.loads(lines[-1][len(WORKER_MARK):])
    if side == "tinyattn" and found.pop("torch imported"):
        raise RuntimeError("the tinyattn worker imported torch: its figures would not be "
                           "those of a program that imports tinyattn alone")
    return found


@dataclass
class OwnResult:
    """A case measured with each library in fresh processes of its own."""
    case_name: str
    ours: float                       # median over processes of each process's median step
    theirs: Optional[float]
    ratio: Optional[float]            # median of paired per-process ratios
    spread: Tuple[float, float]       # their quartiles
    faults: Tuple[float, Optional[float]]   # minor page faults per step, each side
    kernel: Tuple[float, Optional[float]]   # kernel CPU seconds per step, each side
    target: Optional[float]           # the highest acceptable ratio (the case's)
    label: str


def time_own_processes(names: Sequence[str], args: argparse.Namespace) -> List[OwnResult]:
    """``args.process_count`` fresh processes per side, alternating A B, B A, ..."""
    sides = ["tinyattn"] + (["torch"] if torch is not None else [])
    runs: Dict[str, List[Dict[str, Any]]] = {side: [] for side in sides}
    for count in range(args.process_count):
        for side in (sides if count % 2 == 0 else sides[::-1]):
            runs[side].append(_spawn(side, names, args))
            print(f"  process {count + 1}/{args.process_count}: {side} done", flush=True)
    results = []
    for name in names:
        ours = [run[name] for run in runs["tinyattn"]]
        theirs = [run[name] for run in runs.get("torch", []) if run.get(name)]

        def median(rows: List[Dict[str, float]], key: str) -> Optional[float]:
            return statistics.median(r[key] for r in rows) if rows else None

        pairs = [a["time"] / b["time"] for a, b in zip(ours, theirs)]
        spread = (math.nan, math.nan)
        if len(pairs) >= 2:
            low, _, high = statistics.quantiles(pairs, n=4)
            spread = (low, high)
        results.append(OwnResult(
            name, median(ours, "time"), median(theirs, "time"),
            statistics.median(pairs) if pairs else None, spread,
            (median(ours, "faults"), median(theirs, "faults")),
            (median(ours, "kernel"), median(theirs, "kernel")),
            ours[0]["target"], ours[0]["label"]))
    return results


def own_table(results: Sequence[OwnResult]) -> Tuple[str, List[str]]:
    rows = ["| case | tinyattn | torch | ratio (quartiles) | target | minor faults per step "
            "(tinyattn / torch) | kernel time per step (tinyattn / torch) |",
            "|---|---:|---:|---:|---|---:|---:|"]
    verdicts = []
    for r in results:
        ratio = "-" if r.ratio is None else f"{r.ratio:.2f}x"
        if r.ratio is not None and not math.isnan(r.spread[0]):
            ratio += f" ({r.spread[0]:.2f}-{r.spread[1]:.2f})"
        goal, target = r.target, "-"
        if goal is not None and r.ratio is not None:
            met = r.ratio <= goal
            target = f"<= {goal:g}x: {'met' if met else 'NOT met'}"
            verdicts.append(f"- {r.case_name}: {r.ratio:.2f}x against a target of <= "
                            f"{goal:g}x: {'met' if met else 'not met'}")
        faults = " / ".join("-" if f is None else f"{f:,.0f}" for f in r.faults)
        kernel = " / ".join(_fmt_time(k) for k in r.kernel)
        rows.append(f"| {r.case_name} | {_fmt_time(r.ours)} | {_fmt_time(r.theirs)} | {ratio} "
                    f"| {target} | {faults} | {kernel} |")
    return "\n".join(rows), verdicts


# ---------------------------------------------------------------- threads and machine
def set_threads(n: int) -> Any:
    """The same thread count for NumPy's BLAS and torch; returns the threadpoolctl handle
    (keep it alive while timing)."""
    handle = None
    if threadpoolctl is not None:
        handle = threadpoolctl.threadpool_limits(limits=n, user_api="blas")
    if torch is not None:
        torch.set_num_threads(n)
    return handle


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _blas_lines() -> List[str]:
    if threadpoolctl is None:
        return ["NumPy BLAS threads: unknown (threadpoolctl is not installed)"]
    lines = []
    for info in threadpoolctl.threadpool_info():
        if info.get("user_api") == "blas":
            lines.append(f"{info.get('internal_api')} {info.get('version')} "
                         f"({info.get('architecture')} kernels, "
                         f"{info.get('threading_layer')}), {info.get('num_threads')} threads, "
                         f"{os.path.basename(info.get('filepath', ''))}")
    return lines or ["no BLAS found by threadpoolctl"]


def _torch_line() -> str:
    if torch is None:
        return "not installed: tinyattn timed alone"
    config = torch.__config__.show()
    blas = next((part.split("=", 1)[1] for part in config.replace(",", " ").split()
                 if part.startswith("BLAS_INFO=")), "?")
    capability = next((line.split(":", 1)[1].strip() for line in config.splitlines()
                       if "CPU capability usage" in line), "?")
    return (f"{torch.__version__}, BLAS {blas}, CPU capability {capability}, "
            f"{torch.get_num_threads()} intra-op threads")


def machine_lines() -> List[str]:
    usable = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else "?"
    lines = [
        f"CPU: {_cpu_model()}, {os.cpu_count()} logical cores ({usable} usable by this "
        f"process)",
        f"Python {platform.python_version()} on {platform.system()} {platform.release()}",
        f"NumPy {np.__version__}; BLAS: " + "; ".join(_blas_lines()),
        f"torch: {_torch_line()}",
    ]
    env = {k: os.environ[k] for k in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE",
                                      "OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS",
                                      "MKL_NUM_THREADS") if k in os.environ}
    lines.append("threading environment: " + (", ".join(f"{k}={v}" for k, v in env.items())
                                              if env else "none of OPENBLAS_*, OMP_*, MKL_* "
                                              "set"))
    return lines


# ---------------------------------------------------------------- report
def _fmt_time(seconds: Optional[float]) -> str:
    if seconds is None:
        return "-"
    if seconds >= 1e-3:
        return f"{seconds * 1e3:.1f} ms"
    return f"{seconds * 1e6:.1f} us"


def _rate(flops: float, seconds: Optional[float], ceiling: Optional[float]) -> str:
    if not flops or seconds is None:
        return "-"
    rate = flops / seconds / 1e9
    return f"{rate:.1f}" + (f" ({100 * rate / ceiling:.0f}%)" if ceiling else "")


def table(results: Sequence[Result]) -> Tuple[str, List[str]]:
    """The Markdown table and one verdict line per case that has a target."""
    ceiling = None
    for r in results:
        if r.case.name == "matmul":
            best = r.ours if r.theirs is None else min(r.ours, r.theirs)
            ceiling = r.case.flops / best / 1e9
    rows = ["| case | tinyattn | torch | ratio (quartiles) | target | GFLOP | tinyattn GFLOP/s "
            "(% of ceiling) | torch GFLOP/s (% of ceiling) |",
            "|---|---:|---:|---:|---|---:|---:|---:|"]
    verdicts = []
    for r in results:
        c = r.case
        ratio = "-" if r.ratio is None else f"{r.ratio:.2f}x"
        if r.ratio is not None and not math.isnan(r.spread[0]):
            ratio += f" ({r.spread[0]:.2f}-{r.spread[1]:.2f})"
        target = "-"
        if c.target is not None and r.ratio is not None:
            met = r.ratio <= c.target
            target = f"<= {c.target:g}x: {'met' if met else 'NOT met'}"
            verdicts.append(f"- {c.name}: {r.ratio:.2f}x against a target of <= "
                            f"{c.target:g}x: {'met' if met else 'not met'}")
        gflop = f"{c.flops / 1e9:.2f}" if c.flops else "-"
        rows.append(f"| {c.name} | {_fmt_time(r.ours)} | {_fmt_time(r.theirs)} | {ratio} | "
                    f"{target} | {gflop} | {_rate(c.flops, r.ours, ceiling)} | "
                    f"{_rate(c.flops, r.theirs, ceiling)} |")
    if ceiling:
        rows.append("")
        rows.append(f"Ceiling: {ceiling:.1f} GFLOP/s, the float32 matmul rate of the `matmul` "
                    f"row (the faster side).")
    return "\n".join(rows), verdicts


CLOCK_TEXT = {"cpu": "times in process CPU time (time.process_time: all the process's threads, "
                     "not the time spent waiting for a core)",
              "wall": "times in wall-clock time (time.perf_counter)"}


def report(results: Sequence[Result], own_results: Sequence[OwnResult],
           args: argparse.Namespace, command: str,
           load: Tuple[Tuple[float, ...], Tuple[float, ...]], started: str) -> str:
    """The generated block: the own-process table first (the targets are judged on it), the
    shared-process table beside it."""
    body, verdicts = table(results) if results else ("", [])
    labels = {r.case.name: r.case.label for r in results}
    labels.update({r.case_name: r.label for r in own_results})
    case_lines = [f"- `{name}`: {label}" for name, label in labels.items()]
    tables = []
    if own_results:
        own_body, verdicts = own_table(own_results)
        tables += [f"**Each library in fresh processes of its own** (as a user runs it: "
                   f"{args.process_count} process(es) per library, alternating, each "
                   f"{args.reps} timed steps after {args.warmup} warm-up runs; a process's "
                   f"figure is its median, the table shows the median over processes and the "
                   f"ratio is the median of paired per-process ratios, with quartiles; the "
                   f"tinyattn process never imports torch; the torch process also builds "
                   f"tinyattn's model once, to load the same weights and check agreement):",
                   "", own_body, ""]
    if results:
        tables += ["**Both libraries in one process** (the runner's: once torch has run, "
                   "glibc's raised mmap threshold lets NumPy reuse freed memory, which a "
                   "program importing tinyattn alone does not get):", "", body, ""]
    load_text = " / ".join(f"{a:.2f}" for a in load[0]) + " before, " + \
        " / ".join(f"{a:.2f}" for a in load[1]) + " after (1 / 5 / 15 min)"
    parts = [
        f"Measured {started} with", "", "```", command, "```", "",
        f"{args.reps} repetitions after {args.warmup} warm-up runs per side, "
        f"{args.threads} thread(s) for both libraries, {CLOCK_TEXT[args.clock]}. "
        f"Load average: {load_text}.", "",
        "Machine:", "", *[f"- {line}" for line in machine_lines()], "",
        "Cases:", "", *case_lines, "", *tables,
    ]
    if verdicts:
        source = "own processes" if own_results else "one process"
        parts += [f"Targets (ratio tinyattn / torch from this run, {source}):", "",
                  *verdicts, ""]
    return "\n".join(parts)


SKELETON = f"""# Benchmarks: tinyattn beside PyTorch

Produced by `benchmarks/run.py` (its docstring says how each case is timed).

{START}
{END}
"""


def write_doc(path: str, generated: str) -> None:
    """Replace the generated block of ``path`` (creating the file if needed), atomically."""
    text = SKELETON
    if os.path.exists(path):
        with open(path, encoding="utf-8") as f:
            text = f.read()
    if START not in text or END not in text:
        raise RuntimeError(f"{path} has no {START} ... {END} block to replace; add the two "
                           f"marker lines where the results should go")
    head, rest = text.split(START, 1)
    _, tail = rest.split(END, 1)
    new_text = f"{head}{START}\n{generated}\n{END}{tail}"
    folder = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=".benchmarks-", suffix=".md", dir=folder)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(new_text)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def memory_table(names: Sequence[str]) -> str:
    """The peak memory of each GPT case's training step, both sides (benchmarks/memory.py)."""
    sides = ["tinyattn"] + (["torch"] if torch is not None else [])
    rows, largest = [], []
    for name in names:
        row, sites = memory.report(name, memory.measure(name, sides))
        rows.append(row)
        largest.append(f"- `{name}`: {sites}")
    return "\n".join([
        "Peak memory of one training step above the model, its gradients and the optimizer "
        "state (VmHWM - VmRSS over one step after a warm-up step, each library in a fresh "
        "process with glibc's mmap threshold fixed; tracemalloc: NumPy's allocations at "
        "their peak):", "",
        "| case | tinyattn step (RSS) | tinyattn step (tracemalloc) | torch step (RSS) |",
        "|---|---:|---:|---:|", *rows, "",
        "The largest allocation sites in tinyattn at the end of the forward pass (what the "
        "backward will read, alive together at the peak):", "", *largest])


# ---------------------------------------------------------------- main
def parse_args(argv: Optional[Sequence[str]]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--reps", type=int, default=None,
                        help="timed repetitions per side (default 9, or 3 with --quick)")
    parser.add_argument("--warmup", type=int, default=None,
                        help="untimed runs per side first (default 2, or 1 with --quick)")
    parser.add_argument("--quick", action="store_true",
                        help="fewer repetitions and small-op calls, for a fast look")
    parser.add_argument("--tiny", action="store_true",
                        help="every case at a toy size, 1 repetition: does each case still "
                             "run (a smoke test, not a measurement; implies --no-write)")
    parser.add_argument("--cases", nargs="+", choices=CASES, metavar="CASE",
                        help=f"run only these, from: {', '.join(CASES)}")
    parser.add_argument("--threads", type=int, default=1,
                        help="threads for NumPy's BLAS and for torch (default 1)")
    parser.add_argument("--clock", choices=sorted(CLOCKS), default=None,
                        help="cpu: this process's CPU time (time spent waiting for a core "
                             "shared with other processes is not counted; the default with "
                             "--threads 1); wall: elapsed time (the default with more "
                             "threads, whose CPU times would add up)")
    parser.add_argument("--phases", action="store_true",
                        help="also time the forward, backward and optimizer step of the GPT "
                             "cases separately")
    parser.add_argument("--memory", action="store_true",
                        help="also measure the peak memory of the GPT cases' training step, "
                             "tinyattn beside torch (benchmarks/memory.py: each side in its "
                             "own process)")
    parser.add_argument("--processes", choices=["own", "shared", "both"], default="both",
                        help="own: each library timed in fresh processes of its own, as a "
                             "user runs it (the figures the targets are judged on, with page "
                             "faults and kernel time per step); shared: both in this process; "
                             "both (default): the two tables side by side")
    parser.add_argument("--process-count", type=int, default=None,
                        help="fresh processes per library with --processes own/both "
                             "(default 5, 3 with --quick, 1 with --tiny)")
    parser.add_argument("--worker", choices=["tinyattn", "torch"], help=argparse.SUPPRESS)
    parser.add_argument("--no-write", action="store_true",
                        help="print the table only; leave docs/benchmarks.md alone")
    parser.add_argument("--output", default=DOC, help="the Markdown file to update")
    args = parser.parse_args(argv)
    if args.clock is None:
        args.clock = "cpu" if args.threads == 1 else "wall"
    if args.tiny:
        args.no_write = True
    if args.reps is None:
        args.reps = 1 if args.tiny else 3 if args.quick else 9
    if args.warmup is None:
        args.warmup = 0 if args.tiny else 1 if args.quick else 2
    if args.process_count is None:
        args.process_count = 1 if args.tiny else 3 if args.quick else 5
    if args.reps < 1 or args.warmup < 0 or args.threads < 1 or args.process_count < 1:
        parser.error("--reps, --threads and --process-count must be at least 1, --warmup at "
                     "least 0")
    return args


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = parse_args(argv)
    if args.worker:
        args.blas_limits = set_threads(args.threads)
        return worker(args)
    command = "PYTHONPATH=. python " + shlex.join(
        [os.path.relpath(sys.argv[0])] + list(sys.argv[1:] if argv is None else argv))
    started = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    args.blas_limits = set_threads(args.threads)  # the limit holds while this lives
    builders = build_cases(args.quick, args.tiny)
    names = args.cases or list(builders)
    names = [n for n in builders if n in names]
    load_before = os.getloadavg()
    own_results: List[OwnResult] = []
    if args.processes in ("own", "both"):
        print(f"each library in {args.process_count} fresh process(es) of its own:", flush=True)
        own_results = time_own_processes(names, args)
        for r in own_results:
            ratio = "" if r.ratio is None else f"  ratio {r.ratio:.2f}x"
            print(f"{r.case_name:18s} tinyattn {_fmt_time(r.ours):>10s}  torch "
                  f"{_fmt_time(r.theirs):>10s}{ratio}  (own processes)", flush=True)
    results, phase_tables = [], []
    for name in names if args.processes in ("shared", "both") else []:
        case = builders[name]()
        result = summarize(case, time_case(case, args.reps, args.warmup, args.clock))
        results.append(result)
        ratio = "" if result.ratio is None else f"  ratio {result.ratio:.2f}x"
        print(f"{name:18s} tinyattn {_fmt_time(result.ours):>10s}  torch "
              f"{_fmt_time(result.theirs):>10s}{ratio}", flush=True)
        if args.phases and case.phases:
            medians = time_phases(case, args.reps, args.warmup, args.clock)
            phase_tables.append(phase_table(name, medians))
            print(phase_tables[-1], flush=True)
    generated = report(results, own_results, args, command,
                       (load_before, os.getloadavg()), started)
    if phase_tables:
        generated += "\nThe GPT steps by phase (medians of the same repetitions count):\n\n" + \
            "\n\n".join(phase_tables) + "\n"
    if args.memory:
        generated += "\n" + memory_table([n for n in names if n in memory.SIZES]) + "\n"
    print()
    print(generated)
    if not args.no_write:
        write_doc(args.output, generated)
        print(f"wrote {args.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
