"""The op-table rows of ops/powers.py: each row names an op, the function under test, a
NumPy reference and its input cases (tinyattn/optable/__init__.py assembles the table)."""
from __future__ import annotations

from typing import List

import numpy as np

from .. import ops
from .cases import op_case
from .spec import OpCase, OpSpec


__all__ = ["ROWS"]


def _pow_tensor_cases(rng: np.random.Generator) -> List[OpCase]:
    """Positive bases (x^p is smooth in p only there); float exponents get a gradient too,
    integer ones (the polynomial tutorials' (x, x^2, x^3)) do not."""
    return [op_case("(3, 4) (3, 4)", np.abs(rng.standard_normal((3, 4))) + 0.3,
                  rng.standard_normal((3, 4))),
            op_case("(5, 1) (3,)", np.abs(rng.standard_normal((5, 1))) + 0.3,
                  rng.standard_normal(3)),
            op_case("(5, 1) int (3,)", rng.standard_normal((5, 1)), np.array([1, 2, 3]))]


ROWS: List[OpSpec] = [
    OpSpec("pow_tensor", ops.pow, np.power, _pow_tensor_cases,
           "powers-with-a-tensor-exponent"),
]
