"""``Dropout1d``, ``Dropout2d``, ``Dropout3d``: PyTorch's channel dropout layers (whole
channels zeroed while training, the identity after ``model.eval()``; ops/channel_dropout.py),
and ``AlphaDropout`` / ``FeatureAlphaDropout`` (SELU networks' dropout, which keeps the mean
and variance of its input: ops/alpha_dropout.py)."""
from __future__ import annotations

from typing import Any

from .. import functional as F
from ..tensor import Tensor
from .module import Module

__all__ = ["Dropout1d", "Dropout2d", "Dropout3d", "AlphaDropout", "FeatureAlphaDropout"]


class _DropoutNd(Module):
    _function: Any = None

    def __init__(self, p: float = 0.5, inplace: bool = False):
        if isinstance(p, bool) or not isinstance(p, (int, float)) or not 0.0 <= p <= 1.0:
            raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
        self.p, self.inplace = p, bool(inplace)

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002 - torch's name
        return type(self)._function(input, self.p, self.training, self.inplace)

    def extra_repr(self) -> str:
        return f"p={self.p}, inplace={self.inplace}"


class Dropout1d(_DropoutNd):
    """Zero each channel of (N, C, L) with probability p while training."""
    _function = staticmethod(F.dropout1d)


class Dropout2d(_DropoutNd):
    """Zero each channel (feature map) of (N, C, H, W) with probability p while training."""
    _function = staticmethod(F.dropout2d)


class Dropout3d(_DropoutNd):
    """Zero each channel of (N, C, D, H, W) with probability p while training."""
    _function = staticmethod(F.dropout3d)


class AlphaDropout(_DropoutNd):
    """Set each element to SELU's negative saturation with probability p while training,
    then rescale so the mean and variance stay those of the input; the identity in eval."""
    _function = staticmethod(F.alpha_dropout)


class FeatureAlphaDropout(_DropoutNd):
    """AlphaDropout of whole channels of (N, C, ...) while training; the identity in eval."""
    _function = staticmethod(F.feature_alpha_dropout)
