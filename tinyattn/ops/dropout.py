"""Inverted dropout (docs/derivations.md#dropout)."""
from __future__ import annotations

from typing import Any

from .. import backend
from ..autograd import Function
from ..tensor import Tensor

__all__ = ["dropout"]


class Dropout(Function):
    """keep ~ Bernoulli(1 - p) per element;  out = x * keep / (1 - p).

    Dividing by 1 - p at training time keeps E[out] = x, so evaluation is the identity.
    dx = g * keep / (1 - p): the same mask, the same scale. With p = 1 every element is
    dropped and out = 0 (no division by zero).
    """

    def forward(self, x, p: float, generator: Any):
        scale = 0.0 if p >= 1.0 else 1.0 / (1.0 - p)
        keep = backend.uniform(x.shape, backend.device_of(x), x.dtype, generator) >= p
        mask = keep * x.dtype.type(scale)       # (...) float mask: 0 or 1/(1-p)
        self.save_for_backward(mask)
        return x * mask

    def backward(self, grad):
        (mask,) = self.saved
        return grad * mask


def dropout(x: Tensor, p: float = 0.5, training: bool = True, generator: Any = None) -> Tensor:
    """Zero each element with probability ``p`` and scale the rest by 1/(1-p); identity when
    ``training`` is False or ``p`` is 0. Reproducible from ``tinyattn.manual_seed``."""
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"dropout: p must be a probability in [0, 1], got {p}")
    if not training or p == 0.0:
        return x
    return Dropout.apply(x, p=float(p), generator=generator)
