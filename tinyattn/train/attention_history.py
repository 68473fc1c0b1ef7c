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
from ..atomic import atomic_write
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

    @classmethod
    def for_run(cls, model: nn.GPT, task: Any, inputs: np.ndarray, device: str,
                total_steps: int, start_step: int = 0) -> "AttentionHistory":
        """For a training run: a held-out example as the attention plots pick it
        (``readable_example``), at most 16 tokens, so that 7 columns of maps keep readable
        tick labels (the digit tasks' whole example; 16 characters of text for chars)."""
        ids = plots.readable_example(task, inputs, max_len=16)
        return cls(model, ids, task.decode(ids), device, total_steps, start_step)

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
            return []                   # the training script has said how to get plots
        plt = plots._pyplot()
        fig = evolution_figure(self.snapshots, self.tokens, title)
        plots._save(fig, os.path.join(out, EVOLUTION_PNG), tight=False)
        plt.close(fig)
        written = [EVOLUTION_PNG]
        if _write_gif(os.path.join(out, EVOLUTION_GIF), self.snapshots, self.tokens, title):
            written.append(EVOLUTION_GIF)
        steps = ", ".join(str(s) for s, _ in self.snapshots)
        log(f"wrote {out}/{' and '.join(written)}: attention at steps {steps}")
        return written


def mosaic(blocks: List[List[np.ndarray]], gap: int) -> np.ndarray:
    """Square (S, S) maps tiled into one array, ``gap`` NaN cells between them (drawn
    blank): one image on one set of axes draws much faster than one axes per map."""
    size = blocks[0][0].shape[0]
    step = size + gap
    out = np.full((len(blocks) * step - gap, len(blocks[0]) * step - gap), np.nan)
    for r, row in enumerate(blocks):
        for c, block in enumerate(row):
            out[r * step:r * step + size, c * step:c * step + size] = block
    return out


def _mosaic_axes(rows: int, cols: int, length: int, panel: float, tokens: List[str]):
    """A figure with one axes for a rows x cols mosaic of (length, length) maps, tick labels
    (the tokens) along the left and the bottom of every map, and a colour bar."""
    plt = plots._pyplot()
    gap = max(1, length // 5)
    width, height = 1.0 + cols * panel + 1.8, 0.6 + rows * panel + 1.1
    fig = plt.figure(figsize=(width, height))
    ax = fig.add_axes((0.9 / width, 0.6 / height, cols * panel / width, rows * panel / height))
    colorbar = fig.add_axes((1 - 0.7 / width, 0.6 / height, 0.15 / width,
                             rows * panel / height))
    labels = [plots.shown(t) for t in tokens]
    font = 6 if panel / max(length, 1) >= 0.09 else 4
    offsets = [(length + gap) * k for k in range(max(rows, cols))]
    ax.set_xticks([o + i for o in offsets[:cols] for i in range(length)])
    ax.set_xticklabels(labels * cols, fontsize=font)
    ax.set_yticks([o + i for o in offsets[:rows] for i in range(length)])
    ax.set_yticklabels(labels * rows, fontsize=font)
    ax.tick_params(length=0, pad=1)
    for spine in ax.spines.values():
        spine.set_visible(False)
    return fig, ax, colorbar, gap


def _show(ax: Any, image: np.ndarray) -> Any:
    import matplotlib  # noqa: PLC0415 - optional extra
    cmap = matplotlib.colormaps["viridis"].with_extremes(bad="white")
    return ax.imshow(image, cmap=cmap, vmin=0, vmax=1, interpolation="nearest")


def evolution_figure(snapshots: List[Tuple[int, List[np.ndarray]]], tokens: List[str],
                     title: str) -> Any:
    """Rows: every head of every layer; columns: the snapshots, in step order."""
    rows = [(layer, head) for layer, w in enumerate(snapshots[0][1])
            for head in range(w.shape[0])]
    length = len(tokens)
    panel = min(1.6, 12.0 / len(snapshots), 18.0 / len(rows))
    fig, ax, colorbar, gap = _mosaic_axes(len(rows), len(snapshots), length, panel, tokens)
    blocks = [[weights[layer][head] for _, weights in snapshots] for layer, head in rows]
    image = _show(ax, mosaic(blocks, gap))
    for col, (step, _) in enumerate(snapshots):
        ax.text(col * (length + gap) + (length - 1) / 2, -1.0, f"step {step}", ha="center",
                va="bottom", fontsize=9)
    right = len(snapshots) * (length + gap) - gap
    for row, (layer, head) in enumerate(rows):
        ax.text(right, row * (length + gap) + (length - 1) / 2, f" layer {layer}\n head {head}",
                ha="left", va="center", fontsize=8)
    fig.colorbar(image, cax=colorbar, label="attention weight")
    start = "" if snapshots[0][0] == 0 else f" (resumed at step {snapshots[0][0]})"
    fig.suptitle(f"{title}{start}\n{plots.ATTENTION_CAPTION}", fontsize=9)
    return fig


def _write_gif(path: str, snapshots: List[Tuple[int, List[np.ndarray]]], tokens: List[str],
               title: str) -> bool:
    """An animated GIF, one frame per snapshot (rows: layers, columns: heads), if Pillow is
    there. matplotlib draws the labelled frame once; each frame then only pastes its maps
    (coloured as matplotlib colours them) into that picture and writes its step, which is
    many times faster than drawing every frame. Written atomically, like every file a run
    writes."""
    try:
        from PIL import Image, ImageDraw, ImageFont  # noqa: PLC0415 - optional
    except ImportError:
        return False
    import matplotlib  # noqa: PLC0415 - optional extra
    from matplotlib import font_manager  # noqa: PLC0415
    plt = plots._pyplot()
    layers, heads = len(snapshots[0][1]), snapshots[0][1][0].shape[0]
    length = len(tokens)
    fig, ax, colorbar, gap = _mosaic_axes(layers, heads, length, min(1.6, 9.0 / heads), tokens)

    def frame_image(weights: List[np.ndarray]) -> np.ndarray:
        return mosaic([list(weights[layer]) for layer in range(layers)], gap)

    image = _show(ax, frame_image(snapshots[0][1]))
    fig.colorbar(image, cax=colorbar, label="attention weight")
    for head in range(heads):
        ax.text(head * (length + gap) + (length - 1) / 2, -1.0, f"head {head}", ha="center",
                va="bottom", fontsize=8)
    for layer in range(layers):
        ax.text(heads * (length + gap) - gap, layer * (length + gap) + (length - 1) / 2,
                f" layer {layer}", ha="left", va="center", fontsize=8)
    fig.suptitle(f"{title}\nrow i: query at position i (predicts token i+1); columns: keys",
                 fontsize=8, y=0.97)
    fig.set_dpi(80)
    fig.canvas.draw()
    base = np.asarray(fig.canvas.buffer_rgba())[..., :3].copy()          # (H, W, 3)
    box = image.get_window_extent()
    left, top = int(round(box.x0)), base.shape[0] - int(round(box.y1))
    size = (int(round(box.x1)) - left, int(round(box.y1)) - int(round(box.y0)))
    plt.close(fig)
    cmap = matplotlib.colormaps["viridis"].with_extremes(bad="white")
    font = ImageFont.truetype(font_manager.findfont("DejaVu Sans"), 14)
    frames = []
    for step, weights in snapshots:
        colours = cmap(np.ma.masked_invalid(frame_image(weights)), bytes=True)[..., :3]
        frame = Image.fromarray(base)
        frame.paste(Image.fromarray(colours).resize(size, Image.NEAREST), (left, top))
        ImageDraw.Draw(frame).text((8, 4), f"step {step}", fill=(0, 0, 0), font=font)
        frames.append(frame)
    with atomic_write(path) as f:
        frames[0].save(f, format="GIF", save_all=True, append_images=frames[1:],
                       duration=1000, loop=0)
    return True
