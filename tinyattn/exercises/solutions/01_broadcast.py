"""Exercise 01, broadcasting: reference solution for add_backward and mul_backward.

Derivation (docs/derivations.md#broadcasting)
    Without broadcasting, out = a + b gives d out / d a = 1, so da = grad; out = a * b gives
    d out / d a = b, so da = grad * b (and db = grad * a: the product rule).
    Broadcasting copies an input: b of shape (D,) in a (B, S, D) sum is used B * S times.
    An input used several times collects the gradient of every use, so the copies'
    gradients add up: sum the full-size gradient over the axes b was copied along.
    Those are the leading axes b lacks (sum them away) and the axes where b has size 1
    (sum with keepdims=True, so the result keeps b's shape). unbroadcast does both, and
    serves every binary op.
"""


def add_forward(a, b):
    """out = a + b, with NumPy broadcasting. Given; do not change."""
    out = a + b
    return out, (a.shape, b.shape)


def unbroadcast(grad, shape):
    """Sum grad (the output's shape) down to ``shape``: the backward of broadcasting."""
    extra = grad.ndim - len(shape)
    grad = grad.sum(axis=tuple(range(extra)))         # leading axes the input lacked
    axes = tuple(i for i, n in enumerate(shape) if n == 1 and grad.shape[i] != 1)
    return grad.sum(axis=axes, keepdims=True) if axes else grad


def add_backward(grad, cache):
    """Return (da, db): da of a's shape, db of b's shape."""
    a_shape, b_shape = cache
    return unbroadcast(grad, a_shape), unbroadcast(grad, b_shape)


def mul_forward(a, b):
    """out = a * b, with NumPy broadcasting. Given; do not change."""
    out = a * b
    return out, (a, b)


def mul_backward(grad, cache):
    """Return (da, db): da of a's shape, db of b's shape."""
    a, b = cache
    return unbroadcast(grad * b, a.shape), unbroadcast(grad * a, b.shape)
