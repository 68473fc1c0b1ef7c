"""Reading a chosen set of elements: ``masked_select`` (the elements where a mask is True,
as a 1-D tensor), ``take_along_dim`` (gather with broadcasting) and ``Tensor.unfold``
(sliding windows along one dim) (docs/derivations.md#scatter-into-a-region-and-masked-select).

Every output element is a copy of one input element, so the gradient is scattered back to
where it came from; a window that overlaps another reads some elements twice, so unfold's
backward ADDS (np.add.at), as gather's does.
"""
from __future__ import annotations

from typing import Any, Optional

import numpy as np

from .. import backend
from ..autograd import Function
from ..tensor import Tensor
from .indexing import gather
from .layout import expand
from .shape import _normalize_dim, reshape

__all__ = ["masked_select", "take_along_dim", "unfold"]


class MaskedSelect(Function):
    """out = x[mask] (1-D, row-major order).   dx = zeros, then dx[mask] = g.
    x and the mask are saved (as torch saves them), so writing to either before backward
    raises; ``given`` is the mask as the caller passed it (before broadcasting)."""

    def forward(self, x, given, mask: Any):
        self.save_for_backward(x, given, mask)
        return x[mask]

    def backward(self, grad):
        x, _, mask = self.saved
        dx = backend.get_array_module(grad).zeros(x.shape, dtype=grad.dtype)
        dx[mask] = grad
        return dx, None


def masked_select(input: Tensor, mask: Tensor) -> Tensor:  # noqa: A002 - torch's names
    """``torch.masked_select``: the elements of input where the boolean mask is True, as a
    1-D tensor (input and mask broadcast together first)."""
    if not isinstance(input, Tensor):
        raise TypeError(f"masked_select(): argument 'input' must be Tensor, not "
                        f"{type(input).__name__}")
    if not isinstance(mask, Tensor) or mask.dtype != np.bool_:
        raise RuntimeError(f"masked_select: expected BoolTensor for mask, got "
                           f"{getattr(mask, 'dtype', type(mask).__name__)}; convert it with "
                           f".bool() (or mask != 0)")
    try:
        shape = np.broadcast_shapes(input.shape, mask.shape)
    except ValueError:
        raise RuntimeError(f"masked_select: the shape of the mask {mask.shape} and of the "
                           f"input {input.shape} do not broadcast together") from None
    x = expand(input, shape) if tuple(input.shape) != shape else input
    xp = backend.get_array_module(mask._data)
    chosen = xp.broadcast_to(mask._data, shape).copy()
    return MaskedSelect.apply(x, mask, mask=chosen)


def take_along_dim(input: Tensor, indices: Tensor,  # noqa: A002 - torch's names
                   dim: Optional[int] = None) -> Tensor:
    """``torch.take_along_dim``: ``gather`` along ``dim`` after broadcasting input and
    indices in every other dim, each index taken modulo the size of ``dim`` as torch does
    (``dim=None``: both flattened, indices range-checked). Differentiated by expand's and
    gather's backwards."""
    if not isinstance(input, Tensor) or not isinstance(indices, Tensor):
        raise TypeError("take_along_dim(): input and indices must be Tensors")
    if indices.dtype.kind not in "iu":
        raise RuntimeError(f"torch.take_along_dim(): dtype of indices should be Long but got "
                           f"{indices.dtype}")
    if dim is None:                     # flattened: indices are checked, never wrapped
        return gather(reshape(input, (-1,)), 0, reshape(indices, (-1,)))
    if input.ndim != indices.ndim:
        raise RuntimeError(f"torch.take_along_dim(): input and indices should have the same "
                           f"number of dimensions, but got {input.ndim} dimensions for input, "
                           f"and {indices.ndim} dimensions for indices")
    axis = _normalize_dim(int(dim), max(input.ndim, 1), "take_along_dim")
    if input.ndim == 0:
        return gather(input, 0, indices)
    in_shape, id_shape = list(input.shape), list(indices.shape)
    in_shape[axis] = id_shape[axis] = 1
    try:
        common = list(np.broadcast_shapes(tuple(in_shape), tuple(id_shape)))
    except ValueError:
        raise RuntimeError(f"take_along_dim: input {input.shape} and indices "
                           f"{indices.shape} do not broadcast outside dim {dim}") from None
    want_input = common.copy()
    want_input[axis] = input.shape[axis]
    want_indices = common.copy()
    want_indices[axis] = indices.shape[axis]
    x = expand(input, want_input) if list(input.shape) != want_input else input
    ids = expand(indices, want_indices) if list(indices.shape) != want_indices else indices
    return gather(x, axis, _wrapped(ids, input.shape[axis]))


def _wrapped(indices: Tensor, size: int) -> Tensor:
    """Indices taken modulo ``size``, as torch's take_along_dim reads them along a dim: -1 is
    size - 1, and so is 2 * size - 1 (torch checks no bound there; dim=None checks)."""
    if size == 0:
        return indices
    return Tensor._wrap(indices._data % size)     # no test first: that would read the device


class Unfold(Function):
    """out[..., w, ..., j] = x[..., w * step + j, ...]: the windows of ``size`` elements
    along ``axis``, ``step`` apart, as a new last dim.   dx = zeros, then
    dx[..., w * step + j, ...] += g[..., w, ..., j] (windows overlap when step < size)."""

    returns_view = True

    def forward(self, x, axis: int, size: int, step: int):
        xp = backend.get_array_module(x)
        count = (x.shape[axis] - size) // step + 1
        positions = xp.arange(count)[:, None] * step + xp.arange(size)[None, :]  # (W, size)
        self.save_for_backward(x.shape, x.dtype, axis, positions)
        # A view, as torch's (a write into a window reaches x): the window dim steps
        # ``step`` elements, the new last dim one. Windows that overlap (step < size) are
        # read-only: torch lets an in-place op run there element by element (undefined by
        # its docs), changing a shared element once per window, where tinyattn's in-place
        # ops would change it once: refused loudly rather than differ silently
        # (docs/pytorch.md, not implemented).
        shape = x.shape[:axis] + (count,) + x.shape[axis + 1:] + (size,)
        strides = (x.strides[:axis] + (x.strides[axis] * step,) + x.strides[axis + 1:]
                   + (x.strides[axis],))
        overlap = step < size and count > 1
        return xp.lib.stride_tricks.as_strided(
            x, shape, strides, writeable=bool(x.flags.writeable) and not overlap)

    def backward(self, grad):
        shape, dtype, axis, positions = self.saved
        xp = backend.get_array_module(grad)
        dx = xp.zeros(shape, dtype=grad.dtype)
        windows = xp.moveaxis(grad, -1, axis + 1)           # (..., W, size, ...)
        moved = xp.moveaxis(dx, axis, 0)                    # a view: writes reach dx
        backend.scatter_add(moved, positions, xp.moveaxis(windows, (axis, axis + 1), (0, 1)))
        return dx


def unfold(input: Tensor, dimension: int, size: int, step: int) -> Tensor:  # noqa: A002
    """``Tensor.unfold(dimension, size, step)``: every window of ``size`` elements along
    ``dimension``, ``step`` apart, as a new last dim (a 0-d tensor counts as one element)."""
    if not isinstance(input, Tensor):
        raise TypeError(f"unfold: input must be a Tensor, got {type(input).__name__}")
    x = input if input.ndim else reshape(input, (1,))
    axis = _normalize_dim(int(dimension), x.ndim, "unfold")
    length = x.shape[axis]
    if size < 0 or size > length:
        raise RuntimeError(f"maximum size for tensor at dimension {axis} is {length} but "
                           f"size is {size}")
    if step <= 0:
        raise RuntimeError(f"step is {step} but must be > 0")
    out = Unfold.apply(x, axis=axis, size=int(size), step=int(step))
    return out if input.ndim else reshape(out, (size,))
