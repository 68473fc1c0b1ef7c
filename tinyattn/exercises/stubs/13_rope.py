"""Exercise 13, rotary position embedding (RoPE).

Task
    Fill in rope_backward: given grad (..., S, D) and the cache (cos, sin), each (S, D/2),
    return dx.

Shapes
    x (..., S, D) with D even, positions (S,) ints -> out (..., S, D). Each feature pair
    (x[..., 2i], x[..., 2i+1]) at position t is rotated by the angle t * base^(-2i / D).

Hints (read docs/nn.md#rope)
    1. Per pair, out_pair = R x_pair with R = [[cos, -sin], [sin, cos]]: a linear map.
    2. The backward of a linear map y = R x is dx = R^T grad. What rotation is R^T?
    3. x[..., 0::2] and x[..., 1::2] select the even and odd features; write the two
       halves of dx into np.empty_like(grad) the same way the forward does.

Check
    python -m tinyattn.exercises check rope --path <your folder>
"""

import numpy as np


def rope_forward(x, positions, base=10000.0):
    """Rotate each feature pair (x[..., 2i], x[..., 2i+1]) at position t by the angle
    t * base^(-2i / D). x (..., S, D) with D even, positions (S,) ints -> (..., S, D).
    Given; do not change."""
    d = x.shape[-1]
    theta = base ** (-np.arange(0, d, 2) / d)               # (D/2,)
    angle = positions[:, None] * theta[None, :]             # (S, 1) * (1, D/2) -> (S, D/2)
    cos, sin = np.cos(angle), np.sin(angle)
    x_even, x_odd = x[..., 0::2], x[..., 1::2]              # (..., S, D/2) each
    out = np.empty_like(x)
    out[..., 0::2] = x_even * cos - x_odd * sin
    out[..., 1::2] = x_even * sin + x_odd * cos
    return out, (cos, sin)


def rope_backward(grad, cache):
    """Return dx, of x's shape (..., S, D)."""
    cos, sin = cache
    # Your code here (delete the raise).
    raise NotImplementedError("rope_backward")
