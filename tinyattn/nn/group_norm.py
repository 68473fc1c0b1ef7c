"""``GroupNorm``: PyTorch's group normalisation layer (the op and its hand-derived backward
are in ops/group_norm.py, docs/derivations.md#group-norm)."""
from __future__ import annotations

from typing import Any, Optional

import numpy as np

from .. import functional as F
from ..tensor import Tensor, ones, zeros
from .module import Module, Parameter

__all__ = ["GroupNorm"]


class GroupNorm(Module):
    """Normalise (N, C, *) over each group of C / num_groups channels (and all positions),
    per sample; then scale and shift each channel (``weight`` = 1, ``bias`` = 0 at first).
    ``GroupNorm(1, C)`` normalises each sample over everything (a layer norm over C, H, W
    with per-channel affine); ``GroupNorm(C, C)`` is instance normalisation."""

    def __init__(self, num_groups: int, num_channels: int, eps: float = 1e-5,
                 affine: bool = True, device: Optional[str] = None, dtype: Any = None, *,
                 bias: bool = True):
        for name, value in (("num_groups", num_groups), ("num_channels", num_channels)):
            if isinstance(value, bool) or not isinstance(value, (int, np.integer)) \
                    or value <= 0:
                raise ValueError(f"GroupNorm: {name} must be a positive integer, got "
                                 f"{value!r}")
        if num_channels % num_groups:
            raise ValueError("num_channels must be divisible by num_groups")
        self.num_groups, self.num_channels = int(num_groups), int(num_channels)
        self.eps, self.affine = float(eps), affine
        self.weight = Parameter(ones(num_channels)._data) if affine else None
        self.bias = Parameter(zeros(num_channels)._data) if affine and bias else None
        if device is not None or dtype is not None:
            self.to(device=device, dtype=dtype)

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002 - torch's name
        return F.group_norm(input, self.num_groups, self.weight, self.bias, self.eps)

    def extra_repr(self) -> str:
        return (f"{self.num_groups}, {self.num_channels}, eps={self.eps}, affine={self.affine}, "
                f"bias={self.bias is not None}")
