"""``InstanceNorm1d/2d/3d`` and ``F.instance_norm``, as PyTorch's
(docs/nn.md#convolution-and-pooling).

Instance norm normalises each (sample, channel) pair over its own spatial positions. As in
torch, ``F.instance_norm`` is batch norm of the input viewed as one sample with N * C
channels, (N, C, *) -> (1, N C, *): the same op (ops/batch_norm.py, whose backward is
derived) with weight and bias repeated per sample; running statistics, when tracked, are
the mean over the samples of what batch norm's update gives each of them.
"""
from __future__ import annotations

import warnings
from typing import Any, Optional

import numpy as np

from .. import functional as F
from ..tensor import Tensor, ones, tensor, zeros
from .module import Module, Parameter

__all__ = ["InstanceNorm1d", "InstanceNorm2d", "InstanceNorm3d"]


class _InstanceNorm(Module):
    _spatial = 1

    def __init__(self, num_features: int, eps: float = 1e-5, momentum: Optional[float] = 0.1,
                 affine: bool = False, track_running_stats: bool = False,
                 device: Optional[str] = None, dtype: Any = None, *,
                 bias: bool = True) -> None:
        super().__init__()
        self.num_features, self.eps, self.momentum = num_features, eps, momentum
        self.affine, self.track_running_stats = affine, track_running_stats
        self.weight = Parameter(ones(num_features)._data) if affine else None
        self.bias = Parameter(zeros(num_features)._data) if affine and bias else None
        if track_running_stats:
            self.register_buffer("running_mean", zeros(num_features))
            self.register_buffer("running_var", ones(num_features))
            self.register_buffer("num_batches_tracked", tensor(0, dtype=np.int64))
        else:
            self.register_buffer("running_mean", None)
            self.register_buffer("running_var", None)
            self.register_buffer("num_batches_tracked", None)
        if device is not None or dtype is not None:
            self.to(device=device, dtype=dtype)

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002 - torch's name
        dims = self._spatial + 2
        if input.ndim not in (dims - 1, dims):
            raise ValueError(f"expected {dims - 1}D or {dims}D input (got {input.ndim}D input)")
        feature_dim = input.ndim - self._spatial - 1
        if input.shape[feature_dim] != self.num_features:
            if self.affine:
                raise ValueError(f"expected input's size at dim={feature_dim} to match "
                                 f"num_features ({self.num_features}), but got: "
                                 f"{input.shape[feature_dim]}.")
            warnings.warn(f"input's size at dim={feature_dim} does not match num_features. "
                          f"You can silence this warning by not passing in num_features, "
                          f"which is not used because affine=False", stacklevel=2)
        unbatched = input.ndim == dims - 1
        x = input.unsqueeze(0) if unbatched else input
        out = F.instance_norm(x, self.running_mean, self.running_var, self.weight, self.bias,
                            self.training or not self.track_running_stats,
                            self.momentum if self.momentum is not None else 0.0, self.eps)
        return out.squeeze(0) if unbatched else out

    def extra_repr(self) -> str:
        return (f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, "
                f"affine={self.affine}, bias={self.bias is not None}, "
                f"track_running_stats={self.track_running_stats}")


class InstanceNorm1d(_InstanceNorm):
    """(N, C, L) or (C, L): each sample's channel normalised over L."""
    _spatial = 1


class InstanceNorm2d(_InstanceNorm):
    """(N, C, H, W) or (C, H, W): each sample's channel normalised over H and W."""
    _spatial = 2


class InstanceNorm3d(_InstanceNorm):
    """(N, C, D, H, W) or (C, D, H, W): each sample's channel normalised over D, H and W."""
    _spatial = 3
