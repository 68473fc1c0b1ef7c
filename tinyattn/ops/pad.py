"""``F.pad`` in constant, reflect, replicate and circular modes (docs/derivations.md#pad).

PyTorch's pad tuple starts from the LAST dim: ``(left, right)`` pads the last dim,
``(left, right, top, bottom)`` the last two, and so on. Negative amounts crop.
"""
from __future__ import annotations

from typing import Any, Optional, Sequence, Tuple

import numpy as np

from .. import backend
from ..autograd import Function, keep_versions, name_node
from ..tensor import Tensor
from ..amp.dispatch import composite as autocast_as

__all__ = ["pad"]

_INDEXED_MODES = ("reflect", "replicate", "circular")


class Pad(Function):
    """out = x cropped by the negative amounts, then surrounded by ``value`` for the positive
    ones, dim by dim.

    The inner block of out is a copy of the kept block of x; the padding is constants and the
    cropped elements never reach out. So dx = zeros, with the inner block of g copied into
    the kept block (dx = the inner block of g itself when nothing was cropped).
    """

    def forward(self, x, widths: Tuple[Tuple[int, int], ...], value: float):
        xp = backend.get_array_module(x)
        kept = tuple(slice(max(-before, 0), n - max(-after, 0))
                     for (before, after), n in zip(widths, x.shape))
        grow = tuple((max(before, 0), max(after, 0)) for before, after in widths)
        self.save_for_backward(x.shape, kept, grow)
        if not any(before or after for before, after in grow):
            return x[kept].copy()               # only cropping (or nothing): no np.pad call
        return xp.pad(x[kept], grow, mode="constant", constant_values=value)

    def backward(self, grad):
        shape, kept, grow = self.saved
        inner = tuple(slice(before, n - after) for (before, after), n in zip(grow, grad.shape))
        if tuple(s.stop - s.start for s in kept) == shape:
            return grad[inner]
        dx = backend.get_array_module(grad).zeros(shape, dtype=grad.dtype)
        dx[kept] = grad[inner]
        return dx


class PadByIndex(Function):
    """out = x read at an index array along each padded axis (reflect, replicate and
    circular padding copy elements of x, some of them several times).

    Each output element is one element of x, so dx is g scattered back through the same
    indices, repeated indices adding up: axis by axis, in reverse order,
        dx[..., i, ...] = sum of g[..., j, ...] over the j with index[j] = i.
    """

    def forward(self, x, reads: Tuple[Tuple[int, Any], ...]):
        xp = backend.get_array_module(x)
        shapes, out = [], x
        for axis, index in reads:
            shapes.append(out.shape)
            out = xp.take(out, index, axis=axis)
        self.save_for_backward(reads, shapes)
        return out

    def backward(self, grad):
        reads, shapes = self.saved
        xp = backend.get_array_module(grad)
        for (axis, index), shape in zip(reversed(reads), reversed(shapes)):
            dx = xp.zeros(shape, dtype=grad.dtype)
            backend.scatter_add(xp.moveaxis(dx, axis, 0), (index,), xp.moveaxis(grad, axis, 0))
            grad = dx
        return grad


def _read_index(mode: str, size: int, before: int, after: int, dim: int, xp: Any) -> Any:
    """The positions of x that output positions -before .. size + after - 1 read."""
    limit = size - 1 if mode == "reflect" else size
    if mode != "replicate" and (before > limit or after > limit):
        raise ValueError(f"pad: {mode} padding of {(before, after)} is too large for dim {dim} "
                         f"of size {size}; each amount must be at most {limit} "
                         f"({'size - 1' if mode == 'reflect' else 'the size'}), as in PyTorch")
    position = xp.arange(-before, size + after)
    if mode == "reflect":
        position = xp.abs(position)
        position = xp.where(position > size - 1, 2 * (size - 1) - position, position)
    elif mode == "replicate":
        position = xp.clip(position, 0, size - 1)
    else:       # wraps around what is left after cropping, as PyTorch does
        first, kept = max(-before, 0), size - max(-before, 0) - max(-after, 0)
        position = first + (xp.arange(-max(before, 0), kept + max(after, 0)) % kept)
    return position


def _pad_by_index(input: Tensor, amounts: Tuple[int, ...], mode: str) -> Tensor:  # noqa: A002
    """reflect / replicate / circular: PyTorch pads the last 1, 2 or 3 dims of a (C, ...) or
    (N, C, ...) input; negative amounts crop, as in constant mode."""
    pairs = len(amounts) // 2
    if len(amounts) % 2 or not 1 <= pairs <= 3 or input.ndim not in (pairs + 1, pairs + 2):
        raise ValueError(f"pad: mode {mode!r} pads the last 1, 2 or 3 dims of a batched or "
                         f"unbatched input, (before, after) per dim: {pairs} pair(s) need a "
                         f"{pairs + 1}-D or {pairs + 2}-D input, got shape {input.shape} and "
                         f"pad {amounts} (as in PyTorch)")
    xp = backend.get_array_module(input._data)
    reads = []
    for k in range(pairs):                      # pair k pads dim -1 - k
        axis = input.ndim - 1 - k
        before, after = amounts[2 * k], amounts[2 * k + 1]
        if input.shape[axis] + before + after <= 0:
            raise ValueError(f"pad: padding {(before, after)} leaves nothing of dim {axis} of "
                             f"size {input.shape[axis]} (input shape {input.shape})")
        if before or after:
            reads.append((axis, _read_index(mode, input.shape[axis], before, after, axis, xp)))
    return PadByIndex.apply(input, reads=tuple(reads))


def pad(input: Tensor, pad: Sequence[int], mode: str = "constant",  # noqa: A002
        value: Optional[float] = None) -> Tensor:
    """``F.pad(input, pad, mode="constant", value=0)``: ``pad`` holds (before, after) pairs,
    the first pair for the last dim. ``mode`` is "constant" (fill with ``value``), or
    "reflect", "replicate", "circular" (copies of x's own elements, last 1-3 dims only)."""
    if mode in _INDEXED_MODES:
        if value:
            raise ValueError(f"pad: value={value} applies only to mode 'constant', not "
                             f"{mode!r} (PyTorch refuses it too)")
        if mode != "circular" and input.dtype == np.bool_:     # torch has no bool kernel
            kernel = "reflection" if mode == "reflect" else "replication"
            raise NotImplementedError(f"\"{kernel}_pad{max(len(_amounts(pad)) // 2, 1)}d\" "
                                      f"not implemented for 'Bool' (as torch: pad of a bool "
                                      f"tensor in mode {mode!r}); convert it with .int() "
                                      f"first, or use mode 'constant' or 'circular'")
        if mode == "circular":     # torch builds it from slices and cat: no autocast rule
            return _pad_by_index(input, _amounts(pad), mode)
        with autocast_as(f"{'reflection' if mode == 'reflect' else 'replication'}_pad"):
            out = _pad_by_index(input, _amounts(pad), mode)   # float32 in CPU autocast
        kind = "Reflection" if mode == "reflect" else "Replication"   # torch's node names
        name_node(out, f"{kind}Pad{len(_amounts(pad)) // 2}DBackward0")
        return keep_versions(out, input)   # torch's reflection/replication pads keep it
    if mode != "constant":
        raise ValueError(f"pad: mode must be 'constant', 'reflect', 'replicate' or 'circular', "
                         f"got {mode!r}")
    amounts = _amounts(pad)
    if len(amounts) % 2:
        raise ValueError(f"pad: the pad tuple must hold (before, after) pairs, got "
                         f"{len(amounts)} numbers: {tuple(amounts)}")
    if len(amounts) > 2 * input.ndim:
        raise ValueError(f"pad: {len(amounts) // 2} pairs given for a tensor with {input.ndim} "
                         f"dims (shape {input.shape}); at most one pair per dim")
    widths = [(0, 0)] * input.ndim
    for k in range(len(amounts) // 2):          # pair k pads dim -1 - k
        widths[input.ndim - 1 - k] = (amounts[2 * k], amounts[2 * k + 1])
    for d, ((before, after), n) in enumerate(zip(widths, input.shape)):
        if n + before + after < 0 or n + min(before, 0) + min(after, 0) < 0:
            raise ValueError(f"pad: padding {(before, after)} crops dim {d} of size {n} below "
                             f"zero (input shape {input.shape}, pad {tuple(amounts)})")
    fill = 0 if value is None else value
    if isinstance(fill, Tensor):
        fill = fill.item()
    return name_node(Pad.apply(input, widths=tuple(widths), value=fill), "ConstantPadNdBackward0")


def _amounts(pad: Any) -> Tuple[int, ...]:
    if isinstance(pad, (int, np.integer)) or not isinstance(pad, (tuple, list)):
        raise TypeError(f"pad: the pad argument must be a tuple of ints such as (1, 1), got "
                        f"{pad!r}")
    if not all(isinstance(n, (int, np.integer)) and not isinstance(n, bool) for n in pad):
        raise TypeError(f"pad: the pad amounts must be whole numbers, got {tuple(pad)}")
    return tuple(int(n) for n in pad)
