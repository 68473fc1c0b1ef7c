"""Binary pointwise ops learners meet: xlogy, xlog1py, logaddexp, logaddexp2, hypot, copysign,
fmax, fmin, clamp_min/clamp_max with tensor bounds, nextafter, heaviside, addcmul, addcdiv,
float_power, ldexp (docs/derivations.md#binary-pointwise-ops).

Operands broadcast and promote as in torch (``promotion.result_type``; the ops with a
fractional result turn integers into float32), and every gradient is summed back to its
input's shape (``unbroadcast``, docs/derivations.md#broadcasting).
"""
from __future__ import annotations

import math
from typing import Any, Tuple

import numpy as np

from .. import backend, precision
from ..broadcast_error import broadcast_error
from ..autograd import Function, name_node, unbroadcast
from ..precision import is_floating
from ..promotion import refuse_float_mix, result_type
from ..tensor import Tensor
from .elementwise import _as_dtype, clamp, convert, pow
from .inplace_of import in_place_of

__all__ = ["xlogy", "xlog1py", "logaddexp", "logaddexp2", "hypot", "copysign", "fmax", "fmin",
           "clamp_min", "clamp_max", "nextafter", "heaviside", "addcmul", "addcdiv",
           "float_power", "float_power_", "ldexp", "operands"]


_C10 = {"complex64": "ComplexFloat", "complex128": "ComplexDouble"}


def operands(a: Any, b: Any, op: str, floating: bool = False) -> Tuple[Tensor, Tensor]:
    """a and b as tensors of torch's result dtype (the default float dtype for integers when
    ``floating``)."""
    if not isinstance(a, Tensor) and not isinstance(b, Tensor):
        raise TypeError(f"{op}: expected a tensor for input or other, got "
                        f"{type(a).__name__} and {type(b).__name__}")
    refuse_float_mix(op, a, b)              # strict mode: as Function.apply's check
    target = result_type(a, b)
    # torch: '"xlogy_cpu" not implemented for 'ComplexFloat'' (its ldexp takes complex)
    if target.kind == "c" and floating and op != "ldexp":
        raise NotImplementedError(f"\"{op}_cpu\" not implemented for '{_C10.get(target.name)}'"
                                  f" (as torch: {op} of a complex operand); take .real or "
                                  f".abs() first")
    if floating and not is_floating(target):
        target = precision.get_default_dtype()
    like = a if isinstance(a, Tensor) else b
    return _as_dtype(a, target, like), _as_dtype(b, target, like)


def _tensors_only(op: str, *values: Any) -> None:
    """torch's ``op(Tensor input, Tensor other)`` takes no Python numbers."""
    for name, value in zip(("input", "other"), values):
        if not isinstance(value, Tensor):
            raise TypeError(f"{op}(): argument '{name}' must be Tensor, not "
                            f"{type(value).__name__}")


def _apply(fn: type, op: str, *tensors: Tensor, **options: Any) -> Tensor:
    try:
        return fn.apply(*tensors, **options)
    except ValueError as exc:
        if "broadcast" not in str(exc):
            raise
        shapes = ", ".join(str(t.shape) for t in tensors)
        raise RuntimeError(f"{op}: shapes {shapes} do not broadcast (sizes must match or be 1, "
                           f"aligned from the right)") from None


def _grads(fn: Function, grads: Tuple[Any, ...], shapes: Tuple[Any, ...]) -> Tuple[Any, ...]:
    return tuple(unbroadcast(g, s) if need and g is not None else None
                 for g, s, need in zip(grads, shapes, fn.needs_input_grad))


class Xlogy(Function):
    """out = a log b, 0 where a = 0 (unless b is NaN).
    da = g log b (0 where a = 0 and b <= 0, as torch),   db = g a / b."""

    def forward(self, a, b):
        xp = backend.get_array_module(a)
        self.save_for_backward(a, b)
        with np.errstate(divide="ignore", invalid="ignore"):
            return xp.where((a == 0) & ~xp.isnan(b), 0, a * xp.log(b)).astype(a.dtype)

    def backward(self, grad):
        a, b = self.saved
        xp = backend.get_array_module(grad)
        with np.errstate(divide="ignore", invalid="ignore"):
            da = xp.where(((a == 0) & (b <= 0)) | ((grad == 0) & ~xp.isnan(b)), 0,
                          grad * xp.log(b))
            db = grad * a / b
        return _grads(self, (da, db), (a.shape, b.shape))


class Xlog1py(Function):
    """out = a log(1 + b), 0 where a = 0 (unless b is NaN).
    da = g log(1 + b) (0 where a = 0 and b <= -1),   db = g a / (1 + b)."""

    def forward(self, a, b):
        xp = backend.get_array_module(a)
        self.save_for_backward(a, b)
        with np.errstate(divide="ignore", invalid="ignore"):
            return xp.where((a == 0) & ~xp.isnan(b), 0, a * xp.log1p(b)).astype(a.dtype)

    def backward(self, grad):
        a, b = self.saved
        xp = backend.get_array_module(grad)
        with np.errstate(divide="ignore", invalid="ignore"):
            da = xp.where(((a == 0) & (b <= -1)) | ((grad == 0) & ~xp.isnan(b)), 0,
                          grad * xp.log1p(b))
            db = grad * a / (1 + b)
        return _grads(self, (da, db), (a.shape, b.shape))


class LogAddExp(Function):
    """out = log_k(k^a + k^b) = m + log_k(1 + k^-|a - b|), m = max(a, b) (k = e or 2; no
    overflow; a = b = +-inf gives a).
    d out/da = k^a / (k^a + k^b) = 1 / (1 + k^(b - a)): da = g / (1 + k^(b-a)), db likewise."""

    def forward(self, a, b, base2: bool):
        xp = backend.get_array_module(a)
        self.save_for_backward(a, b, base2)
        with np.errstate(invalid="ignore", over="ignore"):
            return (xp.logaddexp2 if base2 else xp.logaddexp)(a, b)

    def backward(self, grad):
        a, b, base2 = self.saved
        xp = backend.get_array_module(grad)
        power = xp.exp2 if base2 else xp.exp
        with np.errstate(invalid="ignore", over="ignore"):
            da = grad / (1 + power(b - a))
            db = grad / (1 + power(a - b))
        return _grads(self, (da, db), (a.shape, b.shape))


class Hypot(Function):
    """out = sqrt(a^2 + b^2).   da = g a / out,   db = g b / out (NaN at the origin, as
    torch)."""

    def forward(self, a, b):
        xp = backend.get_array_module(a)
        out = xp.asarray(xp.hypot(a, b))          # an array even for 0-d inputs (saved)
        self.save_for_backward(a, b, out)
        return out

    def backward(self, grad):
        a, b, out = self.saved
        with np.errstate(divide="ignore", invalid="ignore"):
            return _grads(self, (grad * a / out, grad * b / out), (a.shape, b.shape))


class Copysign(Function):
    """out = |a| with the sign of b.   da = g * out / a (+-1; 0 at a = 0, as torch),
    db = 0 (the sign is piecewise constant in b)."""

    def forward(self, a, b):
        xp = backend.get_array_module(a)
        out = xp.asarray(xp.copysign(a, b))       # an array even for 0-d inputs (saved)
        self.save_for_backward(a, out, b.shape)
        return out

    def backward(self, grad):
        a, out, b_shape = self.saved
        xp = backend.get_array_module(grad)
        with np.errstate(divide="ignore", invalid="ignore"):
            da = grad * xp.where(a == 0, 0, out / xp.where(a == 0, 1, a))
        return _grads(self, (da, xp.zeros(b_shape, dtype=grad.dtype)), (a.shape, b_shape))


class FMax(Function):
    """out = fmax(a, b) (or fmin): the larger (smaller) of the two, ignoring a NaN operand.
    The gradient goes to the operand returned: a where a >= b (a <= b) or b is NaN, else b."""

    def forward(self, a, b, smaller: bool):
        xp = backend.get_array_module(a)
        self.save_for_backward(a, b, smaller)
        return (xp.fmin if smaller else xp.fmax)(a, b)

    def backward(self, grad):
        a, b, smaller = self.saved
        xp = backend.get_array_module(grad)
        with np.errstate(invalid="ignore"):
            to_a = ((a <= b) if smaller else (a >= b)) | xp.isnan(b)
        zero = xp.zeros((), dtype=grad.dtype)
        return _grads(self, (xp.where(to_a, grad, zero), xp.where(to_a, zero, grad)),
                      (a.shape, b.shape))


class ClampBound(Function):
    """out = max(x, bound) (clamp_min) or min(x, bound) (clamp_max), NaN in either gives NaN.
    dx = g where x is kept (x >= bound, resp. x <= bound; ties go to x, as torch),
    dbound = g where the bound is taken."""

    def forward(self, x, bound, upper: bool):
        xp = backend.get_array_module(x)
        self.save_for_backward(x, bound, upper)
        return (xp.minimum if upper else xp.maximum)(x, bound)

    def backward(self, grad):
        x, bound, upper = self.saved
        xp = backend.get_array_module(grad)
        with np.errstate(invalid="ignore"):
            keep = (x <= bound) if upper else (x >= bound)
            take = (x > bound) if upper else (x < bound)
        zero = xp.zeros((), dtype=grad.dtype)
        return _grads(self, (xp.where(keep, grad, zero), xp.where(take, grad, zero)),
                      (x.shape, bound.shape))


class Nextafter(Function):
    """out = the next float after a towards b.   As torch: da = g (a step of one unit in the
    last place, treated as the identity), db = 0.

    ``half`` (float16/bfloat16) makes the step one of that dtype, though the op runs on
    float32 copies (amp/dispatch.py): a float32 step would round back to a."""

    def forward(self, a, b, half: Any = None):
        xp = backend.get_array_module(a)
        self.save_for_backward(a, b)                # kept as torch keeps them
        if half is None:
            return xp.nextafter(a, b)
        if half == np.float16:
            return xp.nextafter(a.astype(half), b.astype(half)).astype(a.dtype)
        return _bfloat16_step(xp, a, b)

    def backward(self, grad):
        a, b = self.saved
        xp = backend.get_array_module(grad)
        return _grads(self, (grad, xp.zeros(b.shape, dtype=grad.dtype)), (a.shape, b.shape))


def _bfloat16_step(xp: Any, a: Any, b: Any) -> Any:
    """nextafter in bfloat16 for float32 arrays holding bfloat16 values: bfloat16 is the top
    half of float32, so one bfloat16 step is 2^16 in float32's bit pattern (away from zero
    when moving away from it); from 0 it is the smallest bfloat16, signed as b."""
    a, b = xp.broadcast_arrays(a, b)
    bits = a.astype(np.float32).view(np.uint32).astype(np.int64)
    away = (b > a) == (a > 0)
    stepped = xp.where(away, bits + (1 << 16), bits - (1 << 16)).astype(np.uint32)
    out = stepped.view(np.float32)
    tiny = xp.where(b > 0, 1, -1) * np.uint32(1 << 16).view(np.float32)
    out = xp.where(a == 0, tiny, out)
    out = xp.where(a == b, b, out)                  # b itself: inf towards inf is inf
    out = xp.where(xp.isnan(a) | xp.isnan(b), a + b, out)       # NaN
    return out.astype(a.dtype)


class AddcMul(Function):
    """out = x + v t1 t2.   dx = g,   dt1 = g v t2,   dt2 = g v t1 (each unbroadcast)."""

    def forward(self, x, t1, t2, value: Any):
        self.save_for_backward(t1, t2, value, x.shape)
        return x + value * t1 * t2

    def backward(self, grad):
        t1, t2, value, x_shape = self.saved
        need = self.needs_input_grad
        return (unbroadcast(grad, x_shape) if need[0] else None,
                unbroadcast(grad * (value * t2), t1.shape) if need[1] else None,
                unbroadcast(grad * (value * t1), t2.shape) if need[2] else None)


class AddcDiv(Function):
    """out = x + v t1 / t2.   dx = g,   dt1 = g v / t2,   dt2 = -g v t1 / t2^2."""

    def forward(self, x, t1, t2, value: Any):
        self.save_for_backward(t1, t2, value, x.shape)
        with np.errstate(divide="ignore", invalid="ignore"):
            return x + value * t1 / t2

    def backward(self, grad):
        t1, t2, value, x_shape = self.saved
        need = self.needs_input_grad
        with np.errstate(divide="ignore", invalid="ignore"):
            return (unbroadcast(grad, x_shape) if need[0] else None,
                    unbroadcast(grad * value / t2, t1.shape) if need[1] else None,
                    unbroadcast(-grad * value * t1 / (t2 * t2), t2.shape) if need[2] else None)


# ------------------------------------------------------------------ public functions
def xlogy(input: Any, other: Any) -> Tensor:  # noqa: A002 - PyTorch's names
    """x * log(y), 0 where x = 0 (``torch.xlogy``, ``torch.special.xlogy``)."""
    return _apply(Xlogy, "xlogy", *operands(input, other, "xlogy", floating=True))


def xlog1py(input: Any, other: Any) -> Tensor:  # noqa: A002
    """x * log1p(y), 0 where x = 0 (``torch.special.xlog1py``)."""
    return _apply(Xlog1py, "xlog1py", *operands(input, other, "xlog1py", floating=True))


def _floating_only(a: Tensor, b: Tensor, op: str) -> None:
    for t in (a, b):
        if not is_floating(t.dtype):
            raise NotImplementedError(f'"{op}" not implemented for {t.dtype.name!r} (as in '
                                      f"torch); convert with .float() first")


def logaddexp(input: Tensor, other: Tensor) -> Tensor:  # noqa: A002
    """log(e^x + e^y) without overflow (``torch.logaddexp``); floating tensors only."""
    _tensors_only("logaddexp", input, other)
    a, b = operands(input, other, "logaddexp")
    _floating_only(a, b, "logaddexp")
    return name_node(_apply(LogAddExp, "logaddexp", a, b, base2=False), "LogaddexpBackward0")


def logaddexp2(input: Tensor, other: Tensor) -> Tensor:  # noqa: A002
    """log2(2^x + 2^y) without overflow (``torch.logaddexp2``); floating tensors only."""
    _tensors_only("logaddexp2", input, other)
    a, b = operands(input, other, "logaddexp2")
    _floating_only(a, b, "logaddexp2")
    return name_node(_apply(LogAddExp, "logaddexp2", a, b, base2=True), "Logaddexp2Backward0")


def hypot(input: Tensor, other: Tensor) -> Tensor:  # noqa: A002
    """sqrt(x^2 + y^2) without overflow (``torch.hypot``); floating tensors only."""
    _tensors_only("hypot", input, other)
    a, b = operands(input, other, "hypot")
    _floating_only(a, b, "hypot")
    return _apply(Hypot, "hypot", a, b)


def copysign(input: Any, other: Any) -> Tensor:  # noqa: A002
    """|x| with the sign of y (``torch.copysign``); integers give float32."""
    _tensors_only("copysign", input)
    return _apply(Copysign, "copysign", *operands(input, other, "copysign", floating=True))


def fmax(input: Tensor, other: Tensor) -> Tensor:  # noqa: A002
    """The elementwise maximum, ignoring NaN where only one side is NaN (``torch.fmax``)."""
    _tensors_only("fmax", input, other)
    a, b = operands(input, other, "fmax")
    return name_node(_apply(FMax, "fmax", a, b, smaller=False), "FmaxBackward0")


def fmin(input: Tensor, other: Tensor) -> Tensor:  # noqa: A002
    """The elementwise minimum, ignoring NaN where only one side is NaN (``torch.fmin``)."""
    _tensors_only("fmin", input, other)
    a, b = operands(input, other, "fmin")
    return name_node(_apply(FMax, "fmin", a, b, smaller=True), "FminBackward0")


def _clamp_bound(x: Tensor, bound: Any, upper: bool, op: str) -> Tensor:
    _tensors_only(op, x)
    if isinstance(bound, (bool, np.bool_)):        # torch: clamp_max(x, True) is 1
        bound = int(bound)
    if not isinstance(bound, Tensor):
        if not isinstance(bound, (int, float, np.number)):
            raise TypeError(f"{op}: the bound must be a number or a tensor, got "
                            f"{type(bound).__name__}")
        out = clamp(x, max=bound) if upper else clamp(x, min=bound)
        return name_node(out, "ClampMaxBackward0" if upper else "ClampMinBackward0")
    a, b = operands(x, bound, op)
    out = _apply(ClampBound, op, a, b, upper=upper)
    return name_node(out, "ClampMaxBackward1" if upper else "ClampMinBackward1")   # .Tensor


def clamp_min(input: Tensor, min: Any) -> Tensor:  # noqa: A002 - PyTorch's names
    """max(x, min) elementwise, min a number or a tensor (``torch.clamp_min``)."""
    return _clamp_bound(input, min, False, "clamp_min")


def clamp_max(input: Tensor, max: Any) -> Tensor:  # noqa: A002 - PyTorch's names
    """min(x, max) elementwise, max a number or a tensor (``torch.clamp_max``)."""
    return _clamp_bound(input, max, True, "clamp_max")


def nextafter(input: Tensor, other: Tensor) -> Tensor:  # noqa: A002
    """The next floating-point value after x towards y (``torch.nextafter``)."""
    _tensors_only("nextafter", input, other)
    a, b = operands(input, other, "nextafter")
    _floating_only(a, b, "nextafter")
    half = a.dtype if a.dtype.itemsize == 2 else None
    return _apply(Nextafter, "nextafter", a, b, half=half)


def heaviside(input: Tensor, values: Tensor) -> Tensor:  # noqa: A002
    """The step function: 0 where x < 0, ``values`` where x = 0, 1 where x > 0
    (``torch.heaviside``; no gradient, as torch). x and values must share a dtype."""
    if not isinstance(values, Tensor) or not isinstance(input, Tensor):
        raise TypeError("heaviside(input, values): both must be tensors")
    if input.dtype.kind == "c" or values.dtype.kind == "c":
        raise RuntimeError("heaviside is not yet implemented for complex tensors (as torch); "
                           "take .real or .abs() first")
    if input.dtype != values.dtype:
        raise RuntimeError(f"heaviside is not yet implemented for tensors with different "
                           f"dtypes ({input.dtype.name} and {values.dtype.name}), as in "
                           f"torch; convert one with .to()")
    error = broadcast_error([input.shape, values.shape], "heaviside")
    if error is not None:
        raise error
    xp = backend.get_array_module(input._data)
    x, v = input._data, values._data
    out = xp.where(x == 0, v, (x > 0).astype(x.dtype))
    return Tensor._wrap(xp.asarray(out.astype(x.dtype)))


def addcmul(input: Tensor, tensor1: Tensor, tensor2: Tensor, *,  # noqa: A002
            value: Any = 1) -> Tensor:
    """input + value * tensor1 * tensor2, broadcast (``torch.addcmul``)."""
    target = result_type(input, tensor1, tensor2)
    if target == np.bool_:              # torch has no bool kernel: True + 2 * True * True
        raise NotImplementedError(   # would be True, not the count a learner expects
            "\"addcmul_cpu_out\" not implemented for 'Bool' (as torch: addcmul of bool "
            "tensors); convert them with .int() or .float() first")
    refuse_float_mix("addcmul", input, tensor1, tensor2)
    x, t1, t2 = (_as_dtype(t, target, input) for t in (input, tensor1, tensor2))
    return _apply(AddcMul, "addcmul", x, t1, t2, value=_scalar(value, target))


def addcdiv(input: Tensor, tensor1: Tensor, tensor2: Tensor, *,  # noqa: A002
            value: Any = 1) -> Tensor:
    """input + value * tensor1 / tensor2, broadcast (``torch.addcdiv``); integer tensor1 and
    tensor2 are refused, as torch (use true division: convert them to float)."""
    if not is_floating(tensor1.dtype) and not is_floating(tensor2.dtype):
        raise RuntimeError("Integer division with addcdiv is no longer supported, and in a "
                           "future release addcdiv will perform a true division of tensor1 "
                           "and tensor2 (as torch). Convert tensor1 or tensor2 to float")
    refuse_float_mix("addcdiv", input, tensor1, tensor2)
    target = result_type(input, tensor1, tensor2)
    x, t1, t2 = (_as_dtype(t, target, input) for t in (input, tensor1, tensor2))
    return _apply(AddcDiv, "addcdiv", x, t1, t2, value=_scalar(value, target))


def _scalar(value: Any, target: np.dtype) -> Any:
    """value as the op computes with it: a Python float for floating dtypes (float16 ops run
    in float32, amp/dispatch.py, so value is not rounded to half), else the integer dtype."""
    if is_floating(target):
        return float(value)
    if target.kind == "c":          # complex operands: the op refuses them loudly (np.iinfo
        return complex(value)      # of a complex dtype raised a ValueError naming no op)
    if isinstance(value, (complex, np.complexfloating)) and value.imag == 0:
        value = value.real
    info = np.iinfo(target)     # torch's checked conversion of the Scalar: in range (an
    whole = isinstance(value, (int, np.integer))   # unsigned dtype also takes -max..-1,
    if isinstance(value, (complex, np.complexfloating)) or not (  # wrapping), then a cast,
            info.min <= value <= info.max or (whole and info.min == 0 and -info.max <= value < 0)):
        raise RuntimeError(f"value cannot be converted to type {target.name}_t without "   # C
                           f"overflow (value={value!r} for a {target.name} result, as torch)")
    return np.array(int(value)).astype(target)[()]     # which truncates: 1.7 -> 1, 0.5 -> 0


def float_power(input: Any, exponent: Any) -> Tensor:  # noqa: A002
    """x ** y computed in float64 (``torch.float_power``): both sides are converted to
    float64 first, then ``pow`` (docs/derivations.md#pow) with its backward."""
    complex_result = any(isinstance(v, (complex, np.complexfloating)) or (
        isinstance(v, Tensor) and v.dtype.kind == "c") for v in (input, exponent))
    wide_dtype = np.dtype(np.complex128 if complex_result else np.float64)

    def wide(v: Any) -> Any:      # complex128 when either side is complex (torch's rule),
        if isinstance(v, Tensor):  # never a float64 copy without the imaginary parts
            return convert(v, dtype=wide_dtype) if is_floating(v.dtype) or v.dtype.kind == "c" \
                else Tensor._wrap(v._data.astype(wide_dtype))
        return complex(v) if complex_result else float(v)
    refuse_float_mix("float_power", input, exponent)
    base, power = wide(input), wide(exponent)
    if not isinstance(base, Tensor):
        base = Tensor._wrap(backend.get_array_module(power._data).asarray(
            base, dtype=wide_dtype))
    return pow(base, power)


class Ldexp(Function):
    """out = x 2^y.   dx = g 2^y,   dy = g x 2^y ln 2 = g out ln 2.

    Keeps y and the result, as torch's one node does (not x: an in-place change to x after
    the op leaves the backward valid, a change to y or to the result makes it raise).
    ``half`` (float16/bfloat16, the op running on float32 copies): 2^y is rounded to the
    half dtype before the product, as torch computes x * pow(2, y) in the half dtype."""

    def forward(self, x, y, half: Any = None):
        xp = backend.get_array_module(x)
        with np.errstate(over="ignore", invalid="ignore"):
            power = xp.exp2(y)
            if half is not None:
                power = power.astype(half).astype(power.dtype)
            out = xp.asarray(x * power)       # a 0-d array, not a NumPy scalar
        self.save_for_backward(y, out, x.shape)
        return out

    def backward(self, grad):
        y, out, x_shape = self.saved
        xp = backend.get_array_module(grad)
        with np.errstate(over="ignore", invalid="ignore"):
            dx = grad * xp.exp2(y)
            dy = grad * out * out.dtype.type(math.log(2.0))
        return _grads(self, (dx, dy), (x_shape, y.shape))


def ldexp(input: Tensor, other: Tensor) -> Tensor:  # noqa: A002
    """x * 2 ** y (``torch.ldexp``), one op (``Ldexp``); integers give float32."""
    _tensors_only("ldexp", input, other)
    if other.dtype == np.bool_ and is_floating(input.dtype):
        raise NotImplementedError(     # torch's kernel refuses a bool exponent for a float x
            "\"ldexp_cpu_exp\" not implemented for 'Bool' (as torch: ldexp of a floating "
            "tensor by a bool exponent); convert the exponent with .int() first")
    a, b = operands(input, other, "ldexp", floating=True)
    half = a.dtype if a.dtype.itemsize == 2 and a.dtype == b.dtype else None
    return Ldexp.apply(a, b, half=half)



def float_power_(input: Tensor, exponent: Any) -> Tensor:  # noqa: A002
    """In-place float_power: the tensor must already be float64, as torch requires."""
    complex_result = input.dtype.kind == "c" or isinstance(
        exponent, (complex, np.complexfloating)) or (
        isinstance(exponent, Tensor) and exponent.dtype.kind == "c")
    want = np.dtype(np.complex128 if complex_result else np.float64)
    if input.dtype != want:
        raise RuntimeError(f"the base given to float_power_ has dtype {input.dtype.name} but "
                           f"the operation's result requires dtype {want.name} (as in torch); "
                           f"convert with .to({want.name}) first")
    return in_place_of(float_power, "float_power_")(input, exponent)
