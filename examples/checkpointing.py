"""Gradient checkpointing on an 8-layer GPT: the same gradients, bit for bit, with a fraction
of the memory (docs/precision_memory_time.md#gradient-checkpointing).

    python examples/checkpointing.py            # about 30 s on a 2-core CPU
    python examples/checkpointing.py --quick    # a smaller model, a few seconds

``GPTConfig(gradient_checkpointing=True)`` keeps only each block's input in the forward and
recomputes the block in the backward, with the random state replayed so dropout draws the
same masks. tracemalloc measures the peak memory of one training step.
"""
from __future__ import annotations

import argparse
import time
import tracemalloc

import numpy as np

import tinyattn as ta
from tinyattn import nn


def train_step(checkpointing: bool, size: dict, idx: ta.Tensor) -> dict:
    ta.manual_seed(0)
    model = nn.GPT(nn.GPTConfig(vocab_size=64, block_size=size["seq"], n_layer=8,
                                n_head=4, d_model=size["d_model"], dropout=0.1,
                                gradient_checkpointing=checkpointing))
    ta.manual_seed(1)                     # the same dropout masks in both runs
    tracemalloc.start()
    start = time.perf_counter()
    _, loss = model(idx, idx)
    loss.backward()
    seconds = time.perf_counter() - start
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return {"loss": loss.item(), "peak": peak, "seconds": seconds,
            "grads": [p.grad.numpy() for p in model.parameters()]}


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a smaller model")
    args = parser.parse_args(argv)
    size = dict(d_model=32, seq=32, batch=4) if args.quick else dict(d_model=128, seq=128,
                                                                       batch=16)
    idx = ta.tensor(np.random.default_rng(0).integers(0, 64, (size["batch"], size["seq"])))
    plain, ckpt = train_step(False, size, idx), train_step(True, size, idx)
    same = all(np.array_equal(a, b) for a, b in zip(plain["grads"], ckpt["grads"]))
    print(f"8-layer GPT, d_model={size['d_model']}, batch {size['batch']} x {size['seq']} "
          f"tokens, dropout 0.1: one training step (time includes tracemalloc's own cost)")
    print(f"{'':16}{'peak memory':>14}{'time':>10}")
    for name, run in (("plain", plain), ("checkpointing", ckpt)):
        print(f"{name:16}{run['peak'] / 2**20:11.1f} MiB{run['seconds']:9.2f}s")
    print(f"same loss: {plain['loss'] == ckpt['loss']}; every gradient equal bit for bit: "
          f"{same}; peak memory {ckpt['peak'] / plain['peak']:.0%} of the plain step's")
    return {"same": same, "ratio": ckpt["peak"] / plain["peak"]}


if __name__ == "__main__":
    main()
