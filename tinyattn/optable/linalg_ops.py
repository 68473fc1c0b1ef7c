"""The op-table rows of ops/linalg_ops.py (inv, det): well-conditioned square matrices (a
random matrix plus 3 I), single and batched."""
from __future__ import annotations

from typing import List

import numpy as np

from .. import ops
from .spec import Case, OpSpec, from_pairs

__all__ = ["ROWS"]

_SECTION = "inverse-and-determinant"


def _square_cases(rng: np.random.Generator) -> List[Case]:
    return [(str(s), (rng.standard_normal(s) + 3 * np.eye(s[-1]),))
            for s in ((3, 3), (2, 4, 4))]


def _solve_cases(rng: np.random.Generator) -> List[Case]:
    return [("(3, 3) (3, 2)", (rng.standard_normal((3, 3)) + 3 * np.eye(3),
                               rng.standard_normal((3, 2)))),
            ("(2, 3, 3) (3,)", (rng.standard_normal((2, 3, 3)) + 3 * np.eye(3),
                                rng.standard_normal((2, 3))))]


def _symmetric_cases(rng: np.random.Generator) -> List[Case]:
    """Symmetric matrices with well-separated eigenvalues (the gradient needs them
    distinct): Q diag(1, 2, 3, 4) Q^T for a random rotation Q."""
    q, _ = np.linalg.qr(rng.standard_normal((4, 4)))
    return [("(4, 4)", ((q * np.arange(1.0, 5.0)) @ q.T,))]


def _eigvalsh_ref(a: np.ndarray) -> np.ndarray:
    return np.linalg.eigvalsh(a)


ROWS: List[OpSpec] = from_pairs([
    ("inv", ops.inv, np.linalg.inv, _square_cases, _SECTION),
    ("det", ops.det, np.linalg.det, _square_cases, _SECTION),
    ("logdet", lambda a: ops.slogdet(a).logabsdet, lambda a: np.linalg.slogdet(a)[1],
     _square_cases, _SECTION),
    ("slogdet_sign", lambda a: ops.slogdet(a).sign * a.sum(),
     lambda a: np.linalg.slogdet(a)[0] * a.sum(), _square_cases, _SECTION),
    ("solve", ops.solve, lambda a, b: np.linalg.solve(a, b) if b.ndim == a.ndim
     else np.linalg.solve(a, b[..., None])[..., 0], _solve_cases, _SECTION),
    ("eigvalsh", lambda a: ops.eigvalsh(0.5 * (a + a.mT)), _eigvalsh_ref, _symmetric_cases,
     _SECTION),
    ("svdvals", ops.svdvals, lambda a: np.linalg.svd(a, compute_uv=False),
     _symmetric_cases, _SECTION),
])
