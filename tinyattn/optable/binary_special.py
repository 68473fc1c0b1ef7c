"""The op-table rows of ops/binary_special.py: each row names an op, the function under test,
a NumPy/SciPy reference and its input cases (tinyattn/optable/__init__.py assembles the
table). The pairs broadcast, and values are drawn where each op is smooth (no ties for fmax,
clamp_min and clamp_max; positive arguments for the logarithms)."""
from __future__ import annotations

from typing import Callable, List

import numpy as np
import scipy.special as sp

from .. import ops
from .spec import Case, OpSpec, from_pairs

__all__ = ["ROWS"]

_SECTION = "binary-pointwise-ops"


def _pairs(low: float = -2.0, high: float = 2.0, second_low: float = -2.0,
           second_high: float = 2.0) -> Callable[[np.random.Generator], List[Case]]:
    """(3, 4) with (4,) (broadcast) and (2, 3) with (2, 3), uniform in the given ranges."""
    def make(rng: np.random.Generator) -> List[Case]:
        return [(f"{a} {b}", (rng.uniform(low, high, a), rng.uniform(second_low, second_high, b)))
                for a, b in (((3, 4), (4,)), ((2, 3), (2, 3)))]
    return make


def _triples(rng: np.random.Generator) -> List[Case]:
    return [("(3, 4) (3, 1) (4,)", (rng.standard_normal((3, 4)), rng.standard_normal((3, 1)),
                                    rng.uniform(0.5, 2.0, 4) * rng.choice([-1.0, 1.0], 4)))]


ROWS: List[OpSpec] = from_pairs([
    ("xlogy", ops.xlogy, sp.xlogy, _pairs(second_low=0.2, second_high=3.0), _SECTION),
    ("xlog1py", ops.xlog1py, sp.xlog1py,
     _pairs(second_low=-0.8, second_high=3.0), _SECTION),
    ("logaddexp", ops.logaddexp, np.logaddexp, _pairs(), _SECTION),
    ("logaddexp2", ops.logaddexp2, np.logaddexp2, _pairs(), _SECTION),
    ("hypot", ops.hypot, np.hypot, _pairs(0.1, 2.0), _SECTION),
    ("copysign", ops.copysign, np.copysign, _pairs(0.1, 2.0), _SECTION),
    ("fmax", ops.fmax, np.fmax, _pairs(), _SECTION),
    ("fmin", ops.fmin, np.fmin, _pairs(), _SECTION),
    ("clamp_min_tensor", ops.clamp_min, np.maximum, _pairs(), _SECTION),
    ("clamp_max_tensor", ops.clamp_max, np.minimum, _pairs(), _SECTION),
    ("nextafter", ops.nextafter, np.nextafter, _pairs(), _SECTION),
    ("ldexp", ops.ldexp, lambda a, b: a * np.exp2(b), _pairs(), _SECTION),
    ("addcmul", lambda x, a, b: ops.addcmul(x, a, b, value=0.5),
     lambda x, a, b: x + 0.5 * a * b, _triples, _SECTION),
    ("addcdiv", lambda x, a, b: ops.addcdiv(x, a, b, value=0.5),
     lambda x, a, b: x + 0.5 * a / b, _triples, _SECTION),
])
