"""Reductions: sum, mean, max over some axes (docs/derivations.md#reductions).

``dim`` is an int, a tuple of ints, or None for all axes; ``keepdim`` keeps the reduced axes
with size 1, as in PyTorch.
"""
from __future__ import annotations

import builtins
from collections import namedtuple
from typing import Optional, Sequence, Tuple, Union

import numpy as np

from .. import backend
from ..autograd import Function
from ..tensor import Tensor

__all__ = ["sum", "mean", "amax", "max"]

Dim = Union[int, Sequence[int], None]
MaxResult = namedtuple("MaxResult", ["values", "indices"])


def _axes(dim: Dim, ndim: int, op: str) -> Tuple[int, ...]:
    """Normalise ``dim`` to a sorted tuple of non-negative axes, with a clear range error.

    A 0-d tensor accepts dim 0 or -1 as PyTorch does, reducing over nothing (axes ())."""
    if dim is None:
        return tuple(range(ndim))
    dims = (int(dim),) if isinstance(dim, (int, np.integer)) else tuple(int(d) for d in dim)
    rank = builtins.max(ndim, 1)  # this module's max() is the tensor op
    for d in dims:
        if not -rank <= d < rank:
            raise IndexError(f"{op}: dim {d} is out of range for a tensor with {ndim} dims "
                             f"(valid: {-rank} to {rank - 1})")
    axes = tuple(sorted(d % rank for d in dims))
    if len(set(axes)) != len(axes):
        raise ValueError(f"{op}: dim {dim} names the same axis twice")
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
        return x.sum(axis=axes, keepdims=keepdim)

    def backward(self, grad):
        shape, axes, keepdim = self.saved
        xp = backend.get_array_module(grad)
        return xp.broadcast_to(_expand_back(grad, shape, axes, keepdim), shape)


class Mean(Function):
    """out = sum(x) / N over ``axes`` (N elements reduced).   dx = g / N along those axes."""

    def forward(self, x, axes: Tuple[int, ...], keepdim: bool):
        self.save_for_backward(x.shape, axes, keepdim)
        return x.mean(axis=axes, keepdims=keepdim)

    def backward(self, grad):
        shape, axes, keepdim = self.saved
        xp = backend.get_array_module(grad)
        count = 1
        for a in axes:
            count *= shape[a]
        return xp.broadcast_to(_expand_back(grad, shape, axes, keepdim) / count, shape)


class Amax(Function):
    """out = max of x over ``axes``.

    dx = g at the position of the maximum, 0 elsewhere. Ties split the gradient evenly: if
    k elements share the maximum, each gets g / k (the sum over ties is g, as for any
    subgradient, and the split is symmetric, so it does not depend on element order).
    """

    def forward(self, x, axes: Tuple[int, ...], keepdim: bool):
        out = x.max(axis=axes, keepdims=True)
        self.save_for_backward(x == out, axes, keepdim)
        return out if keepdim else out.squeeze(axis=axes)

    def backward(self, grad):
        is_max, axes, keepdim = self.saved
        grad = _expand_back(grad, is_max.shape, axes, keepdim)
        ties = is_max.sum(axis=axes, keepdims=True)
        return grad * is_max / ties.astype(grad.dtype)


def sum(x: Tensor, dim: Dim = None, keepdim: bool = False) -> Tensor:  # noqa: A001
    return Sum.apply(x, axes=_axes(dim, x.ndim, "sum"), keepdim=keepdim)


def mean(x: Tensor, dim: Dim = None, keepdim: bool = False) -> Tensor:
    return Mean.apply(x, axes=_axes(dim, x.ndim, "mean"), keepdim=keepdim)


def amax(x: Tensor, dim: Dim = None, keepdim: bool = False) -> Tensor:
    return Amax.apply(x, axes=_axes(dim, x.ndim, "amax"), keepdim=keepdim)


def max(x: Tensor, dim: Optional[int] = None, keepdim: bool = False):  # noqa: A001
    """Like ``torch.max``: the overall maximum, or with ``dim`` a (values, indices) pair."""
    if dim is None:
        return amax(x)
    if isinstance(dim, Tensor):
        raise TypeError("max(x, other_tensor) is the elementwise maximum: use "
                        "tinyattn.maximum(x, other); max(x, dim) takes an int dim")
    if not isinstance(dim, (int, np.integer)) or isinstance(dim, bool):
        raise TypeError("max(x, dim) takes one int dim; use amax for several dims")
    values = amax(x, dim, keepdim)
    xp = backend.get_array_module(x._data)
    (axis,) = _axes(dim, x.ndim, "max") or (None,)
    indices = xp.asarray(x._data.argmax(axis=axis))
    if keepdim and axis is not None:
        indices = xp.expand_dims(indices, axis)
    return MaxResult(values, Tensor._wrap(indices))
