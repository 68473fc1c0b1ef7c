"""The op-table rows of ops/view_copies.py: each row names an op, the function under test, a
NumPy reference and its input cases (tinyattn/optable/__init__.py assembles the table)."""
from __future__ import annotations

from typing import List

import numpy as np

from .. import ops
from .cases import case_pair
from .spec import Case, OpSpec, from_pairs
from .structure import STRUCTURE

__all__ = ["ROWS"]


def _renorm_cases(rng: np.random.Generator) -> List[Case]:
    x = rng.standard_normal((3, 4)) * np.array([[0.2], [2.0], [3.0]])  # row 0 under maxnorm
    return [case_pair("(3, 4), rows 1 and 2 rescaled", x)]


def _renorm_ref(x):
    norms = np.sqrt((x * x).sum(1, keepdims=True))
    return x * np.where(norms > 1.5, 1.5 / (norms + 1e-7), 1.0)


ROWS: List[OpSpec] = from_pairs([
    ("renorm", lambda x: ops.renorm(x, 2, 0, 1.5), _renorm_ref, _renorm_cases, STRUCTURE),
    ("sum_to_size", lambda x: ops.sum_to_size(x, (1, 4)),
     lambda x: x.sum((0, 1)).reshape(1, 4),
     lambda rng: [case_pair("(2, 3, 4) to (1, 4)", rng.standard_normal((2, 3, 4)))],
     STRUCTURE),
    ("unbind_copy", lambda x: ops.unbind_copy(x, 1)[2], lambda x: x[:, 2].copy(),
     lambda rng: [case_pair("(2, 3)", rng.standard_normal((2, 3)))], STRUCTURE),
])
