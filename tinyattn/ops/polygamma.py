"""The derivatives of log Gamma: ``torch.polygamma`` (psi^(n), n = 0 is digamma) and the
multivariate log-gamma ``torch.mvlgamma`` (docs/derivations.md#polygamma-and-mvlgamma).
"""
from __future__ import annotations

import math
import operator
from typing import Any

import numpy as np

from .. import backend
from ..autograd import Function, keep_versions
from ..precision import is_low_precision
from ..tensor import Tensor
from .elementwise import convert
from .special_functions import digamma, lgamma, trigamma_values, unary_in_float32

__all__ = ["polygamma", "mvlgamma", "polygamma_method", "mvlgamma_method"]


def _polygamma_values(n: int, x: Any) -> Any:
    """psi^(n)(x) for n >= 1: (-1)^(n+1) n! zeta(n + 1, x) (the Hurwitz zeta; SciPy's
    polygamma, as torch's for n >= 2). For n = 1 torch uses its own series (``_trigamma``):
    in float32 so does tinyattn; in float64, where the series is about 1e-9 off, tinyattn
    keeps SciPy's closer value, except at the poles x = 0, -1, -2, ..., where it gives
    torch's number (inf at 0, huge and finite below). For n >= 2, polygamma(n, +inf) is NaN
    as torch's (not the limit 0)."""
    if n == 1:
        return trigamma_values(x)
    xp = backend.get_array_module(x)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        if x.dtype == np.float32:
            values = _polygamma_float32(n, x)
        else:
            values = backend.special_module(x).polygamma(n, x)
        # torch's Hurwitz zeta gives NaN at x = +inf for n >= 2 (SciPy: the limit, +-0);
        # a program valid in torch must print what torch prints
        values = xp.where(xp.isposinf(x), xp.nan, values)
        return values.astype(x.dtype)


def _half_polygamma_values(n: int, x: Any, half: Any) -> Any:
    """psi^(n)(x), n >= 2, for float16/bfloat16 ``x`` (given here in float32) as torch's
    kernel rounds it: its Hurwitz zeta(n + 1, x) is returned in the half dtype, then
    multiplied in float32 by (-1)^(n+1) exp(lgamma(n + 1)) (n! in float32 arithmetic) and
    rounded to the half dtype again. (Rounded once instead, polygamma(3, -0.5) is 193.375 in
    float16 where torch gives 193.5: a quarter of all values differ in the last bit.)"""
    sign = 1.0 if n % 2 else -1.0
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        wide = _polygamma_values(n, x.astype(np.float64))
        zeta = (wide / (sign * math.factorial(n))).astype(half).astype(np.float32)
        factorial = np.float32(math.exp(np.float32(math.lgamma(n + 1))))   # expf(lgammaf)
        return (zeta * np.float32(sign * factorial)).astype(np.float32)   # array first: xp's


def _polygamma_float32(n: int, x: Any) -> Any:
    """psi^(n)(x), n >= 2, of a float32 array as torch's float32 kernel computes it:
    (-1)^(n+1) n! zeta(n + 1, x), with n! = exp(lgamma(n + 1)) rounded to float32, the Hurwitz
    zeta by Cephes's algorithm (the sum of (x + k)^-(n+1) up to k = 9 or so, then the
    Euler-Maclaurin tail), in float64 as SciPy's zeta, except that its first term, x^-(n+1), is
    a float32 power (powf); the float32 zeta times the float32 n!.

    Near a pole the first term is large and the others nearly cancel it, so its float32
    rounding is what torch's value carries (at x = -0.4995, n = 4: a relative 3e-6); tinyattn
    swaps SciPy's float64 first term for the float32 one: zeta + (powf - pow)."""
    xp = backend.get_array_module(x)
    order = float(n + 1)
    q = x.astype(np.float64)
    exact_first = q ** -order
    float32_first = xp.power(x, np.float32(-order)).astype(np.float64)
    zeta = backend.special_module(x).zeta(order, q)
    zeta = xp.where(xp.isfinite(exact_first), zeta + (float32_first - exact_first), zeta)
    factorial = np.float32(np.exp(np.float64(np.float32(math.lgamma(n + 1)))))
    sign = np.float32(1.0 if n % 2 else -1.0)
    return zeta.astype(np.float32) * (sign * factorial)      # the array's own product (xp)


class Polygamma(Function):
    """out = psi^(n)(x), the n-th derivative of digamma (n >= 1).
    dx = g * psi^(n+1)(x): the next one. ``half``: the float16/bfloat16 dtype x had before
    it was widened to float32 (torch rounds an intermediate to it, for n >= 2)."""

    def forward(self, x, n: int, half: Any = None):
        self.save_for_backward(x, n)
        if half is not None and n >= 2:
            return _half_polygamma_values(n, x, half)
        return _polygamma_values(n, x)

    def backward(self, grad):
        x, n = self.saved
        return grad * _polygamma_values(n + 1, x)


def _order(n: Any, op: str) -> int:
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)):
        raise TypeError(f"{op}(): argument 'n' (position 1) must be int, not "
                        f"{type(n).__name__}")
    if n < 0:
        raise RuntimeError("polygamma(n, x) does not support negative n.")
    return operator.index(n)


def polygamma(n: int, input: Tensor) -> Tensor:  # noqa: A002 - torch's names
    """``torch.polygamma(n, input)``: the n-th derivative of digamma, elementwise (n = 0:
    digamma itself). Integer and bool inputs give float32; float16 and bfloat16 are computed
    in float32 and rounded once, as torch."""
    n = _order(n, "polygamma")
    if n == 0:
        return digamma(input)
    if isinstance(input, Tensor) and is_low_precision(input.dtype) and n >= 2:
        return convert(Polygamma.apply(convert(input, dtype=np.float32), n=n,
                                       half=input.dtype), dtype=input.dtype)
    return unary_in_float32(Polygamma, input, n=n)


def polygamma_method(self: Tensor, n: int) -> Tensor:
    """``x.polygamma(n)``: ``torch.polygamma(n, x)``."""
    return polygamma(n, self)


def mvlgamma(input: Tensor, p: int) -> Tensor:  # noqa: A002 - torch's names
    """``torch.mvlgamma(input, p)`` (``torch.special.multigammaln``): the multivariate
    log-gamma of dimension p, sum_{i<p} lgamma(x - i/2) + p (p - 1)/4 log(pi) (inf where
    x <= (p - 1)/2, as torch 2.13). Composed of lgamma and sum, so dx = g sum_i psi(x - i/2)."""
    if isinstance(p, bool) or not isinstance(p, (int, np.integer)):
        raise TypeError(f"mvlgamma(): argument 'p' (position 2) must be int, not "
                        f"{type(p).__name__}")
    if p < 1:
        raise RuntimeError("p has to be greater than or equal to 1")
    if input.dtype.kind in "biu":
        input = input.float()
    xp = backend.get_array_module(input._data)
    offsets = Tensor._wrap(xp.arange(-p * 0.5 + 0.5, 0.5, 0.5).astype(input.dtype))  # (p,)
    terms = lgamma(input.unsqueeze(-1) + offsets)                  # (..., p)
    out = terms.sum(-1) + p * (p - 1) * math.log(math.pi) / 4
    return keep_versions(out, input)          # torch's backward keeps the input itself


def mvlgamma_method(self: Tensor, p: int) -> Tensor:
    """``x.mvlgamma(p)``: ``torch.mvlgamma(x, p)``."""
    return mvlgamma(self, p)
