"""Exercise 02, reductions: the backward of sum and mean over axes.

Task
    Fill in sum_backward and mean_backward: given grad (out's shape) and the cache
    (x.shape, axis, keepdims), return dx of x's shape.

Shapes
    x (3, 4), axis=1 -> out (3,);  x (2, 3, 4), axis=(0, 2), keepdims=True -> out (1, 3, 1);
    axis=None reduces everything to a 0-d array; axis may be negative.

Hints (read docs/derivations.md#reductions)
    1. d out[j] / d x[i] is 1 when x[i] was summed into out[j], else 0. So each x[i] gets
       the grad of the output it went into: copy grad back along the reduced axes.
    2. Put the reduced axes back first with size 1 (np.expand_dims), unless keepdims kept
       them; then np.broadcast_to(grad, x_shape). Why not broadcast straight away? Try
       x of shape (4, 4) summed over axis 0.
    3. mean = sum / N, with N the number of elements reduced into each output.

Check
    python -m tinyattn.exercises check reductions --path <your folder>
"""

import numpy as np


def sum_forward(x, axis, keepdims):
    """out = x.sum(axis=axis, keepdims=keepdims); axis: an int, a tuple of ints, or None
    (all axes). Given; do not change."""
    out = np.asarray(x.sum(axis=axis, keepdims=keepdims))
    return out, (x.shape, axis, keepdims)


def sum_backward(grad, cache):
    """Return dx, of x's shape."""
    shape, axis, keepdims = cache
    # Your code here (delete the raise).
    raise NotImplementedError("sum_backward")


def mean_forward(x, axis, keepdims):
    """out = x.mean(axis=axis, keepdims=keepdims). Given; do not change."""
    out = np.asarray(x.mean(axis=axis, keepdims=keepdims))
    return out, (x.shape, axis, keepdims)


def mean_backward(grad, cache):
    """Return dx, of x's shape."""
    shape, axis, keepdims = cache
    # Your code here (delete the raise).
    raise NotImplementedError("mean_backward")
