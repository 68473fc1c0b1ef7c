"""The op-table rows of ops/pool.py: each row names an op, the function under test, a NumPy
reference written as loops over windows, and its input cases (without ties, where the max is
not differentiable)."""
from __future__ import annotations

import itertools
from typing import List

import numpy as np

from .. import functional as F
from .cases import distinct_cases, normal_cases
from .spec import OpSpec, from_pairs


__all__ = ["ROWS"]

_SECTION = "pooling"


def _pool_ref(x: np.ndarray, kernel, stride, padding, reduce, fill) -> np.ndarray:
    """Windows of the padded input (floor mode), each reduced by ``reduce``."""
    dims = len(kernel)
    xpad = np.pad(x, [(0, 0), (0, 0)] + [(p, p) for p in padding], constant_values=fill)
    sizes = [(xpad.shape[2 + d] - kernel[d]) // stride[d] + 1 for d in range(dims)]
    out = np.empty(x.shape[:2] + tuple(sizes))
    for i in itertools.product(*(range(s) for s in sizes)):
        box = tuple(slice(i[d] * stride[d], i[d] * stride[d] + kernel[d]) for d in range(dims))
        block = xpad[(slice(None), slice(None)) + box].reshape(x.shape[:2] + (-1,))
        out[(slice(None), slice(None)) + i] = reduce(block)
    return out


def _adaptive_ref(x: np.ndarray, sizes, reduce) -> np.ndarray:
    out = np.empty(x.shape[:2] + tuple(sizes))
    for i in itertools.product(*(range(s) for s in sizes)):
        box = tuple(slice(i[d] * n // o, -(-(i[d] + 1) * n // o))
                    for d, (n, o) in enumerate(zip(x.shape[2:], sizes)))
        out[(slice(None), slice(None)) + i] = reduce(
            x[(slice(None), slice(None)) + box].reshape(x.shape[:2] + (-1,)))
    return out


def _max(block: np.ndarray) -> np.ndarray:
    return block.max(axis=-1)


def _mean(block: np.ndarray) -> np.ndarray:
    return block.mean(axis=-1)


ROWS: List[OpSpec] = from_pairs([
    ("max_pool2d", lambda x: F.max_pool2d(x, 3, stride=2, padding=1),
     lambda x: _pool_ref(x, (3, 3), (2, 2), (1, 1), _max, -np.inf),
     distinct_cases((2, 3, 6, 5)), _SECTION),
    ("max_pool1d", lambda x: F.max_pool1d(x, 2),
     lambda x: _pool_ref(x, (2,), (2,), (0,), _max, -np.inf),
     distinct_cases((2, 3, 7)), _SECTION),
    ("avg_pool2d", lambda x: F.avg_pool2d(x, (2, 3), stride=(2, 1), padding=1),
     lambda x: _pool_ref(x, (2, 3), (2, 1), (1, 1), _mean, 0.0),
     normal_cases((2, 3, 5, 6)), _SECTION),
    ("avg_pool1d", lambda x: F.avg_pool1d(x, 3, stride=2),
     lambda x: _pool_ref(x, (3,), (2,), (0,), _mean, 0.0),
     normal_cases((2, 3, 8)), _SECTION),
    ("adaptive_avg_pool2d", lambda x: F.adaptive_avg_pool2d(x, (3, 2)),
     lambda x: _adaptive_ref(x, (3, 2), _mean), normal_cases((2, 3, 7, 5)), _SECTION),
    ("adaptive_max_pool2d", lambda x: F.adaptive_max_pool2d(x, (3, 2)),
     lambda x: _adaptive_ref(x, (3, 2), _max), distinct_cases((2, 3, 7, 5)), _SECTION),
    ("max_pool3d", lambda x: F.max_pool3d(x, (2, 3, 2), stride=(1, 2, 2), padding=(1, 1, 0)),
     lambda x: _pool_ref(x, (2, 3, 2), (1, 2, 2), (1, 1, 0), _max, -np.inf),
     distinct_cases((2, 2, 3, 5, 4)), _SECTION),
    ("avg_pool3d", lambda x: F.avg_pool3d(x, 2, stride=(1, 2, 1), padding=(0, 1, 1)),
     lambda x: _pool_ref(x, (2, 2, 2), (1, 2, 1), (0, 1, 1), _mean, 0.0),
     normal_cases((2, 2, 3, 4, 5)), _SECTION),
    ("adaptive_avg_pool3d", lambda x: F.adaptive_avg_pool3d(x, (2, 3, 2)),
     lambda x: _adaptive_ref(x, (2, 3, 2), _mean), normal_cases((2, 2, 3, 5, 4)), _SECTION),
    ("adaptive_max_pool3d", lambda x: F.adaptive_max_pool3d(x, (2, 3, 2)),
     lambda x: _adaptive_ref(x, (2, 3, 2), _max), distinct_cases((2, 2, 3, 5, 4)), _SECTION),
])
