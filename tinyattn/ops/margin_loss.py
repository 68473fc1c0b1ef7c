"""The multi-class hinge losses ``F.multi_margin_loss`` and ``F.multilabel_margin_loss``
(docs/derivations.md#multi-class-margin-losses).

Both take scores x of shape (N, C), (C,) or () and compare the score of each target class
with every other class's score, the hinge max(0, z) keeping only the violated margins. Each
op returns the per-row losses (N,); the reduction is a separate sum or mean. The hinge's
derivative is 1 where z > 0 and 0 elsewhere, z = 0 included, as torch's kernels take it.
"""
from __future__ import annotations

from typing import Any, Optional, Tuple

import numpy as np

from .. import backend
from ..autograd import Function, name_node
from ..tensor import Tensor
from .pointwise_loss import legacy_reduction

__all__ = ["multi_margin_loss", "multilabel_margin_loss"]


def _frames(input: Tensor, op: str) -> Tuple[int, int]:  # noqa: A002
    """(N, C) of a (N, C), (C,) or () input, with torch's check of the shape."""
    shape = tuple(input.shape)
    if not (len(shape) == 0 or (len(shape) == 1 and shape[0] != 0)
            or (len(shape) == 2 and shape[1] != 0)):
        raise RuntimeError(f"{op}: Expected non-empty vector or matrix with optional 0-dim "
                           f"batch size, but got: {list(shape)}")
    if len(shape) == 2:
        return shape[0], shape[1]
    return 1, (shape[0] if shape else 1)


def _class_ids(target: Any, op: str) -> np.ndarray:
    if not isinstance(target, Tensor) or target.dtype.kind not in "iu":
        raise RuntimeError(f"{op}: target must be an integer (int64) tensor of class ids, got "
                           f"{getattr(target, 'dtype', type(target).__name__)}")
    return np.asarray(target.tolist(), dtype=np.int64).reshape(tuple(target.shape))


class MultiMargin(Function):
    """x (N, C), class ids y (N,), class weights w (C,) (a constant) -> l (N,):
        z[n, i] = margin - x[n, y_n] + x[n, i],  h = z (p = 1) or z^2 (p = 2),
        l_n = w[y_n] / C * sum over i != y_n with z[n, i] > 0 of h[n, i].
    z rises one for one with x[n, i] and falls with x[n, y_n], so with s = g_n w[y_n] / C
    and h' = 1 (p = 1) or 2 z (p = 2) on the counted i:
        dx[n, i] = s h'[n, i],   dx[n, y_n] = -s sum_i h'[n, i].
    """
    versions_checked = (0, 1, 2)        # torch saves input, target and weight

    def forward(self, x, target, weight, p: int, margin: float):
        xp = backend.get_array_module(x)
        frames, classes = x.shape
        rows = xp.arange(frames)
        z = margin - x[rows, target][:, None] + x                                 # (N, C)
        counted = (z > 0) & (xp.arange(classes)[None, :] != target[:, None])
        slope = xp.where(counted, 1.0 if p == 1 else 2 * z, 0).astype(x.dtype)   # dh/dz
        h = xp.where(counted, z if p == 1 else z * z, 0)
        scale = (weight[target] if weight is not None else xp.ones(frames, x.dtype)) / classes
        self.save_for_backward(slope, target, scale.astype(x.dtype))
        return (h.sum(1) * scale).astype(x.dtype)

    def backward(self, grad):
        slope, target, scale = self.saved
        xp = backend.get_array_module(slope)
        dx = slope * (grad * scale)[:, None]                                       # (N, C)
        dx[xp.arange(dx.shape[0]), target] -= dx.sum(1)
        return (dx, None, None)[:len(self.inputs)]


class MultiLabelMargin(Function):
    """x (N, C), target (N, C) of class ids ended by the first -1 -> l (N,): with J_n the ids
    before the first -1 (repeats counted) and T_n their set,
        l_n = 1 / C * sum_{j in J_n} sum_{i not in T_n} max(0, 1 - x[n, j] + x[n, i]).
    With s = g_n / C and c[n, j, i] = 1 where a term counts (z > 0), 0 elsewhere:
        dx[n, i] += s sum_j c[n, j, i] (i as the other class),
        dx[n, j] -= s sum_i c[n, j, i] (j as the target class; a repeated j twice).
    """
    versions_checked = (0, 1)           # torch saves input and target

    def forward(self, x, target, pairs, picked):
        xp = backend.get_array_module(x)
        target_scores = xp.take_along_axis(x, picked, axis=1)                      # (N, C_j)
        z = 1 - target_scores[:, :, None] + x[:, None, :]                          # (N, C_j, C_i)
        counts = pairs & (z > 0)
        self.save_for_backward(counts, picked, x.shape[1])
        return (xp.where(counts, z, 0).sum((1, 2)) / x.shape[1]).astype(x.dtype)

    def backward(self, grad):
        counts, picked, classes = self.saved
        xp = backend.get_array_module(counts)
        # float32 worked in float64 and rounded once (as torch's one g / C times a count;
        # float32 steps were 2.1x its error)
        work = np.float64 if grad.dtype == np.float32 else grad.dtype
        s = (grad.astype(work) / classes)[:, None]                                 # (N, 1)
        dx = counts.sum(1).astype(work) * s                                        # as other i
        as_target = counts.sum(2).astype(work) * s                                 # (N, C_j)
        # repeated ids add up: a scatter-add over j, done as a one-hot sum on any device
        is_class = picked[:, :, None] == xp.arange(classes)[None, None, :]        # (N, C_j, C_i)
        return (dx - (as_target[:, :, None] * is_class).sum(1)).astype(grad.dtype), None


def _reduce(loss: Tensor, reduction: str) -> Tensor:
    if reduction == "none":
        return loss
    if reduction == "sum":
        return loss.sum()           # the mean of no rows: NaN (torch's kernel returns garbage)
    return loss.mean()


def multi_margin_loss(input: Tensor, target: Tensor, p: int = 1,  # noqa: A002
                      margin: float = 1.0, weight: Optional[Tensor] = None,
                      size_average: Any = None, reduce: Any = None,
                      reduction: str = "mean") -> Tensor:
    """``F.multi_margin_loss``: per row n with class y = target[n],
    loss[n] = sum over i != y of (w[y] max(0, margin - x[n, y] + x[n, i])^p) / C,
    p = 1 or 2; reduction "none" keeps target's shape."""
    reduction = legacy_reduction(size_average, reduce, reduction, "multi_margin_loss")
    if p not in (1, 2):
        raise ValueError("only p == 1 and p == 2 supported")
    frames, classes = _frames(input, "multi_margin_loss")
    if weight is not None and weight.ndim != 1:            # torch checks this first
        raise ValueError(f"multi_margin_loss: weight must be one-dimensional, got shape "
                         f"{tuple(weight.shape)}")
    ids = _class_ids(target, "multi_margin_loss")
    if ids.ndim > 1 or ids.size != frames:
        raise RuntimeError(f"multi_margin_loss: inconsistent target size, expected {frames} "
                           f"but got {list(ids.shape)}")
    if weight is not None and (weight.ndim > 1 or weight.numel() != classes):
        raise RuntimeError(f"multi_margin_loss: inconsistent weight size, expected {classes} "
                           f"but got {list(weight.shape)}")
    if ids.size and (ids.min() < 0 or ids.max() >= classes):
        raise RuntimeError(f"multi_margin_loss: target out of range: class ids must be in "
                           f"[0, {classes}), got {ids.reshape(-1).tolist()}")
    scores = input.reshape(frames, classes)                                  # (N, C)
    target_ids = target.reshape(frames).long()
    if weight is None:
        loss = MultiMargin.apply(scores, target_ids, weight=None, p=p, margin=float(margin))
    else:
        loss = MultiMargin.apply(scores, target_ids, weight.reshape(classes), p=p,
                                 margin=float(margin))
    loss = loss.reshape(tuple(ids.shape))
    return name_node(_reduce(loss, reduction), "MultiMarginLossBackward0")   # torch: one node


def multilabel_margin_loss(input: Tensor, target: Tensor, size_average: Any = None,  # noqa
                           reduce: Any = None, reduction: str = "mean") -> Tensor:
    """``F.multilabel_margin_loss``: row n's targets are target[n, 0..k-1], up to the first
    -1; with T those classes (a repeated id counts each time),
    loss[n] = sum over targets j, classes i not in T of max(0, 1 - (x[n, j] - x[n, i])) / C."""
    reduction = legacy_reduction(size_average, reduce, reduction, "multilabel_margin_loss")
    frames, classes = _frames(input, "multilabel_margin_loss")
    ids = _class_ids(target, "multilabel_margin_loss")
    if tuple(ids.shape) != tuple(input.shape):
        raise RuntimeError(f"multilabel_margin_loss: inconsistent target size: "
                           f"{list(ids.shape)} for input of size: {list(input.shape)}")
    if ids.size and (ids.min() < -1 or ids.max() >= classes):
        raise RuntimeError(f"multilabel_margin_loss: argument #2 'target' is out of range: "
                           f"ids must be in [-1, {classes}), got {ids.reshape(-1).tolist()}")
    # The masks are built from target's own array with input's array module, so they are born
    # on the device (the host copy ids above serves only the error messages, as in torch's
    # checks); nothing host-made is mixed into device math.
    xp = backend.get_array_module(input._data)
    rows = target._data.reshape(frames, classes).astype(np.int64)
    counted = xp.cumprod(rows >= 0, axis=1).astype(bool)      # before the first -1 (N, C_j)
    is_class = rows[:, :, None] == xp.arange(classes)[None, None, :]          # (N, C_j, C_i)
    is_target = (counted[:, :, None] & is_class).any(1)                      # (N, C_i)
    pairs = counted[:, :, None] & ~is_target[:, None, :]                     # (N, C_j, C_i)
    picked = xp.where(counted, rows, 0)
    loss = MultiLabelMargin.apply(input.reshape(frames, classes), target.reshape(frames, classes),
                                  pairs=pairs, picked=picked)
    loss = loss.reshape(tuple(input.shape[:-1]) if input.ndim == 2 else ())
    return name_node(_reduce(loss, reduction), "MultilabelMarginLossBackward0")
