"""More pointwise functions: sigmoid, abs, rsqrt, log2, log10 and the activations
leaky_relu, silu and softplus (docs/derivations.md#pointwise-functions).

Each output element depends on one input element, so every backward is ``g * f'(x)``
(docs/derivations.md#elementwise). The sigmoid is computed without overflow for any x, and
the derivatives are written in terms of the saved output where that is cheapest.
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np

from .. import backend
from ..autograd import Function, name_node
from ..tensor import Tensor
from .elementwise import _as_float
from .complex_numbers import complex_abs

__all__ = ["sigmoid", "abs", "rsqrt", "log2", "log10", "leaky_relu", "silu", "softplus",
           "stable_sigmoid"]


def stable_sigmoid(x: Any) -> Any:
    """1 / (1 + e^-x) without overflow: with e = exp(-|x|) (never above 1),
    sigmoid(x) = 1 / (1 + e) for x >= 0 and e / (1 + e) for x < 0."""
    xp = backend.get_array_module(x)
    e = xp.exp(-xp.abs(x))
    return xp.where(x >= 0, 1 / (1 + e), e / (1 + e))


class Sigmoid(Function):
    """out = 1 / (1 + e^-x).   dx = g * out * (1 - out).

    From out = (1 + e^-x)^-1: d out/dx = e^-x / (1 + e^-x)^2 = out * (1 - out)."""

    def forward(self, x):
        out = stable_sigmoid(x)
        self.save_for_backward(out)
        return out

    def backward(self, grad):
        (out,) = self.saved
        return grad * out * (1 - out)


class Abs(Function):
    """out = |x|.   dx = g * sign(x), with sign(0) = 0 (PyTorch's subgradient at the kink)
    and 0 at NaN (as PyTorch's sgn)."""

    def forward(self, x):
        self.save_for_backward(x)
        return backend.get_array_module(x).abs(x)

    def backward(self, grad):
        (x,) = self.saved
        xp = backend.get_array_module(x)
        return grad * xp.nan_to_num(xp.sign(x), nan=0.0)


class LogBase(Function):
    """out = log_base x = ln x / ln base.   dx = g / (x ln base)."""

    def forward(self, x, base: float):
        self.save_for_backward(x, base)
        xp = backend.get_array_module(x)
        with np.errstate(divide="ignore", invalid="ignore"):   # -inf at 0, NaN below
            return xp.log2(x) if base == 2 else xp.log10(x)

    def backward(self, grad):
        x, base = self.saved
        with np.errstate(divide="ignore"):
            return grad / (x * math.log(base))


class Rsqrt(Function):
    """out = x^(-1/2).   dx = g * (-1/2) x^(-3/2) = -g * out^3 / 2."""

    def forward(self, x):
        xp = backend.get_array_module(x)
        out = 1 / xp.sqrt(x)
        self.save_for_backward(out)
        return out

    def backward(self, grad):
        (out,) = self.saved
        return grad * (-0.5 * out * out * out)


class LeakyRelu(Function):
    """out = x for x > 0, slope * x otherwise.   dx = g for x > 0, slope * g otherwise
    (at x = 0 the slope side, as PyTorch)."""

    versions_checked = (0,)    # what torch saves: changed in place, backward raises

    def forward(self, x, slope: float):
        positive = x > 0
        self.save_for_backward(positive, slope)
        return backend.get_array_module(x).where(positive, x, x * slope)

    def backward(self, grad):
        positive, slope = self.saved
        return backend.get_array_module(grad).where(positive, grad, grad * slope)


class Silu(Function):
    """out = x * s with s = sigmoid(x) (also called swish).

    Product rule with ds/dx = s (1 - s):   dx = g * (s + x s (1 - s)) = g * s * (1 + x (1 - s)).
    """

    def forward(self, x):
        s = stable_sigmoid(x)
        self.save_for_backward(x, s)
        return x * s

    def backward(self, grad):
        x, s = self.saved
        return grad * s * (1 + x * (1 - s))


class Softplus(Function):
    """out = log(1 + e^(beta x)) / beta, and out = x where beta x > threshold (PyTorch's
    switch to the line it approaches, which also avoids overflow).

    d/dx log(1 + e^(beta x)) / beta = e^(beta x) / (1 + e^(beta x)) = sigmoid(beta x), so
        dx = g * sigmoid(beta x),  and dx = g on the linear part.
    Computed as (max(z, 0) + log1p(e^(-|z|))) / beta with z = beta x: no exp ever overflows.
    """

    versions_checked = (0,)    # what torch saves: changed in place, backward raises

    def forward(self, x, beta: float, threshold: float):
        xp = backend.get_array_module(x)
        z = x * beta
        linear = z > threshold
        soft = (xp.maximum(z, 0) + xp.log1p(xp.exp(-xp.abs(z)))) / beta
        self.save_for_backward(z, linear)
        return xp.where(linear, x, soft)

    def backward(self, grad):
        z, linear = self.saved
        return backend.get_array_module(grad).where(linear, grad, grad * stable_sigmoid(z))


# ------------------------------------------------------------------ public functions
def sigmoid(x: Tensor) -> Tensor:
    return Sigmoid.apply(_as_float(x))


def abs(x: Tensor) -> Tensor:  # noqa: A001 - PyTorch's name
    """|x|; an integer tensor stays an integer tensor (no gradient), as in PyTorch; a complex
    one gives its real modulus (ops/complex_numbers.py)."""
    if x.dtype.kind == "c":
        return complex_abs(x)
    return Abs.apply(x)


def log2(x: Tensor) -> Tensor:
    return name_node(LogBase.apply(_as_float(x), base=2), "Log2Backward0")


def log10(x: Tensor) -> Tensor:
    return name_node(LogBase.apply(_as_float(x), base=10), "Log10Backward0")


def rsqrt(x: Tensor) -> Tensor:
    """1 / sqrt(x) (inf at 0, NaN below 0, as PyTorch)."""
    return Rsqrt.apply(_as_float(x))


def leaky_relu(x: Tensor, negative_slope: float = 0.01, inplace: bool = False) -> Tensor:
    if inplace:
        return in_place_op(x, "leaky_relu", lambda t: leaky_relu(t, negative_slope))
    return LeakyRelu.apply(_as_float(x), slope=float(negative_slope))


def silu(x: Tensor, inplace: bool = False) -> Tensor:
    if inplace:
        return in_place_op(x, "silu", silu)
    return Silu.apply(_as_float(x))


def softplus(x: Tensor, beta: float = 1.0, threshold: float = 20.0) -> Tensor:
    """PyTorch's ``F.softplus``: log(1 + exp(beta x)) / beta, linear where beta x > threshold."""
    if float(beta) == 0.0:
        raise ValueError("softplus: beta must be non-zero (the formula divides by it)")
    return Softplus.apply(_as_float(x), beta=float(beta), threshold=float(threshold))


def in_place_op(x: Tensor, op: str, compute: Any) -> Tensor:
    """``inplace=True``, as torch: the result is written into x (its version counts one more,
    and a graph through x takes the op as its history; ops/inplace.py)."""
    from .inplace import _in_place  # noqa: PLC0415 - inplace.py imports elementwise, as this
    return _in_place(x, op + "_", compute)
