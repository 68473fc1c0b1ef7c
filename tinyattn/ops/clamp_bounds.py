"""``clamp`` with tensor bounds: ``torch.clamp(x, min=lo, max=hi)`` where lo and hi are tensors
that broadcast with x, each bound with its own gradient (docs/derivations.md#clone-and-clamp).

Number bounds go to elementwise.clamp (one Function, no gradient for a constant); tensor
bounds come here. As torch: both bounds tensors or both numbers (a mix is refused), the output
has the broadcast shape of the three and torch's promoted dtype, a NaN anywhere gives NaN, and
where lo > hi the output is hi (it is min(max(x, lo), hi)).
"""
from __future__ import annotations

from typing import Any

import numpy as np

from .. import backend
from ..autograd import Function, unbroadcast
from ..precision import is_floating
from ..promotion import refuse_float_mix, result_type
from ..tensor import Tensor
from .elementwise import clamp as clamp_numbers
from .elementwise import convert

__all__ = ["clamp"]


class ClampTensor(Function):
    """out = min(max(x, lo), hi), lo and hi tensors (either may be absent: ``which``).

    Each element of out is one of x, lo, hi, so its gradient goes to that one (torch's
    clamp_backward_min_max, ties included):
        dx  = g where lo <= x <= hi
        dlo = g where x < lo and lo < hi      (with no hi: where x < lo)
        dhi = g where x > hi or hi < lo       (with no lo: where x > hi)
    each summed back to its input's shape (unbroadcast).
    """

    def forward(self, x, *bounds, which: str, dtype: Any):
        xp = backend.get_array_module(x)
        self.which = which
        self.save_for_backward(x, *bounds)          # what torch's clamp saves
        x, *bounds = (a.astype(dtype, copy=False) for a in (x, *bounds))  # integer operands
        low = bounds[0] if which in ("both", "min") else None
        high = bounds[-1] if which in ("both", "max") else None
        out = x if low is None else xp.maximum(x, low)
        return out if high is None else xp.minimum(out, high)

    def backward(self, grad):
        x, *bounds = self.saved
        which = self.which
        xp = backend.get_array_module(grad)
        low = bounds[0] if which in ("both", "min") else None
        high = bounds[-1] if which in ("both", "max") else None
        shape = grad.shape
        inside = xp.ones(shape, dtype=bool)
        if low is not None:
            inside = inside & (x >= low)
        if high is not None:
            inside = inside & (x <= high)
        grads = [unbroadcast(xp.where(inside, grad, 0), x.shape)]
        if low is not None:
            below = x < low if high is None else (x < low) & (low < high)
            grads.append(unbroadcast(xp.where(below, grad, 0), low.shape))
        if high is not None:
            above = x > high if low is None else (x > high) | (high < low)
            grads.append(unbroadcast(xp.where(above, grad, 0), high.shape))
        return tuple(g if needed else None for g, needed in zip(grads, self.needs_input_grad))


def clamp(input: Tensor, min: Any = None, max: Any = None) -> Tensor:  # noqa: A002
    """``torch.clamp`` / ``clip``: limit every element to [min, max] (numbers, or tensors that
    broadcast with ``input``; either may be None)."""
    if not isinstance(min, Tensor) and not isinstance(max, Tensor):
        return clamp_numbers(input, min, max)
    for name, bound in (("min", min), ("max", max)):
        if bound is not None and not isinstance(bound, Tensor):
            raise TypeError(f"clamp: {name} is a number but the other bound is a tensor; "
                            f"torch takes both as tensors or both as numbers. Pass "
                            f"tinyattn.tensor({bound!r}) or a number for both")
    given = [b for b in (min, max) if b is not None]
    which = "both" if len(given) == 2 else ("min" if min is not None else "max")
    refuse_float_mix("clamp", input, *given)     # strict mode, as Function.apply's check
    dtype = result_type(input, *given)
    if dtype == np.bool_ and which == "both":     # torch's bool kernels are min and max only
        raise NotImplementedError("\"clamp_cpu\" not implemented for 'Bool' (as torch: clamp of "
                                  "a bool tensor by bool tensor bounds); convert them with "
                                  ".int() or .float() first")
    # floating operands of another dtype are converted (a differentiable cast); integer and
    # bool ones go in as they are (so they are what is saved, as in torch) and are cast inside
    operands = [convert(t, dtype=dtype) if is_floating(t.dtype) else t
                for t in (input, *given)]
    return ClampTensor.apply(*operands, which=which, dtype=dtype)
