"""dtype names: ``normalize_dtype`` turns PyTorch's and NumPy's ways of naming a dtype
(``"float32"``, ``tinyattn.long``, ``"torch.float16"``, ``np.float64``, ``bfloat16``) into a
NumPy dtype, with an error that lists the names when it does not know one.
"""
from __future__ import annotations

from typing import Any, Optional, Union

import numpy as np

from .. import precision

__all__ = ["DTypeLike", "normalize_dtype", "is_device_name"]

DTypeLike = Union[str, type, np.dtype, None]

_DTYPE_NAMES = {
    "float16": np.float16, "float32": np.float32, "float64": np.float64,
    "half": np.float16, "float": np.float32, "double": np.float64,
    "int8": np.int8, "int16": np.int16, "int32": np.int32, "int64": np.int64,
    "uint8": np.uint8, "int": np.int32, "long": np.int64, "short": np.int16,
    "bool": np.bool_, "bfloat16": None,   # ml-dtypes' bfloat16: precision.BFLOAT16, made on first use
    "complex64": np.complex64, "complex128": np.complex128, "cfloat": np.complex64,
    "cdouble": np.complex128,
}


def normalize_dtype(dtype: DTypeLike) -> Optional[np.dtype]:
    if dtype is None:
        return None
    if isinstance(dtype, str):
        name = dtype[len("torch."):] if dtype.startswith("torch.") else dtype
        if name not in _DTYPE_NAMES:
            raise TypeError(f"unknown dtype {dtype!r}: use one of {sorted(_DTYPE_NAMES)}")
        found = np.dtype(_DTYPE_NAMES[name] if name != "bfloat16" else precision.BFLOAT16)
        precision.note_dtype(found)
        return found
    if dtype is float:
        return np.dtype(np.float64)     # as torch: the Python type float means float64
        #                                 (whatever the default dtype: it is C's double)
    if dtype is int:
        return np.dtype(np.int64)
    if dtype is bool:
        return np.dtype(np.bool_)
    if dtype is complex:
        return np.dtype(np.complex128)  # as torch: the Python type complex means complex128
    found = np.dtype(dtype)
    precision.note_dtype(found)
    return found


def is_device_name(value: Any) -> bool:
    if not isinstance(value, str):
        return False
    name = value[len("torch."):] if value.startswith("torch.") else value
    return name not in _DTYPE_NAMES
