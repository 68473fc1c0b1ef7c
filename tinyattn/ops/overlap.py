"""PyTorch's partial-overlap check for in-place writes.

``x[1:4] = x[0:3]``, ``x[1:4].copy_(x[0:3])``, ``x[1:4].add_(x[0:3])``, ``x[idx] = x[0:3]``:
torch refuses a write whose source shares part (not all) of the written-to memory, with
RuntimeError "unsupported operation: some elements of the input tensor and the written-to
tensor refer to a single memory location. Please clone() the tensor before performing the
operation." Writing it silently would give a result that depends on the order elements are
written in (a shifted copy), so tinyattn raises the same error.

Torch's rule (observable behaviour, written here from its outputs):
- the very same memory (same start, same end, same strides) is allowed (``x.add_(x)``);
- either side empty: no overlap;
- either side not "non-overlapping and dense" (a strided slice ``x[::2]``, a column block of a
  matrix, an expanded tensor): torch does not decide ("too hard") and allows the write;
- otherwise the two byte ranges intersecting is a partial overlap: an error.
"""
from __future__ import annotations

from typing import Any, Optional, Tuple

import numpy as np

OVERLAP_MESSAGE = ("unsupported operation: some elements of the input tensor and the "
                   "written-to tensor refer to a single memory location. Please clone() the "
                   "tensor before performing the operation.")


def _address(array: Any) -> Optional[int]:
    """The address of the first element, or None where the array does not tell it."""
    for name in ("__array_interface__", "__cuda_array_interface__"):     # NumPy, CuPy
        interface = getattr(array, name, None)
        if interface is not None:
            return int(interface["data"][0])
    inner = getattr(array, "_array", None)      # the strict device stand-in wraps a NumPy array
    return None if inner is None or inner is array else _address(inner)


def _dense_extent(array: Any) -> Optional[Tuple[int, int]]:
    """[begin, end) in bytes if ``array`` is non-overlapping and dense (its elements fill a
    block with no gaps and no repeats, in any dimension order), else None."""
    dims = sorted((abs(step), n) for step, n in zip(array.strides, array.shape) if n != 1)
    if any(step < 0 for step in array.strides if step):
        return None
    expected = array.itemsize
    for step, n in dims:
        if step != expected:
            return None
        expected *= n
    begin = _address(array)
    if begin is None:
        return None
    return begin, begin + array.size * array.itemsize


def check_no_partial_overlap(target: Any, source: Any, name: str) -> None:
    """Raise torch's RuntimeError if array ``source`` partially overlaps array ``target``."""
    if target is source or not hasattr(source, "strides") or not hasattr(target, "strides"):
        return
    if target.size == 0 or source.size == 0:
        return
    a, b = _dense_extent(target), _dense_extent(source)
    if a is None or b is None:
        return
    if a == b:
        if tuple(target.strides) == tuple(source.strides):
            return
        raise RuntimeError(f"{name}: {OVERLAP_MESSAGE}")
    if a[0] < b[1] and b[0] < a[1]:
        raise RuntimeError(f"{name}: {OVERLAP_MESSAGE}")


def written_region(array: Any, index: Any) -> Any:
    """The view of ``array`` that ``array[index] = v`` writes inside, as torch sees it: the
    basic parts of the index (ints, slices, None, Ellipsis) applied, each index array's
    dimensions kept whole (torch slices first, then index_put_ on that view)."""
    parts = index if isinstance(index, tuple) else (index,)
    basic = []
    for part in parts:
        if isinstance(part, (bool, np.bool_)):
            basic.append(None)
        elif hasattr(part, "ndim") and not (part.ndim == 0 and part.dtype.kind in "iu"):
            width = part.ndim if part.dtype == np.bool_ else 1
            basic.extend([slice(None)] * max(width, 1 if part.ndim else 0))
            if part.ndim == 0:          # a 0-d bool mask adds a dimension, like None
                basic.append(None)
        else:
            basic.append(part)
    try:
        return array[tuple(basic)]
    except (IndexError, TypeError, ValueError):
        return array                    # the indexing itself will report the problem
