"""The op-table rows of ops/distances.py: cdist for p = 0.5, 1, 2 (direct and by matrix
product), 3 and inf, batched with broadcasting, and pdist. Points are distinct, so no distance
and no coordinate difference is 0, and no two differences tie (where the gradient is a
subgradient)."""
from __future__ import annotations

from typing import List

import numpy as np

from .. import ops
from .spec import Case, OpSpec, from_pairs

__all__ = ["ROWS"]

_SECTION = "cdist-and-pdist"


def _points(rng: np.random.Generator, shape: tuple) -> np.ndarray:
    """Distinct coordinates 0.125 apart at least, in random order and sign, with a random
    fraction each, so that no two coordinate differences are equal in size (a tie in the
    inf-norm's max is where its gradient is a subgradient; multiples of 0.25 alone tied)."""
    size = int(np.prod(shape))
    spread = rng.permutation(size) + 1.0 + rng.uniform(0.0, 0.5, size)
    return spread.reshape(shape) * rng.choice([-1.0, 1.0], shape) / 4


def _pairs(rng: np.random.Generator) -> List[Case]:
    both = _points(rng, (4 * 3 + 5 * 3,))
    batched = _points(rng, (2 * 3 * 4 + 2 * 5 * 4,))
    return [("(4, 3) (5, 3)", (both[:12].reshape(4, 3), both[12:].reshape(5, 3))),
            ("(2, 1, 3, 4) (2, 5, 4)", (batched[:24].reshape(2, 1, 3, 4),
                                        batched[24:].reshape(2, 5, 4)))]


def _cdist_reference(p: float):
    def reference(a: np.ndarray, b: np.ndarray) -> np.ndarray:
        diff = np.abs(a[..., :, None, :] - b[..., None, :, :])
        if np.isinf(p):
            return diff.max(axis=-1)
        return (diff ** p).sum(axis=-1) ** (1 / p)
    return reference


def _pdist_reference(p: float):
    def reference(x: np.ndarray) -> np.ndarray:
        first, second = np.triu_indices(x.shape[0], 1)
        return (np.abs(x[first] - x[second]) ** p).sum(axis=-1) ** (1 / p)
    return reference


def _rows(rng: np.random.Generator) -> List[Case]:
    return [("(5, 3)", (_points(rng, (5, 3)),)), ("(2, 4)", (_points(rng, (2, 4)),))]


ROWS: List[OpSpec] = from_pairs([
    *[(f"cdist_p{p:g}", lambda a, b, p=p: ops.cdist(a, b, p, "donot_use_mm_for_euclid_dist"),
       _cdist_reference(p), _pairs, _SECTION) for p in (0.5, 1.0, 2.0, 3.0, float("inf"))],
    ("cdist_p2_matrix_product",
     lambda a, b: ops.cdist(a, b, compute_mode="use_mm_for_euclid_dist"),
     _cdist_reference(2.0), _pairs, _SECTION),
    *[(f"pdist_p{p:g}", lambda x, p=p: ops.pdist(x, p), _pdist_reference(p), _rows, _SECTION)
      for p in (1.5, 2.0)],
])
