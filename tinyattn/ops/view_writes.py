"""In-place writes through a view while gradients are recorded, as PyTorch records them.

``X = (w * 1).reshape(-1, 4); X[X == 0] = -1.0`` writes into the memory of the base
``w * 1``. The base then holds new values, so it takes a new history: ``CopySlices``, whose
inputs are the base as it was and the view's new values (the in-place op computed out of
place). Every view of the base (the one written through, and any other still alive) then
reads from the new base: it takes an ``AsStrided`` history, the selection of its elements
from the base. Gradients follow the memory (docs/derivations.md#in-place-ops):

    base_new = base_old with base_new[pos] = r      (pos: the view's elements in the base)
    CopySlices:  d base_old = g with g[pos] = 0,    d r = g[pos]
    AsStrided:   view = base_new[pos],              d base_new = zeros, += g at pos

``pos`` is computed once per write from the arrays' addresses and strides, so it covers any
view (reshape, transpose, slices, ``x[:, 0]``, a view of a view). The version counter is the
one the base and its views already share: an op that saved any of them before the write
still refuses to backward.
"""
from __future__ import annotations

import weakref
from typing import Any

import numpy as np

from .. import backend
from ..autograd import Function
from ..tensor import Tensor

__all__ = ["CopySlices", "AsStrided", "write_through_view", "rebase_views", "positions"]


class CopySlices(Function):
    """out = base with out[pos] = r (out is the base's own array, already written).

    d base = g with g[pos] = 0 (those elements were overwritten);  d r = g[pos]."""

    def forward(self, base, r, pos: Any):
        self.save_for_backward(pos)
        return base

    def backward(self, grad):
        (pos,) = self.saved
        d_base = d_r = None
        if self.needs_input_grad[0]:
            d_base = grad.copy()                         # C-contiguous: reshape is a view
            d_base.reshape(-1)[pos.reshape(-1)] = 0
        if self.needs_input_grad[1]:
            d_r = grad.reshape(-1)[pos]                  # (view's shape)
        return d_base, d_r


class AsStrided(Function):
    """out = base[pos] (the view's existing array, the same memory).

    d base = zeros of base's shape, with g added at pos (added: a stride-0 view repeats)."""

    def forward(self, base, pos: Any, view: Any):
        self.save_for_backward(base.shape, pos)
        return view

    def backward(self, grad):
        shape, pos = self.saved
        xp = backend.get_array_module(grad)
        d_base = xp.zeros(shape, dtype=grad.dtype)
        backend.scatter_add(d_base.reshape(-1), pos.reshape(-1), grad.reshape(-1))
        return (d_base,)


def _address(array: Any) -> int:
    """Where an array's first element lives (NumPy's or the CUDA array interface)."""
    for name in ("__array_interface__", "__cuda_array_interface__"):
        interface = getattr(array, name, None)
        if interface is not None:
            return int(interface["data"][0])
    inner = getattr(array, "_array", None)               # the strict test device's wrapper
    if inner is not None:
        return _address(inner)
    raise TypeError(f"cannot locate the memory of a {type(array).__name__} array")


def _offsets(shape: Any, strides: Any, start: int) -> np.ndarray:
    """The byte offset of every element of an array with this shape and strides."""
    offsets = np.full((), start, dtype=np.int64)
    for n, step in zip(shape, strides):
        offsets = np.add.outer(offsets, np.arange(n, dtype=np.int64) * step)
    return offsets


def positions(base: Any, view: Any) -> Any:
    """Flat (C-order) indices into ``base`` of every element of ``view`` (view's shape)."""
    size = base.itemsize
    view_offsets = _offsets(view.shape, view.strides, _address(view) - _address(base))
    base_offsets = _offsets(base.shape, base.strides, 0).reshape(-1)
    order = np.argsort(base_offsets, kind="stable")
    ordered = base_offsets[order]
    slot = np.clip(np.searchsorted(ordered, view_offsets), 0, max(ordered.size - 1, 0))
    if view.size and (base.size == 0 or not (ordered[slot] == view_offsets).all()):
        raise RuntimeError(f"an in-place write through a view of shape {view.shape}: its "
                           f"elements could not be located in its base of shape {base.shape} "
                           f"(item size {size}); clone() the view before writing into it")
    return backend.to_device(order[slot], backend.device_of(base))


def write_through_view(base: Tensor, view: Tensor, result: Tensor) -> None:
    """``view``'s memory now holds ``result``: give ``base`` the history CopySlices(base as
    it was, result), then make every live view of base (``view`` included) read from it."""
    from .elementwise import convert  # noqa: PLC0415 - same layer
    _refuse_dtype_view(base, view)
    before = Tensor._wrap(base._data, base.requires_grad)    # the base as it was
    before._ctx, before._vc = base._ctx, base._version_counter()
    r = result if result.dtype == base.dtype else convert(result, dtype=base.dtype)
    out = CopySlices.apply(before, r, pos=positions(base._data, view._data))
    base._ctx, base._requires_grad = out._ctx, out.requires_grad
    _retain(base)
    rebase_views(base)


def rebase_views(base: Tensor) -> None:
    """Every live view of ``base`` reads the base as it is now: an AsStrided history."""
    refs = base._view_refs or []
    alive = [ref for ref in refs if ref() is not None]
    base._view_refs = alive
    for ref in alive:
        view = ref()
        if view is None or view._base is not base:
            continue
        _refuse_dtype_view(base, view)
        out = AsStrided.apply(base, pos=positions(base._data, view._data), view=view._data)
        view._ctx, view._requires_grad = out._ctx, out.requires_grad
        _retain(view)


def _refuse_dtype_view(base: Tensor, view: Tensor) -> None:
    """The histories above locate a view's elements in its base by address, one element of
    the base per element of the view: a view that reinterprets the dtype (view_as_real,
    view_as_complex, .real, .imag: one complex element is two real ones) has no such map, so
    an in-place write that would need one is refused here instead of giving a wrong
    gradient (torch supports it)."""
    if (base._data.dtype.kind == "c") != (view._data.dtype.kind == "c"):
        raise RuntimeError(
            f"an in-place write while gradients are recorded, to a {view.dtype} view of a "
            f"{base.dtype} tensor (view_as_real, view_as_complex, .real or .imag), or to its "
            f"base while the view is alive: tinyattn cannot give that view a history (torch "
            f"can); clone() the view first, or write under torch.no_grad()")


def _retain(t: Tensor) -> None:
    if t._retains_grad and t._ctx is not None:
        t._ctx._retained = weakref.ref(t)
