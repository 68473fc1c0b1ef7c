"""``F.pad`` in constant mode (docs/derivations.md#pad).

PyTorch's pad tuple starts from the LAST dim: ``(left, right)`` pads the last dim,
``(left, right, top, bottom)`` the last two, and so on. Negative amounts crop.
"""
from __future__ import annotations

from typing import Any, Optional, Sequence, Tuple

import numpy as np

from .. import backend
from ..autograd import Function
from ..tensor import Tensor

__all__ = ["pad"]


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


def pad(input: Tensor, pad: Sequence[int], mode: str = "constant",  # noqa: A002
        value: Optional[float] = None) -> Tensor:
    """``F.pad(input, pad, mode="constant", value=0)``: ``pad`` holds (before, after) pairs,
    the first pair for the last dim. Only ``mode="constant"`` is implemented."""
    if mode != "constant":
        raise NotImplementedError(f"pad: mode {mode!r} is not implemented in tinyattn; only "
                                  f"'constant' is (pad with a fixed value)")
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
    return Pad.apply(input, widths=tuple(widths), value=fill)


def _amounts(pad: Any) -> Tuple[int, ...]:
    if isinstance(pad, (int, np.integer)) or not isinstance(pad, (tuple, list)):
        raise TypeError(f"pad: the pad argument must be a tuple of ints such as (1, 1), got "
                        f"{pad!r}")
    if not all(isinstance(n, (int, np.integer)) and not isinstance(n, bool) for n in pad):
        raise TypeError(f"pad: the pad amounts must be whole numbers, got {tuple(pad)}")
    return tuple(int(n) for n in pad)
