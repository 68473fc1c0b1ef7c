"""``nn.LinearCrossEntropyLoss`` and ``nn.LinearCrossEntropyOptions``, as torch 2.13's
(docs/nn.md#losses): a classifier head and its cross-entropy in one module, the op being
``F.linear_cross_entropy`` (ops/linear_cross_entropy.py)."""
from __future__ import annotations

import dataclasses
import math
from typing import Any, Optional, Tuple

from .. import functional as F
from ..tensor import Tensor
from .layers import Linear
from .loss import _Loss

__all__ = ["LinearCrossEntropyLoss", "LinearCrossEntropyOptions"]


@dataclasses.dataclass(frozen=True)
class LinearCrossEntropyOptions:
    """torch's options for its chunked kernel (how many batch rows per chunk, how to
    accumulate). They change memory use, not the result: tinyattn accepts them and computes
    the reference path, ``cross_entropy(linear(x))``."""
    allow_retain_graph: bool = False
    batch_chunk_size: Optional[int] = None
    chunking_method: Optional[str] = "auto"
    acc_policy: str = "auto"
    acc_dtype: Any = None


class LinearCrossEntropyLoss(_Loss):
    """``Linear(in_features, num_classes * prod(out_features))`` followed by cross-entropy;
    its weight is kept 2-D in ``linear`` (state dict keys ``linear.weight``, ``linear.bias``,
    as torch's) and viewed as (C, *out_features, in_features) in forward."""

    def __init__(self, in_features: int, num_classes: int, *,
                 out_features: Tuple[int, ...] = (), bias: bool = False, device: Any = None,
                 dtype: Any = None, reduction: str = "mean", weight: Optional[Tensor] = None,
                 ignore_index: Optional[int] = None, label_smoothing: float = 0.0,
                 options: Optional[LinearCrossEntropyOptions] = None) -> None:
        if weight is not None and tuple(weight.shape) != (num_classes,):
            raise RuntimeError(f"expected weight shape to be {(num_classes,)}, got "
                               f"{tuple(weight.shape)}")
        if label_smoothing < 0 or label_smoothing > 1.0:
            raise RuntimeError(f"expected label_smoothing to be in range [0, 1], got "
                               f"{label_smoothing}")
        super().__init__(None, None, reduction)
        self._register_weight("weight", weight)
        self.num_classes, self.out_features = num_classes, out_features
        self.ignore_index, self.label_smoothing = ignore_index, label_smoothing
        self.linear = Linear(in_features, math.prod(out_features, start=num_classes),
                             bias=bias, device=device, dtype=dtype)
        self.options = options

    def forward(self, input: Tensor, target: Tensor) -> Tensor:  # noqa: A002 - torch's name
        in_features = self.linear.in_features
        linear_weight = self.linear.weight.reshape(
            (self.num_classes,) + tuple(self.out_features) + (in_features,))
        linear_bias = None if self.linear.bias is None else self.linear.bias.reshape(
            (self.num_classes,) + tuple(self.out_features))
        return F.linear_cross_entropy(input, linear_weight, target, linear_bias=linear_bias,
                                      weight=self.weight, reduction=self.reduction,
                                      ignore_index=self.ignore_index,
                                      label_smoothing=self.label_smoothing,
                                      options=self.options)

    def extra_repr(self) -> str:
        return (f"in_features={self.linear.in_features}, num_classes={self.num_classes}, "
                f"out_features={self.out_features}, bias={self.linear.bias is not None}, "
                f"reduction={self.reduction}, ignore_index={self.ignore_index}, "
                f"label_smoothing={self.label_smoothing}, options={self.options}")
