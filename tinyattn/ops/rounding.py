"""Pointwise ops PyTorch users reach for next: square, reciprocal, log1p, expm1, the step
functions sign, floor, ceil, round and trunc (zero gradient, as in PyTorch), the tests isnan,
isinf and isfinite, and nan_to_num (docs/derivations.md#rounding-and-other-pointwise-ops).

As in pointwise.py every backward is ``g * f'(x)``. dtypes follow PyTorch: square, sign and
the step functions keep an integer tensor's dtype; reciprocal, log1p and expm1 turn an integer
tensor into float32; the tests give bool tensors.
"""
from __future__ import annotations

from typing import Any, Optional

import numpy as np

from .. import backend
from ..autograd import Function, keep_versions, name_node
from ..tensor import Tensor
from .elementwise import _as_float, complex_product
from ..precision import DtypeNotImplementedError, finfo, is_floating

__all__ = ["square", "reciprocal", "log1p", "expm1", "sign", "sgn", "floor", "ceil", "round",
           "trunc", "isnan", "isinf", "isfinite", "nan_to_num", "isposinf", "isneginf"]


class Square(Function):
    """out = x^2.   dx = g * 2x (complex x: g * conj(2x), torch's convention for a
    holomorphic op, docs/derivations.md#complex-numbers). A complex x is multiplied as
    torch's vectorised loop multiplies it (``complex_product``: no fused multiply-add)."""

    def forward(self, x):
        self.save_for_backward(x)
        return complex_product(x, x) if x.dtype.kind == "c" else x * x

    def backward(self, grad):
        (x,) = self.saved
        return grad * (2 * x).conj() if x.dtype.kind == "c" else grad * (2 * x)


class Reciprocal(Function):
    """out = 1/x.   d(x^-1)/dx = -x^-2 = -out^2, so dx = -g * out^2 (the output is saved;
    complex x: -g * conj(out^2))."""

    def forward(self, x):
        with np.errstate(divide="ignore"):          # 1/0 = inf, as PyTorch
            out = 1 / x
        self.save_for_backward(out)
        return out

    def backward(self, grad):
        (out,) = self.saved
        if out.dtype.kind == "c":                   # g * conj(-out^2) (holomorphic)
            return -grad * (out * out).conj()
        return -grad * out * out


def _rounded_once(fn: str, x: Any) -> Any:
    """``np.log1p``/``np.expm1`` of x computed one precision up and rounded once: float32 in
    float64, float64 in the CPU's extended precision (NumPy's longdouble, where it is wider).
    The C library's own results are one unit in the last place off for some inputs on some
    CPUs (log1p(1.7) = 0.9932517730102834 and expm1(1.7) = 4.473947391727199 in float64 here,
    where torch and the correctly rounded values are ...833 and 4.4739473917272; expm1(1) in
    float32); rounded once from the wider result they are correctly rounded in all but
    extremely rare cases. CuPy's arrays (no extended precision) are computed as they are."""
    xp = backend.get_array_module(x)
    if x.dtype == np.float32:
        return getattr(xp, fn)(x.astype(np.float64)).astype(np.float32)
    if x.dtype == np.float64 and xp is np and np.finfo(np.longdouble).nmant > 52:
        return getattr(np, fn)(x.astype(np.longdouble)).astype(np.float64)
    return getattr(xp, fn)(x)


class Log1p(Function):
    """out = log(1 + x), accurate for tiny x (where 1 + x rounds to 1).   dx = g / (1 + x).
    Computed one precision up and rounded once (``_rounded_once``), as torch's are rounded."""

    def forward(self, x):
        self.save_for_backward(x)
        with np.errstate(divide="ignore", invalid="ignore"):   # -inf at -1, NaN below
            return _rounded_once("log1p", x)

    def backward(self, grad):
        (x,) = self.saved
        with np.errstate(divide="ignore"):
            return grad / (1 + x)


class Expm1(Function):
    """out = e^x - 1, accurate for tiny x.   d(e^x - 1)/dx = e^x = out + 1: dx = g * (out + 1).

    Computed one precision up and rounded once (``_rounded_once``): NumPy's float32 expm1 is
    off by one unit in the last place on some CPUs (expm1(1) = 1.7182817 where torch and the
    correctly rounded value are 1.7182819; 7.7% of a million normal draws differed from torch,
    0.1% once rounded from float64)."""

    def forward(self, x):
        with np.errstate(over="ignore"):
            out = _rounded_once("expm1", x)
        self.save_for_backward(out)
        return out

    def backward(self, grad):
        (out,) = self.saved
        return grad * (out + 1)


class Step(Function):
    """sign, floor, ceil, round, trunc: piecewise constant, so f'(x) = 0 wherever it exists
    (at the jumps there is none; PyTorch uses 0 there too).   dx = 0 * g.

    The output still joins the graph, as in PyTorch (``floor(x).requires_grad`` is True when
    x's is), so a loss built on it backpropagates zeros instead of raising."""

    def forward(self, x, fn: Any):
        return fn(x)

    def backward(self, grad):
        return backend.get_array_module(grad).zeros_like(grad)


class NanToNum(Function):
    """out = x where x is finite, else the replacement (a constant).
    dx = g where x is finite, 0 where it was replaced (as PyTorch: ``grad * isfinite(x)``)."""

    versions_checked = (0,)     # what torch saves: changed in place, backward raises

    def forward(self, x, nan: float, posinf: float, neginf: float):
        xp = backend.get_array_module(x)
        self.save_for_backward(xp.isfinite(x))
        return xp.nan_to_num(x, nan=nan, posinf=posinf, neginf=neginf)

    def backward(self, grad):
        (finite,) = self.saved
        return grad * finite


# ------------------------------------------------------------------ public functions
def square(input: Tensor) -> Tensor:  # noqa: A002 - PyTorch's name
    """x * x; integer tensors stay integer (bool gives int64), as in PyTorch."""
    if input.dtype == np.bool_:
        input = Tensor._wrap(input._data.astype(np.int64))
    return Square.apply(input)


def reciprocal(input: Tensor) -> Tensor:  # noqa: A002
    """1 / x (inf at 0); integer and bool tensors give float32, as in PyTorch."""
    return Reciprocal.apply(_as_float(input))


def log1p(input: Tensor) -> Tensor:  # noqa: A002
    """log(1 + x), exact for small x; integer tensors give float32."""
    return Log1p.apply(_as_float(input))


def expm1(input: Tensor) -> Tensor:  # noqa: A002
    """exp(x) - 1, exact for small x; integer tensors give float32."""
    return Expm1.apply(_as_float(input))


def _sign(x: Any) -> Any:
    """NumPy's sign, with sign(NaN) = 0 as PyTorch's (NumPy gives NaN)."""
    xp = backend.get_array_module(x)
    if x.dtype == np.bool_:
        return x.copy()
    out = xp.sign(x)
    return xp.nan_to_num(out, nan=0.0) if is_floating(out.dtype) else out


def sign(input: Tensor) -> Tensor:  # noqa: A002
    """-1, 0 or +1 by the sign of each element (0 for NaN and for -0.0, as PyTorch); the
    gradient is 0. An integer tensor stays integer, a bool tensor stays bool."""
    return name_node(Step.apply(input, fn=_sign), "SignBackward0")


def sgn(input: Tensor) -> Tensor:  # noqa: A002
    """``torch.sgn``: ``sign`` for real tensors (tinyattn has no complex ones). torch's sgn
    keeps its input and result for backward (its formula serves complex numbers), sign keeps
    nothing: a write to either after sgn makes backward raise, as there."""
    out = name_node(sign(input), "SgnBackward0")
    return keep_versions(out, input, out)


def _step(name: str, input: Tensor, fn: Any, node: str = "") -> Tensor:
    if input.dtype == np.bool_:
        raise DtypeNotImplementedError(
            f"\"{name}\" not implemented for 'Bool' (as torch): convert first "
                        f"with .float() or .long()")
    if input.dtype.kind in "iu":
        return Tensor._wrap(input._data.copy())       # integers are already whole
    return name_node(Step.apply(input, fn=fn), node or f"{name.capitalize()}Backward0")


def floor(input: Tensor) -> Tensor:  # noqa: A002
    """The largest whole number <= x, elementwise; zero gradient. Integer tensors are copied."""
    return _step("floor", input, lambda x: backend.get_array_module(x).floor(x))


def ceil(input: Tensor) -> Tensor:  # noqa: A002
    """The smallest whole number >= x, elementwise; zero gradient."""
    return _step("ceil", input, lambda x: backend.get_array_module(x).ceil(x))


def trunc(input: Tensor) -> Tensor:  # noqa: A002
    """x with its fractional part dropped (towards 0), elementwise; zero gradient."""
    return _step("trunc", input, lambda x: backend.get_array_module(x).trunc(x))


def round(input: Tensor, *, decimals: Any = None) -> Tensor:  # noqa: A001
    """Round to ``decimals`` places, halves to even (0.5 -> 0, 1.5 -> 2, 2.5 -> 2), as
    ``torch.round``; with decimals, x * 10^d is rounded and divided back (so 2.675 gives
    2.67 or 2.68 as its binary value falls, as in PyTorch). Zero gradient."""
    if decimals is None:            # torch's round(x) (RoundBackward0); decimals=0 given is
        return _step("round", input, lambda x: backend.get_array_module(x).rint(x))
    if isinstance(decimals, bool) or not isinstance(decimals, (int, np.integer)):
        raise TypeError(f"round: decimals must be an int, got {decimals!r}")
    decimals = int(decimals)
    if decimals != 0 and input.dtype.kind in "biu":
        raise DtypeNotImplementedError(f"round: decimals={decimals} is not supported for {input.dtype} "
                        f"tensors (as in PyTorch); convert with .float() first")
    if decimals == 0:               # round.decimals (RoundBackward1)
        return _step("round", input, lambda x: backend.get_array_module(x).rint(x),
                     "RoundBackward1")
    scale = 10.0 ** decimals

    def rounded(x: Any) -> Any:
        xp = backend.get_array_module(x)
        with np.errstate(over="ignore", invalid="ignore"):
            return (xp.rint(x * x.dtype.type(scale)) / x.dtype.type(scale)).astype(x.dtype)
    return _step("round", input, rounded, "RoundBackward1")   # torch: round.decimals


def _test(name: str, input: Tensor, test: str) -> Tensor:
    if not isinstance(input, Tensor):
        raise TypeError(f"{name}: expected a Tensor, got {type(input).__name__}")
    xp = backend.get_array_module(input._data)
    return Tensor._wrap(xp.asarray(getattr(xp, test)(input._data)))


def signbit(input: Tensor) -> Tensor:  # noqa: A002
    """True where x's sign bit is set: -0.0, negative numbers, -inf and a NaN with its sign
    bit set (a bool tensor, as torch.signbit; False for unsigned integers)."""
    if not isinstance(input, Tensor):
        raise TypeError(f"signbit: expected a Tensor, got {type(input).__name__}")
    xp = backend.get_array_module(input._data)
    data = input._data
    if data.dtype.kind in "ub":
        return Tensor._wrap(xp.zeros(data.shape, dtype=bool))
    if data.dtype.kind == "i":
        return Tensor._wrap(xp.asarray(data < 0))
    return Tensor._wrap(xp.asarray(xp.signbit(data.astype(np.float32)
                                              if data.dtype.itemsize < 4 else data)))


def isnan(input: Tensor) -> Tensor:  # noqa: A002
    """True where x is NaN (a bool tensor; always False for integer tensors)."""
    return _test("isnan", input, "isnan")


def isinf(input: Tensor) -> Tensor:  # noqa: A002
    """True where x is +inf or -inf."""
    return _test("isinf", input, "isinf")


def isposinf(input: Tensor) -> Tensor:  # noqa: A002
    """True where x is +inf."""
    return _test("isposinf", input, "isposinf")


def isneginf(input: Tensor) -> Tensor:  # noqa: A002
    """True where x is -inf."""
    return _test("isneginf", input, "isneginf")


def isfinite(input: Tensor) -> Tensor:  # noqa: A002
    """True where x is neither NaN nor +-inf."""
    return _test("isfinite", input, "isfinite")


def nan_to_num(input: Tensor, nan: float = 0.0, posinf: Optional[float] = None,  # noqa: A002
               neginf: Optional[float] = None) -> Tensor:
    """NaN -> ``nan``, +inf -> ``posinf``, -inf -> ``neginf`` (by default the largest and
    lowest finite values of the dtype), as ``torch.nan_to_num``. The gradient passes where x
    was finite and is 0 where a value was replaced. Integer tensors are copied."""
    # torch's parser reads nan/posinf/neginf as floats: a real number (bool included) or a
    # 0-d real tensor; a complex number or a tensor of more elements is a TypeError, checked
    # before anything else (also for an integer input, which is then copied)
    given = {"nan": nan, "posinf": posinf, "neginf": neginf}
    for name, value in given.items():
        where_ = " (position 2)" if name == "nan" else ""
        if isinstance(value, Tensor):
            if value.ndim != 0 or np.dtype(value.dtype).kind == "c":
                raise TypeError(f"nan_to_num(): argument '{name}'{where_} must be float, not "
                                f"Tensor (as torch); pass a number, e.g. {name}=t.item()")
            given[name] = float(value.item())
        elif value is not None and not isinstance(value, (bool, int, float, np.integer,
                                                          np.floating, np.bool_)):
            raise TypeError(f"nan_to_num(): argument '{name}'{where_} must be float, not "
                            f"{type(value).__name__} (as torch)")
    nan, posinf, neginf = given["nan"], given["posinf"], given["neginf"]
    if input.dtype.kind in "biu":
        return Tensor._wrap(input._data.copy())
    info = finfo(input.dtype)          # torch's fields; also knows bfloat16
    values = {"nan": nan, "posinf": info.max if posinf is None else posinf,
              "neginf": info.min if neginf is None else neginf}
    return NanToNum.apply(input, **{k: float(v) for k, v in values.items()})
