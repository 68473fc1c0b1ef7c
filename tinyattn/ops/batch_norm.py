"""Batch normalisation, fused: PyTorch's ``F.batch_norm`` (docs/derivations.md#batch-norm).

Input (N, C) or (N, C, L) (any (N, C, ...)): each channel c is normalised with statistics
over every other axis, n = N * L elements per channel. In training the statistics are the
batch's own (mean and the BIASED variance, dividing by n), and the running estimates are
updated with the UNBIASED variance (dividing by n - 1), as PyTorch does. In evaluation the
running estimates are used and nothing is updated.
"""
from __future__ import annotations

from typing import Any, Optional, Tuple

import numpy as np

from .. import backend, precision
from ..autograd import Function, keep_versions, no_grad
from ..tensor import Tensor
from .elementwise import convert, half_as_float32
from ..precision import is_floating, is_low_precision

__all__ = ["batch_norm"]


class BatchNorm(Function):
    """Normalise each channel with the given statistics, then scale and shift per channel.

        xhat = (x - mean) * rstd,   rstd = 1 / sqrt(var + eps),   out = xhat * w + b

    ``training=True``: mean and var are the batch's own (biased var), so they depend on x.
    With g_hat = g * w and sums over the n elements of a channel, the chain rule through
    xhat, through mean and through var gives (Karpathy's "backprop ninja" in one line):
        dx = (1/n) * rstd * (n * g_hat - sum(g_hat) - xhat * sum(g_hat * xhat))
    ``training=False``: mean and var are constants (the running estimates), so
        dx = g_hat * rstd.
    In both cases dw = sum(g * xhat) and db = sum(g), summed over every axis but the channel.
    Every per-channel sum is accumulated in float64 (``channel_sum``), as torch's CPU kernel
    accumulates float32 in double: float32 sums over n = N * H * W terms lost digits (dw
    4.5x torch's error at (64, 256, 7, 7) with mean 5; tests/test_probe42_accuracy.py).
    """

    promotes_inputs = False    # mixed floating dtypes: refused, as torch refuses

    def forward(self, x, *affine, mean, var, axes, eps: float, training: bool,
                has_weight: bool, has_bias: bool, rstd: Any = None):
        xp = backend.get_array_module(x)
        if rstd is None:
            rstd = 1 / xp.sqrt(var + eps)           # (1, C, 1...) per channel
        xhat = (x - mean) * rstd
        weight = affine[0] if has_weight else None
        self.save_for_backward(xhat, rstd, weight, axes, training, has_bias)
        if var is None:                             # half precision: torch's linear form
            return _linear_form(x, mean, rstd, weight, affine[-1] if has_bias else None)
        out = xhat * weight if has_weight else xhat.copy()
        if has_bias:
            out += affine[-1]
        return out

    def backward(self, grad):
        xhat, rstd, weight, axes, training, has_bias = self.saved
        grads = [None]
        def sums(a: Any) -> Any:                        # per channel, float64-accumulated
            return channel_sum(a).astype(grad.dtype, copy=False)

        if weight is not None:
            grads.append(sums(grad * xhat) if self.needs_input_grad[1] else None)
        if has_bias:
            grads.append(sums(grad) if self.needs_input_grad[-1] else None)
        if self.needs_input_grad[0]:
            g_hat = grad * weight if weight is not None else grad
            if training:
                n = grad.size // rstd.size              # elements per channel
                dx = n * g_hat - sums(g_hat)
                dx -= xhat * sums(g_hat * xhat)
                dx *= rstd / n
            else:
                dx = g_hat * rstd
            grads[0] = dx
        return tuple(grads)


def _linear_form(x: Any, mean: Any, rstd: Any, weight: Any, bias: Any) -> Any:
    """out = x * alpha + beta with alpha = rstd * w and beta = b - mean * alpha per channel,
    each step rounded to float32: how torch's CPU kernel normalises a float16/bfloat16 input
    (batch_norm_kernel.cpp) before it rounds the output to the half dtype once."""
    alpha = rstd if weight is None else rstd * weight
    beta = -(mean * alpha) if bias is None else bias - mean * alpha
    fused = x.astype(np.float64) * alpha + beta      # one rounding, as the kernel's FMA
    return fused.astype(np.float32)


def channel_sum(a: Any) -> Any:
    """Per-channel sums of an (N, C, ...) array as a float64 (1, C, 1...) array: each
    (n, c) row of the trailing axes summed in the array's dtype (NumPy's pairwise summation
    along a contiguous row, error O(log L)), the N row sums added in float64. As accurate
    as torch's CPU kernel, which accumulates float32 in double, and faster than a float32
    sum over the axes (0, 2, ...) (NumPy adds those one by one: error O(N * L)) or than
    casting every term (0.4 against 2.2 ms for (16, 64, 48, 48)).
    """
    xp = backend.get_array_module(a)
    count, channels = a.shape[:2]
    rows = a.reshape(count, channels) if a.size == count * channels else \
        a.reshape(count, channels, -1).sum(axis=2)
    return rows.sum(axis=0, dtype=xp.float64).reshape((1, channels) + (1,) * (a.ndim - 2))


def batch_statistics(x: Any) -> Tuple[Any, Any]:
    """The batch mean and biased variance per channel of an (N, C, ...) array, in float64
    (for float32 x too): mean = sum(x) / n; with d = x - mean rounded to x's dtype, the
    variance is sum(d^2) / n - (sum(d) / n)^2, the second term correcting for that rounding."""
    xp = backend.get_array_module(x)
    n = x.size // x.shape[1]
    mean = channel_sum(x) / n
    d = x - mean.astype(x.dtype)
    shift = channel_sum(d) / n                   # the rounding of mean, seen by d
    d *= d
    var = xp.maximum(channel_sum(d) / n - shift * shift, 0.0)
    return mean, var


def _channel_shape(x: Tensor) -> Tuple[int, ...]:
    return (1, x.shape[1]) + (1,) * (x.ndim - 2)     # (1, C) or (1, C, 1)


def _check(x: Tensor, running_mean: Optional[Tensor], running_var: Optional[Tensor],
           weight: Optional[Tensor], bias: Optional[Tensor], training: bool) -> None:
    if x.ndim < 2 and x.numel() == 0:
        return
    if x.ndim < 2:
        raise ValueError(f"batch_norm: expected an input of shape (N, C) or (N, C, L), got "
                         f"shape {x.shape}; add a batch dimension with x.unsqueeze(0)")
    if not is_floating(x.dtype):
        raise TypeError(f"batch_norm: expected a floating-point input, got {x.dtype}; convert "
                        f"with .float()")
    if (running_mean is None) != (running_var is None):
        given = "running_mean" if running_var is None else "running_var"
        raise ValueError(f"batch_norm: running_mean and running_var must both be given or "
                         f"both be None (got only {given}), as in PyTorch")
    channels = x.shape[1]
    for name, t in (("running_mean", running_mean), ("running_var", running_var),
                    ("weight", weight), ("bias", bias)):
        if t is not None and t.numel() != channels:
            raise RuntimeError(f"batch_norm: {name} should contain {channels} elements (one "
                               f"per channel of the input, shape {x.shape}), not {t.numel()}")
    if not training and (running_mean is None or running_var is None):
        raise RuntimeError("batch_norm: training=False normalises with running_mean and "
                           "running_var, so both must be given (pass training=True to use "
                           "the batch's own statistics)")
    per_channel = x.shape[0] * int(np.prod(x.shape[2:]))     # torch's check: exactly one
    if training and per_channel == 1:
        raise ValueError(f"Expected more than 1 value per channel when training, got input "
                         f"size {x.shape}: the variance of one value is 0 and its unbiased "
                         f"estimate divides by 0. Use a batch of 2 or more, or eval mode")


def batch_norm(input: Tensor, running_mean: Optional[Tensor],  # noqa: A002 - torch's name
               running_var: Optional[Tensor], weight: Optional[Tensor] = None,
               bias: Optional[Tensor] = None, training: bool = False, momentum: float = 0.1,
               eps: float = 1e-5) -> Tensor:
    """PyTorch's ``F.batch_norm``. ``training=True`` normalises with the batch's statistics
    and, when running_mean / running_var are given, updates them in place (no gradient):
        running_mean = (1 - momentum) * running_mean + momentum * mean
        running_var  = (1 - momentum) * running_var  + momentum * var * n / (n - 1)
    ``training=False`` normalises with running_mean and running_var."""
    x = input
    _check(x, running_mean, running_var, weight, bias, training)
    if not float(eps) >= 0:
        raise ValueError(f"batch_norm: eps must be >= 0, got {eps}")
    if training and float(eps) == 0:
        raise ValueError(f"batch_norm eps must be positive during training, but got {eps} "
                         f"(as torch: a channel of equal values would divide 0 by 0)")
    if x.ndim < 2 and x.numel() == 0:         # torch: an empty 1-D input comes back as is
        return x.clone()
    if x.numel() == 0:
        return _empty_batch_norm(x, weight, bias)
    if is_low_precision(x.dtype):
        return _half_batch_norm(x, running_mean, running_var, weight, bias, training,
                                momentum, float(eps))
    compute = half_as_float32(x)
    xp = backend.get_array_module(compute._data)
    axes = (0,) + tuple(range(2, x.ndim))                # every axis but the channel
    shape = _channel_shape(x)
    rstd = None
    if training:
        mean, var = batch_statistics(compute._data)
        _update_running(running_mean, running_var, mean, var, x.numel() // x.shape[1],
                        momentum)
        rstd = (1 / xp.sqrt(var + float(eps))).astype(compute.dtype)
        mean = mean.astype(compute.dtype)
        var = var.astype(compute.dtype)
    else:
        mean = running_mean._data.reshape(shape).astype(compute.dtype, copy=False)
        var = running_var._data.reshape(shape).astype(compute.dtype, copy=False)
    affine = [half_as_float32(p).reshape(shape) for p in (weight, bias) if p is not None]
    out = BatchNorm.apply(compute, *affine, mean=mean, var=xp.asarray(var), axes=axes,
                          eps=float(eps), training=bool(training), rstd=rstd,
                          has_weight=weight is not None, has_bias=bias is not None)
    _keep_as_torch(out, x, running_mean, running_var, weight)
    return convert(out, dtype=x.dtype)      # float16 is normalised in float32, as PyTorch


def _keep_as_torch(out: Tensor, *tensors: Optional[Tensor]) -> None:
    """torch's batch norm node keeps the input, the running estimates and the weight (not
    the normalised xhat this backward uses): an in-place change to any of them after the op
    makes the backward raise, as torch's does (docs/pytorch.md)."""
    keep_versions(out, *tensors)


def _half_batch_norm(x: Tensor, running_mean: Optional[Tensor],
                     running_var: Optional[Tensor], weight: Optional[Tensor],
                     bias: Optional[Tensor], training: bool, momentum: Any, eps: float
                     ) -> Tensor:
    """float16/bfloat16 as torch's CPU kernel computes them (batch_norm_kernel.cpp): sums in
    float32; when every parameter has the input's dtype, the saved statistics are that
    dtype's: the batch mean and the inverse standard deviation are rounded to it (bfloat16
    also rounds the sum of squared deviations and the variance). Then out = x alpha + beta
    in float32 (``_linear_form``), rounded to the half dtype once. The graph runs in
    float32. Checked bit for bit against torch in tests/test_half_rounding.py."""
    half = x.dtype
    params = [t for t in (running_mean, running_var, weight, bias) if t is not None]
    stats = half if all(t.dtype == half for t in params) else np.dtype(np.float32)
    compute = convert(x, dtype=np.float32)
    data = compute._data
    xp = backend.get_array_module(data)
    axes = (0,) + tuple(range(2, x.ndim))
    shape = _channel_shape(x)
    n = x.numel() // x.shape[1]

    def rounded(a: Any) -> Any:
        return a.astype(stats).astype(np.float32)
    if training:
        mean32 = data.sum(axis=axes, keepdims=True, dtype=np.float32) / np.float32(n)
        var_sum = ((data - mean32) ** 2).sum(axis=axes, keepdims=True, dtype=np.float32)
        mean = rounded(mean32)
        if precision.is_bfloat16(half) and stats == half:  # bfloat16: the variance is rounded too,
            var_sum = rounded(var_sum)          # the running estimates are updated in
            var = rounded(var_sum / np.float32(n))      # bfloat16 arithmetic
            _update_running_bfloat16(running_mean, running_var, mean, var_sum, n, momentum)
        else:
            var = var_sum.astype(np.float64) / n
            _update_running_float32(running_mean, running_var, mean32, var_sum, n, momentum)
        with np.errstate(divide="ignore"):      # torch: in double, then float32
            rstd = rounded((1 / xp.sqrt(var.astype(np.float64) + eps)).astype(np.float32))
    else:
        mean = running_mean._data.reshape(shape).astype(np.float32)
        var = running_var._data.reshape(shape).astype(np.float32)
        rstd = (1 / xp.sqrt(var + np.float32(eps))).astype(np.float32)
    affine = [convert(p, dtype=np.float32).reshape(shape) for p in (weight, bias)
              if p is not None]
    out = BatchNorm.apply(compute, *affine, mean=mean, var=None, axes=axes, eps=eps,
                          training=bool(training), has_weight=weight is not None,
                          has_bias=bias is not None, rstd=rstd)
    _keep_as_torch(out, x, running_mean, running_var, weight)
    return convert(out, dtype=half)


def _empty_batch_norm(x: Tensor, weight: Optional[Tensor], bias: Optional[Tensor]) -> Tensor:
    """An empty input (N = 0, or a zero-length axis), in training or evaluation: as torch,
    the running estimates stay as they are and the output is ``x * weight[0] + bias[0]``
    (a copy of x without them), so the graph reaches x and the parameters, whose gradients
    are zeros: no element was normalised."""
    out = x.clone()
    if weight is not None:
        out = out * weight[0]
    if bias is not None:
        out = out + bias[0]
    return out


def _write_running(running: Tensor, new: Any) -> None:
    """Write a running estimate in place WITHOUT bumping its version, as torch's batch norm
    kernel updates it: a second forward in training (a GAN's discriminator called on real,
    then on generated images, before one backward) leaves the first call's backward valid,
    while a user's own in-place write (``bn.running_mean.add_(1)``) still makes it raise."""
    running._data[...] = new.astype(running.dtype, copy=False)


def _update_running_float32(running_mean: Optional[Tensor], running_var: Optional[Tensor],
                            mean: Any, var_sum: Any, n: int, momentum: Any) -> None:
    """The half-precision update as torch's kernel does it: in float32, from the float32
    batch mean and the unbiased variance var_sum / (n - 1), rounded once to the running
    tensor's dtype."""
    if momentum is None:
        raise TypeError("batch_norm: momentum=None is a BatchNorm1d option (a cumulative "
                        "average); F.batch_norm needs a number")
    m = np.float32(momentum)
    with no_grad():
        for running, value in ((running_mean, mean), (running_var, var_sum / np.float32(n - 1))):
            if running is not None:
                new = m * value.reshape(running.shape) + (np.float32(1) - m) * \
                    running._data.astype(np.float32)
                _write_running(running, new)


def _update_running_bfloat16(running_mean: Optional[Tensor], running_var: Optional[Tensor],
                             mean: Any, var_sum: Any, n: int, momentum: Any) -> None:
    """The bfloat16 update as torch computes it: momentum * value + (1 - momentum) * running
    with the momentum, each product and the sum rounded to bfloat16 (the batch mean and the
    unbiased variance var_sum / (n - 1) rounded first)."""
    if momentum is None:
        raise TypeError("batch_norm: momentum=None is a BatchNorm1d option (a cumulative "
                        "average); F.batch_norm needs a number")

    def bf16(a: Any) -> Any:
        return a.astype(np.float32).astype(precision.BFLOAT16).astype(np.float32)
    m = np.float32(np.float32(momentum).astype(precision.BFLOAT16))
    keep = np.float32(np.float32(1 - float(momentum)).astype(precision.BFLOAT16))
    with no_grad():
        for running, value in ((running_mean, mean),
                               (running_var, bf16(var_sum / np.float32(n - 1)))):
            if running is not None:
                old = running._data.astype(np.float32)
                new = bf16(bf16(m * value.reshape(running.shape)) + bf16(keep * old))
                _write_running(running, new)


def _update_running(running_mean: Optional[Tensor], running_var: Optional[Tensor],
                    mean: Any, var: Any, n: int, momentum: Optional[float]) -> None:
    """The exponential moving averages, written in place (no version bump: _write_running)."""
    if momentum is None:
        raise TypeError("batch_norm: momentum=None is a BatchNorm1d option (a cumulative "
                        "average); F.batch_norm needs a number")
    m = float(momentum)
    with no_grad():
        if running_mean is not None:
            new = (1 - m) * running_mean._data + m * mean.reshape(running_mean.shape)
            _write_running(running_mean, new)
        if running_var is not None:
            unbiased = var.reshape(running_var.shape) * (n / (n - 1))
            new = (1 - m) * running_var._data + m * unbiased
            _write_running(running_var, new)
