"""The standard normal CDF Phi and density phi, and the exact GELU x Phi(x), in float32 on
NumPy without an erf (docs/derivations.md#gelu): Abramowitz & Stegun 7.1.26 rewritten so
each NumPy pass is one line, evaluated on blocks that stay in the CPU cache. Other dtypes
and devices take the exact erf. ``Gelu`` (elementwise.py) is the op that uses them.
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np

from .. import backend

__all__ = ["normal_cdf_and_pdf", "exact_gelu_by_blocks", "gelu_slope_by_blocks",
           "exact_gelu_and_slope_by_blocks"]

_INV_SQRT_2 = 1.0 / math.sqrt(2.0)    # Python floats: they never upcast float32
_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)
# Abramowitz & Stegun 7.1.26: erfc(z) ~ (a1 tau + a2 tau^2 + ... + a5 tau^5) exp(-z^2),
# tau = 1 / (1 + p z). At z = |x| / sqrt 2, with t = 1 / (|x| + K) and K = sqrt 2 / p, tau is
# K t, so the tail h = Phi(-|x|) = erfc(z) / 2 = (b1 t + ... + b5 t^5) exp(-x^2 / 2) with
# b_i = a_i K^i / 2: the same formula, in fewer NumPy passes (docs/derivations.md#gelu).
_AS_P = 0.3275911
_AS_A = (0.254829592, -0.284496736, 1.421413741, -1.453152027, 1.061405429)
_AS_K = math.sqrt(2.0) / _AS_P
_AS_B = tuple(0.5 * a * _AS_K ** (i + 1) for i, a in enumerate(_AS_A))
_EXP2_SCALE = -0.5 / math.log(2.0)   # exp(-x^2 / 2) = 2^(x^2 * _EXP2_SCALE): exp2 is faster
_TAIL_CAP = 20.0        # |x| is capped here: h is already 0 in float32, and inf * 0 is NaN
_GELU_BLOCK = 1 << 15   # elements per block: a few 128 KiB buffers stay in the L2 cache


def _normal_tail(x: Any, a: Any, e: Any, h: Any, cap: Any, tail: Any) -> None:
    """Into the buffers (each x's shape): a = min(|x|, _TAIL_CAP), e = exp(-x^2 / 2) and the
    tail h = Phi(-|x|), by A&S 7.1.26 as rewritten above (float32 NumPy arrays). ``cap`` is
    an array of _TAIL_CAP: NumPy's minimum takes one faster than a number. ``tail`` is
    scratch (the caller's output block, written later): no new array per block."""
    xp = backend.get_array_module(x)
    xp.abs(x, out=a)
    xp.minimum(a, cap, out=a)
    xp.square(a, out=e)
    e *= _EXP2_SCALE
    xp.exp2(e, out=e)                           # e = exp(-x^2 / 2)
    t = xp.add(a, _AS_K, out=h)
    xp.divide(1.0, t, out=t)                    # t = 1 / (|x| + K), in h's buffer for now
    tail = xp.multiply(t, _AS_B[-1], out=tail)
    for b in _AS_B[-2::-1]:                     # Horner: t (b1 + t (b2 + ... + t b5))
        tail += b
        tail *= t
    xp.multiply(tail, e, out=h)                 # h = Phi(-|x|): small where x < 0, no 1 - ...


def _exact_gelu_float32(x: Any, out: Any, a: Any, e: Any, h: Any, zeros: Any,
                        cap: Any) -> Any:
    """out = x Phi(x) = max(x, 0) - |x| Phi(-|x|) (Phi(x) = 1 - Phi(-x)): for x >= 0 that is
    x - x h, for x < 0 it is x h, each without cancellation. Leaves h = Phi(-|x|) and
    e = exp(-x^2 / 2) in their buffers, for the backward. ``zeros``: an array of 0 (faster
    in NumPy's maximum than the number)."""
    _normal_tail(x, a, e, h, cap, tail=out)
    xp = backend.get_array_module(x)
    xp.maximum(x, zeros, out=out)
    out -= xp.multiply(a, h, out=a)
    return out


def normal_cdf_and_pdf(x: Any) -> Any:
    """Phi(x) and phi(x) = exp(-x^2 / 2) / sqrt(2 pi): the standard normal CDF and density.

    Phi(x) = (1 + erf(x / sqrt 2)) / 2. NumPy has no erf, and SciPy's computes one element at
    a time (slower than twenty NumPy passes), so where ``backend.erf_is_slow`` (float32 NumPy
    arrays) the tail h = Phi(-|x|) comes from A&S 7.1.26 (``_normal_tail``), and
        Phi(x) = h for x < 0,  1 - h for x >= 0    (each side without cancellation).
    In float32 |error| <= 3.6e-7 (every finite float32 checked); in the left tail the
    relative error grows (4e-3 on [-6, -4], where Phi < 3.2e-5), see
    docs/derivations.md#gelu. Other dtypes and devices use the exact erf.
    """
    xp = backend.get_array_module(x)
    if not backend.erf_is_slow(x):
        pdf = xp.exp(x * x * -0.5)
        pdf *= _INV_SQRT_2PI
        return 0.5 * (1 + backend.erf(x * _INV_SQRT_2)), pdf
    _, cdf, pdf = exact_gelu_by_blocks(x, for_backward=True)
    return cdf, pdf


def _cdf_from_tail(x: Any, h: Any, out: Any) -> Any:
    """Phi(x) = h + [x >= 0] (1 - 2 h) from the tail h = Phi(-|x|), with products: NumPy's
    where is slow on a mixed condition."""
    cdf = backend.get_array_module(x).multiply(h, -2.0, out=out)
    cdf += 1.0
    cdf *= x >= 0
    cdf += h
    return cdf


def _slope_from_tail(x: Any, a: Any, e: Any, h: Any, out: Any) -> Any:
    """out = Phi(x) + x phi(x) from the tail h = Phi(-|x|) and e = exp(-x^2 / 2); ``a`` is
    scratch, and e becomes phi(x)."""
    slope = _cdf_from_tail(x, h, out=out)                      # Phi(x)
    np.multiply(e, _INV_SQRT_2PI, out=e)                       # phi(x)
    slope += np.multiply(x, e, out=a)                          # + x phi(x)
    return slope


def exact_gelu_by_blocks(x: Any, for_backward: bool = False) -> Any:
    """x Phi(x) for a float32 NumPy array, ``_GELU_BLOCK`` elements at a time, so each of
    the ~20 passes runs in the CPU cache (twice as fast as whole-array passes, measured);
    every element goes through the same operations as in one whole-array call.
    With ``for_backward``, returns (out, Phi(x), phi(x)), the last two for the backward."""
    flat = np.ravel(x)                          # a view when x is contiguous
    out = np.empty_like(flat)
    cdf, pdf = (np.empty_like(flat), np.empty_like(flat)) if for_backward else (None, None)
    size = min(_GELU_BLOCK, flat.size)
    a, e, h = np.empty(size, flat.dtype), np.empty(size, flat.dtype), np.empty(size, flat.dtype)
    zeros, cap = np.zeros_like(a), np.full_like(a, _TAIL_CAP)
    with np.errstate(over="ignore"):            # exp2 of a large negative number is 0
        for start in range(0, flat.size, _GELU_BLOCK):
            block = slice(start, start + _GELU_BLOCK)
            n = min(_GELU_BLOCK, flat.size - start)
            _exact_gelu_float32(flat[block], out[block], a[:n], e[:n], h[:n], zeros[:n],
                                cap[:n])
            if for_backward:
                _cdf_from_tail(flat[block], h[:n], out=cdf[block])
                np.multiply(e[:n], _INV_SQRT_2PI, out=pdf[block])
    if for_backward:
        return out.reshape(x.shape), cdf.reshape(x.shape), pdf.reshape(x.shape)
    return out.reshape(x.shape)


def gelu_slope_by_blocks(x: Any) -> Any:
    """d (x Phi(x)) / dx = Phi(x) + x phi(x) for a float32 NumPy array, into one new array,
    ``_GELU_BLOCK`` elements at a time: the backward recomputes it from x (what it saves, as
    torch's GELU does) instead of keeping Phi and phi from the forward, two arrays of x's
    size per GELU alive until the backward (docs/benchmarks.md). The same operations as
    ``normal_cdf_and_pdf`` per element, so the slope is the same to the last bit."""
    flat = np.ravel(x)
    slope = np.empty_like(flat)
    size = min(_GELU_BLOCK, flat.size)
    a, e, h = np.empty(size, flat.dtype), np.empty(size, flat.dtype), np.empty(size, flat.dtype)
    cap = np.full_like(a, _TAIL_CAP)
    with np.errstate(over="ignore"):
        for start in range(0, flat.size, _GELU_BLOCK):
            block = slice(start, start + _GELU_BLOCK)
            n = min(_GELU_BLOCK, flat.size - start)
            _normal_tail(flat[block], a[:n], e[:n], h[:n], cap[:n], tail=slope[block])
            _slope_from_tail(flat[block], a[:n], e[:n], h[:n], out=slope[block])
    return slope.reshape(x.shape)


def exact_gelu_and_slope_by_blocks(x: Any) -> Any:
    """(x Phi(x), Phi(x) + x phi(x)) for a float32 NumPy array, in one loop over blocks: the
    slope comes from the tail h and exponential e the output was just computed from, while
    they are in the cache, so the backward is one product, g * slope, instead of ~24 passes
    that recompute the tail from x. The forward of a recorded GELU saves this slope instead
    of x: one array of x's size either way. Each element goes through the same operations
    as in ``exact_gelu_by_blocks`` and ``gelu_slope_by_blocks``: the same bits."""
    flat = np.ravel(x)
    out, slope = np.empty_like(flat), np.empty_like(flat)
    size = min(_GELU_BLOCK, flat.size)
    a, e, h = np.empty(size, flat.dtype), np.empty(size, flat.dtype), np.empty(size, flat.dtype)
    zeros, cap = np.zeros_like(a), np.full_like(a, _TAIL_CAP)
    # invalid: the slope at x = +-inf is inf * 0 = NaN, for the backward to show, not the forward
    with np.errstate(over="ignore", invalid="ignore"):
        for start in range(0, flat.size, _GELU_BLOCK):
            block = slice(start, start + _GELU_BLOCK)
            n = min(_GELU_BLOCK, flat.size - start)
            _exact_gelu_float32(flat[block], out[block], a[:n], e[:n], h[:n], zeros[:n],
                                cap[:n])        # leaves h = Phi(-|x|), e = exp(-x^2 / 2)
            _slope_from_tail(flat[block], a[:n], e[:n], h[:n], out=slope[block])
    return out.reshape(x.shape), slope.reshape(x.shape)
