"""``F.local_response_norm``: AlexNet's normalisation across nearby channels
(docs/derivations.md#local-response-normalisation).

For an input (N, C, *) and a window of ``size`` channels around channel c,
    S_c = sum of x_j^2 over j in [c - size // 2, c + (size - 1) // 2] (clipped to [0, C)),
    out_c = x_c / (k + alpha / size * S_c) ** beta,
as torch computes it (its average pooling counts the zero padding, hence / size always).
"""
from __future__ import annotations

from typing import Any

import numpy as np

from .. import backend
from ..amp.dispatch import cast_args
from ..autograd import Function
from ..precision import is_floating
from ..tensor import Tensor

__all__ = ["local_response_norm"]


def _channel_window_sum(a: Any, before: int, after: int) -> Any:
    """s[:, c] = sum of a[:, j] for j in [c - before, c + after], clipped to the channels.
    One vectorised add per offset (``size`` of them), no cumulative-sum cancellation."""
    xp = backend.get_array_module(a)
    channels = a.shape[1]
    total = xp.zeros_like(a)
    for offset in range(-before, after + 1):
        lo, hi = max(0, -offset), min(channels, channels - offset)    # c with c + offset valid
        if lo < hi:
            total[:, lo:hi] += a[:, lo + offset:hi + offset]
    return total


class LocalResponseNorm(Function):
    """out_c = x_c / base_c^beta, base_c = k + (alpha / n) S_c, S_c = sum_{j in W(c)} x_j^2.

    x_j enters out_j directly and every base_c whose window W(c) holds j:
        d out_c / d x_j = [c = j] / base_c^beta
                          - beta x_c base_c^(-beta - 1) (alpha / n) 2 x_j [j in W(c)],
    so dx_j = g_j / base_j^beta - (2 alpha beta / n) x_j sum_{c : j in W(c)} g_c out_c / base_c.
    j in W(c) = [c - n // 2, c + (n - 1) // 2] means c in [j - (n - 1) // 2, j + n // 2]: the
    same window sum with its two ends swapped. Saved: x (as torch's composition saves it) and
    base; out is recomputed from them, so the output may be written in place, as in torch.
    float16/bfloat16 (``half_steps``): torch's composition rounds after each of its six ops
    (x*x, the window mean, * alpha, + k, ** beta, x / ...), so the forward rounds there too,
    and its pow takes beta rounded to the half dtype (0.9 is 0.8984375 in bfloat16).
    """

    def forward(self, x, *, size, alpha, beta, k, half_steps=None):
        rounded = (lambda a: a) if half_steps is None else \
            (lambda a: a.astype(half_steps).astype(x.dtype))
        window_mean = rounded(_channel_window_sum(rounded(x * x), size // 2,
                                                  (size - 1) // 2) / size)
        base = rounded(rounded(window_mean * alpha) + k)
        self.save_for_backward(x, base, size, alpha, beta)
        # torch's pow(half tensor, scalar) first rounds the exponent to the half dtype
        exponent = beta if half_steps is None else float(np.asarray(beta, dtype=half_steps))
        return rounded(x / rounded(base ** exponent)).astype(x.dtype, copy=False)

    def backward(self, grad):
        x, base, size, alpha, beta = self.saved
        scale = base ** -beta
        per_window = grad * x * scale / base                          # g_c out_c / base_c
        spread = _channel_window_sum(per_window, (size - 1) // 2, size // 2)
        return (grad * scale - (2 * alpha * beta / size) * x * spread).astype(x.dtype,
                                                                              copy=False)


def local_response_norm(input: Tensor, size: int, alpha: float = 1e-4,  # noqa: A002
                        beta: float = 0.75, k: float = 1.0) -> Tensor:
    """``F.local_response_norm``: (N, C, *) -> the same shape, each element divided by
    (k + alpha / size * the sum of squares over ``size`` neighbouring channels) ** beta."""
    if not isinstance(input, Tensor):
        raise TypeError(f"local_response_norm: expected a tensor input, got "
                        f"{type(input).__name__}")
    if input.ndim < 3:
        raise ValueError(f"Expected 3D or higher dimensionality input (got {input.ndim} "
                         f"dimensions)")
    if isinstance(size, bool) or not isinstance(size, (int, np.integer)) or size < 1:
        raise RuntimeError(f"local_response_norm: size must be a positive int (the number of "
                           f"channels in each window), got {size!r}")
    if input.numel() == 0:
        return input                # torch returns the input itself
    if input.ndim > 3:              # autocast: torch pools these with avg_pool3d, in float32
        (input,) = cast_args("avg_pool3d", input)
    if not is_floating(input.dtype):
        return _integer_input(input, int(size), float(alpha), float(beta), float(k))
    half = input.dtype.itemsize < 4
    if half and input.ndim > 3:
        raise RuntimeError(f"local_response_norm: not implemented for {input.dtype} inputs "
                           f"of more than 3 dims: torch's composition pools them with "
                           f"avg_pool3d, whose CPU kernel refuses 'Half' and 'BFloat16'; "
                           f"convert the input with .float()")
    return LocalResponseNorm.apply(input, size=int(size), alpha=float(alpha),
                                   beta=float(beta), k=float(k),
                                   half_steps=input.dtype if half else None)


def _integer_input(input: Tensor, size: int, alpha: float, beta: float,  # noqa: A002
                   k: float) -> Tensor:
    """torch's composition on an integer tensor: the squares and their window mean stay
    integers (the mean truncated, as integer average pooling), then * alpha makes float32;
    the result is float32 and has no gradient."""
    x = input._data
    if x.dtype != np.int64:
        raise RuntimeError(f"local_response_norm: not implemented for {x.dtype}: torch's "
                           f"composition average-pools the squares, which takes floating "
                           f"dtypes and int64 only; convert the input with .float()")
    squares = x * x
    window_mean = _channel_window_sum(squares, size // 2, (size - 1) // 2) // size
    scale = ((window_mean.astype(np.float32) * np.float32(alpha) + np.float32(k))
             ** np.float32(beta))
    return Tensor._wrap(x.astype(np.float32) / scale)
