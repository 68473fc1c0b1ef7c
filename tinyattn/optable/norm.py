"""The op-table rows of ops/norm.py: each row names an op, the function under test, a
NumPy reference and its input cases (tinyattn/optable/__init__.py assembles the table)."""
from __future__ import annotations

from typing import List

import numpy as np

from .. import functional as F
from .cases import op_case, shapes_text
from .spec import OpCase, OpSpec


__all__ = ["ROWS"]


def _layer_norm_ref(x, w, b, eps=1e-5):
    mu = x.mean(-1, keepdims=True)
    var = x.var(-1, keepdims=True)
    return (x - mu) / np.sqrt(var + eps) * w + b


def _rms_norm_ref(x, w=1.0, eps=1e-6, dims=1):
    axes = tuple(range(x.ndim - dims, x.ndim))
    return x / np.sqrt((x * x).mean(axis=axes, keepdims=True) + eps) * w


def _rms_norm_cases(rng: np.random.Generator) -> List[OpCase]:
    return [op_case(shapes_text((2, 3, 5), (5,)), rng.standard_normal((2, 3, 5)),
                  1 + 0.1 * rng.standard_normal(5)),
            op_case(shapes_text((4, 6), (6,)) + " mean far from 0",
                    3 + 2 * rng.standard_normal((4, 6)),
                  rng.standard_normal(6))]


def _layer_norm_cases(rng: np.random.Generator) -> List[OpCase]:
    return [op_case(shapes_text((2, 3, 5), (5,), (5,)), rng.standard_normal((2, 3, 5)),
                  1 + 0.1 * rng.standard_normal(5), rng.standard_normal(5)),
            op_case(shapes_text((4, 6), (6,), (6,)), 3 + 2 * rng.standard_normal((4, 6)),
                  rng.standard_normal(6), rng.standard_normal(6))]


ROWS: List[OpSpec] = [
    OpSpec("layer_norm", lambda x, w, b: F.layer_norm(x, x.shape[-1], w, b),
           _layer_norm_ref, _layer_norm_cases, "layer-norm"),
    OpSpec("layer_norm_no_affine", lambda x: F.layer_norm(x, x.shape[-1]),
           lambda x: _layer_norm_ref(x, 1.0, 0.0),
           lambda rng: [op_case("(2, 3, 5)", rng.standard_normal((2, 3, 5)))], "layer-norm"),
    OpSpec("rms_norm", lambda x, w: F.rms_norm(x, x.shape[-1], w, eps=1e-6), _rms_norm_ref,
           _rms_norm_cases, "rms-norm"),
    OpSpec("rms_norm_2d_no_affine", lambda x: F.rms_norm(x, x.shape[-2:], eps=1e-6),
           lambda x: _rms_norm_ref(x, dims=2),
           lambda rng: [op_case("(2, 3, 5) over (3, 5)", rng.standard_normal((2, 3, 5)))],
           "rms-norm"),
]
