"""The op-table rows of ops/strided.py: as_strided with overlapping windows (a position read
twice: its gradient adds), with a storage offset into a slice's memory, and of an expanded
input (positions shared by x's elements: the gradient is spread over them)."""
from __future__ import annotations

from typing import List

import numpy as np

from .. import ops
from ..tensor import Tensor
from .spec import OpSpec, from_pairs

__all__ = ["ROWS"]

_SECTION = "as_strided"


def _windows(x: Tensor) -> Tensor:
    return ops.as_strided(x * 1.0, (3, 4), (2, 1))           # rows of 4, 2 apart: overlap


def _windows_ref(x: np.ndarray) -> np.ndarray:
    return np.stack([x[2 * i: 2 * i + 4] for i in range(3)])


def _offset_into_slice(x: Tensor) -> Tensor:
    part = (x * 1.0)[2:]                                        # storage offset 2
    return ops.as_strided(part, (2, 2), (1, 2), 3)              # positions 3 to 6 (torch
                                                                # drops the gradient of any
                                                                # position outside the slice)


def _offset_ref(x: np.ndarray) -> np.ndarray:
    return np.array([[x[3 + i + 2 * j] for j in range(2)] for i in range(2)])


def _expanded(x: Tensor) -> Tensor:
    wide = ops.expand(x * 1.0, (3, 4))                          # (4,) as (3, 4): stride 0
    return ops.as_strided(wide, (2, 2), (1, 2))


def _expanded_ref(x: np.ndarray) -> np.ndarray:
    return np.array([[x[0], x[2]], [x[1], x[3]]])


ROWS: List[OpSpec] = from_pairs([
    ("as_strided_windows", _windows, _windows_ref,
     lambda rng: [("x (8,) as (3, 4) stride (2, 1)", (rng.standard_normal(8),))], _SECTION),
    ("as_strided_offset", _offset_into_slice, _offset_ref,
     lambda rng: [("x (8,)[2:] as (2, 2) stride (1, 2) offset 3",
                   (rng.standard_normal(8),))], _SECTION),
    ("as_strided_expanded", _expanded, _expanded_ref,
     lambda rng: [("x (4,) expanded (3, 4), as (2, 2) stride (1, 2)",
                   (rng.standard_normal(4),))], _SECTION),
])
