"""The training script's pictures: loss curve, attention maps, positional encodings.

matplotlib is optional (``pip install "tinyattn[viz]"``): without it ``have_matplotlib()`` is
False and the script trains anyway and says how to get the plots.
"""
from __future__ import annotations

from typing import Dict, List, Optional, Sequence

import numpy as np

from ..serialization import atomic_write

__all__ = ["have_matplotlib", "plot_loss", "plot_attention", "plot_positional"]


def have_matplotlib() -> bool:
    try:
        import matplotlib  # noqa: F401, PLC0415
        return True
    except ImportError:
        return False


def _pyplot():
    import matplotlib  # noqa: PLC0415
    matplotlib.use("Agg")  # files only; works on machines without a display
    import matplotlib.pyplot as plt  # noqa: PLC0415
    return plt


def _save(fig, path: str) -> None:
    with atomic_write(path) as f:  # an interrupted save never leaves a half-written picture
        fig.savefig(f, format="png", dpi=110, bbox_inches="tight")


def plot_loss(path: str, train_losses: Sequence[float], evals: List[Dict[str, float]],
              title: str) -> None:
    """Training loss per step (raw and smoothed) with validation loss and accuracy points."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(7, 4))
    steps = np.arange(1, len(train_losses) + 1)
    losses = np.asarray(train_losses, dtype=float)
    ax.plot(steps, losses, color="tab:blue", alpha=0.25, linewidth=0.8, label="train (per step)")
    if len(losses) >= 10:
        k = max(len(losses) // 50, 5)
        smooth = np.convolve(losses, np.ones(k) / k, mode="valid")
        ax.plot(steps[k - 1:], smooth, color="tab:blue", label=f"train ({k}-step mean)")
    if evals:
        ax.plot([e["step"] for e in evals], [e["val_loss"] for e in evals], "o-",
                color="tab:orange", label="validation")
    ax.set_yscale("log")
    ax.set_xlabel("step")
    ax.set_ylabel("cross-entropy (log scale)")
    ax.set_title(title)
    ax.grid(alpha=0.3)
    if evals and "accuracy" in evals[0]:
        twin = ax.twinx()
        twin.plot([e["step"] for e in evals], [100 * e["accuracy"] for e in evals], "s--",
                  color="tab:green", label="held-out exact match")
        twin.set_ylabel("exact match (%)")
        twin.set_ylim(0, 101)
        twin.legend(loc="center right")
    ax.legend(loc="upper right")
    _save(fig, path)
    plt.close(fig)


def plot_attention(path: str, weights: List[np.ndarray], tokens: Sequence[str],
                   title: str) -> None:
    """Every head of every layer for one example: weights[layer] is (h, S, S)."""
    plt = _pyplot()
    layers, heads = len(weights), weights[0].shape[0]
    size = max(2.2, 0.28 * len(tokens))
    fig, axes = plt.subplots(layers, heads, figsize=(size * heads, size * layers),
                             squeeze=False)
    labels = [t if t != "\n" else "\\n" for t in tokens]
    for layer in range(layers):
        for head in range(heads):
            ax = axes[layer][head]
            ax.imshow(weights[layer][head], cmap="viridis", vmin=0, vmax=1)
            ax.set_xticks(range(len(labels)))
            ax.set_yticks(range(len(labels)))
            ax.set_xticklabels(labels, fontsize=7)
            ax.set_yticklabels(labels, fontsize=7)
            ax.set_title(f"layer {layer} head {head}", fontsize=9)
            if head == 0:
                ax.set_ylabel("query (attends from)")
            if layer == layers - 1:
                ax.set_xlabel("key (attends to)")
    fig.suptitle(title)
    _save(fig, path)
    plt.close(fig)


def plot_positional(path: str, table: np.ndarray, title: str,
                    max_positions: Optional[int] = None) -> None:
    """Left: the (positions, d_model) table as a heatmap. Right: the cosine similarity of every
    pair of positions, which shows what the model can tell apart (a bright diagonal that fades
    with distance means nearby positions look alike and far ones differ)."""
    plt = _pyplot()
    table = table[:max_positions] if max_positions else table
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 3.8),
                                      gridspec_kw={"width_ratios": [2, 1]})
    limit = float(np.abs(table).max()) or 1.0
    image = left.imshow(table, aspect="auto", cmap="RdBu", vmin=-limit, vmax=limit)
    left.set_xlabel("dimension")
    left.set_ylabel("position")
    left.set_title(title)
    fig.colorbar(image, ax=left)
    unit = table / np.maximum(np.linalg.norm(table, axis=1, keepdims=True), 1e-12)
    similarity = right.imshow(unit @ unit.T, cmap="viridis", vmin=-1, vmax=1)
    right.set_xlabel("position")
    right.set_ylabel("position")
    right.set_title("cosine similarity of positions")
    fig.colorbar(similarity, ax=right)
    _save(fig, path)
    plt.close(fig)
