"""Bitwise ops on integer and bool tensors: and, or, xor, not, the shifts, gcd and lcm
(``torch.bitwise_*``, the operators ``& | ^ ~ << >>``), and ``signbit``.

None has a gradient: their inputs are integers or bools (signbit's output is bool), as in
torch. Operands promote by torch's rule (``promotion.result_type``): int8 & int64 is int64, a
Python int keeps the tensor's dtype. A floating operand is refused with torch's message.
"""
from __future__ import annotations

from typing import Any, Callable

import numpy as np

from .. import backend
from ..promotion import result_type
from ..tensor import Tensor

__all__ = ["bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_not", "bitwise_left_shift",
           "bitwise_right_shift", "gcd", "lcm", "signbit"]


def _arrays(a: Any, b: Any, op: str, allow_bool: bool = True) -> Any:
    if not isinstance(a, Tensor) and not isinstance(b, Tensor):
        raise TypeError(f"{op}: expected a tensor for input or other")
    target = result_type(a, b)
    if target.kind == "f" or target.kind == "V" or (target.kind == "b" and not allow_bool):
        kinds = "integer" if not allow_bool else "integer and bool"
        raise NotImplementedError(f'"{op}_cpu" not implemented for {target.name!r} (as in '
                                  f"torch): {op} works on {kinds} tensors")
    like = a if isinstance(a, Tensor) else b
    xp = backend.get_array_module(like._data)

    def as_array(v: Any) -> Any:
        if isinstance(v, Tensor):
            return v._data.astype(target, copy=False)
        return xp.asarray(np.array(v).astype(target))
    return xp, as_array(a), as_array(b)


def _wrap(xp: Any, array: Any) -> Tensor:
    return Tensor._wrap(xp.asarray(array))


def _binary(name: str, fn: Callable[[Any, Any, Any], Any], allow_bool: bool = True,
            tensors_only: bool = False) -> Callable[..., Tensor]:
    def op(input: Any, other: Any) -> Tensor:  # noqa: A002 - PyTorch's names
        for arg, value in (("input", input), ("other", other))[:2 if tensors_only else 0]:
            if not isinstance(value, Tensor):
                raise TypeError(f"{name}(): argument '{arg}' must be Tensor, not "
                                f"{type(value).__name__}")
        xp, a, b = _arrays(input, other, name, allow_bool)
        try:
            return _wrap(xp, fn(xp, a, b))
        except ValueError as exc:
            raise RuntimeError(f"{name}: shapes {a.shape} and {b.shape} do not broadcast") \
                from exc
    op.__name__ = op.__qualname__ = name
    return op


def _left_shift(xp: Any, a: Any, b: Any) -> Any:
    """a << b; a shift by a negative amount or by the width or more gives 0, as torch."""
    bits = a.dtype.itemsize * 8
    out_of_range = (b < 0) | (b >= bits)
    return xp.where(out_of_range, 0, xp.left_shift(a, xp.where(out_of_range, 0, b))
                    ).astype(a.dtype)


def _right_shift(xp: Any, a: Any, b: Any) -> Any:
    """a >> b (arithmetic for signed types); out of range shifts fill with the sign bit."""
    bits = a.dtype.itemsize * 8
    out_of_range = (b < 0) | (b >= bits)
    fill = xp.where(a < 0, -1, 0) if a.dtype.kind == "i" else xp.zeros_like(a)
    return xp.where(out_of_range, fill, xp.right_shift(a, xp.where(out_of_range, 0, b))
                    ).astype(a.dtype)


bitwise_and = _binary("bitwise_and", lambda xp, a, b: xp.bitwise_and(a, b))
bitwise_or = _binary("bitwise_or", lambda xp, a, b: xp.bitwise_or(a, b))
bitwise_xor = _binary("bitwise_xor", lambda xp, a, b: xp.bitwise_xor(a, b))
bitwise_left_shift = _binary("bitwise_left_shift", _left_shift, allow_bool=False)
bitwise_right_shift = _binary("bitwise_right_shift", _right_shift, allow_bool=False)
def _gcd(xp: Any, a: Any, b: Any) -> Any:
    """gcd as torch computes it: Euclid's algorithm on |a| and |b| in the integer dtype. Only
    the dtype's minimum differs from the mathematical answer: its absolute value wraps to
    itself (|-128| is -128 in int8) and C's remainder keeps the dividend's sign, so torch's
    gcd(6, -128) is -2 and gcd(-128, 96) is -32 in int8 (NumPy's gcd says 2 and 32)."""
    out = xp.gcd(a, b)
    if a.dtype.kind != "i":
        return out
    low = np.iinfo(a.dtype).min
    a, b = xp.broadcast_to(a, out.shape), xp.broadcast_to(b, out.shape)
    special = (a == low) | (b == low)
    if not bool(special.any()):
        return out
    x, y = xp.abs(a[special]), xp.abs(b[special])        # the minimum stays negative
    while bool((x != 0).any()):                          # y, x = x, y rem x (C's remainder)
        going = x != 0
        rest = xp.fmod(y[going], x[going])
        y[going] = x[going]
        x[going] = rest
    out[special] = y
    return out


gcd = _binary("gcd", _gcd, allow_bool=False, tensors_only=True)
lcm = _binary("lcm", lambda xp, a, b: xp.lcm(a, b), allow_bool=False, tensors_only=True)

for _op, _doc in ((bitwise_and, "x & y, bit by bit (logical and for bool)"),
                  (bitwise_or, "x | y, bit by bit (logical or for bool)"),
                  (bitwise_xor, "x ^ y, bit by bit (logical xor for bool)"),
                  (bitwise_left_shift, "x << y; shifts outside [0, width) give 0"),
                  (bitwise_right_shift, "x >> y, arithmetic; shifts outside [0, width) give "
                                        "the sign fill"),
                  (gcd, "the greatest common divisor, elementwise (non-negative, but for "
                        "the dtype's minimum, as torch: see _gcd)"),
                  (lcm, "the least common multiple, elementwise (non-negative)")):
    _op.__doc__ = f"``torch.{_op.__name__}``: {_doc}."


def bitwise_not(input: Tensor) -> Tensor:  # noqa: A002 - PyTorch's name
    """``torch.bitwise_not``: ~x, bit by bit (logical not for bool)."""
    if input.dtype.kind not in "biu":
        raise NotImplementedError(f'"bitwise_not_cpu" not implemented for '
                                  f"{input.dtype.name!r} (as in torch): bitwise_not works on "
                                  f"integer and bool tensors")
    xp = backend.get_array_module(input._data)
    return _wrap(xp, xp.invert(input._data))


def signbit(input: Tensor) -> Tensor:  # noqa: A002 - PyTorch's name
    """``torch.signbit``: True where the sign bit is set (x < 0, and -0.0), a bool tensor."""
    xp = backend.get_array_module(input._data)
    data = input._data
    if data.dtype.kind == "b":
        return _wrap(xp, xp.zeros(data.shape, dtype=bool))
    if data.dtype.kind in "iu":
        return _wrap(xp, data < 0)
    return _wrap(xp, xp.signbit(data.astype(np.float32) if data.dtype.itemsize == 2 else data))
