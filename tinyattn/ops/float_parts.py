"""``torch.frexp``: a floating number split into its mantissa and its power of two
(docs/derivations.md#frexp).
"""
from __future__ import annotations

from collections import namedtuple
from typing import Any

import numpy as np

from .. import backend
from ..autograd import Function, keep_versions
from ..precision import is_floating
from ..tensor import Tensor

__all__ = ["frexp", "MantissaExponent"]

MantissaExponent = namedtuple("MantissaExponent", ["mantissa", "exponent"])


def _split(x: Any) -> Any:
    """(mantissa, exponent) of each element: x = mantissa * 2^exponent, 0.5 <= |mantissa| < 1
    (0, inf and NaN: themselves and exponent 0). float16 and bfloat16 go through float32,
    which holds their every value (subnormals included) with the same mantissa and exponent."""
    xp = backend.get_array_module(x)
    wide = x if np.dtype(x.dtype).itemsize >= 4 else x.astype(np.float32)
    mantissa, exponent = xp.frexp(wide)
    return mantissa.astype(x.dtype), exponent.astype(np.int32)


class Frexp(Function):
    """mantissa = x / 2^e, with e the exponent, which is constant where x is (a step function
    of x, with no gradient). So d mantissa / dx = 1 / 2^e:  dx = g / 2^e. As torch, 2^e is
    computed in float32 (exp2 of an int32 tensor), so the gradient of a number whose 2^e is
    out of float32's range is inf (tiny x) or 0 (huge x), in float64 too."""

    def forward(self, x, exponent):
        mantissa, _ = _split(x)
        self.save_for_backward(exponent)
        return mantissa

    def backward(self, grad):
        (exponent,) = self.saved
        xp = backend.get_array_module(grad)
        with np.errstate(over="ignore", divide="ignore"):
            power = xp.exp2(exponent.astype(np.float32))
            wide = grad.astype(np.float64) if grad.dtype == np.float64 else \
                grad.astype(np.float32)
            return (wide / power).astype(grad.dtype)


def frexp(input: Tensor) -> MantissaExponent:  # noqa: A002 - torch's name
    """``torch.frexp``: (mantissa, exponent) with input = mantissa * 2^exponent,
    0.5 <= |mantissa| < 1; the mantissa has the input's dtype, the exponent is int32 (no
    gradient). Floating inputs only, as torch."""
    if not isinstance(input, Tensor):
        raise TypeError(f"frexp(): argument 'input' must be Tensor, not {type(input).__name__}")
    if not is_floating(input.dtype):
        raise RuntimeError("torch.frexp() only supports floating-point dtypes (convert with "
                           ".float() first)")
    _, exponent = _split(input._data)
    mantissa = Frexp.apply(input, exponent=exponent)
    exponent_tensor = Tensor._wrap(exponent)
    return MantissaExponent(keep_versions(mantissa, exponent_tensor), exponent_tensor)
