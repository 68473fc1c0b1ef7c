"""Exercise 01, broadcasting: the backward of a + b and a * b.

Task
    Fill in add_backward and mul_backward. Each receives grad = dL/dout (out's shape) and
    the cache its forward saved, and returns (da, db): arrays of a's shape and b's shape.

Shapes
    a and b broadcast as in NumPy: out.shape = np.broadcast_shapes(a.shape, b.shape).
    The checker tries (2, 3) with (2, 3); (B, S, D) with (D,); (3, 1) with (1, 4);
    (2, 1, 4) with (3, 1).

Hints (read docs/derivations.md#broadcasting)
    1. Ignore broadcasting first: d(a + b)/da = 1, so da = grad; for a * b, da = grad * b.
    2. Broadcasting copies b along the axes it lacks and along its size-1 axes. Every copy
       sends a gradient back, and an input used several times adds up its gradients.
    3. Leading axes b lacks: sum them away. Axes where b has size 1: sum with keepdims=True.
    4. Write one helper, unbroadcast(grad, shape), and use it for all four gradients.

Check
    python -m tinyattn.exercises check broadcast --path <your folder>
"""

import numpy as np  # noqa: F401 - for your backward


def add_forward(a, b):
    """out = a + b, with NumPy broadcasting. Given; do not change."""
    out = a + b
    return out, (a.shape, b.shape)


def add_backward(grad, cache):
    """Return (da, db): da of a's shape, db of b's shape."""
    a_shape, b_shape = cache
    # Your code here (delete the raise).
    raise NotImplementedError("add_backward")


def mul_forward(a, b):
    """out = a * b, with NumPy broadcasting. Given; do not change."""
    out = a * b
    return out, (a, b)


def mul_backward(grad, cache):
    """Return (da, db): da of a's shape, db of b's shape."""
    a, b = cache
    # Your code here (delete the raise).
    raise NotImplementedError("mul_backward")
