"""Rotary position embedding (RoPE) as one op with a hand-derived backward (docs/nn.md#rope).

RoPE (Su et al., 2021, "RoFormer") encodes the position of a query or key by rotating it.
The last dim d (even) is cut into d/2 pairs (x[2i], x[2i+1]) (the paper's interleaved
convention; some libraries pair x[i] with x[i + d/2] instead). Pair i at position p is turned
by the angle p * theta_i, with theta_i = base^(-2i/d): early pairs spin fast, late ones slowly.

Because a rotation by a then the transpose of a rotation by b is a rotation by a - b,
    <R(p) q, R(s) k> = <q, R(s - p) k>,
so the attention score of a rotated query and key depends only on their distance s - p.
"""
from __future__ import annotations

from typing import Any, Tuple

from .. import backend
from ..autograd import Function
from ..tensor import Tensor
from ..precision import is_floating

__all__ = ["rope", "rope_tables"]


def rope_tables(xp: Any, seq_len: int, dim: int, offset: int, base: float,
                dtype: Any) -> Tuple[Any, Any]:
    """cos and sin of the angles (offset + p) * base^(-2i/d), each (S, d/2), in ``dtype``.

    Angles are computed in float64 (positions times frequencies lose digits in float32 for long
    sequences) and cast once to the input's dtype, so a float32 input stays float32.
    """
    inv_freq = base ** (-xp.arange(0, dim, 2, dtype=xp.float64) / dim)         # (d/2,)
    positions = xp.arange(offset, offset + seq_len, dtype=xp.float64)          # (S,)
    angles = positions[:, None] * inv_freq[None, :]                            # (S, d/2)
    return xp.cos(angles).astype(dtype), xp.sin(angles).astype(dtype)


class Rope(Function):
    """out = R(p) x: each pair (x1, x2) = (x[..., 2i], x[..., 2i+1]) at position p rotated by
    the angle a = p * theta_i:  out1 = x1 cos a - x2 sin a,  out2 = x1 sin a + x2 cos a.

    Backward: the op is linear, out = R x with R a block-diagonal rotation, so dx = R^T g, and
    the transpose of a rotation by a is the rotation by -a (cos(-a) = cos a, sin(-a) = -sin a):
        dx1 = g1 cos a + g2 sin a,     dx2 = -g1 sin a + g2 cos a.
    Nothing but the cos/sin tables needs saving; the backward costs the same as the forward.
    """

    def forward(self, x, cos, sin):
        xp = backend.get_array_module(x)
        x1, x2 = x[..., 0::2], x[..., 1::2]     # (..., S, d) -> two (..., S, d/2)
        out = xp.empty_like(x)
        out[..., 0::2] = x1 * cos - x2 * sin    # cos, sin (S, d/2) broadcast over (...)
        out[..., 1::2] = x1 * sin + x2 * cos
        self.save_for_backward(cos, sin)
        return out

    def backward(self, grad):
        cos, sin = self.saved
        xp = backend.get_array_module(grad)
        g1, g2 = grad[..., 0::2], grad[..., 1::2]
        dx = xp.empty_like(grad)
        dx[..., 0::2] = g1 * cos + g2 * sin
        dx[..., 1::2] = g2 * cos - g1 * sin
        return dx


def rope(x: Tensor, offset: int = 0, base: float = 10000.0) -> Tensor:
    """Rotate ``x`` (..., S, d) by its positions ``offset, ..., offset + S - 1``.

    Apply it to queries and keys (after splitting into heads, so d = d_k), never to values.
    ``offset`` is the number of tokens before ``x`` (the length of a key/value cache).
    """
    if x.ndim < 2:
        raise ValueError(f"rope: x needs shape (..., S, d), got {x.shape}")
    dim = x.shape[-1]
    if dim % 2 != 0:
        raise ValueError(f"rope: the last dim (d_k = {dim}) must be even, because RoPE rotates "
                         f"pairs of features; choose d_model / num_heads even")
    if not is_floating(x.dtype):
        raise TypeError(f"rope: x must be floating point, got dtype {x.dtype}")
    if int(offset) < 0:
        raise ValueError(f"rope: offset must be >= 0, got {offset}")
    xp = backend.get_array_module(x._data)
    cos, sin = rope_tables(xp, x.shape[-2], dim, int(offset), float(base), x.dtype)
    return Rope.apply(x, cos=cos, sin=sin)
