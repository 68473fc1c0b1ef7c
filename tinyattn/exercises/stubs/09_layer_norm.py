"""Exercise 09, layer normalisation.

Task
    Fill in layer_norm_backward: given grad and the cache (xhat, rstd, weight), return
    (dx, dweight, dbias).

Shapes
    x (..., D) normalised over its last axis, weight (D,), bias (D,) -> out (..., D).
    mu and var are (..., 1); xhat = (x - mu) * rstd, rstd = 1 / sqrt(var + eps).
    The checker includes a constant row, where var = 0 and eps keeps rstd finite.

Hints (read docs/derivations.md#layer-norm)
    1. dweight and dbias first: weight and bias are shared by every row.
    2. dxhat = grad * weight. Each x_j reaches xhat three ways: directly, through mu and
       through var. Write d mu / d x_j and d var / d x_j, then add the three paths.
    3. The answer fits on one line, with two means over the row:
       dx = rstd * (dxhat - mean(...) - xhat * mean(...)).

Check
    python -m tinyattn.exercises check layer_norm --path <your folder>
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
    # Your code here (delete the raise).
    raise NotImplementedError("layer_norm_backward")
