"""torch's dtype questions asked directly: ``torch.result_type``, ``torch.promote_types`` and
``torch.can_cast``, answered by the rules every tinyattn op follows (tinyattn/promotion.py).
The dtypes come back as NumPy dtypes, what ``Tensor.dtype`` is (``== torch.float32`` holds)."""
from __future__ import annotations

from typing import Any

import numpy as np

from .. import promotion
from ..tensor import Tensor, normalize_dtype

__all__ = ["result_type", "promote_types", "can_cast"]


def _dtype(value: Any, name: str, op: str) -> np.dtype:
    dtype = normalize_dtype(value)
    if dtype is None:
        raise TypeError(f"{op}(): argument '{name}' must be a dtype, got {value!r}")
    return dtype


def result_type(tensor1: Any, tensor2: Any) -> np.dtype:
    """The dtype ``tensor1 + tensor2`` would have: tensors with dimensions first, then 0-d
    tensors, then Python numbers, each changing the result only from a higher category."""
    for name, value in (("tensor1", tensor1), ("tensor2", tensor2)):
        if not isinstance(value, (Tensor, bool, int, float, complex)):
            raise TypeError(f"result_type(): argument '{name}' must be a Tensor or a Number, "
                            f"got {type(value).__name__}")
    return promotion.result_type(tensor1, tensor2)


def promote_types(type1: Any, type2: Any) -> np.dtype:
    """The smallest dtype both convert to without changing category (int64 with float32 is
    float32; uint8 with int8 is int16; float16 with bfloat16 is float32)."""
    return promotion.promote_types(_dtype(type1, "type1", "promote_types"),
                                   _dtype(type2, "type2", "promote_types"))


def can_cast(from_: Any, to: Any) -> bool:
    """Whether an op may write a result of dtype ``from_`` into a ``to`` tensor (in place or
    out=): refused only from float to integer or bool, and from integer to bool."""
    return promotion.can_cast(_dtype(from_, "from_", "can_cast"), _dtype(to, "to", "can_cast"))
