"""``sinh``, ``cosh`` and ``exp2``: exponentials in disguise (sinh x = (e^x - e^-x) / 2,
cosh x = (e^x + e^-x) / 2, 2^x = e^(x ln 2)). Derived in
docs/derivations.md#sinh-cosh-and-exp2.
"""
from __future__ import annotations

import math

from .. import backend
from ..autograd import Function
from ..tensor import Tensor
from .elementwise import _as_float

__all__ = ["sinh", "cosh", "exp2"]


class Sinh(Function):
    """out = sinh x.   dx = g * cosh x   (d/dx (e^x - e^-x)/2 = (e^x + e^-x)/2)."""

    def forward(self, x):
        self.save_for_backward(x)
        return backend.get_array_module(x).sinh(x)

    def backward(self, grad):
        (x,) = self.saved
        return grad * backend.get_array_module(x).cosh(x)


class Cosh(Function):
    """out = cosh x.   dx = g * sinh x   (d/dx (e^x + e^-x)/2 = (e^x - e^-x)/2)."""

    def forward(self, x):
        self.save_for_backward(x)
        return backend.get_array_module(x).cosh(x)

    def backward(self, grad):
        (x,) = self.saved
        return grad * backend.get_array_module(x).sinh(x)


class Exp2(Function):
    """out = 2^x = e^(x ln 2).   dx = g * out * ln 2   (the chain rule through e^(x ln 2))."""

    def forward(self, x):
        out = backend.get_array_module(x).exp2(x)
        self.save_for_backward(out)
        return out

    def backward(self, grad):
        (out,) = self.saved
        return grad * out * out.dtype.type(math.log(2.0))


def sinh(input: Tensor) -> Tensor:  # noqa: A002 - PyTorch's name
    """Elementwise hyperbolic sine; integer tensors give float32, as in PyTorch."""
    return Sinh.apply(_as_float(input))


def cosh(input: Tensor) -> Tensor:  # noqa: A002 - PyTorch's name
    """Elementwise hyperbolic cosine; integer tensors give float32, as in PyTorch."""
    return Cosh.apply(_as_float(input))


def exp2(input: Tensor) -> Tensor:  # noqa: A002 - PyTorch's name
    """Elementwise 2^x; integer tensors give float32, as in PyTorch."""
    return Exp2.apply(_as_float(input))
