"""The op-table rows of ops/conv.py: each row names an op, the function under test, a NumPy
reference and its input cases (tinyattn/optable/__init__.py assembles the table).

The references are the definitions written as loops over output positions (and, for the
transposed convolution, over input positions scattering into the output), independent of
the im2col code they check."""
from __future__ import annotations

import itertools
from typing import List, Sequence

import numpy as np

from .. import functional as F
from .cases import normal_cases, normal_inputs
from .spec import OpSpec, from_pairs


__all__ = ["ROWS", "conv_reference", "conv_transpose_reference"]

_SECTION = "convolution"


def conv_reference(x: np.ndarray, w: np.ndarray, b=None, stride: Sequence[int] = (1, 1),
                   padding: Sequence[int] = (0, 0), dilation: Sequence[int] = (1, 1),
                   groups: int = 1) -> np.ndarray:
    """out[n, o, i] = b[o] + sum_{c, k} w[o, c, k] * xpad[n, g(o) * C/G + c, i*s + k*d]."""
    dims = w.ndim - 2
    xpad = np.pad(x, [(0, 0), (0, 0)] + [(p, p) for p in padding])
    kernel = w.shape[2:]
    sizes = [(xpad.shape[2 + i] - dilation[i] * (kernel[i] - 1) - 1) // stride[i] + 1
             for i in range(dims)]
    out = np.zeros((x.shape[0], w.shape[0]) + tuple(sizes))
    per_group_in, per_group_out = w.shape[1], w.shape[0] // groups
    for o in range(w.shape[0]):
        first = (o // per_group_out) * per_group_in
        for i in itertools.product(*(range(s) for s in sizes)):
            window = xpad[(slice(None), slice(first, first + per_group_in)) + tuple(
                slice(i[d] * stride[d], i[d] * stride[d] + dilation[d] * (kernel[d] - 1) + 1,
                      dilation[d]) for d in range(dims))]
            out[(slice(None), o) + i] = (window * w[o]).reshape(x.shape[0], -1).sum(axis=1)
    if b is not None:
        out += b.reshape((-1,) + (1,) * dims)
    return out


def conv_transpose_reference(x: np.ndarray, w: np.ndarray, b=None, stride=(1, 1),
                             padding=(0, 0), output_padding=(0, 0), groups: int = 1,
                             dilation=(1, 1)) -> np.ndarray:
    """Each input element scatters x[n, c, i] * w[c, o, k] to output position i*s + k*d - p."""
    dims = w.ndim - 2
    kernel = w.shape[2:]
    sizes = [(x.shape[2 + d] - 1) * stride[d] + dilation[d] * (kernel[d] - 1) + 1
             + output_padding[d] for d in range(dims)]
    full = np.zeros((x.shape[0], w.shape[1] * groups) + tuple(sizes))
    per_group_in, per_group_out = x.shape[1] // groups, w.shape[1]
    for c in range(x.shape[1]):
        first = (c // per_group_in) * per_group_out
        for i in itertools.product(*(range(n) for n in x.shape[2:])):
            for k in itertools.product(*(range(n) for n in kernel)):
                at = tuple(i[d] * stride[d] + k[d] * dilation[d] for d in range(dims))
                full[(slice(None), slice(first, first + per_group_out)) + at] += \
                    x[(slice(None), c) + i][:, None] * w[(c, slice(None)) + k]
    out = full[(slice(None), slice(None)) + tuple(slice(p, n - p) for p, n in
                                                  zip(padding, sizes))]
    if b is not None:
        out = out + b.reshape((-1,) + (1,) * dims)
    return out


def _unfold_ref(x: np.ndarray) -> np.ndarray:
    """F.unfold(x, (2, 3), padding=1, stride=(1, 2)): each window as a column, channel-major."""
    xpad = np.pad(x, [(0, 0), (0, 0), (1, 1), (1, 1)])
    cols = [xpad[:, :, i:i + 2, j:j + 3].reshape(x.shape[0], -1)
            for i in range(xpad.shape[2] - 1) for j in range(0, xpad.shape[3] - 2, 2)]
    return np.stack(cols, axis=-1)


def _fold_ref(x: np.ndarray) -> np.ndarray:
    """F.fold(x, (4, 5), 2, stride=(1, 2)) on (N, C*4, L): columns added back into windows."""
    n, c = x.shape[0], x.shape[1] // 4
    out = np.zeros((n, c, 4, 5))
    positions = [(i, j) for i in range(3) for j in range(0, 4, 2)]
    for col, (i, j) in enumerate(positions):
        out[:, :, i:i + 2, j:j + 2] += x[:, :, col].reshape(n, c, 2, 2)
    return out


ROWS: List[OpSpec] = from_pairs([
    ("conv2d", lambda x, w, b: F.conv2d(x, w, b, stride=(2, 1), padding=1, dilation=(1, 2)),
     lambda x, w, b: conv_reference(x, w, b, (2, 1), (1, 1), (1, 2)),
     normal_inputs((2, 3, 6, 7), (4, 3, 3, 2), (4,)), _SECTION),
    ("conv2d_groups", lambda x, w: F.conv2d(x, w, groups=2, padding="same"),
     lambda x, w: conv_reference(x, w, None, (1, 1), (1, 1), (1, 1), groups=2),
     normal_inputs((2, 4, 5, 5), (6, 2, 3, 3)), _SECTION),
    ("conv1d", lambda x, w, b: F.conv1d(x, w, b, stride=2, padding=2, dilation=2),
     lambda x, w, b: conv_reference(x, w, b, (2,), (2,), (2,)),
     normal_inputs((2, 3, 9), (4, 3, 3), (4,)), _SECTION),
    ("conv_transpose2d", lambda x, w, b: F.conv_transpose2d(x, w, b, stride=2, padding=1,
                                                            output_padding=(1, 0)),
     lambda x, w, b: conv_transpose_reference(x, w, b, (2, 2), (1, 1), (1, 0)),
     normal_inputs((2, 3, 3, 4), (3, 2, 3, 2), (2,)), "convolution-transpose"),
    ("conv_transpose1d_groups", lambda x, w: F.conv_transpose1d(x, w, stride=3, groups=2,
                                                                dilation=2),
     lambda x, w: conv_transpose_reference(x, w, None, (3,), (0,), (0,), 2, (2,)),
     normal_inputs((2, 4, 4), (4, 2, 3)), "convolution-transpose"),
    ("unfold", lambda x: F.unfold(x, (2, 3), padding=1, stride=(1, 2)), _unfold_ref,
     normal_cases((2, 2, 4, 5)), _SECTION),
    ("fold", lambda x: F.fold(x, (4, 5), 2, stride=(1, 2)), _fold_ref,
     normal_cases((2, 8, 6)), _SECTION),
])
