"""Pooling: max, average and adaptive, 1-D, 2-D and 3-D (docs/derivations.md#pooling).

PyTorch's ``F.max_pool1d/2d/3d``, ``F.avg_pool1d/2d/3d``, ``F.adaptive_avg_pool1d/2d/3d``
and ``F.adaptive_max_pool1d/2d/3d``: one n-d implementation each, the dims a parameter.
The windows are those of convolution (``im2col_windows`` of ops/conv.py, a strided view): a
pooling layer is a convolution whose "dot product" is a max or a mean, so its backward
routes the gradient back through the same windows (``col2im``).
"""
from __future__ import annotations

import itertools
import math
from typing import Any, Optional, Sequence, Tuple

import numpy as np

from .. import backend
from ..amp.dispatch import cast_args
from ..autograd import Function, name_node
from ..precision import is_floating
from ..tensor import Tensor
from .conv import as_tuple, col2im, im2col_windows

__all__ = ["max_pool1d", "max_pool2d", "max_pool3d", "avg_pool1d", "avg_pool2d", "avg_pool3d",
           "adaptive_avg_pool1d", "adaptive_avg_pool2d", "adaptive_avg_pool3d",
           "adaptive_max_pool1d", "adaptive_max_pool2d", "adaptive_max_pool3d"]


class MaxPool(Function):
    """out[i] = x[index[i]], index[i] = the arg-max of window i (``max_pool_indices``).

    The max is one element of the window, so its derivative is 1 there and 0 elsewhere:
    dx[j] = sum of g[i] over the windows i whose arg-max is j (overlapping windows add up).
    Ties: the FIRST maximum in the window (row-major order) takes the whole gradient, as in
    torch's CPU kernel; a NaN is a window's maximum (the last NaN, as torch's kernel).
    ``index`` holds flat positions in the unpadded spatial plane, h * W + w, as torch's
    ``return_indices=True`` gives them.
    """

    def forward(self, x, *, index):
        n, c = x.shape[:2]
        rows = x.reshape(n, c, math.prod(x.shape[2:]))                 # (N, C, H*W)
        out = backend.get_array_module(x).take_along_axis(
            rows, index.reshape(n, c, math.prod(index.shape[2:])), -1)
        self.save_for_backward(x, index)            # x as torch saves it (for version checks)
        return out.reshape(index.shape)

    def backward(self, grad):
        x, index = self.saved
        shape = x.shape
        xp = backend.get_array_module(grad)
        n, c = shape[:2]
        dx = xp.zeros((n * c, math.prod(shape[2:])), dtype=grad.dtype)
        rows = xp.arange(n * c)[:, None]
        per_row = math.prod(index.shape[2:])
        backend.scatter_add(dx, (rows, index.reshape(n * c, per_row)),
                            grad.reshape(n * c, per_row))
        return dx.reshape(shape)


def _arg_max_last_nan(flat: Any) -> Any:
    """The first maximum along the last axis; where there are NaNs, the last NaN."""
    xp = backend.get_array_module(flat)
    choice = flat.argmax(axis=-1)
    if is_floating(flat.dtype):             # no `if nan.any()`: that is a host sync on a GPU
        nan = xp.isnan(flat)
        last = flat.shape[-1] - 1 - nan[..., ::-1].argmax(axis=-1)
        choice = xp.where(nan.any(axis=-1), last, choice)
    return choice


def max_pool_indices(x: Any, kernel, stride, padding, dilation, out_sizes) -> Any:
    """(N, C, *out) int64: where each window's maximum is, as a flat index of x's plane."""
    xp = backend.get_array_module(x)
    dims = len(kernel)
    spatial = x.shape[2:]
    fill = -xp.inf if is_floating(x.dtype) else xp.iinfo(x.dtype).min
    extra = [max(0, (o - 1) * s + d * (k - 1) + 1 - n - p) for o, s, d, k, n, p in
             zip(out_sizes, stride, dilation, kernel, spatial, padding)]
    xpad = xp.pad(x, ((0, 0), (0, 0)) + tuple((p, e) for p, e in zip(padding, extra)),
                  constant_values=fill)
    windows = im2col_windows(xpad, out_sizes, kernel, stride, dilation)
    choice = _arg_max_last_nan(windows.reshape(windows.shape[:2 + dims] + (  # sized, not -1:
        math.prod(windows.shape[2 + dims:]),)))                      # an empty batch too
    offsets = xp.unravel_index(choice, tuple(kernel))
    index = xp.zeros(choice.shape, dtype=xp.int64)
    for i in range(dims):
        start = (xp.arange(out_sizes[i]) * stride[i] - padding[i]).reshape(
            (-1,) + (1,) * (dims - 1 - i))
        index = index * spatial[i] + start + offsets[i] * dilation[i]
    return index


class AvgPool(Function):
    """out[i] = (sum over window i of the zero-padded x) / divisor[i].

    Each element of a window enters the mean with weight 1 / divisor[i], so
        dx = col2im(g / divisor, broadcast over the window), padding cropped.
    divisor[i]: ``divisor_override`` if given; else the window's size clipped to the padded
    input (count_include_pad=True) or the number of real, unpadded elements in it (False).
    """

    def forward(self, x, *, kernel, stride, padding, out_sizes, divisor):
        xp = backend.get_array_module(x)
        dims = len(kernel)
        work = x.astype(np.float32, copy=False) if x.dtype.itemsize < 4 else x
        extra = [max(0, (o - 1) * s + k - n - p) for o, s, k, n, p in
                 zip(out_sizes, stride, kernel, x.shape[2:], padding)]
        pairs = tuple((p, e) for p, e in zip(padding, extra))
        xpad = xp.pad(work, ((0, 0), (0, 0)) + pairs)
        windows = im2col_windows(xpad, out_sizes, kernel, stride, (1,) * dims)
        total = windows.sum(axis=tuple(range(2 + dims, 2 + 2 * dims)))
        if is_floating(x.dtype):
            out = total / divisor
        else:       # integers: C's division, truncating towards zero, as torch's kernel
            divisor_int = divisor.astype(total.dtype)       # (a negative divisor_override too)
            out = xp.sign(total) * xp.sign(divisor_int) * (xp.abs(total) // xp.abs(divisor_int))
        self.save_for_backward(x, xpad.shape, kernel, stride, pairs, divisor)
        return out.astype(x.dtype, copy=False)

    def backward(self, grad):
        x, padded, kernel, stride, pairs, divisor = self.saved
        shape, dtype = x.shape, x.dtype
        dims = len(kernel)
        share = (grad / divisor)[(Ellipsis,) + (None,) * dims]
        cols = backend.get_array_module(grad).broadcast_to(share, grad.shape + tuple(kernel))
        dx = col2im(cols, padded, kernel, stride, (1,) * dims)
        crop = tuple(slice(b, b + n) for (b, _), n in zip(pairs, shape[2:]))
        return dx[(slice(None), slice(None)) + crop].astype(dtype, copy=False)


class AdaptiveAvgPool(Function):
    """out = the mean of x over bin i of each spatial dim: bin i of n positions into o bins is
    [floor(i n / o), ceil((i + 1) n / o)). A mean over a box is the product of one mean per
    dim, so with A_d (o_d, n_d) the averaging matrix of dim d (A[i, j] = 1 / |bin i| for j in
    bin i), out = x x_1 A_1^T x_2 A_2^T ... (one matrix product per dim), and backward is the
    transpose: dx = g x_1 A_1 x_2 A_2 ... (for float32 g computed in float64 and rounded once,
    as accurate as torch's g / count).
    3-D float16/bfloat16 forward (``half_steps``, the half dtype): torch's CPU kernel sums in
    the half dtype, element by element, then divides by kD, kH, kW in turn, rounding at each
    step; that is reproduced (``_half_box_means``), since computing in float32 and rounding
    once gives other values. (x may arrive as float32: the amp hook widens half inputs; the
    values are the half ones, and the hook's final rounding leaves the result as it is.)
    """

    def forward(self, x, *, matrices, half_steps=None):
        if half_steps is not None:
            out = _half_box_means(x.astype(half_steps), [
                _bins(n, a.shape[0]) for n, a in zip(x.shape[2:], matrices)])
        else:
            out = x.astype(np.float32, copy=False) if x.dtype.itemsize < 4 else x
            for axis, a in enumerate(matrices):
                out = _apply_along(out, a.astype(out.dtype, copy=False), 2 + axis)
        # x as torch saves it; for output size 1 torch takes a mean, which keeps no input
        saved_x = None if all(a.shape[0] == 1 for a in matrices) else x
        self.save_for_backward(saved_x, matrices, x.dtype)
        return out.astype(x.dtype, copy=False)

    def backward(self, grad):
        _, matrices, dtype = self.saved
        dx = grad.astype(np.float32, copy=False) if grad.dtype.itemsize < 4 else grad
        if dx.dtype == np.float32:      # float64 products, one rounding: g / |bin| as torch's
            dx = dx.astype(np.float64)  # (float32 1/3 times 1/3 was 3 roundings, 2.8x its error)
        for axis, a in enumerate(matrices):
            dx = _apply_along(dx, a.T.astype(dx.dtype, copy=False), 2 + axis)
        return dx.astype(dtype, copy=False)


def _apply_along(x: Any, matrix: Any, axis: int) -> Any:
    """Multiply axis ``axis`` of x by ``matrix`` (o, n): (..., n, ...) -> (..., o, ...)."""
    xp = backend.get_array_module(x)
    moved = xp.moveaxis(x, axis, -1)                    # (..., n)
    return xp.moveaxis(moved @ matrix.T, -1, axis)      # (..., n) @ (n, o) -> (..., o)


def _half_box_means(x: Any, bins: Sequence[list]) -> Any:
    """Each adaptive box's mean as torch's 3-D half kernel computes it: a running sum in x's
    dtype over the box in row-major order (one rounding per addition), then / kD / kH / kW,
    each rounded. Vectorised over the boxes: step t adds the t-th element of every box that
    has one (boxes of one dim differ in length by at most one)."""
    xp = backend.get_array_module(x)
    starts = [np.array([b[0] for b in dim]) for dim in bins]
    lengths = [np.array([b[1] - b[0] for b in dim]) for dim in bins]
    grids = np.meshgrid(*starts, indexing="ij"), np.meshgrid(*lengths, indexing="ij")
    total = xp.zeros(x.shape[:2] + grids[0][0].shape, dtype=x.dtype)      # (N, C, *out)
    for offset in itertools.product(*(range(int(n.max())) for n in lengths)):
        inside = np.logical_and.reduce([o < n for o, n in zip(offset, grids[1])])
        where = tuple(backend.to_device(np.minimum(s + o, size - 1), backend.device_of(x))
                      for s, o, size in zip(grids[0], offset, x.shape[2:]))
        step = (total.astype(np.float32) + x[(slice(None), slice(None)) + where]
                .astype(np.float32)).astype(x.dtype)
        total = xp.where(backend.to_device(inside, backend.device_of(x)), step, total)
    for n in grids[1]:
        divisor = backend.to_device(n.astype(np.float32), backend.device_of(x))
        total = (total.astype(np.float32) / divisor).astype(x.dtype)
    return total


def _bins(n: int, o: int) -> list:
    return [(i * n // o, -(-(i + 1) * n // o)) for i in range(o)]


def _averaging_matrix(n: int, o: int, device: str) -> Any:
    a = np.zeros((o, n))
    for i, (start, end) in enumerate(_bins(n, o)):
        a[i, start:end] = 1.0 / (end - start)
    return backend.to_device(a, device)


def adaptive_max_indices(x: Any, out_sizes: Sequence[int]) -> Any:
    """(N, C, *out) int64: the flat index of each adaptive bin's maximum (bins as in
    adaptive average pooling, per dim; ties and NaNs as in max pooling)."""
    xp = backend.get_array_module(x)
    spatial, dims = x.shape[2:], len(out_sizes)
    n, c = x.shape[:2]
    index = xp.empty((n, c) + tuple(out_sizes), dtype=xp.int64)
    bins = [_bins(size, o) for size, o in zip(spatial, out_sizes)]
    for position in np.ndindex(*out_sizes):
        box = tuple(slice(*bins[d][position[d]]) for d in range(dims))
        window = x[(slice(None), slice(None)) + box]
        choice = _arg_max_last_nan(window.reshape(n, c, math.prod(window.shape[2:])))
        local = xp.unravel_index(choice, tuple(s.stop - s.start for s in box))
        flat = xp.zeros_like(choice)
        for d in range(dims):
            flat = flat * spatial[d] + box[d].start + local[d]
        index[(Ellipsis,) + position] = flat
    return index


# --- the functions, torch's arguments and checks ---------------------------------------------

def _pool_input(op: str, x: Tensor, dims: int) -> Tuple[Tensor, bool]:
    if not isinstance(x, Tensor):
        raise TypeError(f"{op}: expected a tensor input, got {type(x).__name__}")
    if x.ndim not in (dims + 1, dims + 2) or any(n == 0 for n in x.shape[-dims:]) \
            or (x.ndim == dims + 2 and x.shape[1] == 0) \
            or (x.ndim == dims + 1 and x.shape[0] == 0):        # (C, L) with no channel
        raise RuntimeError(f"{op}: Expected {dims + 1}D or {dims + 2}D (batch mode) tensor "
                           f"with optional 0 dim batch size and non-zero sizes for the other "
                           f"dims, got shape {x.shape}")
    return (x.unsqueeze(0), True) if x.ndim == dims + 1 else (x, False)


_TORCH_DTYPE_NAMES = {"float16": "Half", "bfloat16": "BFloat16", "uint8": "Byte", "int8": "Char",
                      "int16": "Short", "int32": "Int", "int64": "Long", "bool": "Bool"}


def _refuse_dtype(op: str, dtype: Any, takes: str) -> None:
    name = _TORCH_DTYPE_NAMES.get(np.dtype(dtype).name, str(dtype))
    raise RuntimeError(f"{op}: not implemented for '{name}' ({dtype}): torch's CPU kernel takes "
                       f"{takes}; convert the input with .float() or .double()")


def _pool_sizes(op: str, spatial: Sequence[int], kernel, stride, padding, dilation,
                ceil_mode: bool) -> Tuple[int, ...]:
    """torch's output size; with ceil_mode the last window may hang over the right edge, but
    must start inside the input or its left padding."""
    if any(k <= 0 for k in kernel):
        raise RuntimeError(f"{op}: kernel_size must be greater than zero, got {kernel}")
    if any(s <= 0 for s in stride):
        raise RuntimeError(f"{op}: stride must be greater than zero, got {stride}")
    if any(d <= 0 for d in dilation):
        raise RuntimeError(f"{op}: dilation must be greater than zero, got {dilation}")
    if any(p < 0 or p > (d * (k - 1) + 1) // 2 for p, k, d in zip(padding, kernel, dilation)):
        raise RuntimeError(f"{op}: pad should be at most half of effective kernel size, but "
                           f"got pad={padding}, kernel_size={kernel} (and non-negative)")
    sizes = []
    for n, k, s, p, d in zip(spatial, kernel, stride, padding, dilation):
        span = n + 2 * p - d * (k - 1) - 1
        size = (-(-span // s) if ceil_mode else span // s) + 1
        if ceil_mode and (size - 1) * s >= n + p:
            size -= 1
        sizes.append(size)
    if any(size < 1 for size in sizes):
        raise RuntimeError(f"{op}: Given input size {tuple(spatial)} (spatial), calculated "
                           f"output size {tuple(sizes)} is too small; the kernel {kernel} "
                           f"(dilation {dilation}) is larger than the padded input")
    return tuple(sizes)


def _max_pool(op: str, dims: int, input: Tensor, kernel_size: Any,  # noqa: A002
              stride: Any, padding: Any, dilation: Any, ceil_mode: bool,
              return_indices: bool) -> Any:
    x, added = _pool_input(op, input, dims)
    if x.dtype == np.bool_:
        raise RuntimeError(f"{op}: not implemented for 'Bool'; convert with .float()")
    (x,) = cast_args(op, x)             # autocast: torch's CPU list runs max_pool3d in float32
    kernel = as_tuple(kernel_size, dims, "kernel_size", op)
    stride_t = kernel if stride is None or (isinstance(stride, (list, tuple)) and not stride) \
        else as_tuple(stride, dims, "stride", op)
    pad_t = as_tuple(padding, dims, "padding", op)
    dilation_t = as_tuple(dilation, dims, "dilation", op)
    sizes = _pool_sizes(op, x.shape[2:], kernel, stride_t, pad_t, dilation_t, bool(ceil_mode))
    index = max_pool_indices(x._data, kernel, stride_t, pad_t, dilation_t, sizes)
    return _gathered(x, index, added, return_indices, op)


def _node_name(op: str) -> str:
    """torch's grad_fn name for a pool: its 1-d pools squeeze a 2-d pool's result
    (SqueezeBackward1), the others have their own node (max_pool2d: MaxPool2DWithIndices)."""
    if op.endswith("1d"):
        return "SqueezeBackward1"
    words = "".join(w.capitalize() for w in op[:-2].split("_"))
    return f"{words}{op[-2:].upper()}{'WithIndices' if op.startswith('max') else ''}Backward0"


def _gathered(x: Tensor, index: Any, added: bool, return_indices: bool, op: str) -> Any:
    out = MaxPool.apply(x, index=index)
    indices = Tensor._wrap(index)
    if added:
        out, indices = out.squeeze(0), indices.squeeze(0)
    name_node(out, _node_name(op))
    return (out, indices) if return_indices else out


def max_pool1d(input: Tensor, kernel_size: Any, stride: Any = None,  # noqa: A002
               padding: Any = 0, dilation: Any = 1, ceil_mode: bool = False,
               return_indices: bool = False) -> Any:
    """``F.max_pool1d``: (N, C, L) or (C, L); stride defaults to kernel_size."""
    return _max_pool("max_pool1d", 1, input, kernel_size, stride, padding, dilation,
                     ceil_mode, return_indices)


def max_pool2d(input: Tensor, kernel_size: Any, stride: Any = None,  # noqa: A002
               padding: Any = 0, dilation: Any = 1, ceil_mode: bool = False,
               return_indices: bool = False) -> Any:
    """``F.max_pool2d``: (N, C, H, W) or (C, H, W); stride defaults to kernel_size. With
    return_indices=True, also the int64 flat index (h * W + w) of each maximum."""
    return _max_pool("max_pool2d", 2, input, kernel_size, stride, padding, dilation,
                     ceil_mode, return_indices)


def max_pool3d(input: Tensor, kernel_size: Any, stride: Any = None,  # noqa: A002
               padding: Any = 0, dilation: Any = 1, ceil_mode: bool = False,
               return_indices: bool = False) -> Any:
    """``F.max_pool3d``: (N, C, D, H, W) or (C, D, H, W); stride defaults to kernel_size. With
    return_indices=True, also the int64 flat index (d * H * W + h * W + w) of each maximum."""
    return _max_pool("max_pool3d", 3, input, kernel_size, stride, padding, dilation,
                     ceil_mode, return_indices)


def _avg_pool(op: str, dims: int, input: Tensor, kernel_size: Any,  # noqa: A002
              stride: Any, padding: Any, ceil_mode: bool, count_include_pad: bool,
              divisor_override: Optional[int]) -> Tensor:
    x, added = _pool_input(op, input, dims)
    (x,) = cast_args(op, x)             # autocast: torch's CPU list runs avg_pool3d in float32
    # torch's CPU kernels: float and int64 (avg_pool3d: no float16/bfloat16 either)
    floating = is_floating(x.dtype) and (dims < 3 or x.dtype.itemsize >= 4)
    if not (floating or x.dtype == np.int64):
        _refuse_dtype(op, x.dtype, "float32, float64 and int64" if dims == 3 else
                      "floating dtypes and int64")
    kernel = as_tuple(kernel_size, dims, "kernel_size", op)
    stride_t = kernel if stride is None or (isinstance(stride, (list, tuple)) and not stride) \
        else as_tuple(stride, dims, "stride", op)
    pad_t = as_tuple(padding, dims, "padding", op)
    sizes = _pool_sizes(op, x.shape[2:], kernel, stride_t, pad_t, (1,) * dims,
                        bool(ceil_mode))
    if divisor_override is not None and divisor_override == 0:
        raise RuntimeError(f"{op}: divisor must be not zero (got divisor_override=0)")
    work = (np.float32 if x.dtype.itemsize < 4 else x.dtype) if is_floating(x.dtype) \
        else np.int64
    if divisor_override is not None:
        divisor = np.asarray(float(divisor_override), dtype=work)
    else:
        divisor = np.ones((), dtype=work)
        for i, (n, k, s, p, o) in enumerate(zip(x.shape[2:], kernel, stride_t, pad_t, sizes)):
            start = np.arange(o) * s - p
            end = np.minimum(start + k, n + p)
            if not count_include_pad:
                start, end = np.maximum(start, 0), np.minimum(end, n)
            counts = (end - start).reshape((-1,) + (1,) * (dims - 1 - i))
            divisor = divisor * counts.astype(work)
    divisor = backend.to_device(divisor, x.device)      # built on the host, once
    out = AvgPool.apply(x, kernel=kernel, stride=stride_t, padding=pad_t, out_sizes=sizes,
                        divisor=divisor)
    return name_node(out.squeeze(0) if added else out, _node_name(op))


def avg_pool1d(input: Tensor, kernel_size: Any, stride: Any = None,  # noqa: A002
               padding: Any = 0, ceil_mode: bool = False,
               count_include_pad: bool = True) -> Tensor:
    """``F.avg_pool1d``: (N, C, L) or (C, L); stride defaults to kernel_size."""
    return _avg_pool("avg_pool1d", 1, input, kernel_size, stride, padding, ceil_mode,
                     count_include_pad, None)


def avg_pool2d(input: Tensor, kernel_size: Any, stride: Any = None,  # noqa: A002
               padding: Any = 0, ceil_mode: bool = False, count_include_pad: bool = True,
               divisor_override: Optional[int] = None) -> Tensor:
    """``F.avg_pool2d``: (N, C, H, W) or (C, H, W). Each window's sum is divided by
    divisor_override, or by its size (count_include_pad=True, padding counted) or by the
    number of real elements in it (False)."""
    return _avg_pool("avg_pool2d", 2, input, kernel_size, stride, padding, ceil_mode,
                     count_include_pad, divisor_override)


def avg_pool3d(input: Tensor, kernel_size: Any, stride: Any = None,  # noqa: A002
               padding: Any = 0, ceil_mode: bool = False, count_include_pad: bool = True,
               divisor_override: Optional[int] = None) -> Tensor:
    """``F.avg_pool3d``: (N, C, D, H, W) or (C, D, H, W); the divisor as avg_pool2d's.
    torch's CPU kernel takes float32, float64 and int64 only, and so does this."""
    return _avg_pool("avg_pool3d", 3, input, kernel_size, stride, padding, ceil_mode,
                     count_include_pad, divisor_override)


def _adaptive_sizes(op: str, x: Tensor, output_size: Any, dims: int) -> Tuple[int, ...]:
    if isinstance(output_size, (tuple, list)):
        if len(output_size) != dims:
            raise RuntimeError(f"{op}: output_size must be an int or {dims} values, got "
                               f"{output_size!r}")
        sizes = tuple(x.shape[-dims + i] if o is None else o for i, o in enumerate(output_size))
    else:
        sizes = as_tuple(output_size, dims, "output_size", op)
    if any(isinstance(o, bool) or not isinstance(o, (int, np.integer)) or o < 0 for o in sizes):
        raise RuntimeError(f"{op}: output_size must hold non-negative ints (or None), got "
                           f"{output_size!r}")
    return tuple(int(o) for o in sizes)


def _check_adaptive_2d_rank(op: str, dims: int, input: Any) -> None:  # noqa: A002
    """torch's F.adaptive_*_pool2d/3d check the rank in Python first, with a ValueError."""
    if dims in (2, 3) and isinstance(input, Tensor) and input.ndim < dims + 1:
        raise ValueError(f"{op}: Input dimension should be at least {dims + 1}, got shape "
                         f"{input.shape}")


def _adaptive_avg(op: str, dims: int, input: Tensor, output_size: Any) -> Tensor:  # noqa: A002
    _check_adaptive_2d_rank(op, dims, input)
    x, added = _pool_input(op, input, dims)
    if not is_floating(x.dtype):
        raise RuntimeError(f"{op}: not implemented for {x.dtype}; convert with .float()")
    (x,) = cast_args(op, x)             # autocast: float32 for the 3-d op, as torch's CPU list
    sizes = _adaptive_sizes(op, x, output_size, dims)
    matrices = tuple(_averaging_matrix(n, o, x.device) for n, o in zip(x.shape[2:], sizes))
    # torch's 3-D half kernel rounds at each step, except for output (1, 1, 1): a mean then
    half_steps = x.dtype if dims == 3 and x.dtype.itemsize < 4 and sizes != (1, 1, 1) \
        else None
    out = AdaptiveAvgPool.apply(x, matrices=matrices, half_steps=half_steps)
    return name_node(out.squeeze(0) if added else out, _node_name(op))


def adaptive_avg_pool1d(input: Tensor, output_size: Any) -> Tensor:  # noqa: A002
    """``F.adaptive_avg_pool1d``: (N, C, L) -> (N, C, output_size), bin i covering
    [floor(i L / o), ceil((i + 1) L / o))."""
    return _adaptive_avg("adaptive_avg_pool1d", 1, input, output_size)


def adaptive_avg_pool2d(input: Tensor, output_size: Any) -> Tensor:  # noqa: A002
    """``F.adaptive_avg_pool2d``: (N, C, H, W) -> (N, C, *output_size); a None in
    output_size keeps that dim. ``output_size=1`` is global average pooling."""
    return _adaptive_avg("adaptive_avg_pool2d", 2, input, output_size)


def adaptive_avg_pool3d(input: Tensor, output_size: Any) -> Tensor:  # noqa: A002
    """``F.adaptive_avg_pool3d``: (N, C, D, H, W) -> (N, C, *output_size) (None keeps a dim)."""
    return _adaptive_avg("adaptive_avg_pool3d", 3, input, output_size)


def _adaptive_max(op: str, dims: int, input: Tensor, output_size: Any,  # noqa: A002
                  return_indices: bool) -> Any:
    _check_adaptive_2d_rank(op, dims, input)
    x, added = _pool_input(op, input, dims)
    (x,) = cast_args(op, x)             # autocast: float32 for the 3-d op, as torch's CPU list
    sizes = _adaptive_sizes(op, x, output_size, dims)
    if not is_floating(x.dtype):
        _refuse_dtype(op, x.dtype, "floating dtypes only")
    return _gathered(x, adaptive_max_indices(x._data, sizes), added, return_indices, op)


def adaptive_max_pool1d(input: Tensor, output_size: Any,  # noqa: A002
                        return_indices: bool = False) -> Any:
    """``F.adaptive_max_pool1d``: the max over each adaptive bin."""
    return _adaptive_max("adaptive_max_pool1d", 1, input, output_size, return_indices)


def adaptive_max_pool2d(input: Tensor, output_size: Any,  # noqa: A002
                        return_indices: bool = False) -> Any:
    """``F.adaptive_max_pool2d``: the max over each adaptive bin (bins as adaptive_avg's)."""
    return _adaptive_max("adaptive_max_pool2d", 2, input, output_size, return_indices)


def adaptive_max_pool3d(input: Tensor, output_size: Any,  # noqa: A002
                        return_indices: bool = False) -> Any:
    """``F.adaptive_max_pool3d``: the max over each adaptive box of (D, H, W)."""
    return _adaptive_max("adaptive_max_pool3d", 3, input, output_size, return_indices)
