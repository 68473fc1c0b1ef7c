"""Creation functions with PyTorch's names, signatures and dtype rules.

Every factory takes a size as separate ints or one sequence (``zeros(2, 3)``, ``zeros((2, 3))``,
``zeros([2, 3])``, ``zeros(x.shape)``, or ``size=``) and the keywords ``dtype=``, ``device=``
and ``requires_grad=``. The default dtype is the default float dtype (float32 unless
``set_default_dtype`` changed it, precision.py), except where PyTorch infers one:
``full`` from its fill value (int -> int64, bool -> bool), ``arange`` from its arguments,
``randint`` int64. The ``*_like`` functions take the dtype and device of their input.

Random factories draw from the device's default generator (seeded by
``tinyattn.manual_seed``) or from ``generator=`` (a ``numpy.random.Generator``); the streams
are NumPy's, so the numbers differ from PyTorch's for the same seed.

``empty`` returns zeros: NumPy could hand out uninitialised memory, but a learner printing an
``empty`` tensor should not see garbage that looks like a bug.
"""
from __future__ import annotations

import builtins
import math
from typing import Any, Optional, Sequence, Tuple

import numpy as np

from . import backend, precision
from .autograd import is_grad_enabled
from .spaced_values import linspace_values, logspace_values
from .tensor import DTypeLike, Tensor, normalize_dtype, tensor
from .tensor.layout import check_layout, check_pin_memory
from .tensor.memory_format import check_memory_format
from .precision import check_fits, integer_scalar, is_floating, scalar_type_name

__all__ = ["zeros", "ones", "empty", "full", "eye", "arange", "linspace", "logspace", "rand",
           "randn", "randperm", "randint", "zeros_like", "ones_like", "empty_like", "full_like",
           "rand_like", "randn_like", "randint_like", "multinomial", "new_zeros", "new_ones",
           "new_empty", "new_full", "new_tensor", "set_default_device", "get_default_device"]


# ------------------------------------------------------------------ helpers
def _is_whole(value: Any) -> bool:
    if isinstance(value, (bool, np.bool_)):
        return False
    if isinstance(value, (int, np.integer)):
        return True
    return isinstance(value, Tensor) and value.ndim == 0 and value.dtype.kind in "iu"


def _size(args: Sequence[Any], size: Any, op: str) -> Tuple[int, ...]:
    """The shape from ``op(2, 3)``, ``op((2, 3))``, ``op([2, 3])`` or ``op(size=(2, 3))``."""
    if size is not None:
        if args:
            raise TypeError(f"{op}: give the size either positionally or as size=, not both")
        args = (size,)
    if len(args) == 1 and not _is_whole(args[0]):
        args = args[0]
        if not isinstance(args, (tuple, list)):
            raise TypeError(f"{op}: the size must be whole numbers or one tuple/list of them, "
                            f"got {type(args).__name__} {args!r}")
    for n in args:
        if not _is_whole(n):
            raise TypeError(f"{op}: sizes must be whole numbers, got {n!r} "
                            f"({type(n).__name__}) in {tuple(args)!r}")
    dims = tuple(int(n) for n in args)
    if any(n < 0 for n in dims):
        raise RuntimeError(f"{op}: a shape cannot have negative sizes, got {dims}")
    return dims


_default_device = ["cpu"]        # set_default_device, torch's `with torch.device(...)`


def set_default_device(device: Any) -> None:
    """The device factories use when no ``device=`` is given (``torch.set_default_device``);
    ``None`` means "cpu"."""
    _default_device[0] = "cpu" if device is None else backend.normalize_device(device)


def get_default_device() -> str:
    return _default_device[0]


def _device(device: Any) -> str:
    return _default_device[0] if device is None else backend.normalize_device(device)


def _float_dtype(dtype: DTypeLike) -> np.dtype:
    return normalize_dtype(dtype) or precision.get_default_dtype()


def _leaf(data: Any, requires_grad: bool) -> Tensor:
    out = Tensor._wrap(data)
    if requires_grad:
        out.requires_grad_(True)
    return out


_PY_COMPLEX = builtins.complex


def _number(value: Any, op: str, name: str) -> Any:
    """A Python number from a number or a one-element tensor, with a clear error otherwise."""
    if isinstance(value, Tensor):
        if value.numel() != 1:
            raise RuntimeError(f"{op}: {name} must be a number, got a tensor of shape "
                               f"{value.shape} (torch only supports 0-dimensional start and "
                               f"end tensors)")
        return value.item()
    if not isinstance(value, (int, float, bool, np.number, np.bool_)):
        raise TypeError(f"{op}: {name} must be a number, got {type(value).__name__} {value!r}")
    return value.item() if isinstance(value, (np.number, np.bool_)) else value


def _check_fill_tensor(value: Any, op: str) -> None:
    """torch's argument parser takes a 0-d tensor as a Number for ``fill_value``, and refuses
    any other tensor, one element or not, with this TypeError."""
    if isinstance(value, Tensor) and value.ndim != 0:
        raise TypeError(f"{op}(): argument 'fill_value' (position 2) must be Number, not "
                        f"Tensor (got a tensor of shape {tuple(value.shape)}; pass "
                        f"value.item() or a 0-d tensor)")


def _placement(op: str, layout: Any, pin_memory: Any) -> None:
    """torch's ``layout=`` and ``pin_memory=`` on a factory (tensor/layout.py): None or
    torch.strided, and pin_memory=False, are what every tinyattn tensor is; the rest is
    refused loudly."""
    check_layout(layout, op)
    check_pin_memory(pin_memory, op)


def _inferred_dtype(value: Any) -> np.dtype:
    """PyTorch's dtype for a Python scalar: bool -> bool, int -> int64, float -> the default
    float dtype (float32 unless set_default_dtype changed it)."""
    if isinstance(value, bool):
        return np.dtype(np.bool_)
    if isinstance(value, int):
        return np.dtype(np.int64)
    return precision.get_default_dtype()


# ------------------------------------------------------------------ constant fills
def zeros(*shape: Any, size: Any = None, out: Optional[Tensor] = None, dtype: DTypeLike = None,
          device: Any = None, requires_grad: bool = False,
          layout: Any = None, pin_memory: bool = False) -> Tensor:
    """Zeros of ``shape``. ``out=`` as torch's factories: the values in out's dtype (a
    different dtype= is torch's RuntimeError), out resized to ``shape`` without a warning."""
    _placement("zeros", layout, pin_memory)
    if out is not None:
        return _factory_out("zeros", out, dtype, requires_grad,
                            lambda want: np.zeros(_size(shape, size, "zeros"), dtype=want))
    xp = backend.array_module_for(_device(device))
    return _leaf(xp.zeros(_size(shape, size, "zeros"), dtype=_float_dtype(dtype)),
                 requires_grad)


def ones(*shape: Any, size: Any = None, out: Optional[Tensor] = None, dtype: DTypeLike = None,
         device: Any = None, requires_grad: bool = False,
         layout: Any = None, pin_memory: bool = False) -> Tensor:
    """Ones of ``shape``; ``out=`` as zeros'."""
    _placement("ones", layout, pin_memory)
    if out is not None:
        return _factory_out("ones", out, dtype, requires_grad,
                            lambda want: np.ones(_size(shape, size, "ones"), dtype=want))
    xp = backend.array_module_for(_device(device))
    return _leaf(xp.ones(_size(shape, size, "ones"), dtype=_float_dtype(dtype)), requires_grad)


def empty(*shape: Any, size: Any = None, out: Optional[Tensor] = None, dtype: DTypeLike = None,
          device: Any = None, requires_grad: bool = False, memory_format: Any = None,
          layout: Any = None, pin_memory: bool = False) -> Tensor:
    """Like ``torch.empty``, but filled with zeros (see the module docstring); ``out=`` as
    zeros' (torch leaves out's values as they were where its shape is kept; zeros here)."""
    _placement("empty", layout, pin_memory)
    check_memory_format(_size(shape, size, "empty"), memory_format, "empty")
    return zeros(*shape, size=size, out=out, dtype=dtype, device=device,
                 requires_grad=requires_grad)


def _factory_out(op: str, out: Any, dtype: DTypeLike, requires_grad: bool, make: Any) -> Tensor:
    """zeros/ones/empty/full/eye/randn's out=: ``make(dtype)`` (NumPy values) written into
    ``out`` in out's dtype (_out_dtype, _write_out), resized silently as torch's factories."""
    want = _out_dtype(op, out, dtype)
    return _write_out(op, out, make(want), requires_grad, shaped=True)


def full(size: Any, fill_value: Any, *, out: Optional[Tensor] = None, dtype: DTypeLike = None,
         device: Any = None, requires_grad: bool = False,
         layout: Any = None, pin_memory: bool = False) -> Tensor:
    """A tensor of ``size`` filled with ``fill_value``; the dtype follows the value as in
    PyTorch (``full((2,), 3)`` is int64, ``full((2,), 2.5)`` float32, ``True`` bool), or is
    out's with ``out=`` (as zeros')."""
    _placement("full", layout, pin_memory)
    _check_fill_tensor(fill_value, "full")
    if isinstance(fill_value, (_PY_COMPLEX, np.complexfloating)):
        return _full_complex(size, _PY_COMPLEX(fill_value), out, dtype, device,
                             requires_grad)
    value = _number(fill_value, "full", "fill_value")
    if out is not None:
        return _factory_out("full", out, dtype, requires_grad, lambda want: np.full(
            _size((size,), None, "full"), value).astype(want))
    want = normalize_dtype(dtype) or _inferred_dtype(value)
    check_fits(value, want, "full")
    value = integer_scalar(value, want, "full")     # inf or 300 in uint8: torch's error
    xp = backend.array_module_for(_device(device))
    shape = _size((size,), None, "full")
    return _leaf(xp.full(shape, value, dtype=want), requires_grad)


def _full_complex(size: Any, value: complex, out: Optional[Tensor], dtype: DTypeLike,
                  device: Any, requires_grad: bool) -> Tensor:
    """full with a complex fill value: complex64, or complex128 under a float64 default (as
    torch's full, also under a half default);
    a real dtype takes a value with no imaginary part, else torch's RuntimeError."""
    want = normalize_dtype(dtype) if out is None else np.dtype(out.dtype)
    want = want or np.dtype(np.complex128 if precision.get_default_dtype() == np.float64
                            else np.complex64)   # complex64 under a half default too (torch)
    if want.kind != "c":
        if value.imag != 0:
            raise RuntimeError(f"value cannot be converted to type {_torch_type_name(want).lower()} "
                               f"without overflow (full: fill_value {value!r} has an "
                               f"imaginary part, but the dtype is {want}; use a complex "
                               f"dtype)")
        return full(size, value.real, out=out, dtype=dtype, device=device,
                    requires_grad=requires_grad)
    if out is not None:
        return _factory_out("full", out, dtype, requires_grad, lambda w: np.full(
            _size((size,), None, "full"), value).astype(w))
    xp = backend.array_module_for(_device(device))
    return _leaf(xp.full(_size((size,), None, "full"), value, dtype=want), requires_grad)


def eye(n: int, m: Optional[int] = None, *, out: Optional[Tensor] = None,
        dtype: DTypeLike = None, device: Any = None, requires_grad: bool = False,
        layout: Any = None, pin_memory: bool = False) -> Tensor:
    """The (n, m) identity matrix (m defaults to n); ``out=`` as zeros'."""
    _placement("eye", layout, pin_memory)
    rows, cols = _size((n, n if m is None else m), None, "eye")
    if out is not None:
        return _factory_out("eye", out, dtype, requires_grad,
                            lambda want: np.eye(rows, cols, dtype=want))
    xp = backend.array_module_for(_device(device))
    return _leaf(xp.eye(rows, cols, dtype=_float_dtype(dtype)), requires_grad)


# ------------------------------------------------------------------ ranges
def arange(start: Any, end: Any = None, step: Any = 1, *, out: Optional[Tensor] = None,
           dtype: DTypeLike = None, device: Any = None, requires_grad: bool = False,
           layout: Any = None, pin_memory: bool = False) -> Tensor:
    """``torch.arange``: [start, end) in steps of ``step``; all-integer arguments give int64,
    any float argument float32. With ``out=`` the values are computed in out's dtype
    (``dtype=``, if given, must be the same) and written into it (see ``_write_out``)."""
    _placement("arange", layout, pin_memory)
    if end is None:
        start, end = 0, start
    start, end, step = (_number(v, "arange", name) for v, name in
                        ((start, "start"), (end, "end"), (step, "step")))
    if step == 0:
        raise RuntimeError("arange: step must be nonzero")
    if (end - start) * step < 0:
        raise RuntimeError(f"arange: the bounds and the step disagree in sign (start={start}, "
                           f"end={end}, step={step}), so the range would be empty by "
                           f"accident (torch: upper bound and larger bound inconsistent with "
                           f"step sign); use a step of the other sign")
    for v in (start, end, step):
        if isinstance(v, float) and not math.isfinite(v):
            raise RuntimeError(f"arange: start, end and step must be finite, got {v} "
                               f"(torch: unsupported range)")
    want = _out_dtype("arange", out, dtype)
    if want is None:
        is_int = all(isinstance(v, int) for v in (start, end, step))
        want = np.dtype(np.int64) if is_int else precision.get_default_dtype()
    count = max(0, math.ceil((end - start) / step))
    if want.kind in "iu":   # torch's integer kernels take start and step toward zero (3.1 ->
        if want == np.int64:            # 3); int64 also the end, before counting the values
            if int(step) == 0:          # torch: ValueError for int64, RuntimeError otherwise
                raise ValueError(f"arange: step must be nonzero, and int64 turns step={step} "
                                 f"into 0 (torch converts start and step to the integer dtype "
                                 f"first); use a whole step or a floating dtype")
            count = max(0, math.ceil((int(end) - int(start)) / int(step)))
        start, step = int(start), int(step)
        if step == 0:
            raise RuntimeError(f"arange: step must be nonzero, and {want} turns it into 0 "
                               f"(torch converts start and step to the integer dtype first)")
    values = start + step * np.arange(count, dtype=np.float64 if is_floating(want) else np.int64)
    values = values.astype(want)
    if out is not None:
        return _write_out("arange", out, values, requires_grad, warn_resize=True)
    return _leaf(backend.to_device(values, _device(device)), requires_grad)


_torch_type_name = scalar_type_name    # torch's ScalarType name (float32 -> Float)


def _out_dtype(op: str, out: Any, dtype: DTypeLike) -> Optional[np.dtype]:
    """The dtype a factory computes in: out's when out= is given (a dtype= must be the same,
    torch's RuntimeError otherwise), else dtype= (None when neither is given)."""
    want = normalize_dtype(dtype)
    if out is None:
        return want
    if not isinstance(out, Tensor):
        raise TypeError(f"{op}(): argument 'out' must be Tensor, not {type(out).__name__}")
    if want is not None and want != out.dtype:
        raise RuntimeError(f"{op}: dtype {_torch_type_name(want)} does not match dtype of out "
                           f"parameter ({_torch_type_name(out.dtype)}); pass dtype={out.dtype} "
                           f"or leave dtype= out")
    return out.dtype


def _write_out(op: str, out: Tensor, values: np.ndarray, requires_grad: bool,
               warn_resize: bool = False, shaped: bool = False) -> Tensor:
    """A factory's out=: the values are written into ``out`` in place (a view writes through
    to its base); an ``out`` with another number of elements is resized to the values' 1-D
    shape (arange warns then, unless ``out`` was empty, as torch does); ``shaped``: to the
    values' shape whenever out's differs (zeros, full, eye...: silently, as torch). Refused
    when ``out`` requires grad and grad mode is on (torch's rule for every out= function)."""
    if is_grad_enabled() and out.requires_grad:
        raise RuntimeError(f"aten::{op}(): functions with out=... arguments don't support "
                           f"automatic differentiation, but one of the arguments requires "
                           f"grad.")
    data = backend.to_device(values.astype(out.dtype), out.device)
    if out.numel() != values.size or (shaped and tuple(out.shape) != values.shape):
        if warn_resize and out.numel() > 0:
            import warnings  # noqa: PLC0415 - only on this rare path
            warnings.warn(f"The number of elements in the out tensor of shape "
                          f"{list(out.shape)} is {out.numel()} which does not match the "
                          f"computed number of elements {values.size}. Note that this may "
                          f"occur as a result of rounding error. The out tensor will be "
                          f"resized to a tensor of shape ({values.size},).", UserWarning,
                          stacklevel=3)
        out._data = data
    else:
        out._data[...] = data.reshape(out.shape)
    out._bump_version()
    if requires_grad:
        out.requires_grad_(True)
    return out


def _steps(steps: Any, op: str) -> int:
    if not _is_whole(steps):                  # torch: an argument of the wrong type
        raise TypeError(f"{op}: steps must be a non-negative whole number, got {steps!r}")
    if int(steps) < 0:
        raise RuntimeError(f"{op}: steps must be a non-negative whole number, got {steps!r}")
    return int(steps)


def linspace(start: Any, end: Any, steps: int, *, out: Optional[Tensor] = None,
             dtype: DTypeLike = None, device: Any = None, requires_grad: bool = False,
             layout: Any = None, pin_memory: bool = False) -> Tensor:
    """``steps`` evenly spaced values from ``start`` to ``end``, both included:
    ``start + (end - start) * i / (steps - 1)``, computed in the output dtype and rounded as
    torch's CPU kernel rounds (half from each end; spaced_values.py says how), so float16 and
    integer results are torch's to the bit. ``out=`` as arange's."""
    _placement("linspace", layout, pin_memory)
    start, end = _number(start, "linspace", "start"), _number(end, "linspace", "end")
    steps = _steps(steps, "linspace")
    want = _out_dtype("linspace", out, dtype) or precision.get_default_dtype()
    _check_spaced_dtype("linspace", want)
    values = linspace_values(start, end, steps, want)
    if out is not None:
        return _write_out("linspace", out, values, requires_grad)
    return _leaf(backend.to_device(values, _device(device)), requires_grad)


def logspace(start: Any, end: Any, steps: int, base: float = 10.0, *,
             out: Optional[Tensor] = None, dtype: DTypeLike = None, device: Any = None,
             requires_grad: bool = False, layout: Any = None, pin_memory: bool = False) -> Tensor:
    """``base ** linspace(start, end, steps)``, with the exponent in float64 and rounded as
    torch's CPU kernel (spaced_values.py). ``out=`` as arange's."""
    _placement("logspace", layout, pin_memory)
    start, end = _number(start, "logspace", "start"), _number(end, "logspace", "end")
    steps = _steps(steps, "logspace")
    base = float(_number(base, "logspace", "base"))
    want = _out_dtype("logspace", out, dtype) or precision.get_default_dtype()
    _check_spaced_dtype("logspace", want)
    values = logspace_values(start, end, steps, base, want)
    if out is not None:
        return _write_out("logspace", out, values, requires_grad)
    return _leaf(backend.to_device(values, _device(device)), requires_grad)


def _check_spaced_dtype(op: str, dtype: np.dtype) -> None:
    if dtype == np.bool_:
        raise NotImplementedError(f'"{op}_cpu" not implemented for \'Bool\': {op} makes '
                                  f'numbers; ask for an integer or floating dtype')


# ------------------------------------------------------------------ random
def rand(*shape: Any, size: Any = None, generator: Any = None, dtype: DTypeLike = None,
         device: Any = None, requires_grad: bool = False,
         layout: Any = None, pin_memory: bool = False) -> Tensor:
    """Uniform samples in [0, 1)."""
    _placement("rand", layout, pin_memory)
    want = _random_float_dtype(dtype, "rand")
    data = backend.uniform(_size(shape, size, "rand"), _device(device), want, generator)
    return _leaf(data, requires_grad)


def randn(*shape: Any, size: Any = None, generator: Any = None, out: Optional[Tensor] = None,
          dtype: DTypeLike = None, device: Any = None, requires_grad: bool = False,
          layout: Any = None, pin_memory: bool = False) -> Tensor:
    """Standard normal samples; ``out=`` as zeros' (a floating out only: torch's
    NotImplementedError for an integer one)."""
    _placement("randn", layout, pin_memory)
    if out is not None:
        return _factory_out("randn", out, dtype, requires_grad, lambda want: _normal_into(
            _size(shape, size, "randn"), want, generator, out.device))
    want = _float_dtype(dtype)
    if want.kind == "c":
        return _leaf(_complex_normal(_size(shape, size, "randn"), _device(device), want,
                                     generator), requires_grad)
    want = _random_float_dtype(dtype, "randn")
    data = backend.standard_normal(_size(shape, size, "randn"), _device(device), want,
                                   generator)
    return _leaf(data, requires_grad)


def _complex_normal(shape: Tuple[int, ...], device: Any, want: np.dtype,
                    generator: Any) -> Any:
    """torch's complex randn: real and imaginary parts each drawn from N(0, 1/2) (so
    E|z|^2 = 1), one draw of shape (..., 2) read as pairs."""
    part = np.dtype(np.float32) if want == np.complex64 else np.dtype(np.float64)
    pairs = backend.standard_normal(tuple(shape) + (2,), device, part, generator)
    pairs = pairs * part.type(np.sqrt(0.5))
    xp = backend.get_array_module(pairs)
    return xp.ascontiguousarray(pairs).view(want)[..., 0]


def _normal_into(shape: Tuple[int, ...], want: np.dtype, generator: Any, device: Any) -> Any:
    if not is_floating(want):
        raise NotImplementedError(f'"normal_kernel_cpu" not implemented for '
                                  f"'{_torch_type_name(want)}': randn's out= must be a "
                                  f"floating tensor")
    return backend.standard_normal(shape, str(device), want, generator)


def _random_float_dtype(dtype: DTypeLike, op: str) -> np.dtype:
    want = _float_dtype(dtype)
    if not is_floating(want):
        raise TypeError(f"{op} draws floating-point numbers, but dtype {want} was asked for; "
                        f"use randint for integers")
    return want


def randint(*args: Any, low: Any = None, high: Any = None, size: Any = None,
            generator: Any = None, dtype: DTypeLike = None, device: Any = None,
            requires_grad: bool = False, layout: Any = None,
            pin_memory: bool = False) -> Tensor:
    """``randint(high, size)`` or ``randint(low, high, size)``: integers in [low, high),
    int64 unless ``dtype`` says otherwise. Each argument may be passed by keyword, as torch's
    (``randint(low=0, high=2, size=(n, 2))``, the UvA course's XOR data)."""
    _placement("randint", layout, pin_memory)
    if low is not None and (args or high is None):
        raise TypeError("randint: low= goes with high= and size= (randint(low=0, high=2, "
                        "size=(3,))), not with positional arguments")
    if low is not None:
        args = (low,)
    if high is not None:
        args = args + (high,)
    if size is not None:
        args = args + (size,)
    if len(args) == 2:
        low, high, shape = 0, args[0], args[1]
    elif len(args) == 3:
        low, high, shape = args
    else:
        raise TypeError(f"randint takes (high, size) or (low, high, size), got {len(args)} "
                        f"arguments: {args!r}")
    if not isinstance(shape, (tuple, list)):
        raise TypeError(f"randint: size must be a tuple of ints such as (3,), got {shape!r}")
    low, high = _int_bound(low, "low"), _int_bound(high, "high")
    if low >= high:
        raise ValueError(f"randint: low ({low}) must be less than high ({high}); the numbers "
                         f"are drawn from [low, high)")
    want = normalize_dtype(dtype) or np.dtype(np.int64)
    data = backend.integers(low, high, _size(shape, None, "randint"), _device(device),
                            generator)
    return _leaf(data.astype(want), requires_grad)


def randperm(n: int, *, generator: Any = None, dtype: DTypeLike = None, device: Any = None,
             requires_grad: bool = False, layout: Any = None, pin_memory: bool = False) -> Tensor:
    """``torch.randperm(n)``: a random permutation of 0, ..., n - 1 (int64 unless ``dtype``
    says otherwise), drawn from the default generator or ``generator`` (a NumPy generator):
    the order that sorts n uniform draws, so every permutation is equally likely."""
    _placement("randperm", layout, pin_memory)
    if not _is_whole(n):
        raise TypeError(f"randperm: n must be a whole number, got {n!r}")
    if int(n) < 0:
        raise RuntimeError(f"randperm: n must be non-negative, got {int(n)}")
    want = normalize_dtype(dtype) or np.dtype(np.int64)
    if want.kind == "b" or (want.kind in "iu" and int(n) - 1 > np.iinfo(want).max):
        raise TypeError(f"randperm: dtype {want} cannot hold the values 0 to {int(n) - 1}")
    draws = backend.uniform((int(n),), _device(device), np.float64, generator)
    order = backend.get_array_module(draws).argsort(draws, kind="stable")
    return _leaf(order.astype(want), requires_grad)


def _int_bound(value: Any, name: str) -> int:
    value = _number(value, "randint", name)
    if isinstance(value, bool) or not float(value).is_integer():
        raise TypeError(f"randint: {name} must be a whole number, got {value!r}")
    return int(value)


# ------------------------------------------------------------------ *_like
def _like(x: Tensor, dtype: DTypeLike, device: Any, memory_format: Any = None
          ) -> Tuple[np.dtype, str]:
    if not isinstance(x, Tensor):
        raise TypeError(f"expected a Tensor to copy the shape, dtype and device from, got "
                        f"{type(x).__name__}")
    check_memory_format(x.shape, memory_format, "*_like")
    return normalize_dtype(dtype) or x.dtype, _device(device or x.device)


def zeros_like(input: Tensor, *, dtype: DTypeLike = None,  # noqa: A002 - PyTorch's name
               device: Any = None, requires_grad: bool = False,
               memory_format: Any = None, layout: Any = None, pin_memory: bool = False) -> Tensor:
    _placement("zeros_like", layout, pin_memory)
    want, dev = _like(input, dtype, device, memory_format)
    return zeros(input.shape, dtype=want, device=dev, requires_grad=requires_grad)


def ones_like(input: Tensor, *, dtype: DTypeLike = None,  # noqa: A002
              device: Any = None, requires_grad: bool = False,
              memory_format: Any = None, layout: Any = None, pin_memory: bool = False) -> Tensor:
    _placement("ones_like", layout, pin_memory)
    want, dev = _like(input, dtype, device, memory_format)
    return ones(input.shape, dtype=want, device=dev, requires_grad=requires_grad)


def empty_like(input: Tensor, *, dtype: DTypeLike = None,  # noqa: A002
               device: Any = None, requires_grad: bool = False,
               memory_format: Any = None, layout: Any = None, pin_memory: bool = False) -> Tensor:
    _placement("empty_like", layout, pin_memory)
    return zeros_like(input, dtype=dtype, device=device, requires_grad=requires_grad,
                      memory_format=memory_format)


def full_like(input: Tensor, fill_value: Any, *, dtype: DTypeLike = None,  # noqa: A002
              device: Any = None, requires_grad: bool = False,
              memory_format: Any = None, layout: Any = None, pin_memory: bool = False) -> Tensor:
    """Filled with ``fill_value`` in input's dtype (``full_like(int_tensor, 2.7)`` holds 2,
    as in PyTorch)."""
    _placement("full_like", layout, pin_memory)
    _check_fill_tensor(fill_value, "full_like")
    want, dev = _like(input, dtype, device, memory_format)
    return full(input.shape, fill_value, dtype=want, device=dev, requires_grad=requires_grad)


def rand_like(input: Tensor, *, generator: Any = None, dtype: DTypeLike = None,  # noqa: A002
              device: Any = None, requires_grad: bool = False,
              memory_format: Any = None, layout: Any = None, pin_memory: bool = False) -> Tensor:
    _placement("rand_like", layout, pin_memory)
    want, dev = _like(input, dtype, device, memory_format)
    return rand(input.shape, generator=generator, dtype=_like_float(want, "rand_like"),
                device=dev, requires_grad=requires_grad)


def randn_like(input: Tensor, *, generator: Any = None, dtype: DTypeLike = None,  # noqa: A002
               device: Any = None, requires_grad: bool = False,
               memory_format: Any = None, layout: Any = None, pin_memory: bool = False) -> Tensor:
    _placement("randn_like", layout, pin_memory)
    want, dev = _like(input, dtype, device, memory_format)
    return randn(input.shape, generator=generator, dtype=_like_float(want, "randn_like"),
                 device=dev, requires_grad=requires_grad)


def _like_float(dtype: np.dtype, op: str) -> np.dtype:
    if not is_floating(dtype) and not (op == "randn_like" and dtype.kind == "c"):
        raise TypeError(f"{op}: the input is {dtype}, but random floats need a floating "
                        f"dtype; pass dtype=tinyattn.float32 (or use randint_like)")
    return dtype


def randint_like(input: Tensor, *args: Any, low: Any = None, high: Any = None,  # noqa: A002
                 generator: Any = None, dtype: DTypeLike = None, device: Any = None,
                 requires_grad: bool = False, memory_format: Any = None,
                 layout: Any = None, pin_memory: bool = False) -> Tensor:
    """``randint_like(x, high)`` or ``randint_like(x, low, high)``, in x's dtype; low= and
    high= by keyword too, as torch's."""
    _placement("randint_like", layout, pin_memory)
    want, dev = _like(input, dtype, device, memory_format)
    if low is not None and (args or high is None):
        raise TypeError("randint_like: low= goes with high= (randint_like(x, low=0, high=2)), "
                        "not with positional arguments")
    args = ((low,) if low is not None else ()) + args + ((high,) if high is not None else ())
    if len(args) not in (1, 2):
        raise TypeError(f"randint_like takes (input, high) or (input, low, high), got "
                        f"{len(args) + 1} arguments")
    return randint(*args, input.shape, generator=generator, dtype=want, device=dev,
                   requires_grad=requires_grad)


# ------------------------------------------------------------------ x.new_*
# Tensor methods (attached in tinyattn/ops/__init__.py): a new tensor with x's dtype and
# device unless told otherwise, never sharing x's data or graph.
def new_zeros(x: Tensor, *size: Any, dtype: DTypeLike = None, device: Any = None,
              requires_grad: bool = False, layout: Any = None, pin_memory: bool = False) -> Tensor:
    _placement("new_zeros", layout, pin_memory)
    return zeros(*size, dtype=dtype or x.dtype, device=device or x.device,
                 requires_grad=requires_grad)


def new_ones(x: Tensor, *size: Any, dtype: DTypeLike = None, device: Any = None,
             requires_grad: bool = False, layout: Any = None, pin_memory: bool = False) -> Tensor:
    _placement("new_ones", layout, pin_memory)
    return ones(*size, dtype=dtype or x.dtype, device=device or x.device,
                requires_grad=requires_grad)


def new_empty(x: Tensor, *size: Any, dtype: DTypeLike = None, device: Any = None,
              requires_grad: bool = False, layout: Any = None, pin_memory: bool = False) -> Tensor:
    _placement("new_empty", layout, pin_memory)
    return new_zeros(x, *size, dtype=dtype, device=device, requires_grad=requires_grad)


def new_full(x: Tensor, size: Any, fill_value: Any, *, dtype: DTypeLike = None,
             device: Any = None, requires_grad: bool = False,
             layout: Any = None, pin_memory: bool = False) -> Tensor:
    _placement("new_full", layout, pin_memory)
    _check_fill_tensor(fill_value, "new_full")
    return full(size, fill_value, dtype=dtype or x.dtype, device=device or x.device,
                requires_grad=requires_grad)


def new_tensor(x: Tensor, data: Any, dtype: DTypeLike = None, device: Any = None,
               requires_grad: bool = False) -> Tensor:
    """A copy of ``data`` in x's dtype (``long_tensor.new_tensor([1.5])`` holds 1, as in
    PyTorch) on x's device."""
    return tensor(data, dtype=dtype or x.dtype, device=device or x.device,
                  requires_grad=requires_grad)


# ------------------------------------------------------------------ multinomial
def multinomial(input: Tensor, num_samples: int, replacement: bool = False,  # noqa: A002
                *, generator: Any = None, out: Optional[Tensor] = None) -> Tensor:
    """Draw ``num_samples`` category indices per row of ``input`` (C,) or (R, C), with
    probability proportional to the (non-negative, not necessarily normalised) weights.

    With replacement: inverse transform sampling, searchsorted(cumsum(w) / sum(w), u) for u
    uniform in [0, 1). Without replacement: each category draws an exponential "arrival
    time" E / w (E ~ Exp(1)) and the first ``num_samples`` to arrive win; this is exactly
    drawing one category at a time in proportion to the weights left. Zero-weight categories
    arrive at infinity: they come last, only when every positive one is taken (as PyTorch).
    Returns int64 indices, (num_samples,) or (R, num_samples); ``out=`` must be int64 (torch's
    RuntimeError otherwise) and takes the result (resized to its shape when it differs).
    """
    if out is not None:
        if not isinstance(out, Tensor):
            raise TypeError(f"multinomial(): argument 'out' must be Tensor, not "
                            f"{type(out).__name__}")
        if out.dtype != np.int64:
            raise RuntimeError(f"multinomial expects Long tensor out, got: "
                               f"{_torch_type_name(out.dtype)} (pass an int64 out= tensor)")
    weights = _check_weights(input, num_samples, replacement)
    xp = backend.get_array_module(weights)
    rows = weights if weights.ndim == 2 else weights[None, :]                # (R, C)
    r, c = rows.shape
    u = backend.uniform((r, num_samples if replacement else c), input.device, np.float64,
                        generator)
    if replacement:
        totals = xp.cumsum(rows, axis=1)
        cdf = totals / totals[:, -1:]                                        # cdf[:, -1] == 1
        drawn = xp.stack([xp.searchsorted(cdf[i], u[i], side="right") for i in range(r)])
    else:
        arrival = -xp.log1p(-u)                                              # Exp(1), (R, C)
        positive = rows > 0
        arrival = xp.where(positive, arrival / xp.where(positive, rows, 1), xp.inf)
        drawn = xp.argsort(arrival, axis=1, kind="stable")[:, :num_samples]
    drawn = drawn.astype(np.int64)
    drawn = drawn if weights.ndim == 2 else drawn[0]
    if out is None:
        return Tensor._wrap(drawn)
    if is_grad_enabled() and out.requires_grad:
        raise RuntimeError("aten::multinomial(): functions with out=... arguments don't "
                           "support automatic differentiation, but one of the arguments "
                           "requires grad.")
    if out.shape != drawn.shape:
        out._data = drawn
    else:
        out._data[...] = drawn
    out._bump_version()
    return out


def _check_weights(input: Tensor, num_samples: int, replacement: bool) -> Any:
    if not isinstance(input, Tensor):
        raise TypeError(f"multinomial: input must be a Tensor of weights, got "
                        f"{type(input).__name__}")
    if not is_floating(input.dtype):
        raise RuntimeError(f"multinomial: the weights must be floating point, got {input.dtype}; "
                           f"convert with .float()")
    if input.ndim not in (1, 2):
        raise RuntimeError(f"multinomial: input must be 1-D (C,) or 2-D (R, C), got shape "
                           f"{input.shape}")
    if not _is_whole(num_samples) or int(num_samples) <= 0:
        raise RuntimeError(f"multinomial: num_samples must be a positive whole number, got "
                           f"{num_samples!r}")
    categories = input.shape[-1]
    if not replacement and num_samples > categories:
        raise RuntimeError(f"multinomial: cannot draw {num_samples} samples without replacement "
                           f"from {categories} categories; pass replacement=True or draw fewer")
    weights = input._data.astype(np.float64)
    xp = backend.get_array_module(weights)
    bad = ~xp.isfinite(weights) | (weights < 0)
    if weights.size == 0 or bool(bad.any()):
        problem = "inf, NaN or negative entries" if weights.size else "no entries"
        raise RuntimeError(f"multinomial: the weights must be finite and >= 0, and there must "
                           f"be some; got shape {input.shape} with {problem}")
    if bool((weights.sum(axis=-1) <= 0).any()):
        raise RuntimeError("multinomial: every row of weights needs a positive sum (a row of all "
                           "zeros has nothing to draw)")
    return weights
