"""The op-table rows of the second round of PyTorch ops (issue 12): rounding.py, rearrange.py,
products.py, activations.py and robust_loss.py. Same row format as optable_more.py, whose
case helpers these rows share; optable.py turns them into ``OpSpec`` rows of ``OP_TABLE``.

The step functions (sign, floor, ceil, round, trunc) have zero gradient; their cases keep
every element away from the jumps, where finite differences would see the step. Kinks
(hardtanh's bounds, smooth_l1's |d| = beta) are avoided the same way and tested against
PyTorch in tests/test_ops_round2.py.
"""
from __future__ import annotations

from typing import Callable, List, Tuple

import numpy as np
import scipy.special

from . import functional as F
from . import ops
from .optable_more import Case, Row, _away_from_zero, _c, _label, _normal
from .tensor import Tensor

__all__ = ["EXTRA_ROWS"]

_POINTWISE = "rounding-and-other-pointwise-ops"
_INDEX = "roll-diagonal-and-other-index-ops"
_PRODUCTS = "outer-dot-mv-addmm-and-lerp"
_ACTIVATIONS = "more-activations-normalize-and-cosine-similarity"
_LOSSES = "smooth-l1-huber-and-kl-divergence"
_DIVISION = "remainder-fmod-and-floor-divide"


def _off_grid(*shapes: Tuple[int, ...]) -> Callable[..., List[Case]]:
    """Values a quarter away from every integer and half-integer (the jumps of floor, ceil,
    round and trunc)."""
    return lambda rng: [_c(_label(s), rng.integers(-8, 8, s) / 2 + 0.25) for s in shapes]


def _normals(*shapes: Tuple[int, ...]) -> Callable[..., List[Case]]:
    """One case with several inputs, one standard normal array per shape."""
    return lambda rng: [_c(_label(*shapes), *(rng.standard_normal(s) for s in shapes))]


def _cumprod_cases(rng: np.random.Generator) -> List[Case]:
    x = rng.standard_normal((3, 5))
    zeros = rng.standard_normal((3, 5))
    zeros[0, 1] = 0.0                        # one zero: later outputs vanish, dx does not
    zeros[1, [0, 3]] = 0.0                   # two zeros in a row
    zeros[2, 4] = 0.0                        # a zero in last place
    return [_c("(3, 5)", x), _c("(3, 5) with zeros", zeros)]


def _index_select_cases(rng: np.random.Generator) -> List[Case]:
    return [_c("(4, 3) index [2, 0, 2]", rng.standard_normal((4, 3)), np.array([2, 0, 2]))]


def _kl_cases(rng: np.random.Generator) -> List[Case]:
    logp = scipy.special.log_softmax(rng.standard_normal((4, 5)), axis=1)
    q = scipy.special.softmax(rng.standard_normal((4, 5)), axis=1)
    return [_c("(4, 5) log-probs, probs", logp, q)]


def _kl_ref(x: np.ndarray, t: np.ndarray) -> np.ndarray:
    return np.asarray((t * (np.log(t) - x)).sum() / x.shape[0])


def _kl_log_ref(x: np.ndarray, t: np.ndarray) -> np.ndarray:
    return np.asarray((np.exp(t) * (t - x)).sum())


def _smooth_l1_cases(rng: np.random.Generator) -> List[Case]:
    x = rng.standard_normal((3, 4)) * 2
    gap = rng.choice([-1.0, 1.0], (3, 4)) * rng.choice([0.3, 0.6, 1.5, 2.5], (3, 4))
    return [_c("(3, 4) (3, 4)", x, x + gap)]         # |d| never at beta = 0.8 or delta = 2


def _smooth_l1_ref(x: np.ndarray, y: np.ndarray, beta: float = 0.8) -> np.ndarray:
    d = np.abs(x - y)
    return np.asarray(np.where(d < beta, 0.5 * d * d / beta, d - 0.5 * beta).mean())


def _huber_ref(x: np.ndarray, y: np.ndarray, delta: float = 2.0) -> np.ndarray:
    d = np.abs(x - y)
    return np.asarray(np.where(d < delta, 0.5 * d * d, delta * (d - 0.5 * delta)).sum())


def _cosine_ref(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return (a * b).sum(-1) / (np.linalg.norm(a, axis=-1) * np.linalg.norm(b, axis=-1))


def _hardtanh_cases(rng: np.random.Generator) -> List[Case]:
    x = rng.standard_normal((4, 5)) * 1.5
    return [_c("(4, 5)", np.where(np.abs(np.abs(x) - 0.8) < 0.05, x + 0.2, x))]


def _whole_division_cases(rng: np.random.Generator) -> List[Case]:
    """a = b q with q a quarter or more away from every integer (the jumps of floor and
    trunc), b away from 0, both signs; one case broadcasts b over rows."""
    cases = []
    for a_shape, b_shape in (((3, 4), (3, 4)), ((3, 4), (4,))):
        b = rng.choice([-1.0, 1.0], b_shape) * (0.5 + rng.random(b_shape))
        q = rng.integers(-4, 4, a_shape) + 0.25 + 0.5 * rng.random(a_shape)
        cases.append(_c(_label(a_shape, b_shape), b * q, b))
    return cases


def _positive(*shapes: Tuple[int, ...]) -> Callable[..., List[Case]]:
    return lambda rng: [_c(_label(s), rng.random(s) * 3 + 0.2) for s in shapes]


def _index_select_fn(x: Tensor, index: Tensor) -> Tensor:
    return ops.index_select(x, 0, index)


EXTRA_ROWS: List[Row] = [
    ("log2", ops.log2, np.log2, _positive((3, 4)), "more-pointwise-functions"),
    ("log10", ops.log10, np.log10, _positive((3, 4)), "more-pointwise-functions"),
    ("remainder", ops.remainder, np.remainder, _whole_division_cases, _DIVISION),
    ("fmod", ops.fmod, np.fmod, _whole_division_cases, _DIVISION),
    ("floor_divide", ops.floor_divide, np.floor_divide, _whole_division_cases, _DIVISION),
    ("square", ops.square, np.square, _normal((3, 4), (2, 3, 5)), _POINTWISE),
    ("reciprocal", ops.reciprocal, np.reciprocal, _away_from_zero((3, 4)), _POINTWISE),
    ("log1p", ops.log1p, np.log1p,
     lambda rng: [_c("(3, 4)", rng.random((3, 4)) * 3 - 0.7)], _POINTWISE),
    ("expm1", ops.expm1, np.expm1, _normal((3, 4), (5,)), _POINTWISE),
    ("nan_to_num", lambda x: ops.nan_to_num(x, nan=1.5), lambda x: np.nan_to_num(x, nan=1.5),
     _normal((3, 4)), _POINTWISE),
    ("sign", ops.sign, np.sign, _away_from_zero((3, 4)), _POINTWISE),
    ("floor", ops.floor, np.floor, _off_grid((3, 4)), _POINTWISE),
    ("ceil", ops.ceil, np.ceil, _off_grid((3, 4)), _POINTWISE),
    ("round", ops.round, np.round, _off_grid((3, 4)), _POINTWISE),
    ("round_decimals", lambda x: ops.round(x, decimals=1), lambda x: np.round(x, 1),
     lambda rng: [_c("(3, 4)", np.round(rng.standard_normal((3, 4)), 1) + 0.02)], _POINTWISE),
    ("trunc", ops.trunc, np.trunc, _off_grid((3, 4)), _POINTWISE),
    ("roll", lambda x: ops.roll(x, (1, -2), (0, 2)), lambda x: np.roll(x, (1, -2), (0, 2)),
     _normal((2, 3, 4)), _INDEX),
    ("roll_flat", lambda x: ops.roll(x, 5), lambda x: np.roll(x, 5), _normal((3, 4)), _INDEX),
    ("diagonal", lambda x: ops.diagonal(x, 1, 2, 0),
     lambda x: np.diagonal(x, 1, 2, 0), _normal((3, 2, 4)), _INDEX),
    ("diagonal_below", lambda x: ops.diagonal(x, -1), lambda x: np.diagonal(x, -1),
     _normal((4, 3)), _INDEX),
    ("trace", ops.trace, lambda x: np.asarray(np.trace(x)), _normal((3, 4)), _INDEX),
    ("index_select", _index_select_fn, lambda x, i: x[i], _index_select_cases, _INDEX),
    ("movedim", lambda x: ops.movedim(x, (0, 1), (2, 0)),
     lambda x: np.moveaxis(x, (0, 1), (2, 0)), _normal((2, 3, 4)), _INDEX),
    ("cumprod", lambda x: ops.cumprod(x, 1), lambda x: np.cumprod(x, axis=1), _cumprod_cases,
     "cumprod"),
    ("cumprod_dim0", lambda x: ops.cumprod(x, 0), lambda x: np.cumprod(x, axis=0),
     _normal((4, 2, 3)), "cumprod"),
    ("outer", ops.outer, np.outer, _normals((3,), (4,)), _PRODUCTS),
    ("dot", ops.dot, lambda a, b: np.asarray(a @ b), _normals((5,), (5,)), _PRODUCTS),
    ("mv", ops.mv, np.matmul, _normals((3, 4), (4,)), _PRODUCTS),
    ("addmm", lambda c, a, b: ops.addmm(c, a, b, beta=0.5, alpha=-2.0),
     lambda c, a, b: 0.5 * c - 2.0 * a @ b, _normals((4,), (3, 2), (2, 4)), _PRODUCTS),
    ("lerp", ops.lerp, lambda a, b, w: a + w * (b - a), _normals((3, 4), (3, 4), (4,)),
     _PRODUCTS),
    ("lerp_scalar", lambda a, b: ops.lerp(a, b, 0.75), lambda a, b: a + 0.75 * (b - a),
     _normals((3, 4), (3, 4)), _PRODUCTS),
    ("logsigmoid", F.logsigmoid, lambda x: -np.logaddexp(0, -x), _normal((3, 4), scale=4.0),
     _ACTIVATIONS),
    ("elu", lambda x: F.elu(x, alpha=1.5), lambda x: np.where(x > 0, x, 1.5 * np.expm1(x)),
     _away_from_zero((3, 4)), _ACTIVATIONS),
    ("hardtanh", lambda x: F.hardtanh(x, -0.8, 0.8), lambda x: np.clip(x, -0.8, 0.8),
     _hardtanh_cases, _ACTIVATIONS),
    ("softsign", F.softsign, lambda x: x / (1 + np.abs(x)), _away_from_zero((3, 4)),
     _ACTIVATIONS),
    ("normalize", lambda x: F.normalize(x, dim=-1),
     lambda x: x / np.linalg.norm(x, axis=-1, keepdims=True), _normal((3, 4)), _ACTIVATIONS),
    ("normalize_p1", lambda x: F.normalize(x, p=1, dim=0),
     lambda x: x / np.abs(x).sum(axis=0, keepdims=True), _away_from_zero((3, 4)),
     _ACTIVATIONS),
    ("cosine_similarity", lambda a, b: F.cosine_similarity(a, b, dim=-1), _cosine_ref,
     _normals((3, 4), (3, 4)), _ACTIVATIONS),
    ("smooth_l1_loss", lambda x, y: F.smooth_l1_loss(x, y, beta=0.8), _smooth_l1_ref,
     _smooth_l1_cases, _LOSSES),
    ("huber_loss", lambda x, y: F.huber_loss(x, y, reduction="sum", delta=2.0), _huber_ref,
     _smooth_l1_cases, _LOSSES),
    ("kl_div", lambda x, t: F.kl_div(x, t, reduction="batchmean"), _kl_ref, _kl_cases,
     _LOSSES),
    ("kl_div_log_target", lambda x, t: F.kl_div(x, t, reduction="sum", log_target=True),
     _kl_log_ref, _normals((3, 4), (3, 4)), _LOSSES),
]
