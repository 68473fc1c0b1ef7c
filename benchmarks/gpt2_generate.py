"""GPT-2 small generating with the KV cache: tinyattn beside transformers on the CPU
(docs/benchmarks.md#gpt-2-generation).

    PYTHONPATH=. python benchmarks/gpt2_generate.py --threads 1          # prints the block
    PYTHONPATH=. python benchmarks/gpt2_generate.py --threads 2 --write  # and records it

(from the repository root). GPT-2 small's real configuration (124M parameters, V = 50257,
D = 768, 12 layers, 12 heads) with random weights: transformers builds the model
(``torch.manual_seed(0)``), saves it as safetensors in a temporary folder, and tinyattn loads
that folder with ``GPT.from_pretrained``, so both hold the same float32 weights. Both then
generate ``--new-tokens`` tokens greedily after the same prompt, with their KV caches:
``GPT.generate(prompt, N, temperature=0)`` and ``GPT2LMHeadModel.generate(prompt,
max_new_tokens=N, min_new_tokens=N, do_sample=False)`` under ``torch.inference_mode``.

Timing as in benchmarks/run.py: one warm-up run each, then the two alternate (A B, B A, ...)
for ``--reps`` repetitions; tokens/s are N over each run's time (prompt included), the
medians are shown, and the ratio is the median of the per-repetition ratios
tinyattn / transformers in tokens/s (above 1: tinyattn is faster), with its quartiles. One
thread: process CPU time; more: wall time. Both libraries get the same thread count (NumPy's
BLAS through threadpoolctl, torch through ``torch.set_num_threads``).

``--overhead`` also times the same comparison on GPT-2's 12 layers with tiny matrices
(D = 64, V = 512), which isolates each library's cost per op from the matrix products.
``--memory`` also loads the checkpoint in a fresh process per library and reports the peak
resident memory (VmHWM) it added, after one forward pass that touches every weight, beside
the file's size.
"""
from __future__ import annotations

import argparse
import datetime
import os
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Any, Dict, List, Optional, Sequence

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from run import machine_lines, set_threads  # noqa: E402 - the shared benchmark helpers

DOC = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "docs",
                   "benchmarks.md")
MARKERS = "<!-- gpt2-generate-{}-threads:start -->", "<!-- gpt2-generate-{}-threads:end -->"
PROMPT_LENGTH = 10


# --overhead: GPT-2 small's 12 layers and op sequence with tiny matrices (D = 64, V = 512),
# so what is timed is each library's per-op cost, not the matrix products.
TINY = dict(n_embd=64, n_head=4, vocab_size=512, bos_token_id=0, eos_token_id=0)


def build_checkpoint(folder: str, **config: Any) -> None:
    import torch  # noqa: PLC0415
    import transformers  # noqa: PLC0415
    torch.manual_seed(0)
    model = transformers.GPT2LMHeadModel(transformers.GPT2Config(**config))
    model.save_pretrained(folder, safe_serialization=True)


def time_generation(folder: str, args: argparse.Namespace) -> Dict[str, Any]:
    import torch  # noqa: PLC0415
    import transformers  # noqa: PLC0415

    from tinyattn.nn import GPT  # noqa: PLC0415
    handle = set_threads(args.threads)  # noqa: F841 - keep the limit alive while timing
    ours = GPT.from_pretrained(folder)
    theirs = transformers.GPT2LMHeadModel.from_pretrained(folder).eval()
    prompt = np.random.default_rng(0).integers(0, ours.config.vocab_size, (1, PROMPT_LENGTH))
    n = args.new_tokens

    def run_ours() -> np.ndarray:
        return ours.generate(prompt, n, temperature=0).numpy()

    def run_theirs() -> np.ndarray:
        with torch.inference_mode():
            return theirs.generate(torch.from_numpy(prompt), max_new_tokens=n,
                                   min_new_tokens=n, do_sample=False,
                                   pad_token_id=0).numpy()

    same = float((run_ours() == run_theirs()).mean())           # warm-up, and a check
    clock = time.process_time if args.threads == 1 else time.perf_counter
    rates: Dict[str, List[float]] = {"tinyattn": [], "transformers": []}
    for rep in range(args.reps):
        order = [("tinyattn", run_ours), ("transformers", run_theirs)]
        for name, fn in (order if rep % 2 == 0 else order[::-1]):
            start = clock()
            fn()
            rates[name].append(n / (clock() - start))
    ratios = [a / b for a, b in zip(rates["tinyattn"], rates["transformers"])]
    low, _, high = statistics.quantiles(ratios, n=4)
    return {"ours": statistics.median(rates["tinyattn"]),
            "theirs": statistics.median(rates["transformers"]),
            "ratio": statistics.median(ratios), "spread": (low, high), "same": same}


MEMORY_CHILD = """
import resource, sys, numpy as np
def rss(field):
    for line in open("/proc/self/status"):
        if line.startswith(field):
            return int(line.split()[1]) * 1024
which, folder = sys.argv[1], sys.argv[2]
ids = np.zeros((1, 4), dtype=np.int64)
if which == "tinyattn":
    import tinyattn
    from tinyattn.nn import GPT
    base = rss("VmRSS:")
    model = GPT.from_pretrained(folder)
    with tinyattn.no_grad():
        model(ids)
else:
    import torch, transformers
    base = rss("VmRSS:")
    model = transformers.GPT2LMHeadModel.from_pretrained(folder).eval()
    with torch.inference_mode():
        model(torch.from_numpy(ids))
print(rss("VmHWM:") - base, rss("VmRSS:") - base)
"""


def measure_memory(folder: str) -> Dict[str, Any]:
    result: Dict[str, Any] = {"file": os.path.getsize(os.path.join(folder, "model.safetensors"))}
    for which in ("tinyattn", "transformers"):
        out = subprocess.run([sys.executable, "-c", MEMORY_CHILD, which, folder], check=True,
                             capture_output=True, text=True).stdout.split()
        result[which] = (int(out[0]), int(out[1]))
    return result


def report(timing: Dict[str, Any], memory: Optional[Dict[str, Any]],
           overhead: Optional[Dict[str, Any]], args: argparse.Namespace, command: str,
           loads: Sequence[Any]) -> str:
    clock = "process CPU time" if args.threads == 1 else "wall-clock time"
    load_text = " / ".join(f"{a:.2f}" for a in loads[0]) + " before, " + \
        " / ".join(f"{a:.2f}" for a in loads[1]) + " after (1 / 5 / 15 min)"
    lines = [
        f"Measured {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC with",
        "", "```", command, "```", "",
        f"GPT-2 small (124M, random weights), prompt of {PROMPT_LENGTH} tokens, "
        f"{args.new_tokens} new tokens, greedy, KV cache; {args.reps} repetitions after one "
        f"warm-up run each, {args.threads} thread(s) for both, {clock}. Load average: "
        f"{load_text}.", "",
        "Machine:", "", *[f"- {line}" for line in machine_lines()], "",
        "| threads | tinyattn tokens/s | transformers tokens/s | ratio (quartiles) |",
        "|---:|---:|---:|---:|",
        f"| {args.threads} | {timing['ours']:.1f} | {timing['theirs']:.1f} | "
        f"{timing['ratio']:.2f}x ({timing['spread'][0]:.2f}-{timing['spread'][1]:.2f}) |", "",
        f"Generated tokens identical in both: {100 * timing['same']:.0f}%.",
    ]
    if overhead is not None:
        per_token = {k: 1e3 / overhead[k] for k in ("ours", "theirs")}
        lines += ["", f"Per-token cost without the matrix work (`--overhead`: the same 12 layers "
                      f"with D = 64, V = 512): tinyattn {per_token['ours']:.2f} ms, "
                      f"transformers {per_token['theirs']:.2f} ms per token (ratio "
                      f"{overhead['ratio']:.2f}x in tokens/s)."]
    if memory is not None:
        mib = 2 ** 20
        lines += ["", f"Loading (fresh process each, peak RSS added by loading and one forward "
                      f"pass; checkpoint file {memory['file'] / mib:.0f} MiB):", ""]
        for which in ("tinyattn", "transformers"):
            peak, now = memory[which]
            lines.append(f"- {which}: peak {peak / mib:.0f} MiB "
                         f"({peak / memory['file']:.2f}x the file), {now / mib:.0f} MiB after")
    return "\n".join(lines) + "\n"


def write_doc(generated: str, threads: int) -> None:
    """Replace the block of this thread count in docs/benchmarks.md (temp file, rename)."""
    start, end = (marker.format(threads) for marker in MARKERS)
    with open(DOC, encoding="utf-8") as f:
        text = f.read()
    if start not in text or end not in text:
        raise SystemExit(f"{DOC} has no {start} ... {end} block; add the two marker lines")
    head, rest = text.split(start, 1)
    _, tail = rest.split(end, 1)
    fd, tmp = tempfile.mkstemp(prefix=".benchmarks-", suffix=".md", dir=os.path.dirname(DOC))
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(f"{head}{start}\n{generated}{end}{tail}")
    os.replace(tmp, DOC)


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--reps", type=int, default=9)
    parser.add_argument("--new-tokens", type=int, default=64)
    parser.add_argument("--memory", action="store_true", help="also measure loading memory")
    parser.add_argument("--overhead", action="store_true",
                        help="also time a tiny-matrix GPT-2 (per-op cost alone)")
    parser.add_argument("--tiny", action="store_true",
                        help="a 2-layer toy GPT-2, 4 tokens, 2 repetitions: does the script "
                             "still run (a smoke test, not a measurement)")
    parser.add_argument("--write", action="store_true",
                        help="replace this benchmark's block in docs/benchmarks.md")
    args = parser.parse_args(argv)
    if args.tiny:
        if args.write:
            parser.error("--tiny is a smoke test: it cannot --write its figures")
        args.reps, args.new_tokens = 2, min(args.new_tokens, 4)
    if args.threads < 1 or args.reps < 2 or args.new_tokens < 1:
        parser.error("--threads and --new-tokens must be >= 1, --reps >= 2")
    try:
        import torch  # noqa: F401, PLC0415
        import transformers  # noqa: F401, PLC0415
    except ImportError:
        parser.error("this benchmark compares with transformers: pip install torch transformers")
    command = "PYTHONPATH=. python benchmarks/gpt2_generate.py " + " ".join(
        shlex.quote(a) for a in (argv if argv is not None else sys.argv[1:]))
    with tempfile.TemporaryDirectory() as folder:
        build_checkpoint(folder, **(dict(TINY, n_layer=2) if args.tiny else {}))
        before = os.getloadavg()
        timing = time_generation(folder, args)
        after = os.getloadavg()
        memory = measure_memory(folder) if args.memory else None
    overhead = None
    if args.overhead:
        with tempfile.TemporaryDirectory() as folder:
            build_checkpoint(folder, **TINY)
            overhead = time_generation(folder, args)
    text = report(timing, memory, overhead, args, command.strip(), (before, after))
    print(text)
    if args.write:
        write_doc(text, args.threads)
    return 0


if __name__ == "__main__":
    sys.exit(main())
