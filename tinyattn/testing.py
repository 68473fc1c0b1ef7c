"""``tinyattn.testing.assert_close``: PyTorch's ``torch.testing.assert_close``, with its
default tolerances per dtype and its messages, so a learner's test reads the same on both.

    assert_close(actual, expected)      # |actual - expected| <= atol + rtol * |expected|

Tensors are compared element by element after checking shape and (``check_dtype``) dtype;
Python numbers as scalars; lists, tuples and dicts item by item (the message names the
item). NaNs are equal only with ``equal_nan=True``.
"""
from __future__ import annotations

from typing import Any, Callable, Optional, Tuple, Union

import numpy as np

from . import backend
from .tensor import Tensor, from_numpy

__all__ = ["assert_close", "default_tolerances"]

_TOLERANCES = {"float16": (1e-3, 1e-5), "bfloat16": (1.6e-2, 1e-5),
               "float32": (1.3e-6, 1e-5), "float64": (1e-7, 1e-7)}


def default_tolerances(*dtypes: np.dtype) -> Tuple[float, float]:
    """(rtol, atol): torch's defaults, the loosest over ``dtypes`` (0 for ints and bools)."""
    pairs = [_TOLERANCES.get(np.dtype(d).name, (0.0, 0.0)) for d in dtypes]
    return max(p[0] for p in pairs), max(p[1] for p in pairs)


def _torch_dtype(dtype: np.dtype) -> str:
    return f"torch.{np.dtype(dtype).name}"


def _number(value: Any) -> bool:
    return isinstance(value, (bool, int, float, np.number)) and not isinstance(value, Tensor)


def assert_close(actual: Any, expected: Any, *, allow_subclasses: bool = True,
                 rtol: Optional[float] = None, atol: Optional[float] = None,
                 equal_nan: bool = False, check_device: bool = True, check_dtype: bool = True,
                 check_layout: bool = True, check_stride: bool = False,
                 msg: Union[str, Callable[[str], str], None] = None) -> None:
    """Raise ``AssertionError`` (torch's message) unless actual and expected are close."""
    if (rtol is None) != (atol is None):
        raise ValueError(f"Both 'rtol' and 'atol' must be either specified or omitted, but got "
                         f"no {'atol' if atol is None else 'rtol'}.")
    _compare(actual, expected, rtol, atol, equal_nan, check_dtype, msg, "")


def _compare(actual: Any, expected: Any, rtol: Any, atol: Any, equal_nan: bool,
             check_dtype: bool, msg: Any, where: str) -> None:
    if actual is None or expected is None:          # torch's NonePair
        if actual is not expected:
            _fail(f"None mismatch: {actual} is not {expected}", msg, where)
        return
    if isinstance(actual, np.ndarray):              # torch compares NumPy arrays as tensors
        actual = from_numpy(np.ascontiguousarray(actual))
    if isinstance(expected, np.ndarray):
        expected = from_numpy(np.ascontiguousarray(expected))
    if isinstance(actual, dict) and isinstance(expected, dict):
        if set(actual) != set(expected):
            _fail(f"The keys of the mappings do not match:\nactual: {sorted(map(str, actual))}"
                  f"\nexpected: {sorted(map(str, expected))}", msg, where)
        for key in expected:
            _compare(actual[key], expected[key], rtol, atol, equal_nan, check_dtype, msg,
                     f"{where}[{key!r}]")
        return
    if isinstance(actual, (list, tuple)) and isinstance(expected, (list, tuple)):
        if len(actual) != len(expected):
            _fail(f"The length of the sequences mismatch: {len(actual)} != {len(expected)}",
                  msg, where)
        for i, (a, e) in enumerate(zip(actual, expected)):
            _compare(a, e, rtol, atol, equal_nan, check_dtype, msg, f"{where}[{i}]")
        return
    if isinstance(actual, Tensor) and isinstance(expected, Tensor):
        _compare_tensors(actual, expected, rtol, atol, equal_nan, check_dtype, msg, where)
        return
    if _number(actual) and _number(expected):
        if check_dtype and type(actual) is not type(expected):
            _fail(f"The (d)types do not match: {type(actual)} != {type(expected)}.", msg, where)
        _compare_scalars(actual, expected, rtol, atol, equal_nan, msg, where)
        return
    raise TypeError(f"No comparison pair was able to handle inputs of type "
                    f"{type(actual)} and {type(expected)}.")


def _compare_tensors(actual: Tensor, expected: Tensor, rtol: Any, atol: Any, equal_nan: bool,
                     check_dtype: bool, msg: Any, where: str) -> None:
    if actual.shape != expected.shape:
        _fail(f"The values for attribute 'shape' do not match: torch.Size({list(actual.shape)})"
              f" != torch.Size({list(expected.shape)}).", msg, where)
    if check_dtype and actual.dtype != expected.dtype:
        _fail(f"The values for attribute 'dtype' do not match: {_torch_dtype(actual.dtype)} != "
              f"{_torch_dtype(expected.dtype)}.", msg, where)
    if rtol is None:
        rtol, atol = default_tolerances(actual.dtype, expected.dtype)
    a, e = backend.to_host(actual._data), backend.to_host(expected._data)
    if actual.ndim == 0:
        _compare_scalars(a.item(), e.item(), rtol, atol, equal_nan, msg, where,
                         dtype=np.result_type(a, e))
        return
    common = np.result_type(a, e)
    if common.kind == "b":
        common = np.dtype(np.int64)
    a, e = a.astype(common), e.astype(common)
    bad = ~_close(a, e, rtol, atol, equal_nan)
    if not bad.any():
        return
    with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
        diff = np.abs(a - e) if common.kind == "f" else np.abs(a.astype(np.int64) - e)
        relative = (diff / np.abs(e)).astype(common if common.kind == "f" else np.float32)
    exact = rtol == 0 and atol == 0
    lines = [f"Tensor-likes are not {'equal' if exact else 'close'}!", "",
             f"Mismatched elements: {int(bad.sum())} / {bad.size} "
             f"({100 * bad.sum() / bad.size:.1f}%)"]
    for label, values, limit in (("absolute", diff, atol), ("relative", relative, rtol)):
        masked = np.where(bad, values, -np.inf if values.dtype.kind == "f" else -1)
        if values.dtype.kind == "f" and np.isnan(values[bad]).any():
            flat = int(np.flatnonzero(bad & np.isnan(values))[0])
        else:
            flat = int(np.argmax(masked))
        index = np.unravel_index(flat, values.shape)
        value = values.reshape(-1)[flat].item()
        allowed = "" if exact else f" (up to {limit} allowed)"
        lines.append(f"Greatest {label} difference: {value} at index "
                     f"{tuple(int(i) for i in index)}{allowed}")
    _fail("\n".join(lines), msg, where)


def _close(a: np.ndarray, e: np.ndarray, rtol: float, atol: float, equal_nan: bool) -> Any:
    if a.dtype.kind != "f":
        return np.abs(a.astype(np.float64) - e) <= atol + rtol * np.abs(e.astype(np.float64))
    with np.errstate(invalid="ignore", over="ignore"):
        diff = np.abs(a - e)    # an infinite difference is never within a tolerance (torch)
        close = (a == e) | (np.isfinite(diff) & (diff <= atol + rtol * np.abs(e)))
    return close | (np.isnan(a) & np.isnan(e)) if equal_nan else close


def _compare_scalars(actual: Any, expected: Any, rtol: Any, atol: Any, equal_nan: bool,
                     msg: Any, where: str, dtype: Any = None) -> None:
    if dtype is None:
        dtype = np.float64 if isinstance(actual, float) or isinstance(expected, float) \
            else np.int64
    if rtol is None:
        rtol, atol = default_tolerances(dtype)
    a, e = np.asarray(actual, dtype=dtype), np.asarray(expected, dtype=dtype)
    if bool(_close(a, e, rtol, atol, equal_nan)):
        return
    exact = rtol == 0 and atol == 0
    diff = abs(actual - expected)
    relative = diff / abs(expected) if expected else float("inf")
    allowed = ("", "") if exact else (f" (up to {atol} allowed)", f" (up to {rtol} allowed)")
    _fail(f"Scalars are not {'equal' if exact else 'close'}!\n\nExpected {expected} but got "
          f"{actual}.\nAbsolute difference: {diff}{allowed[0]}\nRelative difference: "
          f"{relative}{allowed[1]}", msg, where)


def _fail(text: str, msg: Any, where: str) -> None:
    if callable(msg):
        text = msg(text)
    elif msg is not None:
        text = msg
    elif where:
        text += f"\n\nThe failure occurred for item {where}"
    raise AssertionError(text)
