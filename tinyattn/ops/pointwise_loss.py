"""Losses computed element by element, then reduced: ``mse_loss``, ``l1_loss``,
``binary_cross_entropy`` and ``binary_cross_entropy_with_logits``
(docs/derivations.md#pointwise-losses).

``reduction`` is "mean" (the default), "sum" or "none", as in PyTorch. With per-element
losses l_i, the gradient that reaches l_i is w_i = g / N for "mean" (N elements), g for "sum"
and g_i for "none"; each backward below multiplies w by the derivative of one l_i.
"""
from __future__ import annotations

import warnings
from typing import Any, Optional, Tuple

import numpy as np

from .. import backend
from ..autograd import Function, keep_versions, name_node, unbroadcast
from ..broadcast_error import broadcast_error
from ..tensor import Tensor
from .elementwise import _match_dtypes, as_operand
from .pointwise import stable_sigmoid
from ..precision import is_floating, is_low_precision
from ..promotion import is_strict_promotion

__all__ = ["mse_loss", "l1_loss", "binary_cross_entropy", "binary_cross_entropy_with_logits",
           "legacy_reduction"]

_BCE_EPSILON = float(np.float32(1e-12))   # PyTorch's floor for p (1 - p) in the BCE gradient
                                          # (a float32 constant there, also for float64)
_LOG_FLOOR = -100.0         # PyTorch clamps log p and log(1 - p) at -100 in the BCE loss


def _reduce(losses: Any, reduction: str) -> Any:
    if reduction == "none":
        return losses
    total = losses.sum()
    if reduction == "sum":
        return total
    with np.errstate(invalid="ignore"):
        return total / losses.size if losses.size else total * np.nan  # mean of none: NaN


def _spread(grad: Any, shape: Tuple[int, ...], reduction: str) -> Any:
    """w: the gradient reaching each element loss (see the module docstring)."""
    if reduction == "none":
        return grad
    n = 1
    for size in shape:
        n *= size
    scale = grad / n if reduction == "mean" and n else grad
    return backend.get_array_module(grad).broadcast_to(scale, shape)


class MseLoss(Function):
    """l_i = (x_i - y_i)^2.   dl/dx = 2 (x - y), dl/dy = -2 (x - y); then unbroadcast."""

    versions_checked = (0, 1)    # what torch saves: changed in place, backward raises

    def forward(self, x, y, reduction: str, half: Any = None):
        diff = x - y
        self.save_for_backward(diff, x.shape, y.shape, reduction)
        if half is not None:        # torch's half kernel rounds x - y, then its square
            rounded = diff.astype(half).astype(diff.dtype)
            return _reduce((rounded * rounded).astype(half).astype(diff.dtype), reduction)
        return _reduce(diff * diff, reduction)

    def backward(self, grad):
        diff, x_shape, y_shape, reduction = self.saved
        d = 2 * diff * _spread(grad, diff.shape, reduction)
        return (unbroadcast(d, x_shape) if self.needs_input_grad[0] else None,
                unbroadcast(-d, y_shape) if self.needs_input_grad[1] else None)


class L1Loss(Function):
    """l_i = |x_i - y_i|.   dl/dx = sign(x - y) (0 at a tie, as PyTorch), dl/dy = -sign."""

    def forward(self, x, y, reduction: str):
        xp = backend.get_array_module(x)
        diff = x - y
        self.save_for_backward(xp.sign(diff), x.shape, y.shape, reduction)
        return _reduce(xp.abs(diff), reduction)

    def backward(self, grad):
        sign, x_shape, y_shape, reduction = self.saved
        d = sign * _spread(grad, sign.shape, reduction)
        return (unbroadcast(d, x_shape) if self.needs_input_grad[0] else None,
                unbroadcast(-d, y_shape) if self.needs_input_grad[1] else None)


class BCEWithLogits(Function):
    """Logits x, targets y in [0, 1], optional weight w and pos_weight q (both constants):

        l = -w [q y log s(x) + (1 - y) log(1 - s(x))],  s = sigmoid.
    With log s(x) = -softplus(-x) and log(1 - s(x)) = -x - softplus(-x):
        l = w [(1 - y) x + (1 + (q - 1) y) softplus(-x)]     (stable for any x)
    and d softplus(-x)/dx = s(x) - 1, so
        dl/dx = w [(1 + (q - 1) y) s(x) - q y]               (q = 1: w (s(x) - y))
        dl/dy = w [-x + (q - 1) softplus(-x)].
    """

    def forward(self, x, y, weight: Any, pos_weight: Any, reduction: str, half: Any = None):
        xp = backend.get_array_module(x)
        soft_neg = xp.maximum(-x, 0) + xp.log1p(xp.exp(-xp.abs(x)))      # softplus(-x)
        self.save_for_backward(x, y, soft_neg, weight, pos_weight, reduction)
        if half is not None:
            return _reduce(_half_bce_with_logits(x, y, soft_neg, weight, pos_weight, half),
                           reduction)
        scale = 1 if pos_weight is None else 1 + (pos_weight - 1) * y
        losses = (1 - y) * x + scale * soft_neg
        if weight is not None:
            losses = losses * weight
        return _reduce(losses, reduction)

    def backward(self, grad):
        x, y, soft_neg, weight, pos_weight, reduction = self.saved
        w = _spread(grad, x.shape, reduction)
        if weight is not None:
            w = w * weight
        q = 1 if pos_weight is None else pos_weight
        dx = dy = None
        if self.needs_input_grad[0]:
            dx = w * ((1 + (q - 1) * y) * stable_sigmoid(x) - q * y)
        if self.needs_input_grad[1]:
            dy = w * ((q - 1) * soft_neg - x)
        return dx, dy


def _half_bce_with_logits(x: Any, y: Any, soft_neg: Any, weight: Any, pos_weight: Any,
                          half: Any) -> Any:
    """The elementwise loss as torch computes it for float16/bfloat16: one half-precision op
    at a time, each result rounded (log_sigmoid(x); times 1 + (q - 1) y; (1 - y) x minus it;
    times w), on float32 copies of the half values."""
    def rounded(a: Any) -> Any:
        return a.astype(half).astype(x.dtype)
    log_sigmoid = rounded(-soft_neg)
    if pos_weight is not None:
        log_weight = rounded(rounded(rounded(pos_weight.astype(x.dtype) - 1) * y) + 1)
        log_sigmoid = rounded(log_sigmoid * log_weight)
    losses = rounded(rounded(rounded(1 - y) * x) - log_sigmoid)
    if weight is not None:
        losses = rounded(losses * weight.astype(x.dtype))
    return losses


class BCE(Function):
    """Probabilities p in [0, 1], targets y in [0, 1], optional weight w (a constant):

        l = -w [y log p + (1 - y) log(1 - p)],  each log clamped at -100 (PyTorch's rule, so
                                                 p = 0 or 1 gives a finite loss)
        dl/dp = w (p - y) / max(p (1 - p), 1e-12)     (-y/p + (1 - y)/(1 - p), on one
                                                      denominator, floored as PyTorch)
        dl/dy = w [log(1 - p) - log p]                (not clamped: +-inf at p = 0 or 1)
    """

    promotes_inputs = False    # mixed floating dtypes: refused, as torch refuses

    def forward(self, p, y, weight: Any, reduction: str):
        xp = backend.get_array_module(p)
        with np.errstate(divide="ignore"):
            log_p = xp.maximum(xp.log(p), _LOG_FLOOR)
            log_q = xp.maximum(xp.log1p(-p), _LOG_FLOOR)
        losses = -(y * log_p + (1 - y) * log_q)
        if weight is not None:
            losses = losses * weight
        self.save_for_backward(p, y, weight, reduction)
        return _reduce(losses, reduction)

    def backward(self, grad):
        p, y, weight, reduction = self.saved
        xp = backend.get_array_module(grad)
        w = _spread(grad, p.shape, reduction)
        if weight is not None:
            w = w * weight
        dp = dy = None
        if self.needs_input_grad[0]:
            dp = w * (p - y) / xp.maximum(p * (1 - p), _BCE_EPSILON)
        if self.needs_input_grad[1]:
            with np.errstate(divide="ignore", invalid="ignore"):
                dy = w * (xp.log1p(-p) - xp.log(p))
        return dp, dy


# ------------------------------------------------------------------ public functions
def _check_reduction(reduction: str, op: str) -> None:
    if reduction not in ("mean", "sum", "none"):
        raise ValueError(f"{op}: reduction must be 'mean', 'sum' or 'none', got {reduction!r}")


def legacy_reduction(size_average: Optional[bool], reduce: Optional[bool], reduction: str,
                     op: str) -> str:
    """PyTorch's deprecated ``size_average``/``reduce`` arguments, mapped to ``reduction`` as
    PyTorch maps them (reduce=False: "none"; size_average=False: "sum"), with its warning."""
    if size_average is None and reduce is None:
        _check_reduction(reduction, op)
        return reduction
    size_average = True if size_average is None else size_average
    reduce = True if reduce is None else reduce
    mapped = "none" if not reduce else ("mean" if size_average else "sum")
    warnings.warn(f"{op}: size_average and reduce are deprecated (as in PyTorch); use "
                  f"reduction={mapped!r} instead", UserWarning, stacklevel=3)
    return mapped


def refuse_torch_loss_dtypes(op: str, input: Any, target: Any) -> None:  # noqa: A002
    """Refuse, before any promotion, the input/target dtypes torch 2.13's loss refuses (its
    exception type and message, plus advice): promoting an integer or bool operand to the
    other's float dtype would quietly compute what torch rejects. One table for the family:

    - kl_div: an integer or bool input or target (torch: "Integral inputs not supported");
    - l1_loss: a bool input or target (torch subtracts them, and bool subtraction is refused);
    - huber_loss, soft_margin_loss: an integer or bool input (the float loss cannot be
      written into the input's dtype);
    - cross_entropy, multilabel_soft_margin_loss: an integer or bool input (torch has no
      integer log_softmax / log_sigmoid kernel).
    Targets of other dtypes are accepted as torch accepts them (promoted)."""
    from ..precision import scalar_type_name

    def dt(x: Any) -> Any:
        return x.dtype if isinstance(x, Tensor) else None

    def integral(d: Any) -> bool:
        return d is not None and not is_floating(d) and np.dtype(d).kind in "iub"

    xi, ti = dt(input), dt(target)
    advice = "; convert with .float() (integer class indices belong in the target)"
    if op == "kl_div" and (integral(xi) or integral(ti)):
        raise RuntimeError("kl_div: Integral inputs not supported." + advice)
    if op == "l1_loss" and any(d is not None and np.dtype(d).kind == "b" for d in (xi, ti)):
        raise RuntimeError("Subtraction, the `-` operator, with a bool tensor is not supported. "
                           "If you are trying to invert a mask, use the `~` or "
                           "`logical_not()` operator instead. (l1_loss: convert the bool "
                           "tensor with .float())")
    if not integral(xi):
        return
    name = scalar_type_name(xi)
    if op in ("huber_loss", "soft_margin_loss"):
        out = scalar_type_name(ti) if ti is not None and is_floating(ti) else "Float"
        raise RuntimeError(f"result type {out} can't be cast to the desired output type "
                           f"{name} ({op}: the input must be floating point" + advice + ")")
    if op == "cross_entropy":
        raise NotImplementedError(f'"log_softmax_lastdim_kernel_impl" not implemented for '
                                  f"'{name}' (cross_entropy: the input holds logits, which "
                                  f"must be floating point" + advice + ")")
    if op == "multilabel_soft_margin_loss":
        raise NotImplementedError(f'"log_sigmoid_cpu" not implemented for \'{name}\' '
                                  f"(multilabel_soft_margin_loss: the input must be floating "
                                  f"point" + advice + ")")


def _pair(input: Any, target: Any, op: str) -> Tuple[Tensor, Tensor]:  # noqa: A002
    if not isinstance(input, Tensor):
        raise TypeError(f"{op}: input must be a Tensor, got {type(input).__name__}")
    target = as_operand(target, input)
    if input.dtype != target.dtype:
        input, target = _match_dtypes(input, target)
    return input, target


def _regression(fn: type, op: str, input: Any, target: Any,  # noqa: A002
                reduction: str, weight: Optional[Tensor]) -> Tensor:
    refuse_torch_loss_dtypes(op, input, target)
    input, target = _pair(input, target, op)
    if input.shape != target.shape:
        try:
            np.broadcast_shapes(input.shape, target.shape)
        except ValueError:
            raise broadcast_error([input.shape, target.shape], f"{op}: input and target; "
                                  f"they should have the same shape") from None
        warnings.warn(f"{op}: target shape {target.shape} differs from input shape "
                      f"{input.shape}; they are broadcast, which is rarely what a loss "
                      f"wants (as PyTorch warns). Give them the same shape",
                      UserWarning, stacklevel=3)
    if not is_floating(input.dtype):
        raise TypeError(f"{op}: input must be floating point, got {input.dtype}")
    if weight is None and fn is MseLoss and is_low_precision(input.dtype) \
            and input.dtype == target.dtype:
        return fn.apply(input, target, reduction=reduction, half=input.dtype)
    if weight is None:
        return fn.apply(input, target, reduction=reduction)
    # PyTorch's weighted form, composed from ops (so the weight gets a gradient too):
    # sum(w * l) / sum(w) for "mean".
    if not isinstance(weight, Tensor) or weight.shape != input.shape:
        raise ValueError(f"{op}: weight must be a tensor of the input's shape {input.shape}, got "
                         f"{getattr(weight, 'shape', type(weight).__name__)}")
    weighted = fn.apply(input, target, reduction="none") * weight
    if reduction == "none":
        return weighted
    return weighted.sum() if reduction == "sum" else weighted.sum() / weight.sum()


def mse_loss(input: Tensor, target: Any, size_average: Optional[bool] = None,  # noqa: A002
             reduce: Optional[bool] = None, reduction: str = "mean",
             weight: Optional[Tensor] = None) -> Tensor:
    """Mean squared error, mean((input - target)^2) (``F.mse_loss``); with ``weight`` (the
    input's shape), sum(weight * (input - target)^2) / sum(weight), as PyTorch."""
    reduction = legacy_reduction(size_average, reduce, reduction, "mse_loss")
    return _regression(MseLoss, "mse_loss", input, target, reduction, weight)


def l1_loss(input: Tensor, target: Any, size_average: Optional[bool] = None,  # noqa: A002
            reduce: Optional[bool] = None, reduction: str = "mean",
            weight: Optional[Tensor] = None) -> Tensor:
    """Mean absolute error, mean(|input - target|) (``F.l1_loss``); ``weight`` as mse_loss."""
    reduction = legacy_reduction(size_average, reduce, reduction, "l1_loss")
    out = _regression(L1Loss, "l1_loss", input, target, reduction, weight)
    if weight is None:   # torch composes l1_loss as |input - target| then the reduction
        name_node(out, {"mean": "MeanBackward0", "sum": "SumBackward0"}.get(
            reduction, "AbsBackward0"))
    return out


def _constant(value: Optional[Tensor], name: str, op: str, like: Tensor) -> Any:
    """A weight tensor's array, checked: no gradient, same dtype/device, broadcasts to like."""
    if value is None:
        return None
    value = as_operand(value, like)
    if value.requires_grad:
        raise ValueError(f"{op}: {name} requires grad, but the loss is not differentiable "
                         f"with respect to it (as in PyTorch); pass {name}.detach()")
    if value.device != like.device:
        raise RuntimeError(f"{op}: {name} is on {value.device} but input is on {like.device}")
    try:
        fits = np.broadcast_shapes(value.shape, like.shape) == like.shape
    except ValueError:
        fits = False
    if not fits:
        raise broadcast_error([value.shape, like.shape], f"{op}: {name} to the input") or \
            RuntimeError(f"{op}: {name} of shape {value.shape} does not broadcast to the "
                         f"input's shape {like.shape}")
    return value._data.astype(like.dtype, copy=False)


def _probability_pair(input: Any, target: Any, op: str) -> Tuple[Tensor, Tensor]:  # noqa: A002
    if not (isinstance(input, Tensor) and isinstance(target, Tensor)) or \
            not is_floating(input.dtype) or not is_floating(target.dtype):
        raise TypeError(f"{op}: input and target must be floating point (targets as 0.0/1.0 "
                        f"or probabilities), got {getattr(input, 'dtype', type(input).__name__)} "
                        f"and {getattr(target, 'dtype', type(target).__name__)}; use "
                        f"target.float()")
    input, target = _pair(input, target, op)
    if input.shape != target.shape:
        raise ValueError(f"{op}: target shape {target.shape} must be the same as input shape "
                         f"{input.shape}")
    return input, target


def binary_cross_entropy_with_logits(input: Tensor, target: Any,  # noqa: A002
                                     weight: Optional[Tensor] = None,
                                     size_average: Optional[bool] = None,
                                     reduce: Optional[bool] = None, reduction: str = "mean",
                                     pos_weight: Optional[Tensor] = None) -> Tensor:
    """Sigmoid and binary cross-entropy in one stable op (``F.binary_cross_entropy_with_logits``).
    ``pos_weight`` weights the positive term (broadcast along the last dim, one per class)."""
    op = "binary_cross_entropy_with_logits"
    reduction = legacy_reduction(size_average, reduce, reduction, op)
    input, target = _probability_pair(input, target, op)
    if (input.dtype != target.dtype and is_floating(input.dtype) and is_floating(target.dtype)
            and not is_strict_promotion()):
        input = input.to(target.dtype)      # torch's result takes the target's dtype here,
    # even a narrower one (float32 logits with float16 targets give a float16 loss)
    loss = BCEWithLogits.apply(input, target, weight=_constant(weight, "weight", op, input),
                               pos_weight=_constant(pos_weight, "pos_weight", op, input),
                               reduction=reduction,
                               half=input.dtype if is_low_precision(input.dtype) else None)
    # torch's backward keeps weight and pos_weight: writing to one after the op makes the
    # backward raise there
    return keep_versions(loss, *(t if isinstance(t, Tensor) else None
                                 for t in (weight, pos_weight)))


def binary_cross_entropy(input: Tensor, target: Any, weight: Optional[Tensor] = None,  # noqa: A002
                         size_average: Optional[bool] = None, reduce: Optional[bool] = None,
                         reduction: str = "mean") -> Tensor:
    """Binary cross-entropy of probabilities (``F.binary_cross_entropy``); prefer
    ``binary_cross_entropy_with_logits`` on logits, which cannot lose digits in the sigmoid."""
    op = "binary_cross_entropy"
    reduction = legacy_reduction(size_average, reduce, reduction, op)
    input, target = _probability_pair(input, target, op)
    _check_unit_interval(input, "input", op)
    _check_unit_interval(target, "target", op)
    loss = BCE.apply(input, target, weight=_constant(weight, "weight", op, input),
                     reduction=reduction)
    return keep_versions(loss, weight if isinstance(weight, Tensor) else None)   # as torch


def _check_unit_interval(t: Tensor, name: str, op: str) -> None:
    if t.numel() == 0:
        return
    xp = backend.get_array_module(t._data)
    low, high = backend.to_host(xp.stack([t._data.min(), t._data.max()])).tolist()
    if not (0 <= low and high <= 1):           # NaN fails both comparisons
        raise OutOfRangeError(f"all elements of {name} should be between 0 and 1 ({op}: "
                              f"found {low if not 0 <= low else high}; for logits use "
                              f"binary_cross_entropy_with_logits)")


class OutOfRangeError(ValueError, RuntimeError):
    """torch's RuntimeError for a probability outside [0, 1] (a ValueError too, as tinyattn
    raised it before)."""
