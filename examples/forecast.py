"""Time-series forecasting with attention over past steps, on a synthetic signal.

The signal is a sum of two sines with random phases plus noise. From a window of the last 32
values the model predicts the next one at every position (causal attention: position t sees
steps 0..t only, so one forward pass trains 32 predictions at once).

Model: each value -> linear embedding (1 -> d_model) + sinusoidal positional encoding -> one
causal transformer encoder layer -> linear head (d_model -> 1). Baseline: persistence, i.e.
"the next value equals the last one", the usual yardstick in forecasting.

    python examples/forecast.py            # about 20 s on a 2-core CPU
"""
from __future__ import annotations

import argparse
import time

import numpy as np

import tinyattn as ta
from tinyattn import nn, optim

WINDOW = 32


def make_windows(rng: np.random.Generator, count: int, noise: float = 0.05) -> np.ndarray:
    """(N, WINDOW + 1) samples of 0.8 sin(2 pi t / 16 + a) + 0.4 sin(2 pi t / 5.3 + b) + noise."""
    t = np.arange(WINDOW + 1)[None, :]
    phase1, phase2 = rng.uniform(0, 2 * np.pi, size=(2, count, 1))
    clean = 0.8 * np.sin(2 * np.pi * t / 16 + phase1) + 0.4 * np.sin(2 * np.pi * t / 5.3 + phase2)
    return (clean + noise * rng.standard_normal(clean.shape)).astype(np.float32)


class Forecaster(nn.Module):
    def __init__(self, d_model: int = 32, num_heads: int = 4):
        self.embed = nn.Linear(1, d_model)
        self.position = nn.SinusoidalPositionalEncoding(d_model, max_len=WINDOW)
        self.encoder = nn.TransformerEncoderLayer(d_model, num_heads, dim_feedforward=64,
                                                  dropout=0.0, norm_first=True,
                                                  batch_first=True)   # inputs are (B, S, D)
        self.head = nn.Linear(d_model, 1)

    def forward(self, values: ta.Tensor) -> ta.Tensor:
        x = self.embed(values.unsqueeze(-1))            # (B, S) -> (B, S, 1) -> (B, S, D)
        x = self.encoder(self.position(x), is_causal=True)
        return self.head(x).squeeze(-1)                 # (B, S, D) -> (B, S, 1) -> (B, S)


def mse(prediction: np.ndarray, target: np.ndarray) -> float:
    return float(np.mean((prediction - target) ** 2))


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=400)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--quick", action="store_true",
                        help="a few steps: does the example still run (not its result)")
    args = parser.parse_args(argv)
    if args.quick:
        args.steps = 5
    ta.manual_seed(args.seed)
    rng = np.random.default_rng(args.seed)
    train, test = make_windows(rng, 4000), make_windows(rng, 500)
    start = time.perf_counter()
    model = Forecaster()
    opt = optim.AdamW(model.parameters(), lr=3e-3, weight_decay=0.0)
    for _ in range(args.steps):
        rows = rng.integers(0, len(train), size=64)
        inputs, targets = ta.tensor(train[rows, :-1]), ta.tensor(train[rows, 1:])
        loss = ((model(inputs) - targets) ** 2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
    with ta.no_grad():
        prediction = model(ta.tensor(test[:, :-1])).numpy()[:, -1]   # the step after the window
    results = {"attention": mse(prediction, test[:, -1]),
               "persistence (baseline)": mse(test[:, -2], test[:, -1])}
    for name, value in results.items():
        print(f"{name:<24} next-step MSE {value:.4f}")
    print(f"noise floor {0.05 ** 2:.4f}; {time.perf_counter() - start:.0f} s")
    return results


if __name__ == "__main__":
    main()
