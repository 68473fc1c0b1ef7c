"""Special functions a learner meets: erf, erfc, erfinv, lgamma, digamma, logit, i0, sinc, the
inverse hyperbolics, frac, and torch.special's i0e, i1, i1e, ndtr, ndtri, log_ndtr, erfcx,
entr (docs/derivations.md#special-functions).

Each output element depends on one input element, so every backward is ``g * f'(x)``
(docs/derivations.md#elementwise). Values come from SciPy's special functions on the CPU
(cupyx.scipy.special on CUDA: ``backend.special_module``). As PyTorch: integer and bool
inputs give float32; float16 and bfloat16 are computed in float32 and rounded once.
"""
from __future__ import annotations

import math
from typing import Any, Callable, Optional

import numpy as np

from .. import backend
from ..amp.dispatch import cast_args
from ..autograd import Function, name_node
from ..tensor import Tensor
from .elementwise import _as_float, convert

__all__ = ["erf", "erfc", "erfinv", "lgamma", "digamma", "logit", "i0", "sinc", "asinh",
           "acosh", "atanh", "frac", "i0e", "i1", "i1e", "ndtr", "ndtri", "log_ndtr",
           "erfcx", "entr", "deg2rad", "rad2deg", "unary_in_float32"]

_TWO_OVER_SQRT_PI = 2.0 / math.sqrt(math.pi)
_ONE_OVER_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)


def _sp(x: Any) -> Any:
    return backend.special_module(x)


class Erf(Function):
    """out = erf x = 2/sqrt(pi) int_0^x e^(-t^2) dt.   dx = g * 2/sqrt(pi) e^(-x^2)."""

    def forward(self, x):
        self.save_for_backward(x)
        return _sp(x).erf(x)

    def backward(self, grad):
        (x,) = self.saved
        return grad * (_TWO_OVER_SQRT_PI * backend.get_array_module(x).exp(-x * x))


class Erfc(Function):
    """out = erfc x = 1 - erf x.   dx = -g * 2/sqrt(pi) e^(-x^2)."""

    def forward(self, x):
        self.save_for_backward(x)
        return _sp(x).erfc(x)

    def backward(self, grad):
        (x,) = self.saved
        return grad * (-_TWO_OVER_SQRT_PI * backend.get_array_module(x).exp(-x * x))


class Erfinv(Function):
    """out = erfinv x (erf out = x).   Inverse function rule: d out/dx = 1 / erf'(out),
    so dx = g * sqrt(pi)/2 * e^(out^2) (out recomputed from the saved x, as PyTorch)."""

    def forward(self, x):
        self.save_for_backward(x)
        return _sp(x).erfinv(x)

    def backward(self, grad):
        (x,) = self.saved
        out = _sp(x).erfinv(x)
        return grad * (backend.get_array_module(out).exp(out * out) / _TWO_OVER_SQRT_PI)


class Lgamma(Function):
    """out = log |Gamma(x)|.   d/dx log Gamma = Gamma'/Gamma = digamma: dx = g * psi(x).
    At x = -inf, +inf as torch (|Gamma| grows without bound; SciPy's gammaln gives -inf)."""

    def forward(self, x):
        self.save_for_backward(x)
        out = _sp(x).gammaln(x)
        return backend.get_array_module(out).where(x == -np.inf, np.inf, out).astype(out.dtype)

    def backward(self, grad):
        (x,) = self.saved
        return grad * _digamma_values(x)


def _trigamma(x: Any) -> Any:
    """psi'(x) as torch computes it (aten's calc_trigamma): reflect x < 1/2 with
    psi'(1 - x) + psi'(x) = pi^2 / sin^2(pi x), shift x up six steps (psi'(x) = 1/x^2 +
    psi'(x + 1)), then the asymptotic series 1/x + 1/(2x^2) + 1/(6x^3) - 1/(30x^5) + ...
    At a non-positive integer sin(pi x) is a rounding error, not 0: a huge finite value, as
    torch's (SciPy gives inf)."""
    xp = backend.get_array_module(x)
    dtype = x.dtype
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        reflect = x < 0.5
        pi = dtype.type(math.pi)                # c10::pi<scalar_t>: pi rounded to the dtype,
        pi_pi = float(pi * pi)                  # pi x, pi pi in the dtype (Python numbers
        pi = float(pi)                          # with arrays: the array's dtype, NEP 50)
        sin_pi_x = xp.sin((x * pi).astype(np.float64)).astype(dtype)  # sin correctly
        # rounded, as glibc's sinf (NumPy's float32 sin is 1 ulp off)
        result = xp.where(reflect, -pi_pi / (sin_pi_x * sin_pi_x), 0.0).astype(dtype)
        x = xp.where(reflect, 1 - x, x)
        for _ in range(6):
            result = result + 1 / (x * x)
            x = x + 1
        ixx = 1 / (x * x)                        # every step in the dtype (float32 too)
        result = result + (1.0 + 1.0 / (2 * x) + ixx * (
            1 / 6 - ixx * (1 / 30 - ixx * (1 / 42)))) / x
        return xp.where(reflect, -result, result)


def trigamma_values(x: Any) -> Any:
    """psi'(x) = polygamma(1, x) as torch gives it: its own series in float32 (near a pole
    it loses digits: the result is torch's, not SciPy's); SciPy's in float64, except at the
    poles x = 0, -1, -2, ..., where torch's number (inf at 0, huge and finite below)."""
    xp = backend.get_array_module(x)
    if x.dtype == np.float32:
        return _trigamma(x).astype(x.dtype)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        out = backend.special_module(x).polygamma(1, x).astype(x.dtype)
        pole = (x <= 0) & (x == xp.floor(x))
        return xp.where(pole, _trigamma(x), out).astype(x.dtype)


def _digamma_values(x: Any) -> Any:
    """psi(x), with PyTorch's infinities at x = 0: -inf at +0, +inf at -0 (the limits from
    the right and the left; SciPy gives -inf at +0 and NaN at -0)."""
    xp = backend.get_array_module(x)
    return xp.where(x == 0, xp.copysign(np.inf, -x), _sp(x).psi(x)).astype(x.dtype)


class Digamma(Function):
    """out = psi(x) = d/dx log Gamma(x).   dx = g * psi'(x) = g * polygamma(1, x), torch's
    polygamma(1, x) (``trigamma_values``): at x = -1, -2, ... huge and finite, as torch's
    (its sin(pi x) is a rounding error there, not 0), not SciPy's inf."""

    def forward(self, x):
        self.save_for_backward(x)
        return _digamma_values(x)

    def backward(self, grad):
        (x,) = self.saved
        return grad * trigamma_values(x)


class Logit(Function):
    """out = log(z / (1 - z)), z = x clamped to [eps, 1 - eps] when eps is given.
    dz = 1 / (z (1 - z)); dx = g / (x (1 - x)) inside the clamp and 0 outside it (with no eps,
    NaN outside [0, 1], where the function is not defined), as PyTorch.

    In float16/bfloat16 (``half``: that dtype; the op itself runs in float32, amp/dispatch.py),
    as torch: 1 - z and the quotient are rounded to the half dtype before the log."""

    def forward(self, x, eps: Optional[float], half: Any = None):
        xp = backend.get_array_module(x)
        rounded = (lambda a: a) if half is None else (lambda a: a.astype(half).astype(x.dtype))
        z = x if eps is None else xp.clip(x, rounded(xp.asarray(eps, dtype=x.dtype)),
                                          rounded(1 - rounded(xp.asarray(eps, dtype=x.dtype))))
        self.save_for_backward(x, eps)
        with np.errstate(divide="ignore", invalid="ignore"):
            return xp.log(rounded(z / rounded(1 - z)))

    def backward(self, grad):
        x, eps = self.saved
        xp = backend.get_array_module(x)
        with np.errstate(divide="ignore", invalid="ignore"):
            slope = grad / (x * (1 - x))
            if eps is None:
                return xp.where((x < 0) | (x > 1), np.nan, slope)
            return xp.where((x < eps) | (x > 1 - eps), 0, slope)


class I0(Function):
    """out = I0(x), the modified Bessel function of order 0.   I0' = I1: dx = g * I1(x)."""

    def forward(self, x):
        self.save_for_backward(x)
        return _sp(x).i0(x)

    def backward(self, grad):
        (x,) = self.saved
        return grad * _sp(x).i1(x)


class I0e(Function):
    """out = e^-|x| I0(x).   dx = g * (I1e(x) - sign(x) I0e(x))  (product rule, I0' = I1)."""

    def forward(self, x):
        out = _sp(x).i0e(x)
        self.save_for_backward(x, out)
        return out

    def backward(self, grad):
        x, out = self.saved
        return grad * (_sp(x).i1e(x) - backend.get_array_module(x).sign(x) * out)


class I1(Function):
    """out = I1(x).   I1' = I0 - I1/x, which tends to 1/2 at x = 0: dx = g * that."""

    def forward(self, x):
        out = _sp(x).i1(x)
        self.save_for_backward(x, out)
        return out

    def backward(self, grad):
        x, out = self.saved
        xp = backend.get_array_module(x)
        with np.errstate(divide="ignore", invalid="ignore"):
            slope = xp.where(x == 0, 0.5, _sp(x).i0(x) - out / x)
        return grad * slope


class I1e(Function):
    """out = e^-|x| I1(x).   dx = g * (I0e(x) - out (sign(x) + 1/x)), 1/2 at x = 0."""

    def forward(self, x):
        out = _sp(x).i1e(x)
        self.save_for_backward(x, out)
        return out

    def backward(self, grad):
        x, out = self.saved
        xp = backend.get_array_module(x)
        with np.errstate(divide="ignore", invalid="ignore"):
            slope = xp.where(x == 0, 0.5, _sp(x).i0e(x) - out * (xp.sign(x) + 1 / x))
        return grad * slope


def _fma32(a: Any, b: Any, c: Any) -> Any:
    """a * b + c rounded once to float32 (a fused multiply-add of float32 numbers: their
    product is exact in float64)."""
    return (a.astype(np.float64) * b.astype(np.float64) + c).astype(np.float32)


def _erf_half_kernel(x: Any) -> Any:
    """erf of float32 numbers as torch's CPU kernel for float16/bfloat16 computes it, before
    the rounding to the half dtype: its vectorised float32 erf is Abramowitz and Stegun's
    7.1.26, erf|x| = 1 - t (p1 + t (p2 + t (p3 + t (p4 + t p5)))) e^(-x^2) with
    t = 1 / (1 + p |x|) (absolute error below 1.5e-7), Horner's steps as fused multiply-adds.
    Bit for bit torch 2.13's on every float16 and bfloat16 number; a correctly rounded erf
    differs from it at a few half numbers near a rounding tie (erf(-0.5552) in float16)."""
    xp = backend.get_array_module(x)
    f32 = np.float32
    t = 1.0 / _fma32(xp.full_like(x, 0.3275911), xp.abs(x), 1.0)   # (float32: NEP 50)
    r = _fma32(xp.full_like(t, 1.061405429), t, float(f32(-1.453152027)))
    for c in (1.421413741, -0.284496736, 0.254829592):
        r = _fma32(r, t, float(f32(c)))
    with np.errstate(under="ignore", over="ignore"):
        e = xp.exp(-(x * x).astype(np.float64)).astype(f32)
    return xp.copysign(_fma32(-e * t, r, 1.0), x)


class Ndtr(Function):
    """out = Phi(x) = erfc(-u) / 2 with u = x / sqrt 2.   dx = g * e^(-u^2) / sqrt(2 pi).
    Keeps u, not x, as torch's (1 + erf(x / sqrt 2)) / 2 graph does: x may change after.

    float16/bfloat16 (``half``: that dtype, x given in float32) follow torch's composition
    step by step, each step rounded to the half dtype: u = x * sqrt(1/2), e = erf(u) (torch's
    half erf kernel, ``_erf_half_kernel``), (1 + e) * 0.5."""

    def forward(self, x, half: Any = None):
        u = x * x.dtype.type(math.sqrt(0.5))
        if half is not None:
            def rounded(a):
                return a.astype(half).astype(x.dtype)
            u = rounded(u)
            self.save_for_backward(u)
            return rounded(rounded(1 + rounded(_erf_half_kernel(u))) * x.dtype.type(0.5))
        self.save_for_backward(u)
        return 0.5 * _sp(x).erfc(-u)

    def backward(self, grad):
        (u,) = self.saved
        return grad * (_ONE_OVER_SQRT_2PI * backend.get_array_module(u).exp(-u * u))


class Ndtri(Function):
    """out = Phi^-1(x).   Inverse rule: dx = g / Phi'(out) = g * sqrt(2 pi) e^(out^2 / 2)."""

    def forward(self, x):
        out = _sp(x).ndtri(x)
        self.save_for_backward(out)
        return out

    def backward(self, grad):
        (out,) = self.saved
        xp = backend.get_array_module(out)
        with np.errstate(over="ignore"):
            return grad * (xp.exp(0.5 * out * out) / _ONE_OVER_SQRT_2PI)


class LogNdtr(Function):
    """out = log Phi(x).   dx = g * Phi'(x) / Phi(x) = g * e^(-x^2/2 - out) / sqrt(2 pi)
    (written with out, so it stays finite far in the left tail where Phi underflows)."""

    def forward(self, x):
        out = _sp(x).log_ndtr(x)
        self.save_for_backward(x, out)
        return out

    def backward(self, grad):
        x, out = self.saved
        xp = backend.get_array_module(x)
        return grad * (_ONE_OVER_SQRT_2PI * xp.exp(-0.5 * x * x - out))


def _erfcx_float32(x: Any) -> Any:
    """erfcx of a float32 array as torch's float32 kernel computes it (S. G. Johnson's
    algorithm, which SciPy's float64 erfcx also is), with torch's float32 roundings:

    - 0 <= |x| <= 50: y = 400 / (4 + |x|) is rounded to float32, then a float64 Chebyshev fit
      in y gives erfcx at the x that the rounded y stands for, 400 / y - 4 (computed here with
      float64 erfcx at that x);
    - x > 50: the continued fraction (1/sqrt pi) (x^2 (x^2 + 4.5) + 2) / (x (x^2 (x^2 + 5) +
      3.75)), x^2 rounded to float32, the rest in float64; x > 5e7: (1/sqrt pi) / x in float32;
    - x < 0: erfcx(x) = 2 e^(x^2) - erfcx(-x), e^(x^2) of the float32 x^2, rounded to float32,
      the difference in float32 (2 e^(x^2) alone below -6.1, inf below -26.7).

    The float32 x^2 is what costs accuracy for negative x (a relative 6e-8 of x^2 = 80 is
    5e-6 of e^(x^2)); tinyattn keeps it, so the values are torch's."""
    xp = backend.get_array_module(x)
    f32, f64 = np.float32, np.float64
    with np.errstate(all="ignore"):
        # Python numbers with a float32 array compute in float32 (NEP 50), as torch's kernel
        y100 = 400.0 / (xp.abs(x) + 4.0)
        table = _sp(x).erfcx(400.0 / y100.astype(f64) - 4.0)
        xx32 = x * x
        xx = xx32.astype(f64)
        inv_sqrt_pi = float(f32(1.0 / math.sqrt(math.pi)))      # a float32 constant
        fraction = (xx * (xx + 4.5) + 2) * inv_sqrt_pi / (x.astype(f64) * (xx * (xx + 5) + 3.75))
        far = (inv_sqrt_pi / x).astype(f64)
        positive = xp.where(x > 5e7, far, xp.where(x > 50, fraction, table)).astype(f32)
        twice_exp = 2 * xp.exp(xx).astype(f32)
        negative = xp.where(x < -26.7, np.inf,
                            xp.where(x < -6.1, twice_exp, twice_exp - table.astype(f32)))
        out = xp.where(x < 0, negative, positive)
        return xp.where(xp.isnan(x), x, out).astype(f32)


class Erfcx(Function):
    """out = e^(x^2) erfc x.   Product rule: 2x e^(x^2) erfc x - e^(x^2) 2/sqrt(pi) e^(-x^2),
    so dx = g * (2 x out - 2/sqrt(pi)). float64 is SciPy's erfcx (Johnson's algorithm, as
    torch's); float32 follows torch's float32 roundings (``_erfcx_float32``)."""

    def forward(self, x):
        out = _erfcx_float32(x) if x.dtype == np.float32 else _sp(x).erfcx(x)
        self.save_for_backward(x, out)
        return out

    def backward(self, grad):
        x, out = self.saved
        with np.errstate(invalid="ignore"):
            return grad * (2 * x * out - _TWO_OVER_SQRT_PI)


class Entr(Function):
    """out = -x log x (0 at x = 0, -inf for x < 0).   dx = -g * (log x + 1), as PyTorch
    writes it (+inf at 0, NaN below)."""

    def forward(self, x):
        xp = backend.get_array_module(x)
        self.save_for_backward(x)
        with np.errstate(divide="ignore", invalid="ignore"):
            out = xp.where(x > 0, -x * xp.log(xp.where(x > 0, x, 1)), 0).astype(x.dtype)
        return xp.where(x < 0, -np.inf, xp.where(xp.isnan(x), np.nan, out)).astype(x.dtype)

    def backward(self, grad):
        (x,) = self.saved
        with np.errstate(divide="ignore", invalid="ignore"):
            return -grad * (backend.get_array_module(x).log(x) + 1)


class Sinc(Function):
    """out = sin(pi x) / (pi x), 1 at x = 0.   Quotient rule:
    dx = g * (pi x cos(pi x) - sin(pi x)) / (pi x^2), 0 at x = 0 (sinc is even, smooth)."""

    def forward(self, x):
        self.save_for_backward(x)
        return backend.get_array_module(x).sinc(x)

    def backward(self, grad):
        (x,) = self.saved
        xp = backend.get_array_module(x)
        safe = xp.where(x == 0, 1, x)
        px = math.pi * safe
        slope = (px * xp.cos(px) - xp.sin(px)) / (px * safe)
        return grad * xp.where(x == 0, 0, slope)


class Asinh(Function):
    """out = asinh x.   x = sinh y gives dx/dy = cosh y = sqrt(1 + x^2): dx = g / sqrt(x^2+1)."""

    def forward(self, x):
        self.save_for_backward(x)
        return backend.get_array_module(x).arcsinh(x)

    def backward(self, grad):
        (x,) = self.saved
        return grad / backend.get_array_module(x).sqrt(x * x + 1)


class Acosh(Function):
    """out = acosh x (x >= 1).   x = cosh y, dx/dy = sinh y = sqrt(x^2 - 1):
    dx = g / sqrt(x^2 - 1) (inf at 1, NaN below)."""

    def forward(self, x):
        self.save_for_backward(x)
        with np.errstate(invalid="ignore"):
            return backend.get_array_module(x).arccosh(x)

    def backward(self, grad):
        (x,) = self.saved
        with np.errstate(invalid="ignore", divide="ignore"):
            return grad / backend.get_array_module(x).sqrt(x * x - 1)


class Atanh(Function):
    """out = atanh x (|x| <= 1).   x = tanh y, dx/dy = 1 - tanh^2 y = 1 - x^2:
    dx = g / (1 - x^2)."""

    def forward(self, x):
        self.save_for_backward(x)
        with np.errstate(invalid="ignore", divide="ignore"):
            return backend.get_array_module(x).arctanh(x)

    def backward(self, grad):
        (x,) = self.saved
        with np.errstate(invalid="ignore", divide="ignore"):
            return grad / (1 - x * x)


class Frac(Function):
    """out = x - trunc(x).   trunc is piecewise constant (zero slope), so dx = g."""

    def forward(self, x):
        return x - backend.get_array_module(x).trunc(x)

    def backward(self, grad):
        return grad


class Scale(Function):
    """out = c x for a constant c (deg2rad: c = pi/180; rad2deg: c = 180/pi).   dx = g c."""

    def forward(self, x, factor: float):
        self.save_for_backward(factor)
        return x * x.dtype.type(factor)

    def backward(self, grad):
        (factor,) = self.saved
        return grad * grad.dtype.type(factor)


# ------------------------------------------------------------------ public functions
def _is_half(x: Tensor) -> bool:
    return x.dtype == np.float16 or x.dtype.name == "bfloat16"


def unary_in_float32(fn: type, x: Tensor, **kwargs: Any) -> Tensor:
    """``fn`` applied to x: integer/bool x as float32, float16/bfloat16 computed in float32
    and rounded once (as PyTorch's CPU kernels do), float32/float64 as they are."""
    x = _as_float(x)
    if not _is_half(x):
        return fn.apply(x, **kwargs)
    return convert(fn.apply(convert(x, dtype=np.float32), **kwargs), dtype=x.dtype)


def _unary(fn: type, name: str, doc: str) -> Callable[..., Tensor]:
    def op(input: Tensor) -> Tensor:  # noqa: A002 - PyTorch's name
        return unary_in_float32(fn, input)
    op.__name__ = op.__qualname__ = name
    op.__doc__ = doc
    return op


erf = _unary(Erf, "erf", "The error function, elementwise (``torch.erf``).")
erfc = _unary(Erfc, "erfc", "1 - erf(x), accurate where erf is near 1 (``torch.erfc``).")
lgamma = _unary(Lgamma, "lgamma", "log |Gamma(x)| (``torch.lgamma``).")
digamma = _unary(Digamma, "digamma", "psi(x) = d/dx lgamma(x); -inf at 0 (``torch.digamma``).")
i0 = _unary(I0, "i0", "The modified Bessel function I0 (``torch.i0``).")
sinc = _unary(Sinc, "sinc", "The normalised sinc, sin(pi x)/(pi x) (``torch.sinc``).")
asinh = _unary(Asinh, "asinh", "The inverse hyperbolic sine (``torch.asinh``).")
acosh = _unary(Acosh, "acosh", "The inverse hyperbolic cosine (``torch.acosh``).")
atanh = _unary(Atanh, "atanh", "The inverse hyperbolic tangent (``torch.atanh``).")
i0e = _unary(I0e, "i0e", "e^-|x| I0(x) (``torch.special.i0e``).")
i1 = _unary(I1, "i1", "The modified Bessel function I1 (``torch.special.i1``).")
i1e = _unary(I1e, "i1e", "e^-|x| I1(x) (``torch.special.i1e``).")
log_ndtr = _unary(LogNdtr, "log_ndtr", "log of the normal CDF (``torch.special.log_ndtr``).")
erfcx = _unary(Erfcx, "erfcx", "The scaled erfc, e^(x^2) erfc(x) (``torch.special.erfcx``).")
entr = _unary(Entr, "entr", "-x log x, elementwise (``torch.special.entr``).")


def erfinv(input: Tensor) -> Tensor:  # noqa: A002 - PyTorch's name
    """The inverse error function on [-1, 1] (``torch.erfinv``); float32 in CUDA autocast,
    as torch's (the half-to-float32 round trip below would otherwise hide the cast)."""
    x, = cast_args("erfinv", input)
    return unary_in_float32(Erfinv, x)


def ndtri(input: Tensor) -> Tensor:  # noqa: A002 - PyTorch's name
    """The inverse of the standard normal CDF (``torch.special.ndtri``). torch's CPU has no
    float16/bfloat16 kernel for ndtri, log_ndtr and erfcx; tinyattn computes them in float32
    and rounds once (a strict extension, docs/pytorch.md)."""
    return unary_in_float32(Ndtri, input)


def ndtr(input: Tensor) -> Tensor:  # noqa: A002 - PyTorch's name
    """The standard normal CDF, Phi(x) = erfc(-x / sqrt 2) / 2 (``torch.special.ndtr``); in
    float16/bfloat16 torch's (1 + erf(x / sqrt 2)) / 2 with each step rounded (``Ndtr``)."""
    x = _as_float(input)
    return unary_in_float32(Ndtr, x, half=x.dtype if _is_half(x) else None)


def logit(input: Tensor, eps: Optional[float] = None) -> Tensor:  # noqa: A002
    """log(x / (1 - x)), with x clamped to [eps, 1 - eps] when ``eps`` is given
    (``torch.logit``)."""
    x = _as_float(input)
    return Logit.apply(x, eps=None if eps is None else float(eps),
                       half=x.dtype if _is_half(x) else None)


def frac(input: Tensor) -> Tensor:  # noqa: A002 - PyTorch's name
    """x - trunc(x), keeping the sign of x (``torch.frac``); floating tensors only."""
    if input.dtype.kind in "biu":
        raise NotImplementedError(f'"frac" not implemented for {input.dtype.name!r} (as in '
                                  f"torch): the fractional part of an integer is 0; use a "
                                  f"floating tensor")
    return Frac.apply(input)


def deg2rad(input: Tensor) -> Tensor:  # noqa: A002 - PyTorch's name
    """Degrees to radians, x * pi / 180 (``torch.deg2rad``)."""
    return name_node(_scaled(input, math.pi / 180.0, "deg2rad"), "Deg2RadBackward0")


def rad2deg(input: Tensor) -> Tensor:  # noqa: A002 - PyTorch's name
    """Radians to degrees, x * 180 / pi (``torch.rad2deg``)."""
    return name_node(_scaled(input, 180.0 / math.pi, "rad2deg"), "Rad2DegBackward0")


def _scaled(x: Tensor, factor: float, name: str) -> Tensor:
    return unary_in_float32(Scale, x, factor=factor)
