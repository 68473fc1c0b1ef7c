"""The op-table rows of ops/inplace.py: each row names an op, the function under test, a
NumPy reference and its input cases (tinyattn/optable/__init__.py assembles the table)."""
from __future__ import annotations

from typing import Any, List

import numpy as np

from ..tensor import Tensor
from .cases import op_case
from .spec import OpSpec


__all__ = ["ROWS"]


def _setitem_index(x: Any) -> Any:
    return (slice(None), [0, 2]) if x.ndim == 2 else (0, slice(None), [1, 3])


def _setitem_op(x: Tensor, v: Tensor) -> Tensor:
    """Item assignment while recording (the SetItem op, ops/inplace.py), then a product so
    that the replaced elements and x both reach the output."""
    out = x * 1.0
    out[_setitem_index(x)] = v
    return out * x


def _setitem_ref(x: np.ndarray, v: np.ndarray) -> np.ndarray:
    out = x.copy()
    if x.ndim == 2:
        out[:, [0, 2]] = v
    else:
        out[0][:, [1, 3]] = v        # PyTorch's layout: the int first, then the list
    return out * x


ROWS: List[OpSpec] = [
    OpSpec("setitem", _setitem_op, _setitem_ref,
           lambda rng: [op_case("x (3, 4) [:, [0, 2]] = v (3, 1)", rng.standard_normal((3, 4)),
                              rng.standard_normal((3, 1))),
                        op_case("x (2, 3, 4) [0, :, [1, 3]] = v (3, 2)",
                              rng.standard_normal((2, 3, 4)), rng.standard_normal((3, 2)))],
           "in-place-ops-and-version-counters"),
]
