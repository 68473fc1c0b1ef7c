"""``BatchNorm1d`` and ``BatchNorm2d``: PyTorch's batch normalisation layers over (N, C) or
(N, C, L) inputs, and over (N, C, H, W) images (statistics per channel over N, H and W).

The op and its hand-derived backward are in ops/batch_norm.py (docs/derivations.md#batch-norm).
Parameter and buffer names are PyTorch's (``weight``, ``bias``, ``running_mean``,
``running_var``, ``num_batches_tracked``), so ``load_state_dict(torch_bn.state_dict())``
works both ways.
"""
from __future__ import annotations

from typing import Any, Optional

import numpy as np

from .. import functional as F
from ..tensor import Tensor, ones, tensor, zeros
from .module import Module, Parameter

__all__ = ["BatchNorm1d", "BatchNorm2d"]


class BatchNorm1d(Module):
    """Normalise each of ``num_features`` channels over the batch (and length) axes.

    Training (``model.train()``, the default): the batch's mean and biased variance normalise;
    the running estimates move towards the batch's mean and UNBIASED variance by ``momentum``
    (``momentum=None``: a cumulative average, 1 / num_batches_tracked), and
    ``num_batches_tracked`` counts the batches. Evaluation (``model.eval()``): the running
    estimates normalise. ``track_running_stats=False``: no buffers, batch statistics always.
    ``bias=False`` (keyword, torch 2.x): a learnt scale without a shift.
    """

    def __init__(self, num_features: int, eps: float = 1e-5, momentum: Optional[float] = 0.1,
                 affine: bool = True, track_running_stats: bool = True,
                 device: Optional[str] = None, dtype: Any = None, *, bias: bool = True):
        if isinstance(num_features, bool) or not isinstance(num_features, (int, np.integer)) \
                or num_features < 1:
            raise ValueError(f"BatchNorm1d: num_features must be a positive integer, got "
                             f"{num_features!r}")
        if momentum is not None and not 0 <= float(momentum) <= 1:
            raise ValueError(f"BatchNorm1d: momentum must be in [0, 1] or None, got {momentum}")
        self.num_features, self.eps, self.momentum = int(num_features), float(eps), momentum
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

    def reset_running_stats(self) -> None:
        if self.track_running_stats:
            self.running_mean.zero_()
            self.running_var.fill_(1)
            self.num_batches_tracked.zero_()

    _input_dims = (2, 3)
    _input_layout = "(N, C) or (N, C, L)"

    def forward(self, x: Tensor) -> Tensor:
        name = type(self).__name__
        if x.ndim not in self._input_dims:
            wanted = " or ".join(f"{d}D" for d in self._input_dims)
            raise ValueError(f"{name}: expected {wanted} input, {self._input_layout}, "
                             f"got {x.ndim}D input of shape {x.shape}")
        if x.shape[1] != self.num_features:
            raise ValueError(f"{name}: input has {x.shape[1]} channels (dim 1 of shape "
                             f"{x.shape}) but the layer has num_features={self.num_features}")
        use_batch_stats = self.training or self.running_mean is None
        if self.training and x.shape[0] * int(np.prod(x.shape[2:])) == 1:   # torch's check
            raise ValueError(f"Expected more than 1 value per channel when training, got input "
                             f"size {x.shape}; use a batch of 2 or more, or model.eval()")
        momentum = 0.0 if self.momentum is None else self.momentum
        if self.training and self.track_running_stats:
            self.num_batches_tracked.add_(1)
            if self.momentum is None:                   # cumulative moving average
                momentum = 1.0 / float(self.num_batches_tracked.item())
        track = not self.training or self.track_running_stats
        return F.batch_norm(x, self.running_mean if track else None,
                            self.running_var if track else None, self.weight, self.bias,
                            use_batch_stats, momentum, self.eps)

    def extra_repr(self) -> str:
        return (f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, "
                f"affine={self.affine}, bias={self.bias is not None}, "
                f"track_running_stats={self.track_running_stats}")


class BatchNorm2d(BatchNorm1d):
    """``BatchNorm1d`` for images: (N, C, H, W), each channel normalised over N, H and W (the
    same op, F.batch_norm; the same parameters, buffers and momentum rule)."""

    _input_dims = (4,)
    _input_layout = "(N, C, H, W)"
