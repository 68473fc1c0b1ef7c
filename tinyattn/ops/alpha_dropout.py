"""Alpha dropout (Klambauer et al., 2017, for SELU networks) and Gumbel-softmax, built of
differentiable ops, so their gradients come from those ops' derivations.

**Alpha dropout.** A dropped unit is set to SELU's negative saturation value
``alpha' = -scale * alpha = -1.7580993408473766`` rather than 0, and an affine map ``a y + b``
restores zero mean and unit variance for inputs of mean 0 and variance 1 (keep probability
q = 1 - p)::

    y = x m + alpha' (1 - m),   m ~ Bernoulli(q)
    a = (q + alpha'^2 q p)^(-1/2),   b = -a alpha' p
    out = a y + b

so out = a m x + (a alpha' (1 - m) + b): the gradient is ``a m`` for each element.
``feature_alpha_dropout`` draws one m per channel (N, C, 1, ...). Identity in eval.

**Gumbel-softmax** (Jang et al., 2017): ``softmax((logits + G) / tau)`` with G Gumbel noise,
``G = -log(E)``, E ~ Exp(1). ``hard=True`` returns the one-hot of the argmax in the forward and
the soft sample's gradient in the backward (``y_hard - y_soft.detach() + y_soft``).
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np

from .. import backend
from ..tensor import Tensor

__all__ = ["alpha_dropout", "feature_alpha_dropout", "gumbel_softmax"]

SELU_NEGATIVE_SATURATION = -1.7580993408473766      # -scale * alpha of SELU


def _check_p(p: float) -> None:
    if isinstance(p, bool) or not 0.0 <= p <= 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")


def _alpha(x: Tensor, p: float, keep_shape: tuple, generator: Any) -> Tensor:
    keep = 1.0 - p
    if keep == 0.0:                                   # torch: everything dropped gives 0s
        return x * 0.0
    draws = backend.uniform(keep_shape, x.device, np.float64, generator)
    mask = Tensor._wrap((draws < keep).astype(x.dtype))
    a = 1.0 / math.sqrt(keep + SELU_NEGATIVE_SATURATION ** 2 * keep * p)
    b = -a * SELU_NEGATIVE_SATURATION * p
    return x * (mask * a) + (mask * (-a * SELU_NEGATIVE_SATURATION)
                             + (a * SELU_NEGATIVE_SATURATION + b))


def alpha_dropout(input: Tensor, p: float = 0.5, training: bool = False,  # noqa: A002
                  inplace: bool = False, *, generator: Any = None) -> Tensor:
    """``F.alpha_dropout``: each element dropped to SELU's saturation value, then rescaled."""
    _check_p(p)
    if not training or p == 0.0:
        return input
    return _alpha(input, float(p), tuple(input.shape), generator)


def feature_alpha_dropout(input: Tensor, p: float = 0.5, training: bool = False,  # noqa: A002
                          inplace: bool = False, *, generator: Any = None) -> Tensor:
    """``F.feature_alpha_dropout``: whole channels of (N, C, ...) dropped together."""
    _check_p(p)
    if not training or p == 0.0:
        return input
    if input.ndim < 2:
        raise RuntimeError(f"feature_alpha_dropout: Feature dropout requires at least 2 "
                           f"dimensions in the input, got shape {input.shape}")
    shape = tuple(input.shape[:2]) + (1,) * (input.ndim - 2)
    return _alpha(input, float(p), shape, generator)


def gumbel_softmax(logits: Tensor, tau: float = 1.0, hard: bool = False, eps: float = 1e-10,
                   dim: int = -1, *, generator: Any = None) -> Tensor:
    """``F.gumbel_softmax``: a differentiable sample of a categorical distribution."""
    xp = backend.get_array_module(logits._data)
    draws = backend.uniform(tuple(logits.shape), logits.device, np.float64, generator)
    gumbels = Tensor._wrap((-xp.log(-xp.log1p(-draws))).astype(logits.dtype))
    y_soft = ((logits + gumbels) / tau).softmax(dim)
    if not hard:
        return y_soft
    index = y_soft.argmax(dim, keepdim=True)
    y_hard = Tensor._wrap(xp.zeros(tuple(logits.shape), dtype=logits.dtype)).scatter(
        dim, index, 1.0)
    return y_hard - y_soft.detach() + y_soft
