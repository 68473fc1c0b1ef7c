"""The BLAS floor of the `gpt_medium` step and of the `mha` case: the time of the same matrix
products alone, at the shapes tinyattn runs them (docs/benchmarks.md#the-blas-floor).

    PYTHONPATH=. python benchmarks/blas_floor.py [--tiny]

Each product is timed alone (process CPU time, 1 BLAS thread, median of --reps runs after a
warm-up), so the floor is what the step would take if everything that is not a matrix
product cost nothing. The `gpt_medium` step (D=256, 4 layers, S=128, B=8, h=8, V=65) has
17 `Linear` layers (q/k/v packed, out_proj, linear1, linear2 per layer, the tied lm_head),
each with one product forward and two backward, and causal attention by blocks of 64
queries: the scores and P @ v forward, and the recomputed scores, dv, dA, dq and dk per
block backward. The `mha` case (B=8, S=256, D=512, h=8) has the packed in-projection, the
out-projection and the five attention products over whole (S, S) matrices (the scores
recomputed in the backward, as tinyattn does).
"""
from __future__ import annotations

import argparse
import time
from typing import Callable, Dict, List, Tuple

import numpy as np

from tinyattn import blas_threads


def _timer(reps: int) -> Callable[[Callable[[], object]], float]:
    def timed(fn: Callable[[], object]) -> float:
        fn()
        times = []
        for _ in range(reps):
            start = time.process_time()
            fn()
            times.append(time.process_time() - start)
        return float(np.median(times))
    return timed


def _linear(timed, rng, n: int, out_f: int, in_f: int) -> Tuple[float, float]:
    """One Linear: x (n, in) @ W^T forward; g @ W and g^T @ x backward."""
    x = rng.standard_normal((n, in_f), dtype=np.float32)
    w = rng.standard_normal((out_f, in_f), dtype=np.float32)
    g = rng.standard_normal((n, out_f), dtype=np.float32)
    return timed(lambda: x @ w.T), timed(lambda: g @ w) + timed(lambda: g.T @ x)


def _attention(timed, rng, bh: int, rows: int, keys: int, d: int) -> Tuple[float, float]:
    """One block of attention: rows queries over keys, bh (batch x heads) matrices."""
    def r(*shape: int) -> np.ndarray:
        return rng.standard_normal(shape, dtype=np.float32)
    q, k, v, g, p = r(bh, rows, d), r(bh, keys, d), r(bh, keys, d), r(bh, rows, d), \
        r(bh, rows, keys)
    scores = timed(lambda: q @ k.swapaxes(-1, -2))
    forward = scores + timed(lambda: p @ v)
    backward = (scores + timed(lambda: p.swapaxes(-1, -2) @ g)
                + timed(lambda: g @ v.swapaxes(-1, -2)) + timed(lambda: p @ k)
                + timed(lambda: p.swapaxes(-1, -2) @ q))
    return forward, backward


def gpt_floor(timed, rng, d: int, layers: int, s: int, b: int, h: int, vocab: int,
              block: int = 64) -> Dict[str, Tuple[float, float]]:
    n = b * s
    parts = {name: _linear(timed, rng, n, o, i) for name, (o, i) in {
        "q/k/v projection": (3 * d, d), "out_proj": (d, d), "linear1": (4 * d, d),
        "linear2": (d, 4 * d)}.items()}
    parts = {f"{name} (x{layers})": (f * layers, bw * layers)
             for name, (f, bw) in parts.items()}
    parts["lm_head"] = _linear(timed, rng, n, vocab, d)
    stops = list(range(block, s + 1, block)) if s >= 2 * block else [s]
    rows = block if s >= 2 * block else s
    fwd = bwd = 0.0
    for stop in stops:
        f, bw = _attention(timed, rng, b * h, rows, stop, d // h)
        fwd, bwd = fwd + f, bwd + bw
    parts[f"attention products (x{layers})"] = (fwd * layers, bwd * layers)
    return parts


def mha_floor(timed, rng, b: int, s: int, d: int, h: int) -> Dict[str, Tuple[float, float]]:
    n = b * s
    return {"in-projection (packed q/k/v)": _linear(timed, rng, n, 3 * d, d),
            "out-projection": _linear(timed, rng, n, d, d),
            "attention products": _attention(timed, rng, b * h, s, s, d // h)}


def _report(title: str, parts: Dict[str, Tuple[float, float]]) -> None:
    print(f"\n{title}")
    for name, (f, bw) in parts.items():
        print(f"  {name:32s} forward {f * 1e3:7.2f} ms   backward {bw * 1e3:7.2f} ms")
    fwd = sum(f for f, _ in parts.values())
    bwd = sum(bw for _, bw in parts.values())
    print(f"  {'floor':32s} forward {fwd * 1e3:7.2f} ms   backward {bwd * 1e3:7.2f} ms   "
          f"total {(fwd + bwd) * 1e3:.1f} ms")


def main(argv: List[str] = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--reps", type=int, default=9, help="timed runs per product")
    parser.add_argument("--tiny", action="store_true",
                        help="toy sizes, 1 run each: does it still run (not a measurement)")
    args = parser.parse_args(argv)
    blas_threads.set_threads(1)
    timed = _timer(1 if args.tiny else args.reps)
    rng = np.random.default_rng(0)
    if args.tiny:
        _report("gpt (toy size)", gpt_floor(timed, rng, 16, 1, 8, 2, 2, 11))
        _report("mha (toy size)", mha_floor(timed, rng, 2, 8, 16, 2))
        return
    _report("gpt_medium: D=256 layers=4 S=128 B=8 h=8 V=65",
            gpt_floor(timed, rng, 256, 4, 128, 8, 8, 65))
    _report("mha: B=8 S=256 D=512 h=8", mha_floor(timed, rng, 8, 256, 512, 8))


if __name__ == "__main__":
    main()
