"""The op-table rows of ops/index_writes.py: each row names an op, the function under test, a
NumPy reference and its input cases (tinyattn/optable/__init__.py assembles the table)."""
from __future__ import annotations

from typing import List

import numpy as np

from .. import ops
from ..tensor import as_tensor
from .cases import case_pair
from .spec import Case, OpSpec, from_pairs

__all__ = ["ROWS", "REGIONS"]

REGIONS = "scatter-into-a-region-and-masked-select"


def _pair(*shapes):
    def make(rng: np.random.Generator) -> List[Case]:
        arrays = [rng.standard_normal(s) for s in shapes]
        return [case_pair(" ".join(str(s) for s in shapes), *arrays)]
    return make


def _select_ref(x, src):
    out = x.copy()
    out[:, 1] = src
    return out


def _slice_ref(x, src):
    out = x.copy()
    out[:, 1:5:2] = src
    return out


def _diagonal_ref(x, src):
    out = x.copy()
    i = np.arange(3)
    out[i, :, i + 1] = src.T
    return out


def _diag_embed_ref(v):
    out = np.zeros((2, 4, 4))
    i = np.arange(3)
    out[:, i + 1, i] = v
    return out


def _index_copy_cases(rng: np.random.Generator) -> List[Case]:
    return [case_pair("(4, 3) index (2,) source (4, 2)", rng.standard_normal((4, 3)),
                      np.array([2, 0]), rng.standard_normal((4, 2)))]


def _index_copy_ref(x, index, src):
    out = x.copy()
    out[:, index] = src
    return out


def _index_put_cases(rng: np.random.Generator) -> List[Case]:
    return [case_pair("(5, 3) rows [0, 3, 0] values (3,) (repeated row, broadcast)",
                      rng.standard_normal((5, 3)), np.array([0, 3, 0]),
                      rng.standard_normal(3))]


def _index_put_ref(x, rows, values):
    out = x.copy()
    np.add.at(out, rows, values)
    return out


def _masked_scatter_cases(rng: np.random.Generator) -> List[Case]:
    mask = rng.random((3, 4)) < 0.5
    return [case_pair("(3, 4) mask (3, 4) source (12,)", rng.standard_normal((3, 4)), mask,
                      rng.standard_normal(12))]


def _masked_scatter_ref(x, mask, src):
    out = x.copy()
    out[mask] = src[:mask.sum()]
    return out


def _block_diag_ref(a, b, c):
    out = np.zeros((1 + 2 + 1, 3 + 2 + 1))
    out[0, :3] = a
    out[1:3, 3:5] = b
    out[3, 5] = c
    return out


ROWS: List[OpSpec] = from_pairs([
    ("block_diag", ops.block_diag, _block_diag_ref, _pair((3,), (2, 2), ()), REGIONS),
    ("select_scatter", lambda x, s: ops.select_scatter(x, s, 1, 1), _select_ref,
     _pair((3, 4), (3,)), REGIONS),
    ("slice_scatter", lambda x, s: ops.slice_scatter(x, s, 1, 1, 5, 2), _slice_ref,
     _pair((3, 6), (3, 2)), REGIONS),
    ("diagonal_scatter", lambda x, s: ops.diagonal_scatter(x, s, 1, 0, 2), _diagonal_ref,
     _pair((3, 2, 4), (2, 3)), REGIONS),
    ("diag_embed", lambda v: ops.diag_embed(v, -1), _diag_embed_ref, _pair((2, 3)), REGIONS),
    ("index_copy", lambda x, i, s: ops.index_copy(x, 1, i, s), _index_copy_ref,
     _index_copy_cases, REGIONS),
    ("index_put_accumulate", lambda x, i, v: ops.index_put(x, (i,), v, accumulate=True),
     _index_put_ref, _index_put_cases, REGIONS),
    ("masked_scatter", lambda x, m, s: ops.masked_scatter(x, as_tensor(m), s),
     _masked_scatter_ref, _masked_scatter_cases, REGIONS),
])
