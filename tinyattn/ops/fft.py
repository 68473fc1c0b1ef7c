"""``torch.fft``: discrete Fourier transforms on NumPy's (CuPy's) pocketfft, with gradients.

Three Functions carry every transform; each is linear, so its backward is its adjoint
(docs/derivations.md#fourier-transforms), with torch's convention for complex gradients
(``z.grad = dL/dRe z + i dL/dIm z``, docs/derivations.md#complex-numbers):

- ``C2C``  (fft, ifft, fft2, ifft2, fftn, ifftn): out = scale * F x (or F^H x for the inverse).
  dx = the opposite transform of g with the *dual* normalisation (scale * F^H g), since the
  adjoint of scale * F is scale * F^H: "backward" <-> "forward", "ortho" <-> "ortho".
- ``R2C``  (rfft, rfft2, rfftn, and ihfft through conj): out = the first n//2 + 1 bins of the
  full transform of a real x. Its adjoint pads g with zeros back to n bins, applies the
  inverse transform with the dual normalisation and keeps the real part.
- ``C2R``  (irfft, irfft2, irfftn, and hfft through conj): out = the real signal whose
  one-sided spectrum is X; the imaginary parts of the first bin (and of the last when n is
  even) are ignored. Its adjoint is the one-sided forward transform of g with the dual
  normalisation, with bins 1 .. n - n//2 - 1 doubled (each stands for itself and its mirror
  image in the full spectrum).

``n``/``s`` pad with zeros or cut the input along each transformed dim first, as torch; the
backward cuts or pads the gradient back to the input's size. Real inputs of the complex
transforms are converted to complex first (a differentiable ``to``, whose backward keeps the
real part). float32 (and integers) give complex64, float64 complex128; float16 and bfloat16
are refused, as torch's CPU refuses them.
"""
from __future__ import annotations

import functools
import inspect
from typing import Any, Optional, Sequence, Tuple

import numpy as np

from .. import backend, precision
from ..autograd import Function, name_node
from ..tensor import Tensor, normalize_dtype
from .complex_numbers import conj_physical
from .elementwise import convert
from .rearrange import roll
from .torch_keywords import write_out
from ..precision import scalar_type_name

__all__ = ["fft", "ifft", "rfft", "irfft", "fft2", "ifft2", "rfft2", "irfft2", "fftn", "ifftn",
           "rfftn", "irfftn", "hfft", "ihfft", "hfft2", "ihfft2", "hfftn", "ihfftn", "fftfreq",
           "rfftfreq", "fftshift", "ifftshift"]

_NORMS = ("backward", "ortho", "forward")
_DUAL = {"backward": "forward", "ortho": "ortho", "forward": "backward"}


def _fit(array: Any, axes: Sequence[int], sizes: Sequence[int]) -> Any:
    """``array`` cut or padded with zeros along ``axes`` to ``sizes`` (what pocketfft's n/s
    do to the input; the backward does it to the gradient, the other way round)."""
    xp = backend.get_array_module(array)
    cut = [slice(None)] * array.ndim
    pads = [(0, 0)] * array.ndim
    changed = False
    for axis, size in zip(axes, sizes):
        have = array.shape[axis]
        if have > size:
            cut[axis] = slice(0, size)
            changed = True
        elif have < size:
            pads[axis] = (0, size - have)
            changed = True
    if not changed:
        return array
    array = array[tuple(cut)]
    if any(p != (0, 0) for p in pads):
        array = xp.pad(array, pads)
    return array


class C2C(Function):
    """out = fftn(x) (or ifftn) over ``axes`` with sizes ``sizes``, normalised by ``norm``.
    dx = ifftn(g) (or fftn) with the dual norm, then cut/padded back to x's sizes."""

    accepts_complex = True

    def forward(self, x, axes: Tuple[int, ...], sizes: Tuple[int, ...], norm: str,
                inverse: bool):
        self.save_for_backward([x.shape[a] for a in axes], axes, sizes, norm, inverse)
        xp = backend.get_array_module(x)
        transform = xp.fft.ifftn if inverse else xp.fft.fftn
        return transform(x, s=sizes, axes=axes, norm=norm).astype(x.dtype, copy=False)

    def backward(self, grad):
        had, axes, sizes, norm, inverse = self.saved
        xp = backend.get_array_module(grad)
        transform = xp.fft.fftn if inverse else xp.fft.ifftn
        dx = transform(grad, s=sizes, axes=axes, norm=_DUAL[norm]).astype(grad.dtype,
                                                                          copy=False)
        return _fit(dx, axes, had)


class RealC2C(C2C):
    """C2C of a real x (fft, ifft, fft2, fftn, ... of a real signal), computed as torch's
    real-to-complex kernel does: the one-sided transform (rfftn), the other half filled with
    the conjugates of the mirrored bins, X[k] = conj(X[-k mod n]), and the bins that are their
    own mirror (every index 0 or n/2) exactly real. So the imaginary parts a real signal's
    spectrum has exactly 0 are 0 here too (a complex transform of x + 0i leaves ~1e-17 there,
    which prints differently). An inverse is the conjugate of the forward transform with the
    dual norm (ifft x = conj(fft x) / n for a real x).
    dx = Re of C2C's backward (x is real: only the real part of its gradient reaches it)."""

    accepts_complex = False

    def forward(self, x, axes: Tuple[int, ...], sizes: Tuple[int, ...], norm: str,
                inverse: bool, one_d: bool):
        self.save_for_backward([x.shape[a] for a in axes], axes, sizes, norm, inverse)
        self.real_dtype = x.dtype
        if one_d:                 # torch's 1-D real-to-complex node keeps x: a write raises
            _check_version_when_unresized(self, x, axes, sizes)
        xp = backend.get_array_module(x)
        half = xp.fft.rfftn(x, s=sizes, axes=axes, norm=_DUAL[norm] if inverse else norm)
        full = _hermitian_fill(_drop_rounding_noise(half, axes), axes, sizes)
        if inverse:
            full = full.conj()
        _make_self_conjugate_bins_real(full, axes, sizes, negative_zero=inverse and one_d)
        if not one_d:             # torch transforms x + 0i there: its exact zeros are +0.0,
            full += 0.0           # not the -0.0 a mirrored conjugate gives (-0.0 + 0.0 = 0.0)
        return full.astype(_complex_dtype(x.dtype), copy=False)

    def backward(self, grad):
        return super().backward(grad).real.astype(self.real_dtype)


def _check_version_when_unresized(fn: Function, x: Any, axes: Sequence[int],
                                  sizes: Sequence[int]) -> None:
    """torch's real-to-complex node keeps its input: x itself when n/s leave it as it is (a
    later in-place write to x makes the backward raise), else the padded/cut copy (no error)."""
    if all(x.shape[a] == n for a, n in zip(axes, sizes)):
        fn.versions_checked = (0,)


def _hermitian_fill(half: Any, axes: Sequence[int], sizes: Sequence[int]) -> Any:
    """The full spectrum of a real signal from its one-sided one (bins 0 .. n//2 of the last
    axis): bin k of the last axis for k > n//2 is conj(X[-k mod n]) over every axis."""
    xp = backend.get_array_module(half)
    last, n = axes[-1], sizes[-1]
    missing = n - n // 2 - 1                      # bins n//2 + 1 .. n - 1
    if missing == 0:
        return half
    index = [slice(None)] * half.ndim
    index[last] = slice(missing, 0, -1)           # bins n - k for k = n//2 + 1 .. n - 1
    mirror = half[tuple(index)]
    for axis in axes[:-1]:                        # j -> -j mod n: 0, n - 1, ..., 1
        mirror = xp.roll(xp.flip(mirror, axis), 1, axis)
    return xp.concatenate([half, mirror.conj()], axis=last)


def _drop_rounding_noise(spectrum: Any, axes: Sequence[int]) -> Any:
    """The spectrum of a real signal with each real or imaginary part smaller than eps times
    the largest magnitude of its transform (over ``axes``) set to 0. A transform's error per
    bin is about eps times its typical magnitude, so such a part is rounding noise: where the
    exact value is 0 (a constant or integer-valued signal: bins that cancel exactly), pocketfft
    leaves ~1e-16 and torch's kernel 0, and the printout would switch to scientific notation.
    Zeroing it changes no value by more than the transform's own error."""
    xp = backend.get_array_module(spectrum)
    if spectrum.size == 0:
        return spectrum
    eps = np.finfo(spectrum.real.dtype).eps
    limit = xp.abs(spectrum).max(axis=tuple(axes), keepdims=True) * eps
    re, im = spectrum.real, spectrum.imag
    # where() rather than "if any(): write": no host sync on a GPU (the strict device's check)
    out = xp.empty_like(spectrum)
    out.real = xp.where(xp.abs(re) < limit, 0, re)
    out.imag = xp.where(xp.abs(im) < limit, 0, im)
    return out


def _make_self_conjugate_bins_real(full: Any, axes: Sequence[int], sizes: Sequence[int],
                                   negative_zero: bool) -> None:
    """Zero the imaginary part of the bins that are their own mirror (each index 0, or n/2
    for an even n): a real signal's spectrum is exactly real there. -0.0 for the 1-D inverse,
    which torch computes as the conjugate of the forward transform (it prints -0.0000j)."""
    index = [slice(None)] * full.ndim
    for axis, n in zip(axes, sizes):
        index[axis] = [0, n // 2] if n % 2 == 0 and n > 1 else [0]
    xp = backend.get_array_module(full)
    grid = xp.ix_(*[xp.arange(full.shape[a]) if isinstance(i, slice) else xp.asarray(i)
                    for a, i in enumerate(index)])
    full.imag[grid] = -0.0 if negative_zero else 0.0


class R2C(Function):
    """out = rfftn(x): the full transform's bins 0 .. n//2 along the last axis.
    dx = Re ifftn(g padded with zeros to n bins, dual norm), cut/padded back to x's sizes."""

    def forward(self, x, axes: Tuple[int, ...], sizes: Tuple[int, ...], norm: str):
        self.save_for_backward([x.shape[a] for a in axes], axes, sizes, norm, x.dtype)
        xp = backend.get_array_module(x)
        _check_version_when_unresized(self, x, axes, sizes)
        out = _drop_rounding_noise(xp.fft.rfftn(x, s=sizes, axes=axes, norm=norm), axes)
        _make_self_conjugate_bins_real(out, axes, sizes, negative_zero=False)
        return out.astype(_complex_dtype(x.dtype), copy=False)

    def backward(self, grad):
        had, axes, sizes, norm, dtype = self.saved
        xp = backend.get_array_module(grad)
        full = _fit(grad, axes[-1:], sizes[-1:])          # bins n//2 + 1 .. n - 1: zeros
        dx = xp.fft.ifftn(full, s=sizes, axes=axes, norm=_DUAL[norm]).real.astype(dtype)
        return _fit(dx, axes, had)


class C2R(Function):
    """out = irfftn(X) with output sizes ``sizes`` (last: n, reading n//2 + 1 bins).
    dX = rfftn(g, dual norm) with bins 1 .. n - n//2 - 1 of the last axis doubled, then
    cut/padded back to X's sizes."""

    accepts_complex = True

    def forward(self, X, axes: Tuple[int, ...], sizes: Tuple[int, ...], norm: str):
        self.save_for_backward([X.shape[a] for a in axes], axes, sizes, norm, X.dtype)
        xp = backend.get_array_module(X)
        out = xp.fft.irfftn(X, s=sizes, axes=axes, norm=norm)
        return out.astype(X.real.dtype, copy=False)

    def backward(self, grad):
        had, axes, sizes, norm, dtype = self.saved
        xp = backend.get_array_module(grad)
        dX = xp.fft.rfftn(grad, s=sizes, axes=axes, norm=_DUAL[norm]).astype(dtype)
        n = sizes[-1]
        doubled = n - n // 2 - 1
        if doubled > 0:
            index = [slice(None)] * dX.ndim
            index[axes[-1]] = slice(1, 1 + doubled)
            dX[tuple(index)] *= 2
        return _fit(dX, axes, had)


# ------------------------------------------------------------------ argument checks
def _complex_dtype(dtype: Any) -> np.dtype:
    return np.dtype(np.complex128) if np.dtype(dtype) == np.float64 else \
        np.dtype(np.complex64)


def _check_input(x: Any, op: str) -> Tensor:
    if not isinstance(x, Tensor):
        raise TypeError(f"fft_{op}(): argument 'input' (position 1) must be Tensor, not "
                        f"{type(x).__name__}")
    if x.dtype.kind in "biu":                  # torch: integers as the default float
        x = x.to(precision.get_default_dtype())
    if precision.is_low_precision(x.dtype):
        name = "Half" if x.dtype == np.float16 else "BFloat16"
        raise RuntimeError(f"fft_{op}: Unsupported dtype {name} ({x.dtype}; torch's CPU FFT "
                           f"has no half precision either); convert with .float() first")
    return x


def _norm(norm: Optional[str], op: str) -> str:
    if norm is None:
        return "backward"
    if norm not in _NORMS:
        raise ValueError(f"fft_{op}: Invalid normalization mode: {norm!r} (use one of "
                         f"'backward', 'ortho', 'forward' or None)")
    return norm


def _axis(dim: Any, ndim: int, op: str) -> int:
    if isinstance(dim, bool) or not isinstance(dim, (int, np.integer)):
        raise TypeError(f"fft_{op}(): dim must be an int, got {type(dim).__name__}")
    if not -max(ndim, 1) <= dim < max(ndim, 1) or ndim == 0:
        raise IndexError(f"fft_{op}: Dimension out of range (expected to be in range of "
                         f"[{-max(ndim, 1)}, {max(ndim, 1) - 1}], but got {dim})")
    return int(dim) % ndim


def _axes_and_sizes(x: Tensor, s: Any, dim: Any, op: str, last_from: Optional[str] = None
                    ) -> Tuple[Tuple[int, ...], Tuple[Optional[int], ...]]:
    """torch's rules for (s, dim) of the n-dimensional transforms: dim None and s None: every
    dim; dim None and s given: the last len(s) dims; both given: the same length. An entry -1
    of s keeps that dim's size (None here; filled by the caller)."""
    if isinstance(dim, (int, np.integer)):
        dim = (dim,)
    if isinstance(s, (int, np.integer)):
        s = (s,)
    if dim is None:
        count = x.ndim if s is None else len(s)
        if count > x.ndim:
            raise RuntimeError(f"fft_{op}: Got shape with {count} values but input tensor "
                               f"only has {x.ndim} dimensions.")
        axes = tuple(range(x.ndim - count, x.ndim))
    else:
        axes = tuple(_axis(d, x.ndim, op) for d in dim)
        if len(set(axes)) != len(axes):
            raise RuntimeError(f"fft_{op}: FFT dims must be unique, got dim={tuple(dim)}")
        if s is not None and len(s) != len(axes):
            raise RuntimeError(f"fft_{op}: When given, dim and shape arguments must have the "
                               f"same length (got s={tuple(s)} and dim={tuple(dim)})")
    sizes = (None,) * len(axes) if s is None else tuple(None if int(n) == -1 else int(n)
                                                         for n in s)
    for n in sizes:
        if n is not None and n < 1:
            raise RuntimeError(f"fft_{op}: Invalid number of data points ({n}) specified")
    return axes, sizes


def _as_complex(x: Tensor) -> Tensor:
    if x.dtype.kind == "c":
        return x
    precision.note_complex()
    return convert(x, dtype=_complex_dtype(x.dtype))


def _complex_transform(x: Any, s: Any, dim: Any, norm: Optional[str], op: str,
                       inverse: bool, one_d: bool = False) -> Tensor:
    x = _check_input(x, op)
    axes, sizes = _axes_and_sizes(x, s, dim, op)
    sizes = tuple(x.shape[a] if n is None else n for a, n in zip(axes, sizes))
    if not axes:
        return _as_complex(x).clone()
    _check_not_empty(x, axes, sizes, op)
    if x.dtype.kind != "c":
        precision.note_complex()
        out = RealC2C.apply(x, axes=axes, sizes=sizes, norm=_norm(norm, op), inverse=inverse,
                            one_d=one_d)
        return name_node(out, _real_node_name(one_d, inverse))
    return C2C.apply(x, axes=axes, sizes=sizes, norm=_norm(norm, op), inverse=inverse)


def _real_node_name(one_d: bool, inverse: bool) -> str:
    """torch's node for a transform of a real signal: its fft is one real-to-complex node
    and its ifft the conjugate of one; fft2/fftn/... convert to complex first."""
    if not one_d:
        return "FftC2CBackward0"
    return "ConjBackward0" if inverse else "FftR2CBackward0"


def _check_not_empty(x: Tensor, axes: Sequence[int], sizes: Sequence[int], op: str) -> None:
    for axis, n in zip(axes, sizes):
        if n < 1:
            raise RuntimeError(f"fft_{op}: Invalid number of data points ({n}) specified")


def _real_forward(x: Any, s: Any, dim: Any, norm: Optional[str], op: str) -> Tensor:
    x = _check_input(x, op)
    if x.dtype.kind == "c":
        raise RuntimeError(f"fft_{op}: {op} expects a real input tensor, but got {x.dtype}")
    axes, sizes = _axes_and_sizes(x, s, dim, op)
    if not axes:
        raise RuntimeError(f"fft_{op}: must transform at least one axis")
    sizes = tuple(x.shape[a] if n is None else n for a, n in zip(axes, sizes))
    _check_not_empty(x, axes, sizes, op)
    precision.note_complex()
    return R2C.apply(x, axes=axes, sizes=sizes, norm=_norm(norm, op))


def _real_inverse(x: Any, s: Any, dim: Any, norm: Optional[str], op: str) -> Tensor:
    x = _check_input(x, op)
    axes, sizes = _axes_and_sizes(x, s, dim, op)
    if not axes:
        raise RuntimeError(f"fft_{op}: must transform at least one axis")
    last = axes[-1]
    filled = [x.shape[a] if n is None else n for a, n in zip(axes[:-1], sizes[:-1])]
    filled.append(2 * (x.shape[last] - 1) if sizes[-1] is None else sizes[-1])
    _check_not_empty(x, axes, filled, op)
    return C2R.apply(_as_complex(x), axes=axes, sizes=tuple(filled), norm=_norm(norm, op))


# ------------------------------------------------------------------ public functions
def _takes_out(fn: Any) -> Any:
    """``fn`` taking torch's ``out=``: the result written into ``out`` (resized as torch
    resizes it), which must be complex for a complex result and a floating tensor for a real
    one (a complex128 out takes a complex64 result, as torch's); ihfft's out must have the
    result's dtype (torch's conj_physical_out). Refused while recording gradients, as torch's."""
    name = fn.__name__

    @functools.wraps(fn)
    def call(*args: Any, out: Optional[Tensor] = None, **kwargs: Any) -> Tensor:
        result = fn(*args, **kwargs)
        if out is None:
            return result
        if not isinstance(out, Tensor):
            raise TypeError(f"fft_{name}(): argument 'out' must be Tensor, not "
                            f"{type(out).__name__}")
        complex_result = result.dtype.kind == "c"
        if complex_result and out.dtype.kind != "c":
            raise RuntimeError(f"{name} expects a complex output tensor, but got "
                               f"{_scalar_name(out.dtype)} (pass out= of dtype {result.dtype})")
        if not complex_result and not precision.is_floating(out.dtype):
            raise RuntimeError(f"{name} expects a floating point output tensor, but got "
                               f"{_scalar_name(out.dtype)} (pass out= of dtype {result.dtype})")
        if name == "ihfft" and out.dtype != result.dtype:
            raise RuntimeError(f"Found dtype {_scalar_name(out.dtype)} but expected "
                               f"{_scalar_name(result.dtype)} (ihfft's out= must have the "
                               f"result's dtype, {result.dtype})")
        return write_out(f"fft_{name}", out, result)

    signature = inspect.signature(fn)
    call.__signature__ = signature.replace(parameters=list(signature.parameters.values()) + [
        inspect.Parameter("out", inspect.Parameter.KEYWORD_ONLY, default=None)])
    return call


_scalar_name = scalar_type_name    # torch's ScalarType name (complex64 -> ComplexFloat)


@_takes_out
def fft(input: Tensor, n: Optional[int] = None, dim: int = -1,  # noqa: A002 - torch's names
        norm: Optional[str] = None) -> Tensor:
    """``torch.fft.fft``: the 1-D discrete Fourier transform along ``dim`` (complex result)."""
    return _complex_transform(input, n, _one(dim), norm, "fft", inverse=False, one_d=True)


@_takes_out
def ifft(input: Tensor, n: Optional[int] = None, dim: int = -1,  # noqa: A002
         norm: Optional[str] = None) -> Tensor:
    """``torch.fft.ifft``: the 1-D inverse transform (1/n scaling under "backward")."""
    return _complex_transform(input, n, _one(dim), norm, "ifft", inverse=True, one_d=True)


@_takes_out
def fft2(input: Tensor, s: Any = None, dim: Any = (-2, -1),  # noqa: A002
         norm: Optional[str] = None) -> Tensor:
    return _complex_transform(input, s, dim, norm, "fft2", inverse=False)


@_takes_out
def ifft2(input: Tensor, s: Any = None, dim: Any = (-2, -1),  # noqa: A002
          norm: Optional[str] = None) -> Tensor:
    return _complex_transform(input, s, dim, norm, "ifft2", inverse=True)


@_takes_out
def fftn(input: Tensor, s: Any = None, dim: Any = None,  # noqa: A002
         norm: Optional[str] = None) -> Tensor:
    return _complex_transform(input, s, dim, norm, "fftn", inverse=False)


@_takes_out
def ifftn(input: Tensor, s: Any = None, dim: Any = None,  # noqa: A002
          norm: Optional[str] = None) -> Tensor:
    return _complex_transform(input, s, dim, norm, "ifftn", inverse=True)


@_takes_out
def rfft(input: Tensor, n: Optional[int] = None, dim: int = -1,  # noqa: A002
         norm: Optional[str] = None) -> Tensor:
    """``torch.fft.rfft``: the transform of a real signal, bins 0 .. n//2 (n//2 + 1 of them)."""
    return _real_forward(input, n, _one(dim), norm, "rfft")


@_takes_out
def irfft(input: Tensor, n: Optional[int] = None, dim: int = -1,  # noqa: A002
          norm: Optional[str] = None) -> Tensor:
    """``torch.fft.irfft``: the real signal of length n (default 2 * (m - 1)) whose one-sided
    spectrum is ``input``."""
    return _real_inverse(input, n, _one(dim), norm, "irfft")


@_takes_out
def rfft2(input: Tensor, s: Any = None, dim: Any = (-2, -1),  # noqa: A002
          norm: Optional[str] = None) -> Tensor:
    return _real_forward(input, s, dim, norm, "rfft2")


@_takes_out
def irfft2(input: Tensor, s: Any = None, dim: Any = (-2, -1),  # noqa: A002
           norm: Optional[str] = None) -> Tensor:
    return _real_inverse(input, s, dim, norm, "irfft2")


@_takes_out
def rfftn(input: Tensor, s: Any = None, dim: Any = None,  # noqa: A002
          norm: Optional[str] = None) -> Tensor:
    return _real_forward(input, s, dim, norm, "rfftn")


@_takes_out
def irfftn(input: Tensor, s: Any = None, dim: Any = None,  # noqa: A002
           norm: Optional[str] = None) -> Tensor:
    return _real_inverse(input, s, dim, norm, "irfftn")


@_takes_out
def hfft(input: Tensor, n: Optional[int] = None, dim: int = -1,  # noqa: A002
         norm: Optional[str] = None) -> Tensor:
    """``torch.fft.hfft``: the real spectrum of a signal that is Hermitian in time, given by
    its first half: irfft(conj(input)) with the dual normalisation (so "backward" does not
    scale, as torch's)."""
    x = _check_input(input, "hfft")
    x = conj_physical(_as_complex(x))
    return _real_inverse(x, n, _one(dim), _DUAL[_norm(norm, "hfft")], "hfft")


@_takes_out
def ihfft(input: Tensor, n: Optional[int] = None, dim: int = -1,  # noqa: A002
          norm: Optional[str] = None) -> Tensor:
    """``torch.fft.ihfft``: the inverse of hfft: conj(rfft(input)) with the dual
    normalisation (1/n under "backward")."""
    x = _check_input(input, "ihfft")
    if x.dtype.kind == "c":
        raise RuntimeError(f"fft_ihfft: ihfft expects a real input tensor, but got {x.dtype}")
    return conj_physical(_real_forward(x, n, _one(dim), _DUAL[_norm(norm, "ihfft")],
                                       "ihfft"))


@_takes_out
def hfft2(input: Tensor, s: Any = None, dim: Any = (-2, -1),  # noqa: A002
          norm: Optional[str] = None) -> Tensor:
    """``torch.fft.hfft2``: hfftn over two dims (the last two by default)."""
    return _hermitian_inverse(input, s, dim, norm, "hfft2")


@_takes_out
def hfftn(input: Tensor, s: Any = None, dim: Any = None,  # noqa: A002
          norm: Optional[str] = None) -> Tensor:
    """``torch.fft.hfftn``: the real n-D spectrum of a signal that is Hermitian in time, given
    by its half along the last dim: irfftn(conj(input)) with the dual normalisation (the
    forward transform of the full Hermitian signal; "backward" does not scale)."""
    return _hermitian_inverse(input, s, dim, norm, "hfftn")


@_takes_out
def ihfft2(input: Tensor, s: Any = None, dim: Any = (-2, -1),  # noqa: A002
           norm: Optional[str] = None) -> Tensor:
    """``torch.fft.ihfft2``: ihfftn over two dims (the last two by default)."""
    return _hermitian_forward(input, s, dim, norm, "ihfft2")


@_takes_out
def ihfftn(input: Tensor, s: Any = None, dim: Any = None,  # noqa: A002
           norm: Optional[str] = None) -> Tensor:
    """``torch.fft.ihfftn``: the inverse of hfftn: conj(rfftn(input)) with the dual
    normalisation (1/N under "backward"), the last dim one-sided."""
    return _hermitian_forward(input, s, dim, norm, "ihfftn")


def _hermitian_inverse(input: Any, s: Any, dim: Any, norm: Optional[str], op: str) -> Tensor:
    x = _check_input(input, op)
    x = conj_physical(_as_complex(x))
    return _real_inverse(x, s, dim, _DUAL[_norm(norm, op)], op)


def _hermitian_forward(input: Any, s: Any, dim: Any, norm: Optional[str], op: str) -> Tensor:
    x = _check_input(input, op)
    if x.dtype.kind == "c":
        raise RuntimeError(f"{op} expects a real-valued input tensor, but got {x.dtype}")
    out = conj_physical(_real_forward(x, s, dim, _DUAL[_norm(norm, op)], op))
    axes, _ = _axes_and_sizes(x, s, dim, op)
    if len(axes) > 1:                    # torch's last step is a complex pass (its node)
        _zero_signs_of_a_complex_pass(out._data, axes[:-1])
        name_node(out, "FftC2CBackward0")
    return out


def _zero_signs_of_a_complex_pass(data: Any, axes: Sequence[int]) -> None:
    """The signs of the exact zeros torch's ihfftn leaves: it conjugates the one-sided
    transform (0 -> -0.0) and then runs a complex pass over the other dims, whose sums keep
    -0.0 only at index 0 of each of those dims (elsewhere they add +/-, giving +0.0). The
    values are the same; str() prints the sign (-0.0000j)."""
    data.imag += 0.0                                    # every -0.0 to +0.0
    index = tuple(0 if a in axes else slice(None) for a in range(data.ndim))
    corner = data.imag[index]
    corner[corner == 0] = -0.0


def _one(dim: Any) -> Any:
    if isinstance(dim, (tuple, list)):
        raise TypeError(f"dim must be an int for the 1-D transforms, got {dim!r}; use the "
                        f"2-D or n-D transform (fft2, fftn, ...) for several dims")
    return dim


def _frequencies(values: np.ndarray, n: int, d: float, dtype: Any, device: Any,
                 requires_grad: bool, op: str) -> Tensor:
    want = normalize_dtype(dtype) or precision.get_default_dtype()
    if not precision.is_floating(want):
        raise RuntimeError(f"{op}: expected a floating point dtype, got {want}")
    scale = np.asarray(1.0 / (n * d)).astype(want)      # torch: arange * (1 / (n d)),
    out = (values.astype(want) * scale).astype(want)    # in the result's dtype
    t = Tensor._wrap(out if device is None else backend.to_device(out, device))
    if requires_grad:
        t.requires_grad_(True)
    return t


def _count(n: Any, op: str) -> int:
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)):
        raise TypeError(f"{op}(): argument 'n' must be int, not {type(n).__name__}")
    if n < 0:
        raise RuntimeError(f"{op}: n must be non-negative, got {n}")
    return int(n)


def fftfreq(n: int, d: float = 1.0, *, dtype: Any = None, device: Any = None,
            layout: Any = None, requires_grad: bool = False, **_: Any) -> Tensor:
    """``torch.fft.fftfreq``: the frequency of each bin of an n-point fft, for sample
    spacing d: [0, 1, ..., (n - 1) // 2, -(n // 2), ..., -1] / (d n); float32 by default."""
    n = _count(n, "fftfreq")
    k = np.arange(n)
    k = np.where(k <= (n - 1) // 2, k, k - n)
    return _frequencies(k, n, d, dtype, device, requires_grad, "fftfreq")


def rfftfreq(n: int, d: float = 1.0, *, dtype: Any = None, device: Any = None,
             layout: Any = None, requires_grad: bool = False, **_: Any) -> Tensor:
    """``torch.fft.rfftfreq``: the frequencies of rfft's n//2 + 1 bins: [0, ..., n//2] / (d n)."""
    n = _count(n, "rfftfreq")
    return _frequencies(np.arange(n // 2 + 1), n, d, dtype, device, requires_grad,
                        "rfftfreq")


def _shift(x: Tensor, dim: Any, sign: int, op: str) -> Tensor:
    if not isinstance(x, Tensor):
        raise TypeError(f"{op}(): argument 'input' must be Tensor, not {type(x).__name__}")
    if dim is None:
        dims = tuple(range(x.ndim))
    elif isinstance(dim, (int, np.integer)):
        dims = (_axis(dim, x.ndim, op),)
    else:
        dims = tuple(_axis(d, x.ndim, op) for d in dim)
    if not dims:
        return x.clone()
    shifts = tuple(sign * (x.shape[a] // 2) for a in dims)
    return roll(x, shifts, dims)


def fftshift(input: Tensor, dim: Any = None) -> Tensor:  # noqa: A002
    """``torch.fft.fftshift``: the zero frequency moved to the middle (roll by n // 2)."""
    return _shift(input, dim, 1, "fftshift")


def ifftshift(input: Tensor, dim: Any = None) -> Tensor:  # noqa: A002
    """``torch.fft.ifftshift``: fftshift undone (roll by -(n // 2))."""
    return _shift(input, dim, -1, "ifftshift")
