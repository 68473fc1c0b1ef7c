"""``sin`` and ``cos``: the periodic functions PyTorch's tutorials fit (``y = torch.sin(x)``),
and what sinusoidal positional encodings are made of. Derived in
docs/derivations.md#sin-and-cos.
"""
from __future__ import annotations

from .. import backend
from ..autograd import Function
from ..tensor import Tensor
from .elementwise import _as_float

__all__ = ["sin", "cos"]


class Sin(Function):
    """out = sin x.   dx = g * cos x."""

    def forward(self, x):
        self.save_for_backward(x)
        return backend.get_array_module(x).sin(x)

    def backward(self, grad):
        (x,) = self.saved
        return grad * backend.get_array_module(x).cos(x)


class Cos(Function):
    """out = cos x.   dx = -g * sin x."""

    def forward(self, x):
        self.save_for_backward(x)
        return backend.get_array_module(x).cos(x)

    def backward(self, grad):
        (x,) = self.saved
        return -grad * backend.get_array_module(x).sin(x)


def sin(input: Tensor) -> Tensor:  # noqa: A002 - PyTorch's name
    """Elementwise sine (radians); integer tensors give float32, as in PyTorch."""
    return Sin.apply(_as_float(input))


def cos(input: Tensor) -> Tensor:  # noqa: A002 - PyTorch's name
    """Elementwise cosine (radians); integer tensors give float32, as in PyTorch."""
    return Cos.apply(_as_float(input))
