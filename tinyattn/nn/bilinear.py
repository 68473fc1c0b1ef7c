"""``nn.Bilinear``: y = x1^T A x2 + b, one matrix A per output feature (docs/nn.md#layers).
The backward is derived in ops/bilinear.py."""
from __future__ import annotations

import math
from typing import Any, Optional

from .. import functional as F
from ..tensor import Tensor
from .layers import _factory, uniform_parameter
from .module import Module

__all__ = ["Bilinear"]


class Bilinear(Module):
    """(*, in1_features), (*, in2_features) -> (*, out_features); weight (out_features,
    in1_features, in2_features) and bias (out_features,) ~ U(-1/sqrt(in1), 1/sqrt(in1)), as
    PyTorch initialises them."""

    def __init__(self, in1_features: int, in2_features: int, out_features: int,
                 bias: bool = True, device: Optional[str] = None, dtype: Any = None):
        super().__init__()
        if in1_features <= 0:
            raise ValueError(f"in1_features must be > 0, but got (in1_features={in1_features})")
        self.in1_features, self.in2_features = in1_features, in2_features
        self.out_features = out_features
        bound = 1.0 / math.sqrt(in1_features)
        self.weight = uniform_parameter((out_features, in1_features, in2_features), bound)
        self.bias = uniform_parameter((out_features,), bound) if bias else None
        _factory(self, device, dtype)

    def forward(self, input1: Tensor, input2: Tensor) -> Tensor:
        return F.bilinear(input1, input2, self.weight, self.bias)

    def extra_repr(self) -> str:
        return (f"in1_features={self.in1_features}, in2_features={self.in2_features}, "
                f"out_features={self.out_features}, bias={self.bias is not None}")
