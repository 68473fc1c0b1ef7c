"""Why attention divides by sqrt(d_k), measured (docs/long_sequences.md#the-scaling-experiment).

Part 1, no training: for d_k = 4 .. 512, queries and keys with independent N(0, 1) entries
(what a well-initialised projection of normalised inputs gives), the scores q . k over S
keys, with and without the factor 1 / sqrt(d_k). Measured per d_k: the variance of the
scores (d_k without scaling, 1 with), the softmax's largest weight and its entropy, and the
norm of the gradient reaching the scores, dS = P * (g - rowsum(g * P)), for an upstream
gradient g with N(0, 1) entries (computed by tinyattn's own softmax backward).

Part 2: the toy task (reverse 8 digits) trained twice with the same seed and the same
everything, d_k = 64: once with scale 1/sqrt(d_k) (GPTConfig(attn_scale=None)), once with
scale 1 (attn_scale=1.0). The loss curves and held-out exact match are reported as measured.

    python examples/scaling_experiment.py            # a few minutes
    python examples/scaling_experiment.py --quick    # seconds (the tests run this)

Writes <out>/scaling.png (part 1), <out>/scaling_training.png (part 2) and metrics.json.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import time
from typing import Any, Dict, List

import numpy as np

import tinyattn as ta
import tinyattn.functional as F
from tinyattn import nn, optim
from tinyattn.train.tasks import IGNORE, make_task


def score_statistics(d_k: int, scaled: bool, rows: int, keys: int,
                     rng: np.random.Generator) -> Dict[str, float]:
    """Scores of ``rows`` queries against ``keys`` keys, with N(0, 1) entries."""
    q = rng.standard_normal((rows, d_k))
    k = rng.standard_normal((keys, d_k))
    scores = ta.tensor(q @ k.T / (math.sqrt(d_k) if scaled else 1.0), requires_grad=True)
    probs = F.softmax(scores, dim=-1)                           # (rows, S)
    upstream = rng.standard_normal(probs.shape)
    (probs * ta.tensor(upstream)).sum().backward()              # dS through softmax's backward
    p = probs.numpy()
    entropy = -(p * np.log(np.where(p > 0, p, 1))).sum(axis=-1)
    return {"score_variance": float(scores.numpy().var()),
            "max_weight": float(p.max(axis=-1).mean()),
            "entropy": float(entropy.mean()),
            "grad_norm": float(np.linalg.norm(scores.grad.numpy(), axis=-1).mean())}


def part_one(dims: List[int], rows: int, keys: int, seed: int) -> Dict[str, Any]:
    result: Dict[str, Any] = {"d_k": dims, "keys": keys, "uniform_entropy": math.log(keys)}
    for scaled in (True, False):
        rng = np.random.default_rng(seed)
        stats = [score_statistics(d, scaled, rows, keys, rng) for d in dims]
        result["scaled" if scaled else "unscaled"] = {
            name: [s[name] for s in stats] for name in stats[0]}
    return result


def train(attn_scale: Any, steps: int, d_model: int, heads: int, seed: int,
          batch: int, lr: float) -> Dict[str, Any]:
    """The reverse task, a 2-layer GPT; the same seed for both runs."""
    task = make_task("reverse")
    ta.manual_seed(seed)
    config = nn.GPTConfig(vocab_size=len(task.vocab), block_size=task.block_size, n_layer=2,
                          n_head=heads, d_model=d_model, attn_scale=attn_scale)
    model = nn.GPT(config)
    opt = optim.AdamW(model.parameters(), lr=lr, weight_decay=0.01)
    rng = np.random.default_rng(seed)
    held_in, held_t, held_keys = task.heldout(500, seed)
    losses, evals = [], []
    warmup = max(1, steps // 10)
    start = time.time()
    for step in range(steps):
        for group in opt.param_groups:
            group["lr"] = lr * min(1.0, (step + 1) / warmup)
        inputs, targets = task.sample(rng, batch, exclude=held_keys)
        _, loss = model(inputs, targets)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(float(loss.item()))
        if (step + 1) % max(1, steps // 10) == 0 or step == steps - 1:
            evals.append({"step": step + 1, **evaluate(model, task, held_in, held_t)})
    return {"attn_scale": attn_scale, "losses": losses, "evals": evals,
            "wall_time_s": round(time.time() - start, 1)}


def evaluate(model: nn.GPT, task: Any, inputs: np.ndarray, targets: np.ndarray
             ) -> Dict[str, float]:
    """Held-out loss and exact match (every answer token right, teacher forcing: the
    answer is scored given the right earlier answer tokens)."""
    with ta.no_grad():
        logits, loss = model(inputs, targets)
    guess = logits.numpy().argmax(axis=-1)
    scored = targets != IGNORE
    exact = np.all((guess == targets) | ~scored, axis=1).mean()
    return {"val_loss": float(loss.item()), "exact_match": float(exact)}


def plot(metrics: Dict[str, Any], out: str) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    one = metrics["part1"]
    fig, axes = plt.subplots(1, 4, figsize=(16, 3.8), layout="constrained")
    names = [("score_variance", "variance of the scores", True),
             ("max_weight", "largest softmax weight (mean over rows)", False),
             ("entropy", "softmax entropy (nats)", False),
             ("grad_norm", "|dL/dscores| per row", True)]
    for ax, (name, title, log) in zip(axes, names):
        for kind, style in (("scaled", "o-"), ("unscaled", "s--")):
            label = "q.k / sqrt(d_k)" if kind == "scaled" else "q.k (no scaling)"
            ax.plot(one["d_k"], one[kind][name], style, label=label)
        ax.set_xscale("log", base=2)
        if log:
            ax.set_yscale("log")
        ax.set_xlabel("d_k")
        ax.set_title(title, fontsize=10)
        ax.grid(alpha=0.3)
    axes[2].axhline(one["uniform_entropy"], color="gray", lw=0.8, label="uniform")
    axes[0].legend(fontsize=8)
    axes[2].legend(fontsize=8)
    fig.suptitle(f"scores of N(0,1) queries against {one['keys']} N(0,1) keys")
    fig.savefig(os.path.join(out, "scaling.png"), dpi=110)
    plt.close(fig)
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 3.8), layout="constrained")
    for run in metrics["part2"]:
        label = "scale 1/sqrt(d_k)" if run["attn_scale"] is None else "scale 1"
        left.plot(run["losses"], lw=0.8, label=label)
        right.plot([e["step"] for e in run["evals"]], [e["exact_match"] for e in run["evals"]],
                   "o-", label=label)
    left.set_yscale("log")
    left.set_xlabel("step")
    left.set_ylabel("training loss")
    right.set_xlabel("step")
    right.set_ylabel("held-out exact match")
    for ax in (left, right):
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    fig.suptitle(f"reverse, 2 layers, d_k = {metrics['d_k_trained']}")
    fig.savefig(os.path.join(out, "scaling_training.png"), dpi=110)
    plt.close(fig)


def main(argv: Any = None) -> Dict[str, Any]:
    p = argparse.ArgumentParser(description="Why attention divides by sqrt(d_k), measured.")
    p.add_argument("--quick", action="store_true", help="a few seconds: small everything")
    p.add_argument("--steps", type=int, default=None, help="training steps (default 600)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", default="runs/scaling")
    args = p.parse_args(argv)
    os.makedirs(args.out, exist_ok=True)
    dims = [4, 8, 16, 32, 64, 128, 256, 512]
    steps = args.steps or (12 if args.quick else 600)
    d_model, heads = (32, 1) if args.quick else (128, 2)
    metrics: Dict[str, Any] = {
        "command": "python examples/scaling_experiment.py" + (" --quick" if args.quick else ""),
        "part1": part_one(dims, 32 if args.quick else 256, 64, args.seed),
        "d_k_trained": d_model // heads, "steps": steps}
    metrics["part2"] = [train(scale, steps, d_model, heads, args.seed, 64, 1e-3)
                        for scale in (None, 1.0)]
    for run in metrics["part2"]:
        last = run["evals"][-1]
        name = "1/sqrt(d_k)" if run["attn_scale"] is None else "1"
        print(f"scale {name:12s} final val loss {last['val_loss']:.4f}  held-out exact match "
              f"{last['exact_match']:.3f}  ({run['wall_time_s']} s)")
    with open(os.path.join(args.out, "metrics.json"), "w") as f:
        json.dump(metrics, f, indent=1)
    plot(metrics, args.out)
    print(f"wrote {args.out}/scaling.png, scaling_training.png, metrics.json")
    return metrics


if __name__ == "__main__":
    main()
