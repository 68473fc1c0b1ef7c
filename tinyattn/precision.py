"""Floating dtypes narrower than float32: float16 (NumPy's own) and bfloat16 (``ml-dtypes``).

bfloat16 is the top half of a float32: 8 exponent bits (float32's range, up to 3.4e38) and 7
mantissa bits (about 2 to 3 significant digits). float16 has 5 exponent bits (max 65504,
smallest normal 6.1e-5) and 10 mantissa bits. NumPy has float16; bfloat16 comes from the
``ml-dtypes`` package (maintained by the JAX team), which registers it as a NumPy dtype with
casts and ufuncs. Its dtype has ``kind == "V"``, not ``"f"``, so tinyattn asks
``is_floating(dtype)`` instead of ``dtype.kind == "f"``.

PyTorch's CPU kernels compute a half-precision op in float32 and round the result once
(reductions and matmuls accumulate in float32). tinyattn does the same for every op: see
``tinyattn.amp.dispatch`` (docs/precision_memory_time.md#half-precision-dtypes).

``finfo`` and ``iinfo`` answer with torch's fields (``bits``, ``eps``, ``max``, ``min``,
``tiny``, ``smallest_normal``, ``resolution``, ``dtype``).

The default float dtype lives here too, once for the process: ``get_default_dtype()`` /
``set_default_dtype()`` (torch's, float16/bfloat16/float32/float64) and
``default_complex_dtype()``. Every place that picks "the default float" asks them (tensor
literals, factories, promotion of Python numbers and integer inputs, nn parameters,
printing, optimizer state); none keeps a float32 of its own.
"""
from __future__ import annotations

from typing import Any, Callable, List, Optional

import numpy as np

__all__ = ["DtypeError", "DtypeNotImplementedError", "BFLOAT16", "FLOAT16", "LOW_PRECISION",
           "is_floating", "is_low_precision", "is_bfloat16", "finfo", "iinfo", "on_low_precision", "note_dtype", "check_fits",
           "is_complex_dtype", "on_complex", "note_complex", "refuse_complex_order",
           "scalar_type_name", "get_default_dtype", "set_default_dtype", "default_complex_dtype",
           "number_complex_dtype", "complex_stands_in_for_complex32"]

FLOAT16 = np.dtype(np.float16)
BFLOAT16: np.dtype              # ml-dtypes' bfloat16, made on first use (__getattr__ below)
LOW_PRECISION: tuple            # (FLOAT16, BFLOAT16), made on first use


def _ml_dtypes() -> Any:
    """The ``ml-dtypes`` package, imported the first time bfloat16 is needed: its extension
    registers a dozen dtypes with NumPy and takes about half a second to import, which every
    ``import tinyattn`` (every script, DataLoader worker and spawned process) paid before."""
    import ml_dtypes  # noqa: PLC0415 - deliberately lazy (see above)
    return ml_dtypes


def __getattr__(name: str) -> Any:
    """``BFLOAT16`` and ``LOW_PRECISION``, made on first use (module attributes, PEP 562)."""
    if name == "BFLOAT16":
        value: Any = np.dtype(_ml_dtypes().bfloat16)
    elif name == "LOW_PRECISION":
        value = (FLOAT16, __getattr__("BFLOAT16"))
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    globals()[name] = value
    return value


def is_bfloat16(dtype: Any) -> bool:
    """True for ml-dtypes' bfloat16 (by name: an array can only have that dtype once
    ml-dtypes is imported, so asking never imports it)."""
    return getattr(dtype, "name", None) == "bfloat16"


def _finfo(dtype: np.dtype) -> Any:
    """NumPy's finfo for its own dtypes, ml-dtypes' for bfloat16 (NumPy's does not know it)."""
    return _ml_dtypes().finfo(dtype) if is_bfloat16(dtype) else np.finfo(dtype)

# ---------------------------------------------------------------- the default float dtype
# One setting for the process, as torch's: every place that decides "the default float dtype"
# (tensor([1.5]), zeros(2), int_tensor * 2.5, sqrt(int_tensor), nn parameters, printing, ...)
# asks get_default_dtype(), none keeps a float32 of its own.
_default_float = [np.dtype(np.float32)]
_DEFAULT_NAMES = ("float16", "bfloat16", "float32", "float64")


def get_default_dtype() -> np.dtype:
    """The default float dtype (float32 unless ``set_default_dtype`` changed it)."""
    return _default_float[0]


def set_default_dtype(dtype: Any) -> None:
    """``torch.set_default_dtype``: float16, bfloat16, float32 or float64 becomes the dtype of
    Python floats in tensors, of the float factories without dtype=, of integer inputs to
    float ops and of new nn parameters. Any other dtype raises torch's TypeError, and so do
    None and the Python type float (torch takes only a dtype there)."""
    from .tensor import normalize_dtype  # noqa: PLC0415 - tensor imports this module
    if dtype is None or dtype in (float, int, bool, complex):
        raise TypeError("invalid dtype object: only floating-point types are supported as the "
                        "default type")
    try:
        found = normalize_dtype(dtype)
    except TypeError:
        raise TypeError("invalid dtype object: only floating-point types are supported as the "
                        "default type") from None
    if found.name not in _DEFAULT_NAMES:
        raise TypeError("only floating-point types are supported as the default type")
    _default_float[0] = found


_COMPLEX32_REFUSAL = (
    "the default dtype is float16, so torch's dtype here is complex32, which tinyattn does "
    "not have; pass dtype=tinyattn.complex64 (or convert an operand with .to(complex64)) or "
    "set the default dtype to float32 first")


def default_complex_dtype() -> np.dtype:
    """The dtype ``tensor([1j])`` infers (torch's toComplexType of the default): complex128
    under a float64 default, complex64 under float32. A half default has none here: torch's
    is complex32 for float16 (which tinyattn does not have: DtypeNotImplementedError), and
    for bfloat16 torch refuses with the RuntimeError raised here."""
    default = _default_float[0]
    if default.name == "float64":
        return np.dtype(np.complex128)
    if default.name == "float32":
        return np.dtype(np.complex64)
    if default.name == "bfloat16":
        raise RuntimeError("invalid default scalar type for complex")   # torch's words
    raise DtypeNotImplementedError(_COMPLEX32_REFUSAL)


def number_complex_dtype(refuse_half: bool = True) -> np.dtype:
    """The dtype of a Python complex number in type promotion (``int_t * 1j``, ``where(m,
    1j, 0)``): torch's default complex dtype, complex128 under a float64 default and
    complex64 under float32 or bfloat16; under float16 torch's is complex32, refused
    (DtypeNotImplementedError) unless ``refuse_half`` is False (then complex64 stands in,
    for a caller that checks whether the result really is that dtype)."""
    default = _default_float[0]
    if default.name == "float64":
        return np.dtype(np.complex128)
    if default.name == "float16" and refuse_half:
        raise DtypeNotImplementedError(_COMPLEX32_REFUSAL)
    return np.dtype(np.complex64)


def complex_stands_in_for_complex32() -> bool:
    """True when ``number_complex_dtype(refuse_half=False)``'s complex64 stands in for
    torch's complex32 (a float16 default)."""
    return _default_float[0].name == "float16"


_listeners: List[Callable[[], None]] = []   # called once, when a half dtype is first seen
_seen_low_precision = False
_complex_listeners: List[Callable[[], None]] = []  # called once, when a complex dtype is first seen
_seen_complex = False


def is_floating(dtype: Any) -> bool:
    """True for float16, bfloat16, float32, float64 (bfloat16's NumPy kind is "V")."""
    return dtype.kind == "f" or is_bfloat16(dtype)


def is_low_precision(dtype: Any) -> bool:
    return dtype == FLOAT16 or is_bfloat16(dtype)


def on_low_precision(callback: Callable[[], None]) -> None:
    """Call ``callback()`` the first time a float16/bfloat16 dtype is used (at once if one
    was already). tinyattn.amp uses it to switch on float32 compute for half dtypes only in
    programs that have half tensors, so a float32 program pays nothing for it."""
    _listeners.append(callback)
    if _seen_low_precision:
        callback()


def is_complex_dtype(dtype: Any) -> bool:
    """True for complex64 and complex128."""
    return dtype.kind == "c"


def on_complex(callback: Callable[[], None]) -> None:
    """Call ``callback()`` the first time a complex dtype is used (at once if one was
    already). Function.apply uses it to check its inputs for complex arrays only in programs
    that have complex tensors, so a real program pays nothing for it."""
    _complex_listeners.append(callback)
    if _seen_complex:
        callback()


def note_complex() -> None:
    """A complex tensor exists (or its dtype was named): wake the complex listeners once."""
    global _seen_complex
    if _seen_complex:
        return
    _seen_complex = True
    for callback in _complex_listeners:
        callback()


def refuse_complex_order(op: str, *values: Any) -> None:
    """Raise torch's NotImplementedError when one of ``values`` (arrays or tensors) is
    complex and ``op`` orders numbers (<, max, argmax, sort, ...): complex numbers have no
    order, and NumPy's lexicographic one would be a silent answer where torch refuses."""
    for value in values:                # a complex Python number: x < 1j is refused too
        if isinstance(value, (complex, np.complexfloating)):
            raise NotImplementedError(
                f"{op}: not implemented for complex numbers ({value!r}), as in torch: complex "
                f"numbers have no order; compare with abs() or .real instead")
    if not _seen_complex:
        return
    for value in values:
        dtype = getattr(value, "dtype", None)
        if dtype is not None and getattr(dtype, "kind", "") == "c":
            raise NotImplementedError(
                f"{op}: not implemented for complex tensors ({dtype}), as in torch: complex "
                f"numbers have no order; compare x.abs() or x.real instead")


def note_dtype(dtype: Optional[np.dtype]) -> None:
    """Tell the listeners when ``dtype`` is a half or complex dtype (the first time only)."""
    global _seen_low_precision
    if not _seen_complex and getattr(dtype, "kind", "") == "c":
        note_complex()
    if _seen_low_precision or dtype is None or not is_low_precision(dtype):
        return
    _seen_low_precision = True
    for callback in _listeners:
        callback()


_C10_NAMES = {"float16": "c10::Half", "bfloat16": "c10::BFloat16", "float32": "float",
              "float64": "double"}



class DtypeError(TypeError, RuntimeError):
    """A dtype an op refuses where torch raises RuntimeError (isclose of two dtypes, an index
    or a source of the wrong dtype, a non-bool mask): a TypeError too, as tinyattn raised."""


class DtypeNotImplementedError(TypeError, NotImplementedError):
    """An op torch has no kernel for at a dtype (floor of a bool tensor: torch's
    NotImplementedError ``"floor_vml_cpu" not implemented for 'Bool'``); a TypeError too."""

def check_fits(value: Any, dtype: np.dtype, op: str) -> None:
    """Raise torch's overflow error when the finite number ``value`` is beyond ``dtype``'s
    largest finite value (masked_fill(mask, -1e9) on float16, whose range ends at 65504),
    instead of writing inf silently. Infinities and NaN pass, as in torch."""
    if not is_floating(dtype) or isinstance(value, bool) or not isinstance(
            value, (int, float, np.number)):
        return
    value = float(value)
    limit = float(_finfo(dtype).max)
    if np.isfinite(value) and abs(value) > limit:
        name = _dtype_name(dtype)
        raise RuntimeError(
            f"value cannot be converted to type {_C10_NAMES.get(name, name)} without overflow: "
            f"{op} got {value:g}, but {name} holds numbers up to +-{limit:g}. To mask "
            f"scores use float('-inf') (softmax gives those 0) or "
            f"tinyattn.finfo(x.dtype).min, or compute in float32 (x.float())")


_C_INT_NAMES = {"uint8": "uint8_t", "int8": "int8_t", "int16": "int16_t", "int32": "int",
                "int64": "int64_t", "uint16": "uint16_t", "uint32": "uint32_t",
                "uint64": "uint64_t"}


def integer_scalar(value: Any, dtype: np.dtype, op: str) -> Any:
    """A Python number written into an integer ``dtype`` as torch converts a scalar (fill_,
    full): a float is truncated, a negative int down to -max wraps into an unsigned dtype
    (-1 is 255 in uint8); anything else (300 in uint8, inf, NaN) is torch's RuntimeError,
    where NumPy would wrap silently or raise OverflowError. Other values pass unchanged."""
    dtype = np.dtype(dtype)
    if dtype.kind not in "iu" or isinstance(value, (bool, np.bool_)) or not isinstance(
            value, (int, float, np.integer, np.floating)):
        return value
    info = np.iinfo(dtype)
    low = int(info.min) if info.min < 0 else -int(info.max)
    if isinstance(value, (float, np.floating)):
        whole = int(value) if np.isfinite(value) else None
    else:
        whole = int(value)
    if whole is None or not low <= whole <= int(info.max):
        raise RuntimeError(f"value cannot be converted to type "
                           f"{_C_INT_NAMES.get(dtype.name, dtype.name)} without overflow: {op} "
                           f"got {value}, but {dtype.name} holds {info.min}..{info.max} (as torch)")
    return whole % (int(info.max) + 1) if whole < 0 and info.min == 0 else whole




def cast(array: Any, dtype: Any, copy: bool = False) -> Any:
    """``array.astype(dtype)`` with torch's conversions: into float16 and bfloat16 torch
    converts a double (or a wide integer) to c10::Half / c10::BFloat16 through float32, so
    it rounds twice; NumPy rounds once, and about one value in 10^4 then lands one ulp
    away (1.1645508316 is 1.1640625 in torch's float16, 1.1650391 in NumPy's)."""
    dtype = np.dtype(dtype)
    if is_low_precision(dtype) and array.dtype.kind in "fiu" and array.dtype.itemsize >= 4 and \
            array.dtype != np.float32:
        array = array.astype(np.float32)
        copy = False
    elif dtype.kind in "iu" and is_bfloat16(array.dtype):
        # torch converts a bfloat16 to an integer through float32 (c10::BFloat16's float
        # operator); ml-dtypes' own cast gives 0 for what is out of range, inf and NaN
        # (int32(bfloat16(3e9)) is int32's minimum in torch, as float32's conversion gives)
        array = array.astype(np.float32)
        copy = False
    return array.astype(dtype, copy=copy)


# torch's C++ ScalarType names, as its error messages print dtypes ("expected scalar type Float")
_SCALAR_TYPE_NAMES = {"float16": "Half", "bfloat16": "BFloat16", "float32": "Float",
                      "float64": "Double", "int8": "Char", "int16": "Short", "int32": "Int",
                      "int64": "Long", "uint8": "Byte", "uint16": "UInt16",
                      "uint32": "UInt32", "uint64": "UInt64", "bool": "Bool",
                      "complex64": "ComplexFloat", "complex128": "ComplexDouble"}


def scalar_type_name(dtype: Any) -> str:
    """torch's ScalarType name of a dtype (float32 -> 'Float', int64 -> 'Long'), as torch's
    messages print it; a name torch does not have is NumPy's."""
    try:
        name = np.dtype(dtype).name
    except TypeError:            # "bfloat16" as a string before ml-dtypes is loaded
        name = str(dtype)
    return _SCALAR_TYPE_NAMES.get(name, name)


def _dtype_name(dtype: np.dtype) -> str:
    return str(dtype)


class finfo:  # noqa: N801 - PyTorch's name
    """Machine limits of a floating dtype, with ``torch.finfo``'s fields."""

    def __init__(self, dtype: Any = None):
        from .tensor import normalize_dtype  # noqa: PLC0415 - tensor imports this module
        want = normalize_dtype(dtype) if dtype is not None else get_default_dtype()
        if not is_floating(want):
            raise TypeError(f"finfo takes a floating dtype (float16, bfloat16, float32, "
                            f"float64), got {want}; use iinfo for integer dtypes")
        info = _finfo(want)
        self.bits = int(info.bits)
        self.eps = float(info.eps)
        self.max = float(info.max)
        self.min = float(info.min)
        self.tiny = self.smallest_normal = float(info.smallest_normal)
        self.resolution = 10.0 ** -int(np.floor(-np.log10(self.eps)))   # as torch's
        self.dtype = _dtype_name(want)

    def __repr__(self) -> str:
        return (f"finfo(resolution={self.resolution:g}, min={self.min:g}, max={self.max:g}, "
                f"eps={self.eps:g}, smallest_normal={self.smallest_normal:g}, "
                f"tiny={self.tiny:g}, dtype={self.dtype})")


class iinfo:  # noqa: N801 - PyTorch's name
    """Limits of an integer dtype, with ``torch.iinfo``'s fields (bool is refused, as torch)."""

    def __init__(self, dtype: Any):
        from .tensor import normalize_dtype  # noqa: PLC0415
        want = normalize_dtype(dtype)
        if want is None or want.kind not in "iu":
            raise TypeError(f"iinfo takes an integer dtype (uint8, int8, ..., int64), got "
                            f"{want}; use finfo for floating dtypes")
        info = np.iinfo(want)
        self.bits, self.max, self.min = int(info.bits), int(info.max), int(info.min)
        self.dtype = _dtype_name(want)

    def __repr__(self) -> str:
        return f"iinfo(min={self.min}, max={self.max}, dtype={self.dtype})"
