"""Convolution against torch's CPU kernel on a ResNet-style layer: forward + backward time.

    PYTHONPATH=. OMP_NUM_THREADS=1 python benchmarks/conv.py
    PYTHONPATH=. python benchmarks/conv.py --batch 16 --channels 64 --size 28 --reps 5
    PYTHONPATH=. python benchmarks/conv.py --tiny          # a smoke run (the test suite's)

The layer is ResNet's 3 x 3 convolution, stride 1, padding 1, C -> C channels, float32,
with bias, on (N, C, H, W) inputs (default N=8, C=64, H=W=28: a stage-2 block at a smaller
image). tinyattn's is im2col (a strided view and one copy) + one BLAS call, and col2im in the
backward (docs/derivations.md#convolution). Times are medians of ``--reps`` runs of forward +
backward (input, weight and bias gradients), the two libraries alternating; torch runs with
the same thread count as NumPy's BLAS when OMP_NUM_THREADS is set. The machine's load average
is printed: other processes skew times. The issue's target is at most 2x torch.
"""
from __future__ import annotations

import argparse
import os
import statistics
import time
from typing import Callable, Dict, List

import numpy as np

import tinyattn as ta
import tinyattn.functional as F

__all__ = ["main"]


def _median_time(step: Callable[[], None], reps: int) -> float:
    times = []
    for _ in range(reps):
        start = time.perf_counter()
        step()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main(argv: List[str] = None) -> Dict[str, float]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--channels", type=int, default=64)
    parser.add_argument("--size", type=int, default=28)
    parser.add_argument("--reps", type=int, default=7)
    parser.add_argument("--tiny", action="store_true", help="a seconds-long smoke run")
    args = parser.parse_args(argv)
    if args.tiny:
        args.batch, args.channels, args.size, args.reps = 2, 8, 8, 2
    import torch
    if os.environ.get("OMP_NUM_THREADS"):
        torch.set_num_threads(int(os.environ["OMP_NUM_THREADS"]))
    rng = np.random.default_rng(0)
    n, c, s = args.batch, args.channels, args.size
    x = rng.standard_normal((n, c, s, s)).astype(np.float32)
    w = (rng.standard_normal((c, c, 3, 3)) / np.sqrt(9 * c)).astype(np.float32)
    b = np.zeros(c, dtype=np.float32)
    g = rng.standard_normal((n, c, s, s)).astype(np.float32)
    ours = [ta.tensor(a, requires_grad=True) for a in (x, w, b)]
    theirs = [torch.tensor(a, requires_grad=True) for a in (x, w, b)]
    g_ours, g_theirs = ta.tensor(g), torch.tensor(g)

    def step_ours() -> None:
        for t in ours:
            t.grad = None
        F.conv2d(*ours, padding=1).backward(g_ours)

    def step_theirs() -> None:
        for t in theirs:
            t.grad = None
        torch.nn.functional.conv2d(*theirs, padding=1).backward(g_theirs)

    step_ours(), step_theirs()                                  # warm up
    results = {"tinyattn": [], "torch": []}
    for _ in range(args.reps):
        results["tinyattn"].append(_median_time(step_ours, 1))
        results["torch"].append(_median_time(step_theirs, 1))
    ours_s, theirs_s = (statistics.median(results[k]) for k in ("tinyattn", "torch"))
    print(f"conv2d 3x3, ({n}, {c}, {s}, {s}) -> ({n}, {c}, {s}, {s}), float32, forward + "
          f"backward, median of {args.reps}:")
    print(f"  tinyattn {ours_s * 1e3:8.1f} ms\n  torch    {theirs_s * 1e3:8.1f} ms\n"
          f"  ratio    {ours_s / theirs_s:8.2f}x   (load average {os.getloadavg()[0]:.1f}, "
          f"OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS', 'unset')})")
    return {"tinyattn": ours_s, "torch": theirs_s, "ratio": ours_s / theirs_s}


if __name__ == "__main__":
    main()
