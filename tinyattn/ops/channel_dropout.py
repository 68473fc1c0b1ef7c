"""Channel dropout: PyTorch's ``F.dropout1d``, ``F.dropout2d``, ``F.dropout3d``
(docs/derivations.md#dropout).

Neighbouring pixels of a feature map are strongly correlated, so dropping single elements
barely regularises a convolutional network; these drop whole channels instead.
"""
from __future__ import annotations

import warnings
from typing import Any

from .. import backend
from ..autograd import Function
from ..tensor import Tensor

__all__ = ["dropout1d", "dropout2d", "dropout3d"]


class ChannelDropout(Function):
    """keep ~ Bernoulli(1 - p) per (sample, channel);  out = x * keep / (1 - p), the mask
    broadcast over the channel's positions. dx = g * keep / (1 - p): the same mask.
    p = 1 drops every channel (out = 0, no division by zero)."""

    def forward(self, x, p: float, generator: Any):
        scale = 0.0 if p >= 1.0 else 1.0 / (1.0 - p)
        shape = x.shape[:2] + (1,) * (x.ndim - 2)              # (N, C, 1, ...)
        keep = backend.uniform(shape, backend.device_of(x), x.dtype, generator) >= p
        mask = keep * x.dtype.type(scale)
        self.save_for_backward(mask)
        return x * mask

    def backward(self, grad):
        (mask,) = self.saved
        return grad * mask


def _channel_dropout(op: str, dims: int, x: Tensor, p: float, training: bool,
                     generator: Any = None) -> Tensor:
    if isinstance(p, bool) or not 0.0 <= p <= 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
    if x.ndim not in (dims + 1, dims + 2):
        raise RuntimeError(f"{op}: Expected {dims + 1}D or {dims + 2}D input, but received a "
                           f"{x.ndim}D input of shape {x.shape}. {op} expects input of shape "
                           f"(N, C, ...) or (C, ...)")
    unbatched = x.ndim == dims + 1
    if not training or p == 0.0:      # torch returns the input; unbatched, a view of it made
        return x.unsqueeze(0).squeeze(0) if unbatched else x    # by unsqueeze and squeeze
    batched = x.unsqueeze(0) if unbatched else x
    out = ChannelDropout.apply(batched, p=float(p), generator=generator)
    return out.squeeze(0) if unbatched else out


def dropout1d(input: Tensor, p: float = 0.5, training: bool = True,  # noqa: A002
              inplace: bool = False) -> Tensor:
    """Zero whole channels of (N, C, L) or (C, L) with probability p, scaling the rest."""
    return _channel_dropout("dropout1d", 1, input, p, training)


def dropout2d(input: Tensor, p: float = 0.5, training: bool = True,  # noqa: A002
              inplace: bool = False) -> Tensor:
    """Zero whole channels of (N, C, H, W) with probability p, scaling the rest by 1/(1-p).
    A 3-D input is taken as (N, C, L), with torch's warning (torch's behaviour)."""
    if input.ndim == 3:
        warnings.warn("dropout2d: Received a 3D input to dropout2d and assuming that "
                      "channel-wise 1D dropout behavior is desired - input is interpreted as "
                      "shape (N, C, L), where C is the channel dim. This behavior will change "
                      "in a future release to interpret the input as one without a batch "
                      "dimension, i.e. shape (C, H, W). To maintain the 1D channel-wise "
                      "dropout behavior, please switch to using dropout1d instead.")
        return _channel_dropout("dropout2d", 1, input, p, training)
    if input.ndim != 4:
        raise RuntimeError(f"dropout2d: Expected 4D input of shape (N, C, H, W) (or 3D), got "
                           f"shape {input.shape}")
    return _channel_dropout("dropout2d", 2, input, p, training)


def dropout3d(input: Tensor, p: float = 0.5, training: bool = True,  # noqa: A002
              inplace: bool = False) -> Tensor:
    """Zero whole channels of (N, C, D, H, W) or (C, D, H, W) with probability p."""
    return _channel_dropout("dropout3d", 3, input, p, training)
