"""The op-table rows of ops/stats.py: each row names an op, the function under test, a
NumPy reference and its input cases (tinyattn/optable/__init__.py assembles the table)."""
from __future__ import annotations

from typing import List

import numpy as np
import scipy.special

from .. import functional as F, ops
from .cases import ACTIVATIONS, away_from_zero_cases, distinct_cases, normal_cases, normal_inputs
from .spec import OpSpec, from_pairs


__all__ = ["ROWS"]


def _cosine_ref(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return (a * b).sum(-1) / (np.linalg.norm(a, axis=-1) * np.linalg.norm(b, axis=-1))


_INF = float("inf")


ROWS: List[OpSpec] = from_pairs([
    ("normalize", lambda x: F.normalize(x, dim=-1),
     lambda x: x / np.linalg.norm(x, axis=-1, keepdims=True), normal_cases((3, 4)), ACTIVATIONS),
    ("normalize_p1", lambda x: F.normalize(x, p=1, dim=0),
     lambda x: x / np.abs(x).sum(axis=0, keepdims=True), away_from_zero_cases((3, 4)),
     ACTIVATIONS),
    ("cosine_similarity", lambda a, b: F.cosine_similarity(a, b, dim=-1), _cosine_ref,
     normal_inputs((3, 4), (3, 4)), ACTIVATIONS),
    ("var", lambda x: ops.var(x, dim=1), lambda x: x.var(axis=1, ddof=1),
     normal_cases((3, 4), (2, 3, 5)), "var-and-std"),
    ("var_correction0", lambda x: ops.var(x, (0, 2), keepdim=True, correction=0),
     lambda x: x.var(axis=(0, 2), keepdims=True), normal_cases((2, 3, 4)), "var-and-std"),
    ("std", ops.std, lambda x: np.asarray(x.std(ddof=1)), normal_cases((3, 4)), "var-and-std"),
    ("logsumexp", lambda x: ops.logsumexp(x, 1),
     lambda x: scipy.special.logsumexp(x, axis=1), normal_cases((3, 4), (2, 3, 5), scale=3.0),
     "logsumexp"),
    ("norm", ops.norm, lambda x: np.asarray(np.sqrt((x * x).sum())), normal_cases((3, 4)), "norm"),
    ("norm_p1_dim", lambda x: ops.norm(x, 1, dim=1), lambda x: np.abs(x).sum(axis=1),
     away_from_zero_cases((3, 4)), "norm"),
    ("norm_inf", lambda x: ops.norm(x, _INF, dim=-1), lambda x: np.abs(x).max(axis=-1),
     distinct_cases((3, 4)), "norm"),
    ("norm_p3", lambda x: ops.norm(x, 3, dim=0, keepdim=True),
     lambda x: (np.abs(x) ** 3).sum(axis=0, keepdims=True) ** (1 / 3), normal_cases((3, 4)),
     "norm"),
])
