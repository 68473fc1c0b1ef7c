"""``repeat_interleave``: each slice along a dim repeated in place, ``[a, b] -> [a, a, b, b]``.
What grouped-query attention does to its keys and values (each key/value head serves
``h / h_kv`` query heads), as in the reference implementation in PyTorch's documentation of
``scaled_dot_product_attention``. Derived in docs/derivations.md#repeat_interleave.
"""
from __future__ import annotations

from typing import Any, Optional

import numpy as np

from .. import backend
from ..autograd import Function
from ..tensor import Tensor

__all__ = ["repeat_interleave", "RepeatInterleave", "RepeatCounts"]


class RepeatInterleave(Function):
    """out = x with every slice along ``dim`` repeated ``repeats`` times in a row.
    Each input slice feeds ``repeats`` adjacent output slices, so its gradient is their sum:
    dx = g reshaped to (..., n, repeats, ...) and summed over the repeats axis."""

    def forward(self, x, repeats: int, dim: int):
        self.save_for_backward(x.shape, repeats, dim)
        return backend.get_array_module(x).repeat(x, repeats, axis=dim)

    def backward(self, grad):
        shape, repeats, dim = self.saved
        grouped = grad.reshape(shape[:dim] + (shape[dim], repeats) + shape[dim + 1:])
        return grouped.sum(axis=dim + 1)


class RepeatCounts(Function):
    """out = x with slice i along ``dim`` repeated counts[i] times in a row (torch's
    repeat_interleave with a tensor of counts). Slice i feeds counts[i] adjacent output
    slices, so its gradient is their sum (0 for a slice repeated 0 times):
        dx[i] = sum of g[j] over the output slices j with owner[j] = i,
    owner = (0 counts[0] times, 1 counts[1] times, ...), a scatter-add along dim."""

    def forward(self, x, counts, dim: int):
        xp = backend.get_array_module(x)
        owner = np.repeat(np.arange(x.shape[dim]), counts)       # (sum(counts),), on the host
        owner = backend.to_device(owner, backend.device_of(x))
        self.save_for_backward(x.shape, owner, dim)
        return xp.take(x, owner, axis=dim)

    def backward(self, grad):
        shape, owner, dim = self.saved
        xp = backend.get_array_module(grad)
        moved = xp.moveaxis(grad, dim, 0)                        # (sum(counts), ...)
        dx = xp.zeros((shape[dim],) + moved.shape[1:], dtype=grad.dtype)
        backend.scatter_add(dx, owner, moved)
        return xp.moveaxis(dx, 0, dim)


def repeat_interleave(input: Tensor, repeats: Any = None, dim: Optional[int] = None,  # noqa: A002
                      *, output_size: Optional[int] = None) -> Tensor:
    """PyTorch's ``repeat_interleave``: every slice along ``dim`` repeated ``repeats`` times
    (an int or a one-element tensor), or slice i repeated ``repeats[i]`` times (a 1-D integer
    tensor with one count per slice). ``dim=None`` repeats the elements of the flattened
    input. ``repeat_interleave(counts)`` alone gives the indices 0, 1, ... each repeated
    counts[i] times. ``output_size``, when given, must be the output's length along dim."""
    if repeats is None:
        if not isinstance(input, Tensor) or input.dtype.kind not in "iu" or input.ndim != 1:
            raise RuntimeError("repeat_interleave only accept 1D vector as repeat (an integer "
                               "tensor of counts)")
        xp = backend.get_array_module(input._data)
        index = Tensor._wrap(xp.arange(input.shape[0], dtype=input.dtype))
        return repeat_interleave(index, input, 0, output_size=output_size)
    if isinstance(repeats, Tensor) and repeats.ndim > 1:
        raise RuntimeError(f"repeat_interleave: repeats must be 0-dim or 1-dim tensor, got "
                           f"shape {repeats.shape}")
    if isinstance(repeats, Tensor) and repeats.numel() == 1 and (repeats.ndim == 0 or dim is None
                                                                 or input.ndim == 0):
        repeats = repeats.item()
    if dim is None:
        input, dim = input.reshape(-1), 0
    if not -max(input.ndim, 1) <= dim < max(input.ndim, 1):
        raise IndexError(f"repeat_interleave: dim {dim} is out of range for a tensor of "
                         f"shape {input.shape}")
    if input.ndim == 0:
        input = input.reshape(1)
    dim = dim % input.ndim
    if isinstance(repeats, Tensor):
        return _repeat_counts(input, repeats, dim, output_size)
    if isinstance(repeats, bool) or not isinstance(repeats, (int, np.integer)) or repeats < 0:
        raise ValueError(f"repeat_interleave: repeats must be an int >= 0, got {repeats!r}")
    if output_size is not None and output_size != input.shape[dim] * repeats:
        raise ValueError(f"repeat_interleave: output_size={output_size}, but "
                         f"{input.shape[dim]} slices x {repeats} repeats give "
                         f"{input.shape[dim] * repeats}")
    return RepeatInterleave.apply(input, repeats=int(repeats), dim=dim)


def _repeat_counts(input: Tensor, repeats: Tensor, dim: int,  # noqa: A002
                   output_size: Optional[int]) -> Tensor:
    """slice i along dim repeated repeats[i] times (a count per slice)."""
    if repeats.dtype.kind not in "iu":
        raise NotImplementedError(f"repeat_interleave: repeats must be an integer tensor, got "
                                  f"{repeats.dtype} (torch has no kernel for it either); "
                                  f"convert with .long()")
    counts = backend.to_host(repeats._data).reshape(-1)     # a few numbers: on the host
    if counts.shape[0] == 1 and input.shape[dim] != 1:   # one count for every slice
        counts = np.full(input.shape[dim], counts[0])
    if counts.shape[0] != input.shape[dim]:
        raise RuntimeError(f"repeat_interleave: repeats must have the same size as input along "
                           f"dim, but got repeats.size(0) = {counts.shape[0]} and "
                           f"input.size({dim}) = {input.shape[dim]}")
    if counts.size and int(counts.min()) < 0:
        raise RuntimeError("repeat_interleave: repeats can not be negative")
    total = int(counts.sum())
    if output_size is not None and output_size != total:
        raise RuntimeError(f"repeat_interleave: allocated size does not match required size: "
                           f"output_size={output_size}, but the counts add up to {total}")
    return RepeatCounts.apply(input, counts=counts.astype(np.int64), dim=dim)
