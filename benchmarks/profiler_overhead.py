"""What profiling costs: a GPT training step's time with and without tinyattn.profiler.

    PYTHONPATH=. OMP_NUM_THREADS=1 python3 benchmarks/profiler_overhead.py [--tiny]

The runs alternate (plain, profiled, plain, ...) so that a change in the machine's load hits
both alike; each figure is the median of its runs. Results:
docs/precision_memory_time.md#profiling.
"""
from __future__ import annotations

import argparse
import statistics
import time
from typing import Any, Dict, List

import numpy as np

import tinyattn as ta
from tinyattn import nn
from tinyattn.profiler import ProfilerActivity, profile


def _step(model: nn.GPT, idx: ta.Tensor) -> None:
    for p in model.parameters():
        p.grad = None
    _, loss = model(idx, idx)
    loss.backward()


def main(argv: List[str] = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tiny", action="store_true")
    parser.add_argument("--repeats", type=int, default=15)
    args = parser.parse_args(argv)
    ta.manual_seed(0)
    d, seq, batch, layers = (32, 16, 4, 2) if args.tiny else (64, 64, 16, 4)
    repeats = 3 if args.tiny else args.repeats
    model = nn.GPT(nn.GPTConfig(vocab_size=64, block_size=seq, n_layer=layers, n_head=4,
                                d_model=d))
    idx = ta.tensor(np.random.default_rng(0).integers(0, 64, (batch, seq)))
    settings: Dict[str, Dict[str, Any]] = {
        "profile()": {},
        "record_shapes + profile_memory": dict(record_shapes=True, profile_memory=True)}
    times: Dict[str, List[float]] = {"plain": [], **{name: [] for name in settings}}
    _step(model, idx)
    for _ in range(repeats):
        start = time.perf_counter()
        _step(model, idx)
        times["plain"].append(time.perf_counter() - start)
        for name, options in settings.items():
            start = time.perf_counter()
            with profile(activities=[ProfilerActivity.CPU], **options):
                _step(model, idx)
            times[name].append(time.perf_counter() - start)
    plain = statistics.median(times["plain"])
    with profile() as prof:
        _step(model, idx)
    print(f"GPT d_model={d} layers={layers} batch={batch} seq={seq}: "
          f"{len(prof.events())} events per step, median of {repeats}")
    for name, values in times.items():
        value = statistics.median(values)
        print(f"{name:32s} {value * 1e3:8.1f} ms  {value / plain:5.2f}x")


if __name__ == "__main__":
    main()
