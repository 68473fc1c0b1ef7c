"""Elementwise ops: arithmetic with broadcasting, and the pointwise functions.

Notation: ``g`` is the gradient of the loss with respect to the op's output, of the output's
shape. A binary op's inputs may broadcast; ``unbroadcast`` sums a gradient back down to its
input's shape (docs/derivations.md#broadcasting). The pointwise functions are derived in
docs/derivations.md#elementwise.
"""
from __future__ import annotations

import math
from typing import Any, Optional, Tuple

import numpy as np

from .. import backend, precision
from ..autograd import Function, unbroadcast
from ..autograd.function import converted_copy
from ..promotion import float_mix_error, is_strict_promotion, operand_tier, result_type
from ..tensor import Tensor
from ..precision import DtypeNotImplementedError
from ..tensor.memory_format import check_memory_format
from .normal_cdf import (exact_gelu_and_slope_by_blocks, exact_gelu_by_blocks,
                         gelu_slope_by_blocks, normal_cdf_and_pdf)
from .tanh_gelu import by_value_blocks, tanh_gelu_by_blocks, tanh_gelu_slope_times_grad_by_blocks
from .powers import RPow, integer_power, pow_tensor, scalar_power
from ..precision import is_floating

__all__ = ["add", "sub", "mul", "div", "binary_operator", "neg", "pow", "rpow", "exp", "log",
           "sqrt", "tanh", "relu", "gelu", "convert", "as_operand", "clone", "clamp",
           "half_as_float32"]


class IntegerPowerError(ValueError, RuntimeError):
    """An integer tensor to a negative integer power: torch's RuntimeError, and the
    ValueError tinyattn raised."""


def as_operand(value: Any, like: Tensor) -> Tensor:
    """A Python number or array as a constant tensor of ``like``'s dtype and device.

    As PyTorch's rule for a number meeting a tensor: with an integer ``like``, a float number
    gives the default float dtype (float32 unless set; not NumPy's float64) and an int takes
    ``like``'s integer dtype (wrapping
    around as torch does: uint8 - 1 is 255, not int64's -1). An array is copied: an op may
    keep its operand for backward (``w * a`` keeps a), and the caller may refill theirs."""
    if isinstance(value, Tensor):
        return value
    xp = backend.get_array_module(like._data)
    if is_floating(like.dtype):
        return Tensor._wrap(xp.array(value, dtype=like.dtype))
    if isinstance(value, float):
        return Tensor._wrap(xp.asarray(value, dtype=precision.get_default_dtype()))
    if like.dtype.kind in "iu" and isinstance(value, (int, np.integer)) and not isinstance(
            value, (bool, np.bool_)):
        return Tensor._wrap(xp.asarray(np.array(value).astype(like.dtype)))
    return Tensor._wrap(xp.array(value))


def _is_number(value: Any) -> bool:
    return isinstance(value, (bool, int, float, complex, np.generic))


def _as_dtype(value: Any, dtype: np.dtype, like: Tensor) -> Tensor:
    """An operand in the op's dtype: a number as a constant (an int wraps into a smaller
    integer dtype, as torch), a floating tensor converted differentiably."""
    if not isinstance(value, Tensor):
        xp = backend.get_array_module(like._data)
        if isinstance(value, (complex, np.complexfloating)) and dtype.kind != "c":
            raise _complex_number_refused(value, dtype)   # NumPy would drop .imag silently
        wrapped = np.array(value).astype(dtype).item()       # as dtype holds it (wraps)
        return Tensor._wrap(xp.asarray(wrapped, dtype=dtype))
    if value.dtype == dtype:
        return value
    # the copy remembers value (converted_copy): an op that saves it for backward notes
    # value's version too, as torch's op saves value itself
    if is_floating(value.dtype) and is_floating(dtype):    # bfloat16 included (kind "V")
        return converted_copy(convert(value, dtype=dtype), value)
    if dtype.kind == "c" and (is_floating(value.dtype) or value.dtype.kind == "c"):
        return converted_copy(convert(value, dtype=dtype), value)   # float -> complex
    if value.dtype.kind == "c":
        raise TypeError(f"a complex tensor ({value.dtype}) cannot take part in an op whose "
                        f"result is {dtype}; take .real or .abs() first")
    return converted_copy(Tensor._wrap(value._data.astype(dtype)), value)


def _complex_number_refused(value: Any, dtype: np.dtype) -> Exception:
    """torch's error for a complex Python number in an op computed in a real dtype (the
    result type is complex, which the op or its output cannot hold)."""
    names = {"float16": "Half", "bfloat16": "BFloat16", "float32": "Float", "float64": "Double"}
    name = names.get(np.dtype(dtype).name, np.dtype(dtype).name)
    return RuntimeError(f"result type ComplexFloat can't be cast to the desired output type "
                        f"{name} (a complex number {value!r} in an op computed in "
                        f"{np.dtype(dtype).name}, as torch refuses it; tinyattn would otherwise "
                        f"drop its imaginary part)")


def _match_dtypes(a: Tensor, b: Tensor) -> Tuple[Tensor, Tensor]:
    """An integer tensor meeting a float one takes the float's dtype, so no float64 appears
    (NumPy would promote int64 with float32 to float64). Two float dtypes are left alone:
    Function.apply promotes that mix (torch's result_type) or, in strict mode, refuses it."""
    if is_floating(a.dtype) and b.dtype.kind in "biu":     # integers and bools only: a
        b = Tensor._wrap(b._data.astype(a.dtype))         # complex one keeps its imaginary
    elif is_floating(b.dtype) and a.dtype.kind in "biu":   # part (the op then computes in
        a = Tensor._wrap(a._data.astype(b.dtype))         # complex or refuses it loudly)
    return a, b


def _binary(fn: type, op: str, a: Any, b: Any, **options: Any) -> Tensor:
    """Apply a binary Function, turning NumPy's broadcasting error into a clear one.

    The result dtype is torch's ``result_type`` (tinyattn/promotion.py): a 0-d tensor or a
    Python number does not widen a tensor's dtype within its category (int32 + tensor(5) is
    int32; uint8 + tensor(10) wraps). Two floating tensors of the same kind (both with
    dimensions, or both 0-d) and different dtypes are promoted by Function.apply (refused
    there under tinyattn.set_strict_promotion)."""
    if (isinstance(a, Tensor) and isinstance(b, Tensor) and a._data.dtype == b._data.dtype
            and (fn is not Div or is_floating(a._data.dtype) or a._data.dtype.kind == "c")):
        pass                                 # the common case: nothing to promote
    else:
        if fn in _NUMBER_IN_FLOAT32:
            out = _half_and_number(fn, a, b)
            if out is not None:
                return out
        if _is_number(a) and _is_number(b) and fn in _NUMBERS_WRAPPED:  # torch.add(2, 3.5):
            a = Tensor._wrap(np.asarray(a, dtype=result_type(a, b)))   # a 0-d tensor
        if not isinstance(a, Tensor) and not _is_number(a):
            a = as_operand(a, b)
        if not isinstance(b, Tensor) and not _is_number(b):
            b = as_operand(b, a)
        target = result_type(a, b)
        if fn is Div and not is_floating(target) and target.kind != "c":   # 7 / 2 on integer
            target = precision.get_default_dtype()   # tensors: the default float, as torch
        if not (isinstance(a, Tensor) and isinstance(b, Tensor) and a.dtype != b.dtype
                and is_floating(a.dtype) and is_floating(b.dtype)
                and operand_tier(a) == operand_tier(b)):
            like = a if isinstance(a, Tensor) else b
            a, b = _as_dtype(a, target, like), _as_dtype(b, target, like)
    try:
        return fn.apply(a, b, **options)
    except ValueError as exc:
        if "broadcast" not in str(exc):
            raise
        raise RuntimeError(
            f"{op}: shapes {a.shape} and {b.shape} do not broadcast (sizes must match or be "
            f"1, aligned from the right); reshape or unsqueeze one of them") from None


class Add(Function):
    """out = a + b.   da = g, db = g, each summed over the axes it was broadcast along.

    Complex: out = a + alpha b, alpha a complex number (alpha + 0i, also for alpha = 1), as
    torch's kernel computes it (``self + alpha * other``, the product by ``complex_product``):
    so an inf part of b makes the other part NaN, (0+0j) + (0+infj) = nan+infj in torch.
    db = g conj(alpha) (g itself for alpha = 1). A real add gets b already scaled (``add``)."""

    def forward(self, a, b, alpha=1):
        self.save_for_backward(a.shape, b.shape, alpha)
        if a.dtype.kind == "c" or b.dtype.kind == "c":
            with np.errstate(invalid="ignore", over="ignore"):
                return a + complex_product(b, complex(alpha))
        return a + b

    def backward(self, grad):
        a_shape, b_shape, alpha = self.saved
        return (unbroadcast(grad, a_shape) if self.needs_input_grad[0] else None,
                unbroadcast(_times_conj(grad, alpha), b_shape)
                if self.needs_input_grad[1] else None)


class Sub(Function):
    """out = a - b.   da = g, db = -g (then unbroadcast).

    Complex: out = a + (-alpha) b with -alpha a complex number (-alpha + 0i), as torch's
    kernel (sub is add with -alpha); db = -g conj(alpha). A real sub gets b already scaled."""

    def forward(self, a, b, alpha=1):
        self.save_for_backward(a.shape, b.shape, alpha)
        if a.dtype.kind == "c" or b.dtype.kind == "c":
            with np.errstate(invalid="ignore", over="ignore"):
                return a + complex_product(b, complex(-alpha))
        return a - b

    def backward(self, grad):
        a_shape, b_shape, alpha = self.saved
        return (unbroadcast(grad, a_shape) if self.needs_input_grad[0] else None,
                unbroadcast(_times_conj(-grad, alpha), b_shape)
                if self.needs_input_grad[1] else None)


def _times_conj(grad, alpha):
    """grad * conj(alpha), grad itself for alpha = 1 (torch's maybe_multiply)."""
    if isinstance(alpha, (int, np.integer)) and alpha == 1:
        return grad
    return complex_product(grad, complex(alpha).conjugate())


class Mul(Function):
    """out = a * b.   da = g * b, db = g * a (product rule; then unbroadcast).

    Each input is kept only if the OTHER one needs a gradient: scaling by a constant keeps
    just the constant, so ``y.mul_(2.0)`` can overwrite y without spoiling this backward."""

    def forward(self, a, b):
        needs_a, needs_b = self.needs_input_grad
        self.save_for_backward(a if needs_b else _Shape(a.shape), b if needs_a else _Shape(b.shape))
        if a.dtype.kind == "c" or b.dtype.kind == "c":
            return complex_product(a, b)        # torch's rounding, inf and NaN (not NumPy's)
        return a * b

    def backward(self, grad):
        a, b = self.saved          # complex: da = g * conj(b), db = g * conj(a) (derivations.md)
        return (unbroadcast(complex_product(grad, conj_if_complex(b)), a.shape)
                if self.needs_input_grad[0] else None,
                unbroadcast(complex_product(grad, conj_if_complex(a)), b.shape)
                if self.needs_input_grad[1] else None)


def complex_product(a, b):
    """a * b as torch's CPU kernel multiplies complex numbers (its vectorized loop, the one a
    tensor's elements go through): (ar br - ai bi) + i (ar bi + ai br), each product rounded
    on its own (no fused multiply-add) and nothing special for inf or NaN (C99's Annex G
    recovery is not applied: (inf+infj) * (1+0j) is nan+nanj, as torch). NumPy's complex
    multiply fuses a product into the subtraction on CPUs with FMA, which differs in the last
    bits and, where a product overflows, gives -inf where torch gives NaN; so the parts are
    computed here one op at a time. A real operand counts as x + 0i (torch converts it to the
    complex dtype first). Arrays that are not complex: plain ``a * b``."""
    kind_a, kind_b = getattr(a, "dtype", np.dtype(type(a))).kind, \
        getattr(b, "dtype", np.dtype(type(b))).kind
    if kind_a != "c" and kind_b != "c":
        return a * b
    xp = backend.get_array_module(a if kind_a == "c" else b)
    dtype = np.result_type(*(getattr(v, "dtype", v) for v in (a, b)))   # a number: weak
    a, b = xp.asarray(a, dtype=dtype), xp.asarray(b, dtype=dtype)
    ar, ai, br, bi = a.real, a.imag, b.real, b.imag
    out = xp.empty(np.broadcast_shapes(a.shape, b.shape), dtype=dtype)
    with np.errstate(invalid="ignore", over="ignore"):     # inf - inf is NaN quietly, as torch
        out.real = ar * br - ai * bi
        out.imag = ar * bi + ai * br
    return out


def conj_if_complex(x):
    """conj(x) for a complex array, x itself otherwise (no copy): the backward of a product
    multiplies by the conjugate of the other factor (torch's convention for complex inputs,
    docs/derivations.md#complex-numbers). A ``_Shape`` stand-in passes through."""
    dtype = getattr(x, "dtype", None)
    return x.conj() if dtype is not None and dtype.kind == "c" else x


class _Shape:
    """Stands in for an array whose values a backward does not need, only its shape."""

    def __init__(self, shape: Tuple[int, ...]):
        self.shape = shape


class Div(Function):
    """out = a / b.   da = g / b, db = -g * a / b^2 (then unbroadcast).

    db is evaluated as torch's, -g * ((a / b) / b): b * b first overflows to inf (|b| > 1.8e19
    in float32) or underflows to 0 (|b| < 1e-23) where the quotient a / b / b is still finite,
    which made db 0 or inf (tanh written as (e^x - e^-x) / (e^x + e^-x) got gradient 1, not 0,
    at x = 50).

    As torch's DivBackward0 it keeps b, and a only when b needs a gradient; never its output,
    so writing into the quotient in place (d2l's masked_softmax does) leaves this backward
    valid, and ``a / 2`` keeps nothing but the constant."""

    def forward(self, a, b):
        self.save_for_backward(a if self.needs_input_grad[1] else _Shape(a.shape), b)
        return a / b

    def backward(self, grad):
        a, b = self.saved          # complex: the same with conj(a), conj(b) (derivations.md)
        a, b = conj_if_complex(a), conj_if_complex(b)
        return (unbroadcast(grad / b, a.shape) if self.needs_input_grad[0] else None,
                unbroadcast(-grad * ((a / b) / b), b.shape) if self.needs_input_grad[1] else None)


class Neg(Function):
    """out = -x.   dx = -g."""

    def forward(self, x):
        return -x

    def backward(self, grad):
        return -grad


class Pow(Function):
    """out = x^p for a constant p.   dx = g * p * x^(p-1).

    For p = 0, out = 1 everywhere and dx = 0, also at x = 0 (the formula would give
    0 * 0^(-1) = 0 * inf = NaN there). Both powers go through ``scalar_power``: x * x * x for
    p = 3, not NumPy's general float power (ops/powers.py)."""

    def forward(self, x, exponent: float):
        self.save_for_backward(x, exponent)
        return scalar_power(x, exponent)

    def backward(self, grad):
        x, p = self.saved
        if p == 0:
            return backend.get_array_module(grad).zeros_like(grad)
        return grad * (p * scalar_power(x, p - 1))


class Exp(Function):
    """out = e^x.   dx = g * e^x = g * out (reuse the output: no second exp)."""

    def forward(self, x):
        out = backend.get_array_module(x).exp(x)
        self.save_for_backward(out)
        return out

    def backward(self, grad):
        (out,) = self.saved
        return grad * conj_if_complex(out)   # complex: g * conj(e^z) (derivations.md)


class Log(Function):
    """out = ln x.   dx = g / x."""

    def forward(self, x):
        self.save_for_backward(x)
        return backend.get_array_module(x).log(x)

    def backward(self, grad):
        (x,) = self.saved
        return grad / x


class Sqrt(Function):
    """out = sqrt(x).   dx = g / (2 sqrt(x)) = g / (2 out)."""

    def forward(self, x):
        out = backend.get_array_module(x).sqrt(x)
        self.save_for_backward(out)
        return out

    def backward(self, grad):
        (out,) = self.saved
        with np.errstate(divide="ignore", invalid="ignore"):   # at 0: inf quietly, as torch
            return grad / (2 * out)


class Tanh(Function):
    """out = tanh x.   dx = g * (1 - tanh^2 x) = g * (1 - out^2)."""

    def forward(self, x):
        out = backend.get_array_module(x).tanh(x)
        self.save_for_backward(out)
        return out

    def backward(self, grad):
        (out,) = self.saved
        return grad * (1 - out * out)


class Relu(Function):
    """out = max(x, 0).   dx = g where x > 0, else 0 (we take the subgradient 0 at x = 0).
    As torch, "else" means x <= 0: at a NaN input (out is NaN) the gradient passes."""

    versions_checked = (-1,)    # what torch saves: changed in place, backward raises

    def forward(self, x):
        self.save_for_backward(~(x <= 0))
        return backend.get_array_module(x).maximum(x, 0)

    def backward(self, grad):
        (positive,) = self.saved   # where, not grad * mask: an inf or NaN from above must
        return backend.get_array_module(grad).where(positive, grad, 0)  # not leak (PyTorch)


_SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)  # Python floats: they never upcast float32
_GELU_CUBIC = 0.044715
_SLOPE_SAVED = "none, slope saved"   # Gelu.saved's tag when it keeps Phi(x) + x phi(x)


class Gelu(Function):
    """Gaussian error linear unit (docs/derivations.md#gelu).

    exact:  out = x Phi(x) = x (1 + erf(x / sqrt 2)) / 2,   dx = g (Phi(x) + x phi(x)),
            where phi(x) = exp(-x^2 / 2) / sqrt(2 pi) is the normal density.
    tanh:   u = sqrt(2/pi) (x + 0.044715 x^3),  t = tanh u,  out = x (1 + t) / 2,
            dx = g ((1 + t) / 2 + x (1 - t^2) sqrt(2/pi) (1 + 3 * 0.044715 x^2) / 2).
    Saves x alone, as torch does, and recomputes Phi and phi (or t) in the backward: keeping
    them would hold two more arrays of x's size until then (docs/benchmarks.md). In float32
    on NumPy the exact form is max(x, 0) - |x| Phi(-|x|) (``normal_cdf.py``), a block at a
    time; when recorded, the same loop also computes the slope Phi(x) + x phi(x) from the
    tail Phi(-|x|) while it is in the cache, and saves that one array instead of x (the same
    memory), so the backward is one product. x's version is still checked: changed in
    place, the backward raises, as torch's does.
    """

    versions_checked = (0,)    # what torch saves: changed in place, backward raises
    _own_backward: Any         # Gelu.backward itself (set below the class)

    def forward(self, x, approximate: str = "none"):
        if (approximate == "none" and self.recording and backend.erf_is_slow(x)
                and type(self).backward is Gelu._own_backward):  # a swapped-in one needs x
            out, slope = exact_gelu_and_slope_by_blocks(x)
            self.save_for_backward(slope, _SLOPE_SAVED)
            return out
        self.save_for_backward(x, approximate)
        if approximate == "tanh" and by_value_blocks(x):    # the same values, in the cache
            return tanh_gelu_by_blocks(x, _SQRT_2_OVER_PI, _GELU_CUBIC)
        if approximate == "tanh":
            t = backend.get_array_module(x).tanh(
                _SQRT_2_OVER_PI * (x + _GELU_CUBIC * x * x * x))
            return 0.5 * x * (1 + t)
        if backend.erf_is_slow(x):
            return exact_gelu_by_blocks(x)
        return x * normal_cdf_and_pdf(x)[0]

    def backward(self, grad):
        x, approximate = self.saved
        if approximate == _SLOPE_SAVED:     # exact, float32 NumPy: x holds the slope
            return grad * x
        if approximate == "tanh" and by_value_blocks(x, grad):
            return tanh_gelu_slope_times_grad_by_blocks(grad, x, _SQRT_2_OVER_PI, _GELU_CUBIC)
        if approximate == "tanh":
            t = backend.get_array_module(x).tanh(
                _SQRT_2_OVER_PI * (x + _GELU_CUBIC * x * x * x))
            du_dx = _SQRT_2_OVER_PI * (1 + 3 * _GELU_CUBIC * x * x)
            return grad * (0.5 * (1 + t) + 0.5 * x * (1 - t * t) * du_dx)
        if backend.erf_is_slow(x):
            return grad * gelu_slope_by_blocks(x)       # Phi(x) + x phi(x), by blocks
        cdf, pdf = normal_cdf_and_pdf(x)
        return grad * (cdf + x * pdf)


# The backward that reads a saved slope. A backward swapped in for it (the exercises' payoff,
# tinyattn.exercises.payoff, calls a learner's GELU backward with x) makes the forward save x.
Gelu._own_backward = Gelu.backward


class Clone(Function):
    """out = a copy of x (its own memory).   dx = g."""

    def forward(self, x):
        return x.copy()

    def backward(self, grad):
        return grad


class ClampBoundsError(ValueError, RuntimeError):
    """clamp without bounds: torch's RuntimeError (a ValueError here before, kept as one)."""


class Clamp(Function):
    """out = min(max(x, low), high).   dx = g where low <= x <= high, else 0 (a clamped
    element is a constant; at the boundary itself we pass the gradient, as PyTorch does)."""

    versions_checked = (0,)    # what torch saves: changed in place, backward raises

    def forward(self, x, low: Optional[float], high: Optional[float]):
        xp = backend.get_array_module(x)
        inside = xp.ones(x.shape, dtype=bool)
        if low is not None:
            inside &= x >= low
        if high is not None:
            inside &= x <= high
        self.save_for_backward(inside)
        return xp.clip(x, low, high)

    def backward(self, grad):
        (inside,) = self.saved     # where, as in Relu: inf * 0 would be NaN
        return backend.get_array_module(grad).where(inside, grad, 0)


class Convert(Function):
    """out = x on another device or in another dtype.   dx = g moved back the same way."""

    def forward(self, x, device: Optional[str] = None, dtype: Any = None):
        self.save_for_backward(backend.device_of(x), x.dtype)
        out = x if device is None else backend.to_device(x, device)
        return out if dtype is None else precision.cast(out, dtype)   # torch's rounding

    def backward(self, grad):
        device, dtype = self.saved
        if grad.dtype.kind == "c" and dtype.kind != "c":    # real -> complex: the real part
            grad = grad.real             # (the imaginary direction does not reach a real x)
        return precision.cast(backend.to_device(grad, device), dtype)


# ------------------------------------------------------------------ public functions
# torch.add/sub/mul/div take two Python numbers (the first becomes a 0-d tensor); torch's
# remainder, pow, ... refuse them
_NUMBERS_WRAPPED = (Add, Sub, Mul, Div)
_NUMBER_IN_FLOAT32 = (Mul, Div)     # _half_and_number (add and sub round the number: measured)


def add(a: Any, b: Any, alpha: float = 1) -> Tensor:
    """a + alpha * b (PyTorch's ``add``; alpha scales the second operand)."""
    alpha = _check_alpha(a, b, alpha)
    if _complex_operand(a) or _complex_operand(b):     # a + alpha * b in one kernel (Add)
        return _binary(Add, "add", a, b, alpha=alpha)
    return _binary(Add, "add", a, _scaled(a, b, alpha))


def sub(a: Any, b: Any, alpha: float = 1) -> Tensor:
    """a - alpha * b. As torch, a bool operand (tensor or Python bool) is refused."""
    if any(isinstance(v, (bool, np.bool_)) or (isinstance(v, Tensor) and v.dtype == np.bool_)
           for v in (a, b)):
        raise RuntimeError("sub: subtraction (the - operator) with a bool tensor or bool is "
                           "not supported, as in torch; to invert a mask use ~mask or "
                           "logical_not(mask), or convert it first with .int() or .float()")
    alpha = _check_alpha(a, b, alpha)
    if _complex_operand(a) or _complex_operand(b):     # a + (-alpha) * b in one kernel (Sub)
        return _binary(Sub, "sub", a, b, alpha=alpha)
    return _binary(Sub, "sub", a, _scaled(a, b, alpha))


def _complex_operand(value: Any) -> bool:
    return isinstance(value, (complex, np.complexfloating)) or (
        isinstance(value, Tensor) and value._data.dtype.kind == "c")


def _check_alpha(a: Any, b: Any, alpha: Any) -> Any:
    """torch's rules for alpha: a float alpha with an integer (or bool) result and a bool
    alpha with a non-bool result are refused (the result would not be the inputs' dtype); an
    int alpha with a bool result counts as alpha != 0 (the result stays bool, as torch).
    Returns the alpha to scale with."""
    if not (isinstance(a, Tensor) or isinstance(b, Tensor)) or (
            isinstance(alpha, (int, np.integer)) and not isinstance(alpha, (bool, np.bool_))
            and alpha == 1):
        return alpha
    kind = result_type(a, b).kind
    if isinstance(alpha, (complex, np.complexfloating)) and kind != "c":
        raise RuntimeError(f"For non-complex input tensors, argument alpha must not be a "
                           f"complex scalar (as torch; got alpha={alpha!r})")
    if kind == "b" and isinstance(alpha, (int, np.integer)):
        return bool(alpha)
    if not isinstance(alpha, (bool, np.bool_, float, np.floating)):
        return alpha
    if isinstance(alpha, (bool, np.bool_)):
        if kind != "b":
            raise RuntimeError(f"Boolean alpha only supported for Boolean results (as torch; "
                               f"got alpha={alpha!r}: pass alpha={int(alpha)})")
    elif kind in "biu":
        raise RuntimeError(f"For integral input tensors, argument alpha must not be a floating "
                           f"point number (as torch; got alpha={alpha}: convert the tensors "
                           f"with .float(), or pass an int alpha)")
    return alpha


def _scaled(a: Any, b: Any, alpha: float) -> Any:
    """alpha * b computed in the result's dtype, as torch: scaling b in its own dtype first
    would widen a bool b (bool * int is int64: uint8 + bool came back int64), wrap an int8 b
    (int32 + 2 * int8(100) gave -56) or overflow a float16 b (float32 + 2 * 40000 gave inf)."""
    if alpha == 1:
        return b
    if not isinstance(b, Tensor):
        return b * alpha
    target = result_type(a, b)
    return mul(b if b.dtype == target else b.to(target), alpha)


def mul(a: Any, b: Any) -> Tensor:
    return _binary(Mul, "mul", a, b)


def div(a: Any, b: Any) -> Tensor:
    return _binary(Div, "div", a, b)


def binary_operator(fn: type, function: Any) -> Any:
    """The Tensor operator of a binary op (``a * b`` is ``binary_operator(Mul, mul)``).

    Operators run on every step of every model, so the common case, two tensors of one
    floating dtype, goes straight to ``fn.apply`` (one Python frame instead of three); any
    other operand (a number, an integer or bool tensor, mixed dtypes) takes ``function`` (the
    op's public function), with its promotion rules and checks. A ValueError (shapes that do
    not broadcast) is raised again through ``function``, which says which shapes and what to
    change."""
    def operator(a: Tensor, b: Any) -> Tensor:
        if isinstance(b, Tensor):
            dtype = a._data.dtype
            if b._data.dtype is dtype and dtype.kind == "f":
                try:
                    return fn.apply(a, b)
                except ValueError:
                    pass
        return function(a, b)
    operator.__name__ = operator.__qualname__ = f"__{function.__name__}__"
    return operator


def neg(x: Tensor) -> Tensor:
    """-x. A bool tensor is refused, as torch refuses it (NumPy would raise a TypeError)."""
    if isinstance(x, Tensor) and x.dtype == np.bool_:
        raise RuntimeError("neg: Negation, the `-` operator, on a bool tensor is not supported, "
                           "as in torch; to invert a mask use ~mask or logical_not(mask)")
    return Neg.apply(x)


def pow(x: Tensor, exponent: Any) -> Tensor:  # noqa: A001 - PyTorch's name
    """x ** exponent with torch's result dtype (``result_type``: a 0-d tensor or a number
    does not widen a tensor within its category, so uint8 tensor(3) ** int8 [5, 2] is int8
    and an int tensor to a 0-d float16 power is float16). Integers to integer powers stay
    integers and wrap as torch's do (a negative Python power is refused, as torch does). A
    tensor exponent (other than a 0-d constant, which acts as a number) is elementwise and
    differentiable too (ops/powers.py). A number to a tensor power, ``torch.pow(2, x)``, is
    ``rpow``."""
    if not isinstance(x, Tensor) and isinstance(exponent, Tensor):
        return rpow(exponent, x)
    _refuse_complex_power(x, exponent)
    if isinstance(exponent, (bool, np.bool_)):     # torch: x ** True is x ** 1
        if isinstance(x, Tensor) and x.dtype == np.bool_:   # bool ** bool stays bool
            return pow(x, int(exponent)).to(np.bool_)
        exponent = int(exponent)
    if not isinstance(
            exponent, (Tensor, int, float, np.integer, np.floating)):
        raise TypeError(f"pow: the exponent must be a number or a tensor, got "
                        f"{type(exponent).__name__}")
    target = result_type(x, exponent)
    if target == np.bool_:
        raise DtypeNotImplementedError("pow: not implemented for bool base and exponent (as "
                                       "torch's \"pow\" not implemented for 'Bool'); convert "
                        "one with .int() or .float()")
    if isinstance(exponent, Tensor) and (exponent.ndim > 0 or exponent.requires_grad):
        if (is_strict_promotion() and x.dtype != exponent.dtype and is_floating(x.dtype)
                and is_floating(exponent.dtype) and operand_tier(x) == operand_tier(exponent)):
            raise float_mix_error("pow", (x.dtype, exponent.dtype))
        return pow_tensor(_as_dtype(x, target, x), _as_dtype(exponent, target, x))
    if isinstance(exponent, Tensor):                   # a 0-d constant: its number
        if not is_floating(target):
            return pow_tensor(_as_dtype(x, target, x), _as_dtype(exponent, target, x))
        exponent = exponent.item()
    if not is_floating(target):
        if exponent < 0:
            raise IntegerPowerError(f"pow: integer tensors to negative integer powers are not "
                             f"allowed (got exponent {exponent}); use x.float() ** {exponent}")
        data = x._data.astype(target, copy=False)       # no gradient for integers
        return Tensor._wrap(integer_power(data, np.asarray(exponent, dtype=target)))
    return Pow.apply(_as_dtype(x, target, x), exponent=_number_in(exponent, target))


def _number_in(number: Any, dtype: Any) -> float:
    """A Python number as torch's half-precision power kernels take it: rounded to the
    tensor's dtype (float16, bfloat16; through float32, as c10 converts) first; as it is
    for wider dtypes. ``x_half ** 0.9`` raises x to 0.899902..., as torch."""
    dtype = np.dtype(dtype)
    if dtype.itemsize != 2 or not is_floating(dtype):
        return float(number)
    return float(np.asarray(np.float32(number)).astype(dtype).astype(np.float32))


def _half_and_number(fn: type, a: Any, b: Any) -> Any:
    """torch's CPU mul and div of a float16/bfloat16 tensor and a Python number: the number
    joins the float32 compute as it is (a float32, not rounded to the half dtype first), the
    result is rounded once: half(float32(x) * float32(0.9)). Rounding 0.9 to float16 first
    differs in the last place for a third of the values. (torch's add and sub do round the
    number to the half dtype first, as ``_as_dtype`` does: measured against torch 2.13.) None when the
    operands are not such a pair. The graph is the one half ops get (convert, op, convert)."""
    if isinstance(a, Tensor) and _is_number(b):
        tensor, number = a, b
    elif isinstance(b, Tensor) and _is_number(a):
        tensor, number = b, a
    else:
        return None
    dtype = tensor._data.dtype
    if dtype.itemsize != 2 or not is_floating(dtype) or isinstance(
            number, (bool, np.bool_, complex, np.complexfloating)):   # complex: promoted
        return None
    xp = backend.get_array_module(tensor._data)
    wide = convert(tensor, dtype=np.float32)
    scalar = Tensor._wrap(xp.asarray(np.float32(number)))
    out = fn.apply(wide, scalar) if tensor is a else fn.apply(scalar, wide)
    with np.errstate(over="ignore"):              # beyond the half range is inf, as torch
        result = convert(out, dtype=dtype)
    if result._ctx is not None and out._ctx is not None:
        result._ctx.torch_name = out._ctx             # MulBackward0, as torch's
    return result


def rpow(x: Tensor, base: Any) -> Tensor:
    """``base ** x`` for a number ``base``, with torch's result dtype: an int base to an
    integer tensor stays an integer, exactly (no gradient); a float one is a real power
    (``RPow``, ops/powers.py), also for a negative base (real at whole x, NaN elsewhere)."""
    if isinstance(base, Tensor):
        return pow(base, x)
    _refuse_complex_power(x, base)
    if isinstance(base, (bool, np.bool_)):         # torch: True ** x is 1 ** x
        if x.dtype == np.bool_:      # but True ** bool_tensor has no kernel (result bool)
            raise DtypeNotImplementedError("pow: not implemented for bool base and exponent "
                                           "(as torch's \"pow\" not implemented for 'Bool'); "
                                           "convert the tensor with .int() or .float()")
        base = int(base)
    if not isinstance(
            base, (int, float, np.integer, np.floating)):
        raise TypeError(f"base ** tensor: the base must be a number, got {type(base).__name__}")
    target = result_type(x, base)
    if not is_floating(target):
        data = x._data.astype(target, copy=False)
        xp = backend.get_array_module(data)
        return Tensor._wrap(integer_power(xp.asarray(np.asarray(base).astype(target)), data))
    return RPow.apply(_as_dtype(x, target, x), base=_number_in(base, target))


def _refuse_complex_power(*values: Any) -> None:
    """pow's integer and real paths would drop a complex gradient or imaginary part: refuse."""
    for value in values:
        if isinstance(value, complex) or getattr(getattr(value, "dtype", None), "kind",
                                                 "") == "c":
            raise TypeError("pow: complex powers are not supported in tinyattn; write z * z "
                            "for a square, or work on z.abs() and z.angle() (torch.polar)")


def exp(x: Tensor) -> Tensor:
    return Exp.apply(_as_float(x))


def log(x: Tensor) -> Tensor:
    return Log.apply(_as_float(x))


def sqrt(x: Tensor) -> Tensor:
    return Sqrt.apply(_as_float(x))


def tanh(x: Tensor) -> Tensor:
    return Tanh.apply(_as_float(x))


def relu(x: Tensor) -> Tensor:
    if isinstance(x, Tensor) and x.dtype == np.bool_:   # torch's check, word for word
        raise RuntimeError("Boolean inputs not supported for relu")
    return Relu.apply(x)


def gelu(x: Tensor, approximate: str = "none") -> Tensor:
    if approximate not in ("none", "tanh"):
        raise RuntimeError(f"gelu: approximate must be 'none' or 'tanh', got {approximate!r}")
    return Gelu.apply(_as_float(x), approximate=approximate)


def clone(x: Tensor, *, memory_format: Any = None) -> Tensor:
    """A copy with its own memory; gradients flow through it (PyTorch's ``clone``). Memory
    formats are accepted and change no value (tensor/memory_format.py)."""
    check_memory_format(x.shape, memory_format, "clone")
    return Clone.apply(x)


def clamp(x: Tensor, min: Optional[float] = None,  # noqa: A002 - PyTorch's names
          max: Optional[float] = None) -> Tensor:  # noqa: A002
    """Limit every element to [min, max] (either bound may be None), as ``torch.clamp``.

    Number bounds follow torch's scalar rules: a bool bound is the number 0 or 1; a Python
    float bound (even a whole one, 2.0) makes an integer tensor's result float32; an integer
    bound is converted to an integer tensor's dtype as torch converts it, wrapping a negative
    bound into an unsigned dtype (uint8: -1 is 255, down to -255) and refusing one that does
    not fit (RuntimeError "value cannot be converted to type uint8_t without overflow")."""
    bounds = []
    for name, bound in (("min", min), ("max", max)):
        if isinstance(bound, Tensor):
            if bound.numel() != 1:
                raise TypeError(f"clamp: {name} must be a number (tensor bounds are not "
                                f"supported), got a tensor of shape {bound.shape}")
            bound = bound.item()
        bounds.append(bound)    # a NaN bound makes every element NaN (gradient 0), as torch
    if bounds[0] is None and bounds[1] is None:
        raise ClampBoundsError("torch.clamp: At least one of 'min' or 'max' must not be None "
                               "(give min=, max= or both)")
    given = [b for b in bounds if b is not None]
    if x.dtype.kind == "b" and all(isinstance(b, (bool, np.bool_)) for b in given):
        kernel = ("clamp" if len(given) == 2 else
                  "clamp_min" if bounds[0] is not None else "clamp_max")
        raise NotImplementedError(f'"{kernel}_scalar_cpu" not implemented for \'Bool\' (as torch: '
                                  f'clamp of a bool tensor by bool bounds); convert the tensor '
                                  f'with .int() or .float() first')
    bounds = [None if b is None else (int(b) if isinstance(b, (bool, np.bool_, int, np.integer))
                                      else float(b)) for b in bounds]
    if x.dtype.kind in "biu":
        if any(isinstance(b, float) for b in bounds):
            x = _as_float(x)              # a float bound: PyTorch's default float
        else:                             # integer bounds keep an integer tensor's dtype
            target = np.dtype(np.int64) if x.dtype.kind == "b" else x.dtype
            bounds = [None if b is None else _integer_bound(b, target) for b in bounds]
    return Clamp.apply(x, low=bounds[0], high=bounds[1])


_C_TYPE_NAMES = {"uint8": "uint8_t", "int8": "int8_t", "int16": "int16_t", "int32": "int",
                 "int64": "int64_t", "uint16": "uint16_t", "uint32": "uint32_t",
                 "uint64": "uint64_t"}


def _integer_bound(bound: int, dtype: Any) -> int:
    """A Python int converted to integer ``dtype`` as torch converts a scalar: in range it
    stays; for an unsigned dtype a negative value down to -max wraps (two's complement, -1 in
    uint8 is 255); anything else is torch's RuntimeError."""
    info = np.iinfo(dtype)
    if info.min <= bound <= info.max:
        return bound
    if info.min == 0 and -int(info.max) <= bound < 0:
        return bound % (int(info.max) + 1)
    raise RuntimeError(f"value cannot be converted to type {_C_TYPE_NAMES.get(dtype.name, dtype.name)} "
                       f"without overflow (clamp bound {bound} for a {dtype.name} tensor; its "
                       f"range is {info.min}..{info.max}; pass a bound in that range or convert "
                       f"the tensor)")


def _as_float(x: Tensor) -> Tensor:
    """An integer or bool tensor in PyTorch's default float dtype (float32 unless
    set_default_dtype changed it), for the ops whose result is fractional (exp, log, sqrt,
    ...); float tensors pass through."""
    if x.dtype.kind in "biu":
        return Tensor._wrap(x._data.astype(precision.get_default_dtype()))
    return x


def half_as_float32(x: Optional[Tensor]) -> Optional[Tensor]:
    """A float16 tensor converted to float32 (differentiably); anything else as it is.

    For the ops that square their input before reducing (layer_norm, var, std, norm): in
    float16 any |x| > 256 squares to inf, so they compute in float32 and convert the result
    back, as PyTorch's half-precision kernels accumulate in float32."""
    if x is None or x.dtype != np.float16:
        return x
    return convert(x, dtype=np.float32)


def convert(x: Tensor, device: Optional[str] = None, dtype: Any = None) -> Tensor:
    if device is not None and device == x.device:
        device = None
    if dtype is not None and np.dtype(dtype) == x.dtype:
        dtype = None
    if device is None and dtype is None:
        return x
    if dtype is not None and x.requires_grad and not is_floating(np.dtype(dtype)) and \
            np.dtype(dtype).kind != "c":
        return Tensor._wrap(x._data.astype(dtype))  # to an integer type: leaves the graph
    return Convert.apply(x, device=device, dtype=dtype)
