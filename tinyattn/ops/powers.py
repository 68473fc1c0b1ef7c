"""``x ** p`` with a tensor exponent: elementwise powers, broadcast as in PyTorch, with a
gradient for the exponent too. ``x.unsqueeze(-1).pow(torch.tensor([1, 2, 3]))`` makes the
features (x, x^2, x^3) of PyTorch's polynomial tutorials. Derived in
docs/derivations.md#powers-with-a-tensor-exponent.
"""
from __future__ import annotations

import numpy as np

from .. import backend
from ..autograd import Function, unbroadcast
from ..tensor import Tensor
from ..precision import is_floating

__all__ = ["pow_tensor", "RPow", "scalar_power", "integer_power"]


class PowTensor(Function):
    """out = x ** p, elementwise after broadcasting.
        dx = g * p * x^(p-1)   (0 where p == 0: x^0 = 1 is constant, even at x = 0)
        dp = g * x^p * ln x    (0 where x == 0 and p >= 0, the limit of x^p ln x there,
                                as in PyTorch; NaN for x < 0, where x^p is not smooth in p)
    then each is summed over the axes its input was broadcast along."""

    def forward(self, x, p):
        out = backend.get_array_module(x).asarray(x ** p)  # 0-d: an array, so that the
        self.save_for_backward(x, p, out)                # output is the one kept (torch's)
        return out

    def backward(self, grad):
        x, p, out = self.saved
        xp = backend.get_array_module(x)
        dx = dp = None
        with np.errstate(divide="ignore", invalid="ignore"):   # x = 0: masked right after
            if self.needs_input_grad[0]:
                dx = unbroadcast(xp.where(p == 0, 0, grad * (p * x ** (p - 1))), x.shape)
            if self.needs_input_grad[1]:
                at_zero = (x == 0) & (p >= 0)
                dp = unbroadcast(xp.where(at_zero, 0, grad * out * xp.log(x)), p.shape)
        return dx, dp


class RPow(Function):
    """out = base ** x for a number ``base``, computed as a real power (NumPy's ``power``:
    exp(x ln base) in float32 loses up to x * ulp(ln base), 8e-3 in RoPE tables at long
    positions; a real power rounds once).
        dx = g * base^x * ln(base) = g * out * ln(base)
    0 where base == 0 and x >= 0 (the limit, as torch); a negative base has no real
    logarithm, so its gradient is NaN (torch's too), while its values at integer x are real."""

    def forward(self, x, base: float):
        xp = backend.get_array_module(x)
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            out = xp.asarray(xp.power(xp.asarray(base, dtype=x.dtype), x))   # 0-d: an array
        self.save_for_backward(x, out, base)
        return out

    def backward(self, grad):
        x, out, base = self.saved
        xp = backend.get_array_module(grad)
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            log_base = np.log(base) if base > 0 else (-np.inf if base == 0 else np.nan)
            dx = grad * (out * xp.asarray(log_base, dtype=out.dtype))
            if base == 0:
                dx = xp.where(x >= 0, 0, dx)
        return dx


def scalar_power(x, p: float):
    """x ** p for a number p, as torch's kernel: 2, 3, -1, -2, 0.5 and -0.5 by products and
    square roots (NumPy's general float power is 100x slower: GPT-2's tanh GELU cubes), other
    whole p with |p| <= 16 on float32 in float64 by repeated squaring, rounded once (as
    accurate as a real power, 10x faster); anything else NumPy's power."""
    xp = backend.get_array_module(x)
    if p == 2:
        return x * x
    if p == 3:
        return x * x * x
    if p == 1:
        return x.copy()
    if p == 0:
        return xp.ones_like(x)             # 0 ** 0 = nan ** 0 = 1, as torch
    with np.errstate(divide="ignore", invalid="ignore"):
        if p == 0.5:
            return xp.sqrt(x)
        if p == -0.5:
            return 1 / xp.sqrt(x)
        if p == -1:
            return 1 / x
        if p == -2:
            return 1 / (x * x)
        if float(p).is_integer() and abs(p) <= 16 and x.dtype == np.float32:
            wide = _whole_power(x.astype(np.float64), int(abs(p)))
            return (wide if p > 0 else 1 / wide).astype(np.float32)
        return x ** p


def _whole_power(x, n: int):
    """x ** n for a whole n >= 1 by repeated squaring (log2(n) products)."""
    result = None
    while n:
        if n & 1:
            result = x if result is None else result * x
        n >>= 1
        if n:
            x = x * x
    return result


def integer_power(base, exponent):
    """base ** exponent for integer arrays of one dtype, as torch: products that wrap around
    in the dtype (uint8 3 ** 5 is 243, int8 is -13), and for a negative exponent 1 at base 1,
    +-1 at base -1 and 0 elsewhere (NumPy refuses negative integer powers)."""
    xp = backend.get_array_module(base)
    base, exponent = xp.broadcast_arrays(base, exponent)
    if exponent.dtype.kind == "u" or not bool((exponent < 0).any()):
        return base ** exponent
    negative = exponent < 0
    safe = base ** xp.where(negative, 0, exponent).astype(exponent.dtype)
    odd = (exponent % 2) != 0
    tiny = xp.where(base == 1, 1, xp.where(base == -1, xp.where(odd, -1, 1), 0))
    return xp.where(negative, tiny.astype(base.dtype), safe)


def pow_tensor(x: Tensor, exponent: Tensor) -> Tensor:
    """x ** exponent, elementwise, both already of the result dtype (``pow`` in
    ops/elementwise.py decides it by torch's result_type): integers by ``integer_power`` (no
    gradient), floats by PowTensor."""
    if x.dtype.kind in "biu":
        return Tensor._wrap(integer_power(x._data, exponent._data))
    try:
        return PowTensor.apply(x, exponent)
    except ValueError as exc:
        if "broadcast" not in str(exc):
            raise
        raise RuntimeError(f"pow: shapes {x.shape} and {exponent.shape} do not broadcast (sizes "
                           f"must match or be 1, aligned from the right)") from None
