"""Exercise 08, masking and masked softmax: reference solution.

Derivation (docs/derivations.md#masking)
    keep_or_fill: out = x where keep, value elsewhere. A masked position's x never reaches
    the output (the constant replaced it), so d out / d x = 1 where keep, 0 elsewhere:
    dx = where(keep, grad, 0). Passing grad straight through leaks gradient into positions
    the model never used.
    masked softmax: y = softmax over the kept positions; masked ones get y = 0, and a row
    with nothing kept gets y = 0 everywhere. On the kept positions it is a plain softmax,
    so dx = y * (grad - sum(grad * y)) along the row. That formula already gives 0 at masked
    positions (y = 0 there) and a 0 row for a fully masked row: no special case, no NaN.
    (Recomputing y in backward from x would need the forward's care: a fully masked row has
    max = -inf and sum = 0.)
"""
import numpy as np


def keep_or_fill_forward(x, keep, value):
    """out = x where keep is True, value elsewhere. keep: bool, broadcastable to x.
    Given; do not change."""
    out = np.where(keep, x, value)
    return out, (keep,)


def keep_or_fill_backward(grad, cache):
    """Return dx, of x's shape."""
    (keep,) = cache
    return np.where(keep, grad, 0.0)


def masked_softmax_forward(x, keep):
    """y = softmax over the positions where keep is True (last axis); masked positions get 0
    and a row with no kept position gets all zeros, not 0/0 = NaN. Given; do not change."""
    scores = np.where(keep, x, -np.inf)
    row_max = scores.max(axis=-1, keepdims=True)
    row_max = np.where(np.isfinite(row_max), row_max, 0.0)    # fully masked row: max = -inf
    e = np.exp(scores - row_max)                              # exp(-inf) = 0 where masked
    total = e.sum(axis=-1, keepdims=True)
    y = e / np.where(total == 0.0, 1.0, total)                # fully masked row: 0 / 1
    return y, (y, keep)


def masked_softmax_backward(grad, cache):
    """Return dx, of x's shape."""
    y, keep = cache
    return y * (grad - (grad * y).sum(axis=-1, keepdims=True))
