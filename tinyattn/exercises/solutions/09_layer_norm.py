"""Exercise 09, layer normalisation: reference solution for layer_norm_backward.

Derivation (docs/derivations.md#layer-norm)
    Per row of D features: mu = mean(x), var = mean((x - mu)^2), rstd = (var + eps)^(-1/2),
    xhat = (x - mu) rstd, out = xhat w + b.
    dw = sum over rows of grad * xhat and db = sum over rows of grad (w, b are shared by
    every row). Let dxhat = grad * w. x_j reaches xhat by three paths: directly (rstd), via
    mu, via var:
        d mu / d x_j = 1/D,   d var / d x_j = 2 (x_j - mu) / D,   d rstd / d var = -rstd^3 / 2
    Adding them: dx = rstd * (dxhat - mean(dxhat) - xhat * mean(dxhat * xhat)),
    means over the row. The two mean terms are the mu and var paths; dropping them
    ("treat mu and var as constants") is the classic mistake.
"""
import numpy as np


def layer_norm_forward(x, weight, bias, eps=1e-5):
    """out = (x - mean) / sqrt(var + eps) * weight + bias over the last axis:
    x (..., D), weight (D,), bias (D,) -> (..., D). Given; do not change."""
    mu = x.mean(axis=-1, keepdims=True)
    var = ((x - mu) ** 2).mean(axis=-1, keepdims=True)
    rstd = 1.0 / np.sqrt(var + eps)
    xhat = (x - mu) * rstd
    return xhat * weight + bias, (xhat, rstd, weight)


def layer_norm_backward(grad, cache):
    """Return (dx, dweight, dbias), of the shapes of x, weight and bias."""
    xhat, rstd, weight = cache
    dxhat = grad * weight
    dx = rstd * (dxhat - dxhat.mean(axis=-1, keepdims=True)
                 - xhat * (dxhat * xhat).mean(axis=-1, keepdims=True))
    rows = tuple(range(grad.ndim - 1))          # every axis but the feature axis
    return dx, (grad * xhat).sum(axis=rows), grad.sum(axis=rows)
