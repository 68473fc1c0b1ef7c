"""The op-table rows of ops/special_functions.py: each row names an op, the function under test,
a SciPy/NumPy reference and its input cases (tinyattn/optable/__init__.py assembles the
table). Inputs are drawn inside each function's domain, away from its poles."""
from __future__ import annotations

from typing import Callable, List

import numpy as np
import scipy.special as sp

from .. import ops
from .cases import normal_cases
from .spec import Case, OpSpec, from_pairs

__all__ = ["ROWS"]

_SECTION = "special-functions"


def _uniform(low: float, high: float) -> Callable[[np.random.Generator], List[Case]]:
    """(3, 4) and (2, 5) inputs drawn uniformly from (low, high)."""
    return lambda rng: [(str(s), (rng.uniform(low, high, s),)) for s in ((3, 4), (2, 5))]


ROWS: List[OpSpec] = from_pairs([
    ("erf", ops.erf, sp.erf, normal_cases((3, 4), (2, 3, 5)), _SECTION),
    ("erfc", ops.erfc, sp.erfc, normal_cases((3, 4)), _SECTION),
    ("erfinv", ops.erfinv, sp.erfinv, _uniform(-0.9, 0.9), _SECTION),
    ("lgamma", ops.lgamma, sp.gammaln, _uniform(0.2, 5.0), _SECTION),
    ("digamma", ops.digamma, sp.psi, _uniform(0.3, 5.0), _SECTION),
    ("logit", ops.logit, sp.logit, _uniform(0.05, 0.95), _SECTION),
    ("logit_eps", lambda x: ops.logit(x, eps=0.2),
     lambda x: sp.logit(np.clip(x, 0.2, 0.8)), _uniform(0.25, 0.75), _SECTION),
    ("i0", ops.i0, sp.i0, normal_cases((3, 4)), _SECTION),
    ("i0e", ops.i0e, sp.i0e, normal_cases((3, 4)), _SECTION),
    ("i1", ops.i1, sp.i1, normal_cases((3, 4)), _SECTION),
    ("i1e", ops.i1e, sp.i1e, normal_cases((3, 4)), _SECTION),
    ("ndtr", ops.ndtr, sp.ndtr, normal_cases((3, 4)), _SECTION),
    ("ndtri", ops.ndtri, sp.ndtri, _uniform(0.05, 0.95), _SECTION),
    ("log_ndtr", ops.log_ndtr, sp.log_ndtr, normal_cases((3, 4), scale=3.0), _SECTION),
    ("erfcx", ops.erfcx, sp.erfcx, normal_cases((3, 4)), _SECTION),
    ("entr", ops.entr, sp.entr, _uniform(0.1, 3.0), _SECTION),
    ("sinc", ops.sinc, np.sinc, normal_cases((3, 4)), _SECTION),
    ("asinh", ops.asinh, np.arcsinh, normal_cases((3, 4)), _SECTION),
    ("acosh", ops.acosh, np.arccosh, _uniform(1.1, 4.0), _SECTION),
    ("atanh", ops.atanh, np.arctanh, _uniform(-0.9, 0.9), _SECTION),
    ("frac", ops.frac, lambda x: x - np.trunc(x), normal_cases((3, 4), scale=3.0), _SECTION),
    ("deg2rad", ops.deg2rad, np.deg2rad, normal_cases((3, 4), scale=90.0), _SECTION),
    ("rad2deg", ops.rad2deg, np.rad2deg, normal_cases((3, 4)), _SECTION),
])
