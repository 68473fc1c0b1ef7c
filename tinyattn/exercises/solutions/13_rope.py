"""Exercise 13, rotary position embedding (RoPE): reference solution for rope_backward.

Derivation (docs/nn.md#rope)
    Each pair (x_2i, x_2i+1) at position t is rotated by the angle a = t * theta_i:
        out_2i   = x_2i cos a - x_2i+1 sin a
        out_2i+1 = x_2i sin a + x_2i+1 cos a
    that is out_pair = R(a) x_pair. A linear map's backward multiplies by its transpose,
    and R(a)^T = R(-a), the rotation back:
        dx_2i   =  g_2i cos a + g_2i+1 sin a
        dx_2i+1 = -g_2i sin a + g_2i+1 cos a
    The angles depend only on positions, which get no gradient.
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
    g_even, g_odd = grad[..., 0::2], grad[..., 1::2]        # (..., S, D/2) each
    dx = np.empty_like(grad)
    dx[..., 0::2] = g_even * cos + g_odd * sin
    dx[..., 1::2] = -g_even * sin + g_odd * cos
    return dx
