"""The op-table rows of ops/structure.py (compositions of shape ops, gradchecked like every
op): each row names an op, the function under test, a NumPy reference and its input cases
(tinyattn/optable/__init__.py assembles the table)."""
from __future__ import annotations

import itertools
from typing import List

import numpy as np

from .. import ops
from .cases import case_pair
from .spec import Case, OpSpec, from_pairs

__all__ = ["ROWS", "STRUCTURE"]

STRUCTURE = "structure-ops-made-of-shape-ops"


def _normal(*shapes):
    def make(rng: np.random.Generator) -> List[Case]:
        return [case_pair(" ".join(str(s) for s in shapes),
                          *(rng.standard_normal(s) for s in shapes))]
    return make


def _combinations_ref(x):
    return np.array(list(itertools.combinations(x, 2)))


ROWS: List[OpSpec] = from_pairs([
    ("broadcast_to", lambda x: ops.broadcast_to(x, (2, 3, 4)),
     lambda x: np.broadcast_to(x, (2, 3, 4)), _normal((3, 1)), STRUCTURE),
    ("hstack", lambda a, b: ops.hstack([a, b]), lambda a, b: np.hstack([a, b]),
     _normal((2, 3), (2, 1)), STRUCTURE),
    ("vstack_of_1d", lambda a, b: ops.vstack([a, b]), lambda a, b: np.vstack([a, b]),
     _normal((3,), (3,)), STRUCTURE),
    ("dstack", lambda a, b: ops.dstack([a, b]), lambda a, b: np.dstack([a, b]),
     _normal((2, 3), (2, 3)), STRUCTURE),
    ("column_stack", lambda a, b: ops.column_stack([a, b]),
     lambda a, b: np.column_stack([a, b]), _normal((4,), (4, 2)), STRUCTURE),
    ("tensor_split_middle", lambda x: ops.tensor_split(x, 3, 1)[1],
     lambda x: np.array_split(x, 3, 1)[1], _normal((2, 7)), STRUCTURE),
    ("rot90", lambda x: ops.rot90(x, 1, (0, 1)), lambda x: np.rot90(x, 1, (0, 1)),
     _normal((3, 4)), STRUCTURE),
    ("cartesian_prod", ops.cartesian_prod,
     lambda a, b: np.array(list(itertools.product(a, b))), _normal((3,), (2,)), STRUCTURE),
    ("combinations", ops.combinations, _combinations_ref, _normal((4,)), STRUCTURE),
    ("diagflat", lambda x: ops.diagflat(x, 1), lambda x: np.diagflat(x, 1), _normal((2, 2)),
     STRUCTURE),
])
