"""Reductions: sum, mean, amax, amin, prod over some axes, and the running sum cumsum
(docs/derivations.md#reductions).

``dim`` is an int, a tuple of ints, or None for all axes; ``keepdim`` keeps the reduced axes
with size 1, as in PyTorch.
"""
from __future__ import annotations

import builtins
from typing import Any, Optional, Sequence, Tuple, Union

import numpy as np

from .. import backend, precision
from ..autograd import Function, name_node
from ..tensor import Tensor
from ..tensor.dtypes import normalize_dtype
from .shape import reshape

__all__ = ["sum", "mean", "amax", "amin", "prod", "cumsum"]

Dim = Union[int, Sequence[int], None]


def _axes(dim: Dim, ndim: int, op: str) -> Tuple[int, ...]:
    """Normalise ``dim`` to a sorted tuple of non-negative axes, with a clear range error.

    A 0-d tensor accepts dim 0 or -1 as PyTorch does, reducing over nothing (axes ()).
    An empty ``dim`` (``()`` or ``[]``) means every dim, as in torch's sum/mean/amax/var/norm
    (``x.sum(dim=())`` is the full sum there, not x unchanged)."""
    if dim is None or (not isinstance(dim, (int, np.integer)) and len(dim) == 0):
        return tuple(range(ndim))
    dims = (int(dim),) if isinstance(dim, (int, np.integer)) else tuple(int(d) for d in dim)
    rank = builtins.max(ndim, 1)  # this module's max() is the tensor op
    for d in dims:
        if not -rank <= d < rank:
            raise IndexError(f"{op}: dim {d} is out of range for a tensor with {ndim} dims "
                             f"(valid: {-rank} to {rank - 1})")
    axes = tuple(sorted(d % rank for d in dims))
    if len(set(axes)) != len(axes):
        raise RuntimeError(f"{op}: dim {dim} names the same axis twice")
    return axes if ndim > 0 else ()


def _expand_back(grad, in_shape, axes, keepdim):
    """Undo a reduction's shape: put back the reduced axes with size 1 (then broadcast)."""
    xp = backend.get_array_module(grad)
    if not keepdim and axes:
        grad = xp.expand_dims(grad, axes)
    return grad


class Sum(Function):
    """out = sum of x over ``axes``.
    dx = g copied along the summed axes (each x_i appears in exactly one sum, with weight 1)."""

    def forward(self, x, axes: Tuple[int, ...], keepdim: bool):
        self.save_for_backward(x.shape, axes, keepdim)
        return backend.accurate_sum(x, axes, keepdim)       # long float32 sums: in float64

    def backward(self, grad):
        shape, axes, keepdim = self.saved
        xp = backend.get_array_module(grad)
        return xp.broadcast_to(_expand_back(grad, shape, axes, keepdim), shape)


class Mean(Function):
    """out = sum(x) / N over ``axes`` (N elements reduced).   dx = g / N along those axes."""

    def forward(self, x, axes: Tuple[int, ...], keepdim: bool):
        self.save_for_backward(x.shape, axes, keepdim)
        count = 1
        for a in axes:
            count *= x.shape[a]
        with np.errstate(invalid="ignore", divide="ignore", over="ignore"):  # torch's quiet
            if backend.wide_sum_needed(x, axes):                              # inf and NaN
                return (x.mean(axis=axes, keepdims=keepdim, dtype=np.float64)).astype(
                    np.float32)
            return x.mean(axis=axes, keepdims=keepdim)

    def backward(self, grad):
        shape, axes, keepdim = self.saved
        xp = backend.get_array_module(grad)
        count = 1
        for a in axes:
            count *= shape[a]
        return xp.broadcast_to(_expand_back(grad, shape, axes, keepdim) / count, shape)


def _extreme_mask(x: Any, out: Any, spread: bool) -> Any:
    """Where x holds its max (min): x == out; for ``spread`` (max(x)/min(x) without a dim,
    torch's evenly_distribute_backward) NaN counts as equal to a NaN result (x != x: NaN)."""
    if spread:
        return (x == out) | ((x != x) & (out != out))
    return x == out


class Amax(Function):
    """out = max of x over ``axes``.

    dx = g at the position of the maximum, 0 elsewhere. Ties split the gradient evenly: if
    k elements share the maximum, each gets g / k (the sum over ties is g, as for any
    subgradient, and the split is symmetric, so it does not depend on element order).
    ``spread=True`` (``max(x)`` without a dim): the others get +0.0 written in, not g * 0
    (which is -0.0 for a negative g), as torch's evenly_distribute_backward; and a NaN
    result (x holds NaN) marks the NaN elements as the maxima (NaN == NaN is false, which
    would leave every element 0), so k NaNs get g / k each, as torch. amax keeps the plain
    comparison: its gradient is then g * 0 / 0 = NaN everywhere, as torch's.
    """

    versions_checked = (0, -1)    # what torch saves: changed in place, backward raises

    def forward(self, x, axes: Tuple[int, ...], keepdim: bool, spread: bool = False):
        out = x.max(axis=axes, keepdims=True)
        self.save_for_backward(_extreme_mask(x, out, spread), axes, keepdim)
        self._spread = spread
        return out if keepdim else out.squeeze(axis=axes)

    def backward(self, grad):
        is_max, axes, keepdim = self.saved
        grad = _expand_back(grad, is_max.shape, axes, keepdim)
        ties = is_max.sum(axis=axes, keepdims=True)
        if getattr(self, "_spread", False):
            xp = backend.get_array_module(grad)
            return xp.where(is_max, grad / ties.astype(grad.dtype), 0).astype(grad.dtype)
        return grad * is_max / ties.astype(grad.dtype)


class Amin(Amax):
    """out = min of x over ``axes``; the backward is amax's (``is_min`` marks the minima,
    ties split the gradient evenly)."""

    def forward(self, x, axes: Tuple[int, ...], keepdim: bool, spread: bool = False):
        out = x.min(axis=axes, keepdims=True)
        self.save_for_backward(_extreme_mask(x, out, spread), axes, keepdim)
        self._spread = spread
        return out if keepdim else out.squeeze(axis=axes)


class Prod(Function):
    """out = x_0 x_1 ... x_{n-1} along ``axis`` (docs/derivations.md#prod).

    d out / d x_i = the product of all the other elements, so
        dx_i = g * (x_0 ... x_{i-1}) * (x_{i+1} ... x_{n-1}),
    the exclusive running products from the left and from the right: exact when some x_i
    are 0, where the shortcut out / x_i would divide by zero.
    """

    versions_checked = (0, -1)    # what torch saves: changed in place, backward raises

    def forward(self, x, axis: int, keepdim: bool):
        self.save_for_backward(x, axis, keepdim)
        product = np.multiply.reduce if type(x) is np.ndarray else \
            backend.get_array_module(x).prod    # the ufunc: its warnings in tinyattn's frame
        if x.dtype == np.float32:                       # products drift too: in float64
            return product(x, axis=axis, keepdims=keepdim, dtype=np.float64).astype(np.float32)
        return product(x, axis=axis, keepdims=keepdim)

    def backward(self, grad):
        x, axis, keepdim = self.saved
        xp = backend.get_array_module(x)
        if not keepdim:
            grad = xp.expand_dims(grad, axis)
        n = x.shape[axis]
        ones = xp.ones(x.shape[:axis] + (1,) + x.shape[axis + 1:], dtype=x.dtype)
        padded = xp.concatenate([ones, x, ones], axis=axis)          # 1, x_0, ..., x_{n-1}, 1
        left = xp.cumprod(padded, axis=axis)                         # left[i] = 1 x_0 ... x_{i-1}
        right = xp.flip(xp.cumprod(xp.flip(padded, axis), axis=axis), axis)
        lead = (slice(None),) * axis
        before = left[lead + (slice(0, n),)]                         # x_0 ... x_{i-1}
        after = right[lead + (slice(2, n + 2),)]                     # x_{i+1} ... x_{n-1}
        return grad * before * after


class Cumsum(Function):
    """out_i = x_0 + ... + x_i along ``axis`` (docs/derivations.md#cumsum).

    x_j feeds every out_i with i >= j, so dx_j = g_j + g_{j+1} + ... : the running sum of g
    taken from the end, flip(cumsum(flip(g))).
    """

    def forward(self, x, axis: int):
        self.save_for_backward(axis)
        return backend.accurate_cumsum(x, axis)

    def backward(self, grad):
        (axis,) = self.saved
        xp = backend.get_array_module(grad)
        return xp.flip(backend.accurate_cumsum(xp.flip(grad, axis), axis), axis)


def sum(x: Tensor, dim: Dim = None, keepdim: bool = False, *,  # noqa: A001
        dtype: Any = None) -> Tensor:
    """The sum over ``dim`` (all by default). As PyTorch: integer and bool tensors give int64
    (NumPy would give uint8 tensors uint64); ``dtype`` converts x first, and an integer or
    bool ``dtype`` is the result's too (wrapping on overflow as PyTorch's integer sum does;
    the bool sum is "any")."""
    x = x.to(dtype) if dtype is not None else x
    out = Sum.apply(_as_int64(x), axes=_axes(dim, x.ndim, "sum"), keepdim=keepdim)
    name_node(out, "SumBackward0" if dim is None else "SumBackward1")  # torch: sum / sum.dim
    return in_integer_dtype(out, dtype)


def mean(x: Tensor, dim: Dim = None, keepdim: bool = False, *, dtype: Any = None) -> Tensor:
    """The mean over ``dim`` (all by default); ``dtype`` converts x first. Integer and bool
    tensors give the default float dtype (float32 unless set; PyTorch refuses them without
    dtype=; NumPy would
    give float64, which tinyattn never makes behind your back)."""
    if dtype is not None:
        if normalize_dtype(dtype).kind in "biu":
            raise RuntimeError("mean(): could not infer output dtype. Optional dtype must be "
                               f"either a floating point or complex dtype. Got: {dtype} (as "
                               "torch; pass a float dtype, or none)")
        x = x.to(dtype)
    elif x.dtype.kind in "biu":
        x = x.to(precision.get_default_dtype())
    out = Mean.apply(x, axes=_axes(dim, x.ndim, "mean"), keepdim=keepdim)
    return name_node(out, "MeanBackward0" if dim is None else "MeanBackward1")


def _as_int64(x: Tensor) -> Tensor:
    return x.to(np.int64) if x.dtype.kind in "biu" and x.dtype != np.int64 else x


def in_integer_dtype(out: Tensor, dtype: Any) -> Tensor:
    """An integer reduction computed in int64, given the integer or bool ``dtype`` asked for.
    Sums and products modulo 2**bits agree whether they wrap at each step or once at the end,
    so the int64 result cast to int8/int16/int32/uint8 is PyTorch's; cast to bool it is
    "any nonzero" (sum) or "all nonzero" (prod), PyTorch's bool sum and product."""
    if dtype is None or out.dtype.kind not in "biu":
        return out
    return out.to(dtype)


def amax(x: Tensor, dim: Dim = None, keepdim: bool = False, *, _spread: bool = False
         ) -> Tensor:
    axes = _axes(dim, x.ndim, "amax")
    _check_not_empty(x, axes, "amax")
    if _spread:
        return Amax.apply(x, axes=axes, keepdim=keepdim, spread=True)
    return Amax.apply(x, axes=axes, keepdim=keepdim)


def amin(x: Tensor, dim: Dim = None, keepdim: bool = False, *, _spread: bool = False
         ) -> Tensor:
    axes = _axes(dim, x.ndim, "amin")
    _check_not_empty(x, axes, "amin")
    if _spread:
        return Amin.apply(x, axes=axes, keepdim=keepdim, spread=True)
    return Amin.apply(x, axes=axes, keepdim=keepdim)


def _check_not_empty(x: Tensor, axes: Tuple[int, ...], op: str) -> None:
    """max and min of nothing have no value (no identity element), as PyTorch says too."""
    if any(x.shape[a] == 0 for a in axes) or (not axes and x.numel() == 0):
        # torch: IndexError when a dim is named, RuntimeError for the whole tensor
        error = RuntimeError if len(axes) in (0, x.ndim) else IndexError
        raise error(f"{op}: cannot reduce over an empty dimension (shape {x.shape}): "
                    f"the maximum or minimum of no numbers is undefined")


def prod(x: Tensor, dim: Optional[int] = None, keepdim: bool = False, *,
         dtype: Any = None) -> Tensor:
    """The product of all elements, or along one ``dim``. Integer and bool tensors give
    int64 (no gradient), as PyTorch; ``dtype`` converts x first, and an integer or bool
    ``dtype`` is the result's too."""
    if dtype is not None:
        return in_integer_dtype(prod(x.to(dtype), dim, keepdim), dtype)
    if dim is None or x.ndim == 0:
        axis = None if dim is None else _single_axis(dim, x.ndim, "prod")
        out = prod(reshape(x, -1), 0)                  # every element, as one row
        return name_node(reshape(out, x.shape if axis is not None and keepdim else ()),
                         "ProdBackward0" if axis is None else "ProdBackward1")   # prod.dim_int
    axis = _single_axis(dim, x.ndim, "prod")
    if x.dtype.kind in "biu":
        xp = backend.get_array_module(x._data)
        return Tensor._wrap(xp.asarray(x._data.prod(axis=axis, keepdims=keepdim,
                                                    dtype=np.int64)))
    return Prod.apply(x, axis=axis, keepdim=keepdim)


def cumsum(x: Tensor, dim: int, *, dtype: Any = None) -> Tensor:
    """Running sums along ``dim`` (required, as in PyTorch). Integer and bool tensors give
    int64, as PyTorch; ``dtype`` converts x first and is the result's dtype."""
    if dtype is not None:
        refuse_bool_running(dtype, "cumsum")
        return in_integer_dtype(cumsum(x.to(dtype), dim), dtype)
    axis = _single_axis(dim, x.ndim, "cumsum")
    if x.ndim == 0:
        return name_node(reshape(cumsum(reshape(x, 1), 0), ()), "CumsumBackward0")
    if x.dtype.kind in "biu":
        return Tensor._wrap(backend.get_array_module(x._data).cumsum(x._data, axis=axis,
                                                                     dtype=np.int64))
    return Cumsum.apply(x, axis=axis)


def refuse_bool_running(dtype: Any, op: str) -> None:
    """PyTorch has no bool kernel for running sums and products (cumsum(x, 0, dtype=bool))."""
    if dtype is not None and normalize_dtype(dtype) == np.bool_:
        raise RuntimeError(f'"{op}_out_cpu" not implemented for \'Bool\' (as torch): a '
                           f"running {op[3:]} of bools has no kernel; pass dtype=torch.int64")


def _single_axis(dim: int, ndim: int, op: str) -> int:
    if not isinstance(dim, (int, np.integer)) or isinstance(dim, bool):
        raise TypeError(f"{op}: dim must be one int, got {dim!r}")
    (axis,) = _axes(dim, ndim, op) or (0,)
    return axis
