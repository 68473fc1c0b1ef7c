"""Exercise 08, masking, and softmax with a fully masked row.

Task
    Fill in keep_or_fill_backward and masked_softmax_backward.

Shapes
    keep is boolean, broadcastable to x, True = keep (the convention of attention masks,
    True = may attend). keep_or_fill is np.where(keep, x, value); it is named so because
    F.masked_fill(x, mask, value), like PyTorch's, fills where its mask is TRUE: the opposite.
    keep_or_fill: x (...) -> out (...): x where keep, value elsewhere.
    masked_softmax: x (..., C) -> y (..., C): softmax over the kept positions of each row;
    y = 0 where masked, and a row with nothing kept is all zeros.

Hints (read docs/derivations.md#masking)
    1. keep_or_fill: does a masked position's x reach the output at all? Then what is its
       gradient? Which gradient reaches a kept position?
    2. masked_softmax: on the kept positions it is a plain softmax (exercise 06). What does
       your softmax formula give where y = 0? And in a row that is all masked?
    3. The checker includes a fully masked row: your gradient there must be 0, not NaN.

Check
    python -m tinyattn.exercises check masked_softmax --path <your folder>
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
    # Your code here (delete the raise).
    raise NotImplementedError("keep_or_fill_backward")


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
    # Your code here (delete the raise).
    raise NotImplementedError("masked_softmax_backward")
