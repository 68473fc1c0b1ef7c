"""The op-table rows of ops/products.py: each row names an op, the function under test, a
NumPy reference and its input cases (tinyattn/optable/__init__.py assembles the table)."""
from __future__ import annotations

from typing import List

import numpy as np

from .. import ops
from .cases import case_pair, normal_cases
from .spec import Case, OpSpec, from_pairs


__all__ = ["ROWS"]


def _cumprod_cases(rng: np.random.Generator) -> List[Case]:
    x = rng.standard_normal((3, 5))
    zeros = rng.standard_normal((3, 5))
    zeros[0, 1] = 0.0                        # one zero: later outputs vanish, dx does not
    zeros[1, [0, 3]] = 0.0                   # two zeros in a row
    zeros[2, 4] = 0.0                        # a zero in last place
    return [case_pair("(3, 5)", x), case_pair("(3, 5) with zeros", zeros)]


ROWS: List[OpSpec] = from_pairs([
    ("cumprod", lambda x: ops.cumprod(x, 1), lambda x: np.cumprod(x, axis=1), _cumprod_cases,
     "cumprod"),
    ("cumprod_dim0", lambda x: ops.cumprod(x, 0), lambda x: np.cumprod(x, axis=0),
     normal_cases((4, 2, 3)), "cumprod"),
])
