"""The op-table rows of ops/scatter_reduce.py: each row names an op, the function under test, a
NumPy reference and its input cases (tinyattn/optable/__init__.py assembles the table)."""
from __future__ import annotations

from typing import List

import numpy as np

from .. import ops
from .cases import SCATTER_REDUCE, scatter_reduce_cases
from .spec import OpSpec, from_pairs


__all__ = ["ROWS"]


def _reduce_ref(reduce: str, include_self: bool):
    ufunc = {"sum": np.add, "mean": np.add, "prod": np.multiply, "amax": np.maximum,
             "amin": np.minimum}[reduce]

    def reference(x: np.ndarray, index: np.ndarray, src: np.ndarray) -> np.ndarray:
        cols = np.broadcast_to(np.arange(index.shape[1]), index.shape)
        hit = np.zeros(x.shape, dtype=bool)
        hit[index, cols] = True
        count = np.zeros(x.shape)
        np.add.at(count, (index, cols), 1)
        out = x.copy()
        if not include_self:
            out[hit] = {"sum": 0, "mean": 0, "prod": 1, "amax": -np.inf, "amin": np.inf}[reduce]
        ufunc.at(out, (index, cols), src)
        if reduce == "mean":
            out = np.where(hit, out / np.maximum(count + include_self, 1), x)
        return out
    return reference


ROWS: List[OpSpec] = from_pairs([
    (f"scatter_reduce_{reduce}{'' if include_self else '_without_self'}",
     lambda x, i, s, r=reduce, inc=include_self: ops.scatter_reduce(x, 0, i, s, r,
                                                                    include_self=inc),
     _reduce_ref(reduce, include_self), scatter_reduce_cases, SCATTER_REDUCE)
    for reduce in ("sum", "prod", "mean", "amax", "amin") for include_self in (True, False)
])
