"""The op-table rows of ops/rope.py: each row names an op, the function under test, a
NumPy reference and its input cases (tinyattn/optable/__init__.py assembles the table)."""
from __future__ import annotations

from typing import List

import numpy as np

from .. import functional as F
from .cases import unary_cases
from .spec import OpSpec


__all__ = ["ROWS"]


def _rope_ref(x: np.ndarray, offset: int = 3, base: float = 10000.0) -> np.ndarray:
    """Pairs (x[2i], x[2i+1]) at position p rotated by p * base^(-2i/d), as a 2x2 matrix."""
    seq_len, dim = x.shape[-2], x.shape[-1]
    angles = np.arange(offset, offset + seq_len)[:, None] * base ** (-np.arange(0, dim, 2) / dim)
    cos, sin = np.cos(angles), np.sin(angles)                      # (S, d/2)
    even, odd = x[..., 0::2], x[..., 1::2]
    out = np.empty_like(x)
    out[..., 0::2] = even * cos - odd * sin
    out[..., 1::2] = even * sin + odd * cos
    return out


ROWS: List[OpSpec] = [
    OpSpec("rope", lambda x: F.rope(x, offset=3), _rope_ref,
           unary_cases(shapes=((2, 5, 4), (1, 2, 3, 6))), "nn.md#rope"),
]
