"""The op-table rows of ops/shape.py: each row names an op, the function under test, a
NumPy reference and its input cases (tinyattn/optable/__init__.py assembles the table)."""
from __future__ import annotations

from typing import List

import numpy as np

from .. import ops
from ..tensor import Tensor
from .cases import INDEX, case_pair, normal_cases, op_case, shapes_text, unary_cases
from .spec import Case, OpCase, OpSpec, from_pairs


__all__ = ["ROWS"]


def _getitem_cases(rng: np.random.Generator) -> List[OpCase]:
    return [op_case("(4, 5)[1:3, ::2]", rng.standard_normal((4, 5))),
            op_case("(4, 5)[[0, 2, 0, 0]] repeated rows", rng.standard_normal((4, 5)))]


def _index_op(x: Tensor) -> Tensor:
    """Slicing for the first case, integer-array indexing with repeats for the second (the
    two cases share a shape, so the case's label is not visible here: both run)."""
    return ops.cat([x[1:3, ::2].reshape(-1), x[[0, 2, 0, 0]].reshape(-1)])


def _index_ref(x: np.ndarray) -> np.ndarray:
    return np.concatenate([x[1:3, ::2].reshape(-1), x[[0, 2, 0, 0]].reshape(-1)])


def _concat_cases(rng: np.random.Generator) -> List[OpCase]:
    return [op_case(shapes_text((2, 3), (2, 1), (2, 2)), rng.standard_normal((2, 3)),
                  rng.standard_normal((2, 1)), rng.standard_normal((2, 2)))]


def _stack_cases(rng: np.random.Generator) -> List[OpCase]:
    return [op_case(shapes_text((2, 3), (2, 3)), rng.standard_normal((2, 3)),
                  rng.standard_normal((2, 3)))]


def _split_fn(x: Tensor) -> Tensor:
    a, b, c = ops.split(x, [1, 3, 1], dim=1)
    return ops.cat([c * 2.0, a, b * b], dim=1)


def _split_ref(x: np.ndarray) -> np.ndarray:
    a, b, c = x[:, :1], x[:, 1:4], x[:, 4:]
    return np.concatenate([c * 2.0, a, b * b], axis=1)


def _index_select_cases(rng: np.random.Generator) -> List[Case]:
    return [case_pair("(4, 3) index [2, 0, 2]", rng.standard_normal((4, 3)), np.array([2, 0, 2]))]


def _index_select_fn(x: Tensor, index: Tensor) -> Tensor:
    return ops.index_select(x, 0, index)


ROWS: List[OpSpec] = [
    OpSpec("reshape", lambda x: ops.reshape(x, -1, 2), lambda x: x.reshape(-1, 2),
           unary_cases(shapes=((3, 4), (2, 3, 2))), "shape-ops"),
    OpSpec("permute", lambda x: ops.permute(x, 2, 0, 1), lambda x: x.transpose(2, 0, 1),
           unary_cases(shapes=((2, 3, 4),)), "shape-ops"),
    OpSpec("transpose", lambda x: ops.transpose(x, 0, 1), lambda x: x.swapaxes(0, 1),
           unary_cases(), "shape-ops"),
    OpSpec("getitem", _index_op, _index_ref, _getitem_cases, "shape-ops"),
    OpSpec("cat", lambda *xs: ops.cat(list(xs), dim=1),
           lambda *xs: np.concatenate(xs, axis=1), _concat_cases, "shape-ops"),
    OpSpec("stack", lambda *xs: ops.stack(list(xs), dim=1),
           lambda *xs: np.stack(xs, axis=1), _stack_cases, "shape-ops"),
    OpSpec("split", _split_fn, _split_ref,
           lambda rng: [op_case("(2, 5) into [1, 3, 1]", rng.standard_normal((2, 5)))],
           "shape-ops"),
] + from_pairs([
    ("index_select", _index_select_fn, lambda x, i: x[i], _index_select_cases, INDEX),
    ("movedim", lambda x: ops.movedim(x, (0, 1), (2, 0)),
     lambda x: np.moveaxis(x, (0, 1), (2, 0)), normal_cases((2, 3, 4)), INDEX),
    ("mT", ops.mT, lambda x: np.swapaxes(x, -1, -2), normal_cases((2, 3, 4)), "shape-ops"),
])
