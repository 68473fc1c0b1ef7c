"""The op-table rows of ops/matmul.py: each row names an op, the function under test, a
NumPy reference and its input cases (tinyattn/optable/__init__.py assembles the table)."""
from __future__ import annotations

from typing import List

import numpy as np

from .. import functional as F, ops
from .cases import PRODUCTS, case_pair, normal_inputs, op_case, shapes_label, shapes_text
from .spec import OpCase, OpSpec, from_pairs


__all__ = ["ROWS"]


def _matmul_cases(rng: np.random.Generator) -> List[OpCase]:
    shapes = [((3, 4), (4, 5)), ((2, 3, 4), (4, 5)), ((2, 1, 3, 4), (3, 4, 2)), ((4,), (4, 3)),
              ((2, 3, 4), (4,))]
    return [op_case(shapes_text(a, b), rng.standard_normal(a), rng.standard_normal(b))
            for a, b in shapes]


def _linear_cases(rng: np.random.Generator) -> List[OpCase]:
    return [op_case(shapes_text((2, 3, 4), (5, 4), (5,)), rng.standard_normal((2, 3, 4)),
                  rng.standard_normal((5, 4)), rng.standard_normal(5)),
            op_case(shapes_text((4,), (2, 4), (2,)), rng.standard_normal(4),
                  rng.standard_normal((2, 4)), rng.standard_normal(2))]


ROWS: List[OpSpec] = [
    OpSpec("matmul", ops.matmul, np.matmul, _matmul_cases, "matmul"),
    OpSpec("linear", F.linear, lambda x, w, b: x @ w.T + b, _linear_cases, "linear"),
] + from_pairs([
    ("dot", ops.dot, lambda a, b: np.asarray(a @ b), normal_inputs((5,), (5,)), PRODUCTS),
    ("mv", ops.mv, np.matmul, normal_inputs((3, 4), (4,)), PRODUCTS),
    ("addmm", lambda c, a, b: ops.addmm(c, a, b, beta=0.5, alpha=-2.0),
     lambda c, a, b: 0.5 * c - 2.0 * a @ b, normal_inputs((4,), (3, 2), (2, 4)), PRODUCTS),
    ("bmm", ops.bmm, np.matmul, lambda rng: [case_pair(shapes_label((2, 3, 4), (2, 4, 5)),
                                                 rng.standard_normal((2, 3, 4)),
                                                 rng.standard_normal((2, 4, 5)))], "matmul"),
])
