"""A stand-in GPU for machines without one: arrays that behave like CuPy's where it matters.

On a real GPU, data stays on the device: NumPy functions cannot read it (``np.asarray`` on a
CuPy array raises TypeError), and ``float()``, ``int()``, ``bool()`` and ``.item()`` each copy
to the host and wait for the GPU. A bug that calls ``np.exp(x)`` instead of ``xp.exp(x)``
passes every CPU test and fails only on a GPU. The "strict" device catches it on a CPU:

- ``StrictArray`` wraps a NumPy array and refuses every NumPy entry point (``__array__``,
  ``__array_ufunc__``, ``__array_function__``), as CuPy refuses implicit conversion;
- its own namespace (the device's ``xp``) offers NumPy's functions on StrictArrays, and, like
  CuPy, refuses host NumPy arrays mixed in as operands;
- every implicit host sync (``float``, ``int``, ``bool``, ``.item()``) is counted in
  ``SYNCS``, so a test can assert that a hot path makes none.

``enable()`` registers the device as ``"strict"``; ``Tensor(..., device="strict")`` and
``module.to("strict")`` then work as they would with ``"cuda"``. Used by the test suite and
``python -m tinyattn doctor``; it is not for real work (it is slower than plain NumPy).
"""
from __future__ import annotations

import collections
import traceback
from typing import Any

import numpy as np
import scipy.special

from . import backend

__all__ = ["StrictArray", "StrictNamespace", "enable", "SYNCS", "DEVICE"]

DEVICE = "strict"
SYNCS: "collections.Counter[str]" = collections.Counter()  # where each host sync came from


def _unwrap(value: Any) -> Any:
    if isinstance(value, StrictArray):
        return value._array
    if isinstance(value, np.ndarray):
        # CuPy refuses host arrays as operands too: mixing them is a bug on a real GPU.
        raise TypeError(f"a host NumPy array (shape {value.shape}) was mixed with strict-"
                        f"device data; move it with backend.to_device first")
    if isinstance(value, tuple):
        return tuple(_unwrap(v) for v in value)
    if isinstance(value, list):
        return [_unwrap(v) for v in value]
    return value


def _wrap(value: Any) -> Any:
    if isinstance(value, np.ndarray):
        return StrictArray(value)
    if isinstance(value, np.generic):
        return StrictArray(np.asarray(value))
    if hasattr(value, "_fields"):            # NumPy's named results (SlogdetResult, ...)
        return type(value)(*(_wrap(v) for v in value))
    if isinstance(value, (tuple, list)):
        return type(value)(_wrap(v) for v in value)
    return value


def _record_sync(kind: str) -> None:
    frame = traceback.extract_stack()[-3]
    SYNCS[f"{kind} at {frame.filename.split('/')[-1]}:{frame.lineno}"] += 1


class StrictArray:
    """A NumPy array in disguise that refuses NumPy, as a CuPy array does."""

    __slots__ = ("_array",)

    def __init__(self, array: np.ndarray):
        self._array = array

    # NumPy may not touch us: this is exactly how a CuPy array stops np.asarray.
    def __array__(self, *args: Any, **kwargs: Any) -> np.ndarray:
        raise TypeError("Implicit conversion to a NumPy array is not allowed (strict device: a "
                        "NumPy function was called on device data; use xp = "
                        "backend.get_array_module(x) and xp.<function>, or backend.to_host)")

    def __array_ufunc__(self, ufunc: Any, method: str, *inputs: Any, **kwargs: Any) -> Any:
        raise TypeError(f"NumPy ufunc {ufunc.__name__} called on strict-device data; use xp")

    def __array_function__(self, func: Any, types: Any, args: Any, kwargs: Any) -> Any:
        raise TypeError(f"NumPy function {func.__name__} called on strict-device data; use xp")

    # Host syncs: allowed (as on CuPy) but counted.
    def __float__(self) -> float:
        _record_sync("float()")
        return float(self._array)

    def __int__(self) -> int:
        _record_sync("int()")
        return int(self._array)

    def __index__(self) -> int:
        _record_sync("index")
        return int(self._array)

    def __bool__(self) -> bool:
        _record_sync("bool()")
        return bool(self._array)

    def item(self) -> Any:
        _record_sync("item()")
        return self._array.item()

    def tolist(self) -> Any:
        _record_sync("tolist()")
        return self._array.tolist()

    def __len__(self) -> int:
        return len(self._array)

    def __repr__(self) -> str:
        return f"StrictArray(shape={self._array.shape}, dtype={self._array.dtype})"

    # Attributes and methods: delegate, unwrapping arguments and wrapping results.
    def __getattr__(self, name: str) -> Any:
        if name.startswith("__array") or name == "__buffer__":
            raise AttributeError(name)  # no back doors: NumPy reads these before __array__
        attr = getattr(self._array, name)
        if callable(attr):
            def method(*args: Any, **kwargs: Any) -> Any:
                kwargs = {k: _unwrap(v) for k, v in kwargs.items()}
                return _wrap(attr(*_unwrap(args), **kwargs))
            return method
        return _wrap(attr)

    @property
    def T(self) -> "StrictArray":  # noqa: N802 - NumPy's name
        return StrictArray(self._array.T)

    # complex arrays: .real and .imag are views that can be assigned, as CuPy's
    @property
    def real(self) -> Any:
        return _wrap(self._array.real)

    @real.setter
    def real(self, value: Any) -> None:
        self._array.real = _unwrap(value)

    @property
    def imag(self) -> Any:
        return _wrap(self._array.imag)

    @imag.setter
    def imag(self, value: Any) -> None:
        self._array.imag = _unwrap(value)

    def __getitem__(self, index: Any) -> Any:
        return _wrap(self._array[_unwrap(index)])

    def __setitem__(self, index: Any, value: Any) -> None:
        self._array[_unwrap(index)] = _unwrap(value)


def _operator(name: str) -> Any:
    def op(self: StrictArray, *args: Any) -> Any:
        result = getattr(self._array, name)(*_unwrap(args))
        if result is NotImplemented:
            return NotImplemented
        if name in _IN_PLACE:  # keep the same wrapper (not __invert__, which is not in place)
            self._array = result
            return self
        return _wrap(result)
    op.__name__ = name
    return op


_IN_PLACE = {"__iadd__", "__isub__", "__imul__", "__itruediv__", "__ipow__", "__iand__",
             "__ior__"}
_OPERATORS = """add radd sub rsub mul rmul truediv rtruediv floordiv pow rpow matmul rmatmul
    neg pos abs invert and rand or ror xor eq ne lt le gt ge mod
    iadd isub imul itruediv ipow iand ior""".split()
for _name in _OPERATORS:
    setattr(StrictArray, f"__{_name}__", _operator(f"__{_name}__"))


class _StrideTricks:
    """``xp.lib.stride_tricks.as_strided`` (convolution's windows): a view of the device
    data, as CuPy's ``cupy.lib.stride_tricks.as_strided``."""

    @staticmethod
    def as_strided(x: Any, shape: Any = None, strides: Any = None, **kwargs: Any) -> Any:
        return _wrap(np.lib.stride_tricks.as_strided(_unwrap(x), shape, strides, **kwargs))


class _Lib:
    stride_tricks = _StrideTricks()


class StrictNamespace:
    """The strict device's ``xp``: NumPy's functions, taking and giving StrictArrays
    (``xp.linalg``, ``xp.fft`` and ``xp.special``, SciPy's special functions, likewise: CuPy
    has them)."""

    __name__ = "tinyattn.strict_device.xp"
    lib = _Lib()

    def __init__(self, module: Any = np):
        self._module = module

    def __getattr__(self, name: str) -> Any:
        if self._module is np and name == "linalg":
            return StrictNamespace(np.linalg)
        if self._module is np and name == "special":
            return StrictNamespace(scipy.special)
        if self._module is np and name == "fft":          # cupy.fft, as NumPy's
            return StrictNamespace(np.fft)
        attr = getattr(self._module, name)
        if isinstance(attr, type) or not callable(attr):
            return attr  # dtypes (np.float32), constants (np.inf)
        if name in ("issubdtype", "dtype", "result_type", "broadcast_shapes"):
            return attr

        def function(*args: Any, **kwargs: Any) -> Any:
            kwargs = {k: _unwrap(v) for k, v in kwargs.items()}
            return _wrap(attr(*_unwrap(args), **kwargs))
        function.__name__ = name
        return function


xp = StrictNamespace()


def _scatter_add(target: StrictArray, indices: Any, values: Any) -> None:
    np.add.at(target._array, _unwrap(indices), _unwrap(values))


def enable() -> None:
    """Register the strict device (idempotent)."""
    backend.register_device(
        DEVICE, xp,
        owns=lambda a: isinstance(a, StrictArray),
        from_host=lambda a: StrictArray(np.array(a)),
        to_host=lambda a: np.array(a._array),
        erf=lambda a: StrictArray(scipy.special.erf(a._array)),
        scatter_add=_scatter_add,
    )
