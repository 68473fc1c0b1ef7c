"""Peak memory and time of a GPT training step with and without gradient checkpointing.

    PYTHONPATH=. OMP_NUM_THREADS=1 python3 benchmarks/checkpointing.py          # the figures
    PYTHONPATH=. python3 benchmarks/checkpointing.py --tiny                     # a quick check

One step = forward, loss, backward (the optimizer step is the same with or without, so it is
left out). Peak memory is tracemalloc's (NumPy reports its arrays to it): the most bytes
allocated at once during the step, counted from just before it, so the parameters themselves
are not in it but their gradients are. Time is the median of several steps, without
tracemalloc, the two models' steps alternating.
Results: docs/precision_memory_time.md#gradient-checkpointing.
"""
from __future__ import annotations

import argparse
import statistics
import time
import tracemalloc
from typing import Dict, List

import numpy as np

import tinyattn as ta
from tinyattn import nn


def make_model(n_layer: int, checkpointing: bool, size: Dict[str, int]) -> nn.GPT:
    ta.manual_seed(0)
    config = nn.GPTConfig(vocab_size=size["vocab"], block_size=size["seq"], n_layer=n_layer,
                          n_head=size["heads"], d_model=size["d_model"],
                          gradient_checkpointing=checkpointing)
    return nn.GPT(config)


def step(model: nn.GPT, idx: ta.Tensor) -> float:
    for p in model.parameters():
        p.grad = None
    _, loss = model(idx, idx)
    loss.backward()
    return loss.item()


def peak_bytes(model: nn.GPT, idx: ta.Tensor) -> int:
    step(model, idx)                 # warm caches (causal masks) before counting
    for p in model.parameters():
        p.grad = None
    tracemalloc.start()
    tracemalloc.reset_peak()
    start = tracemalloc.get_traced_memory()[0]
    step(model, idx)
    peak = tracemalloc.get_traced_memory()[1] - start
    tracemalloc.stop()
    return peak


def median_times(models: List[nn.GPT], idx: ta.Tensor, repeats: int) -> List[float]:
    """The median step time of each model, the models' steps alternating (so a change in the
    machine's load hits them alike)."""
    for model in models:
        step(model, idx)
    times: List[List[float]] = [[] for _ in models]
    for _ in range(repeats):
        for model, values in zip(models, times):
            start = time.perf_counter()
            step(model, idx)
            values.append(time.perf_counter() - start)
    return [statistics.median(values) for values in times]


def main(argv: List[str] = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tiny", action="store_true", help="a small model, seconds")
    parser.add_argument("--layers", type=int, default=8)
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args(argv)
    if args.tiny:
        size = dict(vocab=64, seq=32, heads=2, d_model=32, batch=4)
        depths, repeats = [1, 2, 4], 2
    else:
        size = dict(vocab=64, seq=128, heads=4, d_model=128, batch=16)
        depths, repeats = [1, 2, 4, 8, 16], args.repeats
    idx = ta.tensor(np.random.default_rng(0).integers(0, size["vocab"],
                                                      (size["batch"], size["seq"])))
    print(f"GPT d_model={size['d_model']} heads={size['heads']} batch={size['batch']} "
          f"seq={size['seq']} vocab={size['vocab']}, one training step (forward + backward)")
    layers = depths[-1] if args.tiny else args.layers
    plain_model, ckpt_model = make_model(layers, False, size), make_model(layers, True, size)
    plain_peak, ckpt_peak = peak_bytes(plain_model, idx), peak_bytes(ckpt_model, idx)
    plain_time, ckpt_time = median_times([plain_model, ckpt_model], idx, repeats)
    print(f"\n{layers} layers     peak MiB   time ms")
    print(f"plain       {plain_peak / 2**20:9.1f} {plain_time * 1e3:9.1f}")
    print(f"checkpoint  {ckpt_peak / 2**20:9.1f} {ckpt_time * 1e3:9.1f}")
    print(f"ratio       {ckpt_peak / plain_peak:9.2f} {ckpt_time / plain_time:9.2f}")
    print("\nlayers  plain MiB  checkpoint MiB  (peak of one step)")
    for depth in depths:
        plain = peak_bytes(make_model(depth, False, size), idx) / 2**20
        ckpt = peak_bytes(make_model(depth, True, size), idx) / 2**20
        print(f"{depth:6d} {plain:10.1f} {ckpt:15.1f}")


if __name__ == "__main__":
    main()
