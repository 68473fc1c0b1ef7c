"""The op-table rows of ops/compare.py: each row names an op, the function under test, a
NumPy reference and its input cases (tinyattn/optable/__init__.py assembles the table)."""
from __future__ import annotations

from typing import List

import numpy as np

from .. import ops
from .cases import case_pair, shapes_label
from .spec import Case, OpSpec, from_pairs


__all__ = ["ROWS"]


def _pair(rng: np.random.Generator) -> List[Case]:
    """Two inputs that broadcast, never equal (maximum/minimum tie at equality)."""
    a = rng.standard_normal((3, 4))
    return [case_pair(shapes_label((3, 4), (3, 4)), a, a + rng.choice([-0.5, 0.5], (3, 4))),
            case_pair(shapes_label((2, 3, 4), (4,)), rng.standard_normal((2, 3, 4)),
               rng.standard_normal(4) + 0.05)]


ROWS: List[OpSpec] = from_pairs([
    ("maximum", ops.maximum, np.maximum, _pair, "maximum-and-minimum"),
    ("minimum", ops.minimum, np.minimum, _pair, "maximum-and-minimum"),
])
