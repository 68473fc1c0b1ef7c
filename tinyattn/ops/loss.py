"""Cross-entropy fused with log-softmax, and the negative log-likelihood of log-probabilities
(docs/derivations.md#cross-entropy, #nll-loss)."""
from __future__ import annotations

from typing import Any, Optional

import numpy as np

from .. import backend
from ..autograd import Function
from ..tensor import Tensor, as_tensor
from .embedding import check_index_range
from .softmax import safe_row_max

__all__ = ["cross_entropy", "nll_loss"]


class CrossEntropy(Function):
    """logits (N, C), target (N,) -> loss.

        logp = log_softmax(logits),  q = (1 - eps) onehot(target) + eps / C
        loss_n = -sum_c q_c logp[n, c]      (for eps = 0: -logp[n, target_n])
    Rows whose target is ``ignore_index`` count for nothing; "mean" divides by the number of
    rows that count (0 of them gives a loss of 0, not 0/0).

    Since d logp_c / d logits_j = delta_cj - p_j and sum_c q_c = 1:
        dlogits[n] = (p[n] - q[n]) * w_n,  with w_n = g / count ("mean"), g ("sum"), g_n ("none")
    Fusing avoids both the (N, C) Jacobian and exp(log(p)) round-off.
    """

    def forward(self, logits, target, ignore_index: int, reduction: str,
                label_smoothing: float):
        xp = backend.get_array_module(logits)
        n, classes = logits.shape
        shifted = logits - safe_row_max(logits, 1)
        logp = shifted - xp.log(xp.exp(shifted).sum(axis=1, keepdims=True))   # (N, C)
        valid = target != ignore_index                                         # (N,)
        safe_target = xp.where(valid, target, 0)
        nll = -logp[xp.arange(n), safe_target]                                 # (N,)
        if label_smoothing > 0:
            nll = (1 - label_smoothing) * nll - label_smoothing * logp.mean(axis=1)
        losses = xp.where(valid, nll, 0)                                       # (N,)
        count = valid.sum()
        self.save_for_backward(logp, safe_target, valid, count, reduction, label_smoothing)
        if reduction == "none":
            return losses
        total = losses.sum()
        if reduction == "sum":
            return total
        return total / xp.maximum(count, 1).astype(logits.dtype)

    def backward(self, grad):
        logp, safe_target, valid, count, reduction, eps = self.saved
        xp = backend.get_array_module(logp)
        n, classes = logp.shape
        dlogits = xp.exp(logp)                                                 # p, (N, C)
        if eps > 0:
            dlogits -= eps / classes
        dlogits[xp.arange(n), safe_target] -= 1 - eps                          # p - q
        if reduction == "none":
            weight = grad * valid                                              # (N,)
        elif reduction == "sum":
            weight = grad * valid
        else:
            weight = grad * valid / xp.maximum(count, 1).astype(logp.dtype)
        # where, not *: an ignored row's logits may be -inf, and NaN * 0 is still NaN
        return xp.where(valid[:, None], dlogits * weight[:, None], 0), None


def cross_entropy(logits: Tensor, target: Any, ignore_index: int = -100, reduction: str = "mean",
                  label_smoothing: float = 0.0) -> Tensor:
    """PyTorch's ``F.cross_entropy`` for logits (N, C) and integer class targets (N,)."""
    target = target if isinstance(target, Tensor) else as_tensor(np.asarray(target))
    if logits.ndim != 2 or target.ndim != 1 or target.shape[0] != logits.shape[0]:
        raise ValueError(
            f"cross_entropy: expected logits (N, C) and target (N,), got {logits.shape} and "
            f"{target.shape}; for a sequence model flatten first: "
            f"logits.reshape(-1, C) and target.reshape(-1)")
    if not np.issubdtype(target.dtype, np.integer):
        raise TypeError(f"cross_entropy: target must hold integer class indices, got dtype "
                        f"{target.dtype}; convert with .long()")
    if reduction not in ("mean", "sum", "none"):
        raise ValueError(f"cross_entropy: reduction must be 'mean', 'sum' or 'none', got "
                         f"{reduction!r}")
    if not 0.0 <= label_smoothing <= 1.0:
        raise ValueError(f"cross_entropy: label_smoothing must be in [0, 1], got "
                         f"{label_smoothing}")
    if target.device != logits.device:
        raise RuntimeError(f"cross_entropy: logits are on {logits.device} but target is on "
                           f"{target.device}; move them to one device")
    xp = backend.get_array_module(target._data)
    counted = xp.where(target._data == ignore_index, 0, target._data)  # ignored rows pass
    check_index_range(counted, logits.shape[1], "cross_entropy", "target class")
    return CrossEntropy.apply(logits, target, ignore_index=int(ignore_index),
                              reduction=reduction, label_smoothing=float(label_smoothing))


class NLLLoss(Function):
    """logp (N, C), target (N,), class weights c (C,) (a constant; 1 without weight) -> loss.

        l_n = -w_n logp[n, target_n],  w_n = c[target_n] (0 for an ignored row);
        "mean" divides the sum by W = sum_n w_n (the weights, not the rows, as PyTorch).
    Only the picked entries reach the loss, so dlogp is zero except
        dlogp[n, target_n] = -w_n g / W ("mean"),  -w_n g ("sum"),  -w_n g_n ("none").
    Rows that all count for nothing give a "mean" of 0 (as tinyattn's cross_entropy; PyTorch
    gives 0/0 = NaN).
    """

    def forward(self, logp, target, class_weight: Any, ignore_index: int, reduction: str):
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
        if reduction == "none":
            return losses
        total = losses.sum()
        return total if reduction == "sum" else total / xp.where(
            total_weight == 0, 1, total_weight)

    def backward(self, grad):
        shape, safe, w, total_weight, reduction = self.saved
        xp = backend.get_array_module(w)
        coef = grad if reduction != "mean" else grad / xp.where(total_weight == 0, 1,
                                                                total_weight)
        dlogp = xp.zeros(shape, dtype=w.dtype)
        dlogp[xp.arange(shape[0]), safe] = -w * coef
        return dlogp, None


def nll_loss(input: Tensor, target: Any, weight: Optional[Tensor] = None,  # noqa: A002
             ignore_index: int = -100, reduction: str = "mean") -> Tensor:
    """PyTorch's ``F.nll_loss``: input holds log-probabilities, (N, C), (C,) or
    (N, C, d1, ...) with target (N,), () or (N, d1, ...) of class indices."""
    target = target if isinstance(target, Tensor) else as_tensor(np.asarray(target))
    if reduction not in ("mean", "sum", "none"):
        raise ValueError(f"nll_loss: reduction must be 'mean', 'sum' or 'none', got "
                         f"{reduction!r}")
    if not np.issubdtype(target.dtype, np.integer):
        raise TypeError(f"nll_loss: target must hold integer class indices, got dtype "
                        f"{target.dtype}; convert with .long()")
    if input.ndim == 0 or target.shape != input.shape[:1] + input.shape[2:] and not (
            input.ndim == 1 and target.ndim == 0):
        raise ValueError(f"nll_loss: expected input (N, C) with target (N,), (C,) with (), or "
                         f"(N, C, d1, ...) with (N, d1, ...); got {input.shape} and "
                         f"{target.shape}")
    if target.device != input.device:
        raise RuntimeError(f"nll_loss: input is on {input.device} but target is on "
                           f"{target.device}; move them to one device")
    classes = input.shape[0] if input.ndim == 1 else input.shape[1]
    class_weight = None
    if weight is not None:
        if weight.shape != (classes,) or weight.requires_grad or weight.device != input.device:
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
    loss = NLLLoss.apply(logp, target.reshape(-1), class_weight=class_weight,
                         ignore_index=int(ignore_index), reduction=reduction)
    return loss.reshape(target.shape) if reduction == "none" else loss
