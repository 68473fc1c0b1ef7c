"""The attention command's picture: every head of every layer of a real model, one grid.

matplotlib is optional (``pip install "tinyattn[viz]"``); ``have_matplotlib()`` says whether
it is there, and the command says how to get it when it is not.
"""
from __future__ import annotations

from typing import List, Sequence

import numpy as np

from ..serialization import atomic_write

__all__ = ["have_matplotlib", "plot_attention_grid"]


def have_matplotlib() -> bool:
    try:
        import matplotlib  # noqa: F401, PLC0415
        return True
    except ImportError:
        return False


def plot_attention_grid(path: str, weights: List[np.ndarray], tokens: Sequence[str],
                        title: str) -> None:
    """weights[layer] is (h, S, S): row i of a head is where query token i attends. Rows are
    layers, columns heads; token labels on the outer axes; one colour bar for all."""
    import matplotlib  # noqa: PLC0415
    matplotlib.use("Agg")  # files only; works without a display
    import matplotlib.pyplot as plt  # noqa: PLC0415
    layers, heads, s = len(weights), weights[0].shape[0], len(tokens)
    cell = max(1.3, 0.12 * s)                                        # inches per head
    fig, axes = plt.subplots(layers, heads, figsize=(cell * heads + 1.5, cell * layers + 1.2),
                             squeeze=False, sharex=True, sharey=True)
    font = max(4.0, min(7.0, 180.0 / s))
    image = None
    for layer in range(layers):
        for head in range(heads):
            ax = axes[layer][head]
            image = ax.imshow(weights[layer][head], cmap="viridis", vmin=0.0, vmax=1.0,
                              interpolation="nearest")
            ax.set_xticks(range(s))
            ax.set_yticks(range(s))
            ax.tick_params(length=0, labelsize=font)
            if layer == 0:
                ax.set_title(f"head {head}", fontsize=8)
            if head == 0:
                ax.set_yticklabels(tokens)
                ax.set_ylabel(f"layer {layer}\nquery", fontsize=8)
            if layer == layers - 1:
                ax.set_xticklabels(tokens, rotation=90)
                ax.set_xlabel("key", fontsize=8)
    fig.suptitle(title, fontsize=11)
    fig.subplots_adjust(left=0.06, right=0.93, bottom=0.08, top=0.93, wspace=0.06, hspace=0.06)
    bar_axis = fig.add_axes([0.945, 0.25, 0.01, 0.5])
    fig.colorbar(image, cax=bar_axis, label="attention weight")
    with atomic_write(path) as f:   # an interrupted save never leaves half a picture
        fig.savefig(f, format="png", dpi=110)
    plt.close(fig)
