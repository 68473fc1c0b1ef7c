"""``tensor``, ``as_tensor`` and ``from_numpy``: making a Tensor from data, with PyTorch's
dtype rules (the other creation functions, zeros, randn, arange, ..., are in factories.py).
"""
from __future__ import annotations

from typing import Any, Optional

import numpy as np

from .. import backend, precision
from .core import Tensor, _holds_numbers, _holds_tensor, _host_array
from .dtypes import DTypeLike, normalize_dtype
from .layout import check_pin_memory

__all__ = ["tensor", "as_tensor", "from_numpy"]


def tensor(data: Any, *, dtype: DTypeLike = None, device: Optional[str] = None,
           requires_grad: bool = False, pin_memory: bool = False) -> Tensor:
    """A new leaf tensor holding a copy of ``data`` (a list, number, array or Tensor).

    dtype as ``torch.tensor``: Python floats give the default float dtype (float32 unless
    ``set_default_dtype`` changed it), complex numbers its complex dtype, ints int64, bools
    bool; a NumPy array (or Tensor) keeps its dtype. ``pin_memory=True`` needs an
    accelerator, as torch's (tensor/layout.py)."""
    check_pin_memory(pin_memory, "tensor")
    want = normalize_dtype(dtype)
    source = data._data if isinstance(data, Tensor) else data
    if backend.device_of(source) == "cpu":
        python_data = not isinstance(source, (np.ndarray, np.generic)) and not (
            isinstance(source, (list, tuple)) and _holds_tensor(source))
        try:
            array = _host_array(source)
        except TypeError:       # NumPy's object array: maybe an int beyond int64 (torch's error)
            if python_data and isinstance(source, (int, list, tuple)):
                _check_python_ints(source, want)
            raise
        if python_data and array.dtype == np.uint64 and not (
                want is not None and (want.kind in "fc" or want == np.uint64)):
            _check_python_ints(source, want)    # 2**63..2**64-1: NumPy's uint64, torch refuses
        if python_data and want is not None and want.kind != "c" and array.dtype.kind == "c":
            raise _complex_number_error(want)
        if python_data and want is not None and want.kind in "iu" and array.dtype.kind in "iuf":
            _check_fits_integer(array, want)
        if want is None and array.dtype == np.float64 and python_data and not (
                isinstance(source, (list, tuple)) and _holds_numpy_float64(source)):
            want = precision.get_default_dtype()     # Python floats: the default float dtype
        elif want is None and array.dtype == np.complex128 and not isinstance(
                source, (np.ndarray, np.generic)) and not (
                isinstance(source, (list, tuple)) and _holds_tensor(source)):
            want = precision.default_complex_dtype()   # Python complex numbers: complex64
            #                                  (complex128 under a float64 default), as torch
        array = precision.cast(array, want or array.dtype, copy=True)   # torch's rounding
        precision.note_dtype(array.dtype)
    else:
        array = precision.cast(source, want or source.dtype, copy=True)
    out = Tensor._wrap(array if device is None else backend.to_device(array, device))
    if requires_grad:
        out.requires_grad_(True)
    return out


def _complex_number_error(want: np.dtype) -> TypeError:
    """torch.tensor([1 + 2j], dtype=a real dtype) refuses the Python complex number (even
    1 + 0j), where NumPy would drop its imaginary part."""
    return TypeError(f"must be real number, not complex (as torch: Python complex numbers "
                     f"for a {want.name} tensor; take .real of them, or leave out dtype= for "
                     f"a complex tensor)")


def _holds_numpy_float64(data: Any) -> bool:
    """A list holding a NumPy float64 scalar or array: torch.tensor([np.float64(2.5)]) is
    float64 there (each NumPy item counts with its own dtype), a Python float float32."""
    for d in data:                      # plain Python numbers first: this walks big lists
        kind = type(d)
        if kind is float or kind is int or kind is bool:
            continue
        if kind is list or kind is tuple:
            if _holds_numpy_float64(d):
                return True
        elif isinstance(d, (np.float64, np.ndarray)) and d.dtype == np.float64:
            return True
    return False


def _check_python_ints(data: Any, want: Any) -> None:
    """torch.tensor reads a Python int as a C long long: beyond int64 it raises ValueError
    (NumPy would make uint64 or object arrays) unless a float or uint64 dtype is asked for."""
    if want is not None and want.kind in "fcu" and want.itemsize == 8 or (
            want is not None and want.kind in "fc"):
        return
    items = [data] if isinstance(data, int) else data
    for d in items:
        if isinstance(d, (list, tuple)):
            _check_python_ints(d, want)
        elif isinstance(d, int) and not isinstance(d, bool) and not (
                -2 ** 63 <= d < 2 ** 63):
            raise ValueError(f"Overflow when unpacking long long: tensor({d}) is beyond int64 "
                             f"(as torch); pass dtype=tinyattn.float64 or uint64")


def _check_fits_integer(array: np.ndarray, want: np.dtype) -> None:
    """torch.tensor(python numbers, dtype=an integer dtype) refuses a number the dtype cannot
    hold (NumPy would wrap 300 to 44 in uint8): an int may be negative down to -max for an
    unsigned dtype (two's complement: -1 is 255); a float must be finite and in range."""
    if array.size == 0:
        return
    info = np.iinfo(want)
    if array.dtype.kind == "f":
        bad = not bool(np.isfinite(array).all()) or array.min() < info.min or \
            array.max() > info.max
    else:
        low = info.min if info.min < 0 else -int(info.max)
        bad = int(array.min()) < low or int(array.max()) > int(info.max)
    if bad:
        raise RuntimeError(f"value cannot be converted to type {want} without overflow "
                           f"(tensor(..., dtype={want}) holds {info.min}..{info.max}; got values "
                           f"from {array.min()} to {array.max()})")


def as_tensor(data: Any, *, dtype: DTypeLike = None, device: Optional[str] = None) -> Tensor:
    """``data`` itself when it is already a Tensor of that dtype and device; a NumPy array of
    the right dtype is shared, not copied (as ``torch.as_tensor``); otherwise a new tensor."""
    want = normalize_dtype(dtype)
    target = None if device is None else backend.normalize_device(device)
    if isinstance(data, Tensor):
        if (want is None or data.dtype == want) and (target is None or data.device == target):
            return data
        return data.to(device=target, dtype=want)
    if isinstance(data, np.ndarray) and _holds_numbers(data.dtype) and (
            want is None or data.dtype == want) and target in (None, "cpu"):
        precision.note_dtype(data.dtype)
        return Tensor._wrap(data)
    if backend.device_of(data) != "cpu" and (want is None or data.dtype == want) and (
            target is None or backend.device_of(data) == target):
        return Tensor._wrap(data)
    return tensor(data, dtype=dtype, device=device)


def from_numpy(array: np.ndarray) -> Tensor:
    """A tensor sharing ``array``'s memory (writes to one show in the other), as
    ``torch.from_numpy``."""
    if not isinstance(array, np.ndarray):
        raise TypeError(f"from_numpy expects a NumPy array, got {type(array).__name__}")
    if not _holds_numbers(array.dtype):
        raise TypeError(f"from_numpy: unsupported dtype {array.dtype}; tinyattn tensors hold "
                        f"bool, integer or floating-point numbers")
    precision.note_dtype(array.dtype)
    return Tensor._wrap(array)
