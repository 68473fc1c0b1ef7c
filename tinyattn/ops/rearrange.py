"""More shape and index ops with PyTorch's names: unbind, narrow, index_select, roll,
movedim/swapdims, unflatten, tile, view_as, reshape_as, diagonal and trace
(docs/derivations.md#roll-diagonal-and-other-index-ops).

``roll`` and ``diagonal`` are Functions of their own; the others are compositions of ops that
already have a hand-derived backward (indexing, reshape, permute, repeat, sum), each said in
its docstring. Every gradient goes back to the element its value was copied from.
"""
from __future__ import annotations

from typing import Any, Optional, Sequence, Tuple, Union

import numpy as np

from .. import backend
from ..autograd import Function, keep_versions, name_node
from ..tensor import Tensor
from .layout import repeat, view
from .reduce import sum as _sum
from .shape import ShapeError, _normalize_dim, getitem, permute, reshape, transpose

__all__ = ["unbind", "narrow", "index_select", "roll", "movedim", "swapdims", "unflatten",
           "tile", "view_as", "reshape_as", "diagonal", "trace"]

Dims = Union[int, Sequence[int]]


class Roll(Function):
    """out = x shifted by ``shifts`` along ``axes``, elements leaving one end entering at the
    other (``axes=None``: over the flattened tensor, then the shape is restored).
    out[(i + s) mod n] = x[i], a permutation, so dx[i] = g[(i + s) mod n]: g rolled by -s."""

    def forward(self, x, shifts: Any, axes: Any):
        self.save_for_backward(shifts, axes)
        return backend.get_array_module(x).roll(x, shifts, axis=axes)

    def backward(self, grad):
        shifts, axes = self.saved
        back = -shifts if isinstance(shifts, int) else tuple(-s for s in shifts)
        return backend.get_array_module(grad).roll(grad, back, axis=axes)


class Diagonal(Function):
    """out[..., i] = x[..., i + max(-k, 0), i + max(k, 0)] over the dims (a1, a2), which are
    removed; the diagonal becomes the last dim (as torch.diagonal).
    Each output element is a copy of one input element, so dx is zero except on that
    diagonal, where it is g: zeros, then g written into the diagonal positions.
    A view of x, as torch's: ``x.diagonal().fill_(0)`` writes into x (NumPy's diagonal view is
    read-only, so it is made writable where x is)."""

    returns_view = True

    def forward(self, x, offset: int, axis1: int, axis2: int):
        self.save_for_backward(x.shape, offset, axis1, axis2)
        out = backend.get_array_module(x).diagonal(x, offset, axis1, axis2)
        if isinstance(out, np.ndarray) and not out.flags.writeable and x.flags.writeable:
            out.setflags(write=True)
        return out

    def backward(self, grad):
        shape, offset, axis1, axis2 = self.saved
        xp = backend.get_array_module(grad)
        dx = xp.zeros(shape, dtype=grad.dtype)
        square = xp.moveaxis(dx, (axis1, axis2), (-2, -1))     # a view: writes reach dx
        i = xp.arange(grad.shape[-1])
        square[..., i + max(-offset, 0), i + max(offset, 0)] = grad
        return dx


# ------------------------------------------------------------------ public functions
def _int(value: Any, name: str, op: str) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{op}: {name} must be an int, got {value!r}")
    return int(value)


def _take(x: Tensor, axis: int, index: Any) -> Tensor:
    return getitem(x, (slice(None),) * axis + (index,))


def unbind(input: Tensor, dim: int = 0) -> Tuple[Tensor, ...]:  # noqa: A002 - torch's name
    """The slices of ``input`` along ``dim``, as a tuple (``x[0], x[1], ...`` for dim 0);
    made of indexing, so each slice's gradient goes back to its place."""
    if input.ndim == 0:
        raise IndexError("unbind: a 0-d tensor has no dim to unbind")
    axis = _normalize_dim(_int(dim, "dim", "unbind"), input.ndim, "unbind")
    return tuple(name_node(_take(input, axis, i), "UnbindBackward0")   # torch: one node
                 for i in range(input.shape[axis]))


def narrow(input: Tensor, dim: int, start: Any, length: int) -> Tensor:  # noqa: A002
    """``input`` along ``dim`` from ``start`` for ``length`` elements (a slice; a negative
    start counts from the end, as PyTorch). ``start`` may be a 0-d integer tensor, as in
    torch."""
    if input.ndim == 0:
        raise RuntimeError("narrow: a 0-d tensor cannot be narrowed")
    if isinstance(start, Tensor):
        if start.ndim != 0 or start.dtype.kind not in "iu":
            raise RuntimeError(f"narrow: a tensor start must be a 0-d integer tensor (as in "
                               f"torch), got shape {start.shape} and dtype {start.dtype}")
        start = int(start.item())
    axis = _normalize_dim(_int(dim, "dim", "narrow"), input.ndim, "narrow")
    start, length, size = _int(start, "start", "narrow"), _int(length, "length", "narrow"), \
        input.shape[axis]
    if not -size <= start <= size:
        raise IndexError(f"narrow: start {start} is out of range for dim {dim} of size {size}")
    if start < 0:
        start += size
    if length < 0 or start + length > size:
        raise RuntimeError(f"narrow: start ({start}) + length ({length}) exceeds the size of "
                           f"dim {dim} ({size}); length must be from 0 to {size - start}")
    return _take(input, axis, slice(start, start + length))


def index_select(input: Tensor, dim: int, index: Tensor) -> Tensor:  # noqa: A002
    """The entries ``index`` (a 1-D or 0-d integer tensor, repeats allowed) of ``input``
    along ``dim``; integer-array indexing underneath, so a repeated entry's gradients add."""
    if not isinstance(index, Tensor) or index.dtype.kind not in "iu" or index.ndim > 1:
        raise TypeError(f"index_select: index must be a 1-D int64 tensor, got "
                        f"{getattr(index, 'dtype', type(index).__name__)} of shape "
                        f"{getattr(index, 'shape', '?')}")
    rank = max(input.ndim, 1)
    axis = _normalize_dim(_int(dim, "dim", "index_select"), rank, "index_select")
    size = input.shape[axis] if input.ndim else 1
    ids = index._data.reshape(-1)
    xp = backend.get_array_module(ids)
    low, high = backend.to_host(xp.stack([ids.min(), ids.max()])).tolist() if ids.size \
        else (0, -1)                              # one transfer: a clear error needs them
    if low < 0 or high >= size:                   # an empty index fits even an empty dim
        bad = low if low < 0 else high
        raise IndexError(f"index_select: index {bad} is out of range for dim {dim} of size "
                         f"{size} (valid: 0 to {size - 1})")
    if input.ndim == 0:
        if ids.size != 1:
            raise IndexError(f"index_select: a 0-d input has one value, so index must hold "
                             f"exactly one entry (0); got {ids.size} (as PyTorch)")
        out = reshape(getitem(reshape(input, 1), (ids,)), ())     # 0-d, as PyTorch
    else:
        out = _take(input, axis, ids)
    name_node(out, "IndexSelectBackward0")
    return keep_versions(out, index)      # torch keeps the index: writing to it raises


def roll(input: Tensor, shifts: Dims, dims: Optional[Dims] = None) -> Tensor:  # noqa: A002
    """Shift elements along ``dims`` by ``shifts``, wrapping around (``dims=None``: over the
    flattened tensor, shape kept), as ``torch.roll``."""
    shift_list = (shifts,) if isinstance(shifts, (int, np.integer)) else tuple(shifts)
    shift_list = tuple(_int(s, "shifts", "roll") for s in shift_list)
    if dims is None:
        if len(shift_list) != 1:
            raise RuntimeError(f"roll: with dims=None, shifts must be one int, got {shifts!r}")
        return Roll.apply(input, shifts=shift_list[0], axes=None)
    dim_list = (dims,) if isinstance(dims, (int, np.integer)) else tuple(dims)
    if len(dim_list) != len(shift_list):
        raise RuntimeError(f"roll: shifts {shifts!r} and dims {dims!r} must have the same length")
    if input.ndim == 0:
        raise IndexError("roll: a 0-d tensor has no dims to roll along (as PyTorch); leave "
                         "out dims, or reshape it to 1-D")
    axes = tuple(_normalize_dim(_int(d, "dims", "roll"), input.ndim, "roll") for d in dim_list)
    return Roll.apply(input, shifts=shift_list, axes=axes)


def movedim(input: Tensor, source: Dims, destination: Dims) -> Tensor:  # noqa: A002
    """Move dims ``source`` to positions ``destination``, the others keeping their order
    (a ``permute``, as ``torch.movedim``)."""
    src = (source,) if isinstance(source, (int, np.integer)) else tuple(source)
    dst = (destination,) if isinstance(destination, (int, np.integer)) else tuple(destination)
    if len(src) != len(dst):
        raise RuntimeError(f"movedim: source {source!r} and destination {destination!r} must "
                           f"have the same number of dims")
    rank = max(input.ndim, 1)
    src = tuple(_normalize_dim(_int(d, "source", "movedim"), rank, "movedim") for d in src)
    dst = tuple(_normalize_dim(_int(d, "destination", "movedim"), rank, "movedim") for d in dst)
    if len(set(src)) != len(src) or len(set(dst)) != len(dst):
        raise RuntimeError(f"movedim: repeated dim in source {source!r} or destination "
                           f"{destination!r}")
    if input.ndim == 0:
        return reshape(input, ())
    order = [d for d in range(input.ndim) if d not in src]
    for d, s in sorted(zip(dst, src)):
        order.insert(d, s)
    return permute(input, order)


def swapdims(input: Tensor, dim0: int, dim1: int) -> Tensor:  # noqa: A002
    """Alias of ``transpose``, as in PyTorch."""
    return transpose(input, dim0, dim1)


def unflatten(input: Tensor, dim: int, sizes: Sequence[int]) -> Tensor:  # noqa: A002
    """Split dim ``dim`` into ``sizes`` (one may be -1), a reshape: (B, S*D) with dim=1,
    sizes=(S, D) -> (B, S, D)."""
    axis = _normalize_dim(_int(dim, "dim", "unflatten"), max(input.ndim, 1), "unflatten")
    sizes = tuple(_int(n, "sizes", "unflatten") for n in sizes)
    if not sizes:
        raise ValueError("unflatten: sizes must not be empty")
    size = input.shape[axis] if input.ndim else 1
    known = int(np.prod([n for n in sizes if n != -1]))
    if sizes.count(-1) > 1 or any(n < -1 for n in sizes) or (
            -1 not in sizes and known != size) or (-1 in sizes and (known == 0 or size % known)):
        raise ShapeError(f"unflatten: sizes {sizes} do not multiply to the size of dim {dim} "
                         f"({size})")           # torch's RuntimeError (and a ValueError)
    shape = input.shape[:axis] + sizes + input.shape[axis + 1:]
    return reshape(input, shape)


def tile(input: Tensor, dims: Sequence[int]) -> Tensor:  # noqa: A002
    """Repeat ``input`` ``dims[i]`` times along dim i; with fewer entries than dims, ones are
    put in front (``repeat`` requires one per dim), as ``torch.tile``."""
    dims = (dims,) if isinstance(dims, (int, np.integer)) else tuple(dims)
    dims = (1,) * (input.ndim - len(dims)) + dims
    return repeat(input, dims)


def view_as(input: Tensor, other: Tensor) -> Tensor:  # noqa: A002
    """``input.view(other.shape)``."""
    return view(input, other.shape)


def reshape_as(input: Tensor, other: Tensor) -> Tensor:  # noqa: A002
    """``input.reshape(other.shape)``."""
    return reshape(input, other.shape)


def diagonal(input: Tensor, offset: int = 0, dim1: int = 0, dim2: int = 1) -> Tensor:  # noqa
    """The diagonal ``offset`` (> 0: above the main one) of the matrices in dims (dim1, dim2);
    those dims are removed and the diagonal is the last dim. A view, as PyTorch's."""
    if input.ndim < 2:
        raise IndexError(f"diagonal: needs at least 2 dims, got shape {input.shape} "
                         f"(Dimension out of range)")
    axis1 = _normalize_dim(_int(dim1, "dim1", "diagonal"), input.ndim, "diagonal")
    axis2 = _normalize_dim(_int(dim2, "dim2", "diagonal"), input.ndim, "diagonal")
    if axis1 == axis2:
        raise RuntimeError(f"diagonal: dim1 and dim2 must differ, both are {axis1} (diagonal "
                           f"dimensions cannot be identical)")
    return Diagonal.apply(input, offset=_int(offset, "offset", "diagonal"), axis1=axis1,
                          axis2=axis2)


def trace(input: Tensor) -> Tensor:  # noqa: A002
    """The sum of the main diagonal of a 2-D tensor: ``diagonal(x).sum()`` (integer tensors
    give int64, as PyTorch)."""
    if input.ndim != 2:
        raise RuntimeError(f"trace: expects a 2-D tensor, got shape {input.shape}")
    if input.dtype == np.bool_:
        raise NotImplementedError("\"trace\" not implemented for 'Bool' (as torch); convert "
                                  "the tensor with .int() (a count) or .float() first")
    return name_node(_sum(diagonal(input)), "TraceBackward0")
