"""Order statistics with torch's rules: quantile, nanquantile and mode
(docs/derivations.md#quantile-and-mode).

Both sort each slice (in the order torch's CPU std::sort leaves equal values, NaN last for
quantile: ops/tie_order.py), find the positions they need
without a gradient, then read the input there with a Function whose backward sends g back to
exactly those positions: a quantile to the one or two sorted neighbours it interpolates, the
mode to the index it returns.
"""
from __future__ import annotations

import numbers
from typing import Any, Optional, Tuple

import numpy as np

from .. import backend
from ..amp.dispatch import cast_args
from ..autograd import Function, name_node
from ..tensor import Tensor
from .indexing import gather_at_picked
from .more_reductions import ValuesIndices
from .return_types import return_type
from .reduce import _single_axis
from .shape import squeeze
from .tie_order import torch_cpu_order
from ..precision import scalar_type_name

__all__ = ["quantile", "nanquantile", "mode"]

_INTERPOLATIONS = ("linear", "lower", "higher", "midpoint", "nearest")


class QuantilePick(Function):
    """out[..., k] = lerp(x[..., b_k], x[..., a_k], w_k) over the last axis of x, where b_k and
    a_k are the (original) positions of the sorted neighbours below and above quantile k and
    w_k its weight (without ``interpolate``: out = x[..., b_k]). torch's lerp:
    lo + w (hi - lo) for |w| < 0.5, else hi - (hi - lo)(1 - w); either way
    d out / d x[b] = 1 - w and d out / d x[a] = w, so dx[b_k] += g_k (1 - w_k),
    dx[a_k] += g_k w_k (the same position twice when b = a: g_k in all).
    With "linear", w_k = r_k - floor(r_k) for the rank r_k = q_k s (s: the slice's last index,
    or its count of numbers - 1 for nanquantile), so a q tensor gets
    dq_k = sum over slices of g_k (hi_k - lo_k) s, and 0 from a slice whose rank torch
    overwrote (a NaN in quantile's slice, a negative rank in nanquantile's): ``flows``."""

    def forward(self, x, *q, below, above, weight, interpolate: bool, scale=None, flows=None):
        xp = backend.get_array_module(x)
        low = xp.take_along_axis(x, below, axis=-1)                  # (..., Q)
        if not interpolate:
            self.save_for_backward(x.shape, below, above, weight, interpolate)
            return low
        high = xp.take_along_axis(x, above, axis=-1)
        with np.errstate(invalid="ignore"):
            step = high - low
            out = xp.where(xp.abs(weight) < 0.5, low + weight * step,
                           high - step * (1 - weight)).astype(x.dtype)
        self.save_for_backward(x.shape, below, above, weight, interpolate,
                               step if q else None, scale, flows)
        return out

    def backward(self, grad):
        shape, below, above, weight, interpolate, *for_q = self.saved
        xp = backend.get_array_module(grad)
        dx = xp.zeros(shape, dtype=grad.dtype)
        rows = tuple(backend.to_device(r, backend.device_of(grad))   # the other axes
                     for r in np.indices(below.shape, sparse=True)[:-1])
        if not interpolate:
            backend.scatter_add(dx, (*rows, below), grad)
            return dx
        backend.scatter_add(dx, (*rows, below), (grad * (1 - weight)).astype(grad.dtype))
        backend.scatter_add(dx, (*rows, above), (grad * weight).astype(grad.dtype))
        if len(self.needs_input_grad) == 1:
            return dx
        step, scale, flows = for_q
        with np.errstate(invalid="ignore"):
            per_slice = xp.where(flows, grad * step * scale, 0)       # (..., Q)
        dq = per_slice.reshape(-1, per_slice.shape[-1]).sum(axis=0)
        return dx, dq.astype(grad.dtype)


_MODE_RESULT = return_type("mode", ("values", "indices"))   # torch.return_types.mode


_torch_name = scalar_type_name    # torch's ScalarType name (float32 -> Float)


def _q_array(op: str, q: Any, input: Tensor) -> Any:  # noqa: A002
    """q as an array of the input's dtype (0-d or 1-d), checked as torch checks it."""
    xp = backend.get_array_module(input._data)
    if isinstance(q, Tensor):
        if q.ndim > 1:
            raise RuntimeError(f"{op}() q must be a scalar or 1D tensor")
        return q._data, True
    if isinstance(q, (bool, numbers.Real)) and not isinstance(q, np.ndarray):
        value = float(q)
        if not 0 <= value <= 1:
            raise RuntimeError(f"{op}() q must be in the range [0, 1] but got {value}")
        return xp.asarray(value, dtype=input.dtype), False
    raise TypeError(f"{op}(): argument 'q' must be a float or a Tensor, not "
                    f"{type(q).__name__}")


def _quantile(op: str, input: Tensor, q: Any, dim: Optional[int],  # noqa: A002
              keepdim: bool, interpolation: str, ignore_nan: bool) -> Tensor:
    if not isinstance(input, Tensor):
        raise TypeError(f"{op}(): argument 'input' must be Tensor, not {type(input).__name__}")
    (input,) = cast_args(op, input)     # autocast: float32, as torch's CPU list runs quantile
    q_data, q_is_tensor = _q_array(op, q, input)
    if input.numel() == 0:
        raise RuntimeError(f"{op}() input tensor must be non-empty")
    if np.dtype(input.dtype) not in (np.float32, np.float64):
        raise RuntimeError(f"{op}() input tensor must be either float or double dtype (got "
                           f"{_torch_name(input.dtype)}); convert with .float() first")
    if q_is_tensor and q_data.dtype != input.dtype:
        raise RuntimeError(f"{op}() q tensor must be same dtype as the input tensor (q is "
                           f"{_torch_name(q_data.dtype)}, input {_torch_name(input.dtype)}); "
                           f"convert q with .to(input.dtype)")
    if interpolation not in _INTERPOLATIONS:
        raise RuntimeError(f"{op}() interpolation must be one of linear, lower, higher, "
                           f"midpoint or nearest, but got {interpolation}")
    axis = None if dim is None else _single_axis(dim, input.ndim, op)
    xp = backend.get_array_module(input._data)
    if q_is_tensor and q_data.size and not bool(((q_data >= 0) & (q_data <= 1)).all()):
        raise RuntimeError(f"{op}() q values must be in the range [0, 1]")
    # the slices to take quantiles of, along the last axis: (..., N)
    if axis is None or input.ndim == 0:
        rows = input.reshape(-1)
    else:
        rows = input.movedim(axis, -1)
    x = rows._data
    flat = backend.to_host(x).reshape(-1, x.shape[-1])                # NaN last, as torch
    order = backend.to_device(torch_cpu_order(flat).reshape(x.shape), backend.device_of(x))
    ordered = xp.take_along_axis(x, order, axis=-1)
    qs = q_data.reshape(-1)                                            # (Q,)
    last = x.shape[-1] - 1
    if ignore_nan:                    # rank among the numbers; an all-NaN slice: rank 0 (NaN)
        scale = ((~xp.isnan(ordered)).sum(axis=-1, keepdims=True) - 1).astype(x.dtype)
        ranks = qs * scale
        flows = ~(ranks < 0)
        ranks = xp.where(flows, ranks, 0).astype(x.dtype)
    else:                             # a NaN in the slice: the last rank (a NaN)
        scale = xp.full(ordered.shape[:-1] + (1,), last, dtype=x.dtype)
        flows = ~xp.isnan(ordered).any(axis=-1, keepdims=True) & xp.ones(qs.shape, bool)
        ranks = xp.where(flows, qs * scale, x.dtype.type(last)).astype(x.dtype)
    rounding = {"lower": xp.floor, "higher": xp.ceil, "nearest": xp.round}
    if interpolation in rounding:
        ranks = rounding[interpolation](ranks)
    below_rank = ranks.astype(np.int64)
    above_rank = xp.ceil(ranks).astype(np.int64)
    weight = xp.full_like(ranks, 0.5) if interpolation == "midpoint" else ranks - below_rank
    below = xp.take_along_axis(order, below_rank, axis=-1)           # original positions
    above = xp.take_along_axis(order, above_rank, axis=-1)
    interpolate = interpolation in ("linear", "midpoint")
    if interpolation == "linear" and q_is_tensor:      # q's gradient flows through the weight
        out = QuantilePick.apply(rows, q.reshape(-1), below=below, above=above, weight=weight,
                                 interpolate=True, scale=scale, flows=flows)     # (..., Q)
    else:
        out = QuantilePick.apply(rows, below=below, above=above, weight=weight,
                                 interpolate=interpolate)                  # (..., Q)
    out = _quantile_shape(out, input, axis, keepdim, q_is_tensor and q_data.ndim == 1)
    return name_node(out, "SqueezeBackward4")   # torch's quantile ends in a squeeze, always


def _quantile_shape(out: Tensor, input: Tensor, axis: Optional[int], keepdim: bool,  # noqa
                    q_first: bool) -> Tensor:
    """(..., Q) -> torch's output: Q first (a 1-d q) or none (a number), the reduced dim kept
    as 1 with keepdim (every dim, without dim)."""
    out = out.movedim(-1, 0) if q_first else squeeze(out, -1)
    if not keepdim or input.ndim == 0:
        return out
    lead = tuple(out.shape[:1]) if q_first else ()
    if axis is None:
        return out.reshape(*lead, *([1] * input.ndim))
    return out.unsqueeze(axis + len(lead))


def quantile(input: Tensor, q: Any, dim: Optional[int] = None,  # noqa: A002 - torch's names
             keepdim: bool = False, *, interpolation: str = "linear") -> Tensor:
    """``torch.quantile``: the q-th quantiles of each slice along ``dim`` (of all values
    without dim). q is a number or a 1-d tensor in [0, 1] (its values lead the output's
    shape). The rank q (n - 1) in the sorted slice falls between two neighbours;
    ``interpolation`` picks "linear" (lerp by the fraction), "lower", "higher", "nearest"
    (half to even) or "midpoint". A NaN in a slice gives NaN."""
    return _quantile("quantile", input, q, dim, keepdim, interpolation, False)


def nanquantile(input: Tensor, q: Any, dim: Optional[int] = None,  # noqa: A002
                keepdim: bool = False, *, interpolation: str = "linear") -> Tensor:
    """``torch.nanquantile``: quantile ignoring NaN (NaN only where a slice is all NaN)."""
    return _quantile("nanquantile", input, q, dim, keepdim, interpolation, True)


def _mode_positions(x: Any) -> Tuple[Any, Any]:
    """For each row of x (R, N): the position in x of its mode, torch's CPU rule: sort the
    row (as its std::sort does, by plain <), find the longest run of equal values, the first
    such run at ties of length (the smallest value), and its last element in sorted order."""
    xp = backend.get_array_module(x)
    order = backend.to_device(torch_cpu_order(backend.to_host(x), nan_last=False),
                              backend.device_of(x))
    ordered = xp.take_along_axis(x, order, axis=-1)
    n = x.shape[-1]
    starts = xp.ones(x.shape, dtype=bool)
    ends = xp.ones(x.shape, dtype=bool)
    if n > 1:
        same = ordered[:, 1:] == ordered[:, :-1]
        starts[:, 1:] = ~same
        ends[:, :-1] = ~same
    # runs pair one start with one end, in order, row after row: their lengths, at the ends
    start_at, end_at = xp.flatnonzero(starts), xp.flatnonzero(ends)
    length = xp.zeros(x.size, dtype=np.int64)
    length[end_at] = end_at - start_at + 1
    length = length.reshape(x.shape)
    end = xp.argmax(length, axis=-1)[:, None]                          # first longest run
    return xp.take_along_axis(order, end, axis=-1)[:, 0], end


def mode(input: Tensor, dim: int = -1, keepdim: bool = False  # noqa: A002 - torch's names
         ) -> ValuesIndices:
    """``torch.mode``: (values, indices) of the most frequent value of each slice along
    ``dim``. At a tie of counts the smallest value wins; the index is that of the value's
    last copy in the order torch's CPU ``std::sort`` leaves the slice (ops/tie_order.py: for
    up to 16 values, its last occurrence). The gradient goes to the returned index."""
    axis = _single_axis(dim, input.ndim, "mode")
    xp = backend.get_array_module(input._data)
    if input.ndim == 0:
        values = input * 1 if input.dtype.kind == "f" else input.clone()
        return _MODE_RESULT(name_node(values, "ModeBackward0"),
                            Tensor._wrap(xp.asarray(0, dtype=np.int64)))
    if input.shape[axis] == 0:
        raise IndexError(f"mode(): Expected reduction dim {axis} to have non-zero size.")
    moved = xp.moveaxis(input._data, axis, -1)
    rows = moved.reshape(-1, moved.shape[-1])                           # (R, N)
    if rows.shape[0] == 0:
        index_rows = xp.zeros((0,), dtype=np.int64)
    else:
        index_rows, _ = _mode_positions(rows)
    index = xp.expand_dims(index_rows.reshape(moved.shape[:-1]), axis)
    index_tensor = Tensor._wrap(index.astype(np.int64))
    values = gather_at_picked(input, axis, index_tensor)        # keeps the indices, as torch
    if not keepdim:
        values, index_tensor = squeeze(values, axis), squeeze(index_tensor, axis)
    return _MODE_RESULT(name_node(values, "ModeBackward0"), index_tensor)
