"""torch ops built as compositions of existing tinyattn ops (issue 30, stream cov30).

None of these is a new ``Function``: each is written with ops that already have a hand-derived
backward, so its gradient is the chain rule through those ops (docs/derivations.md,
"Compositions"). Each follows the formula PyTorch documents for the op, and the conformance
harness (tests/conformance/) checks values and gradients against torch's op_db samples.
"""
from __future__ import annotations

import math
from typing import Any, Optional

import numpy as np

from ..autograd import keep_versions, name_node, names_node
from ..precision import is_floating, is_low_precision
from ..tensor import Tensor
from .compare import minimum
from .masking import where
from .pointwise_loss import legacy_reduction, refuse_torch_loss_dtypes
from .rearrange import diagonal
from .stats import norm

__all__ = ["isreal", "linalg_diagonal", "dist", "trapezoid", "trapz", "cumulative_trapezoid",
           "margin_ranking_loss", "hinge_embedding_loss", "soft_margin_loss",
           "pairwise_distance", "cosine_embedding_loss", "pixel_shuffle", "pixel_unshuffle",
           "channel_shuffle", "multilabel_soft_margin_loss", "poisson_nll_loss",
           "gaussian_nll_loss", "triplet_margin_loss", "triplet_margin_with_distance_loss"]


def _reduced(loss: Tensor, reduction: str) -> Tensor:
    """``loss`` reduced as torch's losses reduce: "none", "sum" or "mean"."""
    if reduction == "none":
        return loss
    if reduction == "sum":
        return loss.sum()
    if reduction == "mean":
        return loss.mean()
    raise ValueError(f"reduction must be 'mean', 'sum' or 'none', got {reduction!r}")


def isreal(input: Tensor) -> Tensor:  # noqa: A002 - PyTorch's name
    """``torch.isreal``: True where the imaginary part is 0; tinyattn has no complex dtypes, so
    a real tensor is real everywhere (a bool tensor of ones, no gradient)."""
    if input.dtype.kind == "c":
        return Tensor._wrap(input._data.imag == 0)
    return input.new_ones(tuple(input.shape), dtype="bool")


def linalg_diagonal(A: Tensor, *, offset: int = 0, dim1: int = -2,  # noqa: N803 - torch's
                    dim2: int = -1) -> Tensor:
    """``torch.linalg.diagonal``: ``diagonal`` with matrix defaults (the last two dims)."""
    return diagonal(A, offset, dim1, dim2)


def dist(input: Tensor, other: Tensor, p: Any = 2) -> Tensor:  # noqa: A002
    """``torch.dist``: the p-norm of ``input - other`` over all elements (sub, then ``norm``;
    both differentiable)."""
    # torch's dist is one node that keeps input, other and the result: so does this one
    out = name_node(norm(input - other, p), "DistBackward0")
    return keep_versions(out, input, other, out)


def _trapezoid_dx(y: Tensor, dx: Any, dim: int, cumulative: bool) -> Tensor:
    """Sum (or running sum) of dx * (y[i] + y[i+1]) / 2 along ``dim``."""
    length = y.shape[dim]
    if length <= 1:                         # no interval: an empty running sum, a zero total
        return _no_interval(y, dim, cumulative)
    left, right = y.narrow(dim, 0, length - 1), y.narrow(dim, 1, length - 1)
    pieces = (left + right) * dx / 2
    return pieces.cumsum(dim) if cumulative else pieces.sum(dim)


def _no_interval(y: Tensor, dim: int, cumulative: bool) -> Tensor:
    """The result for fewer than two samples: an empty running sum, or a total of 0 (NaN for
    a NaN or infinite sample, as torch's sum(y) - (y[0] + y[-1]) / 2 gives)."""
    if cumulative:
        return y.narrow(dim, 0, 0) * 1.0    # * 1.0: integer samples give floats, as torch
    return y.sum(dim) * 0.0


def _trapezoid(y: Tensor, x: Optional[Tensor], dx: Any, dim: int, cumulative: bool,
               op: str) -> Tensor:
    if x is not None and dx is not None:
        raise TypeError(f"{op}: give x or dx, not both")
    name = "cumulative_trapezoid" if cumulative else "trapezoid"     # torch's name, for trapz
    if isinstance(y, Tensor) and y.dtype == np.bool_:
        raise RuntimeError(f"{name}: received a bool input for `y`, but bool is not supported "
                           f"(as torch); convert it with .float() first")
    if isinstance(x, Tensor) and x.dtype == np.bool_:
        raise RuntimeError(f"{name}: received a bool input for `x` or `y`, but bool is not "
                           f"supported (as torch); convert it with .float() first")
    if y.ndim == 0:
        raise IndexError(f"{op}: dimension out of range (y is 0-d; give a tensor of dim >= 1)")
    dim = dim % y.ndim
    if x is None or not isinstance(x, Tensor):
        step = 1.0 if x is None and dx is None else (dx if x is None else x)
        return _trapezoid_dx(y, step, dim, cumulative)
    length = y.shape[dim]
    if length <= 1:
        return _no_interval(y, dim, cumulative)
    if x.ndim == 1:
        if x.shape[0] != length:
            raise RuntimeError(f"{op}: there must be one x value ({x.shape[0]} given) for each "
                               f"sample of y along dim {dim} ({length})")
        view = [1] * y.ndim
        view[dim] = length - 1
        spacing = (x[1:] - x[:-1]).reshape(view)
    else:                                   # as torch: x's dim ``dim`` (counted as y's)
        if x.ndim <= dim or x.shape[dim] != length:
            raise RuntimeError(f"{op}: x of shape {tuple(x.shape)} must have {length} "
                               f"samples in dim {dim}, as y of shape {tuple(y.shape)}")
        spacing = x.narrow(dim, 1, length - 1) - x.narrow(dim, 0, length - 1)
    left, right = y.narrow(dim, 0, length - 1), y.narrow(dim, 1, length - 1)
    pieces = spacing * (left + right) / 2
    return pieces.cumsum(dim) if cumulative else pieces.sum(dim)


def trapezoid(y: Tensor, x: Any = None, *, dx: Any = None, dim: int = -1) -> Tensor:
    """``torch.trapezoid``: the trapezoidal rule along ``dim``, sum of
    (x[i+1] - x[i]) (y[i] + y[i+1]) / 2 (spacing dx, 1 by default, or the sample points x)."""
    return _trapezoid_named(_trapezoid(y, x, dx, dim, False, "trapezoid"), x)


def _trapezoid_named(out: Tensor, x: Any) -> Tensor:
    """torch's last step: the spacing dx multiplied in (mul.Scalar), or, with sample points
    x, the halving of the sum (div.Scalar)."""
    return name_node(out, "DivBackward1" if isinstance(x, Tensor) else "MulBackward1")


def trapz(y: Tensor, x: Any = None, *, dx: Any = None, dim: int = -1) -> Tensor:
    """``torch.trapz``: ``trapezoid`` under its older name."""
    return _trapezoid_named(_trapezoid(y, x, dx, dim, False, "trapz"), x)


def cumulative_trapezoid(y: Tensor, x: Any = None, *, dx: Any = None, dim: int = -1) -> Tensor:
    """``torch.cumulative_trapezoid``: the running trapezoid sums along ``dim`` (one fewer
    element than y there)."""
    return _trapezoid(y, x, dx, dim, True, "cumulative_trapezoid")


def margin_ranking_loss(input1: Tensor, input2: Tensor, target: Tensor, margin: float = 0.0,
                        size_average: Any = None, reduce: Any = None,
                        reduction: str = "mean") -> Tensor:
    """``F.margin_ranking_loss``: max(0, -target (x1 - x2) + margin), reduced."""
    reduction = legacy_reduction(size_average, reduce, reduction, "margin_ranking_loss")
    if input1.ndim != input2.ndim or input1.ndim != target.ndim:
        raise RuntimeError("margin_ranking_loss: all input tensors should have the same number "
                           f"of dimensions, got {input1.ndim}, {input2.ndim}, {target.ndim}")
    loss = (-target * (input1 - input2) + margin).clamp_min(0)
    return _reduced(loss, reduction)


def hinge_embedding_loss(input: Tensor, target: Tensor, margin: float = 1.0,  # noqa: A002
                         size_average: Any = None, reduce: Any = None,
                         reduction: str = "mean") -> Tensor:
    """``F.hinge_embedding_loss``: x where target == 1, max(0, margin - x) where target == -1
    (torch's formula: the two parts summed, each where target is not the other label)."""
    reduction = legacy_reduction(size_average, reduce, reduction, "hinge_embedding_loss")
    margin_part = where(target != 1, (margin - input).clamp_min(0), 0.0)
    self_part = where(target != -1, input, 0.0)
    return _reduced(margin_part + self_part, reduction)


def soft_margin_loss(input: Tensor, target: Tensor, size_average: Any = None,  # noqa: A002
                     reduce: Any = None, reduction: str = "mean") -> Tensor:
    """``F.soft_margin_loss``: log(1 + exp(-target x)), reduced."""
    reduction = legacy_reduction(size_average, reduce, reduction, "soft_margin_loss")
    refuse_torch_loss_dtypes("soft_margin_loss", input, target)
    # torch's soft_margin_loss is one node that keeps input and target: so does this one;
    # its result has the input's dtype (a float64 target does not widen a float32 loss)
    given = target
    if isinstance(target, Tensor) and isinstance(input, Tensor) and \
            target.dtype != input.dtype and is_floating(target.dtype):
        target = target.to(input.dtype)
    loss = name_node(_reduced((-target * input).exp().log1p(), reduction),
                     "SoftMarginLossBackward0")         # torch: one node
    return keep_versions(loss, input, given)


def pairwise_distance(x1: Tensor, x2: Tensor, p: float = 2.0, eps: float = 1e-6,
                      keepdim: bool = False) -> Tensor:
    """``F.pairwise_distance``: ||x1 - x2 + eps||_p over the last dim (0-d inputs: |x1 - x2 +
    eps| itself, as torch)."""
    difference = x1 - x2 + eps
    if difference.ndim == 0:
        return difference.abs()
    return name_node(norm(difference, p, -1, keepdim), "NormBackward1")   # torch: at::norm


def cosine_embedding_loss(input1: Tensor, input2: Tensor, target: Tensor,
                          margin: float = 0.0, size_average: Any = None, reduce: Any = None,
                          reduction: str = "mean") -> Tensor:
    """``F.cosine_embedding_loss``: 1 - cos(x1, x2) where target == 1, max(0, cos - margin)
    where target == -1; cos = sum(x1 x2) / sqrt((sum x1^2 + 1e-12)(sum x2^2 + 1e-12)) over the
    last dim, as torch computes it."""
    reduction = legacy_reduction(size_average, reduce, reduction, "cosine_embedding_loss")
    if input1.ndim != input2.ndim:
        raise RuntimeError(f"cosine_embedding_loss: x1 and x2 must have the same number of "
                           f"dims, got {input1.ndim} and {input2.ndim}")
    epsilon = 1e-12
    dim = input1.ndim - 1
    products = (input1 * input2).sum(dim)
    squares1 = (input1 * input1).sum(dim) + epsilon
    squares2 = (input2 * input2).sum(dim) + epsilon
    cos = products / (squares1 * squares2).sqrt()
    positive = where(target == 1, 1 - cos, 0.0)
    negative = where(target == -1, (cos - margin).clamp_min(0), 0.0)
    return _reduced(positive + negative, reduction)


@names_node("PixelShuffleBackward0")
def pixel_shuffle(input: Tensor, upscale_factor: int) -> Tensor:  # noqa: A002
    """``F.pixel_shuffle``: (*, C r^2, H, W) -> (*, C, H r, W r) (reshape and permute)."""
    if input.ndim < 3:
        raise RuntimeError(f"pixel_shuffle expects input to have at least 3 dimensions, but "
                           f"got input with {input.ndim} dimension(s)")
    r = int(upscale_factor)
    if r <= 0:
        raise RuntimeError(f"pixel_shuffle expects a positive upscale_factor, but got {r}")
    *batch, channels, height, width = input.shape
    if channels % (r * r):
        raise RuntimeError(f"pixel_shuffle expects its input's 'channel' dimension ({channels}) "
                           f"to be divisible by the square of upscale_factor ({r * r})")
    out_channels = channels // (r * r)
    nb = len(batch)
    x = input.reshape(*batch, out_channels, r, r, height, width)
    order = list(range(nb)) + [nb, nb + 3, nb + 1, nb + 4, nb + 2]
    return _new_memory(x.permute(*order).reshape(*batch, out_channels, height * r, width * r))


@names_node("PixelUnshuffleBackward0")
def pixel_unshuffle(input: Tensor, downscale_factor: int) -> Tensor:  # noqa: A002
    """``F.pixel_unshuffle``: (*, C, H r, W r) -> (*, C r^2, H, W), pixel_shuffle's inverse."""
    if input.ndim < 3:
        raise RuntimeError(f"pixel_unshuffle expects input to have at least 3 dimensions, but "
                           f"got input with {input.ndim} dimension(s)")
    r = int(downscale_factor)
    if r <= 0:
        raise RuntimeError(f"pixel_unshuffle expects a positive downscale_factor, but got {r}")
    *batch, channels, height, width = input.shape
    if height % r or width % r:
        raise RuntimeError(f"pixel_unshuffle expects height ({height}) and width ({width}) to "
                           f"be divisible by downscale_factor ({r})")
    nb = len(batch)
    x = input.reshape(*batch, channels, height // r, r, width // r, r)
    order = list(range(nb)) + [nb, nb + 2, nb + 4, nb + 1, nb + 3]
    return _new_memory(x.permute(*order).reshape(*batch, channels * r * r, height // r,
                                                 width // r))


def _new_memory(out: Tensor) -> Tensor:
    """``out`` in memory of its own: torch's pixel_shuffle, pixel_unshuffle and
    channel_shuffle never return a view (a factor or group count of 1, or size-1 dims, make
    the reshape above one), so a write to the result must not reach the input."""
    return out.clone() if out._base is not None else out


@names_node("ChannelShuffleBackward0")
def channel_shuffle(input: Tensor, groups: int) -> Tensor:  # noqa: A002
    """``F.channel_shuffle``: (N, g k, *) -> the channels as a (g, k) grid, transposed."""
    if input.ndim < 3:
        raise RuntimeError(f"channel_shuffle expects input to have at least 3 dimensions, but "
                           f"got input with {input.ndim} dimension(s)")
    groups = int(groups)
    if groups <= 0:
        raise RuntimeError(f"Number of groups to divide channels in must be positive. Value of "
                           f"groups:{groups}")
    batch, channels, *rest = input.shape
    if channels % groups:
        raise RuntimeError(f"Number of channels ({channels}) must be divisible by groups "
                           f"({groups})")
    x = input.reshape(batch, groups, channels // groups, *rest)
    return _new_memory(x.transpose(1, 2).reshape(batch, channels, *rest))


def multilabel_soft_margin_loss(input: Tensor, target: Tensor,  # noqa: A002
                                weight: Optional[Tensor] = None, size_average: Any = None,
                                reduce: Any = None, reduction: str = "mean") -> Tensor:
    """``F.multilabel_soft_margin_loss``: -(y logsigmoid(x) + (1 - y) logsigmoid(-x)), times
    weight, averaged over the class (last) dim, then reduced."""
    from .activations import logsigmoid
    reduction = legacy_reduction(size_average, reduce, reduction, "multilabel_soft_margin_loss")
    refuse_torch_loss_dtypes("multilabel_soft_margin_loss", input, target)
    loss = -(target * logsigmoid(input) + (1 - target) * logsigmoid(-input))
    if weight is not None:
        loss = loss * weight
    class_dim = input.ndim - 1
    classes = input.shape[class_dim] if input.ndim else 1
    loss = loss.sum(class_dim) / classes if input.ndim else loss
    return _reduced(loss, reduction)


def poisson_nll_loss(input: Tensor, target: Tensor, log_input: bool = True,  # noqa: A002
                     full: bool = False, size_average: Any = None, eps: float = 1e-8,
                     reduce: Any = None, reduction: str = "mean") -> Tensor:
    """``F.poisson_nll_loss``: exp(x) - y x (log_input) or x - y log(x + eps); ``full`` adds
    Stirling's y log y - y + log(2 pi y) / 2 where y > 1."""
    reduction = legacy_reduction(size_average, reduce, reduction, "poisson_nll_loss")
    if log_input:
        loss = input.exp() - target * input
    else:
        loss = input - target * (input + eps).log()
    if full:
        safe = where(target > 1, target, target * 0 + 1)
        stirling = safe * safe.log() - safe + 0.5 * _times_number(safe, 2 * math.pi).log()
        loss = loss + where(target > 1, stirling, 0.0)
    return _reduced(loss, reduction)


def _times_number(x: Tensor, number: float) -> Tensor:
    """x * number as torch's kernel computes it: a float16/bfloat16 x is multiplied in
    float32 by the number rounded to float32 (not to x's dtype) and rounded once (2 pi as a
    float16 is 6.28125: the product would differ in the last place for about half the
    values)."""
    if is_low_precision(x.dtype):
        return (x.float() * number).to(x.dtype)
    return x * number


def gaussian_nll_loss(input: Tensor, target: Tensor, var: Any,  # noqa: A002
                      full: bool = False, eps: float = 1e-6, reduction: str = "mean") -> Tensor:
    """``F.gaussian_nll_loss``: (log max(var, eps) + (x - y)^2 / max(var, eps)) / 2 (+ log(2 pi)
    / 2 if full). As torch, the clamp is applied without gradient: var's gradient is computed
    as if var were not clamped."""
    if not isinstance(var, Tensor):             # torch takes a float var (then ones * var)
        if float(var) < 0:
            raise ValueError("var has negative entry/entries")
        var = input.new_ones(tuple(input.shape)) * float(var)
    elif bool((var < 0).any()):
        raise ValueError("var has negative entry/entries")
    in_shape, var_shape = tuple(input.shape), tuple(var.shape)
    if var_shape != in_shape:
        if in_shape[:-1] == var_shape:          # one value per row: broadcast over the last dim
            var = var.unsqueeze(-1)
        elif not (len(in_shape) == len(var_shape) and sum(
                v for i, v in zip(in_shape, var_shape) if i != v) == 1):
            raise ValueError(f"var is of incorrect size: {var_shape} does not fit input of "
                             f"shape {in_shape} (give input's shape, input's shape without "
                             f"its last dim, or input's shape with one dim of size 1)")
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(f"{reduction} is not valid")
    # max(var, eps) with the gradient of var itself (torch clamps in place under no_grad)
    # (eps - min(var, eps): 0, not inf - inf, where var is inf)
    clamped = where(var < eps, var + (eps - var.clamp_max(eps)).detach(), var)
    loss = 0.5 * (clamped.log() + (input - target) ** 2 / clamped)
    if full:
        loss = loss + 0.5 * math.log(2 * math.pi)
    return _reduced(loss, reduction)


def _check_triplet(anchor: Tensor, positive: Tensor, negative: Tensor, margin: float) -> None:
    if margin <= 0:
        raise ValueError(f"margin must be greater than 0, got {margin}")
    dims = (anchor.ndim, positive.ndim, negative.ndim)
    if len(set(dims)) != 1:
        raise RuntimeError(f"The anchor, positive, and negative tensors are expected to have "
                           f"the same number of dimensions, but got: anchor {dims[0]}D, "
                           f"positive {dims[1]}D, and negative {dims[2]}D inputs")


def _triplet(distance: Any, anchor: Tensor, positive: Tensor, negative: Tensor,
             margin: float, swap: bool, reduction: str) -> Tensor:
    """max(0, margin + d(a, p) - d(a, n)), with d(a, n) replaced by min(d(a, n), d(p, n))
    when ``swap`` (Balntas et al.'s distance swap), reduced."""
    dist_pos = distance(anchor, positive)
    dist_neg = distance(anchor, negative)
    if swap:
        dist_neg = minimum(dist_neg, distance(positive, negative))
    return _reduced((margin + dist_pos - dist_neg).clamp_min(0), reduction)


def triplet_margin_loss(anchor: Tensor, positive: Tensor, negative: Tensor,
                        margin: float = 1.0, p: float = 2, eps: float = 1e-6,
                        swap: bool = False, size_average: Any = None, reduce: Any = None,
                        reduction: str = "mean") -> Tensor:
    """``F.triplet_margin_loss``: max(0, margin + ||a - p + eps||_p - ||a - n + eps||_p)
    (``pairwise_distance``, as torch), reduced; ``swap`` uses the smaller of the distances
    from the negative to the anchor and to the positive."""
    reduction = legacy_reduction(size_average, reduce, reduction, "triplet_margin_loss")
    _check_triplet(anchor, positive, negative, margin)
    return _triplet(lambda x1, x2: pairwise_distance(x1, x2, p, eps), anchor, positive,
                    negative, margin, swap, reduction)


def triplet_margin_with_distance_loss(anchor: Tensor, positive: Tensor, negative: Tensor, *,
                                      distance_function: Any = None, margin: float = 1.0,
                                      swap: bool = False, reduction: str = "mean") -> Tensor:
    """``F.triplet_margin_with_distance_loss``: the triplet loss with any distance function
    of two tensors (default: ``pairwise_distance``)."""
    if reduction not in ("mean", "sum", "none"):
        raise ValueError(f"{reduction} is not a valid value for reduction")
    _check_triplet(anchor, positive, negative, margin)
    return _triplet(distance_function or pairwise_distance, anchor, positive, negative,
                    margin, swap, reduction)
