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

__all__ = ["pow_tensor"]


class PowTensor(Function):
    """out = x ** p, elementwise after broadcasting.
        dx = g * p * x^(p-1)   (0 where p == 0: x^0 = 1 is constant, even at x = 0)
        dp = g * x^p * ln x    (0 where x == 0 and p >= 0, the limit of x^p ln x there,
                                as in PyTorch; NaN for x < 0, where x^p is not smooth in p)
    then each is summed over the axes its input was broadcast along."""

    def forward(self, x, p):
        out = x ** p
        self.save_for_backward(x, p, out)
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


def pow_tensor(x: Tensor, exponent: Tensor) -> Tensor:
    """x ** exponent, elementwise, with PyTorch's dtypes: a float base keeps its dtype with an
    integer exponent, an integer base takes a float exponent's dtype, and integers to integer
    powers stay integers (negative powers refused, as PyTorch does)."""
    if x.dtype.kind in "biu" and exponent.dtype.kind in "biu":
        if bool((exponent._data < 0).any()):
            raise ValueError("pow: integer tensors to negative integer powers are not "
                             "allowed; use x.float() ** p")
        return Tensor._wrap(x._data ** exponent._data)        # no gradient for integers
    if not is_floating(exponent.dtype):
        exponent = Tensor._wrap(exponent._data.astype(x.dtype))
    elif not is_floating(x.dtype):
        x = Tensor._wrap(x._data.astype(exponent.dtype))
    try:
        return PowTensor.apply(x, exponent)
    except ValueError as exc:
        if "broadcast" not in str(exc):
            raise
        raise ValueError(f"pow: shapes {x.shape} and {exponent.shape} do not broadcast (sizes "
                         f"must match or be 1, aligned from the right)") from None
