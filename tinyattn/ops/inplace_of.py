"""``in_place_of(fn, "erf_")``: the in-place method of an out-of-place op (``x.erf_()``,
``x.bitwise_and_(y)``), by the machinery of ops/inplace.py: the result is computed out of
place, written into x's memory, x's version goes up, and x takes the op as its history.

As PyTorch: the result must fit x's dtype (``int_tensor.erf_()`` is refused: erf gives
float32), and a leaf that requires grad is refused while gradients are recorded."""
from __future__ import annotations

import inspect
from typing import Any, Callable

from ..tensor import Tensor
from .inplace import _in_place

__all__ = ["in_place_of"]


def in_place_of(fn: Callable[..., Tensor], name: str) -> Callable[..., Tensor]:
    """The method ``x.<name>(*args, **kwargs)``: ``fn(x, *args, **kwargs)`` written into x."""
    def method(self: Tensor, *args: Any, **kwargs: Any) -> Tensor:
        others = [a for a in list(args) + list(kwargs.values()) if isinstance(a, Tensor)]
        return _in_place(self, name, lambda t: fn(t, *args, **kwargs), others)
    method.__name__ = method.__qualname__ = name
    method.__doc__ = f"In-place ``{name[:-1]}``: the result is written into this tensor."
    try:                                     # torch's parameter names, read from fn's own
        method.__signature__ = inspect.signature(fn)  # type: ignore[attr-defined]
    except (TypeError, ValueError):
        pass
    return method
