"""Peak memory of one GPT training step, tinyattn beside torch (docs/benchmarks.md#memory).

    PYTHONPATH=. python benchmarks/memory.py --case gpt_medium      # prints both sides

How it is measured, the same way for both libraries: each side runs in a fresh process (with
glibc's mmap threshold fixed, so that a freed large array goes back to the system at once)
that builds the model and its AdamW and runs one warm-up step (the optimizer's state now
exists). Then the resident set's high-water mark (VmHWM in /proc/self/status) is reset
through /proc/self/clear_refs, one more step runs, and the step's memory is
``VmHWM - VmRSS before the step``: what the step itself needed on top of the model, its
gradients and the optimizer state. For tinyattn,
tracemalloc also counts the bytes NumPy allocated at the peak of a step (NumPy reports its
array buffers to tracemalloc) and lists the largest arrays alive at the end of the forward
pass, by the line of tinyattn that allocated them: those are the temporaries that make the
peak (activations saved for backward, and the logits).
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tracemalloc
from typing import Any, Dict, List

__all__ = ["measure", "main"]

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# glibc raises its mmap threshold after each large free, so freed temporaries would stay in the
# heap and a later step's peak would not show in RSS; a fixed threshold returns every large
# block to the system when freed, for both libraries alike.
FIXED_MMAP = {"MALLOC_MMAP_THRESHOLD_": "131072"}
SIZES = {  # the GPT cases of benchmarks/run.py: D, layers, S, B, h
    "gpt_tiny": (64, 2, 32, 16, 4),
    "gpt_medium": (256, 4, 128, 8, 8),
}


def _rss_now() -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    return 0


def _rss_peak() -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    return 0


def _reset_peak() -> bool:
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")                      # resets VmHWM to the current RSS
        return True
    except OSError:
        return False


def _steps(side: str, case: str) -> Dict[str, Any]:
    """Run in a child process: build one side's GPT, measure a training step's memory."""
    sys.path.insert(0, os.path.join(ROOT, "benchmarks"))
    sys.path.insert(0, ROOT)
    import numpy as np
    d, layers, s, b, h = SIZES[case]
    rng = np.random.default_rng(2)
    if side == "tinyattn":
        import tinyattn
        from tinyattn import nn, optim
        config = nn.GPTConfig(vocab_size=65, block_size=s, n_layer=layers, n_head=h, d_model=d)
        tinyattn.manual_seed(0)
        model = nn.GPT(config)
        opt = optim.AdamW(model.parameters(), lr=1e-3)
        idx, targets = rng.integers(0, 65, size=(2, b, s))

        def forward() -> Any:
            return model(idx, targets)[1]
    else:
        import torch
        from tinyattn import nn
        from cases.gpt import torch_gpt
        config = nn.GPTConfig(vocab_size=65, block_size=s, n_layer=layers, n_head=h, d_model=d)
        torch.set_num_threads(1)
        model = torch_gpt(config)
        opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
        idx, targets = (torch.from_numpy(a) for a in rng.integers(0, 65, size=(2, b, s)))

        def forward() -> Any:
            return model(idx, targets)

    def step() -> None:
        loss = forward()
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True) if side == "torch" else opt.zero_grad()

    step()                                   # the optimizer's state now exists
    base = _rss_now()
    reset = _reset_peak()
    step()
    step_peak = _rss_peak() - base if reset else None
    result: Dict[str, Any] = {"side": side, "rss_step_peak": step_peak,
                              "rss_after_setup": base}
    if side == "tinyattn":
        tracemalloc.start(8)
        loss = forward()
        snapshot = tracemalloc.take_snapshot()   # the end of the forward: activations alive
        loss.backward()
        opt.step()
        opt.zero_grad()
        result["tracemalloc_step_peak"] = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        result["largest"] = _largest(snapshot)
    return result


def _largest(snapshot: Any, top: int = 6) -> List[Dict[str, Any]]:
    """The allocation sites in tinyattn holding the most bytes, with their largest block."""
    sites: Dict[str, Dict[str, Any]] = {}
    for stat in snapshot.statistics("traceback"):
        frame = next((f for f in reversed(stat.traceback) if os.sep + "tinyattn" + os.sep
                      in f.filename), stat.traceback[-1])        # the innermost tinyattn line
        where = f"{os.path.relpath(frame.filename, ROOT)}:{frame.lineno}"
        entry = sites.setdefault(where, {"where": where, "bytes": 0, "count": 0})
        entry["bytes"] += stat.size
        entry["count"] += stat.count
    return sorted(sites.values(), key=lambda e: -e["bytes"])[:top]


def measure(case: str, sides: List[str]) -> Dict[str, Dict[str, Any]]:
    """Each side in its own process (so one side's allocator state cannot hide the other's)."""
    results = {}
    for side in sides:
        out = subprocess.run([sys.executable, os.path.abspath(__file__), "--child", side,
                              "--case", case], capture_output=True, text=True, check=True,
                             env=dict(os.environ, OMP_NUM_THREADS="1", **FIXED_MMAP))
        results[side] = json.loads(out.stdout.strip().splitlines()[-1])
    return results


def _mib(n: Any) -> str:
    return "-" if n is None else f"{n / 2 ** 20:.1f} MiB"


def report(case: str, results: Dict[str, Dict[str, Any]]) -> str:
    ours, theirs = results.get("tinyattn", {}), results.get("torch", {})
    lines = [f"| `{case}` | {_mib(ours.get('rss_step_peak'))} | "
             f"{_mib(ours.get('tracemalloc_step_peak'))} | "
             f"{_mib(theirs.get('rss_step_peak'))} |"]
    largest = ", ".join(f"{e['where']} {_mib(e['bytes'])}" for e in ours.get("largest", []))
    return "\n".join(lines), largest


def main(argv: Any = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--case", choices=sorted(SIZES), default="gpt_medium")
    parser.add_argument("--child", choices=["tinyattn", "torch"], help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        print(json.dumps(_steps(args.child, args.case)))
        return 0
    try:
        import torch  # noqa: F401
        sides = ["tinyattn", "torch"]
    except ImportError:
        sides = ["tinyattn"]
    row, largest = report(args.case, measure(args.case, sides))
    print("| case | tinyattn step (RSS) | tinyattn step (tracemalloc) | torch step (RSS) |")
    print("|---|---:|---:|---:|")
    print(row)
    print(f"\nlargest allocation sites at the end of tinyattn's forward: {largest}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
