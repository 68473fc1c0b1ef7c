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

__all__ = ["repeat_interleave"]


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


def repeat_interleave(input: Tensor, repeats: Any, dim: Optional[int] = None,  # noqa: A002
                      *, output_size: Optional[int] = None) -> Tensor:
    """PyTorch's ``repeat_interleave`` with one repeat count for every slice (an int or a
    one-element tensor). ``dim=None`` repeats the elements of the flattened input."""
    if isinstance(repeats, Tensor):
        if repeats.numel() != 1:
            raise NotImplementedError(
                f"repeat_interleave: a count per slice (repeats of shape {repeats.shape}) is "
                f"not implemented by tinyattn; pass one int, or build the index with "
                f"tinyattn.tensor(...) and index the tensor with it")
        repeats = repeats.item()
    if isinstance(repeats, bool) or not isinstance(repeats, (int, np.integer)) or repeats < 0:
        raise ValueError(f"repeat_interleave: repeats must be an int >= 0, got {repeats!r}")
    if dim is None:
        input, dim = input.reshape(-1), 0
    if not -max(input.ndim, 1) <= dim < max(input.ndim, 1):
        raise IndexError(f"repeat_interleave: dim {dim} is out of range for a tensor of "
                         f"shape {input.shape}")
    if input.ndim == 0:
        input = input.reshape(1)
    dim = dim % input.ndim
    if output_size is not None and output_size != input.shape[dim] * repeats:
        raise ValueError(f"repeat_interleave: output_size={output_size}, but "
                         f"{input.shape[dim]} slices x {repeats} repeats give "
                         f"{input.shape[dim] * repeats}")
    return RepeatInterleave.apply(input, repeats=int(repeats), dim=dim)
