"""nn.functional's in-place activations: ``F.relu_(x)``, ``F.elu_(x, alpha)``,
``F.leaky_relu_(x, slope)``, ``F.hardtanh_(x, lo, hi)``, ``F.selu_``, ``F.celu_``,
``F.threshold_(x, threshold, value)``, ``F.rrelu_``: each is its activation called with
``inplace=True`` (the result written into x, a version counted, the activation's backward
recorded), with torch's signatures."""
from __future__ import annotations

from ..tensor import Tensor
from . import celu, elu, hardtanh, leaky_relu, relu, rrelu, selu   # torch-keyword
# wrappers (inplace=True): this module is imported by tinyattn.functional, after ops/
from . import threshold as _threshold

__all__ = ["relu_", "elu_", "leaky_relu_", "hardtanh_", "selu_", "celu_", "threshold_",
           "rrelu_"]


def relu_(input: Tensor) -> Tensor:  # noqa: A002 - torch's names
    return relu(input, inplace=True)


def elu_(input: Tensor, alpha: float = 1.0) -> Tensor:  # noqa: A002
    return elu(input, alpha, inplace=True)


def leaky_relu_(input: Tensor, negative_slope: float = 0.01) -> Tensor:  # noqa: A002
    return leaky_relu(input, negative_slope, inplace=True)


def hardtanh_(input: Tensor, min_val: float = -1.0, max_val: float = 1.0) -> Tensor:  # noqa: A002
    return hardtanh(input, min_val, max_val, inplace=True)


def selu_(input: Tensor) -> Tensor:  # noqa: A002
    return selu(input, inplace=True)


def celu_(input: Tensor, alpha: float = 1.0) -> Tensor:  # noqa: A002
    return celu(input, alpha, inplace=True)


def threshold_(input: Tensor, threshold: float, value: float) -> Tensor:  # noqa: A002
    return _threshold(input, threshold, value, inplace=True)


def rrelu_(input: Tensor, lower: float = 1.0 / 8, upper: float = 1.0 / 3,  # noqa: A002
           training: bool = False) -> Tensor:
    return rrelu(input, lower, upper, training, inplace=True)
