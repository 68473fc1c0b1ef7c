"""The op-table rows of ops/grids.py: each row names an op, the function under test, a
NumPy reference and its input cases (tinyattn/optable/__init__.py assembles the table)."""
from __future__ import annotations

from typing import List

import numpy as np

from .. import ops
from ..tensor import Tensor
from .cases import GRIDS, case_pair, normal_cases
from .spec import OpSpec, from_pairs


__all__ = ["ROWS"]


def _meshgrid_fn(a: Tensor, b: Tensor, c: Tensor) -> Tensor:
    grids = ops.meshgrid(a, b, c, indexing="xy")
    return grids[0] * 1.5 + grids[1] * grids[2]


def _meshgrid_ref(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
    ga, gb, gc = np.meshgrid(a, b, c, indexing="xy")
    return ga * 1.5 + gb * gc


ROWS: List[OpSpec] = from_pairs([
    ("meshgrid_xy", _meshgrid_fn, _meshgrid_ref,
     lambda rng: [case_pair("(3,) (2,) (4,)", rng.standard_normal(3), rng.standard_normal(2),
                     rng.standard_normal(4))], GRIDS),
    ("diag_embed", lambda v: ops.diag(v, -2), lambda v: np.diag(v, -2), normal_cases((4,)),
     GRIDS),
])
