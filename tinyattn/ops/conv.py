"""Convolution as one matrix product over unfolded windows (docs/derivations.md#convolution).

PyTorch's ``F.conv1d/2d/3d``, ``F.conv_transpose1d/2d/3d``, ``F.unfold`` and ``F.fold``.
Shapes, in fixed letters: N batch, C input channels, O output channels, G groups,
K = the product of the kernel sizes, L = the product of the output's spatial sizes.

A convolution (a cross-correlation, as in PyTorch: the kernel is not flipped) reads, for each
output position, a window of the zero-padded input and takes its dot product with the kernel.
``im2col`` copies every window into a row of a matrix, so the whole layer is ONE BLAS call,
(N*L, C*K) @ (C*K, O), per group. Its backward is the same product transposed, and the way
back from rows to the image, ``col2im``, adds each row into the window it came from: the
transpose of im2col. A transposed convolution is exactly that backward run forward.
"""
from __future__ import annotations

import itertools
import math
from typing import Any, Optional, Sequence, Tuple

import numpy as np

from .. import backend
from ..autograd import Function
from ..precision import is_floating, is_low_precision
from ..tensor import Tensor

__all__ = ["conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d",
           "conv_transpose3d", "unfold", "fold", "im2col_windows", "col2im", "col2im_columns",
           "as_tuple"]

Pairs = Tuple[Tuple[int, int], ...]


# --- the two helpers every op of this file is made of ----------------------------------------

def im2col_windows(x: Any, out_sizes: Sequence[int], kernel: Sequence[int],
                   stride: Sequence[int], dilation: Sequence[int]) -> Any:
    """(N, C, *padded) -> a read-only VIEW (N, C, *out, *kernel): element [n, c, i.., k..] is
    x[n, c, i * stride + k * dilation] (per spatial dim). No copy: strides only."""
    xp = backend.get_array_module(x)
    dims = len(kernel)
    spatial = x.strides[2:]
    shape = tuple(x.shape[:2]) + tuple(out_sizes) + tuple(kernel)
    strides = (tuple(x.strides[:2]) + tuple(spatial[i] * stride[i] for i in range(dims))
               + tuple(spatial[i] * dilation[i] for i in range(dims)))
    return xp.lib.stride_tricks.as_strided(x, shape, strides, writeable=False)


def col2im(cols: Any, padded_shape: Sequence[int], kernel: Sequence[int],
           stride: Sequence[int], dilation: Sequence[int]) -> Any:
    """The transpose of ``im2col_windows``: cols (N, C, *out, *kernel) -> (N, C, *padded),
    each value added into the position it was read from (overlapping windows add up). One
    strided slice-add per kernel offset, so K vectorised adds whatever the image size."""
    xp = backend.get_array_module(cols)
    dims = len(kernel)
    out_sizes = cols.shape[2:2 + dims]
    image = xp.zeros(tuple(padded_shape), dtype=cols.dtype)
    for offset in itertools.product(*(range(k) for k in kernel)):
        where = tuple(slice(offset[i] * dilation[i],
                            offset[i] * dilation[i] + stride[i] * (out_sizes[i] - 1) + 1,
                            stride[i]) for i in range(dims))
        image[(slice(None), slice(None)) + where] += cols[(Ellipsis,) + offset]
    return image


def _pad_zeros(x: Any, padding: Pairs) -> Any:
    if not any(before or after for before, after in padding):
        return x
    xp = backend.get_array_module(x)
    return xp.pad(x, ((0, 0), (0, 0)) + tuple(padding))


def _crop(x: Any, padding: Pairs) -> Any:
    return x[(slice(None), slice(None)) + tuple(slice(before, x.shape[2 + i] - after)
                                                for i, (before, after) in enumerate(padding))]


def _compute_dtype(dtype: Any) -> Any:
    """float16 and bfloat16 are computed in float32 (as torch's CPU kernels accumulate);
    integers in int64."""
    if not is_floating(dtype):
        return np.int64
    return np.float32 if np.dtype(dtype).itemsize < 4 else dtype


# --- convolution ------------------------------------------------------------------------------

# A float32 convolution with at most this many products (N * O * L * C/G * K) is computed in
# float64 and rounded once: torch's oneDNN kernel adds the products in its own order (which
# depends on the shapes and the CPU), so neither BLAS's order nor any other matches it bit for
# bit; rounded once, tinyattn's result is the nearest float32 to the exact value, so it differs
# from torch's by torch's own error only (op_db's conv3d samples: docs/pytorch.md). Larger
# ones stay in float32, where the float64 product would cost time (as accurate as torch's).
WIDE_CONV_PRODUCTS = 1 << 22


def _products(x: Any, weight: Any, stride, padding: Pairs, dilation) -> int:
    """N * O * L * C/G * K: the multiplications of the forward pass."""
    kernel = weight.shape[2:]
    padded = [n + lo + hi for n, (lo, hi) in zip(x.shape[2:], padding)]
    out = _out_sizes(padded, kernel, stride, dilation)
    return x.shape[0] * math.prod(out) * math.prod(weight.shape)


class Convolution(Function):
    """out[n, o, i] = b[o] + sum_{c in o's group, k} w[o, c, k] * xpad[n, c, i*s + k*d]
    (docs/derivations.md#convolution).

    With the columns X = im2col(xpad) (C*K, N*L) and W (O, C*K), per group: out = W @ X + b,
        dW = G @ X^T                (O, N*L) @ (N*L, C*K)
        dX = W^T @ G, then col2im   (C*K, O) @ (O, N*L) -> (N, C, *padded), padding cropped
        db = sum of G over N and L.
    Read per pixel, dx[n, c, j] = sum over the (o, i, k) with i*s + k*d = j of g[n, o, i]
    w[o, c, k]: a correlation of the stride-dilated g with the FLIPPED kernel.
    """

    def forward(self, x, weight, *bias, stride, padding: Pairs, dilation, groups: int):
        self.save_for_backward(x, weight, stride, padding, dilation, groups, len(bias))
        dtype = x.dtype
        work = _compute_dtype(dtype)
        if dtype == np.float32 and _products(x, weight, stride, padding, dilation) \
                <= WIDE_CONV_PRODUCTS:
            work = np.float64
        x, weight = x.astype(work, copy=False), weight.astype(work, copy=False)
        xpad = _pad_zeros(x, padding)
        kernel = weight.shape[2:]
        out_sizes = _out_sizes(xpad.shape[2:], kernel, stride, dilation)
        cols = _columns(im2col_windows(xpad, out_sizes, kernel, stride, dilation), groups)
        w_rows = weight.reshape(groups, weight.shape[0] // groups, -1)   # (G, O/G, C/G*K)
        out = _batch_first(w_rows @ cols, x.shape[0], out_sizes)  # (G, O/G, N*L) -> (N, O, ..)
        if bias:
            out += bias[0].astype(work, copy=False).reshape((-1,) + (1,) * len(kernel))
        return out.astype(dtype, copy=False)

    def backward(self, grad):
        x, weight, stride, padding, dilation, groups, n_bias = self.saved  # torch's saves
        dtype = x.dtype
        work = _compute_dtype(dtype)
        xpad = _pad_zeros(x.astype(work, copy=False), padding)
        weight = weight.astype(work, copy=False)
        kernel, out_sizes = weight.shape[2:], grad.shape[2:]
        g_rows = _channels_first(grad.astype(work, copy=False), groups)  # (G, O/G, N*L)
        w_rows = weight.reshape(groups, weight.shape[0] // groups, -1)   # (G, O/G, C/G*K)
        dx = dw = db = None
        if self.needs_input_grad[0]:
            d_cols = w_rows.swapaxes(1, 2) @ g_rows     # (G, C/G*K, O/G) @ (G, O/G, N*L)
            dx = _crop(col2im_columns(d_cols, xpad.shape, out_sizes, kernel, stride,
                                      dilation), padding).astype(dtype, copy=False)
        if self.needs_input_grad[1]:
            cols = _columns(im2col_windows(xpad, out_sizes, kernel, stride, dilation), groups)
            dw = g_rows @ cols.swapaxes(1, 2)           # (G, O/G, N*L) @ (G, N*L, C/G*K)
            dw = dw.reshape(weight.shape).astype(dtype, copy=False)
        if n_bias and self.needs_input_grad[2]:
            db = grad.sum(axis=(0,) + tuple(range(2, grad.ndim)), dtype=work)
            db = db.astype(dtype, copy=False)
        return (dx, dw, db) if n_bias else (dx, dw)


def _columns(windows: Any, groups: int) -> Any:
    """(N, C, *out, *kernel) windows -> (G, C/G*K, N*L) columns, one per output position.
    Channel-and-offset major (C, *kernel, N, *out): the copy reads image rows with the
    stride of the convolution, contiguously when it is 1."""
    n, c = windows.shape[:2]
    dims = (windows.ndim - 2) // 2
    order = (1,) + tuple(range(2 + dims, 2 + 2 * dims)) + (0,) + tuple(range(2, 2 + dims))
    return windows.transpose(order).reshape(
        groups, (c // groups) * math.prod(windows.shape[2 + dims:]),
        n * math.prod(windows.shape[2:2 + dims]))


def col2im_columns(cols: Any, padded_shape: Sequence[int], out_sizes: Sequence[int],
                   kernel: Sequence[int], stride: Sequence[int], dilation: Sequence[int]) -> Any:
    """The transpose of ``_columns``: (G, C/G*K, N*L) -> (N, C, *padded), each column's
    values added into the window they were read from. One strided slice-add per kernel
    offset, each a contiguous (C, N, *out) block."""
    xp = backend.get_array_module(cols)
    n, c = padded_shape[:2]
    dims = len(kernel)
    blocks = cols.reshape((c,) + tuple(kernel) + (n,) + tuple(out_sizes))
    image = xp.zeros(tuple(padded_shape), dtype=cols.dtype)
    channels_first = image.swapaxes(0, 1)                    # (C, N, *padded), a view
    for offset in itertools.product(*(range(k) for k in kernel)):
        where = tuple(slice(offset[i] * dilation[i],
                            offset[i] * dilation[i] + stride[i] * (out_sizes[i] - 1) + 1,
                            stride[i]) for i in range(dims))
        channels_first[(slice(None), slice(None)) + where] += blocks[(slice(None),) + offset]
    return image


def _channels_first(a: Any, groups: int) -> Any:
    """(N, C, *spatial) -> (G, C/G, N*L)."""
    n, c = a.shape[:2]
    return a.swapaxes(0, 1).reshape(groups, c // groups, n * math.prod(a.shape[2:]))


def _batch_first(rows: Any, n: int, sizes: Sequence[int]) -> Any:
    """(G, C/G, N*L) -> (N, C, *sizes): the inverse of ``_channels_first``."""
    xp = backend.get_array_module(rows)
    c = rows.shape[0] * rows.shape[1]
    return xp.ascontiguousarray(rows.reshape((c, n) + tuple(sizes)).swapaxes(0, 1))


def _out_sizes(padded: Sequence[int], kernel: Sequence[int], stride: Sequence[int],
               dilation: Sequence[int]) -> Tuple[int, ...]:
    return tuple((p - d * (k - 1) - 1) // s + 1
                 for p, k, s, d in zip(padded, kernel, stride, dilation))


# --- transposed convolution -------------------------------------------------------------------

class ConvolutionTranspose(Function):
    """The transpose (adjoint) of Convolution's map x -> out, with w (C, O/G, *kernel):
        full = col2im(W^T @ X),  out = full cropped by ``padding``
    (docs/derivations.md#convolution-transpose). Its backward is convolution's forward: with
    Gcols = im2col(g padded back to ``full``) (O/G*K, N*L_in) per group,
        dX = W @ Gcols         (C/G, O/G*K) @ (O/G*K, N*L_in)
        dW = X @ Gcols^T       (C/G, N*L_in) @ (N*L_in, O/G*K)
        db = sum of g over N and the output's positions.
    """

    def forward(self, x, weight, *bias, stride, padding: Pairs, dilation, groups: int,
                output_sizes):
        self.save_for_backward(x, weight, stride, padding, dilation, groups, len(bias))
        dtype = x.dtype
        work = _compute_dtype(dtype)
        x, weight = x.astype(work, copy=False), weight.astype(work, copy=False)
        n, c = x.shape[:2]
        kernel = weight.shape[2:]
        out_channels = weight.shape[1] * groups
        x_rows = _channels_first(x, groups)                             # (G, C/G, N*L_in)
        w_rows = weight.reshape(groups, c // groups, -1)                # (G, C/G, O/G*K)
        cols = w_rows.swapaxes(1, 2) @ x_rows                           # (G, O/G*K, N*L_in)
        full = tuple(o + before + after for o, (before, after) in zip(output_sizes, padding))
        out = _crop(col2im_columns(cols, (n, out_channels) + full, x.shape[2:], kernel,
                                   stride, dilation), padding)
        if bias:
            out = out + bias[0].astype(work, copy=False).reshape((-1,) + (1,) * len(kernel))
        return out.astype(dtype, copy=False)

    def backward(self, grad):
        x, weight, stride, padding, dilation, groups, n_bias = self.saved  # torch's saves
        dtype = x.dtype
        work = _compute_dtype(dtype)
        x, weight = x.astype(work, copy=False), weight.astype(work, copy=False)
        kernel = weight.shape[2:]
        gpad = _pad_zeros(grad.astype(work, copy=False), padding)
        g_cols = _columns(im2col_windows(gpad, x.shape[2:], kernel, stride, dilation),
                          groups)                                       # (G, O/G*K, N*L_in)
        w_rows = weight.reshape(groups, x.shape[1] // groups, -1)       # (G, C/G, O/G*K)
        dx = dw = db = None
        if self.needs_input_grad[0]:
            dx = _batch_first(w_rows @ g_cols, x.shape[0], x.shape[2:]).astype(dtype,
                                                                               copy=False)
        if self.needs_input_grad[1]:
            dw = (_channels_first(x, groups) @ g_cols.swapaxes(1, 2)).reshape(weight.shape)
            dw = dw.astype(dtype, copy=False)
        if n_bias and self.needs_input_grad[2]:
            db = grad.sum(axis=(0,) + tuple(range(2, grad.ndim)), dtype=work)
            db = db.astype(dtype, copy=False)
        return (dx, dw, db) if n_bias else (dx, dw)


# --- unfold and fold --------------------------------------------------------------------------

class Unfold(Function):
    """out[n, c*K + k, l] = xpad[n, c, window l, offset k]: im2col itself. Each output is one
    input element (or a zero of the padding), so dx = col2im(g), padding cropped."""

    def forward(self, x, *, kernel, stride, padding: Pairs, dilation):
        xpad = _pad_zeros(x, padding)
        out_sizes = _out_sizes(xpad.shape[2:], kernel, stride, dilation)
        windows = im2col_windows(xpad, out_sizes, kernel, stride, dilation)
        dims = len(kernel)
        order = (0, 1) + tuple(range(2 + dims, 2 + 2 * dims)) + tuple(range(2, 2 + dims))
        self.save_for_backward(xpad.shape, kernel, stride, padding, dilation, out_sizes)
        out = windows.transpose(order).reshape(x.shape[0], x.shape[1] * math.prod(kernel),
                                               math.prod(out_sizes))
        return _writable(out)

    def backward(self, grad):
        padded, kernel, stride, padding, dilation, out_sizes = self.saved
        dims = len(kernel)
        cols = grad.reshape(tuple(padded[:2]) + tuple(kernel) + tuple(out_sizes))
        order = (0, 1) + tuple(range(2 + dims, 2 + 2 * dims)) + tuple(range(2, 2 + dims))
        return _crop(col2im(cols.transpose(order), padded, kernel, stride, dilation), padding)


class Fold(Function):
    """out = col2im(x) cropped: the adjoint of Unfold, so dx = Unfold's forward of g."""

    def forward(self, x, *, output_size, kernel, stride, padding: Pairs, dilation):
        dims = len(kernel)
        padded = tuple(o + b + a for o, (b, a) in zip(output_size, padding))
        out_sizes = _out_sizes(padded, kernel, stride, dilation)
        n, c = x.shape[0], x.shape[1] // math.prod(kernel)
        cols = x.reshape((n, c) + tuple(kernel) + tuple(out_sizes))
        order = (0, 1) + tuple(range(2 + dims, 2 + 2 * dims)) + tuple(range(2, 2 + dims))
        self.save_for_backward(kernel, stride, padding, dilation, out_sizes, x.shape)
        return _crop(col2im(cols.transpose(order), (n, c) + padded, kernel, stride, dilation),
                     padding)

    def backward(self, grad):
        kernel, stride, padding, dilation, out_sizes, shape = self.saved
        dims = len(kernel)
        windows = im2col_windows(_pad_zeros(grad, padding), out_sizes, kernel, stride,
                                 dilation)
        order = (0, 1) + tuple(range(2 + dims, 2 + 2 * dims)) + tuple(range(2, 2 + dims))
        return _writable(windows.transpose(order).reshape(shape))


def _writable(a: Any) -> Any:
    """A reshape of the read-only window view is a copy, except in degenerate cases (an
    empty batch, a 1x1 kernel): copy those, so nobody writes through the view."""
    return a if getattr(a.flags, "writeable", True) else a.copy()


# --- argument checks, torch's rules and messages -----------------------------------------------

def as_tuple(value: Any, dims: int, name: str, op: str) -> Tuple[int, ...]:
    """An int or a sequence of ``dims`` ints (or of one, repeated), as torch expands them."""
    if isinstance(value, Tensor):
        value = value.tolist()
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        return (int(value),) * dims
    if isinstance(value, (tuple, list)) and all(
            isinstance(v, (int, np.integer)) and not isinstance(v, bool) for v in value):
        if len(value) == 1:
            return (int(value[0]),) * dims
        if len(value) == dims:
            return tuple(int(v) for v in value)
    raise RuntimeError(f"{op}: expected {name} to be a single integer value or a list of "
                       f"{dims} values to match the convolution dimensions, but got "
                       f"{name}={value!r}")


def _check_tensors(op: str, x: Tensor, weight: Tensor, bias: Optional[Tensor],
                   dims: int) -> None:
    if not isinstance(x, Tensor) or not isinstance(weight, Tensor):
        raise TypeError(f"{op}: input and weight must be tensors, got "
                        f"{type(x).__name__} and {type(weight).__name__}")
    if weight.ndim != dims + 2:
        raise RuntimeError(f"{op}: expected a {dims + 2}-D weight (out_channels, "
                           f"in_channels / groups, *kernel_size), got shape {weight.shape}")
    if x.ndim not in (dims + 1, dims + 2):
        raise RuntimeError(f"Expected {dims + 1}D (unbatched) or {dims + 2}D (batched) input "
                           f"to {op}, but got input of size: {list(x.shape)}")
    for name, t in (("weight", weight), ("bias", bias)):
        if t is not None and t.dtype != x.dtype:
            raise RuntimeError(f"{op}: Input type ({x.dtype}) and {name} type ({t.dtype}) "
                               f"should be the same; convert one with .to(dtype)")
    if x.dtype == np.bool_ or not (is_floating(x.dtype) or x.dtype.kind in "iu"):
        raise RuntimeError(f"{op}: not implemented for {x.dtype} inputs; convert with "
                           f".float()")
    if bias is not None and (bias.ndim != 1 or bias.shape[0] != weight.shape[0]):
        raise RuntimeError(f"{op}: Given weight of size {list(weight.shape)}, expected bias "
                           f"to be 1-dimensional with {weight.shape[0]} elements, but "
                           f"got bias of size {list(bias.shape)} instead")


def _check_options(op: str, stride, dilation, groups: int) -> None:
    if isinstance(groups, bool) or not isinstance(groups, (int, np.integer)) or groups <= 0:
        raise RuntimeError(f"{op}: non-positive groups is not supported (got groups={groups})")
    if any(s <= 0 for s in stride):
        raise RuntimeError(f"{op}: non-positive stride is not supported (got stride={stride})")
    if any(d <= 0 for d in dilation):
        raise RuntimeError(f"{op}: dilation should be greater than zero (got "
                           f"dilation={dilation})")


def _batched(x: Tensor, dims: int) -> Tuple[Tensor, bool]:
    return (x.unsqueeze(0), True) if x.ndim == dims + 1 else (x, False)


def _padding_pairs(op: str, padding: Any, kernel: Sequence[int], stride: Sequence[int],
                   dilation: Sequence[int]) -> Pairs:
    """int, tuple, "valid" (none) or "same" (the output as long as the input, stride 1; an
    odd total split with the extra element AFTER, as torch does)."""
    dims = len(kernel)
    if isinstance(padding, str):
        if padding == "valid":
            return ((0, 0),) * dims
        if padding != "same":
            raise RuntimeError(f"Invalid padding string {padding!r} for {op}; expected 'same', "
                               f"'valid', an int or a tuple of ints")
        if any(s != 1 for s in stride):
            raise RuntimeError(f"{op}: padding='same' is not supported for strided "
                               f"convolutions (got stride={stride}); pad explicitly instead")
        totals = [d * (k - 1) for k, d in zip(kernel, dilation)]
        return tuple((t // 2, t - t // 2) for t in totals)
    amounts = as_tuple(padding, dims, "padding", op)
    if any(p < 0 for p in amounts):
        raise RuntimeError(f"{op}: negative padding is not supported (got padding={amounts})")
    return tuple((p, p) for p in amounts)


def _conv(op: str, dims: int, input: Tensor, weight: Tensor,  # noqa: A002 - torch's name
          bias: Optional[Tensor], stride: Any, padding: Any, dilation: Any,
          groups: int) -> Tensor:
    _check_tensors(op, input, weight, bias, dims)
    stride_t = as_tuple(stride, dims, "stride", op)
    dilation_t = as_tuple(dilation, dims, "dilation", op)
    _check_options(op, stride_t, dilation_t, groups)
    kernel = weight.shape[2:]
    pairs = _padding_pairs(op, padding, kernel, stride_t, dilation_t)
    x, added = _batched(input, dims)
    channels = x.shape[1]
    if weight.shape[0] % groups:
        raise RuntimeError(f"{op}: Given groups={groups}, expected weight to be divisible by "
                           f"{groups} at dimension 0, but got weight of size "
                           f"{list(weight.shape)} instead")
    if channels != weight.shape[1] * groups:
        raise RuntimeError(f"{op}: Given groups={groups}, weight of size {list(weight.shape)}, "
                           f"expected input{list(x.shape)} to have {weight.shape[1] * groups} "
                           f"channels, but got {channels} channels instead")
    padded = tuple(n + b + a for n, (b, a) in zip(x.shape[2:], pairs))
    reach = tuple(d * (k - 1) + 1 for k, d in zip(kernel, dilation_t))
    if any(p < r for p, r in zip(padded, reach)):
        raise RuntimeError(f"{op}: Calculated padded input size per channel: "
                           f"({' x '.join(map(str, padded))}). Kernel size: "
                           f"({' x '.join(map(str, reach))}). Kernel size can't be greater "
                           f"than actual input size")
    if any(b != a for b, a in pairs):
        # torch's padding="same" with an odd total pads the extra element after with F.pad
        # first and convolves the padded copy with even padding; that copy is what its
        # backward keeps, so writing to the input after the op leaves the backward valid
        from .pad import pad  # noqa: PLC0415 - pad.py is a sibling op module
        x = pad(x, [n for b, a in reversed(pairs) for n in (0, a - b)])
        pairs = tuple((b, b) for b, _ in pairs)
    extra = (bias,) if bias is not None else ()
    out = Convolution.apply(x, weight, *extra, stride=stride_t, padding=pairs,
                            dilation=dilation_t, groups=int(groups))
    return out.squeeze(0) if added else out


def conv1d(input: Tensor, weight: Tensor, bias: Optional[Tensor] = None,  # noqa: A002
           stride: Any = 1, padding: Any = 0, dilation: Any = 1, groups: int = 1) -> Tensor:
    """``F.conv1d``: input (N, C, L) or (C, L), weight (O, C/groups, k), bias (O,)."""
    return _conv("conv1d", 1, input, weight, bias, stride, padding, dilation, groups)


def conv2d(input: Tensor, weight: Tensor, bias: Optional[Tensor] = None,  # noqa: A002
           stride: Any = 1, padding: Any = 0, dilation: Any = 1, groups: int = 1) -> Tensor:
    """``F.conv2d``: input (N, C, H, W) or (C, H, W), weight (O, C/groups, kh, kw), bias (O,).
    ``padding`` is an int, a pair, "valid" (none) or "same" (stride 1 only)."""
    return _conv("conv2d", 2, input, weight, bias, stride, padding, dilation, groups)


def conv3d(input: Tensor, weight: Tensor, bias: Optional[Tensor] = None,  # noqa: A002
           stride: Any = 1, padding: Any = 0, dilation: Any = 1, groups: int = 1) -> Tensor:
    """``F.conv3d``: input (N, C, D, H, W) or (C, D, H, W), weight (O, C/groups, kd, kh, kw)."""
    return _conv("conv3d", 3, input, weight, bias, stride, padding, dilation, groups)


def _conv_transpose(op: str, dims: int, input: Tensor, weight: Tensor,  # noqa: A002
                    bias: Optional[Tensor], stride: Any, padding: Any, output_padding: Any,
                    groups: int, dilation: Any, output_size: Any = None) -> Tensor:
    _check_tensors(op, input, weight, None, dims)
    stride_t = as_tuple(stride, dims, "stride", op)
    dilation_t = as_tuple(dilation, dims, "dilation", op)
    _check_options(op, stride_t, dilation_t, groups)
    if isinstance(padding, str):
        raise TypeError(f"{op}: padding must be an int or a tuple of ints; the strings "
                        f"'same' and 'valid' are for convolutions, not transposed ones")
    pad_t = as_tuple(padding, dims, "padding", op)
    if any(p < 0 for p in pad_t):
        raise RuntimeError(f"{op}: negative padding is not supported (got padding={pad_t})")
    extra_t = as_tuple(output_padding, dims, "output_padding", op)
    if any(e < 0 or (e >= s and e >= d) for e, s, d in zip(extra_t, stride_t, dilation_t)):
        raise RuntimeError(f"{op}: output padding must be smaller than either stride or "
                           f"dilation, but got output_padding={extra_t}, stride={stride_t}, "
                           f"dilation={dilation_t}")
    x, added = _batched(input, dims)
    kernel = weight.shape[2:]
    if x.shape[1] != weight.shape[0]:
        raise RuntimeError(f"{op}: Given transposed=1, weight of size {list(weight.shape)}, "
                           f"expected input{list(x.shape)} to have {weight.shape[0]} channels, "
                           f"but got {x.shape[1]} channels instead")
    if weight.shape[0] % groups:
        raise RuntimeError(f"{op}: Given groups={groups}, expected weight to be divisible by "
                           f"{groups} at dimension 0, but got weight of size "
                           f"{list(weight.shape)} instead")
    out_channels = weight.shape[1] * groups
    if bias is not None:
        if bias.dtype != x.dtype:
            raise RuntimeError(f"{op}: Input type ({x.dtype}) and bias type ({bias.dtype}) "
                               f"should be the same")
        if bias.shape != (out_channels,):
            raise RuntimeError(f"{op}: Given transposed=1, weight of size "
                               f"{list(weight.shape)}, expected bias to be 1-dimensional with "
                               f"{out_channels} elements, but got bias of size "
                               f"{list(bias.shape)} instead")
    sizes = tuple((n - 1) * s - 2 * p + d * (k - 1) + e + 1 for n, s, p, d, k, e in
                  zip(x.shape[2:], stride_t, pad_t, dilation_t, kernel, extra_t))
    if any(size <= 0 for size in sizes):
        raise RuntimeError(f"{op}: the output would have size {sizes} for input "
                           f"{list(x.shape)}, weight {list(weight.shape)} and padding {pad_t}; "
                           f"every size must be positive (use less padding)")
    extra = (bias,) if bias is not None else ()
    out = ConvolutionTranspose.apply(x, weight, *extra, stride=stride_t,
                                     padding=tuple((p, p) for p in pad_t),
                                     dilation=dilation_t, groups=int(groups),
                                     output_sizes=sizes)
    if is_low_precision(x.dtype) and x.dtype == weight.dtype:
        # the values as torch's half kernel rounds them; the gradients (the op is linear in
        # each input) do not depend on them, so the float32 computation's graph stays right
        out._data = _half_transposed_values(x._data, weight._data,
                                            None if bias is None else bias._data, stride_t,
                                            pad_t, dilation_t, int(groups), sizes)
    return out.squeeze(0) if added else out


def _half_transposed_values(x: Any, w: Any, b: Any, stride: Tuple[int, ...],
                            padding: Tuple[int, ...], dilation: Tuple[int, ...], groups: int,
                            sizes: Tuple[int, ...]) -> Any:
    """A float16/bfloat16 transposed convolution as torch's CPU kernel rounds it (measured
    bit for bit against torch 2.13 on op_db's samples): per group, the columns
    w^T x (every input position times every kernel offset) in float32, rounded to the half
    dtype; then col2im: for each kernel offset in order, the columns added into the output
    positions they land on, each sum rounded to the half dtype; then the bias, rounded."""
    xp = backend.get_array_module(x)
    half, f32 = x.dtype, np.float32
    dims = len(sizes)
    n, cin, lengths = x.shape[0], x.shape[1], x.shape[2:]
    kernel = w.shape[2:]
    per_group_in, per_group_out = cin // groups, w.shape[1]
    out = xp.zeros((n, per_group_out * groups) + tuple(sizes), dtype=f32)
    for g in range(groups):
        wg = w[g * per_group_in:(g + 1) * per_group_in].reshape(per_group_in, -1).astype(f32)
        xg = x[:, g * per_group_in:(g + 1) * per_group_in].reshape(n, per_group_in, -1)
        cols = xp.matmul(wg.T, xg.astype(f32)).astype(half).astype(f32)
        cols = cols.reshape((n, per_group_out) + tuple(kernel) + tuple(lengths))
        target = out[:, g * per_group_out:(g + 1) * per_group_out]
        for offset in itertools.product(*(range(k) for k in kernel)):
            source, dest = [], []
            for i in range(dims):
                first = offset[i] * dilation[i] - padding[i]      # where input index 0 lands
                lo = max(0, -(-(-first) // stride[i]))            # first index landing >= 0
                hi = min(lengths[i], (sizes[i] - 1 - first) // stride[i] + 1)
                if hi <= lo:
                    break
                source.append(slice(lo, hi))
                dest.append(slice(first + lo * stride[i], first + (hi - 1) * stride[i] + 1,
                                  stride[i]))
            else:
                place = (slice(None), slice(None)) + tuple(dest)
                piece = cols[(slice(None), slice(None)) + tuple(offset) + tuple(source)]
                target[place] = (target[place] + piece).astype(half).astype(f32)
    if b is not None:
        out = out + b.astype(f32).reshape((1, -1) + (1,) * dims)
    return out.astype(half)


def conv_transpose1d(input: Tensor, weight: Tensor,  # noqa: A002 - torch's name
                     bias: Optional[Tensor] = None, stride: Any = 1, padding: Any = 0,
                     output_padding: Any = 0, groups: int = 1, dilation: Any = 1) -> Tensor:
    """``F.conv_transpose1d``: input (N, C, L), weight (C, O/groups, k); out length
    (L - 1) * stride - 2 * padding + dilation * (k - 1) + output_padding + 1."""
    return _conv_transpose("conv_transpose1d", 1, input, weight, bias, stride, padding,
                           output_padding, groups, dilation)


def conv_transpose2d(input: Tensor, weight: Tensor,  # noqa: A002 - torch's name
                     bias: Optional[Tensor] = None, stride: Any = 1, padding: Any = 0,
                     output_padding: Any = 0, groups: int = 1, dilation: Any = 1) -> Tensor:
    """``F.conv_transpose2d``: input (N, C, H, W), weight (C, O/groups, kh, kw)."""
    return _conv_transpose("conv_transpose2d", 2, input, weight, bias, stride, padding,
                           output_padding, groups, dilation)


def conv_transpose3d(input: Tensor, weight: Tensor,  # noqa: A002 - torch's name
                     bias: Optional[Tensor] = None, stride: Any = 1, padding: Any = 0,
                     output_padding: Any = 0, groups: int = 1, dilation: Any = 1) -> Tensor:
    """``F.conv_transpose3d``: input (N, C, D, H, W), weight (C, O/groups, kd, kh, kw)."""
    return _conv_transpose("conv_transpose3d", 3, input, weight, bias, stride, padding,
                           output_padding, groups, dilation)


def _fold_options(op: str, kernel_size: Any, dilation: Any, padding: Any, stride: Any):
    kernel = as_tuple(kernel_size, 2, "kernel_size", op)
    dilation_t = as_tuple(dilation, 2, "dilation", op)
    pad_t = as_tuple(padding, 2, "padding", op)
    stride_t = as_tuple(stride, 2, "stride", op)
    for name, values, least in (("kernel_size", kernel, 1), ("dilation", dilation_t, 1),
                                ("stride", stride_t, 1), ("padding", pad_t, 0)):
        if any(v < least for v in values):
            rule = "greater than zero" if least else "non-negative"
            raise RuntimeError(f"{op}: {name} should be {rule}, but got {name}={values}")
    return kernel, dilation_t, tuple((p, p) for p in pad_t), stride_t


def unfold(input: Tensor, kernel_size: Any, dilation: Any = 1,  # noqa: A002
           padding: Any = 0, stride: Any = 1) -> Tensor:
    """``F.unfold`` (im2col): (N, C, H, W) -> (N, C*kh*kw, L), L = the number of windows;
    channel-major rows, as torch's. A (C, H, W) input gives (C*kh*kw, L)."""
    kernel, dilation_t, pairs, stride_t = _fold_options("unfold", kernel_size, dilation,
                                                        padding, stride)
    if input.ndim not in (3, 4):
        raise RuntimeError(f"unfold: expected a 3D (unbatched) or 4D (batched) input, got "
                           f"shape {input.shape}")
    x, added = _batched(input, 2)
    padded = tuple(n + b + a for n, (b, a) in zip(x.shape[2:], pairs))
    sizes = _out_sizes(padded, kernel, stride_t, dilation_t)
    if any(s <= 0 for s in sizes):
        raise RuntimeError(f"unfold: the padded input {padded} is smaller than the dilated "
                           f"kernel {kernel} (dilation {dilation_t}): no window fits")
    out = Unfold.apply(x, kernel=kernel, stride=stride_t, padding=pairs, dilation=dilation_t)
    return out.squeeze(0) if added else out


def fold(input: Tensor, output_size: Any, kernel_size: Any,  # noqa: A002
         dilation: Any = 1, padding: Any = 0, stride: Any = 1) -> Tensor:
    """``F.fold`` (col2im, overlaps summed): (N, C*kh*kw, L) -> (N, C, *output_size)."""
    kernel, dilation_t, pairs, stride_t = _fold_options("fold", kernel_size, dilation,
                                                        padding, stride)
    size = as_tuple(output_size, 2, "output_size", "fold")
    if input.ndim not in (2, 3):
        raise RuntimeError(f"fold: expected a 2D (unbatched) or 3D (batched) input, got "
                           f"shape {input.shape}")
    x = input.unsqueeze(0) if input.ndim == 2 else input
    padded = tuple(o + b + a for o, (b, a) in zip(size, pairs))
    blocks = math.prod(_out_sizes(padded, kernel, stride_t, dilation_t))
    if x.shape[1] % math.prod(kernel):
        raise RuntimeError(f"fold: expected size of input's dimension 1 to be divisible by "
                           f"the product of kernel_size, but got input.size(1)={x.shape[1]} "
                           f"and kernel_size={kernel}")
    if x.shape[2] != blocks or blocks <= 0:
        raise RuntimeError(f"fold: given output_size={size}, kernel_size={kernel}, "
                           f"dilation={dilation_t}, padding={tuple(p for p, _ in pairs)}, "
                           f"stride={stride_t}, expected size of input's dimension 2 to match "
                           f"the calculated number of sliding blocks {blocks}, but got "
                           f"input.size(2)={x.shape[2]}")
    out = Fold.apply(x, output_size=size, kernel=kernel, stride=stride_t, padding=pairs,
                     dilation=dilation_t)
    return out.squeeze(0) if input.ndim == 2 else out
