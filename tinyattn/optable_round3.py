"""The op-table rows of the third round of PyTorch ops (issue 12: makemore, backprop ninja,
nanoGPT): batch_norm, and the index ops of ops/scatter.py and ops/grids.py. Same row format
as optable_more.py; optable.py turns them into ``OpSpec`` rows of ``OP_TABLE``.
"""
from __future__ import annotations

from typing import List

import numpy as np

from . import functional as F
from .optable_more import Case, Row, _c, _label
from .tensor import Tensor, tensor

__all__ = ["ROUND3_ROWS"]

_BN_SECTION = "batch-norm"


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


ROUND3_ROWS: List[Row] = [
    ("batch_norm_train", lambda x, w, b: F.batch_norm(x, None, None, w, b, training=True),
     _bn_ref, _bn_cases, _BN_SECTION),
    ("batch_norm_train_no_affine", lambda x: F.batch_norm(x, None, None, training=True),
     lambda x: _bn_ref(x, np.ones(x.shape[1]), np.zeros(x.shape[1])),
     lambda rng: [_c("(6, 3)", rng.standard_normal((6, 3)))], _BN_SECTION),
    ("batch_norm_eval", _bn_eval,
     lambda x, w, b: _bn_ref(x, w, b, *_running(x.shape[1])), _bn_cases, _BN_SECTION),
]
