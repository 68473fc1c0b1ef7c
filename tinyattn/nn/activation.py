"""Activation modules with PyTorch's names and arguments: ``ReLU``, ``GELU``, ``Tanh``,
``Sigmoid``, ``SiLU``, ``LeakyReLU``, ``Softplus``, ``Softmax``, ``LogSoftmax``, and the rest
of torch's: ``ReLU6``, ``Hardsigmoid``, ``Hardswish``, ``Mish``, ``SELU``, ``CELU``, ``ELU``,
``Hardtanh``, ``Hardshrink``, ``Softshrink``, ``Tanhshrink``, ``Softsign``, ``LogSigmoid``,
``Threshold``, ``RReLU``, ``GLU``, ``Softmin`` and ``PReLU`` (the one with a parameter).

Each one holds no parameters and calls one op of ``tinyattn.functional`` (whose backward is
derived in docs/derivations.md). ``inplace=True`` writes the result into the input, as in
PyTorch (docs/nn.md#activations).
"""
from __future__ import annotations

from typing import Any, Optional

from .. import functional as F
from ..autograd import no_grad
from ..factories import full
from ..tensor import Tensor
from .module import Module, Parameter

__all__ = ["ReLU", "GELU", "Tanh", "Sigmoid", "SiLU", "LeakyReLU", "Softplus", "Softmax",
           "LogSoftmax", "ReLU6", "Hardsigmoid", "Hardswish", "Mish", "SELU", "CELU", "ELU",
           "Hardtanh", "Hardshrink", "Softshrink", "Tanhshrink", "Softsign", "LogSigmoid",
           "Threshold", "RReLU", "GLU", "Softmin", "PReLU", "Softmax2d"]


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
            raise RuntimeError(f"GELU: approximate must be 'none' or 'tanh', got {approximate!r}")
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
        self.beta, self.threshold = beta, threshold     # kept as given: torch prints beta=2

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


class Softmax2d(Module):
    """Softmax over the channels of every spatial position: (N, C, H, W) or (C, H, W),
    along dim -3."""

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002 - torch's name
        if input.ndim not in (3, 4):
            raise ValueError(f"Softmax2d: expected input to be 3D or 4D, got {input.ndim}D "
                             f"instead")
        return F.softmax(input, dim=-3)


class LogSoftmax(Module):
    """log(softmax(x)) along ``dim``, computed stably in one op."""

    def __init__(self, dim: Optional[int] = None):
        self.dim = _checked_dim("LogSoftmax", dim)

    def forward(self, x: Tensor) -> Tensor:
        return F.log_softmax(x, dim=self.dim)

    def extra_repr(self) -> str:
        return f"dim={self.dim}"


# ------------------------------------------------------------------ the rest of torch's
class ReLU6(_Activation):
    """min(max(x, 0), 6)."""

    def forward(self, x: Tensor) -> Tensor:
        return F.relu6(x)


class Hardsigmoid(_Activation):
    """relu6(x + 3) / 6."""

    def forward(self, x: Tensor) -> Tensor:
        return F.hardsigmoid(x)


class Hardswish(_Activation):
    """x * relu6(x + 3) / 6 (MobileNetV3's activation)."""

    def forward(self, x: Tensor) -> Tensor:
        return F.hardswish(x)


class Mish(_Activation):
    """x * tanh(softplus(x))."""

    def forward(self, x: Tensor) -> Tensor:
        return F.mish(x)


class SELU(_Activation):
    """scale * elu(x, alpha) with torch's constants (self-normalising networks)."""

    def forward(self, x: Tensor) -> Tensor:
        return F.selu(x)


class _AlphaActivation(_Activation):
    def __init__(self, alpha: float = 1.0, inplace: bool = False):
        super().__init__(inplace)
        self.alpha = float(alpha)

    def extra_repr(self) -> str:
        return f"alpha={self.alpha}" + (", inplace=True" if self.inplace else "")


class CELU(_AlphaActivation):
    """x for x > 0, alpha * (exp(x / alpha) - 1) otherwise."""

    def forward(self, x: Tensor) -> Tensor:
        return F.celu(x, self.alpha)


class ELU(_AlphaActivation):
    """x for x > 0, alpha * (exp(x) - 1) otherwise."""

    def forward(self, x: Tensor) -> Tensor:
        return F.elu(x, self.alpha)


class Hardtanh(_Activation):
    """x clipped to [min_val, max_val]."""

    def __init__(self, min_val: float = -1.0, max_val: float = 1.0, inplace: bool = False):
        super().__init__(inplace)
        if min_val > max_val:
            raise ValueError(f"Hardtanh: min_val ({min_val}) must not exceed max_val "
                             f"({max_val})")
        self.min_val, self.max_val = min_val, max_val

    def forward(self, x: Tensor) -> Tensor:
        return F.hardtanh(x, self.min_val, self.max_val)

    def extra_repr(self) -> str:
        return f"min_val={self.min_val}, max_val={self.max_val}" + (
            ", inplace=True" if self.inplace else "")


class _Shrink(Module):
    def __init__(self, lambd: float = 0.5):
        self.lambd = lambd

    def extra_repr(self) -> str:
        return f"{self.lambd}"


class Hardshrink(_Shrink):
    """x where |x| > lambd, else 0."""

    def forward(self, x: Tensor) -> Tensor:
        return F.hardshrink(x, self.lambd)


class Softshrink(_Shrink):
    """x - lambd above lambd, x + lambd below -lambd, else 0."""

    def forward(self, x: Tensor) -> Tensor:
        return F.softshrink(x, self.lambd)


class Tanhshrink(Module):
    """x - tanh(x)."""

    def forward(self, x: Tensor) -> Tensor:
        return F.tanhshrink(x)


class Softsign(Module):
    """x / (1 + |x|)."""

    def forward(self, x: Tensor) -> Tensor:
        return F.softsign(x)


class LogSigmoid(Module):
    """log(sigmoid(x)), finite for any x."""

    def forward(self, x: Tensor) -> Tensor:
        return F.logsigmoid(x)


class Threshold(_Activation):
    """x where x > threshold, else value."""

    def __init__(self, threshold: float, value: float, inplace: bool = False):
        super().__init__(inplace)
        self.threshold, self.value = threshold, value

    def forward(self, x: Tensor) -> Tensor:
        return F.threshold(x, self.threshold, self.value)

    def extra_repr(self) -> str:
        return f"threshold={self.threshold}, value={self.value}" + (
            ", inplace=True" if self.inplace else "")


class RReLU(_Activation):
    """leaky_relu with a random slope in [lower, upper] per element while training, their
    mean in eval mode."""

    def __init__(self, lower: float = 1.0 / 8, upper: float = 1.0 / 3, inplace: bool = False):
        super().__init__(inplace)
        self.lower, self.upper = lower, upper

    def forward(self, x: Tensor) -> Tensor:
        return F.rrelu(x, self.lower, self.upper, training=self.training)

    def extra_repr(self) -> str:
        return f"lower={self.lower}, upper={self.upper}" + (", inplace=True" if self.inplace
                                                            else "")


class GLU(Module):
    """a * sigmoid(b), a and b the halves of the input along ``dim``."""

    def __init__(self, dim: int = -1):
        self.dim = dim

    def forward(self, x: Tensor) -> Tensor:
        return F.glu(x, self.dim)

    def extra_repr(self) -> str:
        return f"dim={self.dim}"


class Softmin(Module):
    """softmax(-x) along ``dim``."""

    def __init__(self, dim: Optional[int] = None):
        self.dim = _checked_dim("Softmin", dim)

    def forward(self, x: Tensor) -> Tensor:
        return F.softmin(x, dim=self.dim)

    def extra_repr(self) -> str:
        return f"dim={self.dim}"


class PReLU(Module):
    """x for x > 0, weight * x otherwise; ``weight`` is a learned Parameter holding one
    slope (``num_parameters=1``) or one per channel (dim 1 of the input), set to ``init``."""

    def __init__(self, num_parameters: int = 1, init: float = 0.25, device: Any = None,
                 dtype: Any = None):
        self.num_parameters = int(num_parameters)
        self.init = float(init)
        self.weight = Parameter(full((self.num_parameters,), self.init,
                                     dtype=dtype, device=device))   # default float dtype

    def forward(self, x: Tensor) -> Tensor:
        return F.prelu(x, self.weight)

    def reset_parameters(self) -> None:
        with no_grad():
            self.weight.fill_(self.init)

    def extra_repr(self) -> str:
        return f"num_parameters={self.num_parameters}"
