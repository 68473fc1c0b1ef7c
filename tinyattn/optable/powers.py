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


def _unary(rng: np.random.Generator) -> List[OpCase]:
    return [op_case("(3, 4)", rng.standard_normal((3, 4))),
            op_case("(2, 3, 5)", rng.standard_normal((2, 3, 5)))]


def _away_from_zero(rng: np.random.Generator) -> List[OpCase]:
    x = rng.standard_normal((3, 4))
    return [op_case("(3, 4)", np.where(x < 0, x - 0.5, x + 0.5))]


ROWS: List[OpSpec] = [
    OpSpec("pow_tensor", ops.pow, np.power, _pow_tensor_cases,
           "powers-with-a-tensor-exponent"),
    # base ** x as a real power (RPow), and the products that serve small whole powers
    OpSpec("rpow", lambda x: ops.rpow(x, 2.5), lambda x: 2.5 ** x, _unary,
           "powers-with-a-tensor-exponent"),
    OpSpec("rpow_base_below_one", lambda x: ops.rpow(x, 0.3), lambda x: 0.3 ** x, _unary,
           "powers-with-a-tensor-exponent"),
    OpSpec("pow_cube", lambda x: ops.pow(x, 3.0), lambda x: x ** 3, _unary, "elementwise"),
    OpSpec("pow_whole_5", lambda x: ops.pow(x, 5), lambda x: x ** 5, _unary, "elementwise"),
    OpSpec("pow_minus_2", lambda x: ops.pow(x, -2.0), lambda x: x ** -2.0, _away_from_zero,
           "elementwise"),
]
