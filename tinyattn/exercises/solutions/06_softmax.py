"""Exercise 06, softmax: reference solution for softmax_backward.

Derivation (docs/derivations.md#softmax)
    y_i = exp(x_i) / Z with Z = sum_j exp(x_j), one row at a time.
    d y_i / d x_j = y_i (delta_ij - y_j): for i == j, y_i (1 - y_i); for i != j, -y_i y_j
    (x_j moves every output of the row through Z).
    dx_j = sum_i grad_i d y_i / d x_j = grad_j y_j - y_j sum_i grad_i y_i
         = y_j (grad_j - sum_i grad_i y_i).
    No (C, C) Jacobian needed: one row-sum, kept with keepdims=True to broadcast back.
"""
import numpy as np


def softmax_forward(x):
    """y = exp(x - max) / sum(exp(x - max)) over the last axis. Given; do not change."""
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    y = e / e.sum(axis=-1, keepdims=True)
    return y, (y,)


def softmax_backward(grad, cache):
    """Return dx, of x's shape."""
    (y,) = cache
    return y * (grad - (grad * y).sum(axis=-1, keepdims=True))
