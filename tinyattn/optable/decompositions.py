"""The op-table rows of ops/decompositions.py (cholesky, qr, eigh, svd). Inputs avoid
degenerate spectra: positive-definite matrices G G^T + n I, symmetric matrices with
well-separated eigenvalues, random matrices (distinct singular values almost surely).
Functions that read one triangle of A (cholesky, eigh) are checked on (A + A^T) / 2, as
torch's gradcheck does; eigen- and singular vectors enter through sign-invariant functions
(|V|, U Vh, V f(w) V^T), since their signs are arbitrary."""
from __future__ import annotations

from typing import List

import numpy as np

from .. import ops
from .spec import Case, OpSpec, from_pairs

__all__ = ["ROWS"]

_SECTION = "matrix-decompositions"


def _pd_cases(rng: np.random.Generator) -> List[Case]:
    cases = []
    for shape in ((4, 4), (2, 3, 3)):
        g = rng.standard_normal(shape)
        cases.append((str(shape), (g @ np.swapaxes(g, -1, -2) + shape[-1] * np.eye(shape[-1]),)))
    return cases


def _symmetric_cases(rng: np.random.Generator) -> List[Case]:
    """Q diag(1, 2, 3, 4) Q^T for random rotations Q, one matrix and a batch of two."""
    def one() -> np.ndarray:
        q, _ = np.linalg.qr(rng.standard_normal((4, 4)))
        return (q * np.arange(1.0, 5.0)) @ q.T
    return [("(4, 4)", (one(),)), ("(2, 4, 4)", (np.stack([one(), one()]),))]


def _tall_wide_cases(rng: np.random.Generator) -> List[Case]:
    return [(str(s), (rng.standard_normal(s),)) for s in ((5, 3), (3, 3), (2, 3, 5))]


def _tall_square_cases(rng: np.random.Generator) -> List[Case]:
    return [(str(s), (rng.standard_normal(s),)) for s in ((5, 3), (2, 4, 4))]


def _sym(a):
    return 0.5 * (a + np.swapaxes(a, -1, -2))


def _sym_t(a):
    return 0.5 * (a + a.mT)


def _qr_ref(a: np.ndarray, part: int, mode: str = "reduced") -> np.ndarray:
    return np.linalg.qr(a, mode=mode)[part]


def _eigh_f(a):
    """V diag(exp(w)) V^T: the matrix exponential of a symmetric matrix, sign-free."""
    w, v = ops.eigh(_sym_t(a))
    return (v * w.exp()[..., None, :]) @ v.mT


def _eigh_f_ref(a: np.ndarray) -> np.ndarray:
    w, v = np.linalg.eigh(_sym(a))
    return (v * np.exp(w)[..., None, :]) @ np.swapaxes(v, -1, -2)


def _svd_uvh(a):
    u, s, vh = ops.svd(a, full_matrices=False)
    return u @ vh + u.abs().sum(-1, keepdim=True) * s[..., :1, None]


def _svd_uvh_ref(a: np.ndarray) -> np.ndarray:
    u, s, vh = np.linalg.svd(a, full_matrices=False)
    return u @ vh + np.abs(u).sum(-1, keepdims=True) * s[..., :1, None]


ROWS: List[OpSpec] = from_pairs([
    ("cholesky", lambda a: ops.cholesky(_sym_t(a)), lambda a: np.linalg.cholesky(_sym(a)),
     _pd_cases, _SECTION),
    ("cholesky_upper", lambda a: ops.cholesky(_sym_t(a), upper=True),
     lambda a: np.swapaxes(np.linalg.cholesky(_sym(a)), -1, -2), _pd_cases, _SECTION),
    ("cholesky_ex", lambda a: ops.cholesky_ex(_sym_t(a)).L,
     lambda a: np.linalg.cholesky(_sym(a)), _pd_cases, _SECTION),
    ("qr_q", lambda a: ops.qr(a).Q, lambda a: _qr_ref(a, 0), _tall_wide_cases, _SECTION),
    ("qr_r", lambda a: ops.qr(a).R, lambda a: _qr_ref(a, 1), _tall_wide_cases, _SECTION),
    ("qr_complete_wide", lambda a: ops.qr(a, mode="complete").Q * ops.qr(a).R.sum(),
     lambda a: _qr_ref(a, 0, "complete") * _qr_ref(a, 1).sum(),
     lambda rng: [("(3, 5)", (rng.standard_normal((3, 5)),))], _SECTION),
    ("eigh", _eigh_f, _eigh_f_ref, _symmetric_cases, _SECTION),
    ("eigh_vectors_abs", lambda a: ops.eigh(_sym_t(a), UPLO="U").eigenvectors.abs(),
     lambda a: np.abs(np.linalg.eigh(_sym(a))[1]), _symmetric_cases, _SECTION),
    ("svd_values", lambda a: ops.svd(a).S, lambda a: np.linalg.svd(a, compute_uv=False),
     _tall_wide_cases, _SECTION),
    ("svd_vectors", _svd_uvh, _svd_uvh_ref, _tall_wide_cases, _SECTION),
    ("svd_vh_abs", lambda a: ops.svd(a, full_matrices=False).Vh.abs(),
     lambda a: np.abs(np.linalg.svd(a, full_matrices=False)[2]), _tall_square_cases,
     _SECTION),
    ("svd_legacy_v", lambda a: ops.svd_older_name(a).V.abs(),
     lambda a: np.abs(np.swapaxes(np.linalg.svd(a, full_matrices=False)[2], -1, -2)),
     _tall_square_cases, _SECTION),
])
