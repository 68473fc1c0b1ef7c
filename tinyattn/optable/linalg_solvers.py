"""The op-table rows of ops/linalg_solvers.py: triangular solves (only A's triangle is read,
so the row uses tril(A) / triu(A): the Jacobian in the other entries is zero), least squares
and the pseudo-inverse of full-rank matrices (the pseudo-inverse is differentiable at constant
rank), the matrix exponential, cond and vander."""
from __future__ import annotations

from typing import List

import numpy as np
import scipy.linalg

from .. import ops
from .spec import Case, OpSpec, from_pairs

__all__ = ["ROWS"]

_SECTION = "solvers-pseudo-inverse-and-matrix-exponential"


def _triangular_cases(rng: np.random.Generator) -> List[Case]:
    a = rng.standard_normal((2, 3, 3)) + 3 * np.eye(3)
    return [("(2, 3, 3) (2, 3, 2)", (a, rng.standard_normal((2, 3, 2)))),
            ("(3, 3) (2, 3, 4)", (a[0], rng.standard_normal((2, 3, 4))))]


def _tri_ref(a, b, upper, left=True, unit=False):
    t = np.triu(a) if upper else np.tril(a)
    if unit:
        t = t.copy()
        t[..., range(a.shape[-1]), range(a.shape[-1])] = 1
    if left:
        return np.linalg.solve(t, b)
    return np.swapaxes(np.linalg.solve(np.swapaxes(t, -1, -2), np.swapaxes(b, -1, -2)), -1, -2)


def _right_cases(rng: np.random.Generator) -> List[Case]:
    return [("(3, 3) (2, 3)", (rng.standard_normal((3, 3)) + 3 * np.eye(3),
                               rng.standard_normal((2, 3))))]


def _full_rank_cases(rng: np.random.Generator) -> List[Case]:
    return [(str(s), (rng.standard_normal(s),)) for s in ((4, 3), (3, 5), (2, 3, 3))]


def _lstsq_cases(rng: np.random.Generator) -> List[Case]:
    return [("(5, 3) (5, 2)", (rng.standard_normal((5, 3)), rng.standard_normal((5, 2)))),
            ("(2, 3, 4) (2, 3, 1)", (rng.standard_normal((2, 3, 4)),
                                     rng.standard_normal((2, 3, 1))))]


def _square_cases(rng: np.random.Generator) -> List[Case]:
    return [(str(s), (0.5 * rng.standard_normal(s),)) for s in ((3, 3), (2, 4, 4))]


def _spd_cases(rng: np.random.Generator) -> List[Case]:
    q, _ = np.linalg.qr(rng.standard_normal((4, 4)))
    return [("(4, 4)", ((q * np.array([1.0, 2.0, -3.0, 4.0])) @ q.T,))]


def _vector_cases(rng: np.random.Generator) -> List[Case]:
    return [("(4,)", (rng.standard_normal(4),)), ("(2, 3)", (rng.standard_normal((2, 3)),))]


def _expm_ref(a: np.ndarray) -> np.ndarray:
    return scipy.linalg.expm(a)


def _cond_ref(a: np.ndarray, p) -> np.ndarray:
    return np.linalg.cond(a, p)


def _sym_t(a):
    return 0.5 * (a + a.mT)


ROWS: List[OpSpec] = from_pairs([
    ("solve_triangular_upper",
     lambda a, b: ops.solve_triangular(ops.triu(a), b, upper=True),
     lambda a, b: _tri_ref(a, b, True), _triangular_cases, _SECTION),
    ("solve_triangular_lower_unit",
     lambda a, b: ops.solve_triangular(ops.tril(a, -1), b, upper=False, unitriangular=True),
     lambda a, b: _tri_ref(np.tril(a, -1), b, False, unit=True), _triangular_cases, _SECTION),
    ("solve_triangular_right",
     lambda a, b: ops.solve_triangular(ops.tril(a), b, upper=False, left=False),
     lambda a, b: _tri_ref(a, b, False, left=False), _right_cases, _SECTION),
    ("triangular_solve_transpose",
     lambda a, b: ops.triangular_solve(b, ops.triu(a), transpose=True).solution,
     lambda a, b: np.linalg.solve(np.swapaxes(np.triu(a), -1, -2), b), _triangular_cases,
     _SECTION),
    ("triangular_solve_copy",
     lambda a, b: ops.triangular_solve(b, a).cloned_coefficient * 2,
     lambda a, b: 2 * np.broadcast_to(a, np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
                                      + a.shape[-2:]), _triangular_cases, _SECTION),
    ("pinv", ops.pinv, np.linalg.pinv, _full_rank_cases, _SECTION),
    ("pinv_hermitian", lambda a: ops.pinv(_sym_t(a), hermitian=True),
     lambda a: np.linalg.pinv(0.5 * (a + np.swapaxes(a, -1, -2))), _spd_cases, _SECTION),
    ("lstsq", lambda a, b: ops.lstsq(a, b).solution,
     lambda a, b: np.linalg.pinv(a) @ b, _lstsq_cases, _SECTION),
    ("lstsq_residuals", lambda a, b: ops.lstsq(a, b, driver="gelsd").residuals,
     lambda a, b: ((a @ np.linalg.lstsq(a, b, rcond=None)[0] - b) ** 2).sum(-2),
     lambda rng: _lstsq_cases(rng)[:1], _SECTION),
    ("matrix_exp", ops.matrix_exp, _expm_ref,
     lambda rng: _square_cases(rng)[:1], _SECTION),
    ("matrix_exp_batched", ops.matrix_exp,
     lambda a: np.stack([scipy.linalg.expm(m) for m in a]),
     lambda rng: _square_cases(rng)[1:], _SECTION),
    ("cond", ops.cond, lambda a: _cond_ref(a, None), _full_rank_cases, _SECTION),
    ("cond_fro", lambda a: ops.cond(a, "fro"), lambda a: _cond_ref(a, "fro"),
     lambda rng: [("(3, 3)", (rng.standard_normal((3, 3)) + 2 * np.eye(3),))], _SECTION),
    ("cond_inf", lambda a: ops.cond(a, float("inf")), lambda a: _cond_ref(a, np.inf),
     lambda rng: [("(3, 3)", (rng.standard_normal((3, 3)) + 2 * np.eye(3),))], _SECTION),
    ("vander", lambda x: ops.vander(x, N=4), lambda x: np.stack(
        [np.ones_like(x), x, x * x, x * x * x], -1), _vector_cases, _SECTION),
])
