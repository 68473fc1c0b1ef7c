"""The op-table rows of ops/reduce.py: each row names an op, the function under test, a
NumPy reference and its input cases (tinyattn/optable/__init__.py assembles the table)."""
from __future__ import annotations

from typing import List

import numpy as np

from .. import ops
from .cases import case_pair, distinct_cases, normal_cases, op_case, unary_cases
from .spec import Case, OpCase, OpSpec, from_pairs


__all__ = ["ROWS"]


def _max_cases(rng: np.random.Generator) -> List[OpCase]:
    # Distinct values: at a tie the max is not differentiable and finite differences disagree
    # with any subgradient, so ties are tested separately (tests/test_edge_cases.py).
    return [op_case("(3, 4) dim=1", rng.permutation(12).reshape(3, 4) / 3.0),
            op_case("(2, 3, 4) dim=1", rng.permutation(24).reshape(2, 3, 4) / 5.0)]


def _prod_cases(rng: np.random.Generator) -> List[Case]:
    x = rng.standard_normal((3, 4))
    zeros = rng.standard_normal((3, 4))
    zeros[0, 1] = 0.0                           # one zero in a row: d/dx0 = product of others
    zeros[1, [0, 2]] = 0.0                      # two zeros: every derivative of the row is 0
    return [case_pair("(3, 4)", x), case_pair("(3, 4) with zeros", zeros)]


ROWS: List[OpSpec] = [
    OpSpec("sum", lambda x: ops.sum(x, dim=1), lambda x: x.sum(axis=1), unary_cases(),
           "reductions"),
    OpSpec("sum_all", lambda x: ops.sum(x), lambda x: np.asarray(x.sum()), unary_cases(),
           "reductions"),
    OpSpec("mean", lambda x: ops.mean(x, dim=(0, -1), keepdim=True),
           lambda x: x.mean(axis=(0, -1), keepdims=True), unary_cases(), "reductions"),
    OpSpec("amax", lambda x: ops.amax(x, dim=1), lambda x: x.max(axis=1), _max_cases,
           "reductions"),
] + from_pairs([
    ("amin", lambda x: ops.amin(x, dim=(0, -1)), lambda x: x.min(axis=(0, -1)),
     distinct_cases((2, 3, 4)), "maximum-and-minimum"),
    ("min_dim", lambda x: ops.min(x, 1).values, lambda x: x.min(axis=1),
     distinct_cases((3, 4)), "maximum-and-minimum"),
    ("prod", lambda x: ops.prod(x, 1), lambda x: x.prod(axis=1), _prod_cases, "prod"),
    ("cumsum", lambda x: ops.cumsum(x, 1), lambda x: np.cumsum(x, axis=1),
     normal_cases((3, 4), (2, 3, 4)), "cumsum"),
])
