"""More reductions and scans: nansum, nanmean, var_mean, std_mean, logcumsumexp, cummax,
cummin, diff, aminmax, median, nanmedian, kthvalue (docs/derivations.md#more-reductions).

The ops that pick an element (cummax, median with dim, kthvalue) find its index without a
gradient, then ``gather`` it: gather's backward sends g to exactly that index, as torch.
"""
from __future__ import annotations

from typing import Any, Optional, Tuple

import numpy as np

from .. import backend
from ..autograd import Function, keep_versions, name_node
from ..precision import is_floating
from ..tensor import Tensor
from ..precision import DtypeNotImplementedError
from .return_types import return_type
from .elementwise import sub
from .indexing import gather, gather_at_picked
from .reduce import Dim, _axes, _check_not_empty, _expand_back, _single_axis, amax, amin, mean
from .reduce import sum as plain_sum
from .shape import cat, squeeze
from .rearrange import narrow
from .stats import Std, Var, _moment, std, var
from .tie_order import torch_cpu_kth
from ..precision import refuse_complex_order

__all__ = ["nansum", "nanmean", "var_mean", "std_mean", "logcumsumexp", "cummax", "cummin",
           "diff", "aminmax", "median", "nanmedian", "kthvalue"]

ValuesIndices = Any     # torch.return_types.<op>(values, indices): _values_indices(op, ...)
MinMax = return_type("aminmax", ["min", "max"])


_NODE_NAMES = {"kthvalue": "KthvalueBackward0", "median": "MedianBackward1",
               "nanmedian": "NanmedianBackward1", "cummax": "CummaxBackward0",
               "cummin": "CumminBackward0"}


def _values_indices(op: str, values: Tensor, indices: Tensor) -> Any:
    """(values, indices) as torch returns them: a ``torch.return_types.<op>``; the values'
    node named as torch's (``KthvalueBackward0``, not the gather or view it ends in)."""
    if op in _NODE_NAMES:
        name_node(values, _NODE_NAMES[op])
    return return_type(op, ["values", "indices"])(values, indices)


def _squeezed(out: Any, axes: Tuple[int, ...], keepdim: bool) -> Any:
    return out if keepdim else out.squeeze(axis=axes)


class NanSum(Function):
    """out = sum of the non-NaN x.   dx = g where x is a number, 0 where x is NaN."""

    def forward(self, x, axes: Tuple[int, ...], keepdim: bool):
        xp = backend.get_array_module(x)
        self.save_for_backward(x, axes, keepdim)
        return _squeezed(_accurate_nansum(x, axes), axes, keepdim)

    def backward(self, grad):
        x, axes, keepdim = self.saved
        xp = backend.get_array_module(grad)
        g = _expand_back(grad, x.shape, axes, keepdim)
        return xp.where(xp.isnan(x), 0, g).astype(grad.dtype)


class NanMean(Function):
    """out = (sum of the non-NaN x) / N, N their count (NaN when N = 0).
    dx = g / N where x is a number, 0 where x is NaN."""

    def forward(self, x, axes: Tuple[int, ...], keepdim: bool):
        xp = backend.get_array_module(x)
        count = (~xp.isnan(x)).sum(axis=axes, keepdims=True).astype(x.dtype)
        self.save_for_backward(x, count, axes, keepdim)           # x: as torch keeps it
        with np.errstate(invalid="ignore", divide="ignore"):
            out = _accurate_nansum(x, axes) / count
        return _squeezed(out, axes, keepdim)

    def backward(self, grad):
        x, count, axes, keepdim = self.saved
        xp = backend.get_array_module(grad)
        g = _expand_back(grad, x.shape, axes, keepdim)
        with np.errstate(invalid="ignore", divide="ignore"):
            return xp.where(xp.isnan(x), 0, g / count).astype(grad.dtype)


def _accurate_nansum(x: Any, axes: Tuple[int, ...]) -> Any:
    """nansum keeping dims, accumulated in float64 for long float32 sums (backend.accurate_sum),
    as torch's sum: NumPy's float32 nansum over a leading axis adds one by one (38x torch's
    error over 32,768 terms)."""
    xp = backend.get_array_module(x)
    if x.dtype.kind == "f":
        x = xp.where(xp.isnan(x), x.dtype.type(0), x)
    return backend.accurate_sum(x, axes, True)


def _log_accumulate(xp: Any, a: Any, axis: int) -> Any:
    """log sum_{j <= i} exp(a_j) along axis, one logaddexp per step, as torch accumulates
    (a loop over the axis: no ufunc.accumulate, which CuPy lacks). float32 runs in float64
    (the result is float64 then), as torch's CPU kernel accumulates in double: a float32
    running logaddexp gained a rounding per step (3,400x torch's error over 65,536 steps)."""
    if a.dtype == np.float32:
        a = a.astype(np.float64)
    moved = xp.moveaxis(a, axis, -1)
    out = moved.copy()
    for i in range(1, moved.shape[-1]):
        out[..., i] = xp.logaddexp(out[..., i - 1], moved[..., i])
    return xp.moveaxis(out, -1, axis)


def _reverse_logcumsumexp(xp: Any, a: Any, axis: int) -> Any:
    """log sum_{i >= j} exp(a_i) along axis, accumulated from the end."""
    flipped = xp.flip(a, axis=axis)
    return xp.flip(_log_accumulate(xp, flipped, axis), axis=axis)


class LogCumSumExp(Function):
    """out_i = log sum_{j <= i} e^(x_j), accumulated by logaddexp (no overflow).
    d out_i / d x_j = e^(x_j - out_i) for j <= i, so dx_j = e^(x_j) sum_{i >= j} g_i e^(-out_i).
    Split g into its positive and negative parts so both sums are logs of positive numbers:
    dx_j = e^(x_j + L+_j) - e^(x_j + L-_j), L+-_j = log sum_{i >= j} e^(log g+-_i - out_i)."""

    def forward(self, x, axis: int):
        xp = backend.get_array_module(x)
        with np.errstate(invalid="ignore", over="ignore"):
            out = _log_accumulate(xp, x, axis).astype(x.dtype) if x.size else x.copy()
        self.save_for_backward(x, out, axis)
        return out

    def backward(self, grad):
        x, out, axis = self.saved
        xp = backend.get_array_module(grad)
        if not x.size:
            return xp.zeros_like(grad)
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            parts = []
            for part in (xp.where(grad > 0, grad, 0), xp.where(grad < 0, -grad, 0)):
                reach = _reverse_logcumsumexp(xp, xp.log(part) - out, axis)
                parts.append(xp.exp(x + reach))
            return (parts[0] - parts[1]).astype(grad.dtype)


class MedianAll(Function):
    """out = the lower median of all of x (NaN if any x is NaN).   As torch, g is shared
    evenly among the elements equal to the median: dx = g [x = out] / count."""

    def forward(self, x):
        xp = backend.get_array_module(x)
        ordered = _sorted_flat(x)                  # NaN sorts last: any NaN ends the list
        out = xp.asarray(xp.where(xp.isnan(ordered[-1]), ordered[-1],
                                  ordered[(ordered.size - 1) // 2])).astype(x.dtype)
        self.save_for_backward(x, out)
        return out

    def backward(self, grad):
        x, out = self.saved
        xp = backend.get_array_module(grad)
        hit = (x == out) | (xp.isnan(x) & xp.isnan(out))
        return (hit * (grad / hit.sum())).astype(grad.dtype)


def _sorted_flat(x: Any) -> Any:
    """all of x sorted, NaN last (bfloat16 sorted as float32, where that holds)"""
    xp = backend.get_array_module(x)
    flat = x.reshape(-1)
    if flat.dtype.kind not in "biuf":
        flat = flat.astype(np.float32)
    return xp.sort(flat)


class NanMedianAll(MedianAll):
    """out = the lower median of the numbers of x (NaN only if all are NaN). The gradient as
    median's (torch's too): g shared evenly among the elements equal to out (the NaNs when
    out is NaN)."""

    def forward(self, x):
        xp = backend.get_array_module(x)
        ordered = _sorted_flat(x)
        if ordered.dtype.kind != "f":
            out = xp.asarray(ordered[max(ordered.size - 1, 0) // 2]).astype(x.dtype)
        else:       # NaNs sort last; the index stays on the device (no host sync on a GPU)
            numbers = (~xp.isnan(ordered)).sum()
            out = xp.asarray(xp.take(ordered, xp.maximum(numbers - 1, 0) // 2), x.dtype)
        self.save_for_backward(x, out)
        return out


# ------------------------------------------------------------------ public functions
def _reduce_axes(input: Tensor, dim: Dim, op: str) -> Tuple[int, ...]:  # noqa: A002
    return _axes(dim, input.ndim, op)


def nansum(input: Tensor, dim: Dim = None, keepdim: bool = False, *,  # noqa: A002
           dtype: Any = None) -> Tensor:
    """The sum treating NaN as 0 (``torch.nansum``); integers give int64, as sum."""
    if dtype is not None:
        input = input.to(dtype)
    axes = _reduce_axes(input, dim, "nansum")
    if input.dtype.kind == "c":
        raise RuntimeError("nansum on CPU does not support complex inputs (as torch)")
    if not is_floating(input.dtype):
        return plain_sum(input, dim, keepdim, dtype=dtype)
    return NanSum.apply(input, axes=axes, keepdim=keepdim)


def nanmean(input: Tensor, dim: Dim = None, keepdim: bool = False, *,  # noqa: A002
            dtype: Any = None) -> Tensor:
    """The mean of the non-NaN values (``torch.nanmean``); floating tensors only, as torch."""
    if dtype is not None:
        input = input.to(dtype)
    if not is_floating(input.dtype):
        raise RuntimeError(f"nanmean(): expected input to have floating point dtype but got "
                           f"{input.dtype.name.capitalize()} (as torch); convert with "
                           f".float() or pass dtype=")
    return NanMean.apply(input, axes=_reduce_axes(input, dim, "nanmean"), keepdim=keepdim)


def _moment_mean(moment: Any, name: str, input: Tensor, dim: Any, unbiased: Any,  # noqa: A002
                 keepdim: bool, correction: Any) -> Tuple[Tensor, Tensor]:
    if isinstance(dim, bool):               # var_mean(x, False): torch's (input, unbiased)
        dim, unbiased = None, dim
    spread = _moment(Var if moment is var else Std, name, input, dim, unbiased, keepdim,
                     correction)                # warns as var_mean()/std_mean(), as torch
    node = "VarMeanBackward0" if name == "var_mean" else "StdMeanBackward0"   # torch: one node
    return name_node(spread, node), name_node(mean(input, dim, keepdim=keepdim), node)


def var_mean(input: Tensor, dim: Dim = None, unbiased: Optional[bool] = None,  # noqa: A002
             keepdim: bool = False, *, correction: Optional[float] = None
             ) -> Tuple[Tensor, Tensor]:
    """(var, mean) over ``dim`` with var's arguments (``torch.var_mean``)."""
    return _moment_mean(var, "var_mean", input, dim, unbiased, keepdim, correction)


def std_mean(input: Tensor, dim: Dim = None, unbiased: Optional[bool] = None,  # noqa: A002
             keepdim: bool = False, *, correction: Optional[float] = None
             ) -> Tuple[Tensor, Tensor]:
    """(std, mean) over ``dim`` with std's arguments (``torch.std_mean``)."""
    return _moment_mean(std, "std_mean", input, dim, unbiased, keepdim, correction)


def logcumsumexp(input: Tensor, dim: int) -> Tensor:  # noqa: A002 - PyTorch's names
    """log of the running sum of exp along ``dim`` (``torch.logcumsumexp``)."""
    if not is_floating(input.dtype):
        raise DtypeNotImplementedError(f'"logcumsumexp_out_cpu" not implemented for '
                           f"{input.dtype.name.capitalize()!r} (as torch); convert with "
                           f".float() first")
    axis = _single_axis(dim, input.ndim, "logcumsumexp")
    if input.ndim == 0:
        return name_node(LogCumSumExp.apply(input.reshape(1), axis=0).reshape(()),
                         "LogcumsumexpBackward0")
    return LogCumSumExp.apply(input, axis=axis)


def _running_index(x: Any, axis: int, larger: bool) -> Any:
    """For each position, the index of the running max (min) so far along axis: the latest
    of equal values, and a NaN wins from where it appears on, each later NaN taking over
    (torch's rule). float16/bfloat16 compare in float32 (bfloat16's NaN is not NumPy's "f")."""
    xp = backend.get_array_module(x)
    if is_floating(x.dtype) and x.dtype.itemsize < 4:
        x = x.astype(np.float32)
    moved = xp.moveaxis(x, axis, -1)
    index = xp.zeros(moved.shape, dtype=np.int64)
    if moved.shape[-1] == 0:
        return xp.moveaxis(index, -1, axis)
    best = moved[..., 0]
    best_at = xp.zeros(best.shape, dtype=np.int64)
    index[..., 0] = 0
    for i in range(1, moved.shape[-1]):
        value = moved[..., i]
        with np.errstate(invalid="ignore"):
            better = (value >= best) if larger else (value <= best)
        if moved.dtype.kind == "f":
            better = (better & ~xp.isnan(best)) | xp.isnan(value)
        best = xp.where(better, value, best)
        best_at = xp.where(better, i, best_at)
        index[..., i] = best_at
    return xp.moveaxis(index, -1, axis)


def _cumulative_extreme(input: Tensor, dim: int, larger: bool, op: str  # noqa: A002
                        ) -> ValuesIndices:
    axis = _single_axis(dim, input.ndim, op)
    if input.ndim == 0:
        xp = backend.get_array_module(input._data)
        index = Tensor._wrap(xp.asarray(0, dtype=np.int64))
        values = keep_versions(input.clone(), input, index)   # torch keeps self and indices
        return _values_indices(op, values, index)
    index = Tensor._wrap(_running_index(input._data, axis, larger))
    return _values_indices(op, gather(input, axis, index), index)


def cummax(input: Tensor, dim: int) -> ValuesIndices:  # noqa: A002 - PyTorch's names
    """(values, indices) of the running maximum along ``dim`` (``torch.cummax``)."""
    return _cumulative_extreme(input, dim, True, "cummax")


def cummin(input: Tensor, dim: int) -> ValuesIndices:  # noqa: A002 - PyTorch's names
    """(values, indices) of the running minimum along ``dim`` (``torch.cummin``)."""
    return _cumulative_extreme(input, dim, False, "cummin")


def diff(input: Tensor, n: int = 1, dim: int = -1, prepend: Optional[Tensor] = None,  # noqa
         append: Optional[Tensor] = None) -> Tensor:
    """The n-th forward difference along ``dim``, out[i] = x[i + 1] - x[i] applied n times,
    after ``prepend`` and ``append`` are concatenated (``torch.diff``); bool tensors give
    x[i + 1] != x[i]. Composed of narrow and sub (or cat), each with its backward."""
    if input.ndim == 0:
        raise RuntimeError("diff expects input to be at least one-dimensional")
    if n < 0:
        raise RuntimeError(f"order must be non-negative but got {n}")
    if n == 0:          # as torch: nothing is concatenated either; a copy in new memory
        return name_node(input.clone(), "torch::autograd::CopyBackwards")
    axis = _single_axis(dim, input.ndim, "diff")
    parts = [t for t in (prepend, input, append) if t is not None]
    x = cat(parts, axis) if len(parts) > 1 else input
    for _ in range(n):
        length = x.shape[axis]
        if length == 0:
            break
        later, earlier = narrow(x, axis, 1, length - 1), narrow(x, axis, 0, length - 1)
        if x.dtype == np.bool_:
            xp = backend.get_array_module(x._data)
            x = Tensor._wrap(xp.asarray(later._data != earlier._data))
        else:
            x = sub(later, earlier)
    return x


def aminmax(input: Tensor, *, dim: Optional[int] = None,  # noqa: A002 - PyTorch's names
            keepdim: bool = False) -> MinMax:
    """(min, max) over ``dim`` or all of x (``torch.aminmax``)."""
    axes = _axes(dim, input.ndim, "aminmax")
    _check_not_empty(input, axes, "aminmax")
    if dim is None and keepdim:
        shape = (1,) * input.ndim
        low, high = amin(input).reshape(shape), amax(input).reshape(shape)
    else:
        low, high = amin(input, dim, keepdim), amax(input, dim, keepdim)
    return MinMax(name_node(low, "AminmaxBackward0"), name_node(high, "AminmaxBackward0"))


def _order_index(x: Any, axis: int, k: int, ignore_nan: bool) -> Any:
    """The index, along axis, of the k-th smallest value (0-based; NaN sorts last). With
    ``ignore_nan``, k counts only the numbers of each slice (its lower median: k = None).

    Which of equal values, as torch's CPU kernels: the median is the one at its place in the
    stable order (torch breaks ties by index), the first NaN where a slice holds one (for
    median); kthvalue's is the one torch's quickselect leaves at place k
    (ops/tie_order.py; on a GPU, the stable order's)."""
    xp = backend.get_array_module(x)
    if k is not None and backend.device_of(x) == "cpu":
        moved = np.moveaxis(x, axis, -1)
        rows = np.ascontiguousarray(moved).reshape(int(np.prod(moved.shape[:-1])),
                                                    moved.shape[-1])
        pick = torch_cpu_kth(rows, k).reshape(moved.shape[:-1])
        return np.expand_dims(pick, axis)
    if x.dtype.kind not in "biuf":           # bfloat16: exact in float32, NaN sorted last
        x = x.astype(np.float32)
    order = xp.argsort(x, axis=axis, kind="stable")
    if k is None:                                      # the (nan)median's position
        if ignore_nan and x.dtype.kind == "f":
            count = (~xp.isnan(x)).sum(axis=axis, keepdims=True)
            position = xp.maximum(count - 1, 0) // 2
        else:
            position = xp.full(order.sum(axis=axis, keepdims=True).shape,
                               (x.shape[axis] - 1) // 2)
            if x.dtype.kind == "f":          # a NaN makes it the median: the first NaN,
                numbers = (~xp.isnan(x)).sum(axis=axis, keepdims=True)   # after the numbers
                position = xp.where(numbers < x.shape[axis], numbers, position)
        return xp.take_along_axis(order, position.astype(np.int64), axis=axis)
    return xp.take(order, [k], axis=axis)


def _pick(input: Tensor, dim: Any, keepdim: bool, k: Optional[int], ignore_nan: bool,  # noqa
          op: str) -> ValuesIndices:
    axis = _single_axis(dim, input.ndim, op)
    if input.ndim == 0:
        xp = backend.get_array_module(input._data)
        return _values_indices(op, input * 1 if is_floating(input.dtype) else input,
                               Tensor._wrap(xp.asarray(0, dtype=np.int64)))
    if input.shape[axis] == 0:
        raise IndexError(f"{op}(): Expected reduction dim {axis} to have non-zero size.")
    index = Tensor._wrap(_order_index(input._data, axis, k, ignore_nan))
    values = gather_at_picked(input, axis, index)    # keeps the indices, as torch's does
    if not keepdim:
        values, index = squeeze(values, axis), squeeze(index, axis)
    return _values_indices(op, values, index)


def _empty_median(input: Tensor) -> Tensor:
    """The median of no values, as torch gives it: NaN, converted to the dtype as C++ (on the
    CPUs torch runs on) converts a NaN: the smallest int32/int64, 0 for the narrower integers
    (the int32 bit pattern truncated), True for bool."""
    xp = backend.get_array_module(input._data)
    dtype = np.dtype(input.dtype)
    if dtype.kind == "b":
        value: Any = True
    elif dtype.kind in "iu":
        value = int(np.iinfo(dtype).min) if dtype.itemsize >= 4 and dtype.kind == "i" else 0
    else:
        value = np.nan
    return Tensor._wrap(xp.asarray(value, dtype=dtype))


def _refuse_bool_order(input: Any, kernel: str) -> None:  # noqa: A002
    """torch has no bool kernel for median, nanmedian and kthvalue: refused with its error
    (an empty tensor takes the empty paths, as in torch)."""
    if isinstance(input, Tensor) and input.dtype == np.bool_ and input.numel():  # torch's
        # empty fast paths come first: median of an empty bool tensor is tensor(True)
        raise NotImplementedError(f"\"{kernel}\" not implemented for 'Bool' (as torch); "
                                  f"convert the tensor with .int() or .float() first")


def median(input: Tensor, dim: Any = None, keepdim: bool = False) -> Any:  # noqa: A002
    """``torch.median``: without dim the lower median of all values (NaN if any is NaN);
    with dim, (values, indices) along it."""
    refuse_complex_order("median", input)
    _refuse_bool_order(input, "median_cpu" if dim is None else "median_out")
    if dim is None:
        if input.numel() == 0:
            return _empty_median(input)
        return MedianAll.apply(input) if is_floating(input.dtype) else \
            Tensor._wrap(MedianAll().forward(input._data))
    return _pick(input, dim, keepdim, None, False, "median")


def nanmedian(input: Tensor, dim: Any = None, keepdim: bool = False) -> Any:  # noqa: A002
    """``torch.nanmedian``: median ignoring NaN (NaN only where a slice is all NaN)."""
    refuse_complex_order("nanmedian", input)     # as median: complex numbers have no order
    _refuse_bool_order(input, "median_cpu" if dim is None else "median_out")
    if dim is None:
        if input.numel() == 0:
            return _empty_median(input)
        return NanMedianAll.apply(input) if is_floating(input.dtype) else \
            Tensor._wrap(NanMedianAll().forward(input._data))
    return _pick(input, dim, keepdim, None, True, "nanmedian")


def kthvalue(input: Tensor, k: int, dim: int = -1, keepdim: bool = False  # noqa: A002
             ) -> ValuesIndices:
    """(values, indices) of the k-th smallest element along ``dim`` (k from 1)
    (``torch.kthvalue``); NaN counts as the largest value."""
    _refuse_bool_order(input, "kthvalue_cpu")
    axis = _single_axis(dim, input.ndim, "kthvalue")
    size = input.shape[axis] if input.ndim else 1
    if not 1 <= k <= size:
        raise RuntimeError(f"kthvalue(): selected number k out of range for dimension "
                           f"{axis} (k = {k}, size {size})")
    return _pick(input, dim, keepdim, k - 1, False, "kthvalue")

