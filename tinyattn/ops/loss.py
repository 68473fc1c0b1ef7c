"""Cross-entropy fused with log-softmax (docs/derivations.md#cross-entropy), and PyTorch's
other cross-entropy layouts composed from ops."""
from __future__ import annotations

from typing import Any, Optional

import numpy as np

from .. import backend
from ..autograd import Function, is_grad_enabled, keep_versions, name_node
from ..tensor import Tensor, as_tensor
from .embedding import check_index_range
from .nll import check_class_weight_dtype, nll_loss
from .pointwise_loss import refuse_torch_loss_dtypes
from .reduce import sum as reduce_sum
from .softmax import log_softmax, safe_row_max
from ..precision import is_floating

__all__ = ["cross_entropy"]


class CrossEntropy(Function):
    """logits (N, C), target (N,) -> loss.

        logp = log_softmax(logits),  q = (1 - eps) onehot(target) + eps / C
        loss_n = -sum_c q_c logp[n, c]      (for eps = 0: -logp[n, target_n])
    Rows whose target is ``ignore_index`` count for nothing; "mean" divides by the number of
    rows that count (0 of them gives 0/0 = NaN with zero gradients, as torch).

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
        if not count:                      # every target ignored: 0/0, torch's NaN
            return xp.asarray(np.nan, dtype=logits.dtype)
        return total / count.astype(logits.dtype)

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


def cross_entropy(input: Tensor, target: Any, weight: Optional[Tensor] = None,
                  size_average: Any = None, ignore_index: int = -100, reduce: Any = None,
                  reduction: str = "mean", label_smoothing: float = 0.0) -> Tensor:
    """PyTorch's ``F.cross_entropy``, with its argument order and its input layouts:

    - logits (N, C) and integer class targets (N,): the fused op above (the common case);
    - logits (N, C, d1, ..., dk) and targets (N, d1, ..., dk), e.g. a sequence model's
      (B, V, S) with (B, S); and unbatched logits (C,) with a 0-d target;
    - ``weight`` (C,): a weight per class; "mean" then divides by the summed weights of the
      counted targets, as PyTorch;
    - class-probability targets: a float target of the logits' shape (each row sums to 1).

    The last two are composed from log_softmax, multiplications and sums (each with its own
    hand-derived backward), so their gradients come from those ops' derivations.
    """
    logits = input
    if size_average is not None or reduce is not None:
        raise ValueError("cross_entropy: size_average and reduce are deprecated in PyTorch and "
                         "not supported here; use reduction='mean', 'sum' or 'none'")
    if reduction not in ("mean", "sum", "none"):
        raise ValueError(f"cross_entropy: reduction must be 'mean', 'sum' or 'none', got "
                         f"{reduction!r}")
    if not 0.0 <= label_smoothing <= 1.0:
        raise ValueError(f"cross_entropy: label_smoothing must be in [0, 1], got "
                         f"{label_smoothing}")
    if not isinstance(logits, Tensor):
        raise TypeError(f"cross_entropy: input must be a Tensor of logits, got "
                        f"{type(logits).__name__}")
    target = target if isinstance(target, Tensor) else as_tensor(np.asarray(target))
    refuse_torch_loss_dtypes("cross_entropy", logits, target)
    given_target = target
    if target.device != logits.device:
        raise RuntimeError(f"cross_entropy: logits are on {logits.device} but target is on "
                           f"{target.device}; move them to one device")
    if logits.ndim == 0:
        raise ValueError("cross_entropy: input must have a class dim: (C,), (N, C) or "
                         "(N, C, d1, ...), got a 0-d tensor")
    classes = logits.shape[0] if logits.ndim == 1 else logits.shape[1]
    if weight is not None and (not isinstance(weight, Tensor) or weight.shape != (classes,)):
        raise RuntimeError(f"cross_entropy: weight tensor should be defined either for all "
                           f"{classes} classes or no classes but got weight tensor of shape: "
                           f"{list(getattr(weight, 'shape', ()))} (give a Tensor of shape "
                           f"(C,) = ({classes},), got "
                           f"{getattr(weight, 'shape', type(weight).__name__)})")
    if weight is not None and weight.requires_grad and is_grad_enabled():
        raise RuntimeError("cross_entropy: the class weights require grad, but the loss is not "
                           "differentiated with respect to them (PyTorch does not either); "
                           "pass weight.detach()")
    if is_floating(target.dtype) and target.shape == logits.shape:
        if ignore_index != -100:
            raise RuntimeError(f"cross_entropy: ignore_index is not supported for floating "
                               f"point target (class probabilities), got ignore_index="
                               f"{ignore_index}; as torch, give probabilities of 0 instead")
        return _probability_targets(logits, target, weight, reduction, label_smoothing)
    _check_class_target(logits, target)
    check_class_weight_dtype(weight, logits)       # probability targets may mix, as torch
    xp = backend.get_array_module(target._data)
    if classes == 0:    # no class at all: only rows that are ignored can be scored
        if bool(backend.to_host((target._data != ignore_index).any())):
            raise ValueError(f"cross_entropy: the logits {logits.shape} have C = 0 classes, so "
                             f"no target class is valid (only rows with target == ignore_index="
                             f"{ignore_index} can be scored against no classes)")
        class_dim = 0 if logits.ndim == 1 else 1            # "none": zeros of target's shape
        zeros = (logits.sum(dim=class_dim) if reduction == "none" else logits.sum()) * 0.0
        if reduction == "mean":         # nothing counted: 0 / 0, torch's NaN (zero gradients)
            return zeros + Tensor._wrap(xp.asarray(np.nan, dtype=logits.dtype))
        return zeros
    counted = xp.where(target._data == ignore_index, 0, target._data)  # ignored rows pass
    check_index_range(counted, classes, "cross_entropy", "target class")
    unbatched = logits.ndim == 1
    if unbatched:                                    # (C,), () -> (1, C), (1,)
        logits, target = logits.reshape(1, classes), target.reshape(1)
    extra = logits.shape[2:]
    if extra:                                        # (N, C, d...) -> (N * d..., C)
        logits = logits.permute(0, *range(2, logits.ndim), 1).reshape(-1, classes)
        target = target.reshape(-1)
    if logits._data.dtype.itemsize == 2 and is_floating(logits.dtype):
        loss = _half_class_targets(logits, target, weight, int(ignore_index), reduction,
                                   float(label_smoothing))
    elif weight is None:
        loss = CrossEntropy.apply(logits, target, ignore_index=int(ignore_index),
                                  reduction=reduction, label_smoothing=float(label_smoothing))
    else:
        loss = _weighted(logits, target, weight, int(ignore_index), reduction,
                         float(label_smoothing))
    if reduction == "none" and (extra or unbatched):
        loss = loss.reshape(input.shape[:1] + extra if not unbatched else ())
    # torch's node (grad_fn=<...> when printed): smoothing adds two terms; else its nll kernel,
    # the 2-D one for (N, C, d1, ...) (then a view for a 3-D input's reduction='none')
    name_node(loss, "AddBackward0" if label_smoothing > 0 else
              "NllLossBackward0" if input.ndim <= 2 else
              "ViewBackward0" if input.ndim == 3 and reduction == "none" else
              "NllLoss2DBackward0")
    return keep_versions(loss, given_target, weight)   # torch's nll keeps target, weight


def _check_class_target(logits: Tensor, target: Tensor) -> None:
    if target.dtype.kind not in "iu":
        raise RuntimeError(f"cross_entropy: target must hold integer class indices (or class "
                        f"probabilities: floats of the logits' shape {logits.shape}), got "
                        f"dtype {target.dtype} of shape {target.shape}; convert indices with "
                        f".long()")
    expected = () if logits.ndim == 1 else logits.shape[:1] + logits.shape[2:]
    if target.shape != expected:
        spatial = (logits.ndim > 2 and target.ndim == logits.ndim - 1
                   and target.shape[:1] == logits.shape[:1])     # torch: RuntimeError then
        lead = f"Expected target size {list(expected)}, got {list(target.shape)}: " \
            if spatial else ""
        raise (RuntimeError if spatial else ValueError)(
            f"{lead}cross_entropy: logits of shape {logits.shape} need integer targets of shape "
            f"{expected} (logits (N, C) with target (N,), or (N, C, d1, ...) with "
            f"(N, d1, ...): the class dim is dim 1), got target shape {target.shape}. For a "
            f"sequence model's (B, S, C) logits, flatten first: logits.reshape(-1, C) and "
            f"target.reshape(-1)")


def _one_hot(target: Any, classes: int, dtype: Any) -> Any:
    xp = backend.get_array_module(target)
    return (target[:, None] == xp.arange(classes)[None, :]).astype(dtype)   # (M, C)


def _weighted(logits: Tensor, target: Tensor, weight: Tensor, ignore_index: int,
              reduction: str, eps: float) -> Tensor:
    """PyTorch's class-weighted cross-entropy on (M, C) logits:
        loss_m = (1 - eps) w[t_m] (-logp[m, t_m]) + eps / C * sum_c w_c (-logp[m, c])
    over the counted rows; "mean" divides by sum of w[t_m] over the counted rows."""
    xp = backend.get_array_module(target._data)
    classes = logits.shape[1]
    valid = target._data != ignore_index
    safe = xp.where(valid, target._data, 0)
    logp = log_softmax(logits, dim=1)                                        # (M, C)
    counted = Tensor._wrap(valid.astype(logits.dtype))                        # (M,)
    row_weight = weight[Tensor._wrap(safe)] * counted                         # (M,)
    picked = reduce_sum(logp * Tensor._wrap(_one_hot(safe, classes, logits.dtype)), dim=1)
    losses = -(picked * row_weight) * (1 - eps)
    if eps > 0:
        smooth = -reduce_sum(logp * weight, dim=1) * counted                  # (M,)
        losses = losses + smooth * (eps / classes)
    if reduction == "none":
        return losses
    total = reduce_sum(losses)
    if reduction == "sum":
        return total
    weight_sum = row_weight._data.sum()
    if not weight_sum:          # nothing counted: 0/0, torch's NaN; total is 0 with zero
        return total + Tensor._wrap(xp.asarray(np.nan, dtype=logits.dtype))   # gradients
    return total / Tensor._wrap(weight_sum.astype(logits.dtype))


def _half_class_targets(logits: Tensor, target: Tensor, weight: Optional[Tensor],
                        ignore_index: int, reduction: str, eps: float) -> Tensor:
    """float16/bfloat16 logits (M, C) with class indices, as torch's CPU computes them: its
    log_softmax rounded to the half dtype, nll_loss of that, and label smoothing's extra
    term as half-precision ops (each rounded; its sum over a large batch can reach inf in
    float16, as torch's). The fused float32 path (CrossEntropy) rounds only the loss and
    the gradient, which differs from torch in the last place for a third of the gradients."""
    logp = log_softmax(logits, dim=1)
    loss = nll_loss(logp, target, weight=weight, ignore_index=ignore_index,
                    reduction=reduction)
    if eps <= 0:
        return loss
    classes = logits.shape[1]
    kept = target != ignore_index                                          # (M,)
    terms = logp * weight.reshape(1, classes) if weight is not None else logp
    smooth = -reduce_sum(terms, dim=1)
    smooth = smooth.masked_fill(~kept, 0.0)
    if reduction == "mean":
        if weight is not None:
            counted = Tensor._wrap(weight._data[target._data[kept._data]])
            smooth = reduce_sum(smooth) / reduce_sum(counted)
        else:
            smooth = reduce_sum(smooth) / reduce_sum(kept)
    elif reduction == "sum":
        smooth = reduce_sum(smooth)
    return loss * (1 - eps) + smooth * (eps / classes)


def _probability_targets(logits: Tensor, target: Tensor, weight: Optional[Tensor],
                         reduction: str, eps: float) -> Tensor:
    """Soft targets q of the logits' shape: loss = -sum_c w_c q_c logp_c over the class dim
    (dim 1, or dim 0 unbatched); "mean" averages over the N * d1 * ... positions."""
    # targets of another floating dtype promote in q * logp below (float32 logits with
    # float64 targets: a float64 loss, as torch), or raise there under strict promotion
    class_dim = 0 if logits.ndim == 1 else 1
    classes = logits.shape[class_dim]
    logp = log_softmax(logits, dim=class_dim)
    if eps > 0:
        target = target * (1 - eps) + eps / classes
    terms = logp * target
    if weight is not None:
        shape = (classes,) + (1,) * (logits.ndim - class_dim - 1)
        terms = terms * weight.reshape(*shape)
    losses = -reduce_sum(terms, dim=class_dim)
    if reduction == "none":
        return losses
    total = reduce_sum(losses)
    # torch's last step: a negation of the sum, or its division by the count (div.Scalar)
    if reduction == "sum":
        return name_node(total, "NegBackward0")
    return name_node(total / float(max(losses.numel(), 1)), "DivBackward1")
