"""Text classification with attention, on a task that needs word order.

Each "sentence" is 12 tokens: filler words plus exactly one ``A`` and one ``B`` at random
places. The label is 1 when ``A`` comes before ``B``. Every sentence holds the same bag of
special words, so a model that ignores order (bag of words) cannot beat a coin flip; a model
with positions and attention can.

Model (the seed material's classifier): token embedding + sinusoidal positional encoding ->
one transformer encoder layer (multi-head self-attention, feed-forward) -> mean over positions
-> linear head to 2 classes. Baseline: the same pipeline without positions and attention
(mean of embeddings -> linear), i.e. a bag of words.

    python examples/classify.py            # about 20 s on a 2-core CPU
"""
from __future__ import annotations

import argparse
import time
from typing import Tuple

import numpy as np

import tinyattn as ta
import tinyattn.functional as F
from tinyattn import nn, optim

VOCAB, LENGTH, A, B = 20, 12, 1, 2      # ids 3..19 are filler words


def make_data(rng: np.random.Generator, count: int) -> Tuple[np.ndarray, np.ndarray]:
    ids = rng.integers(3, VOCAB, size=(count, LENGTH))               # (N, S) filler
    positions = np.argsort(rng.random((count, LENGTH)), axis=1)[:, :2]  # two distinct slots
    rows = np.arange(count)
    ids[rows, positions[:, 0]] = A
    ids[rows, positions[:, 1]] = B
    labels = (positions[:, 0] < positions[:, 1]).astype(np.int64)
    return ids, labels


class AttentionClassifier(nn.Module):
    def __init__(self, d_model: int = 32, num_heads: int = 4):
        self.embed = nn.Embedding(VOCAB, d_model)
        self.position = nn.SinusoidalPositionalEncoding(d_model, max_len=LENGTH)
        self.encoder = nn.TransformerEncoderLayer(d_model, num_heads, dim_feedforward=64,
                                                  dropout=0.0, norm_first=True,
                                                  batch_first=True)   # inputs are (B, S, D)
        self.head = nn.Linear(d_model, 2)

    def forward(self, ids: ta.Tensor) -> ta.Tensor:
        x = self.position(self.embed(ids))          # (B, S) -> (B, S, D)
        x = self.encoder(x)                          # (B, S, D)
        return self.head(x.mean(dim=1))              # (B, S, D) -> (B, D) -> (B, 2)


class BagOfWords(nn.Module):
    def __init__(self, d_model: int = 32):
        self.embed = nn.Embedding(VOCAB, d_model)
        self.head = nn.Linear(d_model, 2)

    def forward(self, ids: ta.Tensor) -> ta.Tensor:
        return self.head(self.embed(ids).mean(dim=1))   # order-blind: (B, S, D) -> (B, 2)


def fit(model: nn.Module, train: Tuple[np.ndarray, np.ndarray], steps: int, batch: int,
        rng: np.random.Generator) -> None:
    opt = optim.AdamW(model.parameters(), lr=3e-3, weight_decay=0.01)
    ids, labels = train
    for _ in range(steps):
        rows = rng.integers(0, len(ids), size=batch)
        loss = F.cross_entropy(model(ta.tensor(ids[rows])), ta.tensor(labels[rows]))
        opt.zero_grad()
        loss.backward()
        opt.step()


def accuracy(model: nn.Module, data: Tuple[np.ndarray, np.ndarray]) -> float:
    ids, labels = data
    with ta.no_grad():
        guess = model(ta.tensor(ids)).numpy().argmax(axis=1)
    return float((guess == labels).mean())


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=600)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--quick", action="store_true",
                        help="a few steps: does the example still run (not its result)")
    args = parser.parse_args(argv)
    if args.quick:
        args.steps = 5
    ta.manual_seed(args.seed)
    rng = np.random.default_rng(args.seed)
    train, test = make_data(rng, 5000), make_data(rng, 1000)
    start = time.perf_counter()
    results = {}
    for name, model in (("bag of words (baseline)", BagOfWords()),
                        ("attention + positions", AttentionClassifier())):
        fit(model, train, args.steps, 64, rng)
        results[name] = accuracy(model, test)
        print(f"{name:<26} test accuracy {100 * results[name]:5.1f}%")
    print(f"chance is 50%; {time.perf_counter() - start:.0f} s")
    return results


if __name__ == "__main__":
    main()
