"""Cross-entropy fused with log-softmax (docs/derivations.md#cross-entropy)."""
from __future__ import annotations

from typing import Any

import numpy as np

from .. import backend
from ..autograd import Function
from ..tensor import Tensor, as_tensor
from .embedding import check_index_range
from .softmax import safe_row_max

__all__ = ["cross_entropy"]


class CrossEntropy(Function):
    """logits (N, C), target (N,) -> loss.

        logp = log_softmax(logits),  q = (1 - eps) onehot(target) + eps / C
        loss_n = -sum_c q_c logp[n, c]      (for eps = 0: -logp[n, target_n])
    Rows whose target is ``ignore_index`` count for nothing; "mean" divides by the number of
    rows that count (0 of them gives a loss of 0, not 0/0).

    Since d logp_c / d logits_j = delta_cj - p_j and sum_c q_c = 1:
        dlogits[n] = (p[n] - q[n]) * w_n,  with w_n = g / count ("mean"), g ("sum"), g_n ("none")
    Fusing avoids the (N, C) Jacobian, and starting from log_softmax avoids taking the log
    of a probability that underflowed to 0 (an infinite loss); the backward's p = exp(logp)
    is harmless.
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
    if logits.shape[1] == 0:    # no class at all: only rows that are ignored can be scored
        if bool(backend.to_host((target._data != ignore_index).any())):
            raise ValueError(f"cross_entropy: the logits {logits.shape} have C = 0 classes, so "
                             f"no target class is valid (only rows with target == ignore_index="
                             f"{ignore_index} can be scored against no classes)")
        return (logits.sum(dim=1) if reduction == "none" else logits.sum()) * 0.0
    counted = xp.where(target._data == ignore_index, 0, target._data)  # ignored rows pass
    check_index_range(counted, logits.shape[1], "cross_entropy", "target class")
    return CrossEntropy.apply(logits, target, ignore_index=int(ignore_index),
                              reduction=reduction, label_smoothing=float(label_smoothing))
