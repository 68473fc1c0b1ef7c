"""The op-table rows of ops/pad.py: each row names an op, the function under test, a
NumPy reference and its input cases (tinyattn/optable/__init__.py assembles the table)."""
from __future__ import annotations

from typing import List

import numpy as np

from .. import functional as F
from .cases import normal_cases
from .spec import OpSpec, Row, from_pairs


__all__ = ["ROWS"]


def _pad_ref(x: np.ndarray) -> np.ndarray:
    """F.pad(x, (1, 2, -1, 0), value=0.5): last dim +1 before, +2 after; the dim before it
    loses its first row."""
    widths = [(0, 0)] * (x.ndim - 2) + [(0, 0), (1, 2)]
    return np.pad(x[..., 1:, :], widths, constant_values=0.5)


def _pad_mode_ref(mode: str, pad: tuple):
    """NumPy's np.pad for (before, after) pairs listed from the last dim, as torch's."""
    numpy_mode = {"reflect": "reflect", "replicate": "edge", "circular": "wrap"}[mode]

    def reference(x: np.ndarray) -> np.ndarray:
        widths = [(0, 0)] * x.ndim
        for k in range(len(pad) // 2):
            widths[x.ndim - 1 - k] = (pad[2 * k], pad[2 * k + 1])
        return np.pad(x, widths, mode=numpy_mode)
    return reference


def _pad_row(mode: str, pad: tuple, shape: tuple) -> Row:
    return (f"pad_{mode}", lambda x: F.pad(x, pad, mode=mode), _pad_mode_ref(mode, pad),
            normal_cases(shape), "pad")


ROWS: List[OpSpec] = from_pairs([
    ("pad", lambda x: F.pad(x, (1, 2, -1, 0), value=0.5), _pad_ref,
     normal_cases((3, 4), (2, 3, 4)),
     "pad"),
    _pad_row("reflect", (2, 1, 1, 2), (2, 4, 5)),
    _pad_row("replicate", (3, 1), (2, 3)),
    _pad_row("circular", (1, 2, 2, 0), (2, 3, 4)),
])
