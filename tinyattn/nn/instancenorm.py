"""``InstanceNorm1d/2d/3d`` and ``F.instance_norm``, as PyTorch's (docs/nn.md#convolution-and-pooling).

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
from ..autograd import no_grad
from ..tensor import Tensor, ones, tensor, zeros
from .module import Module, Parameter

__all__ = ["InstanceNorm1d", "InstanceNorm2d", "InstanceNorm3d", "instance_norm"]


def instance_norm(input: Tensor, running_mean: Optional[Tensor] = None,  # noqa: A002
                  running_var: Optional[Tensor] = None, weight: Optional[Tensor] = None,
                  bias: Optional[Tensor] = None, use_input_stats: bool = True,
                  momentum: float = 0.1, eps: float = 1e-5) -> Tensor:
    """``F.instance_norm``: (N, C, *) normalised per sample and channel over *; with
    ``use_input_stats=False`` the running statistics normalise instead."""
    if input.ndim < 2:
        raise ValueError(f"instance_norm: expected an input of at least 2 dims (N, C, ...), "
                         f"got shape {input.shape}")
    spatial = int(np.prod(input.shape[2:])) if input.ndim > 2 else 1
    if use_input_stats and spatial <= 1:
        raise ValueError(f"Expected more than 1 spatial element when training, got input size "
                         f"{list(input.shape)}")
    batch, channels = input.shape[0], input.shape[1]
    folded = input.reshape((1, batch * channels) + tuple(input.shape[2:]))  # (1, N C, *)

    def per_sample(t: Optional[Tensor]) -> Optional[Tensor]:
        return None if t is None else t.repeat(batch)                        # (C,) -> (N C,)
    mean_copy, var_copy = per_sample(running_mean), per_sample(running_var)
    out = F.batch_norm(folded, mean_copy, var_copy, per_sample(weight), per_sample(bias),
                       use_input_stats, momentum, eps)
    if use_input_stats and running_mean is not None:
        with no_grad():        # the mean over the samples of each one's updated statistics
            running_mean.copy_(mean_copy.reshape(batch, channels).mean(0))
            running_var.copy_(var_copy.reshape(batch, channels).mean(0))
    return out.reshape(tuple(input.shape))


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
        out = instance_norm(x, self.running_mean, self.running_var, self.weight, self.bias,
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
