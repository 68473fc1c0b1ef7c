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


def _deprecated_dims(op: str, dims: int, ndim: int) -> None:
    """torch's warning for an input with a dimension count the op was not made for, which
    it still computes (channel dropout over dims 0 and 1, or 0 for dropout3d)."""
    warnings.warn(f"{op}: Received a {ndim}-D input to {op}, which is deprecated and will "
                  f"result in an error in a future release. To retain the behavior and "
                  f"silence this warning, please use dropout instead. Note that {op} exists "
                  f"to provide channel-wise dropout on inputs with {dims} spatial dimensions, "
                  f"a channel dimension, and an optional batch dimension (i.e. {dims + 1}D or "
                  f"{dims + 2}D inputs).")


def _feature_dropout(x: Tensor, p: float, training: bool, generator: Any = None) -> Tensor:
    """torch's feature dropout: one draw per (dim 0, dim 1) entry, broadcast over the rest;
    the input itself when not training or p == 0."""
    if isinstance(p, bool) or not 0.0 <= p <= 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
    if not training or p == 0.0:
        return x
    if x.ndim < 2:
        raise RuntimeError(f"Feature dropout requires at least 2 dimensions in the input "
                           f"(got shape {tuple(x.shape)}); use F.dropout for element-wise "
                           f"dropout")
    return ChannelDropout.apply(x, p=float(p), generator=generator)


def dropout2d(input: Tensor, p: float = 0.5, training: bool = True,  # noqa: A002
              inplace: bool = False) -> Tensor:
    """Zero whole channels of (N, C, H, W) with probability p, scaling the rest by 1/(1-p).
    A 3-D input is taken as (N, C, L), with torch's warning (torch's behaviour); other
    dimension counts, with torch's deprecation warning, drop along dims 0 and 1 as torch."""
    if input.ndim == 3:
        warnings.warn("dropout2d: Received a 3D input to dropout2d and assuming that "
                      "channel-wise 1D dropout behavior is desired - input is interpreted as "
                      "shape (N, C, L), where C is the channel dim. This behavior will change "
                      "in a future release to interpret the input as one without a batch "
                      "dimension, i.e. shape (C, H, W). To maintain the 1D channel-wise "
                      "dropout behavior, please switch to using dropout1d instead.")
        return _channel_dropout("dropout2d", 1, input, p, training)
    if input.ndim != 4:
        _deprecated_dims("dropout2d", 2, input.ndim)
        return _feature_dropout(input, p, training)
    return _channel_dropout("dropout2d", 2, input, p, training)


def dropout3d(input: Tensor, p: float = 0.5, training: bool = True,  # noqa: A002
              inplace: bool = False) -> Tensor:
    """Zero whole channels of (N, C, D, H, W) or (C, D, H, W) with probability p. Other
    dimension counts, with torch's deprecation warning, are taken as unbatched (one draw
    per entry of dim 0), as torch."""
    if input.ndim not in (4, 5):
        _deprecated_dims("dropout3d", 3, input.ndim)
        if isinstance(p, bool) or not 0.0 <= p <= 1.0:
            raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
        return _feature_dropout(input.unsqueeze(0), p, training).squeeze(0)
    return _channel_dropout("dropout3d", 3, input, p, training)
