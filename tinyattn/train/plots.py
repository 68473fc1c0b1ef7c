"""The training script's pictures: loss curve and attention maps (positional encodings:
plot_positional.py; attention during training: attention_history.py).

matplotlib is optional (``pip install "tinyattn[viz]"``): without it ``have_matplotlib()`` is
False and the script trains anyway and says how to get the plots.
"""
from __future__ import annotations

import sys
from typing import Any, Dict, List, Sequence

import numpy as np

from ..serialization import atomic_write

__all__ = ["have_matplotlib", "plot_loss", "plot_attention", "attention_figure", "shown",
           "grid_figure",
           "readable_example", "ATTENTION_CAPTION", "MASK_CAPTION", "UNSCORED_CAPTION",
           "masked_map", "attention_cmap", "mark_unscored_rows", "scored_from"]


def have_matplotlib() -> bool:
    try:
        import matplotlib  # noqa: F401, PLC0415
        return True
    except ImportError:
        return False


def _pyplot():
    import matplotlib  # noqa: PLC0415
    if "ipykernel" not in sys.modules:   # a notebook keeps its inline backend for its plots
        matplotlib.use("Agg")  # files only; works on machines without a display
    import matplotlib.pyplot as plt  # noqa: PLC0415
    return plt


def _save(fig, path: str, tight: bool = True) -> None:
    """Write a PNG; ``tight=False`` for figures laid out by hand (one draw instead of two)."""
    with atomic_write(path) as f:  # an interrupted save never leaves a half-written picture
        fig.savefig(f, format="png", dpi=110, bbox_inches="tight" if tight else None)


def plot_loss(path: str, train_losses: Sequence[float], evals: List[Dict[str, float]],
              title: str, stride: int = 1) -> None:
    """Training loss per step (raw and smoothed) with validation loss and accuracy points;
    ``stride`` > 1: each loss is the mean of that many steps (a long run's bounded history)."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(7, 4))
    steps = np.arange(1, len(train_losses) + 1) * stride
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


_SHOWN = {" ": "\u2423", "\n": "\u21b5", "\t": "\u21e5", "\r": "\u240d"}   # ␣ ↵ ⇥ ␍
ATTENTION_CAPTION = ("row i: the query at position i, which predicts token i+1; columns: the "
                     "keys it attends to (causal: up to i); each row sums to 1")
MASK_CAPTION = ("grey cells: masked (a future key the query may not see), not a weight of 0 "
                "(dark purple)")
UNSCORED_CAPTION = ("grey row labels above the dashed line: queries whose predictions are not "
                    "scored (the prompt)")
MASKED_GREY = "#c8c8c8"    # not in viridis, whose 0 is dark purple
_MAX_WIDTH = 16.0          # inches: a figure wider than a screen is not read


def shown(token: str) -> str:
    """A token as a tick label: a space, newline or tab as a visible symbol, so that no
    label is blank."""
    if token in _SHOWN:
        return _SHOWN[token]
    return token if token.isprintable() else repr(token)[1:-1]


def scored_from(task: Any) -> int:
    """The first query row whose prediction is scored: a sequence task scores only the
    answer (tasks.py), so rows 0 .. prompt_len - 2 predict prompt tokens and are not; every
    row of the chars task is scored (0)."""
    prompt_len = getattr(task, "prompt_len", None)
    return prompt_len - 1 if getattr(task, "has_accuracy", False) and prompt_len else 0


def readable_example(task: Any, inputs: np.ndarray, max_len: int = 24) -> np.ndarray:
    """One held-out input to draw attention on. Sequence tasks: the whole first example.
    Text (chars): ``max_len`` characters that start a word and are mostly letters, so the
    tick labels read as text."""
    if getattr(task, "has_accuracy", True):
        return inputs[0][:40]
    for row in inputs[:64]:
        text = task.decode(row)
        for start in range(1, len(text) - max_len + 1):
            window = text[start:start + max_len]
            if text[start - 1] in " \n" and window[0].isalpha() and "\n" not in window[:-1] \
                    and sum(c.isalpha() or c == " " for c in window) >= 0.85 * max_len:
                return row[start:start + max_len]
    return inputs[0][:max_len]


def grid_figure(rows: int, cols: int, panel: float, top: float = 0.9, left: float = 0.8,
                bottom: float = 0.6, gap: float = 0.35) -> Any:
    """A figure of rows x cols square panels of ``panel`` inches, laid out by hand (margins
    and gaps in inches) with room on the right for a colour bar: much faster to draw than
    a layout engine, which matters for many panels and for every frame of a GIF."""
    plt = _pyplot()
    width = left + cols * panel + (cols - 1) * gap + 1.1
    height = bottom + rows * panel + (rows - 1) * gap + top
    fig, axes = plt.subplots(rows, cols, squeeze=False, figsize=(width, height))
    fig.subplots_adjust(left=left / width, right=(width - 1.1) / width, bottom=bottom / height,
                        top=1 - top / height, wspace=gap / panel, hspace=gap / panel)
    colorbar = fig.add_axes((1 - 0.85 / width, bottom / height, 0.15 / width,
                             (height - top - bottom) / height))
    return fig, axes, colorbar


def masked_map(weights: np.ndarray, causal: bool = True) -> np.ndarray:
    """An (S, S) map with the masked cells (causal: key j > query i) set to NaN, so that they
    are drawn grey rather than as a weight of 0."""
    shown_map = np.array(weights, dtype=float)
    if causal:
        length = shown_map.shape[-1]
        shown_map[np.triu(np.ones((length, length), dtype=bool), k=1)] = np.nan
    return shown_map


def attention_cmap() -> Any:
    import matplotlib  # noqa: PLC0415 - optional extra
    return matplotlib.colormaps["viridis"].with_extremes(bad=MASKED_GREY)


def mark_unscored_rows(ax: Any, scored_from: int, length: int) -> None:
    """Grey tick labels for the query rows before ``scored_from`` and a dashed line under
    them: their predictions are not part of the loss (the prompt of a toy task)."""
    if not 0 < scored_from < length:
        return
    for row, label in enumerate(ax.get_yticklabels()):
        if row < scored_from:
            label.set_color("0.55")
    ax.axhline(scored_from - 0.5, color="white", linewidth=1.6)
    ax.axhline(scored_from - 0.5, color="black", linewidth=1.0, linestyle="--")


def attention_figure(weights: List[np.ndarray], tokens: Sequence[str], title: str,
                     scored_from: int = 0, causal: bool = True) -> Any:
    """Every head of every layer for one example: weights[layer] is (h, S, S). Masked cells
    (causal: the future) are grey, not a weight of 0; with ``scored_from`` > 0 the query rows
    before it (predictions not scored) get grey labels and a dashed line under them."""
    layers, heads, length = len(weights), weights[0].shape[0], weights[0].shape[-1]
    gap, margins = 0.45, 0.9 + 1.1                      # grid_figure's left and right
    panel = min(max(2.2, 0.2 * length), 4.0, (_MAX_WIDTH - margins - gap * (heads - 1)) / heads)
    notes = [ATTENTION_CAPTION] + ([MASK_CAPTION] if causal else [])
    if 0 < scored_from < length:
        notes.append(UNSCORED_CAPTION)
    fig, axes, colorbar = grid_figure(layers, heads, panel, top=0.45 + 0.19 * len(notes),
                                      left=0.9, bottom=0.7, gap=gap)
    labels = [shown(t) for t in tokens]
    font = 7 if panel / max(length, 1) >= 0.11 else 5
    image = None
    for layer in range(layers):
        for head in range(heads):
            ax = axes[layer][head]
            image = ax.imshow(masked_map(weights[layer][head], causal), cmap=attention_cmap(),
                              vmin=0, vmax=1, interpolation="nearest")
            ax.set_xticks(range(length))
            ax.set_yticks(range(length))
            ax.set_xticklabels(labels, fontsize=font)
            ax.set_yticklabels(labels, fontsize=font)
            mark_unscored_rows(ax, scored_from, length)
            ax.set_title(f"layer {layer} head {head}", fontsize=9)
            if head == 0:
                ax.set_ylabel("query (position i)")
            if layer == layers - 1:
                ax.set_xlabel("key (attended to)")
    fig.colorbar(image, cax=colorbar, label="attention weight")
    fig.suptitle("\n".join([title] + notes), fontsize=10)
    return fig


def plot_attention(path: str, weights: List[np.ndarray], tokens: Sequence[str],
                   title: str, scored_from: int = 0) -> None:
    plt = _pyplot()
    fig = attention_figure(weights, tokens, title, scored_from=scored_from)
    _save(fig, path)
    plt.close(fig)
