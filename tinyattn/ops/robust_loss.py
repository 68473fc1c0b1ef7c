"""More losses of ``torch.nn.functional``: smooth_l1_loss, huber_loss and kl_div
(docs/derivations.md#smooth-l1-huber-and-kl-divergence).

Element losses l_i, then ``reduction`` as in pointwise_loss.py: the gradient reaching l_i is
w = g / N ("mean"), g ("sum") or g_i ("none"); kl_div adds "batchmean", g / input.shape[0].
"""
from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from .. import backend
from ..broadcast_error import broadcast_error
from ..autograd import Function, name_node, unbroadcast
from ..tensor import Tensor
from .pointwise_loss import _pair, _reduce, _spread, refuse_torch_loss_dtypes
from ..precision import is_floating

__all__ = ["smooth_l1_loss", "huber_loss", "kl_div"]


class SmoothL1(Function):
    """With d = x - y: l = scale * (d^2 / (2 beta) where |d| < beta, |d| - beta / 2 else).
    smooth_l1_loss has scale 1; huber_loss(delta) is delta * smooth_l1(beta = delta).
    dl/dd = scale * (d / beta inside, sign(d) outside): the two pieces meet with equal value
    and slope at |d| = beta. dx = w dl/dd, dy = -w dl/dd (then unbroadcast)."""

    versions_checked = (0, 1)   # what torch saves: changed in place, backward raises

    def forward(self, x, y, beta: float, scale: float, reduction: str):
        xp = backend.get_array_module(x)
        d = x - y
        inside = xp.abs(d) < beta
        safe = beta if beta > 0 else 1.0           # beta = 0: nothing is inside (plain L1)
        if beta == 0:           # torch computes l1_loss then, which keeps x - y, not x, y
            self.versions_checked = ()
        slope = scale * xp.where(inside, d / safe, xp.sign(d))
        self.save_for_backward(slope, x.shape, y.shape, reduction)
        losses = xp.where(inside, 0.5 * d * d / safe, xp.abs(d) - 0.5 * beta)
        return _reduce(scale * losses, reduction)

    def backward(self, grad):
        slope, x_shape, y_shape, reduction = self.saved
        d = slope * _spread(grad, slope.shape, reduction)
        return (unbroadcast(d, x_shape) if self.needs_input_grad[0] else None,
                unbroadcast(-d, y_shape) if self.needs_input_grad[1] else None)


class KlDiv(Function):
    """input x holds log-probabilities, target t probabilities (log_target=False) or
    log-probabilities (log_target=True).
      t probabilities:   l = t (log t - x), 0 where t = 0.  dx = -t,  dt = log t + 1 - x
                         (NaN at t = 0, where the slope is -inf; PyTorch gives NaN too).
      t log-probs:       l = e^t (t - x).                   dx = -e^t, dt = e^t (t - x + 1).
    Each times w (the reduction's share), then unbroadcast.

    What it keeps is derived; the versions it checks are torch's: for probabilities torch
    composes xlogy(t, t) - t * x, whose nodes keep t (and x when t needs a gradient), so
    a write to either before backward raises there; for log-probabilities,
    exp(t) * (t - x) keeps only intermediate results, so neither write raises."""

    def forward(self, x, t, log_target: bool, reduction: str, batch: int):
        if not log_target:
            self.versions_checked = (0, 1) if self.needs_input_grad[1] else (1,)
        xp = backend.get_array_module(x)
        with np.errstate(divide="ignore", invalid="ignore"):
            if log_target:
                p = xp.exp(t)
                losses = p * (t - x)
                dt = p * (t - x + 1)
            else:
                p = t
                log_t = xp.log(t)
                losses = xp.where(t == 0, 0.0, t * log_t) - t * x
                dt = xp.where(t == 0, xp.nan, log_t + 1) - x
        self.save_for_backward(-p, dt, x.shape, t.shape, reduction, batch)
        out = _reduce(losses, "sum" if reduction == "batchmean" else reduction)
        return out / batch if reduction == "batchmean" else out

    def backward(self, grad):
        dx, dt, x_shape, t_shape, reduction, batch = self.saved
        if reduction == "batchmean":
            w = _spread(grad / batch, dx.shape, "sum")
        else:
            w = _spread(grad, dx.shape, reduction)
        return (unbroadcast(dx * w, x_shape) if self.needs_input_grad[0] else None,
                unbroadcast(dt * w, t_shape) if self.needs_input_grad[1] else None)


def _checked_pair(input: Any, target: Any, op: str, reductions: tuple,  # noqa: A002
                  reduction: str) -> Any:
    if reduction not in reductions:
        raise ValueError(f"{op}: reduction must be one of {', '.join(map(repr, reductions))}, "
                         f"got {reduction!r}")
    refuse_torch_loss_dtypes(op, input, target)
    input, target = _pair(input, target, op)
    if not is_floating(input.dtype):
        raise TypeError(f"{op}: input must be floating point, got {input.dtype}")
    if input.shape != target.shape:
        try:
            np.broadcast_shapes(input.shape, target.shape)
        except ValueError:
            raise broadcast_error([input.shape, target.shape], f"{op}: input and target; "
                                  f"they should have the same shape") from None
        warnings.warn(f"{op}: target shape {target.shape} differs from input shape "
                      f"{input.shape}; they are broadcast (as PyTorch warns). Give them the "
                      f"same shape", UserWarning, stacklevel=3)
    return input, target


_REDUCTIONS = ("mean", "sum", "none")


def smooth_l1_loss(input: Tensor, target: Any, size_average: Any = None,  # noqa: A002
                   reduce: Any = None, reduction: str = "mean", beta: float = 1.0) -> Tensor:
    """0.5 d^2 / beta where |d| < beta, |d| - 0.5 beta elsewhere, d = input - target
    (``F.smooth_l1_loss``); beta = 0 is the L1 loss."""
    _no_legacy(size_average, reduce, "smooth_l1_loss")
    if float(beta) < 0:
        raise ValueError(f"smooth_l1_loss: beta must be >= 0, got {beta}")
    input, target = _checked_pair(input, target, "smooth_l1_loss", _REDUCTIONS, reduction)
    return name_node(SmoothL1.apply(input, target, beta=float(beta), scale=1.0,
                                    reduction=reduction), "SmoothL1LossBackward0")


def huber_loss(input: Tensor, target: Any, reduction: str = "mean",  # noqa: A002
               delta: float = 1.0, weight: Any = None) -> Tensor:
    """0.5 d^2 where |d| < delta, delta (|d| - 0.5 delta) elsewhere (``F.huber_loss``)."""
    if float(delta) <= 0:
        raise RuntimeError(f"huber_loss: delta must be > 0, got {delta}")
    input, target = _checked_pair(input, target, "huber_loss", _REDUCTIONS, reduction)
    if target.dtype != input.dtype and is_floating(target.dtype):
        target = target.to(input.dtype)   # torch's loss has the input's dtype, not the wider
    if weight is None:
        return name_node(SmoothL1.apply(input, target, beta=float(delta), scale=float(delta),
                                        reduction=reduction), "HuberLossBackward0")
    if tuple(weight.shape) != tuple(input.shape):    # torch 2.13: weight times the loss
        raise ValueError("Weights and input must have the same size.")
    weighted = SmoothL1.apply(input, target, beta=float(delta), scale=float(delta),
                              reduction="none") * weight
    return weighted if reduction == "none" else (
        weighted.sum() if reduction == "sum" else weighted.mean())


def kl_div(input: Tensor, target: Any, size_average: Any = None, reduce: Any = None,  # noqa
           reduction: str = "mean", log_target: bool = False) -> Tensor:
    """KL(target || exp(input)) element by element, ``F.kl_div``: ``input`` holds
    log-probabilities, ``target`` probabilities (or log-probabilities with log_target=True).
    reduction "batchmean" (the sum over the batch's rows / batch size) is the mathematical
    KL divergence; "mean" divides by every element, and warns, as PyTorch does."""
    _no_legacy(size_average, reduce, "kl_div")
    input, target = _checked_pair(input, target, "kl_div", _REDUCTIONS + ("batchmean",),
                                  reduction)
    if reduction == "mean":
        warnings.warn("kl_div: reduction='mean' divides the total loss by both the batch size "
                      "and the support size; 'batchmean' divides only by the batch size and "
                      "matches the math definition of the KL divergence (as PyTorch warns)",
                      UserWarning, stacklevel=2)
    batch = input.shape[0] if reduction == "batchmean" and input.ndim else 1
    out = KlDiv.apply(input, target, log_target=bool(log_target), reduction=reduction,
                      batch=batch)
    # torch composes kl_div, so its node is the last step's (printed as grad_fn=<...>)
    return name_node(out, {"sum": "SumBackward0", "mean": "MeanBackward0",
                           "batchmean": "DivBackward0"}.get(
        reduction, "MulBackward0" if log_target else "SubBackward0"))


def _no_legacy(size_average: Any, reduce: Any, op: str) -> None:
    if size_average is not None or reduce is not None:
        raise ValueError(f"{op}: size_average and reduce are deprecated and not supported "
                         f"here; use reduction='mean', 'sum' or 'none'")
