"""The op-table rows of ops/linalg_norms.py (matrix norms): matrices with well-separated
singular values (the spectral norms' gradients need the largest and smallest distinct),
single and batched, and no ties in the row and column sums."""
from __future__ import annotations

from typing import List

import numpy as np

from .. import ops
from .spec import Case, OpSpec, from_pairs

__all__ = ["ROWS"]

_SECTION = "matrix-norms"


def _separated_cases(rng: np.random.Generator) -> List[Case]:
    """U diag(s) V^T with s = (4, 2.5, 1) (and a (2, 3, 4) batch of such), randomly rotated."""
    def matrix(m: int, n: int) -> np.ndarray:
        u, _ = np.linalg.qr(rng.standard_normal((m, m)))
        v, _ = np.linalg.qr(rng.standard_normal((n, n)))
        k = min(m, n)
        return (u[:, :k] * np.array([4.0, 2.5, 1.0][:k])) @ v[:, :k].T
    return [("(3, 4)", (matrix(3, 4),)),
            ("(2, 3, 3)", (np.stack([matrix(3, 3), matrix(3, 3)]),))]


def _reference(ord_):
    return lambda a: np.linalg.norm(a, ord=ord_, axis=(-2, -1))


ROWS: List[OpSpec] = from_pairs([
    ("matrix_norm_nuc", lambda a: ops.matrix_norm(a, "nuc"), _reference("nuc"),
     _separated_cases, _SECTION),
    ("matrix_norm_2", lambda a: ops.matrix_norm(a, 2), _reference(2), _separated_cases,
     _SECTION),
    ("matrix_norm_neg2", lambda a: ops.matrix_norm(a, -2), _reference(-2), _separated_cases,
     _SECTION),
    ("matrix_norm_1", lambda a: ops.matrix_norm(a, 1), _reference(1), _separated_cases,
     _SECTION),
    ("matrix_norm_inf", lambda a: ops.matrix_norm(a, float("inf")), _reference(np.inf),
     _separated_cases, _SECTION),
    ("linalg_norm_fro", lambda a: ops.linalg_norm(a, "fro", dim=(-2, -1)), _reference("fro"),
     _separated_cases, _SECTION),
])
