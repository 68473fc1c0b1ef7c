"""The op-table rows of the third round of PyTorch ops (issue 12: makemore, backprop ninja,
nanoGPT): batch_norm, and the index ops of ops/scatter.py and ops/grids.py. Same row format
as optable_more.py; optable.py turns them into ``OpSpec`` rows of ``OP_TABLE``.
"""
from __future__ import annotations

from typing import List

import numpy as np

from . import functional as F
from . import ops
from .optable_more import Case, Row, _c, _label, _normal
from .tensor import Tensor, tensor

__all__ = ["ROUND3_ROWS"]

_BN_SECTION = "batch-norm"
_SCATTER = "scatter-scatter_add-and-index_add"
_GRIDS = "meshgrid-diag-and-unique"


def _bn_cases(rng: np.random.Generator) -> List[Case]:
    """x (N, C) and (N, C, L), with a weight and bias per channel (kept away from 0)."""
    cases = []
    for shape in ((5, 3), (3, 4, 6)):
        c = shape[1]
        cases.append(_c(_label(shape, (c,), (c,)), rng.standard_normal(shape) * 2 + 1,
                        rng.standard_normal(c) + 1.5, rng.standard_normal(c)))
    return cases


def _bn_ref(x: np.ndarray, w: np.ndarray, b: np.ndarray, mean=None, var=None) -> np.ndarray:
    shape = (1, x.shape[1]) + (1,) * (x.ndim - 2)
    axes = (0,) + tuple(range(2, x.ndim))
    mean = x.mean(axis=axes, keepdims=True) if mean is None else mean.reshape(shape)
    var = x.var(axis=axes, keepdims=True) if var is None else var.reshape(shape)
    return (x - mean) / np.sqrt(var + 1e-5) * w.reshape(shape) + b.reshape(shape)


def _running(channels: int):
    """Fixed running estimates for the eval-mode row: means around 0.5, variances >= 0.5."""
    return np.linspace(-0.5, 1.5, channels), np.linspace(0.5, 2.0, channels)


def _bn_eval(x: Tensor, w: Tensor, b: Tensor) -> Tensor:
    mean, var = (tensor(a.astype(x.dtype), device=x.device) for a in _running(x.shape[1]))
    return F.batch_norm(x, mean, var, w, b, training=False)


def _scatter_cases(rng: np.random.Generator) -> List[Case]:
    """self (3, 4), index (2, 4) along dim 0 with distinct rows per column (scatter refuses
    two writes into one element while recording), src (3, 5): larger than index."""
    index = np.array([[0, 2, 1, 0], [2, 0, 2, 1]])
    return [_c("(3, 4) dim 0 index (2, 4) src (3, 5)", rng.standard_normal((3, 4)), index,
               rng.standard_normal((3, 5)))]


def _scatter_add_cases(rng: np.random.Generator) -> List[Case]:
    """Repeated positions (row 0 of column 0 twice) add up."""
    index = np.array([[0, 2, 1, 0], [0, 0, 2, 0], [1, 2, 2, 2]])
    return [_c("(3, 4) dim 0 index (3, 4) with repeats src (4, 4)",
               rng.standard_normal((3, 4)), index, rng.standard_normal((4, 4)))]


def _along(x: np.ndarray, index: np.ndarray, src: np.ndarray, add: bool) -> np.ndarray:
    out = x.copy()
    cols = np.broadcast_to(np.arange(index.shape[1]), index.shape)
    region = src[:index.shape[0], :index.shape[1]]
    if add:
        np.add.at(out, (index, cols), region)
    else:
        out[index, cols] = region
    return out


def _index_add_ref(x: np.ndarray, index: np.ndarray, src: np.ndarray) -> np.ndarray:
    out = x.copy()
    np.add.at(out, (slice(None), index), -1.5 * src)
    return out


def _meshgrid_fn(a: Tensor, b: Tensor, c: Tensor) -> Tensor:
    grids = ops.meshgrid(a, b, c, indexing="xy")
    return grids[0] * 1.5 + grids[1] * grids[2]


def _meshgrid_ref(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
    ga, gb, gc = np.meshgrid(a, b, c, indexing="xy")
    return ga * 1.5 + gb * gc


ROUND3_ROWS: List[Row] = [
    ("batch_norm_train", lambda x, w, b: F.batch_norm(x, None, None, w, b, training=True),
     _bn_ref, _bn_cases, _BN_SECTION),
    ("batch_norm_train_no_affine", lambda x: F.batch_norm(x, None, None, training=True),
     lambda x: _bn_ref(x, np.ones(x.shape[1]), np.zeros(x.shape[1])),
     lambda rng: [_c("(6, 3)", rng.standard_normal((6, 3)))], _BN_SECTION),
    ("batch_norm_eval", _bn_eval,
     lambda x, w, b: _bn_ref(x, w, b, *_running(x.shape[1])), _bn_cases, _BN_SECTION),
    ("scatter", lambda x, i, s: ops.scatter(x, 0, i, s),
     lambda x, i, s: _along(x, i, s, add=False), _scatter_cases, _SCATTER),
    ("scatter_value", lambda x, i, s: ops.scatter(x, 0, i, value=2.5) * s[:3, :4],
     lambda x, i, s: _along(x, i, np.full(s.shape, 2.5), add=False) * s[:3, :4],
     _scatter_cases, _SCATTER),
    ("scatter_add", lambda x, i, s: ops.scatter_add(x, 0, i, s),
     lambda x, i, s: _along(x, i, s, add=True), _scatter_add_cases, _SCATTER),
    ("index_add", lambda x, i, s: ops.index_add(x, 1, i, s, alpha=-1.5), _index_add_ref,
     lambda rng: [_c("(3, 4) dim 1 index [3, 0, 3] source (3, 3)",
                     rng.standard_normal((3, 4)), np.array([3, 0, 3]),
                     rng.standard_normal((3, 3)))], _SCATTER),
    ("meshgrid_xy", _meshgrid_fn, _meshgrid_ref,
     lambda rng: [_c("(3,) (2,) (4,)", rng.standard_normal(3), rng.standard_normal(2),
                     rng.standard_normal(4))], _GRIDS),
    ("diag_embed", lambda v: ops.diag(v, -2), lambda v: np.diag(v, -2), _normal((4,)),
     _GRIDS),
    ("diag_of_matrix", lambda x: ops.diag(x, 1), lambda x: np.diag(x, 1), _normal((3, 5)),
     _GRIDS),
]
