"""The op-table row of ops/float_parts.py: frexp's mantissa, of numbers away from the powers
of two (where the exponent steps and the mantissa jumps)."""
from __future__ import annotations

from typing import List

import numpy as np

from .. import ops
from .spec import Case, OpSpec, from_pairs

__all__ = ["ROWS"]


def _away_from_powers_of_two(rng: np.random.Generator) -> List[Case]:
    shape = (3, 4)
    x = rng.uniform(0.55, 0.95, shape) * rng.choice([-1.0, 1.0], shape) \
        * 2.0 ** rng.integers(-6, 7, shape)
    return [("(3, 4)", (x,))]


ROWS: List[OpSpec] = from_pairs([
    ("frexp_mantissa", lambda x: ops.frexp(x).mantissa, lambda x: np.frexp(x)[0],
     _away_from_powers_of_two, "frexp"),
])
