"""Watch attention learn: attention maps of one fixed held-out example at a few steps.

``AttentionHistory`` runs the model on the same example at step 0 and at a handful of
log-spaced steps up to the last (7 snapshots by default: one forward of one sequence without
gradients each, so the training run barely notices), and ``write`` draws
``attention_evolution.png``: one row per head (every layer), one column per snapshot, one
colour scale. With Pillow installed (matplotlib depends on it) it also writes
``attention_evolution.gif``, one frame per snapshot of every head at once.

In every map, row i is the query at position i, which predicts token i+1, and the columns
are the keys it attends to (causal: only up to i); each row sums to 1.
"""
from __future__ import annotations

import os
from typing import Any, Callable, List, Tuple

import numpy as np

from .. import nn
from ..autograd import no_grad
from ..tensor import as_tensor
from . import plots

__all__ = ["AttentionHistory", "attention_maps", "snapshot_steps", "evolution_figure"]

EVOLUTION_PNG, EVOLUTION_GIF = "attention_evolution.png", "attention_evolution.gif"


def attention_maps(model: nn.GPT, ids: np.ndarray, device: str) -> List[np.ndarray]:
    """The attention weights of one sequence ids (S,): one (h, S, S) array per layer, in
    eval mode (no dropout) and without recording a graph."""
    was_training = model.training
    model.eval()
    try:
        with no_grad():
            _, weights = model(as_tensor(ids[None, :], device=device), return_attention=True)
    finally:
        model.train(was_training)
    return [w.numpy()[0] for w in weights]                  # per layer: (h, S, S)


def snapshot_steps(total: int, count: int = 7) -> List[int]:
    """Step 0 and ``count - 1`` steps log-spaced from about total / 50 to total (attention
    changes fastest early), without repeats."""
    if total < 1 or count < 2:
        return [0, total] if total >= 1 else [0]
    later = np.geomspace(max(total / 50, 1), total, count - 1).round().astype(int)
    return sorted({0, *map(int, later), total})


class AttentionHistory:
    """Snapshots of one example's attention during training (see the module docstring).

    ``after_step(model, step)`` takes a snapshot when ``step`` is one of ``steps``; a resumed
    run has only the snapshots of its own session (the figure says from which step)."""

    def __init__(self, model: nn.GPT, ids: np.ndarray, tokens: List[str], device: str,
                 total_steps: int, start_step: int = 0, count: int = 7):
        self.ids, self.tokens, self.device = ids, tokens, device
        self.steps = [s for s in snapshot_steps(total_steps, count) if s >= start_step]
        self.snapshots: List[Tuple[int, List[np.ndarray]]] = []
        self.after_step(model, start_step)

    def after_step(self, model: nn.GPT, step: int) -> None:
        if step in self.steps and not any(s == step for s, _ in self.snapshots):
            self.snapshots.append((step, attention_maps(model, self.ids, self.device)))

    def write(self, out: str, model: nn.GPT, step: int, title: str,
              log: Callable[[str], None] = print) -> List[str]:
        """Take a last snapshot at ``step`` (an interrupted run ends early) and draw; returns
        the file names written (none without matplotlib)."""
        if not self.snapshots or self.snapshots[-1][0] != step:
            self.snapshots.append((step, attention_maps(model, self.ids, self.device)))
        if not plots.have_matplotlib():
            return []
        plt = plots._pyplot()
        fig = evolution_figure(self.snapshots, self.tokens, title)
        plots._save(fig, os.path.join(out, EVOLUTION_PNG), tight=False)
        plt.close(fig)
        written = [EVOLUTION_PNG]
        if _write_gif(os.path.join(out, EVOLUTION_GIF), self.snapshots, self.tokens, title):
            written.append(EVOLUTION_GIF)
        return written


def _label_outer(ax: Any, labels: List[str], font: int, bottom: bool, left: bool) -> None:
    """Token tick labels on the outer panels of a grid only (they are the same for all)."""
    ax.set_xticks(range(len(labels)) if bottom else [])
    ax.set_yticks(range(len(labels)) if left else [])
    if bottom:
        ax.set_xticklabels(labels, fontsize=font)
    if left:
        ax.set_yticklabels(labels, fontsize=font)


def evolution_figure(snapshots: List[Tuple[int, List[np.ndarray]]], tokens: List[str],
                     title: str) -> Any:
    """Rows: every head of every layer; columns: the snapshots, in step order."""
    rows = [(layer, head) for layer, w in enumerate(snapshots[0][1])
            for head in range(w.shape[0])]
    panel = min(1.6, 12.0 / len(snapshots), 18.0 / len(rows))
    fig, axes, colorbar = plots.grid_figure(len(rows), len(snapshots), panel, top=1.0,
                                            left=0.9, bottom=0.5, gap=0.12)
    labels = [plots.shown(t) for t in tokens]
    font = 6 if panel / max(len(tokens), 1) >= 0.09 else 4
    image = None
    for col, (step, weights) in enumerate(snapshots):
        for row, (layer, head) in enumerate(rows):
            ax = axes[row][col]
            image = ax.imshow(weights[layer][head], cmap="viridis", vmin=0, vmax=1,
                              interpolation="nearest")
            _label_outer(ax, labels, font, bottom=row == len(rows) - 1, left=col == 0)
            if col == 0:
                ax.set_ylabel(f"layer {layer}\nhead {head}", fontsize=8)
            if row == 0:
                ax.set_title(f"step {step}", fontsize=9)
    fig.colorbar(image, cax=colorbar, label="attention weight")
    start = "" if snapshots[0][0] == 0 else f" (resumed at step {snapshots[0][0]})"
    fig.suptitle(f"{title}{start}\n{plots.ATTENTION_CAPTION}", fontsize=9)
    return fig


def _write_gif(path: str, snapshots: List[Tuple[int, List[np.ndarray]]], tokens: List[str],
               title: str) -> bool:
    """An animated GIF, one frame per snapshot, if Pillow is there; written to a temporary
    name first and renamed, so an interruption never leaves half a file."""
    try:
        from matplotlib.animation import FuncAnimation, PillowWriter  # noqa: PLC0415
        import PIL  # noqa: F401, PLC0415 - PillowWriter needs it
    except ImportError:
        return False
    plt = plots._pyplot()
    first = snapshots[0][1]
    layers, heads = len(first), first[0].shape[0]
    fig, axes, colorbar = plots.grid_figure(layers, heads, min(1.6, 10.0 / heads), top=0.8,
                                            left=0.9, bottom=0.5, gap=0.25)
    labels = [plots.shown(t) for t in tokens]
    images = []
    for layer in range(layers):
        for head in range(heads):
            ax = axes[layer][head]
            images.append(ax.imshow(first[layer][head], cmap="viridis", vmin=0, vmax=1,
                                    interpolation="nearest"))
            _label_outer(ax, labels, 5, bottom=layer == layers - 1, left=head == 0)
            ax.set_title(f"layer {layer} head {head}", fontsize=7)
    fig.colorbar(images[0], cax=colorbar, label="attention weight")

    def show(frame: int) -> List[Any]:
        step, weights = snapshots[frame]
        maps = [w for layer in weights for w in layer]        # the order of the axes
        for image, weights_of_head in zip(images, maps):
            image.set_data(weights_of_head)
        fig.suptitle(f"{title}: step {step}\nrow i: query at position i (predicts token "
                     f"i+1); columns: keys", fontsize=8)
        return images

    animation = FuncAnimation(fig, show, frames=len(snapshots), blit=False)
    tmp = os.path.join(os.path.dirname(os.path.abspath(path)), ".tmp-" + os.path.basename(path))
    try:
        animation.save(tmp, writer=PillowWriter(fps=1), dpi=80)
        os.replace(tmp, path)
    finally:
        plt.close(fig)
        if os.path.exists(tmp):
            os.remove(tmp)
    return True
