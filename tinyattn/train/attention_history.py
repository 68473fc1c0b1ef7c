"""Watch attention learn: attention maps of one fixed held-out example at a few steps.

``AttentionHistory`` runs the model on the same example at step 0 and at up to about 150
candidate steps to the last (one forward of one 16-token sequence without gradients each, so
the training run barely notices). ``write`` then picks 7 of them as frames where the pattern
changes (``frames_by_change``: evenly spaced in the accumulated change of the maps, not in
steps; the pattern often forms within a few dozen steps, which evenly spaced steps would
show as one jump between two look-alike frames) and draws ``attention_evolution.png``: one
row per head (every layer), one column per frame, one colour scale. With Pillow installed
(matplotlib depends on it) it also writes ``attention_evolution.gif``, one frame per chosen
step with every head at once.

In every map, row i is the query at position i, which predicts token i+1, and the columns
are the keys it attends to (causal: only up to i; the masked future is grey); each row sums
to 1.
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

__all__ = ["AttentionHistory", "attention_maps", "snapshot_steps", "candidate_steps",
           "frames_by_change", "evolution_figure", "FRAMES"]

EVOLUTION_PNG, EVOLUTION_GIF = "attention_evolution.png", "attention_evolution.gif"
FRAMES = 7                  # columns of the PNG, frames of the GIF
_CANDIDATES = 150           # at most about this many snapshots to choose the frames from
_LABEL_PT = 7.0             # tick labels: 7 pt is 10.7 px at the PNG's 110 dpi
_GIF_DPI = 80
_GIF_LABEL_PT = 9.0         # 10 px at the GIF's 80 dpi


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


def candidate_steps(total: int, limit: int = _CANDIDATES) -> List[int]:
    """Where to take snapshots to choose frames from: every step up to ``limit`` steps, else
    about ``limit`` evenly spaced steps plus the log-spaced ones of ``snapshot_steps`` (the
    early steps, where attention changes fastest), always 0 and ``total``."""
    if total <= limit:
        return list(range(total + 1))
    even = np.linspace(0, total, limit).round().astype(int)
    return sorted({*map(int, even), *snapshot_steps(total, 40), total})


def frames_by_change(snapshots: List[Tuple[int, List[np.ndarray]]],
                     count: int = FRAMES) -> List[int]:
    """Indices of ``count`` snapshots (always the first and the last) evenly spaced in the
    accumulated change of the attention maps: change_k = mean |A_k - A_(k-1)| over every
    head and cell, and frame j is the first snapshot whose running total of change reaches
    j / (count - 1) of the whole. Where all the change happens at once, the frames around
    it are kept; remaining frames split the longest runs of steps left between two chosen
    ones."""
    n = len(snapshots)
    if n <= count:
        return list(range(n))
    change = [0.0] + [float(np.mean([np.abs(a - b).mean() for a, b in zip(now, before)]))
                      for (_, now), (_, before) in zip(snapshots[1:], snapshots[:-1])]
    running = np.cumsum(change)
    chosen = {0, n - 1}
    if running[-1] > 0:
        for j in range(1, count - 1):
            k = int(np.searchsorted(running, running[-1] * j / (count - 1)))
            chosen.update({max(k - 1, 0), k} if change[k] > running[-1] / count else {k})
    while len(chosen) > count:        # too many: drop the frame whose neighbours are closest
        order = sorted(chosen)
        inner = min(range(1, len(order) - 1),
                    key=lambda i: running[order[i + 1]] - running[order[i - 1]])
        chosen.discard(order[inner])
    while len(chosen) < count:        # too few: split the longest run of steps
        order = sorted(chosen)
        gaps = [(snapshots[b][0] - snapshots[a][0], a, b) for a, b in zip(order, order[1:])
                if b - a > 1]
        if not gaps:
            break
        _, a, b = max(gaps)
        chosen.add((a + b) // 2)
    return sorted(chosen)


class AttentionHistory:
    """Snapshots of one example's attention during training (see the module docstring).

    ``after_step(model, step)`` takes a snapshot when ``step`` is one of ``steps`` (the
    candidates); ``write`` draws ``count`` of them chosen by ``frames_by_change``. A resumed
    run has only the snapshots of its own session (the figure says from which step)."""

    def __init__(self, model: nn.GPT, ids: np.ndarray, tokens: List[str], device: str,
                 total_steps: int, start_step: int = 0, count: int = FRAMES,
                 scored_from: int = 0):
        self.ids, self.tokens, self.device = ids, tokens, device
        self.count, self.scored_from = count, scored_from
        self.steps = [s for s in candidate_steps(total_steps) if s >= start_step]
        self.snapshots: List[Tuple[int, List[np.ndarray]]] = []
        self.after_step(model, start_step)

    @classmethod
    def for_run(cls, model: nn.GPT, task: Any, inputs: np.ndarray, device: str,
                total_steps: int, start_step: int = 0) -> "AttentionHistory":
        """For a training run: a held-out example as the attention plots pick it
        (``readable_example``), at most 16 tokens, so that 7 columns of maps keep readable
        tick labels (the digit tasks' whole example; 16 characters of text for chars)."""
        ids = plots.readable_example(task, inputs, max_len=16)
        return cls(model, ids, task.decode(ids), device, total_steps, start_step,
                   scored_from=plots.scored_from(task))

    def frames(self) -> List[Tuple[int, List[np.ndarray]]]:
        """The snapshots drawn: ``count`` of them, where the attention changes."""
        return [self.snapshots[i] for i in frames_by_change(self.snapshots, self.count)]

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
        frames = self.frames()
        fig = evolution_figure(frames, self.tokens, title, self.scored_from)
        plots._save(fig, os.path.join(out, EVOLUTION_PNG), tight=False)
        plt.close(fig)
        written = [EVOLUTION_PNG]
        if _write_gif(os.path.join(out, EVOLUTION_GIF), frames, self.tokens, title,
                      self.scored_from):
            written.append(EVOLUTION_GIF)
        steps = ", ".join(str(s) for s, _ in frames)
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


def masked_cells(rows: int, cols: int, length: int, gap: int) -> np.ndarray:
    """The mosaic's masked (future) cells, True: key j > query i in every map."""
    future = np.triu(np.ones((length, length), dtype=bool), k=1)
    out = mosaic([[future] * cols] * rows, gap)
    return np.nan_to_num(out, nan=0.0).astype(bool)


def _mosaic_axes(rows: int, cols: int, length: int, panel: float, tokens: List[str],
                 label_pt: float, scored_from: int = 0):
    """A figure with one axes for a rows x cols mosaic of (length, length) maps, tick labels
    (the tokens, ``label_pt`` points) along the left and the bottom of every map, axis
    titles, and a colour bar. Rows before ``scored_from`` get grey labels (not scored)."""
    plt = plots._pyplot()
    gap = max(1, length // 5)
    width, height = 1.5 + cols * panel + 2.0, 0.9 + rows * panel + 1.4
    fig = plt.figure(figsize=(width, height))
    ax = fig.add_axes((1.3 / width, 0.9 / height, cols * panel / width, rows * panel / height))
    colorbar = fig.add_axes((1 - 0.75 / width, 0.9 / height, 0.15 / width,
                             rows * panel / height))
    labels = [plots.shown(t) for t in tokens]
    offsets = [(length + gap) * k for k in range(max(rows, cols))]
    ax.set_xticks([o + i for o in offsets[:cols] for i in range(length)])
    ax.set_xticklabels(labels * cols, fontsize=label_pt)
    ax.set_yticks([o + i for o in offsets[:rows] for i in range(length)])
    ax.set_yticklabels(labels * rows, fontsize=label_pt)
    if 0 < scored_from < length:
        for index, label in enumerate(ax.get_yticklabels()):
            if index % length < scored_from:
                label.set_color("0.55")
    ax.tick_params(length=0, pad=1)
    ax.set_xlabel("key (the token attended to)", fontsize=label_pt + 2)
    ax.set_ylabel("query at position i (predicts token i+1)", fontsize=label_pt + 2)
    for spine in ax.spines.values():
        spine.set_visible(False)
    return fig, ax, colorbar, gap


def _show(ax: Any, image: np.ndarray, masked: np.ndarray) -> Any:
    """The maps in viridis, the gaps white and the masked (future) cells grey."""
    import matplotlib  # noqa: PLC0415 - optional extra
    drawn = ax.imshow(image, cmap=matplotlib.colormaps["viridis"].with_extremes(bad="white"),
                      vmin=0, vmax=1, interpolation="nearest")
    grey = np.zeros(masked.shape + (4,))
    grey[masked] = matplotlib.colors.to_rgba(plots.MASKED_GREY)
    ax.imshow(grey, interpolation="nearest")
    return drawn


def evolution_figure(snapshots: List[Tuple[int, List[np.ndarray]]], tokens: List[str],
                     title: str, scored_from: int = 0) -> Any:
    """Rows: every head of every layer; columns: the snapshots, in step order."""
    rows = [(layer, head) for layer, w in enumerate(snapshots[0][1])
            for head in range(w.shape[0])]
    length = len(tokens)
    # Big enough for every tick label at _LABEL_PT (about 1.5 label heights per token).
    panel = max(1.5 * _LABEL_PT / 72 * length, 1.2)
    fig, ax, colorbar, gap = _mosaic_axes(len(rows), len(snapshots), length, panel, tokens,
                                          _LABEL_PT, scored_from)
    blocks = [[weights[layer][head] for _, weights in snapshots] for layer, head in rows]
    image = _show(ax, mosaic(blocks, gap), masked_cells(len(rows), len(snapshots), length, gap))
    for col, (step, _) in enumerate(snapshots):
        ax.text(col * (length + gap) + (length - 1) / 2, -1.0, f"step {step}", ha="center",
                va="bottom", fontsize=11)
    right = len(snapshots) * (length + gap) - gap
    for row, (layer, head) in enumerate(rows):
        ax.text(right, row * (length + gap) + (length - 1) / 2, f" layer {layer}\n head {head}",
                ha="left", va="center", fontsize=10)
    fig.colorbar(image, cax=colorbar, label="attention weight")
    start = "" if snapshots[0][0] == 0 else f" (resumed at step {snapshots[0][0]})"
    notes = [plots.ATTENTION_CAPTION, plots.MASK_CAPTION,
             "columns: the steps where the maps change most evenly (not evenly spaced steps)"]
    fig.suptitle("\n".join([title + start] + notes), fontsize=10)
    return fig


def _write_gif(path: str, snapshots: List[Tuple[int, List[np.ndarray]]], tokens: List[str],
               title: str, scored_from: int = 0) -> bool:
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
    panel = max(1.5 * _GIF_LABEL_PT / 72 * length, 1.2)
    fig, ax, colorbar, gap = _mosaic_axes(layers, heads, length, panel, tokens, _GIF_LABEL_PT,
                                          scored_from)
    masked = masked_cells(layers, heads, length, gap)

    def frame_image(weights: List[np.ndarray]) -> np.ndarray:
        return mosaic([list(weights[layer]) for layer in range(layers)], gap)

    image = _show(ax, frame_image(snapshots[0][1]), masked)
    fig.colorbar(image, cax=colorbar, label="attention weight")
    for head in range(heads):
        ax.text(head * (length + gap) + (length - 1) / 2, -1.0, f"head {head}", ha="center",
                va="bottom", fontsize=_GIF_LABEL_PT + 1)
    for layer in range(layers):
        ax.text(heads * (length + gap) - gap, layer * (length + gap) + (length - 1) / 2,
                f" layer {layer}", ha="left", va="center", fontsize=_GIF_LABEL_PT + 1)
    fig.suptitle(f"{title}\nrow i: query at position i (predicts token i+1); columns: keys; "
                 f"grey: masked (future)", fontsize=_GIF_LABEL_PT + 1, y=0.97)
    fig.set_dpi(_GIF_DPI)
    fig.canvas.draw()
    base = np.asarray(fig.canvas.buffer_rgba())[..., :3].copy()          # (H, W, 3)
    box = image.get_window_extent()
    left, top = int(round(box.x0)), base.shape[0] - int(round(box.y1))
    size = (int(round(box.x1)) - left, int(round(box.y1)) - int(round(box.y0)))
    plt.close(fig)
    cmap = matplotlib.colormaps["viridis"].with_extremes(bad="white")
    grey = (np.array(matplotlib.colors.to_rgb(plots.MASKED_GREY)) * 255).round()
    font = ImageFont.truetype(font_manager.findfont("DejaVu Sans"), 16)
    frames = []
    for step, weights in snapshots:
        colours = cmap(np.ma.masked_invalid(frame_image(weights)), bytes=True)[..., :3]
        colours[masked] = grey.astype(np.uint8)
        frame = Image.fromarray(base)
        frame.paste(Image.fromarray(colours).resize(size, Image.NEAREST), (left, top))
        ImageDraw.Draw(frame).text((8, 4), f"step {step}", fill=(0, 0, 0), font=font)
        frames.append(frame)
    with atomic_write(path) as f:
        frames[0].save(f, format="GIF", save_all=True, append_images=frames[1:],
                       duration=1000, loop=0)
    return True
