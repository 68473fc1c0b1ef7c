"""Padding modules, as PyTorch's (docs/nn.md#padding): ``ZeroPad1d/2d/3d``,
``ConstantPad1d/2d/3d``, ``ReflectionPad1d/2d/3d``, ``ReplicationPad1d/2d/3d`` and
``CircularPad1d/2d/3d``. No parameters: each keeps its ``padding`` tuple (an int is the same
amount on every side) and calls ``F.pad`` (ops/pad.py, where the backward is derived). The
tuple starts from the LAST dim, as ``F.pad``'s: ``(left, right, top, bottom, front, back)``.
"""
from __future__ import annotations

from typing import Any, Tuple

from .. import functional as F
from ..tensor import Tensor
from .module import Module

__all__ = ["ZeroPad1d", "ZeroPad2d", "ZeroPad3d", "ConstantPad1d", "ConstantPad2d",
           "ConstantPad3d", "ReflectionPad1d", "ReflectionPad2d", "ReflectionPad3d",
           "ReplicationPad1d", "ReplicationPad2d", "ReplicationPad3d", "CircularPad1d",
           "CircularPad2d", "CircularPad3d"]


def _amounts(padding: Any, dims: int) -> Tuple[Any, ...]:
    """torch's ``_ntuple(2 * dims)``: an int repeated on every side, an iterable as a tuple."""
    if isinstance(padding, (list, tuple)) or hasattr(padding, "__iter__"):
        return tuple(padding)
    return (padding,) * (2 * dims)


class _PadNd(Module):
    dims: int = 1
    mode: str = "constant"

    def __init__(self, padding: Any) -> None:
        super().__init__()
        self.padding = _amounts(padding, self.dims)

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002 - torch's name
        return F.pad(input, self.padding, self.mode)

    def extra_repr(self) -> str:
        return f"{self.padding}"


class _ConstantPadNd(_PadNd):
    def __init__(self, padding: Any, value: float) -> None:
        super().__init__(padding)
        self.value = value

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        return F.pad(input, self.padding, "constant", self.value)

    def extra_repr(self) -> str:
        return f"padding={self.padding}, value={self.value}"


class ConstantPad1d(_ConstantPadNd):
    """Pads the last dim of (C, W) or (N, C, W) with ``value``: padding (left, right)."""
    dims = 1


class ConstantPad2d(_ConstantPadNd):
    """Pads the last two dims with ``value``: padding (left, right, top, bottom)."""
    dims = 2


class ConstantPad3d(_ConstantPadNd):
    """Pads the last three dims with ``value``: (left, right, top, bottom, front, back)."""
    dims = 3


class _ZeroPadNd(_ConstantPadNd):
    def __init__(self, padding: Any) -> None:
        super().__init__(padding, 0.0)

    def extra_repr(self) -> str:
        return f"{self.padding}"


class ZeroPad1d(_ZeroPadNd, ConstantPad1d):
    """ConstantPad1d with value 0."""


class ZeroPad2d(_ZeroPadNd, ConstantPad2d):
    """ConstantPad2d with value 0."""


class ZeroPad3d(_ZeroPadNd, ConstantPad3d):
    """ConstantPad3d with value 0."""


class _ReflectionPadNd(_PadNd):
    mode = "reflect"


class ReflectionPad1d(_ReflectionPadNd):
    """Pads the last dim with its mirror image (the edge not repeated): each amount must be
    less than the dim's size."""
    dims = 1


class ReflectionPad2d(_ReflectionPadNd):
    """Reflection padding of the last two dims (left, right, top, bottom)."""
    dims = 2


class ReflectionPad3d(_ReflectionPadNd):
    """Reflection padding of the last three dims."""
    dims = 3


class _ReplicationPadNd(_PadNd):
    mode = "replicate"


class ReplicationPad1d(_ReplicationPadNd):
    """Pads the last dim by repeating its edge elements."""
    dims = 1


class ReplicationPad2d(_ReplicationPadNd):
    """Replication padding of the last two dims (left, right, top, bottom)."""
    dims = 2


class ReplicationPad3d(_ReplicationPadNd):
    """Replication padding of the last three dims."""
    dims = 3


class _CircularPadNd(_PadNd):
    mode = "circular"

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        if input.ndim not in (self.dims + 1, self.dims + 2):
            raise ValueError(f"expected {self.dims + 1}D or {self.dims + 2}D input (got "
                             f"{input.ndim}D input)")
        return F.pad(input, self.padding, "circular")


class CircularPad1d(_CircularPadNd):
    """Pads the last dim by wrapping around: the left pad copies the right end."""
    dims = 1


class CircularPad2d(_CircularPadNd):
    """Circular padding of the last two dims (left, right, top, bottom)."""
    dims = 2


class CircularPad3d(_CircularPadNd):
    """Circular padding of the last three dims."""
    dims = 3
