"""The op-table rows of ops/batch_norm.py: each row names an op, the function under test, a
NumPy reference and its input cases (tinyattn/optable/__init__.py assembles the table)."""
from __future__ import annotations

from typing import List

import numpy as np

from .. import functional as F
from ..tensor import Tensor, tensor
from .cases import case_pair, shapes_label
from .spec import Case, OpSpec, from_pairs


__all__ = ["ROWS"]


_BN_SECTION = "batch-norm"


def _bn_cases(rng: np.random.Generator) -> List[Case]:
    """x (N, C) and (N, C, L), with a weight and bias per channel (kept away from 0)."""
    cases = []
    for shape in ((5, 3), (3, 4, 6)):
        c = shape[1]
        cases.append(case_pair(shapes_label(shape, (c,), (c,)), rng.standard_normal(shape) * 2 + 1,
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


ROWS: List[OpSpec] = from_pairs([
    ("batch_norm_train", lambda x, w, b: F.batch_norm(x, None, None, w, b, training=True),
     _bn_ref, _bn_cases, _BN_SECTION),
    ("batch_norm_train_no_affine", lambda x: F.batch_norm(x, None, None, training=True),
     lambda x: _bn_ref(x, np.ones(x.shape[1]), np.zeros(x.shape[1])),
     lambda rng: [case_pair("(6, 3)", rng.standard_normal((6, 3)))], _BN_SECTION),
    ("batch_norm_eval", _bn_eval,
     lambda x, w, b: _bn_ref(x, w, b, *_running(x.shape[1])), _bn_cases, _BN_SECTION),
])
