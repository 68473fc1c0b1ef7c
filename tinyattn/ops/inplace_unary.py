"""The in-place forms of the pointwise ops tutorials call: ``x.exp_()``, ``x.sigmoid_()``,
``x.lerp_(end, weight)``, ``torch.relu_(x)``, ...

Each is the out-of-place op written back into ``x`` through ``inplace._in_place``, so it counts
a version, refuses a leaf that requires grad, and records the op's own backward (the
derivation is the op's: docs/derivations.md), exactly as ``add_`` and ``mul_`` do.
"""
from __future__ import annotations

from typing import Any, Callable, Dict

from ..tensor import Tensor
from .elementwise import exp, log, relu, sqrt, tanh
from .inplace import _in_place
from .pointwise import abs, rsqrt, sigmoid  # noqa: A004 - PyTorch's name
from .products import lerp
from .rounding import ceil, expm1, floor, log1p, reciprocal, sign, square, trunc
from .trig import cos, sin

__all__ = ["UNARY_IN_PLACE", "lerp_"]


def _unary(name: str, op: Callable[[Tensor], Tensor]) -> Callable[[Tensor], Tensor]:
    def in_place(x: Tensor) -> Tensor:
        return _in_place(x, name, op)
    in_place.__name__ = in_place.__qualname__ = name
    in_place.__doc__ = f"``x.{name}()``: ``x.{name[:-1]}()`` written into x (a version)."
    return in_place


UNARY_IN_PLACE: Dict[str, Callable[[Tensor], Tensor]] = {
    f"{op.__name__}_": _unary(f"{op.__name__}_", op) for op in (
        exp, log, relu, sqrt, tanh, abs, rsqrt, sigmoid, ceil, expm1, floor, log1p,
        reciprocal, sign, square, trunc, cos, sin)}


def lerp_(x: Tensor, end: Tensor, weight: Any) -> Tensor:
    """``x.lerp_(end, weight)``: x + weight * (end - x), written into x."""
    return _in_place(x, "lerp_", lambda t: lerp(t, end, weight), (end, weight))
