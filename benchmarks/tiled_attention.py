"""Tiled against plain attention: peak memory and forward+backward time.

    PYTHONPATH=. python benchmarks/tiled_attention.py            # S in 1024 2048 4096 8192
    PYTHONPATH=. python benchmarks/tiled_attention.py --sizes 1024 2048 --block-size 256
    PYTHONPATH=. python benchmarks/tiled_attention.py --write docs/tiled_attention.md

(from the repository root; ``PYTHONPATH=.`` is not needed after ``pip install -e .``).

Shapes: B=1, h=8, d_k=d_v=64, float32, no mask (``--causal`` for is_causal=True).
Peak memory is measured with tracemalloc, which sees NumPy's allocations: it is started after
q, k, v and the output gradient exist, so it counts what one forward+backward allocates
(scores, probabilities, saved arrays, gradients), not the inputs. Time is the median
wall time of ``--reps`` forward+backward runs, measured with tracemalloc off, plain and
tiled alternating. The machine's load average is recorded: other processes skew times.
``--write FILE`` replaces the text between ``<!-- bench:start -->`` and
``<!-- bench:end -->`` in FILE (``--section NAME``: ``<!-- NAME:start -->`` ...) with the
table, the command and the machine. BLAS thread variables (OPENBLAS_NUM_THREADS, ...) that
are set appear in the recorded command.
"""
from __future__ import annotations

import argparse
import gc
import os
import platform
import statistics
import subprocess
import sys
import time
import tracemalloc
from typing import Any, Callable, Dict, List

import numpy as np

import tinyattn.functional as F
from tinyattn.tensor import Tensor

__all__ = ["main"]

B, H, D_K = 1, 8, 64
ENV_VARS = ("PYTHONPATH", "OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")


def _step(arrays: List[np.ndarray], grad: np.ndarray, impl: str, block_size: int,
          causal: bool) -> Callable[[], None]:
    def run() -> None:
        q, k, v = (Tensor(a, requires_grad=True) for a in arrays)
        out = F.scaled_dot_product_attention(q, k, v, is_causal=causal, impl=impl,
                                             block_size=block_size)
        out.backward(grad)
    return run


def _peak_mib(run: Callable[[], None]) -> float:
    gc.collect()
    tracemalloc.start()
    try:
        run()
        return tracemalloc.get_traced_memory()[1] / 2**20
    finally:
        tracemalloc.stop()


def _time_s(run: Callable[[], None]) -> float:
    gc.collect()
    start = time.perf_counter()
    run()
    return time.perf_counter() - start


def measure(s: int, block_size: int, reps: int, causal: bool) -> Dict[str, Any]:
    """Peak memory of each impl, then ``reps`` timed runs alternating plain and tiled (so a
    change in the machine's load hits both alike); medians."""
    rng = np.random.default_rng(s)
    arrays = [rng.standard_normal((B, H, s, D_K), dtype=np.float32) for _ in range(3)]
    grad = rng.standard_normal((B, H, s, D_K), dtype=np.float32)
    runs = {impl: _step(arrays, grad, impl, block_size, causal) for impl in ("plain", "tiled")}
    row: Dict[str, Any] = {"S": s}
    for impl, run in runs.items():
        row[f"{impl}_mib"] = _peak_mib(run)
    times: Dict[str, List[float]] = {impl: [] for impl in runs}
    for _ in range(reps):
        for impl, run in runs.items():
            times[impl].append(_time_s(run))
    for impl in runs:
        row[f"{impl}_s"] = statistics.median(times[impl])
        row[f"{impl}_range"] = f"{min(times[impl]):.3f}-{max(times[impl]):.3f}"
        print(f"  S={s} {impl}: peak {row[f'{impl}_mib']:.1f} MiB, times "
              f"{', '.join(f'{t:.3f}' for t in times[impl])} s", file=sys.stderr, flush=True)
    return row


def table(rows: List[Dict[str, Any]]) -> str:
    """Markdown table; times are medians with the [min-max] of the runs beside them."""
    lines = ["| S | plain peak (MiB) | tiled peak (MiB) | tiled / plain memory "
             "| plain fwd+bwd (s) | tiled fwd+bwd (s) | tiled / plain time |",
             "|---:|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        lines.append(f"| {r['S']} | {r['plain_mib']:.1f} | {r['tiled_mib']:.1f} "
                     f"| {r['tiled_mib'] / r['plain_mib']:.1%} "
                     f"| {r['plain_s']:.3f} [{r['plain_range']}] "
                     f"| {r['tiled_s']:.3f} [{r['tiled_range']}] "
                     f"| {r['tiled_s'] / r['plain_s']:.2f}x |")
    return "\n".join(lines)


def machine() -> str:
    cpu = platform.processor() or platform.machine()
    if os.path.exists("/proc/cpuinfo"):
        with open("/proc/cpuinfo") as f:
            names = [ln.split(":", 1)[1].strip() for ln in f if ln.startswith("model name")]
        cpu = names[0] if names else cpu
    mem = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    return (f"{cpu}, {os.cpu_count()} cores, {mem:.0f} GiB RAM; {platform.system()}, "
            f"Python {platform.python_version()}, NumPy {np.__version__}")


def code_version() -> str:
    """The commit measured, and which tinyattn files differed from it (other work in flight)."""
    def git(*args: str) -> str:
        return subprocess.run(["git", *args], capture_output=True, text=True,
                              check=True).stdout.rstrip("\n")
    try:
        head = git("rev-parse", "--short", "HEAD")
        dirty = [line[3:] for line in git("status", "--porcelain", "tinyattn").splitlines()]
    except (OSError, subprocess.CalledProcessError):
        return "tinyattn (no git checkout)"
    return f"tinyattn at {head}" + (f" with uncommitted changes to {', '.join(dirty)}"
                                     if dirty else "")


def write(path: str, text: str, section: str) -> None:
    start, end = f"<!-- {section}:start -->", f"<!-- {section}:end -->"
    with open(path) as f:
        doc = f.read()
    if start not in doc or end not in doc:
        raise ValueError(f"--write {path}: the file has no {start} ... {end} markers to "
                         f"replace; add them where the table should go")
    head, rest = doc.split(start, 1)
    tail = rest.split(end, 1)[1]
    with open(path, "w") as f:
        f.write(f"{head}{start}\n{text}\n{end}{tail}")


def main(argv: List[str] = None) -> None:  # type: ignore[assignment]
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1024, 2048, 4096, 8192])
    parser.add_argument("--block-size", type=int, default=256)
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--causal", action="store_true")
    parser.add_argument("--write", metavar="FILE")
    parser.add_argument("--tiny", action="store_true",
                        help="S=64, blocks of 16, 1 repetition: does the script still run "
                             "(a smoke test, not a measurement)")
    parser.add_argument("--section", default="bench",
                        help="--write replaces <!-- SECTION:start --> .. <!-- SECTION:end -->")
    args = parser.parse_args(argv)
    if args.tiny:
        args.sizes, args.block_size, args.reps = [64], 16, 1
    print(f"B={B}, h={H}, d_k={D_K}, float32, block_size={args.block_size}, "
          f"{'causal' if args.causal else 'no mask'}, median of {args.reps}", file=sys.stderr)
    load_before = os.getloadavg()[0]
    rows = [measure(s, args.block_size, args.reps, args.causal) for s in args.sizes]
    load = f"1-minute load average {load_before:.2f} before, {os.getloadavg()[0]:.2f} after"
    env = "".join(f"{name}={os.environ[name]} " for name in ENV_VARS if name in os.environ)
    command = (f"{env}python benchmarks/tiled_attention.py "
               f"{' '.join(sys.argv[1:] if argv is None else argv)}")
    text = (f"{table(rows)}\n\nB={B}, h={H}, d_k=d_v={D_K}, float32, "
            f"{'is_causal=True' if args.causal else 'no mask'}, block_size={args.block_size}, "
            f"time = median [min-max] of {args.reps} forward+backward runs.\n"
            f"Command: `{command.strip()}`\nMachine: {machine()} ({load}).\n"
            f"Code: {code_version()}.")
    print(text)
    if args.write:
        write(args.write, text, args.section)


if __name__ == "__main__":
    main()
