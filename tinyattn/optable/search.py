"""The op-table row of ops/search.py: bernoulli, the one op there with a gradient (zero, as
torch's). Its draws come from a freshly seeded generator each call, so the function is
deterministic and its finite differences (probabilities kept away from the draws) are 0."""
from __future__ import annotations

from typing import List

import numpy as np

from .. import backend, ops
from ..generator import Generator
from .cases import case_pair
from .spec import Case, OpSpec, from_pairs

__all__ = ["ROWS"]

SEARCHING = "searching-and-counting"


def _draws(shape) -> np.ndarray:
    gen = Generator().manual_seed(7)
    return backend.to_host(backend.uniform(shape, "cpu", np.float64, gen))


def _cases(rng: np.random.Generator) -> List[Case]:
    draws = _draws((3, 4))
    p = np.clip(rng.uniform(0.05, 0.95, (3, 4)), 0.05, 0.95)
    p = np.where(np.abs(p - draws) < 0.02, np.clip(p + 0.04, 0, 0.99), p)   # off the draws
    return [case_pair("(3, 4)", p)]


ROWS: List[OpSpec] = from_pairs([
    ("bernoulli", lambda p: ops.bernoulli(p, generator=Generator().manual_seed(7)),
     lambda p: (_draws(p.shape) < p).astype(p.dtype), _cases, SEARCHING),
])
