"""Summaries of a tensor's values over some dims: var, std, logsumexp and norm
(docs/derivations.md#var-and-std, #logsumexp, #norm).

``dim`` is an int, a tuple of ints or None (all dims), ``keepdim`` keeps the reduced dims
with size 1, as in PyTorch. N is the number of elements reduced into one output element.
"""
from __future__ import annotations

import math
import warnings
from typing import Any, Optional, Tuple

import numpy as np

from .. import backend
from ..autograd import Function
from ..tensor import Tensor
from ..precision import DtypeError
from .elementwise import _as_float, convert, half_as_float32
from .reduce import Dim, _axes, _check_not_empty, _expand_back
from ..amp.dispatch import cast_args
from ..precision import is_floating

__all__ = ["var", "std", "logsumexp", "norm"]


def _count(shape: Tuple[int, ...], axes: Tuple[int, ...]) -> int:
    return math.prod(shape[a] for a in axes)


def _centered(x: Any, axes: Tuple[int, ...], correction: float) -> Tuple[Any, Any, float]:
    """x - mean, the sum of squares of that, and the divisor max(N - correction, 0). For
    float32, all in float64 (the squares' sum stays float64; the caller rounds the result
    once), as torch's CPU kernel accumulates float32 in double: in float32 the rounded
    squares and mean made var and std 2 to 5 times torch's error (tests/test_probe43.py)."""
    n = _count(x.shape, axes)
    wide = x.dtype == np.float32
    xw = x.astype(np.float64) if wide else x
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        centered = xw - backend.accurate_sum(xw, axes, True) / n if n else xw
        squares = backend.accurate_sum(centered * centered, axes, True)
    return (centered.astype(np.float32) if wide else centered), squares, max(n - correction, 0)


class Var(Function):
    """out = sum_i (x_i - m)^2 / (N - c), m = mean of x, c = ``correction`` (1: Bessel's).

    d out / d x_j = 2 (x_j - m) / (N - c) - (2 / (N - c)) sum_i (x_i - m) / N; the last
    sum is 0 (deviations from the mean add up to nothing), so
        dx = g * 2 (x - m) / (N - c).
    """

    versions_checked = (0,)    # what torch saves: changed in place, backward raises

    def forward(self, x, axes: Tuple[int, ...], correction: float, keepdim: bool):
        centered, squares, dof = _centered(x, axes, correction)
        self.save_for_backward(centered, dof, axes, keepdim)
        with np.errstate(invalid="ignore", divide="ignore"):
            out = (squares / dof).astype(x.dtype, copy=False)   # N <= c: inf or NaN, as torch
        return out if keepdim else out.squeeze(axis=axes)

    def backward(self, grad):
        centered, dof, axes, keepdim = self.saved
        grad = _expand_back(grad, centered.shape, axes, keepdim)
        with np.errstate(invalid="ignore", divide="ignore"):
            return grad * centered * (2 / dof if dof else math.inf)


class Std(Function):
    """out = sqrt(var) = s.   By the chain rule, d s = d var / (2 s):
        dx = g * (x - m) / ((N - c) s),
    and 0 where s = 0 (all values equal: PyTorch's choice at the kink of the square root).
    """

    versions_checked = (0, -1)    # what torch saves: changed in place, backward raises

    def forward(self, x, axes: Tuple[int, ...], correction: float, keepdim: bool):
        xp = backend.get_array_module(x)
        centered, squares, dof = _centered(x, axes, correction)
        with np.errstate(invalid="ignore", divide="ignore"):
            out = xp.sqrt(squares / dof).astype(x.dtype, copy=False)
        self.save_for_backward(centered, out, dof, axes, keepdim)
        return out if keepdim else out.squeeze(axis=axes)

    def backward(self, grad):
        centered, out, dof, axes, keepdim = self.saved
        xp = backend.get_array_module(grad)
        grad = _expand_back(grad, centered.shape, axes, keepdim)
        with np.errstate(invalid="ignore", divide="ignore"):
            scale = xp.where(out == 0, 0, grad / (out * dof))
        return centered * scale


class LogSumExp(Function):
    """out = log sum_i exp(x_i) = m + log sum_i exp(x_i - m), m = max_i x_i (no overflow;
    an all -inf row keeps m = 0 and gives -inf).

    d out / d x_j = exp(x_j) / sum_i exp(x_i) = exp(x_j - out): the softmax. So
        dx = g * exp(x - out).
    Where out is infinite this is NaN, as in PyTorch (the function has no slope there).
    """

    versions_checked = (0, -1)    # what torch saves: changed in place, backward raises

    def forward(self, x, axes: Tuple[int, ...], keepdim: bool):
        xp = backend.get_array_module(x)
        if _count(x.shape, axes) == 0:          # the sum of no exponentials is 0: log 0
            out = xp.full(x.sum(axis=axes, keepdims=True).shape, -np.inf, dtype=x.dtype)
        else:
            m = x.max(axis=axes, keepdims=True)
            m = xp.where(xp.isfinite(m), m, 0)
            with np.errstate(divide="ignore"):
                total = backend.accurate_sum(xp.exp(x - m), axes, True)   # float64 terms
                out = xp.log(total) + m                  # (a float32 sum over dim 0 lost digits)
        self.save_for_backward(x, out, axes, keepdim)
        return out if keepdim else out.squeeze(axis=axes)

    def backward(self, grad):
        x, out, axes, keepdim = self.saved
        xp = backend.get_array_module(grad)
        with np.errstate(invalid="ignore"):
            return _expand_back(grad, x.shape, axes, keepdim) * xp.exp(x - out)


class Norm(Function):
    """The vector p-norm over ``axes`` (docs/derivations.md#norm), s = sign(x), N = out:

        p = 2:     N = sqrt(sum x^2),        dx = g x / N           (0 where N = 0)
        p = 1:     N = sum |x|,              dx = g s               (s = 0 at x = 0)
        p = inf:   N = max |x|,              dx = g s [|x| = N] / (number of ties)
        p = -inf:  N = min |x|,              likewise
        p = 0:     N = number of x != 0,     dx: none               (piecewise constant;
                                                                 torch gives no gradient)
        other p:   N = (sum |x|^p)^(1/p),    dx = g s |x|^(p-1) / N^(p-1)  (0 where x or N is 0)
    """

    versions_checked = (0, -1)    # what torch saves: changed in place, backward raises

    def forward(self, x, p: float, axes: Tuple[int, ...], keepdim: bool):
        xp = backend.get_array_module(x)
        a = xp.abs(x)
        if p == 2:
            out = xp.sqrt(backend.accurate_sum(x * x, axes, True))
        elif p == 1:
            out = a.sum(axis=axes, keepdims=True)
        elif math.isinf(p):
            out = (a.max if p > 0 else a.min)(axis=axes, keepdims=True)
        elif p == 0:
            out = (a != 0).sum(axis=axes, keepdims=True).astype(x.dtype)
        else:
            out = ((a ** p).sum(axis=axes, keepdims=True)) ** (1 / p)
        self.save_for_backward(x, out, p, axes, keepdim)
        return out if keepdim else out.squeeze(axis=axes)

    def backward(self, grad):
        x, out, p, axes, keepdim = self.saved
        xp = backend.get_array_module(grad)
        g = _expand_back(grad, x.shape, axes, keepdim)
        with np.errstate(invalid="ignore", divide="ignore"):
            if p == 2:
                return x * xp.where(out == 0, 0, g / out)
            if p == 1:
                return g * xp.sign(x)
            if math.isinf(p):       # torch's mask: the extremes and the NaNs, sign(NaN) = 0
                a = xp.abs(x)
                hit = (a == out) | (a != a)
                ties = hit.sum(axis=axes, keepdims=True).astype(x.dtype)
                sign = xp.where(a != a, 0, xp.sign(x)).astype(x.dtype)
                return sign * (g / ties * hit)
            if p == 0:              # no gradient at all, as torch's (x.grad stays None)
                return None
            a = xp.abs(x)
            slope = xp.where(a == 0, 0, xp.sign(x) * a ** (p - 1))
            return slope * xp.where(out == 0, 0, g / out ** (p - 1))


# ------------------------------------------------------------------ public functions
def _float_input(x: Tensor, op: str) -> None:
    if not is_floating(x.dtype):
        raise DtypeError(f"{op} works on floating-point tensors, got {x.dtype} (torch: "
                         f"RuntimeError, only floating point and complex dtypes); convert with "
                        f".float() first")


def _correction(unbiased: Optional[bool], correction: Optional[float], op: str) -> float:
    if unbiased is not None and correction is not None:
        raise ValueError(f"{op}: give either unbiased= (old name) or correction=, not both")
    if correction is not None:
        return float(correction)
    return 0.0 if unbiased is False else 1.0


def _moment(fn: type, op: str, x: Tensor, dim: Any, unbiased: Optional[bool], keepdim: bool,
            correction: Optional[float]) -> Tensor:
    if isinstance(dim, bool):                   # var(x, False): PyTorch's var(x, unbiased)
        dim, unbiased = None, dim
    _float_input(x, op)
    axes = _axes(dim, x.ndim, op)
    c = _correction(unbiased, correction, op)
    if _count(x.shape, axes) - c <= 0:
        warnings.warn(f"{op}(): degrees of freedom is <= 0. Correction should be strictly less "
                      f"than the reduction factor (input numel divided by output numel). "
                      f"(N = {_count(x.shape, axes)} values, correction = {c:g}: the result "
                      f"is inf or NaN, as in PyTorch)", UserWarning,
                      stacklevel=backend.user_stacklevel())
    out = fn.apply(half_as_float32(x), axes=axes, correction=c, keepdim=keepdim)
    return convert(out, dtype=x.dtype)          # float16 in, float16 out


def var(x: Tensor, dim: Dim = None, unbiased: Optional[bool] = None, keepdim: bool = False,
        *, correction: Optional[float] = None) -> Tensor:
    """Variance over ``dim``, dividing by N - correction (default 1, the unbiased estimate;
    ``unbiased=False`` or ``correction=0`` divides by N), as ``torch.var``."""
    return _moment(Var, "var", x, dim, unbiased, keepdim, correction)


def std(x: Tensor, dim: Dim = None, unbiased: Optional[bool] = None, keepdim: bool = False,
        *, correction: Optional[float] = None) -> Tensor:
    """Standard deviation, sqrt(var) with the same arguments (``torch.std``)."""
    return _moment(Std, "std", x, dim, unbiased, keepdim, correction)


def logsumexp(x: Tensor, dim: Dim, keepdim: bool = False) -> Tensor:
    """log(sum(exp(x))) over ``dim`` (required, as in PyTorch), without overflow."""
    x = _as_float(x)
    return LogSumExp.apply(x, axes=_axes(dim, x.ndim, "logsumexp"), keepdim=keepdim)


def norm(x: Tensor, p: Any = "fro", dim: Dim = None, keepdim: bool = False,
         dtype: Any = None) -> Tensor:
    """The vector p-norm of the elements over ``dim`` (all by default), as ``torch.norm``:
    p = "fro" or 2 (default), 1, inf, -inf, 0 or any other number; p = "nuc" is the nuclear
    norm of a matrix (ops/linalg_norms.py)."""
    if dtype is not None:
        raise TypeError("norm: dtype= is not supported; convert the input with .to(dtype)")
    _float_input(x, "norm")
    if p == "fro":
        p = 2
    if p == "nuc":                      # a matrix norm: sum of the singular values
        from .linalg_norms import nuclear_norm  # noqa: PLC0415 - built on this file's norm
        return nuclear_norm(x, dim, keepdim)
    if isinstance(p, (str, bool)) or not isinstance(p, (int, float, np.number)):
        raise ValueError(f"norm: p must be a number, 'fro' or 'nuc', got {p!r} (other matrix "
                         f"norms: tinyattn.linalg.matrix_norm)")
    axes = _axes(dim, x.ndim, "norm")
    if math.isinf(p):
        _check_not_empty(x, axes, f"norm with p={p}")
    x, = cast_args("norm", x)                        # float32 in CUDA autocast
    out = Norm.apply(half_as_float32(x), p=float(p), axes=axes, keepdim=keepdim)
    return convert(out, dtype=x.dtype)          # float16 in, float16 out
