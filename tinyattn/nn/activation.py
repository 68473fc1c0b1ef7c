"""Activation modules with PyTorch's names and arguments: ``ReLU``, ``GELU``, ``Tanh``,
``Sigmoid``, ``SiLU``, ``LeakyReLU``, ``Softplus``, ``Softmax``, ``LogSoftmax``.

Each one holds no parameters and calls one op of ``tinyattn.functional`` (whose backward is
derived in docs/derivations.md). ``inplace=True`` writes the result into the input, as in
PyTorch (docs/nn.md#activations).
"""
from __future__ import annotations

from typing import Optional

from .. import functional as F
from ..tensor import Tensor
from .module import Module

__all__ = ["ReLU", "GELU", "Tanh", "Sigmoid", "SiLU", "LeakyReLU", "Softplus", "Softmax",
           "LogSoftmax"]


class _Activation(Module):
    def __init__(self, inplace: bool = False):
        self.inplace = bool(inplace)

    def extra_repr(self) -> str:
        return "inplace=True" if self.inplace else ""


class ReLU(_Activation):
    """max(x, 0)."""

    def forward(self, x: Tensor) -> Tensor:
        return F.relu(x, inplace=self.inplace)


class GELU(Module):
    """x * Phi(x) (``approximate="tanh"`` for the tanh approximation GPT-2 used)."""

    def __init__(self, approximate: str = "none"):
        if approximate not in ("none", "tanh"):
            raise ValueError(f"GELU: approximate must be 'none' or 'tanh', got {approximate!r}")
        self.approximate = approximate

    def forward(self, x: Tensor) -> Tensor:
        return F.gelu(x, approximate=self.approximate)

    def extra_repr(self) -> str:
        return f"approximate={self.approximate!r}"


class Tanh(Module):
    def forward(self, x: Tensor) -> Tensor:
        return F.tanh(x)


class Sigmoid(Module):
    """1 / (1 + exp(-x))."""

    def forward(self, x: Tensor) -> Tensor:
        return F.sigmoid(x)


class SiLU(_Activation):
    """x * sigmoid(x) (also called swish), the gate of SwiGLU."""

    def forward(self, x: Tensor) -> Tensor:
        return F.silu(x, inplace=self.inplace)


class LeakyReLU(_Activation):
    """x for x >= 0, negative_slope * x below."""

    def __init__(self, negative_slope: float = 0.01, inplace: bool = False):
        super().__init__(inplace)
        self.negative_slope = float(negative_slope)

    def forward(self, x: Tensor) -> Tensor:
        return F.leaky_relu(x, negative_slope=self.negative_slope, inplace=self.inplace)

    def extra_repr(self) -> str:
        return f"negative_slope={self.negative_slope}" + (", inplace=True" if self.inplace
                                                         else "")


class Softplus(Module):
    """log(1 + exp(beta x)) / beta, and x itself where beta x > threshold (as PyTorch)."""

    def __init__(self, beta: float = 1.0, threshold: float = 20.0):
        self.beta, self.threshold = float(beta), float(threshold)

    def forward(self, x: Tensor) -> Tensor:
        return F.softplus(x, beta=self.beta, threshold=self.threshold)

    def extra_repr(self) -> str:
        return f"beta={self.beta}, threshold={self.threshold}"


def _checked_dim(name: str, dim: Optional[int]) -> Optional[int]:
    """None keeps torch's deprecated implicit dim (chosen from the input's rank at forward,
    with torch's warning: dim 0 for 1-D and 3-D inputs, dim 1 otherwise)."""
    if dim is not None and (isinstance(dim, bool) or not isinstance(dim, int)):
        raise TypeError(f"{name}: dim must be an int, got {dim!r}")
    return dim


class Softmax(Module):
    """exp(x) / sum(exp(x)) along ``dim``."""

    def __init__(self, dim: Optional[int] = None):
        self.dim = _checked_dim("Softmax", dim)

    def forward(self, x: Tensor) -> Tensor:
        return F.softmax(x, dim=self.dim)

    def extra_repr(self) -> str:
        return f"dim={self.dim}"


class LogSoftmax(Module):
    """log(softmax(x)) along ``dim``, computed stably in one op."""

    def __init__(self, dim: Optional[int] = None):
        self.dim = _checked_dim("LogSoftmax", dim)

    def forward(self, x: Tensor) -> Tensor:
        return F.log_softmax(x, dim=self.dim)

    def extra_repr(self) -> str:
        return f"dim={self.dim}"
