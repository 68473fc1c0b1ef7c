"""torch's error for shapes that do not broadcast: a RuntimeError naming the two sizes and
the dimension ("The size of tensor a (3) must match the size of tensor b (4) at
non-singleton dimension 1"), where NumPy raises a ValueError ("operands could not be
broadcast together"). Shapes are taken in order and broadcast one after another, as torch's
TensorIterator does, and each pair is compared from the last dimension, so the sizes and the
dimension named are torch's. No imports: every layer may raise it.
"""
from __future__ import annotations

import re
from typing import Optional, Sequence, Tuple

__all__ = ["mismatch", "broadcast_error", "from_numpy_error", "expand_error"]

_NUMPY_SHAPES = re.compile(r"\(([\d,\s]*)\)")


def mismatch(shapes: Sequence[Sequence[int]]) -> Optional[Tuple[int, int, int]]:
    """(size a, size b, dim) of the first pair that does not broadcast, or None."""
    result: Tuple[int, ...] = ()
    for shape in shapes:
        shape = tuple(int(s) for s in shape)
        ndim = max(len(result), len(shape))
        a = (1,) * (ndim - len(result)) + result
        b = (1,) * (ndim - len(shape)) + shape
        for dim in reversed(range(ndim)):
            if a[dim] != b[dim] and a[dim] != 1 and b[dim] != 1:
                return a[dim], b[dim], dim
        result = tuple(y if x == 1 else x for x, y in zip(a, b))
    return None


def broadcast_error(shapes: Sequence[Sequence[int]], op: str = "") -> Optional[RuntimeError]:
    """torch's RuntimeError for ``shapes`` that do not broadcast (None when they do)."""
    found = mismatch(shapes)
    if found is None:
        return None
    a, b, dim = found
    where = f"{op}: " if op else ""
    listed = " and ".join(str(tuple(s)) for s in shapes)
    return RuntimeError(f"The size of tensor a ({a}) must match the size of tensor b ({b}) at "
                        f"non-singleton dimension {dim} ({where}shapes {listed} do not "
                        f"broadcast: sizes must match or be 1, aligned from the right; "
                        f"reshape or unsqueeze one of them)")


def from_numpy_error(exc: BaseException, shapes: Sequence[Sequence[int]] = (),
                     op: str = "") -> Optional[RuntimeError]:
    """torch's RuntimeError for NumPy's broadcasting ValueError ``exc`` (None when ``exc``
    is another error): the sizes from ``shapes`` when they are the ones that fail, else from
    the shapes NumPy names."""
    text = str(exc)
    if not isinstance(exc, ValueError) or "broadcast" not in text:
        return None
    error = broadcast_error(shapes, op) if shapes else None
    if error is None:
        named = [tuple(int(s) for s in m.split(",") if s.strip())
                 for m in _NUMPY_SHAPES.findall(text.split("->")[0] if "->" in text else text)]
        error = broadcast_error(named, op) if len(named) >= 2 else None
    if error is None:
        error = RuntimeError(f"{op + ': ' if op else ''}shapes do not broadcast ({text})")
    return error


def expand_error(shape: Sequence[int], target: Sequence[int], op: str = "expand"
                 ) -> Optional[RuntimeError]:
    """torch's RuntimeError when ``shape`` cannot be expanded to ``target`` (None when it
    can; -1 in target keeps a size)."""
    shape, target = tuple(shape), tuple(target)
    if len(target) < len(shape):
        return RuntimeError(f"{op}: the number of sizes provided ({len(target)}) must be "
                            f"greater or equal to the number of dimensions in the tensor "
                            f"({len(shape)})")
    full = (1,) * (len(target) - len(shape)) + shape
    for dim in reversed(range(len(target))):
        want, have = target[dim], full[dim]
        if want != -1 and have != 1 and want != have:
            return RuntimeError(
                f"The expanded size of the tensor ({want}) must match the existing size "
                f"({have}) at non-singleton dimension {dim}.  Target sizes: {list(target)}.  "
                f"Tensor sizes: {list(shape)} ({op}: only dims of size 1 can grow)")
    return None
