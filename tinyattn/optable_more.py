"""The op-table rows of the ops a PyTorch user reaches for (issue 12): pointwise functions,
comparisons, sorting, statistics, layout ops, padding, einsum and the losses.

Each row is (name, function under test, NumPy/SciPy reference, case maker, doc section); a
case maker returns (label, arrays) pairs. ``tinyattn/optable.py`` turns them into ``OpSpec``
rows of ``OP_TABLE``, which drives the tests and ``python -m tinyattn gradcheck`` (this
module imports nothing from optable.py, so neither import order can fail).

Cases avoid the points where an op has no derivative (kinks at 0, ties, the softplus
threshold): finite differences cannot check a subgradient there, so those points are tested
against PyTorch in tests/test_ops_coverage.py instead.
"""
from __future__ import annotations

from typing import Any, Callable, List, Tuple

import numpy as np
import scipy.special

from . import functional as F
from . import ops
from .tensor import Tensor, tensor

__all__ = ["MORE_ROWS"]

Case = Tuple[str, Tuple[np.ndarray, ...]]
Row = Tuple[str, Callable[..., Tensor], Callable[..., np.ndarray],
            Callable[[np.random.Generator], List[Case]], str]


def _c(label: str, *arrays: np.ndarray) -> Case:
    return label, tuple(np.asarray(a) for a in arrays)


def _label(*shapes: Any) -> str:
    return " ".join(str(tuple(s)) for s in shapes)


def _normal(*shapes: Tuple[int, ...], scale: float = 1.0) -> Callable[..., List[Case]]:
    return lambda rng: [_c(_label(s), scale * rng.standard_normal(s)) for s in shapes]


def _away_from_zero(*shapes: Tuple[int, ...]) -> Callable[..., List[Case]]:
    def make(rng: np.random.Generator) -> List[Case]:
        out = []
        for s in shapes:
            x = rng.standard_normal(s)
            out.append(_c(_label(s), x + np.sign(x) * 0.1))
        return out
    return make


def _distinct(*shapes: Tuple[int, ...]) -> Callable[..., List[Case]]:
    """Values without ties (and distinct magnitudes): max, min, sort, topk, inf-norm."""
    def make(rng: np.random.Generator) -> List[Case]:
        return [_c(_label(s), (rng.permutation(int(np.prod(s))).reshape(s) + 1.0)
                   * rng.choice([-1.0, 1.0], size=s) / 4.0) for s in shapes]
    return make


def _pair(rng: np.random.Generator) -> List[Case]:
    """Two inputs that broadcast, never equal (maximum/minimum tie at equality)."""
    a = rng.standard_normal((3, 4))
    return [_c(_label((3, 4), (3, 4)), a, a + rng.choice([-0.5, 0.5], (3, 4))),
            _c(_label((2, 3, 4), (4,)), rng.standard_normal((2, 3, 4)),
               rng.standard_normal(4) + 0.05)]


def _prod_cases(rng: np.random.Generator) -> List[Case]:
    x = rng.standard_normal((3, 4))
    zeros = rng.standard_normal((3, 4))
    zeros[0, 1] = 0.0                           # one zero in a row: d/dx0 = product of others
    zeros[1, [0, 2]] = 0.0                      # two zeros: every derivative of the row is 0
    return [_c("(3, 4)", x), _c("(3, 4) with zeros", zeros)]


def _device_tensor(values: np.ndarray, like: Tensor) -> Tensor:
    """A constant (weights) on the device and in the dtype of the tensor under test."""
    return tensor(values.astype(like.dtype), device=like.device)


# ------------------------------------------------------------------ references
def _softplus_ref(x: np.ndarray, beta: float = 2.0, threshold: float = 3.0) -> np.ndarray:
    return np.where(beta * x > threshold, x, np.log1p(np.exp(beta * x)) / beta)


def _pad_ref(x: np.ndarray) -> np.ndarray:
    """F.pad(x, (1, 2, -1, 0), value=0.5): last dim +1 before, +2 after; the dim before it
    loses its first row."""
    widths = [(0, 0)] * (x.ndim - 2) + [(0, 0), (1, 2)]
    return np.pad(x[..., 1:, :], widths, constant_values=0.5)


def _topk_ref(x: np.ndarray) -> np.ndarray:
    return -np.sort(-x, axis=-1)[..., :2]


def _bce_logits_ref(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    w, q = _BCE_WEIGHT[:x.shape[-1]], _POS_WEIGHT[:x.shape[-1]]
    log_s, log_1ms = -np.logaddexp(0, -x), -np.logaddexp(0, x)
    return np.asarray((-w * (q * y * log_s + (1 - y) * log_1ms)).mean())


def _bce_ref(p: np.ndarray, y: np.ndarray) -> np.ndarray:
    return np.asarray((-(y * np.log(p) + (1 - y) * np.log1p(-p))).mean())


def _nll_ref(logp: np.ndarray, target: np.ndarray) -> np.ndarray:
    w = _CLASS_WEIGHT[:logp.shape[1]]
    valid = target != -100
    safe = np.where(valid, target, 0)
    weights = w[safe] * valid
    return np.asarray(-(weights * logp[np.arange(len(target)), safe]).sum() / weights.sum())


_BCE_WEIGHT = np.array([0.5, 1.0, 2.0, 1.5])
_POS_WEIGHT = np.array([3.0, 1.0, 0.5, 2.0])
_CLASS_WEIGHT = np.array([1.0, 2.0, 0.5, 3.0, 1.5])


def _bce_logits_fn(x: Tensor, y: Tensor) -> Tensor:
    n = x.shape[-1]
    return F.binary_cross_entropy_with_logits(x, y, weight=_device_tensor(_BCE_WEIGHT[:n], x),
                                              pos_weight=_device_tensor(_POS_WEIGHT[:n], x))


def _nll_fn(logp: Tensor, target: Tensor) -> Tensor:
    return F.nll_loss(logp, target, weight=_device_tensor(_CLASS_WEIGHT[:logp.shape[1]], logp))


def _loss_pair(rng: np.random.Generator) -> List[Case]:
    x = rng.standard_normal((3, 4))
    gap = rng.choice([-1.0, 1.0], (3, 4)) * (0.1 + rng.random((3, 4)))   # never x == y
    return [_c("(3, 4) (3, 4)", x, x + gap)]


def _bce_logits_cases(rng: np.random.Generator) -> List[Case]:
    return [_c("(3, 4) targets (3, 4)", 3 * rng.standard_normal((3, 4)), rng.random((3, 4)))]


def _bce_cases(rng: np.random.Generator) -> List[Case]:
    return [_c("(3, 4) probabilities", scipy.special.expit(2 * rng.standard_normal((3, 4))),
               rng.random((3, 4)))]


def _nll_cases(rng: np.random.Generator) -> List[Case]:
    logp = scipy.special.log_softmax(rng.standard_normal((5, 4)), axis=1)
    return [_c("(5, 4) target with ignore_index", logp, np.array([1, -100, 3, 3, 0]))]


def _gather_cases(rng: np.random.Generator) -> List[Case]:
    return [_c("(3, 4) index (3, 5) repeats", rng.standard_normal((3, 4)),
               np.array([[0, 0, 3, 1, 0], [2, 2, 2, 2, 1], [3, 0, 1, 2, 3]]))]


def _where_cases(rng: np.random.Generator) -> List[Case]:
    return [_c("cond (3, 4), x (3, 4), 0.0", rng.random((3, 4)) > 0.5,
               rng.standard_normal((3, 4)))]


def _einsum_row(name: str, equation: str, *shapes: Tuple[int, ...],
                reference: Any = None) -> Row:
    def make(rng: np.random.Generator) -> List[Case]:
        return [_c(f"{equation!r} " + _label(*shapes), *(rng.standard_normal(s) for s in shapes))]
    return (name, lambda *xs: ops.einsum(equation, *xs),
            reference or (lambda *xs: np.asarray(np.einsum(equation, *xs))), make, "einsum")


_INF = float("inf")

MORE_ROWS: List[Row] = [
    ("sigmoid", ops.sigmoid, scipy.special.expit, _normal((3, 4), (2, 3, 5), scale=3.0),
     "more-pointwise-functions"),
    ("abs", ops.abs, np.abs, _away_from_zero((3, 4)), "more-pointwise-functions"),
    ("rsqrt", ops.rsqrt, lambda x: 1 / np.sqrt(x),
     lambda rng: [_c("(3, 4)", np.abs(rng.standard_normal((3, 4))) + 0.3)],
     "more-pointwise-functions"),
    ("leaky_relu", lambda x: F.leaky_relu(x, 0.1), lambda x: np.where(x > 0, x, 0.1 * x),
     _away_from_zero((3, 4)), "more-pointwise-functions"),
    ("silu", F.silu, lambda x: x * scipy.special.expit(x), _normal((3, 4), scale=3.0),
     "more-pointwise-functions"),
    ("softplus", lambda x: F.softplus(x, beta=2.0, threshold=3.0), _softplus_ref,
     _normal((4, 5), scale=2.0), "more-pointwise-functions"),
    ("clone", ops.clone, np.copy, _normal((3, 4)), "clone-and-clamp"),
    ("clamp", lambda x: ops.clamp(x, -0.5, 0.8), lambda x: np.clip(x, -0.5, 0.8),
     _normal((4, 5)), "clone-and-clamp"),
    ("maximum", ops.maximum, np.maximum, _pair, "maximum-and-minimum"),
    ("minimum", ops.minimum, np.minimum, _pair, "maximum-and-minimum"),
    ("amin", lambda x: ops.amin(x, dim=(0, -1)), lambda x: x.min(axis=(0, -1)),
     _distinct((2, 3, 4)), "maximum-and-minimum"),
    ("min_dim", lambda x: ops.min(x, 1).values, lambda x: x.min(axis=1),
     _distinct((3, 4)), "maximum-and-minimum"),
    ("sort", lambda x: ops.sort(x, 1, descending=True).values, lambda x: -np.sort(-x, axis=1),
     _distinct((3, 4), (2, 3, 4)), "sort-and-topk"),
    ("topk", lambda x: ops.topk(x, 2).values, _topk_ref, _distinct((3, 4), (2, 3, 5)),
     "sort-and-topk"),
    ("gather", lambda x, i: ops.gather(x, 1, i), lambda x, i: np.take_along_axis(x, i, 1),
     _gather_cases, "gather"),
    ("var", lambda x: ops.var(x, dim=1), lambda x: x.var(axis=1, ddof=1),
     _normal((3, 4), (2, 3, 5)), "var-and-std"),
    ("var_correction0", lambda x: ops.var(x, (0, 2), keepdim=True, correction=0),
     lambda x: x.var(axis=(0, 2), keepdims=True), _normal((2, 3, 4)), "var-and-std"),
    ("std", ops.std, lambda x: np.asarray(x.std(ddof=1)), _normal((3, 4)), "var-and-std"),
    ("logsumexp", lambda x: ops.logsumexp(x, 1),
     lambda x: scipy.special.logsumexp(x, axis=1), _normal((3, 4), (2, 3, 5), scale=3.0),
     "logsumexp"),
    ("norm", ops.norm, lambda x: np.asarray(np.sqrt((x * x).sum())), _normal((3, 4)), "norm"),
    ("norm_p1_dim", lambda x: ops.norm(x, 1, dim=1), lambda x: np.abs(x).sum(axis=1),
     _away_from_zero((3, 4)), "norm"),
    ("norm_inf", lambda x: ops.norm(x, _INF, dim=-1), lambda x: np.abs(x).max(axis=-1),
     _distinct((3, 4)), "norm"),
    ("norm_p3", lambda x: ops.norm(x, 3, dim=0, keepdim=True),
     lambda x: (np.abs(x) ** 3).sum(axis=0, keepdims=True) ** (1 / 3), _normal((3, 4)),
     "norm"),
    ("prod", lambda x: ops.prod(x, 1), lambda x: x.prod(axis=1), _prod_cases, "prod"),
    ("cumsum", lambda x: ops.cumsum(x, 1), lambda x: np.cumsum(x, axis=1),
     _normal((3, 4), (2, 3, 4)), "cumsum"),
    ("expand", lambda x: ops.expand(x, 2, 3, 4), lambda x: np.broadcast_to(x, (2, 3, 4)),
     _normal((3, 1), (4,)), "expand-and-repeat"),
    ("repeat", lambda x: ops.repeat(x, 2, 1, 3), lambda x: np.tile(x, (2, 1, 3)),
     _normal((3, 4), (2, 1, 2)), "expand-and-repeat"),
    ("flip", lambda x: ops.flip(x, (0, -1)), lambda x: np.flip(x, (0, -1)),
     _normal((3, 4), (2, 3, 4)), "flip"),
    ("tril", lambda x: ops.tril(x, -1), lambda x: np.tril(x, -1), _normal((4, 5), (2, 3, 3)),
     "tril-and-triu"),
    ("triu", lambda x: ops.triu(x, 1), lambda x: np.triu(x, 1), _normal((4, 5), (2, 3, 3)),
     "tril-and-triu"),
    ("mT", ops.mT, lambda x: np.swapaxes(x, -1, -2), _normal((2, 3, 4)), "shape-ops"),
    ("pad", lambda x: F.pad(x, (1, 2, -1, 0), value=0.5), _pad_ref, _normal((3, 4), (2, 3, 4)),
     "pad"),
    ("where_scalar", lambda c, x: ops.where(c, x, 0.0), lambda c, x: np.where(c, x, 0.0),
     _where_cases, "where"),
    _einsum_row("einsum_bmm", "bij,bjk->bik", (2, 3, 4), (2, 4, 5)),
    _einsum_row("einsum_implicit", "ij,kj", (3, 4), (5, 4)),
    _einsum_row("einsum_outer", "i,j->ij", (3,), (4,)),
    _einsum_row("einsum_three", "ij,jk,kl->il", (2, 3), (3, 4), (4, 2)),
    _einsum_row("einsum_trace", "ii", (4, 4)),
    _einsum_row("einsum_diagonal", "...ii->...i", (2, 3, 3)),
    _einsum_row("einsum_sum_out", "ijk->i", (2, 3, 4)),
    _einsum_row("einsum_ellipsis", "...ij,...jk->...ik", (2, 3, 4), (4, 5)),
    _einsum_row("einsum_broadcast_one", "bij,bj->bi", (2, 3, 4), (1, 4),
                reference=lambda a, b: np.einsum("bij,bj->bi", a, np.broadcast_to(b, (2, 4)))),
    ("bmm", ops.bmm, np.matmul, lambda rng: [_c(_label((2, 3, 4), (2, 4, 5)),
                                                 rng.standard_normal((2, 3, 4)),
                                                 rng.standard_normal((2, 4, 5)))], "matmul"),
    ("mse_loss", F.mse_loss, lambda x, y: np.asarray(((x - y) ** 2).mean()), _loss_pair,
     "pointwise-losses"),
    ("l1_loss", lambda x, y: F.l1_loss(x, y, reduction="sum"),
     lambda x, y: np.asarray(np.abs(x - y).sum()), _loss_pair, "pointwise-losses"),
    ("bce_with_logits", _bce_logits_fn, _bce_logits_ref, _bce_logits_cases,
     "pointwise-losses"),
    ("binary_cross_entropy", F.binary_cross_entropy, _bce_ref, _bce_cases, "pointwise-losses"),
    ("nll_loss", _nll_fn, _nll_ref, _nll_cases, "nll-loss"),
]
