"""GELU's tanh approximation and its slope over blocks of a flat array (docs/benchmarks.md).

The same operations, in the same order, as ``Gelu``'s plain expressions (ops/elementwise.py),
so the values are the same to the last bit (tests/test_tanh_gelu_blocks.py); what changes is
where they run: each block of BLOCK_VALUES values goes through the whole chain in one or two
scratch buffers that stay in the CPU cache, instead of nine (forward) or about twenty
(backward) passes over whole arrays, each into a fresh temporary.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from .row_blocks import BLOCK_VALUES, MIN_VALUES

__all__ = ["by_value_blocks", "tanh_gelu_by_blocks", "tanh_gelu_slope_times_grad_by_blocks"]


def by_value_blocks(*arrays: Any) -> bool:
    """Whether the block-wise path applies: C-contiguous NumPy float32/float64 arrays of one
    dtype and shape, at least MIN_VALUES values each."""
    first = arrays[0]
    return all(type(a) is np.ndarray and a.dtype in (np.float32, np.float64)
               and a.dtype == first.dtype and a.shape == first.shape and a.flags.c_contiguous
               and a.size >= max(MIN_VALUES, 1) for a in arrays)


def _inner_tanh(x: np.ndarray, t: np.ndarray, sqrt_2_over_pi: float, cubic: float) -> None:
    """t = tanh(sqrt(2/pi) (x + 0.044715 x^3)), as ``tanh(s * (x + c * x * x * x))``."""
    np.multiply(x, cubic, out=t)                # c x
    t *= x
    t *= x                                      # c x^3
    t += x
    t *= sqrt_2_over_pi
    np.tanh(t, out=t)


def tanh_gelu_by_blocks(x: np.ndarray, sqrt_2_over_pi: float, cubic: float) -> np.ndarray:
    """out = 0.5 x (1 + t), block by block (one scratch block for t)."""
    flat, result = x.reshape(-1), np.empty(x.shape, x.dtype)
    out = result.reshape(-1)
    scratch = np.empty(min(BLOCK_VALUES, flat.size), x.dtype)
    for start in range(0, flat.size, BLOCK_VALUES):
        xb, ob = flat[start:start + BLOCK_VALUES], out[start:start + BLOCK_VALUES]
        t = scratch[:xb.size]
        _inner_tanh(xb, t, sqrt_2_over_pi, cubic)
        t += 1.0                                # 1 + t
        np.multiply(xb, 0.5, out=ob)
        ob *= t                                 # 0.5 x (1 + t)
    return result


def tanh_gelu_slope_times_grad_by_blocks(grad: np.ndarray, x: np.ndarray,
                                         sqrt_2_over_pi: float, cubic: float) -> np.ndarray:
    """g (0.5 (1 + t) + 0.5 x (1 - t^2) du/dx), du/dx = s (1 + 3 c x^2), block by block."""
    flat_x, flat_g, result = x.reshape(-1), grad.reshape(-1), np.empty(x.shape, x.dtype)
    out = result.reshape(-1)
    size = min(BLOCK_VALUES, flat_x.size)
    t_all, b_all, w_all = (np.empty(size, x.dtype) for _ in range(3))
    for start in range(0, flat_x.size, BLOCK_VALUES):
        xb = flat_x[start:start + BLOCK_VALUES]
        t, b, w = t_all[:xb.size], b_all[:xb.size], w_all[:xb.size]
        _inner_tanh(xb, t, sqrt_2_over_pi, cubic)
        np.multiply(t, t, out=w)
        np.subtract(1.0, w, out=w)              # 1 - t^2
        np.multiply(xb, 0.5, out=b)
        b *= w                                  # 0.5 x (1 - t^2)
        np.multiply(xb, 3 * cubic, out=w)
        w *= xb
        w += 1.0
        w *= sqrt_2_over_pi                     # du/dx
        b *= w
        t += 1.0
        t *= 0.5                                # 0.5 (1 + t)
        t += b
        np.multiply(flat_g[start:start + BLOCK_VALUES], t, out=out[start:start + BLOCK_VALUES])
    return result
