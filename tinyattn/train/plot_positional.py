"""positional.png: what each positional encoding gives the model, in two panels.

* learned / sinusoidal (a vector added to each position's embedding): the (positions,
  d_model) table, and the cosine similarity of every pair of positions' vectors (what the
  model can tell apart: nearby positions alike, far ones different).
* rope (q and k rotated by an angle m * theta_i per feature pair): cos of the angle, and the
  score q . k of two identical vectors m positions apart, which depends on the distance m
  only (that is what "relative" means) and decays, with ripples, as m grows.
* alibi (a bias -slope_h * distance added to head h's scores): the bias per head and
  distance, and the same as one line per head (steep heads look only nearby).
* none: there is nothing to draw; the figure says what that means.

A cosine similarity of positions means nothing for RoPE and ALiBi, which add nothing to the
embeddings, so it is only drawn for the additive encodings.
"""
from __future__ import annotations

from typing import Any, List

import numpy as np

from .. import nn
from .plots import _pyplot, _save

__all__ = ["plot_positional_encoding", "positional_figure", "rope_relative_scores", "LOOK_FOR"]

_TITLES = {"learned": "learned positional embedding",
           "sinusoidal": "sinusoidal positional encoding",
           "rope": "RoPE: rotary position embedding (q and k rotated by position)",
           "alibi": "ALiBi: a distance bias added to each head's attention scores",
           "t5": "T5 relative position bias: a learned score bias per head and distance bucket",
           "none": "no positional encoding"}

# One line per encoding under the title: what the picture shows that matters.
LOOK_FOR = {
    "learned": "look for: on the right, the bright diagonal is each position's similarity "
               "with itself (always 1); a learned table starts random, so any band around "
               "it was learned",
    "sinusoidal": "look for: on the left, waves, fast in the first features and slow in the "
                  "last; on the right, the diagonal is each position with itself (1), and "
                  "similarity falls with distance alike everywhere",
    "rope": "look for: on the left, first feature pairs turning fast, last ones slowly; on "
            "the right, a score that depends only on the distance m and shrinks as it grows",
    "alibi": "look for: every head's bias falls in a straight line with distance; the "
             "steeper the line, the nearer the keys that head can attend to",
    "t5": "look for: each head's learned bias against distance: flat where it ignores "
          "position, falling where it prefers near keys; steps at the bucket edges",
    "none": "look for: nothing to draw; compare the held-out accuracy with a learned run",
}


def rope_relative_scores(head_dim: int, base: float, distances: np.ndarray) -> np.ndarray:
    """q . k / (q . q) for identical all-ones q and k that RoPE rotates m positions apart:
    (1 / (d_k / 2)) * sum_i cos(m * theta_i), theta_i = base^(-2i / d_k)."""
    inv_freq = base ** (-np.arange(0, head_dim, 2) / head_dim)          # (d_k / 2,)
    return np.cos(np.outer(distances, inv_freq)).mean(axis=1)


def _integer_ticks(*axes: Any) -> None:
    from matplotlib.ticker import MaxNLocator  # noqa: PLC0415 - optional extra
    for axis in axes:
        axis.set_major_locator(MaxNLocator(integer=True))


def _additive(fig: Any, table: np.ndarray) -> None:
    left, right = fig.subplots(1, 2, gridspec_kw={"width_ratios": [3, 2]})
    limit = float(np.abs(table).max()) or 1.0
    image = left.imshow(table, aspect="auto", cmap="RdBu", vmin=-limit, vmax=limit,
                        interpolation="nearest")
    left.set_xlabel("feature (0 .. d_model - 1)")
    left.set_ylabel("position")
    left.set_title("the vector added at each position", fontsize=10)
    fig.colorbar(image, ax=left)
    unit = table / np.maximum(np.linalg.norm(table, axis=1, keepdims=True), 1e-12)
    similarity = right.imshow(unit @ unit.T, cmap="viridis", vmin=-1, vmax=1,
                              interpolation="nearest")
    right.set_xlabel("position")
    right.set_ylabel("position")
    right.set_title("cosine similarity of two positions", fontsize=10)
    fig.colorbar(similarity, ax=right)
    _integer_ticks(left.yaxis, left.xaxis, right.xaxis, right.yaxis)


def _rope(fig: Any, config: Any, length: int) -> None:
    head_dim = config.d_model // config.n_head
    left, right = fig.subplots(1, 2, gridspec_kw={"width_ratios": [3, 2]})
    positions = np.arange(length)
    inv_freq = config.rope_base ** (-np.arange(0, head_dim, 2) / head_dim)
    image = left.imshow(np.cos(np.outer(positions, inv_freq)), aspect="auto", cmap="RdBu",
                        vmin=-1, vmax=1, interpolation="nearest")
    left.set_xlabel(f"feature pair i (angle per position: {config.rope_base:g}^(-2i/{head_dim}))")
    left.set_ylabel("position m")
    left.set_title("cos of the rotation angle m * theta_i", fontsize=10)
    fig.colorbar(image, ax=left)
    right.plot(positions, rope_relative_scores(head_dim, config.rope_base, positions), "o-",
               markersize=3)
    right.axhline(0, color="0.6", linewidth=0.8)
    right.set_xlabel("distance m between query and key")
    right.set_ylabel("q . k / q . q")
    right.set_title("score of two identical vectors m apart\n(the same at every position)",
                    fontsize=10)
    right.grid(alpha=0.3)
    _integer_ticks(left.xaxis, left.yaxis, right.xaxis)


def _alibi(fig: Any, config: Any, length: int) -> None:
    slopes: List[float] = list(nn.alibi_slopes(config.n_head))
    distance = np.arange(length)
    bias = -np.outer(distance, slopes)                                   # (distance, h)
    left, right = fig.subplots(1, 2, gridspec_kw={"width_ratios": [2, 3]})
    image = left.imshow(bias, aspect="auto", cmap="viridis", interpolation="nearest")
    left.set_xlabel("head")
    left.set_ylabel("distance (query position - key position)")
    left.set_title("bias added to the score", fontsize=10)
    fig.colorbar(image, ax=left)
    for head, slope in enumerate(slopes):
        right.plot(distance, bias[:, head], label=f"head {head}: slope {slope:.3g}")
    right.set_xlabel("distance (query position - key position)")
    right.set_ylabel("bias added to the score")
    right.set_title("each head's bias: steep heads attend nearby", fontsize=10)
    right.legend(fontsize=8)
    right.grid(alpha=0.3)
    _integer_ticks(left.xaxis, left.yaxis, right.xaxis)


def _t5(fig: Any, model: nn.GPT, length: int) -> None:
    bias = model.rel_bias(length, length).numpy()[0, :, -1, ::-1]       # (h, distance)
    ax = fig.subplots()
    for head in range(bias.shape[0]):
        ax.plot(np.arange(length), bias[head], label=f"head {head}")
    ax.set_xlabel("distance (query position - key position)")
    ax.set_ylabel("learned bias added to the score")
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3)


def _none(fig: Any) -> None:
    ax = fig.subplots()
    ax.set_axis_off()
    ax.text(0.5, 0.5, "pos_encoding='none': the model is told nothing about positions.\n"
            "Causal attention still lets it infer roughly how far into the sequence it is, "
            "but not which token sits where:\nshuffling the earlier tokens leaves one "
            "attention layer's output at the last position unchanged.\nCompare the held-out "
            "accuracy with --pos-encoding learned.", ha="center", va="center", fontsize=10)


def positional_figure(model: nn.GPT, length: int) -> Any:
    """The figure for ``model.config.pos_encoding`` over ``length`` positions."""
    plt = _pyplot()
    config, kind = model.config, model.config.pos_encoding
    fig = plt.figure(figsize=(11, 4.2 if kind != "none" else 2.0), layout="constrained")
    if kind == "learned":
        _additive(fig, model.pos_emb.weight.numpy()[:length])
    elif kind == "sinusoidal":
        _additive(fig, model.pos_emb.pe.numpy()[:length])
    elif kind == "rope":
        _rope(fig, config, length)
    elif kind == "alibi":
        _alibi(fig, config, length)
    elif kind == "t5":
        _t5(fig, model, length)
    else:
        _none(fig)
    fig.suptitle(f"{_TITLES[kind]} ({length} positions)\n{LOOK_FOR[kind]}")
    return fig


def plot_positional_encoding(path: str, model: nn.GPT, length: int) -> None:
    plt = _pyplot()
    fig = positional_figure(model, length)
    _save(fig, path)
    plt.close(fig)
