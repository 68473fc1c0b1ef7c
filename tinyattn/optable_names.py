"""The op-table rows of the ops learners' codebases call (issue 20): hyperbolic and inverse
circular functions, exp2, the indexed pad modes, scatter_reduce, scatter with a number and
a reduction, index_fill and weighted bincount. Same row format as optable_more.py.
"""
from __future__ import annotations

from typing import List

import numpy as np

from . import functional as F
from . import ops
from .optable_more import Case, Row, _c, _normal

__all__ = ["NAMES_ROWS"]

_HYPER = "sinh-cosh-and-exp2"
_TRIG = "tan-asin-acos-atan-and-atan2"
_SCATTER = "scatter_reduce-index_fill-and-bincount"


def _inside_unit(rng: np.random.Generator) -> List[Case]:
    """asin and acos: |x| < 0.9, away from the infinite slope at +-1."""
    return [_c("(3, 4)", rng.uniform(-0.9, 0.9, (3, 4)))]


def _tan_cases(rng: np.random.Generator) -> List[Case]:
    """|x| < 1.2: away from the poles at +-pi/2."""
    return [_c("(3, 4)", rng.uniform(-1.2, 1.2, (3, 4)))]


def _atan2_cases(rng: np.random.Generator) -> List[Case]:
    """y (3, 4) against x (4,) (broadcast), x kept positive: away from the branch cut."""
    return [_c("(3, 4) (4,)", rng.standard_normal((3, 4)), rng.uniform(0.3, 2.0, 4)),
            _c("(2, 3) (2, 3)", rng.standard_normal((2, 3)), rng.uniform(0.3, 2.0, (2, 3)))]


def _pad_ref(mode: str, pad: tuple):
    """NumPy's np.pad for (before, after) pairs listed from the last dim, as torch's."""
    numpy_mode = {"reflect": "reflect", "replicate": "edge", "circular": "wrap"}[mode]

    def reference(x: np.ndarray) -> np.ndarray:
        widths = [(0, 0)] * x.ndim
        for k in range(len(pad) // 2):
            widths[x.ndim - 1 - k] = (pad[2 * k], pad[2 * k + 1])
        return np.pad(x, widths, mode=numpy_mode)
    return reference


def _scatter_cases(rng: np.random.Generator) -> List[Case]:
    """self (3, 4), index (3, 4) along dim 0 with repeats, src (3, 4) of distinct values
    (no ties for amax / amin; no zeros for prod)."""
    index = np.array([[0, 2, 1, 0], [0, 0, 2, 0], [1, 2, 2, 2]])
    src = (rng.permutation(12).reshape(3, 4) + 1.0) * rng.choice([-1.0, 1.0], (3, 4)) / 5
    return [_c("(3, 4) dim 0 index (3, 4) with repeats src (3, 4)",
               rng.standard_normal((3, 4)) + 3.0, index, src)]


def _reduce_ref(reduce: str, include_self: bool):
    ufunc = {"sum": np.add, "mean": np.add, "prod": np.multiply, "amax": np.maximum,
             "amin": np.minimum}[reduce]

    def reference(x: np.ndarray, index: np.ndarray, src: np.ndarray) -> np.ndarray:
        cols = np.broadcast_to(np.arange(index.shape[1]), index.shape)
        hit = np.zeros(x.shape, dtype=bool)
        hit[index, cols] = True
        count = np.zeros(x.shape)
        np.add.at(count, (index, cols), 1)
        out = x.copy()
        if not include_self:
            out[hit] = {"sum": 0, "mean": 0, "prod": 1, "amax": -np.inf, "amin": np.inf}[reduce]
        ufunc.at(out, (index, cols), src)
        if reduce == "mean":
            out = np.where(hit, out / np.maximum(count + include_self, 1), x)
        return out
    return reference


def _scatter_number_ref(reduce: str):
    def reference(x: np.ndarray, index: np.ndarray) -> np.ndarray:
        count = np.zeros(x.shape)
        np.add.at(count, (index, np.broadcast_to(np.arange(index.shape[1]), index.shape)), 1)
        return x + 1.5 * count if reduce == "add" else x * 1.5 ** count
    return reference


def _index_fill_ref(x: np.ndarray, index: np.ndarray) -> np.ndarray:
    out = x.copy()
    out[:, index] = -2.0
    return out


def _bincount_ref(ids: np.ndarray, weights: np.ndarray) -> np.ndarray:
    return np.bincount(ids, weights=weights, minlength=7)


def _pad_row(mode: str, pad: tuple, shape: tuple) -> Row:
    return (f"pad_{mode}", lambda x: F.pad(x, pad, mode=mode), _pad_ref(mode, pad),
            _normal(shape), "pad")


NAMES_ROWS: List[Row] = [
    ("sinh", ops.sinh, np.sinh, _normal((3, 4)), _HYPER),
    ("cosh", ops.cosh, np.cosh, _normal((3, 4)), _HYPER),
    ("exp2", ops.exp2, np.exp2, _normal((3, 4)), _HYPER),
    ("tan", ops.tan, np.tan, _tan_cases, _TRIG),
    ("asin", ops.asin, np.arcsin, _inside_unit, _TRIG),
    ("acos", ops.acos, np.arccos, _inside_unit, _TRIG),
    ("atan", ops.atan, np.arctan, _normal((3, 4)), _TRIG),
    ("atan2", ops.atan2, np.arctan2, _atan2_cases, _TRIG),
    _pad_row("reflect", (2, 1, 1, 2), (2, 4, 5)),
    _pad_row("replicate", (3, 1), (2, 3)),
    _pad_row("circular", (1, 2, 2, 0), (2, 3, 4)),
] + [
    (f"scatter_reduce_{reduce}{'' if include_self else '_without_self'}",
     lambda x, i, s, r=reduce, inc=include_self: ops.scatter_reduce(x, 0, i, s, r,
                                                                    include_self=inc),
     _reduce_ref(reduce, include_self), _scatter_cases, _SCATTER)
    for reduce in ("sum", "prod", "mean", "amax", "amin") for include_self in (True, False)
] + [
    (f"scatter_value_{reduce}", lambda x, i, r=reduce: ops.scatter(x, 0, i, 1.5, reduce=r),
     _scatter_number_ref(reduce), lambda rng: [case[:1] + (case[1][:2],)
                                                for case in _scatter_cases(rng)], _SCATTER)
    for reduce in ("add", "multiply")
] + [
    ("index_fill", lambda x, i: ops.index_fill(x, 1, i, -2.0), _index_fill_ref,
     lambda rng: [_c("(3, 5) dim 1 index [4, 0, 4]", rng.standard_normal((3, 5)),
                     np.array([4, 0, 4]))], _SCATTER),
    # torch.normal: a draw with a zero gradient by definition (derivations.md#normal-samples);
    # std = 0 makes it deterministic; the row runs it through the table's checks, and
    # tests/test_learner_names.py checks the zero gradient against torch.
    ("normal_sample", lambda m: ops.normal(m, 0.0) * 0.0, np.zeros_like, _normal((3, 4)),
     "normal-samples"),
    ("bincount_weights", lambda i, w: ops.bincount(i, w, minlength=7), _bincount_ref,
     lambda rng: [_c("ids (6,) weights (6,)", np.array([1, 3, 1, 0, 5, 1]),
                     rng.standard_normal(6))], _SCATTER),
]
