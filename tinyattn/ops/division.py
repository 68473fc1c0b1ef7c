"""Division with a whole quotient: ``a // b`` (floor_divide), ``a % b`` (remainder, the sign
of b, as Python's and PyTorch's %), ``fmod`` (the sign of a, as C's) and ``div`` with
``rounding_mode="floor"`` or ``"trunc"`` (docs/derivations.md#remainder-fmod-and-floor-divide).

With q = a / b:  remainder(a, b) = a - b floor(q),   fmod(a, b) = a - b trunc(q).
floor and trunc are piecewise constant, so away from the jumps
    d remainder / da = 1,   d remainder / db = -floor(q);   fmod: 1 and -trunc(q).
floor_divide(a, b) = floor(q) and trunc_divide(a, b) = trunc(q) are piecewise constant: their
gradient is 0 wherever it exists, like floor's (PyTorch passes zeros for div(rounding_mode=)
and raises on floor_divide's backward; tinyattn passes the zeros for both, as for floor).
Integer tensors stay integers and refuse a zero divisor, as PyTorch does (NumPy would
return 0 with a warning).
"""
from __future__ import annotations

from typing import Any

import numpy as np

from .. import backend
from ..autograd import Function, name_node, unbroadcast
from ..promotion import result_type
from ..tensor import Tensor
from ..precision import DtypeNotImplementedError
from .elementwise import _binary, div
from ..precision import is_floating

__all__ = ["remainder", "fmod", "floor_divide", "divide", "IntegerDivisionByZero"]


class Remainder(Function):
    """out = a - b floor(a / b).   da = g,  db = -g floor(a / b)."""

    versions_checked = (0, 1)   # what torch saves: changed in place, backward raises

    def forward(self, a, b):
        xp = backend.get_array_module(a)
        with np.errstate(divide="ignore", invalid="ignore"):
            quotient = xp.floor_divide(a, b)
            self.save_for_backward(a.shape, b.shape, quotient)
            out = xp.remainder(a, b)
        if out.dtype.kind == "f" or out.dtype.name == "bfloat16":
            # A zero takes the sign of a, as torch's fmod-then-adjust (NumPy gives b's:
            # 1.0 % -1.0 printed -0. where torch prints 0.).  a * 0 is a zero of a's sign.
            out = xp.where(out == 0, a * 0, out)
        return out

    def backward(self, grad):
        a_shape, b_shape, quotient = self.saved
        return unbroadcast(grad, a_shape), unbroadcast(-grad * quotient, b_shape)


class Fmod(Function):
    """out = a - b trunc(a / b).   da = g,  db = -g trunc(a / b)."""

    versions_checked = (0, 1)   # what torch saves: changed in place, backward raises

    def forward(self, a, b):
        xp = backend.get_array_module(a)
        with np.errstate(divide="ignore", invalid="ignore"):
            quotient = xp.trunc(a / b) if is_floating(a.dtype) else None
            self.save_for_backward(a.shape, b.shape, quotient)
            return xp.fmod(a, b)

    def backward(self, grad):
        a_shape, b_shape, quotient = self.saved
        return unbroadcast(grad, a_shape), unbroadcast(-grad * quotient, b_shape)


def _half_floor_divide(xp: Any, a: Any, b: Any) -> Any:
    """floor(a / b) for float16/bfloat16 arrays as torch's CPU kernel computes it: Python's
    floor division (q = (a - fmod(a, b)) / b, one less where fmod's sign differs from b's,
    then floor, rounded up past .5) with every step rounded to the half dtype. NumPy's
    floor_divide on float16 computes in float32: about 1% of bfloat16 quotients differ."""
    dtype = a.dtype
    one = xp.asarray(1, dtype=dtype)
    mod = xp.fmod(a, b).astype(dtype)
    quotient = ((a - mod).astype(dtype) / b).astype(dtype)
    quotient = xp.where((mod != 0) & ((b < 0) != (mod < 0)), (quotient - one).astype(dtype),
                        quotient)
    floor = xp.floor(quotient).astype(dtype)
    floor = xp.where((quotient - floor).astype(dtype) > 0.5, (floor + one).astype(dtype), floor)
    signed_zero = xp.copysign(xp.zeros((), dtype=dtype), (a / b).astype(dtype))
    floor = xp.where(quotient == 0, signed_zero, floor)
    return xp.where(b == 0, (a / b).astype(dtype), floor).astype(dtype)   # +-inf, NaN


class FloorDivide(Function):
    """out = floor(a / b).   da = db = 0 (a step function; see the module docstring).
    Half dtypes round at each step, as torch's kernel (``_half_floor_divide``)."""

    computes_in_half = True

    def forward(self, a, b):
        self.save_for_backward(a, b)        # for their shapes; and what torch's div saves
        xp = backend.get_array_module(a)
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            if a.dtype == b.dtype and a.dtype.itemsize == 2 and is_floating(a.dtype):
                return _half_floor_divide(xp, a, b)
            return xp.floor_divide(a, b)

    def backward(self, grad):
        a, b = self.saved
        xp = backend.get_array_module(grad)
        return xp.zeros(a.shape, grad.dtype), xp.zeros(b.shape, grad.dtype)


class TruncDivide(Function):
    """out = trunc(a / b), rounding toward 0.   da = db = 0 (a step function). a / b is
    rounded to a half dtype before trunc, as torch's kernel (float32's trunc differs)."""

    computes_in_half = True

    def forward(self, a, b):
        self.save_for_backward(a, b)        # for their shapes; and what torch's div saves
        xp = backend.get_array_module(a)
        with np.errstate(divide="ignore", invalid="ignore"):
            if is_floating(a.dtype) or is_floating(b.dtype):
                dtype = a.dtype if is_floating(a.dtype) else b.dtype
                return xp.trunc(a / b).astype(dtype, copy=False)
            return (a - xp.fmod(a, b)) // b      # exact for integers: a - fmod is b n

    def backward(self, grad):
        a, b = self.saved
        xp = backend.get_array_module(grad)
        return xp.zeros(a.shape, grad.dtype), xp.zeros(b.shape, grad.dtype)


class IntegerDivisionByZero(RuntimeError, ZeroDivisionError):
    """PyTorch raises a RuntimeError here; Python code expects a ZeroDivisionError: both
    catch it."""


def _whole_division(fn: type, op: str, a: Any, b: Any) -> Tensor:
    if not isinstance(a, Tensor) and not isinstance(b, Tensor):
        if fn in (FloorDivide, TruncDivide):       # torch.floor_divide(7, 2) is tensor(3)
            a = Tensor._wrap(np.asarray(a, dtype=result_type(a, b)))
        else:
            raise TypeError(f"{op}(): received two numbers ({a!r}, {b!r}); one of them must "
                            f"be a Tensor, as in torch")
    if result_type(a, b) == np.bool_:        # two bool tensors, or one with a Python bool
        raise DtypeNotImplementedError(f"{op}: both operands are bool; convert one "
                                       f"with .long() (as "
                        f"PyTorch, which has no {op} for bool)")
    out_divisor = b._data if isinstance(b, Tensor) else np.asarray(b)
    dividend_int = (a.dtype.kind in "iub") if isinstance(a, Tensor) else isinstance(a, int)
    divisor_int = out_divisor.dtype.kind in "iub"
    if dividend_int and divisor_int and bool((out_divisor == 0).any()):
        raise IntegerDivisionByZero(f"{op}: integer division by zero (the divisor holds a 0); "
                                f"PyTorch refuses it too. Use float tensors (x.float()) to get "
                                f"inf/NaN instead")
    if fn in (FloorDivide, TruncDivide) and isinstance(a, Tensor) and _is_half(a.dtype) \
            and isinstance(b, (int, float)) and not isinstance(b, bool):
        # torch divides a half tensor by a Python number in float32 (the number is not
        # rounded to the half dtype) and rounds the quotient once
        return name_node(_binary(fn, op, a.float(), b).to(a.dtype), _node_name(fn, op, a, b))
    return name_node(_binary(fn, op, a, b), _node_name(fn, op, a, b))


def _node_name(fn: type, op: str, a: Any, b: Any) -> str:
    """torch's node: div(rounding_mode=) is div.Tensor_mode (DivBackward2); remainder and
    fmod of a tensor divisor are their .Tensor overloads (...Backward1), of a number the
    .Scalar ones (...Backward0); floor_divide, and remainder of a number by a tensor, have no
    derivative in torch (NotImplemented; tinyattn passes the zero gradient, docs/pytorch.md)."""
    if op == "div":
        return "DivBackward2"
    if fn is Remainder or fn is Fmod:
        if not isinstance(a, Tensor):
            return "torch::autograd::NotImplemented"
        return f"{fn.__name__}Backward{1 if isinstance(b, Tensor) else 0}"
    return "torch::autograd::NotImplemented"


def _is_half(dtype: Any) -> bool:
    return is_floating(dtype) and np.dtype(dtype).itemsize == 2


def remainder(input: Any, other: Any) -> Tensor:  # noqa: A002 - PyTorch's names
    """``torch.remainder`` / ``a % b``: the remainder with the sign of the divisor."""
    return _whole_division(Remainder, "remainder", input, other)


def fmod(input: Any, other: Any) -> Tensor:  # noqa: A002
    """``torch.fmod``: the remainder with the sign of the dividend (C's fmod). The dividend
    must be a tensor, as in torch (which has no ``__rfmod__`` either)."""
    if not isinstance(input, Tensor):
        raise TypeError(f"fmod(): argument 'input' (position 0) must be Tensor, not "
                        f"{type(input).__name__}; wrap a number as tensor({input!r})")
    return _whole_division(Fmod, "fmod", input, other)


def floor_divide(input: Any, other: Any) -> Tensor:  # noqa: A002
    """``torch.floor_divide`` / ``a // b``: floor(a / b), rounding toward -inf."""
    return _whole_division(FloorDivide, "floor_divide", input, other)


def divide(input: Any, other: Any, *, rounding_mode: Any = None) -> Tensor:  # noqa: A002
    """``torch.div`` / ``Tensor.div``: true division (``rounding_mode=None``, integers give
    floats), or the quotient rounded toward -inf (``"floor"``, Python's //) or toward 0
    (``"trunc"``, C's integer division), keeping integer dtypes; an integer divisor of 0
    raises, as in PyTorch."""
    if rounding_mode is None:
        return div(input, other)
    if rounding_mode == "floor":
        return _whole_division(FloorDivide, "div", input, other)
    if rounding_mode == "trunc":
        return _whole_division(TruncDivide, "div", input, other)
    raise ValueError(f"div expected rounding_mode to be one of None, 'trunc', or 'floor' but "
                     f"found {rounding_mode!r}")
