"""The op-table rows of ops/pool.py: each row names an op, the function under test, a NumPy
reference written as loops over windows, and its input cases (without ties, where the max is
not differentiable)."""
from __future__ import annotations

import itertools
from typing import List

import numpy as np

from .. import functional as F
from ..tensor import tensor
from .cases import Case, case_pair, distinct_cases, normal_cases, shapes_label
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


def _unpool_cases(shape, out_sizes):
    """x (N, C, *spatial) and distinct int64 indices into each (N, C) plane of out_sizes."""
    def make(rng: np.random.Generator) -> List[Case]:
        plane, count = int(np.prod(out_sizes)), int(np.prod(shape[2:]))
        index = np.stack([rng.permutation(plane)[:count] for _ in range(shape[0] * shape[1])])
        return [case_pair(shapes_label(shape), rng.standard_normal(shape),
                          index.reshape(shape).astype(np.int64))]
    return make


def _unpool_ref(x: np.ndarray, index: np.ndarray, out_sizes) -> np.ndarray:
    n, c = x.shape[:2]
    out = np.zeros((n, c, int(np.prod(out_sizes))))
    for i, j in itertools.product(range(n), range(c)):
        out[i, j, index[i, j].reshape(-1)] = x[i, j].reshape(-1)
    return out.reshape((n, c) + tuple(out_sizes))


_FRACTIONAL_SAMPLES = {2: np.array([[[0.3, 0.7], [0.9, 0.1]], [[0.5, 0.5], [0.05, 0.95]]]),
                       3: np.array([[[0.3, 0.7, 0.2]], [[0.6, 0.1, 0.9]]])}


def _fractional(x, kernel, sizes):
    """F.fractional_max_pool{2,3}d with fixed samples (the windows then are torch's)."""
    samples = _FRACTIONAL_SAMPLES[len(kernel)]
    fn = F.fractional_max_pool2d if len(kernel) == 2 else F.fractional_max_pool3d
    return fn(x, kernel, output_size=sizes, _random_samples=tensor(samples, dtype=x.dtype))


def _fractional_ref(x: np.ndarray, kernel, sizes) -> np.ndarray:
    """Loops over the windows: starts int((i + u) alpha) - int(u alpha), the last at n - k."""
    samples = _FRACTIONAL_SAMPLES[len(kernel)]
    dims = len(kernel)
    out = np.empty(x.shape[:2] + tuple(sizes))
    for b, c in itertools.product(range(x.shape[0]), range(x.shape[1])):
        u = samples[b, c][::-1] if dims == 2 else samples[b, c]     # 2-D: (width, height)
        starts = []
        for d in range(dims):
            n, o, k = x.shape[2 + d], sizes[d], kernel[d]
            alpha = (n - k) / (o - 1) if o > 1 else 0.0
            starts.append([int((i + u[d]) * alpha) - int(u[d] * alpha) for i in range(o - 1)]
                          + [n - k])
        for i in itertools.product(*(range(o) for o in sizes)):
            box = tuple(slice(starts[d][i[d]], starts[d][i[d]] + kernel[d])
                        for d in range(dims))
            out[(b, c) + i] = x[(b, c) + box].max()
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
    ("fractional_max_pool2d", lambda x: _fractional(x, (2, 3), (3, 4)),
     lambda x: _fractional_ref(x, (2, 3), (3, 4)), distinct_cases((2, 2, 6, 7)),
     "fractional-max-pooling"),
    ("fractional_max_pool3d", lambda x: _fractional(x, (2, 2, 1), (2, 3, 3)),
     lambda x: _fractional_ref(x, (2, 2, 1), (2, 3, 3)), distinct_cases((2, 1, 4, 5, 4)),
     "fractional-max-pooling"),
    ("max_unpool1d", lambda x, i: F.max_unpool1d(x, i, 3, stride=2),
     lambda x, i: _unpool_ref(x, i, (9,)), _unpool_cases((2, 3, 4), (9,)), "max-unpooling"),
    ("max_unpool2d", lambda x, i: F.max_unpool2d(x, i, 2),
     lambda x, i: _unpool_ref(x, i, (6, 4)), _unpool_cases((2, 3, 3, 2), (6, 4)),
     "max-unpooling"),
    ("max_unpool3d", lambda x, i: F.max_unpool3d(x, i, 2, output_size=(3, 4, 5)),
     lambda x, i: _unpool_ref(x, i, (3, 4, 5)), _unpool_cases((1, 2, 1, 2, 2), (3, 4, 5)),
     "max-unpooling"),
])
