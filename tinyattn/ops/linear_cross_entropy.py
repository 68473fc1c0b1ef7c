"""``F.linear_cross_entropy``: cross-entropy of a linear projection's logits, torch 2.13's
fused name for ``cross_entropy(linear(x, W, b), target)`` (docs/derivations.md#cross-entropy).

It is that composition, of ops with derived backwards (matmul, add, reshape, cross_entropy):
for x (N, in) or (in,) and W (C, d_1, ..., d_K, in), the logits are x W^T viewed as
(N, C, d_1, ..., d_K) (K-dimensional loss), and dx = g_logits W, dW = g_logits^T x.
torch's ``options`` (``nn.LinearCrossEntropyOptions``) choose how its kernel chunks the batch
to save memory; the values are the reference path's, which is what is computed here.
"""
from __future__ import annotations

import warnings
from typing import Any, Optional

import numpy as np

from ..autograd import keep_versions
from ..tensor import Tensor
from ..precision import is_floating, is_low_precision
from .loss import cross_entropy
from .matmul import linear
from .nll import nll_loss
from .softmax import log_softmax

__all__ = ["linear_cross_entropy"]


def linear_cross_entropy(input: Tensor, linear_weight: Tensor, target: Tensor,  # noqa: A002
                         *, linear_bias: Optional[Tensor] = None,
                         weight: Optional[Tensor] = None, reduction: str = "mean",
                         ignore_index: Optional[int] = None, label_smoothing: float = 0.0,
                         options: Any = None) -> Tensor:
    """``F.linear_cross_entropy``: ``cross_entropy(x W^T + b, target, ...)`` with W
    (C, *out_features, in_features); a target of the logits' shape holds probabilities."""
    if input.ndim < 1 or input.ndim > 2:
        raise RuntimeError(f"expected input with dimensionality 1 or 2, got {input.ndim}")
    if linear_weight.ndim < 2:
        raise RuntimeError(f"expected linear_weight with dimensionality at least 2, got "
                           f"{linear_weight.ndim}")
    batches, in_features = tuple(input.shape[:-1]), input.shape[-1]
    if in_features != linear_weight.shape[-1]:
        raise RuntimeError(f"expected equal input and linear_weight last dimensions "
                           f"(in_features), got {in_features} and {linear_weight.shape[-1]}, "
                           f"respectively")
    classes, out_features = linear_weight.shape[0], tuple(linear_weight.shape[1:-1])
    if linear_bias is not None and tuple(linear_bias.shape) != (classes,) + out_features:
        raise RuntimeError(f"expected linear_bias shape {(classes,) + out_features}, got "
                           f"{tuple(linear_bias.shape)}")
    if out_features and not batches:
        raise RuntimeError(f"K-dimensional loss defined by linear_weight shape "
                           f"{tuple(linear_weight.shape)} requires batched input, (N, "
                           f"{in_features}), got unbatched input with shape "
                           f"{tuple(input.shape)}")
    logits_shape = batches + (classes,) + out_features
    if tuple(target.shape) == logits_shape and ignore_index is not None:
        raise RuntimeError("ignore_index cannot be specified when target contains "
                           "probabilities")
    chunked = options is not None and _chunked(options, reduction, label_smoothing, target,
                                               out_features, linear_bias)
    if chunked and reduction != "none":
        # torch's chunked kernel computes the gradients in the forward and keeps no input:
        # an in-place change to one afterwards leaves the backward valid (with the forward's
        # values). The composition below runs on copies, which nothing else can change.
        input, linear_weight, target = input.clone(), linear_weight.clone(), target.clone()
        linear_bias = None if linear_bias is None else linear_bias.clone()
        weight = None if weight is None else weight.clone()
    originals = (input, linear_weight, linear_bias, target, weight)
    half = chunked and is_low_precision(input.dtype)
    if half:
        # torch's chunked kernel computes a float16/bfloat16 call in float32 (logits, log-
        # softmax, the losses and their sum) and rounds the result once
        input, linear_weight = input.float(), linear_weight.float()
        linear_bias = None if linear_bias is None else linear_bias.float()
        weight = None if weight is None else weight.float()
    result = _composed(input, linear_weight, target, linear_bias, weight, reduction,
                       ignore_index, label_smoothing, batches, classes, out_features,
                       in_features, logits_shape)
    if half:
        result = result.to(originals[0].dtype)
    if chunked and reduction == "none":
        # torch's chunked op keeps every input, the bias too (the composition's linear
        # needs no bias for its gradient, and a half call's copies are not the inputs)
        keep_versions(result, *originals)
    return result


def _chunked(options: Any, reduction: str, label_smoothing: float, target: Tensor,
             out_features: Any, linear_bias: Optional[Tensor]) -> bool:
    """Whether torch's chunked kernel takes this call (``options`` given); where it does
    not, torch warns that the options are ignored, and so does this."""
    if reduction in ("mean", "sum", "none") and label_smoothing == 0.0 \
            and target.dtype == np.int64 and not out_features:
        return True
    bias = None if linear_bias is None else tuple(linear_bias.shape)
    warnings.warn(f"linear_cross_entropy: ``options`` ignored; chunked path needs reduction "
                  f"in {{'mean','sum','none'}}, label_smoothing == 0, target.dtype == int64, "
                  f"out_features == (). Got reduction={reduction!r}, "
                  f"label_smoothing={float(label_smoothing)}, "
                  f"target.dtype=torch.{str(target.dtype).replace('torch.', '')}, "
                  f"out_features={tuple(out_features)}, tracing=False, "
                  f"linear_bias.shape={bias}.", UserWarning, stacklevel=3)
    return False


def _composed(input: Tensor, linear_weight: Tensor, target: Tensor,  # noqa: A002
              linear_bias: Optional[Tensor], weight: Optional[Tensor], reduction: str,
              ignore_index: Optional[int], label_smoothing: float, batches: Any,
              classes: int, out_features: Any, in_features: int, logits_shape: Any
              ) -> Tensor:
    """The reference composition: linear, then log_softmax and nll_loss (class ids) or
    cross_entropy (probabilities, label smoothing)."""
    flat_weight = linear_weight.reshape(-1, in_features)              # (C * D, in)
    flat_bias = None if linear_bias is None else linear_bias.reshape(-1)  # (C * D,)
    # (N, in) @ (in, C * D) -> (N, C * D) -> (N, C, d_1, ..., d_K), bias added before the
    # one rounding of a half dtype, as torch's F.linear
    logits = linear(input, flat_weight, flat_bias).reshape(logits_shape)
    if not is_floating(target.dtype) and label_smoothing == 0.0:
        # class ids: torch's cross_entropy is log_softmax then nll_loss, and in float16 /
        # bfloat16 the log-probabilities are rounded in between; composed the same way here
        log_probs = log_softmax(logits, dim=0 if logits.ndim == 1 else 1)
        return nll_loss(log_probs, target, weight=weight,
                        ignore_index=-100 if ignore_index is None else ignore_index,
                        reduction=reduction)
    return cross_entropy(logits, target, weight=weight,
                         ignore_index=-100 if ignore_index is None else ignore_index,
                         reduction=reduction, label_smoothing=label_smoothing)
