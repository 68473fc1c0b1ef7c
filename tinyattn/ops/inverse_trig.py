"""``tan``, ``asin``, ``acos``, ``atan`` and ``atan2``: the rest of the circular functions
(sin and cos are in trig.py). Derived in docs/derivations.md#tan-asin-acos-atan-and-atan2.

Outside an inverse's domain (|x| > 1 for asin and acos) the value is NaN, as in PyTorch and
NumPy; at x = +-1 their gradient is infinite (1 / sqrt(0)), as in PyTorch.
"""
from __future__ import annotations

import numpy as np

from .. import backend, precision
from ..autograd import Function, unbroadcast
from ..tensor import Tensor
from ..precision import is_floating
from ..promotion import operand_tier, result_type
from .compare import both_tensors
from .elementwise import _as_dtype, _as_float

__all__ = ["tan", "asin", "acos", "atan", "atan2"]


class Tan(Function):
    """out = tan x = sin x / cos x.   dx = g / cos^2 x = g * (1 + out^2)
    (quotient rule: (cos^2 + sin^2) / cos^2)."""

    def forward(self, x):
        out = backend.get_array_module(x).tan(x)
        self.save_for_backward(out)
        return out

    def backward(self, grad):
        (out,) = self.saved
        return grad * (1 + out * out)


class Asin(Function):
    """out = asin x, so x = sin out and dx/dout = cos out = sqrt(1 - x^2) (cos >= 0 on
    [-pi/2, pi/2]).   dx = g / sqrt(1 - x^2)."""

    def forward(self, x):
        self.save_for_backward(x)
        return backend.get_array_module(x).arcsin(x)

    def backward(self, grad):
        (x,) = self.saved
        with np.errstate(divide="ignore", invalid="ignore"):
            return grad / backend.get_array_module(x).sqrt(1 - x * x)


class Acos(Function):
    """out = acos x = pi/2 - asin x.   dx = -g / sqrt(1 - x^2)."""

    def forward(self, x):
        self.save_for_backward(x)
        return backend.get_array_module(x).arccos(x)

    def backward(self, grad):
        (x,) = self.saved
        with np.errstate(divide="ignore", invalid="ignore"):
            return -grad / backend.get_array_module(x).sqrt(1 - x * x)


class Atan(Function):
    """out = atan x, so x = tan out and dx/dout = 1 + tan^2 out = 1 + x^2.
    dx = g / (1 + x^2)."""

    def forward(self, x):
        self.save_for_backward(x)
        return backend.get_array_module(x).arctan(x)

    def backward(self, grad):
        (x,) = self.saved
        return grad / (1 + x * x)


class Atan2(Function):
    """out = atan2(y, x), the angle of the point (x, y), broadcast as in PyTorch.
    Away from the branch cut it is atan(y / x) plus a constant, so with r^2 = x^2 + y^2:
        dy = g * x / r^2,   dx = -g * y / r^2   (then each is unbroadcast).
    At the origin r^2 = 0: the gradient there is 0, as PyTorch gives."""

    def forward(self, y, x):
        self.save_for_backward(y, x)
        return backend.get_array_module(y).arctan2(y, x)

    def backward(self, grad):
        y, x = self.saved
        xp = backend.get_array_module(grad)
        r2 = x * x + y * y
        with np.errstate(divide="ignore", invalid="ignore"):
            scale = xp.where(r2 == 0, 0, grad / r2)
        return (unbroadcast(scale * x, y.shape) if self.needs_input_grad[0] else None,
                unbroadcast(-scale * y, x.shape) if self.needs_input_grad[1] else None)


def tan(input: Tensor) -> Tensor:  # noqa: A002 - PyTorch's name
    """Elementwise tangent (radians); integer tensors give float32, as in PyTorch."""
    return Tan.apply(_as_float(input))


def asin(input: Tensor) -> Tensor:  # noqa: A002
    """Elementwise arcsine in [-pi/2, pi/2]; NaN outside [-1, 1], as in PyTorch."""
    return Asin.apply(_as_float(input))


def acos(input: Tensor) -> Tensor:  # noqa: A002
    """Elementwise arccosine in [0, pi]; NaN outside [-1, 1], as in PyTorch."""
    return Acos.apply(_as_float(input))


def atan(input: Tensor) -> Tensor:  # noqa: A002
    """Elementwise arctangent in (-pi/2, pi/2)."""
    return Atan.apply(_as_float(input))


def atan2(input: Tensor, other: Tensor) -> Tensor:  # noqa: A002
    """``torch.atan2(input, other)``: the angle of the point (other, input) in [-pi, pi],
    elementwise after broadcasting (input is y, other is x). Both must be tensors, as in
    torch (a Python number is a TypeError there)."""
    both_tensors("atan2", input, other)
    y, x = input, other
    if not (is_floating(y.dtype) and is_floating(x.dtype)      # two floats of one tier:
            and operand_tier(y) == operand_tier(x)):             # Function.apply promotes
        target = result_type(y, x)       # torch's: an int tensor and a float 0-d: the 0-d's
        target = target if is_floating(target) else precision.get_default_dtype()
        y, x = _as_dtype(y, target, y), _as_dtype(x, target, x)   # (or refuses, if strict)
    try:
        return Atan2.apply(y, x)
    except ValueError as exc:
        if "broadcast" not in str(exc):
            raise
        raise RuntimeError(f"atan2: shapes {y.shape} and {x.shape} do not broadcast (sizes must "
                           f"match or be 1, aligned from the right)") from None
