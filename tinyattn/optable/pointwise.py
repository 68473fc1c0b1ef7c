"""The op-table rows of ops/pointwise.py: each row names an op, the function under test, a
NumPy reference and its input cases (tinyattn/optable/__init__.py assembles the table)."""
from __future__ import annotations

from typing import Callable, List, Tuple

import numpy as np
import scipy.special

from .. import functional as F, ops
from .cases import away_from_zero_cases, case_pair, normal_cases, shapes_label
from .spec import Case, OpSpec, from_pairs


__all__ = ["ROWS"]


def _positive(*shapes: Tuple[int, ...]) -> Callable[..., List[Case]]:
    return lambda rng: [case_pair(shapes_label(s), rng.random(s) * 3 + 0.2) for s in shapes]


# ------------------------------------------------------------------ references
def _softplus_ref(x: np.ndarray, beta: float = 2.0, threshold: float = 3.0) -> np.ndarray:
    return np.where(beta * x > threshold, x, np.log1p(np.exp(beta * x)) / beta)


ROWS: List[OpSpec] = from_pairs([
    ("log2", ops.log2, np.log2, _positive((3, 4)), "pointwise-functions"),
    ("log10", ops.log10, np.log10, _positive((3, 4)), "pointwise-functions"),
    ("sigmoid", ops.sigmoid, scipy.special.expit, normal_cases((3, 4), (2, 3, 5), scale=3.0),
     "pointwise-functions"),
    ("abs", ops.abs, np.abs, away_from_zero_cases((3, 4)), "pointwise-functions"),
    ("rsqrt", ops.rsqrt, lambda x: 1 / np.sqrt(x),
     lambda rng: [case_pair("(3, 4)", np.abs(rng.standard_normal((3, 4))) + 0.3)],
     "pointwise-functions"),
    ("leaky_relu", lambda x: F.leaky_relu(x, 0.1), lambda x: np.where(x > 0, x, 0.1 * x),
     away_from_zero_cases((3, 4)), "pointwise-functions"),
    ("silu", F.silu, lambda x: x * scipy.special.expit(x), normal_cases((3, 4), scale=3.0),
     "pointwise-functions"),
    ("softplus", lambda x: F.softplus(x, beta=2.0, threshold=3.0), _softplus_ref,
     normal_cases((4, 5), scale=2.0), "pointwise-functions"),
])
