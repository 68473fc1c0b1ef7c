"""PyTorch's type promotion: which dtype an op on several operands gives.

``promote_types(a, b)``: the smallest dtype that holds both categories' values; unlike NumPy,
an integer meeting a float gives that float (int64 with float32 is float32, not float64).

``result_type(*operands)``: torch's three-tier rule. Operands are grouped as tensors with
dimensions, 0-d tensors, and Python numbers. Each group is promoted on its own; then a lower
group changes the result only when it is of a higher category (bool < integer < float), so a
0-d tensor or a number never widens the dtype within a category::

    int32 tensor + tensor(5)       -> int32     (the 0-d int64 does not widen)
    uint8 tensor + tensor(10)      -> uint8     (250 + 10 wraps to 4, as torch)
    int32 tensor + 2.5             -> float32   (a float number brings the default float dtype,
                                                  float32 unless set_default_dtype changed it)
    float16 tensor + tensor(1e9)   -> float16   (same category: the tensor's dtype)

Two floating tensors of different dtypes promote as in torch (``bfloat16 * float32`` is
float32, ``float32 + float64`` is float64; in place the target keeps its dtype). The opt-in
strict mode (``set_strict_promotion(True)`` or ``with strict_promotion():``) turns each such
implicit float promotion into an error that says how to convert: a float64 gradcheck habit
(no float32 constant sneaking in) or a memory budget (no silent float64 copy) is then checked.
"""
from __future__ import annotations

from typing import Any, Iterable, Optional

import numpy as np

from . import precision

__all__ = ["promote_types", "result_type", "can_cast", "operand_tier", "set_strict_promotion",
           "is_strict_promotion", "strict_promotion", "float_mix_error", "compared_operands"]

_CATEGORY = {"b": 0, "u": 1, "i": 1, "f": 2, "V": 2, "c": 3}  # "V": ml_dtypes' bfloat16
_COMPLEX64 = np.dtype(np.complex64)


def _category(dtype: np.dtype) -> int:
    return 2 if _is_float(dtype) else _CATEGORY.get(dtype.kind, 1)


def _is_float(dtype: np.dtype) -> bool:
    return dtype.kind == "f" or dtype.name == "bfloat16"


def promote_types(a: Any, b: Any) -> np.dtype:
    """torch.promote_types on NumPy dtypes: a float beats any integer or bool; within a
    category the wider wins (uint8 with int8 gives int16; float16 with bfloat16, float32)."""
    a, b = np.dtype(a), np.dtype(b)
    if a == b:
        return a
    if a.kind == "c" or b.kind == "c":      # complex of the wider real part (float64 with
        parts = [d if d.kind == "c" else _complex_of(d) for d in (a, b)]   # complex64:
        return max(parts, key=lambda d: d.itemsize)                         # complex128)
    if _is_float(a) != _is_float(b):
        return a if _is_float(a) else b
    if a.kind == "b" or b.kind == "b":
        return b if a.kind == "b" else a
    if {a.name, b.name} == {"float16", "bfloat16"}:
        return np.dtype(np.float32)
    if a.name == "bfloat16" or b.name == "bfloat16":
        return a if a.itemsize > b.itemsize else b if b.itemsize > a.itemsize else a
    return np.promote_types(a, b)


def _complex_of(dtype: np.dtype) -> np.dtype:
    """The complex dtype whose parts hold ``dtype``: float64 -> complex128, any other float,
    integer or bool -> complex64 (as torch's promote_types)."""
    return np.dtype(np.complex128) if dtype == np.float64 else _COMPLEX64


def can_cast(from_: Any, to: Any) -> bool:
    """torch.can_cast on NumPy dtypes: may a result of dtype ``from_`` be written into a
    tensor of dtype ``to`` (in place, or through out=)? Only a narrowing of *category* is
    refused: a float into an integer or bool, an integer into a bool. Within a category
    torch writes (int16 into uint8 wraps, float64 into float16 rounds), where NumPy's
    "same_kind" would also refuse signed into unsigned."""
    return _category(np.dtype(from_)) <= _category(np.dtype(to))


def operand_tier(value: Any) -> int:
    """0: a tensor (or array) with dimensions; 1: a 0-d tensor; 2: a Python or NumPy number."""
    if isinstance(value, (bool, int, float, complex, np.generic)):
        return 2
    return 0 if len(value.shape) else 1


def _dtype_of(value: Any) -> np.dtype:
    if isinstance(value, (bool, np.bool_)):
        return np.dtype(np.bool_)
    if isinstance(value, (int, np.integer)):
        return np.dtype(np.int64)
    if isinstance(value, (float, np.floating)):
        return precision.get_default_dtype()     # float32 unless set_default_dtype changed it
    if isinstance(value, complex):
        return precision.number_complex_dtype(refuse_half=False)   # checked in result_type
    return np.dtype(value.dtype)


def _combine(higher: Optional[np.dtype], lower: Optional[np.dtype]) -> Optional[np.dtype]:
    """A lower tier changes the result only if it is of a higher category."""
    if higher is None:
        return lower
    if lower is None or _category(lower) <= _category(higher):
        return higher
    if lower.kind == "c" and _is_float(higher):   # a complex number or 0-d tensor meets a
        if higher.name == "float16":                 # float tensor: the complex dtype of the
            raise TypeError(                         # tensor's float (float64: complex128;
                # bfloat16 has no complex of its own: complex64, as torch)
                f"a {higher} tensor meeting a complex number would give torch's complex32, "
                f"which tinyattn does not have; convert the tensor with .float() first")
        return _complex_of(higher)
    return promote_types(higher, lower)


def result_type(*operands: Any) -> np.dtype:
    """torch.result_type for any number of tensors, arrays and Python numbers."""
    if not operands:
        raise TypeError("result_type needs at least one operand")
    tiers: list = [None, None, None]
    for value in operands:
        tier, dtype = operand_tier(value), _dtype_of(value)
        tiers[tier] = dtype if tiers[tier] is None else promote_types(tiers[tier], dtype)
    result = _combine(tiers[0], _combine(tiers[1], tiers[2]))
    number_complex = tiers[2] is not None and tiers[2].kind == "c"
    if number_complex and precision.complex_stands_in_for_complex32() and all(
            t is None or _category(t) < 2 for t in tiers[:2]):
        precision.number_complex_dtype()     # raises: torch's result is complex32 here
    return result


def compared_operands(a: Any, b: Any) -> tuple:
    """Two operands (arrays or Python numbers) of a comparison as torch compares them: both
    converted to their ``result_type`` first. A Python int meeting an integer tensor is
    wrapped to the tensor's dtype as a C cast wraps it (``uint8 tensor < -3`` compares with
    253, ``< 300`` with 44), a float number is rounded to a float tensor's dtype, an integer
    tensor meeting a float16 one is rounded to float16. NumPy would compare exactly instead.
    A number comes back as a NumPy scalar of that dtype (device arrays take it as it is)."""
    common = result_type(a, b)

    def converted(value: Any) -> Any:
        if isinstance(value, (bool, int, float, complex, np.generic)):
            if isinstance(value, (int, np.integer)) and not isinstance(value, bool) \
                    and common.kind in "iu":
                return np.asarray(value, dtype=np.int64).astype(common)[()]   # a scalar
            return np.asarray(value).astype(common)[()]
        return value if value.dtype == common else value.astype(common)
    with np.errstate(over="ignore", invalid="ignore"):   # 1e10 in float16 is inf, as torch
        return converted(a), converted(b)


# ---------------------------------------------------------------- the opt-in strict mode
_strict = [False]          # one switch for the process, as torch's set_default_dtype


def set_strict_promotion(enabled: bool) -> None:
    """Turn the strict mode on or off: while on, an op whose floating inputs have different
    dtypes (float32 with float64, bfloat16 with float32, ...) raises instead of promoting."""
    _strict[0] = bool(enabled)


def is_strict_promotion() -> bool:
    return _strict[0]


class strict_promotion:  # noqa: N801 - a context manager, named like torch's guards
    """``with tinyattn.strict_promotion():`` the strict mode inside the block (``enabled=False``
    turns it off inside instead); the previous setting comes back on exit, also on error."""

    def __init__(self, enabled: bool = True):
        self.enabled = bool(enabled)
        self.previous = False

    def __enter__(self) -> "strict_promotion":
        self.previous, _strict[0] = _strict[0], self.enabled
        return self

    def __exit__(self, *exc: Any) -> None:
        _strict[0] = self.previous


def refuse_float_mix(op: str, *operands: Any) -> None:
    """The strict mode's rule for an op that converts its operands to ``result_type`` itself
    (before Function.apply, which checks the rest): raise when two floating tensors of the
    same tier (both with dimensions, or both 0-d) have different dtypes. Nothing when off."""
    if not _strict[0]:
        return
    for tier in (0, 1):
        dtypes = {np.dtype(v.dtype) for v in operands
                  if hasattr(v, "shape") and hasattr(v, "dtype") and _is_float(np.dtype(v.dtype))
                  and operand_tier(v) == tier}
        if len(dtypes) > 1:
            raise float_mix_error(op, dtypes)


def float_mix_error(op: str, dtypes: Iterable[Any]) -> TypeError:
    """The strict mode's error for an op whose floating inputs have different dtypes."""
    names = " and ".join(sorted({str(np.dtype(d)) for d in dtypes}))
    return TypeError(
        f"{op}: inputs mix floating dtypes ({names}) and strict promotion is on "
        f"(tinyattn.set_strict_promotion(True)), so nothing is upcast silently. Convert one "
        f"side with .float() or .double() (or .to(dtype)) first, or turn strict promotion off "
        f"to promote as torch does")
