"""More ops that move or copy elements without changing them: expand, repeat, flip, tril/triu,
the transposes ``.T``/``.mT``/``.t()``, ``view``, ``contiguous`` and ``type_as``
(docs/derivations.md#expand-and-repeat, #flip, #tril-and-triu).

As for every shape op, each backward sends a gradient element back to where its value came
from, and adds where several outputs came from one input element.
"""
from __future__ import annotations

import math
import warnings
from typing import Any, Tuple

import numpy as np

from .. import backend
from ..broadcast_error import expand_error
from ..autograd import Function, name_node, unbroadcast
from ..tensor import Tensor
from ..tensor.dtypes import normalize_dtype
from .strided import view_dtype
from ..tensor.memory_format import check_memory_format
from .elementwise import Clone, convert
from .shape import Permute, ShapeError, _normalize_dim, reshape, transpose

__all__ = ["expand", "expand_as", "repeat", "flip", "tril", "triu", "T", "mT", "t", "view",
           "contiguous", "type_as"]


class Expand(Function):
    """out = x broadcast to a larger shape, without copying (a read-only view: writing into it
    in place would write one element many times, so it is refused).

    Every element of x is repeated along the new and the size-1 dims, and each copy passes
    its gradient back, so dx = g summed over those dims: ``unbroadcast``, the backward of
    broadcasting (docs/derivations.md#broadcasting).
    """

    returns_view = True

    def forward(self, x, shape: Tuple[int, ...]):
        self.save_for_backward(x.shape)
        return backend.get_array_module(x).broadcast_to(x, shape)

    def backward(self, grad):
        (shape,) = self.saved
        return unbroadcast(grad, shape)


class Repeat(Function):
    """out = x tiled ``repeats`` times along each dim (x first gets leading dims of size 1 if
    ``repeats`` is longer than x.shape), so out[r * n + i] = x[i] along a dim of size n.

    Backward: view g (r n) as (r, n) in every dim and sum over the r axes, since each x[i]
    was copied once per block: g (r0 n0, r1 n1, ...) -> (r0, n0, r1, n1, ...) -> sum (0, 2, ...).
    """

    def forward(self, x, repeats: Tuple[int, ...]):
        padded = x.reshape((1,) * (len(repeats) - x.ndim) + x.shape)
        self.save_for_backward(x.shape, padded.shape, repeats)
        return backend.get_array_module(x).tile(padded, repeats)

    def backward(self, grad):
        shape, padded, repeats = self.saved
        blocks = tuple(size for r, n in zip(repeats, padded) for size in (r, n))
        summed = grad.reshape(blocks).sum(axis=tuple(range(0, 2 * len(repeats), 2)))
        return summed.reshape(shape)


class Flip(Function):
    """out = x reversed along ``axes`` (a copy, as in PyTorch).   dx = g reversed the same way
    (reversing is its own inverse)."""

    def forward(self, x, axes: Tuple[int, ...]):
        self.save_for_backward(axes)
        return backend.get_array_module(x).flip(x, axes).copy()

    def backward(self, grad):
        (axes,) = self.saved
        return backend.get_array_module(grad).flip(grad, axes)


class Triangle(Function):
    """tril: out = x on and below diagonal k of the last two dims, 0 above; triu: on and above.

    A kept element is a copy (derivative 1), a zeroed one a constant (derivative 0), so
    dx = g with the same elements zeroed.
    """

    def forward(self, x, k: int, lower: bool):
        xp = backend.get_array_module(x)
        rows, cols = x.shape[-2:]
        keep = xp.tri(rows, cols, k, dtype=bool) if lower else \
            ~xp.tri(rows, cols, k - 1, dtype=bool)                   # (rows, cols)
        self.save_for_backward(keep)
        return xp.where(keep, x, xp.zeros((), dtype=x.dtype))

    def backward(self, grad):
        (keep,) = self.saved
        return backend.get_array_module(grad).where(keep, grad, 0)


# ------------------------------------------------------------------ public functions
def _sizes(args: Tuple[Any, ...]) -> Tuple[int, ...]:
    if len(args) == 1 and isinstance(args[0], (tuple, list)):
        args = tuple(args[0])
    if not all(isinstance(n, (int, np.integer)) and not isinstance(n, bool) for n in args):
        raise TypeError(f"sizes must be whole numbers, got {args!r}")
    return tuple(int(n) for n in args)


def expand(x: Tensor, *sizes: Any) -> Tensor:
    """``x.expand(*sizes)``: broadcast x to ``sizes`` without copying; -1 keeps a dim's size,
    new dims go in front. Only dims of size 1 can grow."""
    sizes = _sizes(sizes)
    if len(sizes) < x.ndim:
        raise ShapeError(f"expand: the number of sizes provided ({len(sizes)}) must be "
                         f"greater or equal to the number of dimensions in the tensor "
                         f"({x.ndim}) (shape {x.shape}); give at least one size per dim")
    lead = len(sizes) - x.ndim
    shape = []
    mismatch = expand_error(x.shape, sizes)
    if mismatch is not None:
        raise mismatch
    for i, n in enumerate(sizes):
        old = x.shape[i - lead] if i >= lead else None
        if n == -1:
            if old is None:
                raise ShapeError(f"The expanded size of the tensor (-1) isn't allowed in a "
                                 f"leading, non-existing dimension {i} (expand: sizes "
                                 f"{sizes} for shape {x.shape})")
            n = old
        if n < 0:
            raise ShapeError(f"expand: Trying to create tensor with negative dimension {n}: "
                               f"{list(sizes)} (shape {x.shape})")
        shape.append(n)
    shape = tuple(shape)
    if math.prod(shape) == x.numel() and x.numel() > 0:
        # nothing repeats: a plain (writable) view, torch's ExpandBackward0 all the same
        return name_node(reshape(x, shape), "ExpandBackward0")
    return Expand.apply(x, shape=shape)


def expand_as(x: Tensor, other: Tensor) -> Tensor:
    return expand(x, other.shape)


def repeat(x: Tensor, *repeats: Any) -> Tensor:
    """``x.repeat(*repeats)``: tile x (a copy; unlike ``expand``, any dim can repeat)."""
    repeats = _sizes(repeats)
    if len(repeats) < x.ndim:
        raise ShapeError(f"repeat: {len(repeats)} repeat counts given for a tensor with "
                         f"{x.ndim} dims (shape {x.shape}); give at least one per dim")
    if any(r < 0 for r in repeats):
        raise ShapeError(f"repeat: repeat counts must be >= 0, got {repeats}")
    return Repeat.apply(x, repeats=repeats)


def flip(x: Tensor, *given: Any, dims: Any = None) -> Tensor:
    """Reverse the order of elements along ``dims``: ``flip(x, (0, 2))``, ``x.flip(0, 2)``,
    ``flip(x, dims=[0])`` (torch's keyword)."""
    if dims is not None and given:
        raise TypeError("flip: give dims positionally or as dims=, not both")
    dims = given if dims is None else (dims,)
    if len(dims) == 1 and isinstance(dims[0], (tuple, list)):
        dims = tuple(dims[0])
    axes = tuple(_normalize_dim(d, max(x.ndim, 1), "flip") for d in dims)
    if len(set(axes)) != len(axes):
        raise ShapeError(f"flip: dims {dims} name the same dim twice")
    return Flip.apply(x, axes=axes if x.ndim else ())


def _triangle(x: Tensor, diagonal: int, lower: bool, op: str) -> Tensor:
    if x.ndim < 2:
        raise RuntimeError(f"{op}: needs a tensor with at least 2 dims (matrices), got shape "
                           f"{x.shape}")
    if not isinstance(diagonal, (int, np.integer)) or isinstance(diagonal, bool):
        raise TypeError(f"{op}: diagonal must be an int, got {diagonal!r}")
    return name_node(Triangle.apply(x, k=int(diagonal), lower=lower),
                     "TrilBackward0" if lower else "TriuBackward0")


def tril(x: Tensor, diagonal: int = 0) -> Tensor:
    """Zero the elements above diagonal ``diagonal`` of the last two dims (0: the main
    diagonal, 1: one above it, -1: one below)."""
    return _triangle(x, diagonal, True, "tril")


def triu(x: Tensor, diagonal: int = 0) -> Tensor:
    """Zero the elements below diagonal ``diagonal`` of the last two dims."""
    return _triangle(x, diagonal, False, "triu")


def T(x: Tensor) -> Tensor:  # noqa: N802 - PyTorch's name
    """``x.T``: all dims reversed. PyTorch deprecates it for tensors that are not 2-D (and
    warns); the result is the same here, with the same warning."""
    if x.ndim > 2 or x.ndim == 0:
        warnings.warn(f"x.T on a tensor with {x.ndim} dims reverses all of them, which PyTorch "
                      f"deprecates for tensors that are not 2-D; use x.mT to transpose the "
                      f"last two dims or x.permute(...) to say which order you mean",
                      UserWarning, stacklevel=2)
    return Permute.apply(x, dims=tuple(range(x.ndim - 1, -1, -1)))


def mT(x: Tensor) -> Tensor:  # noqa: N802 - PyTorch's name
    """``x.mT``: the last two dims swapped (a batch of matrices, each transposed)."""
    if x.ndim < 2:
        raise RuntimeError(f"x.mT needs a matrix or a batch of matrices (at least 2 dims), "
                           f"got shape {x.shape}")
    return transpose(x, -2, -1)


def t(x: Tensor) -> Tensor:
    """``x.t()``: a 2-D tensor transposed; 0-D and 1-D tensors come back as they are."""
    if x.ndim > 2:
        raise RuntimeError(f"t() expects a tensor with <= 2 dims, got shape {x.shape}; use "
                           f"x.mT or x.transpose(dim0, dim1)")
    return name_node(Permute.apply(x, dims=tuple(range(x.ndim - 1, -1, -1))), "TBackward0")


def view(x: Tensor, *shape: Any) -> Tensor:
    """``x.view(*shape)``: a reshape that must share x's memory, as in PyTorch. When the
    elements are not laid out so that a view can exist (e.g. after a transpose), it raises
    and says to use reshape (which copies there) or contiguous()."""
    if len(shape) == 1 and not isinstance(shape[0], (tuple, list, int, np.integer)):
        try:
            normalize_dtype(shape[0])
        except (TypeError, ValueError):
            raise TypeError(f"view(): argument 'dtype' must be torch.dtype, or the size a "
                            f"tuple of ints, not {type(shape[0]).__name__}") from None
        return view_dtype(x, shape[0])
    out = reshape(x, *shape)
    if x.numel() and not backend.may_share_memory(out._data, x._data):
        raise RuntimeError(f"view: a tensor of shape {x.shape} whose elements are not laid out "
                           f"contiguously (e.g. after a transpose) cannot be viewed as shape "
                           f"{out.shape} without a copy. Use .reshape(...) instead (it copies "
                           f"when it must), or .contiguous().view(...)")
    return out


def contiguous(x: Tensor, memory_format: Any = None) -> Tensor:
    """x itself if its elements are laid out in row-major order, else a row-major copy
    (differentiable, like ``clone``). Memory formats are accepted and change no value
    (tensor/memory_format.py)."""
    check_memory_format(x.shape, memory_format, "contiguous", allow_preserve=False)
    if x._data.flags.c_contiguous and not _copies_to_channels_last(x, memory_format):
        return x
    return Clone.apply(x)


def _copies_to_channels_last(x: Tensor, memory_format: Any) -> bool:
    """torch's contiguous(memory_format=channels_last[_3d]) copies a row-major tensor, unless
    its layouts coincide (one channel, or one spatial element): the result is a new tensor
    (tinyattn's copy stays row-major: the values and the aliasing are torch's)."""
    if str(memory_format) not in ("torch.channels_last", "torch.channels_last_3d"):
        return False
    return x.shape[1] != 1 and math.prod(x.shape[2:]) != 1


def type_as(x: Tensor, other: Tensor) -> Tensor:
    """x converted to ``other``'s dtype (differentiable between floating dtypes)."""
    return convert(x, dtype=other.dtype)
