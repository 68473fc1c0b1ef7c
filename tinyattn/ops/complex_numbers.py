"""Complex tensors: ``real``, ``imag``, ``conj``, ``abs`` and ``angle`` of a complex tensor,
``complex``, ``polar``, ``view_as_real`` and ``view_as_complex``, and the list of the other ops
checked for complex inputs.

Gradients follow torch's convention (docs/derivations.md#complex-numbers): for a real loss L
of a complex z = x + iy, ``z.grad = dL/dx + i dL/dy``. With ``g`` the gradient of the output
w in that convention, an op's input gradient is ``conj(dw/dz) * g + (dw/dconj(z)) * conj(g)``;
for a holomorphic w (mul, div, exp, matmul) that is ``g * conj(w'(z))``, and for a real input
only the real part of what the formula gives reaches it.

Every other op refuses complex inputs with a TypeError naming it (``Function.accepts_complex``
is False by default, autograd/function.py); the ops that order numbers (<, max, argmax, sort)
refuse with torch's NotImplementedError. ``conj`` of a complex tensor is read-only: torch's is
a lazy view whose writes reach the input conjugated, which NumPy cannot express, so a write
raises instead of going nowhere.
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np

from .. import backend, precision
from ..autograd import Function, unbroadcast
from ..tensor import Tensor

__all__ = ["real", "imag", "conj", "conj_physical", "angle", "complex", "polar",
           "view_as_real", "view_as_complex", "is_complex", "complex_abs", "COMPLEX_OPS"]

_COMPLEX_OF = {np.dtype(np.float32): np.dtype(np.complex64),
               np.dtype(np.float64): np.dtype(np.complex128)}


def complex_of(dtype: Any) -> np.dtype:
    """The complex dtype with real parts of ``dtype`` (float32 -> complex64)."""
    return _COMPLEX_OF[np.dtype(dtype)]


def _real_pair_dtype(dtype: Any) -> bool:
    """float32 or float64 (the dtypes with a complex partner here). Through np.dtype, so a
    run-torch dtype (a str that hashes as its name) is found too."""
    return np.dtype(dtype) in _COMPLEX_OF


def is_complex(x: Tensor) -> bool:
    return x.dtype.kind == "c"


class Real(Function):
    """out = Re z, a view (writes reach z).   dz = g + 0i (only x moves the real part)."""

    returns_view = True
    accepts_complex = True

    def forward(self, z):
        self.save_for_backward(z.dtype)
        return z.real

    def backward(self, grad):
        (dtype,) = self.saved
        return grad.astype(dtype)


class Imag(Function):
    """out = Im z, a view.   dz = 0 + i g (only y moves the imaginary part)."""

    returns_view = True
    accepts_complex = True

    def forward(self, z):
        self.save_for_backward(z.dtype)
        return z.imag

    def backward(self, grad):
        (dtype,) = self.saved
        out = backend.get_array_module(grad).zeros(grad.shape, dtype=dtype)
        out.imag = grad
        return out


class Conj(Function):
    """out = conj(z).   dz = conj(g) (w = conj z: dw/dz = 0, dw/dconj(z) = 1)."""

    accepts_complex = True

    def forward(self, z, read_only: bool = False):
        out = z.conj()
        if read_only and isinstance(out, np.ndarray):
            out.flags.writeable = False    # torch's conj is a view: refuse writes, loudly
        return out

    def backward(self, grad):
        return grad.conj()


class ComplexAbs(Function):
    """out = |z| (real).   dz = g * z / |z|, 0 where z = 0 (torch's choice there)."""

    accepts_complex = True

    def forward(self, z):
        out = backend.get_array_module(z).abs(z)
        self.save_for_backward(z, out)
        return out

    def backward(self, grad):
        z, out = self.saved
        xp = backend.get_array_module(z)
        safe = xp.where(out == 0, 1, out)
        return xp.where(out == 0, 0, grad * z / safe).astype(z.dtype)


class Angle(Function):
    """out = atan2(y, x) for complex z (real).   dz = g * (-y + i x) / |z|^2 = g * i z / |z|^2,
    0 at z = 0 (torch's choice). A real x: pi where x < 0, else 0 (NaN stays), dx = 0."""

    accepts_complex = True

    def forward(self, z):
        xp = backend.get_array_module(z)
        self.save_for_backward(z)
        if z.dtype.kind == "c":
            return xp.angle(z)
        out = xp.where(z < 0, math.pi, 0.0).astype(z.dtype)
        return xp.where(xp.isnan(z), z, out)

    def backward(self, grad):
        (z,) = self.saved
        xp = backend.get_array_module(z)
        if z.dtype.kind != "c":
            return xp.zeros_like(z)
        square = (z * z.conj()).real
        safe = xp.where(square == 0, 1, square)
        return xp.where(square == 0, 0, grad * 1j * z / safe).astype(z.dtype)


class MakeComplex(Function):
    """out = re + i im (broadcast).   d re = Re g, d im = Im g (each unbroadcast)."""

    versions_checked = (0, 1)   # torch's backward keeps both inputs: a write to one raises

    def forward(self, re, im):
        xp = backend.get_array_module(re)
        shape = np.broadcast_shapes(re.shape, im.shape)
        out = xp.empty(shape, dtype=complex_of(re.dtype))
        out.real, out.imag = re, im
        self.save_for_backward(re.shape, im.shape)
        return out

    def backward(self, grad):
        re_shape, im_shape = self.saved
        return (unbroadcast(grad.real, re_shape) if self.needs_input_grad[0] else None,
                unbroadcast(grad.imag, im_shape) if self.needs_input_grad[1] else None)


class Polar(Function):
    """out = r e^{i theta}.   d r = Re(g conj(e^{i theta})), d theta = Re(g conj(i out))
    (for a real input p: dL/dp = Re(g conj(dw/dp))).

    The parts are r cos(theta) and r sin(theta), each one product, as torch's kernel: the
    complex product r * e^{i theta} would add 0 * cos(theta) to the imaginary part, turning
    r = 0 with sin(theta) < 0 into +0 where torch keeps -0 (printed ``0.-0.j``)."""

    def forward(self, r, theta):
        xp = backend.get_array_module(r)
        unit = xp.empty(theta.shape, dtype=complex_of(theta.dtype))
        unit.real, unit.imag = xp.cos(theta), xp.sin(theta)
        out = xp.empty(np.broadcast_shapes(r.shape, theta.shape), dtype=unit.dtype)
        with np.errstate(invalid="ignore"):                  # inf * sin(0) is NaN quietly
            out.real, out.imag = r * unit.real, r * unit.imag   # an array: version noted
        self.save_for_backward(r.shape, theta.shape, unit, out)
        return out

    def backward(self, grad):
        r_shape, theta_shape, unit, out = self.saved
        return (unbroadcast((grad * unit.conj()).real, r_shape)
                if self.needs_input_grad[0] else None,
                unbroadcast((grad * (1j * out).conj()).real, theta_shape)
                if self.needs_input_grad[1] else None)


class ViewAsReal(Function):
    """out[..., 0] = Re z, out[..., 1] = Im z, a view of z's memory.
    dz = g[..., 0] + i g[..., 1]."""

    returns_view = True
    accepts_complex = True

    def forward(self, z):
        xp = backend.get_array_module(z)
        parts = z.real                       # a view with z's strides, of the real dtype
        self.save_for_backward(z.dtype)
        return xp.lib.stride_tricks.as_strided(
            parts, shape=z.shape + (2,), strides=z.strides + (parts.itemsize,))

    def backward(self, grad):
        (dtype,) = self.saved
        out = backend.get_array_module(grad).empty(grad.shape[:-1], dtype=dtype)
        out.real, out.imag = grad[..., 0], grad[..., 1]
        return out


class ViewAsComplex(Function):
    """out = x[..., 0] + i x[..., 1], a view of x's memory.   dx = stack(Re g, Im g)."""

    returns_view = True

    def forward(self, x):
        return x.view(complex_of(x.dtype))[..., 0]

    def backward(self, grad):
        xp = backend.get_array_module(grad)
        return xp.stack([grad.real, grad.imag], axis=-1)


# ------------------------------------------------------------------ public functions
def _tensor(x: Any, op: str) -> Tensor:
    if not isinstance(x, Tensor):
        raise TypeError(f"{op}(): argument 'input' (position 1) must be Tensor, not "
                        f"{type(x).__name__}")
    return x


def real(input: Tensor) -> Tensor:  # noqa: A002 - torch's name
    """``torch.real``: the real part, a view (a real tensor: itself, as torch)."""
    x = _tensor(input, "real")
    return Real.apply(x) if x.dtype.kind == "c" else x


def imag(input: Tensor) -> Tensor:  # noqa: A002
    """``torch.imag``: the imaginary part, a view; a real tensor is refused, as torch."""
    x = _tensor(input, "imag")
    if x.dtype.kind != "c":
        raise RuntimeError("imag is not implemented for tensors with non-complex dtypes.")
    return Imag.apply(x)


def conj(input: Tensor) -> Tensor:  # noqa: A002
    """``torch.conj``: a real tensor itself; a complex one's conjugate, read-only (torch's is a
    lazy view whose writes would reach the input; use ``conj_physical`` for a writable copy)."""
    x = _tensor(input, "conj")
    return Conj.apply(x, read_only=True) if x.dtype.kind == "c" else x


def conj_physical(input: Tensor) -> Tensor:  # noqa: A002
    """``torch.conj_physical``: the conjugate in new memory (a real tensor: the input itself,
    as torch returns it)."""
    x = _tensor(input, "conj_physical")
    return Conj.apply(x) if x.dtype.kind == "c" else x


def complex_abs(x: Tensor) -> Tensor:
    return ComplexAbs.apply(x)


def angle(input: Tensor) -> Tensor:  # noqa: A002
    """``torch.angle``: the argument in (-pi, pi] of a complex tensor (real result); a real
    tensor gives pi where negative, else 0 (integers in the default float dtype), as torch."""
    x = _tensor(input, "angle")
    if x.dtype.kind in "biu":
        x = x.to(precision.get_default_dtype())
    return Angle.apply(x)


def _same_float_pair(op: str, a: Any, b: Any, names: tuple) -> None:
    for value, name in zip((a, b), names):
        if not isinstance(value, Tensor):
            raise TypeError(f"{op}(): argument '{name}' must be Tensor, not "
                            f"{type(value).__name__}")
    if a.dtype != b.dtype:
        raise RuntimeError(f"{op}: expected both inputs to have the same dtype, got {a.dtype} "
                           f"and {b.dtype} (torch does not promote them either); convert one")
    if not _real_pair_dtype(a.dtype):
        raise RuntimeError(f"{op}: supported for float and double tensors only, got "
                           f"{a.dtype} (float16 would give torch's complex32, which tinyattn "
                           f"does not have)")


def complex(real: Tensor, imag: Tensor) -> Tensor:  # noqa: A001 - torch's name
    """``torch.complex``: real + i imag (float32 -> complex64, float64 -> complex128)."""
    _same_float_pair("complex", real, imag, ("real", "imag"))
    precision.note_complex()
    return MakeComplex.apply(real, imag)


def polar(abs: Tensor, angle: Tensor) -> Tensor:  # noqa: A002 - torch's names
    """``torch.polar``: abs * (cos(angle) + i sin(angle))."""
    _same_float_pair("polar", abs, angle, ("abs", "angle"))
    precision.note_complex()
    return Polar.apply(abs, angle)


def view_as_real(input: Tensor) -> Tensor:  # noqa: A002
    """``torch.view_as_real``: a real view of shape (..., 2) of a complex tensor."""
    x = _tensor(input, "view_as_real")
    if x.dtype.kind != "c":
        raise RuntimeError("view_as_real is only supported for complex tensors")
    return ViewAsReal.apply(x)


def view_as_complex(input: Tensor) -> Tensor:  # noqa: A002
    """``torch.view_as_complex``: a complex view of a float tensor of shape (..., 2)."""
    x = _tensor(input, "view_as_complex")
    if not _real_pair_dtype(x.dtype):
        raise RuntimeError(f"view_as_complex is only supported for float and double tensors, "
                           f"but got a tensor of scalar type: {x.dtype}")
    if x.ndim == 0 or x.shape[-1] != 2:
        raise RuntimeError(f"Tensor must have a last dimension of size 2 (got shape "
                           f"{tuple(x.shape)})")
    data = x._data
    item = data.itemsize
    if data.strides[-1] != item:
        raise RuntimeError("Tensor must have a last dimension with stride 1")
    if any(s % (2 * item) for s in data.strides[:-1]):
        raise RuntimeError("Tensor must have a stride divisible by 2 for all but last "
                           "dimension")
    precision.note_complex()
    return ViewAsComplex.apply(x)


# ------------------------------------------------------------------ the ops checked
def _mark_checked() -> tuple:
    """The Functions whose forward and backward hold for complex numbers, besides the ones
    above. The shape ops move or copy elements (their backward moves the gradient back, the
    same for any dtype), and so do Where, MaskedFill, DiagEmbed and Diagonal (they select); Add, Sub,
    Neg, Sum, Mean are real-linear with real coefficients; Mul, Div, Exp, Matmul, Square and
    Reciprocal conjugate in their backward (docs/derivations.md); Convert takes
    the real part of a gradient going back to a real input."""
    from .elementwise import Add, Clone, Convert, Div, Exp, Mul, Neg, Sub  # noqa: PLC0415
    from .layout import Expand, Flip, Repeat                               # noqa: PLC0415
    from .matmul import Matmul                                             # noqa: PLC0415
    from .rearrange import Roll                                            # noqa: PLC0415
    from .reduce import Mean, Sum                                          # noqa: PLC0415
    from .shape import Concat, GetItem, Permute, Reshape, Stack            # noqa: PLC0415
    from .masking import MaskedFill, Where                                 # noqa: PLC0415
    from .grids import DiagEmbed                                           # noqa: PLC0415
    from .rearrange import Diagonal                                        # noqa: PLC0415
    from .rounding import Reciprocal, Square                               # noqa: PLC0415
    checked = (Add, Sub, Mul, Div, Neg, Exp, Clone, Convert, Matmul, Sum, Mean, Reshape,
               Permute, GetItem, Concat, Stack, Expand, Flip, Repeat, Roll, Where, MaskedFill,
               DiagEmbed, Diagonal, Square, Reciprocal)
    for cls in checked:
        cls.accepts_complex = True
    return checked


COMPLEX_OPS = _mark_checked()
