"""The negative log-likelihood loss of log-probabilities (docs/derivations.md#nll-loss).

``F.nll_loss(F.log_softmax(logits, 1), target)`` equals ``F.cross_entropy(logits, target)``;
cross_entropy fuses the two (ops/loss.py).
"""
from __future__ import annotations

from typing import Any, Optional, Tuple

import numpy as np

from .. import backend
from ..amp.dispatch import autocast_state
from ..autograd import Function, keep_versions, name_node
from ..precision import is_low_precision, scalar_type_name
from ..tensor import Tensor, as_tensor
from .embedding import check_index_range
from .pointwise_loss import legacy_reduction

__all__ = ["nll_loss"]


class NLLLoss(Function):
    """logp (N, C), target (N,), class weights c (C,) (a constant; 1 without weight) -> loss.

        l_n = -w_n logp[n, target_n],  w_n = c[target_n] (0 for an ignored row);
        "mean" divides the sum by W = sum_n w_n (the weights, not the rows, as PyTorch).
    Only the picked entries reach the loss, so dlogp is zero except
        dlogp[n, target_n] = -w_n g / W ("mean"),  -w_n g ("sum"),  -w_n g_n ("none").
    Rows that all count for nothing give a "mean" of 0/0 = NaN with zero gradients, as torch.
    """

    def forward(self, logp, target, class_weight: Any, ignore_index: int, reduction: str,
                half: Any = None):
        xp = backend.get_array_module(logp)
        rows = xp.arange(logp.shape[0])
        valid = target != ignore_index                                         # (N,)
        safe = xp.where(valid, target, 0)
        w = valid.astype(logp.dtype)
        if class_weight is not None:
            w = w * class_weight[safe]
        losses = -w * logp[rows, safe]                                         # (N,)
        total_weight = w.sum()
        self.save_for_backward(logp.shape, safe, w, total_weight, reduction)
        self.half = None
        if reduction == "none":
            return losses
        if half is not None and logp.shape[0]:
            total, count = _half_cascade(logp[rows, safe], valid, class_weight, safe, half)
            if reduction == "mean":
                self.half = (half, count)        # the backward's divisor: the half total
                with np.errstate(invalid="ignore", divide="ignore"):
                    total = _round(total / count, half)
            return xp.asarray(total, dtype=logp.dtype)
        total = losses.sum()
        if reduction == "sum":
            return total
        with np.errstate(invalid="ignore"):
            return total / total_weight                 # 0/0 = NaN when nothing counts

    def backward(self, grad):
        shape, safe, w, total_weight, reduction = self.saved
        xp = backend.get_array_module(w)
        coef = grad if reduction != "mean" else grad / xp.where(total_weight == 0, 1,
                                                                total_weight)
        if self.half is not None and reduction == "mean":   # torch's half kernel: g / W
            half, count = self.half                 # rounded, then times -w_n, rounded
            with np.errstate(invalid="ignore", divide="ignore"):
                coef = (grad / (count or 1)).astype(half).astype(w.dtype)
            dlogp = xp.zeros(shape, dtype=w.dtype)
            dlogp[xp.arange(shape[0]), safe] = (-w * coef).astype(half).astype(w.dtype)
            return dlogp, None
        dlogp = xp.zeros(shape, dtype=w.dtype)
        dlogp[xp.arange(shape[0]), safe] = -w * coef
        return dlogp, None


def _round(value: float, half: Any) -> float:
    return float(np.asarray(value, dtype=np.float32).astype(half))


def _half_cascade(picked: Any, valid: Any, class_weight: Any, safe: Any, half: Any
                  ) -> Tuple[float, float]:
    """The sum of -w_n logp_n and of the weights w_n as torch's CPU kernel forms them in
    float16/bfloat16: in the half dtype, every product and sum rounded, added into eight
    levels of partial sums (level j + 1 takes level j's sum each time the row index is a
    multiple of 2^(p (j + 1)), p = max(4, ceil(log2 N) / 8), and an ignored row skips that
    step), the levels then added in order. Python floats, one row at a time: exact, and
    only for half inputs."""
    count = len(picked)
    power = max(4, (int(count - 1).bit_length() if count > 1 else 0) // 8)
    mask = (1 << power) - 1
    losses, weights = [0.0] * 8, [0.0] * 8
    values = backend.to_host(picked).astype(np.float32).tolist()      # one copy to the host
    keep = backend.to_host(valid).tolist()
    row_weights = None if class_weight is None else \
        backend.to_host(class_weight[safe]).astype(np.float32).tolist()
    ignored = 0
    for n in range(count):
        if not keep[n]:
            ignored += 1
            continue
        if row_weights is None:
            losses[0] = _round(losses[0] - values[n], half)
        else:
            losses[0] = _round(losses[0] - _round(values[n] * row_weights[n], half), half)
            weights[0] = _round(weights[0] + row_weights[n], half)
        for j in range(7):
            if n & (mask << (j * power)):
                break
            losses[j + 1] = _round(losses[j + 1] + losses[j], half)
            weights[j + 1] = _round(weights[j + 1] + weights[j], half)
            losses[j] = weights[j] = 0.0
    total = total_weight = 0.0
    for j in range(8):
        total = _round(total + losses[j], half)
        total_weight = _round(total_weight + weights[j], half)
    if row_weights is None:
        total_weight = _round(count - ignored, half)
    return total, total_weight




def check_class_weight_dtype(weight: Optional[Tensor], input: Tensor) -> None:  # noqa: A002
    """torch's nll kernels take class weights of the input's dtype only (outside autocast,
    which casts both): a float64 weight with float32 logits raises there, where NumPy would
    promote the loss to float64."""
    if weight is None or not isinstance(weight, Tensor) or weight.dtype == input.dtype:
        return
    if str(input.device).split(":")[0] in autocast_state.dtypes:
        return
    want, got = (scalar_type_name(d) for d in (input.dtype, weight.dtype))
    raise RuntimeError(f"expected scalar type {want} but found {got} (the class weight is "
                       f"{weight.dtype}, the input {input.dtype}); convert it with "
                       f"weight.to(input.dtype)")


def nll_loss(input: Tensor, target: Any, weight: Optional[Tensor] = None,  # noqa: A002
             size_average: Optional[bool] = None, ignore_index: int = -100,
             reduce: Optional[bool] = None, reduction: str = "mean") -> Tensor:
    """PyTorch's ``F.nll_loss``: input holds log-probabilities, (N, C), (C,) or
    (N, C, d1, ...) with target (N,), () or (N, d1, ...) of class indices."""
    target = target if isinstance(target, Tensor) else as_tensor(np.asarray(target))
    reduction = legacy_reduction(size_average, reduce, reduction, "nll_loss")
    if not np.issubdtype(target.dtype, np.integer):
        raise RuntimeError(f"expected target dtype to be Long or Byte (nll_loss: target must "
                           f"hold integer class indices), got dtype {target.dtype}; convert "
                           f"with .long()")
    expected = input.shape[:1] + input.shape[2:]
    if (input.ndim > 2 and target.ndim == input.ndim - 1 and target.shape != expected
            and target.shape[:1] == input.shape[:1]):
        raise RuntimeError(f"Expected target size {list(expected)}, got {list(target.shape)} "
                           f"(nll_loss: input (N, C, d1, ...) takes target (N, d1, ...))")
    if input.ndim == 0 or target.shape != expected and not (
            input.ndim == 1 and target.ndim == 0):
        raise ValueError(f"nll_loss: expected input (N, C) with target (N,), (C,) with (), or "
                         f"(N, C, d1, ...) with (N, d1, ...); got {input.shape} and "
                         f"{target.shape}")
    if target.device != input.device:
        raise RuntimeError(f"nll_loss: input is on {input.device} but target is on "
                           f"{target.device}; move them to one device")
    classes = input.shape[0] if input.ndim == 1 else input.shape[1]
    check_class_weight_dtype(weight, input)
    class_weight = None
    if weight is not None:
        if weight.shape != (classes,):
            raise RuntimeError(f"weight tensor should be defined either for all {classes} "
                               f"classes or no classes but got weight tensor of shape: "
                               f"{list(weight.shape)} (nll_loss: one weight per class)")
        if weight.requires_grad or weight.device != input.device:
            raise ValueError(f"nll_loss: weight must be a constant tensor of shape "
                             f"({classes},) on {input.device}, one weight per class; got shape "
                             f"{weight.shape} on {weight.device}, requires_grad="
                             f"{weight.requires_grad} (pass weight.detach())")
        class_weight = weight._data.astype(input.dtype)
    xp = backend.get_array_module(target._data)
    check_index_range(xp.where(target._data == ignore_index, 0, target._data), classes,
                      "nll_loss", "target class")
    if input.ndim == 1:
        logp = input.reshape(1, classes)                                     # (C,) -> (1, C)
    else:                                       # (N, C, d1, ...) -> (N, d1, ..., C) -> (N', C)
        order = (0,) + tuple(range(2, input.ndim)) + (1,)
        logp = input.permute(order).reshape(-1, classes)
    half = input.dtype if is_low_precision(input.dtype) and reduction != "none" else None
    loss = NLLLoss.apply(logp, target.reshape(-1), class_weight=class_weight,
                         ignore_index=int(ignore_index), reduction=reduction, half=half)
    loss = loss.reshape(target.shape) if reduction == "none" else loss
    # torch's node: NllLossBackward0 for (C,)/(N, C); its 2-D kernel's NllLoss2DBackward0 for
    # (N, C, d1, ...) (with a final view for a 3-D input's reduction='none')
    name_node(loss, "NllLossBackward0" if input.ndim <= 2 else
              "ViewBackward0" if input.ndim == 3 and reduction == "none" else
              "NllLoss2DBackward0")
    return keep_versions(loss, input, target, weight)   # as torch's nll_loss keeps them
