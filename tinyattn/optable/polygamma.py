"""The op-table rows of ops/polygamma.py: polygamma for n = 1, 2, 3 (n = 0 is digamma's row)
and mvlgamma for p = 1 and 3, on positive values (negative ones are near poles)."""
from __future__ import annotations

from typing import List

import numpy as np
import scipy.special as sp

from .. import ops
from .spec import Case, OpSpec, from_pairs

__all__ = ["ROWS"]

_SECTION = "polygamma-and-mvlgamma"


def _positive(rng: np.random.Generator) -> List[Case]:
    return [("(3, 4)", (rng.uniform(1.6, 5.0, (3, 4)),)), ("()", (np.array(2.7),))]


def _mvlgamma_reference(p: int):
    def reference(x: np.ndarray) -> np.ndarray:
        return sp.multigammaln(x, p) if x.ndim == 0 else np.vectorize(
            lambda v: sp.multigammaln(v, p))(x)
    return reference


ROWS: List[OpSpec] = from_pairs([
    *[(f"polygamma_n{n}", lambda x, n=n: ops.polygamma(n, x),
       lambda x, n=n: sp.polygamma(n, x), _positive, _SECTION) for n in (1, 2, 3)],
    *[(f"mvlgamma_p{p}", lambda x, p=p: ops.mvlgamma(x, p), _mvlgamma_reference(p), _positive,
       _SECTION) for p in (1, 3)],
])
