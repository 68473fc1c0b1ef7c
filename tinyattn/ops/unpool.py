"""Max unpooling: ``F.max_unpool1d/2d/3d``, the partial inverse of max pooling
(docs/derivations.md#max-unpooling).

Given max pooling's output and its ``return_indices=True`` indices (flat positions in each
(N, C) plane), unpooling writes each value back where it came from and zeros elsewhere.
"""
from __future__ import annotations

import math
from typing import Any, Optional, Sequence, Tuple

import numpy as np

from .. import backend
from ..amp.dispatch import cast_args
from ..autograd import Function, name_node
from ..precision import is_floating
from ..tensor import Tensor
from .conv import as_tuple

__all__ = ["max_unpool1d", "max_unpool2d", "max_unpool3d"]


class MaxUnpool(Function):
    """out[n, c, index[n, c, i]] = x[n, c, i]; every other element of out is 0.

    Each output element is one input element or a constant, so the derivative is a gather:
        dx[n, c, i] = g[n, c, index[n, c, i]].
    When an index repeats (overlapping pooling windows share a maximum), the forward writes
    one of the values (torch leaves which one unspecified; here the last) and backward still
    gives every input the gradient at its index, as torch's does. The indices get no
    gradient. Saved: the indices only (torch saves nothing of x).
    """

    def forward(self, x, index, *, out_sizes):
        xp = backend.get_array_module(x)
        n, c = x.shape[:2]
        out = xp.zeros((n, c, math.prod(out_sizes)), dtype=x.dtype)      # (N, C, oD*oH*oW)
        out[xp.arange(n)[:, None, None], xp.arange(c)[None, :, None],
            index.reshape(n, c, -1)] = x.reshape(n, c, -1)     # repeats: the last one stays
        self.save_for_backward(index)
        return out.reshape((n, c) + tuple(out_sizes))

    def backward(self, grad):
        (index,) = self.saved
        xp = backend.get_array_module(grad)
        n, c = grad.shape[:2]
        rows = grad.reshape(n, c, -1)                                      # (N, C, oD*oH*oW)
        dx = xp.take_along_axis(rows, index.reshape(n, c, -1), axis=-1)
        return dx.reshape(index.shape), None


def _output_sizes(op: str, spatial: Sequence[int], kernel: Tuple[int, ...],
                  stride: Tuple[int, ...], padding: Tuple[int, ...],
                  output_size: Any) -> Tuple[int, ...]:
    """torch's rule: (L - 1) stride - 2 padding + kernel, or output_size (its last ``dims``
    entries when it also names N and C), which must lie strictly within one stride of that."""
    dims = len(kernel)
    default = [(n - 1) * s + k - 2 * p for n, s, k, p in zip(spatial, stride, kernel, padding)]
    if output_size is None:
        sizes = default
    else:
        if isinstance(output_size, Tensor):
            output_size = output_size.tolist()
        sizes = list(output_size)
        if len(sizes) == dims + 2:
            sizes = sizes[2:]
        if len(sizes) != dims:
            raise ValueError(f"{op}: output_size should be a sequence containing {dims} or "
                             f"{dims + 2} elements, but it has a length of '{len(sizes)}'")
        for d in range(dims):
            low, high = default[d] - stride[d], default[d] + stride[d]
            if not low < sizes[d] < high:
                raise ValueError(f'{op}: invalid output_size "{list(output_size)}" (dim {d} '
                                 f'must be between {low} and {high})')
    for d, size in enumerate(sizes):
        if size < 0:
            raise ValueError(f"max_unpooling: output_size must contain non-negative spatial "
                             f"dimensions, but got output_size[{d}]={size}")
    return tuple(int(size) for size in sizes)


def _max_unpool(op: str, dims: int, input: Tensor, indices: Tensor,  # noqa: A002
                kernel_size: Any, stride: Any, padding: Any, output_size: Any) -> Tensor:
    if not isinstance(input, Tensor) or not isinstance(indices, Tensor):
        raise TypeError(f"{op}: input and indices must be tensors, got "
                        f"{type(input).__name__} and {type(indices).__name__}")
    kernel = as_tuple(kernel_size, dims, "kernel_size", op)
    stride_t = kernel if stride is None else as_tuple(stride, dims, "stride", op)
    pad_t = as_tuple(padding, dims, "padding", op)
    if input.ndim not in (dims + 1, dims + 2):
        raise RuntimeError(f"{op}: Input to max_unpooling{dims}d should be a {dims + 1}d or "
                           f"{dims + 2}d Tensor (the batch dim optional), but got a tensor "
                           f"with {input.ndim} dimensions.")
    if dims == 3 and any(s <= 0 for s in stride_t):
        raise RuntimeError(f"{op}: strides should be greater than zero, but got stride: "
                           f"{list(stride_t)}")
    if indices.dtype != np.int64:
        raise RuntimeError(f"{op}: elements in indices should be type int64 but got: "
                           f"{indices.dtype}; pass the indices max_pool returned "
                           f"(return_indices=True)")
    if tuple(indices.shape) != tuple(input.shape):
        raise RuntimeError(f"{op}: Expected shape of indices to be same as that of the input "
                           f"tensor ({list(input.shape)}) but got indices tensor with shape: "
                           f"{list(indices.shape)}")
    if not is_floating(input.dtype):
        raise RuntimeError(f"{op}: not implemented for {input.dtype}: torch's kernel takes "
                           f"floating dtypes only; convert the input with .float()")
    batched = input.ndim == dims + 2
    if any(size == 0 for size in input.shape[int(batched):]):
        raise RuntimeError(f"{op}: Expected input to have non-zero size for non-batch "
                           f"dimensions, but got input of shape {list(input.shape)}")
    sizes = _output_sizes(op, input.shape[-dims:], kernel, stride_t, pad_t, output_size)
    # autocast: float32, as torch's CPU list (1-d unpooling runs as torch's max_unpool2d)
    (input,) = cast_args("max_unpool3d" if dims == 3 else "max_unpool2d", input)
    x, index = (input, indices) if batched else (input.unsqueeze(0), indices.unsqueeze(0))
    plane = math.prod(sizes)
    outside = (index._data < 0) | (index._data >= plane)
    if outside.any():               # one host sync, as torch's kernel checks every index
        bad = index._data[outside].reshape(-1)[0]
        raise RuntimeError(f"{op}: Found an invalid max index: {int(bad)} (output volumes "
                           f"are of size {'x'.join(map(str, sizes))})")
    out = MaxUnpool.apply(x, index, out_sizes=sizes)
    # torch's names: max_unpool2d/3d's own node (batched or not); 1-d unpools as 2-d between
    # an unsqueeze and a squeeze
    return name_node(out if batched else out.squeeze(0),
                     "SqueezeBackward1" if dims == 1 else f"MaxUnpool{dims}DBackward0")


def max_unpool1d(input: Tensor, indices: Tensor, kernel_size: Any,  # noqa: A002
                 stride: Any = None, padding: Any = 0,
                 output_size: Optional[Sequence[int]] = None) -> Tensor:
    """``F.max_unpool1d``: (N, C, L) -> (N, C, L_out), L_out = (L - 1) stride - 2 padding +
    kernel_size unless output_size says otherwise."""
    return _max_unpool("max_unpool1d", 1, input, indices, kernel_size, stride, padding,
                       output_size)


def max_unpool2d(input: Tensor, indices: Tensor, kernel_size: Any,  # noqa: A002
                 stride: Any = None, padding: Any = 0,
                 output_size: Optional[Sequence[int]] = None) -> Tensor:
    """``F.max_unpool2d``: (N, C, H, W) or (C, H, W) -> (N, C, H_out, W_out)."""
    return _max_unpool("max_unpool2d", 2, input, indices, kernel_size, stride, padding,
                       output_size)


def max_unpool3d(input: Tensor, indices: Tensor, kernel_size: Any,  # noqa: A002
                 stride: Any = None, padding: Any = 0,
                 output_size: Optional[Sequence[int]] = None) -> Tensor:
    """``F.max_unpool3d``: (N, C, D, H, W) or (C, D, H, W) -> (N, C, D_out, H_out, W_out)."""
    return _max_unpool("max_unpool3d", 3, input, indices, kernel_size, stride, padding,
                       output_size)
