"""Ops that compare elements: maximum/minimum, max/min with their indices, argmax/argmin,
sort and topk (docs/derivations.md#maximum-and-minimum, #sort-and-topk).

The values of max, min, sort and topk are copies of input elements, so their gradients go
back to the elements they were copied from; indices carry no gradient.
"""
from __future__ import annotations

from typing import Any, Optional

import numpy as np

from .. import backend
from ..precision import refuse_complex_order
from ..autograd import Function, name_node, unbroadcast
from ..tensor import Tensor
from .return_types import return_type
from .elementwise import _binary
from .indexing import Gather, along_axis_index
from .reduce import _check_not_empty, _single_axis, amax, amin
from .tie_order import torch_cpu_order, torch_cpu_topk

__all__ = ["maximum", "minimum", "max", "min", "argmax", "argmin", "sort", "topk",
           "MaxResult", "MinResult", "SortResult", "TopkResult"]

MaxResult = return_type("max", ["values", "indices"])
MinResult = return_type("min", ["values", "indices"])
SortResult = return_type("sort", ["values", "indices"])
TopkResult = return_type("topk", ["values", "indices"])


class Maximum(Function):
    """out = max(a, b) elementwise (broadcasting).

    Where a > b the output is a copy of a: da = g, db = 0; where a < b the other way round.
    At a tie both are the maximum and each gets g / 2, as PyTorch (the two shares add up to
    g, the gradient of max(a, a) = a). A NaN on either side makes the output NaN and both
    get g (PyTorch's rule: neither a < b nor a > b holds). Then unbroadcast.
    """

    def forward(self, a, b):
        self.save_for_backward(a, b)
        return backend.get_array_module(a).maximum(a, b)

    def backward(self, grad):
        a, b = self.saved
        xp = backend.get_array_module(grad)
        shared = xp.where(a == b, grad / 2, grad)
        return (unbroadcast(xp.where(a < b, 0, shared), a.shape),
                unbroadcast(xp.where(a > b, 0, shared), b.shape))


class Minimum(Function):
    """out = min(a, b) elementwise: Maximum's backward with the comparisons swapped."""

    def forward(self, a, b):
        self.save_for_backward(a, b)
        return backend.get_array_module(a).minimum(a, b)

    def backward(self, grad):
        a, b = self.saved
        xp = backend.get_array_module(grad)
        shared = xp.where(a == b, grad / 2, grad)
        return (unbroadcast(xp.where(a > b, 0, shared), a.shape),
                unbroadcast(xp.where(a < b, 0, shared), b.shape))


def both_tensors(op: str, input: Any, other: Any) -> None:  # noqa: A002 - PyTorch's names
    """torch's ``maximum``/``minimum``/``atan2`` take two tensors; a Python number is a
    TypeError there (wrap it: torch.tensor(2)), so it is one here too."""
    for position, (name, value) in enumerate((("input", input), ("other", other))):
        if not isinstance(value, Tensor):
            raise TypeError(f"{op}(): argument '{name}' (position {position}) must be Tensor, "
                            f"not {type(value).__name__}; wrap a number as tensor({value!r})")


def maximum(input: Any, other: Any) -> Tensor:  # noqa: A002 - PyTorch's name
    both_tensors("maximum", input, other)
    return _binary(Maximum, "maximum", input, other)


def minimum(input: Any, other: Any) -> Tensor:  # noqa: A002
    both_tensors("minimum", input, other)
    return _binary(Minimum, "minimum", input, other)


# ------------------------------------------------------------------ max / min with indices
def max(x: Tensor, dim: Any = None, keepdim: bool = False) -> Any:  # noqa: A001
    """Like ``torch.max``: ``max(x)`` the overall maximum; ``max(x, dim)`` a (values,
    indices) pair; ``max(x, other_tensor)`` the elementwise ``maximum``."""
    if not isinstance(x, Tensor):
        raise TypeError(f"max(): argument 'input' (position 0) must be Tensor, not "
                        f"{type(x).__name__}")
    if isinstance(dim, Tensor):
        return maximum(x, dim)
    if dim is None:                        # torch: +0.0 where the maximum is not
        return name_node(amax(x, _spread=True), "MaxBackward1")
    values, indices = _values_at_index(x, _one_dim(dim, "max"), keepdim, "argmax")
    return MaxResult(name_node(values, "MaxBackward0"), indices)


def min(x: Tensor, dim: Any = None, keepdim: bool = False) -> Any:  # noqa: A001
    """Like ``torch.min``: ``min(x)``, ``min(x, dim)`` -> (values, indices), or
    ``min(x, other_tensor)``, the elementwise ``minimum``."""
    if not isinstance(x, Tensor):
        raise TypeError(f"min(): argument 'input' (position 0) must be Tensor, not "
                        f"{type(x).__name__}")
    if isinstance(dim, Tensor):
        return minimum(x, dim)
    if dim is None:
        return name_node(amin(x, _spread=True), "MinBackward1")
    values, indices = _values_at_index(x, _one_dim(dim, "min"), keepdim, "argmin")
    return MinResult(name_node(values, "MinBackward0"), indices)


def _values_at_index(x: Tensor, dim: int, keepdim: bool, op: str) -> Any:
    """max(x, dim) / min(x, dim): the element at the returned index, picked by Gather, so at
    a tie the gradient goes to that index only (the first tie), as torch's MaxBackward0;
    it keeps the indices, not x (docs/derivations.md#max). amax/amin split ties evenly."""
    indices = _arg_extreme(x, dim, True, op)
    if x.ndim == 0:
        return Gather.apply(x, index=(), unique=True), indices
    axis = _single_axis(dim, x.ndim, op)
    values = Gather.apply(x, index=along_axis_index(indices._data, axis), unique=True)
    if keepdim:
        return values, indices
    return values.squeeze(axis), indices.squeeze(axis)


def _one_dim(dim: Any, op: str) -> int:
    if not isinstance(dim, (int, np.integer)) or isinstance(dim, bool):
        raise TypeError(f"{op}(x, dim) takes one int dim, got {dim!r}; use a{op} for several "
                        f"dims, or {op}(x, other_tensor) for the elementwise {op}imum")
    return dim


def argmax(x: Tensor, dim: Optional[int] = None, keepdim: bool = False) -> Tensor:
    """Index of the largest element (the first one at a tie, and NaN counts as largest, as
    PyTorch); over the flattened tensor when ``dim`` is None. int64, no gradient. A bool
    tensor is refused, as torch refuses it (``mask.nonzero()`` or ``mask.int().argmax()``)."""
    _refuse_bool(x, "argmax")
    return _arg_extreme(x, dim, keepdim, "argmax")


def argmin(x: Tensor, dim: Optional[int] = None, keepdim: bool = False) -> Tensor:
    _refuse_bool(x, "argmin")
    return _arg_extreme(x, dim, keepdim, "argmin")


def _refuse_bool(x: Tensor, op: str) -> None:
    if isinstance(x, Tensor) and x.dtype == np.bool_:
        raise RuntimeError(f"{op}(): does not support bool input (as torch); convert it, "
                           f"x.int().{op}(), or find the True positions with x.nonzero()")


def _arg_extreme(x: Tensor, dim: Optional[int], keepdim: bool, op: str) -> Tensor:
    refuse_complex_order(op, x)
    data = x._data
    xp = backend.get_array_module(data)
    if dim is None:
        if x.numel() == 0:                  # torch: IndexError, the dim must be specified
            raise IndexError(f"{op}: cannot reduce over an empty tensor (shape {x.shape}) "
                             f"without a dim: Expected reduction dim to be specified")
        out = xp.asarray(getattr(data.reshape(-1), op)()).astype(np.int64)
        return Tensor._wrap(out.reshape((1,) * x.ndim) if keepdim else out)
    axis = _single_axis(dim, x.ndim, op)
    if x.ndim == 0:
        return Tensor._wrap(xp.zeros((), dtype=np.int64))
    _check_not_empty(x, (axis,), op)
    out = xp.asarray(getattr(data, op)(axis=axis)).astype(np.int64)
    return Tensor._wrap(xp.expand_dims(out, axis) if keepdim else out)


# ------------------------------------------------------------------ sort and topk
def _sort_indices(data: Any, axis: int, descending: bool, stable: bool = True) -> Any:
    """Sort order along ``axis``; NaN counts as the largest value, as in PyTorch.

    ``stable`` (and any array off the CPU): the stable order. Descending and stable: sort the
    reversed array ascending (ties in reversed order), then reverse the result (ties back in
    original order, NaNs first) and map the positions of the reversed array back
    (i -> n - 1 - i). Negating would break NaN, bool and unsigned ints.

    Not ``stable`` on the CPU: the order torch's CPU sort leaves equal values in (its
    ``std::sort``, replayed by ops/tie_order.py where it differs from the stable order)."""
    refuse_complex_order("sort", data)
    xp = backend.get_array_module(data)
    if not stable and backend.device_of(data) == "cpu" and data.ndim:
        return _along_rows(data, axis, lambda rows: torch_cpu_order(rows,
                                                                    descending=descending))
    if not descending:
        return xp.argsort(data, axis=axis, kind="stable")
    n = data.shape[axis]
    order = xp.argsort(xp.flip(data, axis), axis=axis, kind="stable")
    return (n - 1) - xp.flip(order, axis)


def _along_rows(data: Any, axis: int, per_rows: Any) -> Any:
    """``per_rows`` (R, N) -> (R, M) applied to the slices along ``axis``; back in place."""
    moved = np.moveaxis(data, axis, -1)
    count = int(np.prod(moved.shape[:-1], dtype=np.int64))      # (-1 fails when empty)
    rows = np.ascontiguousarray(moved).reshape(count, moved.shape[-1])
    out = per_rows(rows)
    return np.moveaxis(out.reshape(moved.shape[:-1] + out.shape[-1:]), -1, axis)


def sort(x: Tensor, dim: int = -1, descending: bool = False, stable: Any = None) -> Any:
    """``torch.sort``: (values, indices) along ``dim``; the gradient flows through the
    values. Equal elements keep their order with ``stable=True``; without it, on the CPU,
    they come out in the order torch's CPU sort leaves them (ops/tie_order.py), on a GPU in
    the stable order."""
    axis = _single_axis(dim, x.ndim, "sort")
    name = "SortBackward0" if stable is None else "SortBackward1"   # torch's two overloads
    if x.ndim == 0:
        return SortResult(name_node(Gather.apply(x, index=(), unique=True), name),
                          Tensor._wrap(backend.get_array_module(x._data).zeros((), np.int64)))
    order = _sort_indices(x._data, axis, descending, bool(stable)).astype(np.int64)
    values = Gather.apply(x, index=along_axis_index(order, axis), unique=True)
    return SortResult(name_node(values, name), Tensor._wrap(order))


def topk(x: Tensor, k: int, dim: int = -1, largest: bool = True, sorted: bool = True  # noqa: A002
         ) -> Any:
    """``torch.topk``: the ``k`` largest (or smallest) elements along ``dim`` and their
    indices, largest first. On the CPU, equal elements come out as torch's CPU topk leaves
    them (its std::partial_sort or std::nth_element, replayed by ops/tie_order.py), and with
    ``sorted=False`` in its order too; on a GPU, sorted, ties in the stable order."""
    if isinstance(x, Tensor) and x.dtype == np.bool_:
        raise RuntimeError("topk does not support bool dtypes on CPU (as torch); convert the "
                           "tensor with .int() or .float() first")
    axis = _single_axis(dim, x.ndim, "topk")
    size = x.shape[axis] if x.ndim else 1
    if not isinstance(k, (int, np.integer)) or isinstance(k, bool) or not 0 <= k <= size:
        raise ValueError(f"topk: k must be a whole number from 0 to {size} (the size of dim "
                         f"{dim}), got {k!r}")
    if x.ndim == 0:                             # as a 1-element row, then back to 0-d
        values, indices = topk(x.reshape(1), k)
        if not k:
            return TopkResult(values, indices)
        return TopkResult(name_node(values.reshape(()), "TopkBackward0"), indices.reshape(()))
    if backend.device_of(x._data) == "cpu":
        order = _along_rows(x._data, axis, lambda rows: torch_cpu_topk(
            rows, int(k), bool(largest), bool(sorted)))
    else:
        order = _sort_indices(x._data, axis, largest)
        order = order[(slice(None),) * axis + (slice(0, k),)]
    order = order.astype(np.int64)
    values = Gather.apply(x, index=along_axis_index(order, axis), unique=True)
    return TopkResult(name_node(values, "TopkBackward0"), Tensor._wrap(order))

