"""The values of ``linspace`` and ``logspace``, rounded as PyTorch's CPU kernels round them.

The plain maths is ``start + (end - start) * i / (steps - 1)`` (and ``base`` to that power);
which floating-point number each element becomes depends on the order of the roundings, and
a PyTorch name must give PyTorch's numbers. Measured against torch 2.13 (CPU) over random
starts, ends, step counts and bases (tests/test_spaced_values.py keeps the comparison):

linspace, in the output dtype ``T``:
  - ``s = T(start)``, ``e = T(end)`` (an integer ``T`` truncates toward zero; a value outside
    ``T``'s range is torch's overflow error);
  - ``step = (e - s) / (steps - 1)``: in ``T`` for floating ``T`` (each operation of float16 /
    bfloat16 rounds to that dtype), in float64 for integer ``T``;
  - element i is ``s + step * i`` for ``i < steps // 2`` and ``e - step * (steps - 1 - i)``
    after (so both ends are exact). float32/float64 (and the float64 of integer ``T``) round
    the product and the sum once, as one fused multiply-add; float16/bfloat16 round the
    index, the product and the sum each to ``T`` (c10::Half's arithmetic); an integer ``T``
    truncates the float64 value.
  - ``steps == 1`` gives ``T(start)``.

logspace: the exponent is ``s + step * i`` / ``e - step * (steps - 1 - i)`` in float64, with
``s`` and ``e`` in ``T`` as above and ``step = float64(T(e - s)) / (steps - 1)`` (the difference
rounded to ``T`` first); element i is ``float64(base) ** exponent`` rounded (or truncated) to
``T``. ``steps == 1`` gives ``base ** start``.

Everything is computed here on the host with NumPy (a range is small); the factory moves it.
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np


__all__ = ["linspace_values", "logspace_values", "to_integer_scalar", "to_float_scalar"]

_C10_NAMES = {"int8": "int8_t", "int16": "int16_t", "int32": "int", "int64": "int64_t",
              "uint8": "uint8_t", "float16": "c10::Half", "bfloat16": "c10::BFloat16",
              "float32": "float", "float64": "double"}

_BIG = float(2 ** 27 + 1)                       # Veltkamp's splitter for float64


def _finfo(dtype: np.dtype) -> Any:
    """NumPy's finfo, or ml-dtypes' for bfloat16 (imported only then: it is slow to import,
    and an array can be bfloat16 only once it has been)."""
    if dtype.name == "bfloat16":
        import ml_dtypes  # noqa: PLC0415 - deliberately lazy (tinyattn/precision.py says why)
        return ml_dtypes.finfo(dtype)
    return np.finfo(dtype)


def _overflow(value: Any, dtype: np.dtype, op: str) -> RuntimeError:
    name = _C10_NAMES.get(str(dtype), str(dtype))
    return RuntimeError(f"value cannot be converted to type {name} without overflow: {op} got "
                        f"{value!r}, outside the range of {dtype}; choose a wider dtype")


def to_integer_scalar(value: Any, dtype: np.dtype, op: str) -> int:
    """torch's Scalar -> integer conversion: a float truncates toward zero and must lie within
    the dtype's range; a Python int may also be negative for an unsigned dtype (down to
    -max, it wraps: -2 -> 254 for uint8)."""
    info = np.iinfo(dtype)
    if isinstance(value, bool):
        value = int(value)
    if isinstance(value, int):
        low = -int(info.max) if info.min == 0 else int(info.min)
        if not low <= value <= int(info.max):
            raise _overflow(value, dtype, op)
        return int(np.array(value).astype(np.int64).astype(dtype))
    value = float(value)
    if math.isnan(value) or not float(info.min) <= value <= float(info.max):
        raise _overflow(value, dtype, op)
    return int(math.trunc(value))


def to_float_scalar(value: Any, dtype: np.dtype, op: str) -> Any:
    """torch's Scalar -> floating conversion (through float32 for the half dtypes, as c10's
    Half(float) constructor), with its overflow error for a finite value beyond the range."""
    value = float(value)
    if dtype.kind == "c":                     # a real value in a complex dtype: its part's
        dtype = np.dtype(np.float64 if dtype == np.complex128 else np.float32)  # float dtype
    if dtype == np.float64:
        return np.float64(value)
    limit = float(_finfo(dtype).max)
    if math.isfinite(value) and abs(value) > limit:
        raise _overflow(value, dtype, op)
    return np.array(np.float32(value)).astype(dtype)[()]


# ------------------------------------------------------------------ one-rounding helpers
def _two_sum(a: np.ndarray, b: np.ndarray) -> Any:
    """s = fl(a + b) and the exact error a + b - s (Knuth)."""
    s = a + b
    bb = s - a
    return s, (a - (s - bb)) + (b - bb)


def _split(a: np.ndarray) -> Any:
    c = _BIG * a
    high = c - (c - a)
    return high, a - high


def _two_product(a: np.ndarray, b: np.ndarray) -> Any:
    """p = fl(a * b) and the exact error a * b - p (Dekker)."""
    p = a * b
    ah, al = _split(a)
    bh, bl = _split(b)
    return p, ((ah * bh - p) + ah * bl + al * bh) + al * bl


def _fma64(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
    """a * b + c in float64 with (all but in contrived ties) one rounding, as C's fma."""
    p, pe = _two_product(a, b)
    s, se = _two_sum(p, c)
    return s + (se + pe)


def _fma32(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
    """a * b + c for float32 a, c and a whole b < 2**29, rounded once to float32: the product
    is exact in float64, the sum is kept as value + error, and rounding to odd before the
    final float32 rounding avoids the double rounding."""
    p = a.astype(np.float64) * b.astype(np.float64)
    s, err = _two_sum(p, c.astype(np.float64))
    bits = s.view(np.uint64)
    odd = ((bits & np.uint64(1)) == 1) | (err == 0)
    s = np.where(odd, s, np.nextafter(s, np.where(err > 0, np.inf, -np.inf)))
    return s.astype(np.float32)


def _to_integer(values: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """C's double -> integer conversion as x86 performs it, which torch's kernels inherit:
    truncation toward zero into int32 (int64 for an int64 result), NaN and values beyond that
    range becoming its minimum, then the low bits kept for int8/uint8/int16
    (torch.logspace(0, 3, 4, dtype=torch.int8) is [1, 10, 100, -24])."""
    wide = np.int64 if dtype == np.int64 else np.int32
    info = np.iinfo(wide)
    t = np.trunc(values)
    fits = (t >= float(info.min)) & (t < -float(info.min))     # NaN compares False
    whole = np.where(fits, t, 0).astype(np.int64)
    return np.where(fits, whole, info.min).astype(wide).astype(dtype)


def _spread(steps: int) -> Any:
    """(i, k, first): the index, the distance from the end, which half each element is in."""
    i = np.arange(steps, dtype=np.int64)
    return i, steps - 1 - i, i < steps // 2


# ------------------------------------------------------------------ linspace
def linspace_values(start: Any, end: Any, steps: int, dtype: np.dtype) -> np.ndarray:
    """torch.linspace(start, end, steps, dtype=dtype) as a NumPy array (see the module
    docstring for the roundings)."""
    dtype = np.dtype(dtype)
    if dtype.kind == "c":                     # each part as the real dtype of its width: torch
        part = np.dtype(np.float64 if dtype == np.complex128 else np.float32)  # computes
        start, end = complex(start), complex(end)    # start + step * i in complex arithmetic,
        re = linspace_values(start.real, end.real, steps, part)   # which is that per part
        im = linspace_values(start.imag, end.imag, steps, part)
        return (re + 1j * im).astype(dtype)   # (never through float32 for complex128)
    if steps == 0:                            # torch converts nothing then (no overflow error)
        return np.empty(0, dtype=dtype)
    if steps == 1:                            # and only start here
        convert = to_integer_scalar if dtype.kind in "iu" else to_float_scalar
        return np.full(1, convert(start, dtype, "linspace"), dtype=dtype)
    if dtype.kind in "iu":
        s = to_integer_scalar(start, dtype, "linspace")
        e = to_integer_scalar(end, dtype, "linspace")
        step = (float(e) - float(s)) / (steps - 1)
        i, k, first = _spread(steps)
        up = _fma64(np.full(steps, step), i.astype(np.float64), np.full(steps, float(s)))
        down = _fma64(np.full(steps, -step), k.astype(np.float64), np.full(steps, float(e)))
        return _to_integer(np.where(first, up, down), dtype)
    s = to_float_scalar(start, dtype, "linspace")
    e = to_float_scalar(end, dtype, "linspace")
    i, k, first = _spread(steps)
    if dtype == np.float64:
        step = (e - s) / np.float64(steps - 1)
        up = _fma64(np.full(steps, step), i.astype(np.float64), np.full(steps, s))
        down = _fma64(np.full(steps, -step), k.astype(np.float64), np.full(steps, e))
        return np.where(first, up, down)
    if dtype == np.float32:
        step = np.float32(np.float32(e - s) / np.float32(steps - 1))
        up = _fma32(np.full(steps, step), i, np.full(steps, s))
        down = _fma32(np.full(steps, -step), k, np.full(steps, e))
        return np.where(first, up, down)

    def rounded(v: Any) -> np.ndarray:        # one c10::Half / c10::BFloat16 operation:
        return np.asarray(v, dtype=np.float32).astype(dtype).astype(np.float32)  # in float32,
    f32 = np.float32                                                               # then rounded
    step = rounded(rounded(f32(e) - f32(s)) / rounded(steps - 1))
    up = rounded(f32(s) + rounded(step * rounded(i)))
    down = rounded(f32(e) - rounded(step * rounded(k)))
    return np.where(first, up, down).astype(dtype)


# ------------------------------------------------------------------ logspace
def logspace_values(start: Any, end: Any, steps: int, base: float, dtype: np.dtype
                    ) -> np.ndarray:
    """torch.logspace(start, end, steps, base, dtype=dtype) as a NumPy array."""
    dtype = np.dtype(dtype)
    integer = dtype.kind in "iu"
    base = float(base)
    if steps <= 1:
        value = base ** float(start)
        if steps == 0:
            return np.empty(0, dtype=dtype)
        if integer:
            return np.full(1, to_integer_scalar(value, dtype, "logspace"), dtype=dtype)
        return np.full(1, to_float_scalar(value, dtype, "logspace"), dtype=dtype)
    if integer:
        s = float(to_integer_scalar(start, dtype, "logspace"))
        e = float(to_integer_scalar(end, dtype, "logspace"))
        difference = e - s
    else:
        s_t = to_float_scalar(start, dtype, "logspace")
        e_t = to_float_scalar(end, dtype, "logspace")
        s, e = float(s_t), float(e_t)
        difference = float(np.asarray(np.float32(e) - np.float32(s)).astype(dtype)) \
            if dtype.itemsize == 2 else float(e_t - s_t)
    step = difference / (steps - 1)
    i, k, first = _spread(steps)
    exponent = np.where(first, s + step * i, e - step * k)
    with np.errstate(over="ignore", invalid="ignore"):
        values = np.power(base, exponent)
        if integer:
            return _to_integer(values, dtype)
        return values.astype(dtype)
