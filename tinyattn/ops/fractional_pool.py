"""``F.fractional_max_pool2d`` / ``F.fractional_max_pool3d`` (Graham, 2014): max pooling
over windows of size ``kernel_size`` placed at pseudo-random, overlapping positions, so the
output can have any size (``output_size``, or ``output_ratio`` times the input's).

Window starts, per (batch, channel) and per spatial dim, from one sample u in [0, 1) (torch's
rule, whose exact positions a given ``_random_samples`` reproduces): with
alpha = (n - k) / (o - 1), start_i = int((i + u) alpha) - int(u alpha) for i < o - 1 (int
truncating towards 0, as C's cast), and
the last window ends at the input's end (start = n - k). The samples are (N, C, 2) (width
first, then height) or (N, C, 3) (time, height, width), of the input's dtype; drawn uniformly
when not given. The max of each window (the first one at a tie; NaN wins) and its flat index
in the (H * W) or (T * H * W) plane.

A composition: the windows and their argmax are found on the input's values (no gradient),
then the output is ``gather`` of the flattened planes at those indices, so the backward is
gather's (each output's gradient added into its max's place, docs/derivations.md#gather).
"""
from __future__ import annotations

import itertools
from typing import Any, List, Optional, Tuple

import numpy as np

from .. import backend
from ..autograd import keep_versions
from ..tensor import Tensor
from .conv import as_tuple
from .indexing import gather

__all__ = ["fractional_max_pool2d", "fractional_max_pool3d",
           "fractional_max_pool2d_with_indices", "fractional_max_pool3d_with_indices"]

_DIM_NAMES = {2: ("height", "width"), 3: ("time", "height", "width")}


def _starts(sample: float, size: int, out: int, kernel: int) -> np.ndarray:
    """Where each of the ``out`` windows of length ``kernel`` starts along ``size``."""
    starts = np.empty(out, dtype=np.int64)
    if out > 1:
        alpha = (size - kernel) / (out - 1)
        i = np.arange(out - 1, dtype=np.float64)
        starts[:-1] = np.trunc((i + sample) * alpha) - np.trunc(sample * alpha)   # C's casts
    starts[-1] = size - kernel
    return starts


def _fractional(input: Tensor, kernel_size: Any, output_size: Any,  # noqa: A002
                output_ratio: Any, samples: Optional[Tensor], dims: int
                ) -> Tuple[Tensor, Tensor]:
    name = f"fractional_max_pool{dims}d"
    if output_size is None and output_ratio is None:
        raise ValueError(f"{name} requires specifying either an output_size or an "
                         f"output_ratio")
    if input.ndim not in (dims + 1, dims + 2):
        raise RuntimeError(f"{name}(): Expected {dims + 1}D or {dims + 2}D tensor, but got: "
                           f"{list(input.shape)}")
    kernel = as_tuple(kernel_size, dims, "kernel_size", name)
    spatial = tuple(input.shape[-dims:])
    if output_size is None:
        ratio = tuple(output_ratio) if isinstance(output_ratio, (tuple, list)) \
            else (output_ratio,) * dims
        sizes = tuple(int(n * r) for n, r in zip(spatial, ratio))
    else:
        sizes = as_tuple(output_size, dims, "output_size", name)
    batched = input.ndim == dims + 2
    x = input if batched else input.unsqueeze(0)
    n_batch, channels = x.shape[0], x.shape[1]
    label = name if dims == 2 else name + "_out"
    for dim_name, n, o, k in zip(_DIM_NAMES[dims], spatial, sizes, kernel):
        too_large = o + k - 1 > n if dims == 2 else o + k - 1 >= n
        if too_large:
            raise RuntimeError(f"{label}(): pool {dim_name} {k} too large relative to input "
                               f"{dim_name} {n}")
    if samples is None:
        samples = Tensor._wrap(backend.uniform((n_batch, channels, dims), x.device,
                                               x.dtype, None))
    elif samples.dtype != input.dtype:
        raise RuntimeError("Expect _random_samples to have the same dtype as input")
    if samples.ndim != 3:                                         # torch's checks
        raise RuntimeError(f"Expect _random_samples to have 3 dimensions, got {samples.ndim}")
    if samples.shape[0] < n_batch:
        raise RuntimeError("Expect _random_samples.size(0) no less then input batch size.")
    if samples.shape[1] != channels:
        raise RuntimeError("Expect _random_samples.size(1) equals to input channel size.")
    if samples.shape[2] != dims:
        raise RuntimeError(f"Expect _random_samples.size(2) equals to {dims}; got "
                           f"{samples.shape[2]}.")
    u = np.asarray(backend.to_host(samples._data), dtype=np.float64)
    values = np.asarray(backend.to_host(x.detach()._data))
    index = np.empty((n_batch, channels) + sizes, dtype=np.int64)
    offsets = [np.arange(k) for k in kernel]
    for b, c in itertools.product(range(n_batch), range(channels)):
        # the samples' order: (width, height) in 2-D, (time, height, width) in 3-D
        order = (1, 0) if dims == 2 else (0, 1, 2)
        starts: List[np.ndarray] = [_starts(float(u[b, c, order[d]]), spatial[d], sizes[d],
                                            kernel[d]) for d in range(dims)]
        # every window's positions along dim d: starts[d][i] + (0..k_d - 1), shaped so
        # that they broadcast to (*sizes, *kernel), then flat in the plane
        coords: List[np.ndarray] = []
        for d in range(dims):
            along = starts[d][:, None] + offsets[d][None, :]
            coords.append(along.reshape([sizes[d] if i == d else 1 for i in range(dims)]
                                        + [kernel[d] if i == d else 1 for i in range(dims)]))
        flat = np.ravel_multi_index(np.broadcast_arrays(*coords), spatial)
        flat = flat.reshape(sizes + (-1,))
        window = values[b, c].reshape(-1)[flat]
        nan = np.isnan(window) if window.dtype.kind in "fc" else None
        pick = np.argmax(window, axis=-1)
        if nan is not None and nan.any():                 # NaN wins, the first one
            first_nan = np.argmax(nan, axis=-1)
            pick = np.where(nan.any(axis=-1), first_nan, pick)
        index[b, c] = np.take_along_axis(flat, pick[..., None], axis=-1)[..., 0]
    index_t = Tensor._wrap(backend.to_device(index, x.device))
    planes = x.reshape(n_batch, channels, int(np.prod(spatial)))
    picked = gather(planes, 2, index_t.reshape(n_batch, channels, int(np.prod(sizes))))
    if picked.numel() == 0:               # gather hands back a view then; the output is new
        picked = picked.clone()
    keep_versions(picked, input)          # torch's backward keeps the input: a later write
    out = picked.reshape((n_batch, channels) + sizes)          # into it makes backward raise
    if not batched:
        out, index_t = out.squeeze(0), index_t.squeeze(0)
    return out, index_t


def fractional_max_pool2d_with_indices(input: Tensor, kernel_size: Any,  # noqa: A002
                                       output_size: Any = None, output_ratio: Any = None,
                                       return_indices: bool = False,
                                       _random_samples: Optional[Tensor] = None
                                       ) -> Tuple[Tensor, Tensor]:
    return _fractional(input, kernel_size, output_size, output_ratio, _random_samples, 2)


def fractional_max_pool3d_with_indices(input: Tensor, kernel_size: Any,  # noqa: A002
                                       output_size: Any = None, output_ratio: Any = None,
                                       return_indices: bool = False,
                                       _random_samples: Optional[Tensor] = None
                                       ) -> Tuple[Tensor, Tensor]:
    return _fractional(input, kernel_size, output_size, output_ratio, _random_samples, 3)


def fractional_max_pool2d(input: Tensor, kernel_size: Any, output_size: Any = None,  # noqa: A002
                          output_ratio: Any = None, return_indices: bool = False,
                          _random_samples: Optional[Tensor] = None) -> Any:
    """``F.fractional_max_pool2d``: (N, C, H, W) or (C, H, W) -> output_size (see above);
    with ``return_indices`` also the flat index of each max in its (H * W) plane."""
    out, index = _fractional(input, kernel_size, output_size, output_ratio, _random_samples, 2)
    return (out, index) if return_indices else out


def fractional_max_pool3d(input: Tensor, kernel_size: Any, output_size: Any = None,  # noqa: A002
                          output_ratio: Any = None, return_indices: bool = False,
                          _random_samples: Optional[Tensor] = None) -> Any:
    """``F.fractional_max_pool3d``: (N, C, T, H, W) or (C, T, H, W) -> output_size."""
    out, index = _fractional(input, kernel_size, output_size, output_ratio, _random_samples, 3)
    return (out, index) if return_indices else out
