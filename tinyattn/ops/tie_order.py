"""The order torch's CPU kernels leave equal values in: C++'s ``std::sort`` (GCC's libstdc++
introsort), which torch's unstable sort, ``mode`` and ``quantile`` use. Which of several equal
values a quantile's gradient reaches, and which index ``mode`` returns, follow from it.

``std::sort`` is not stable, but it is deterministic: an introsort (quicksort with the median
of three moved to the front and an unguarded partition, heapsort past a depth of 2 log2 n,
slices of 16 or fewer left for a final insertion sort). ``sort_order`` replays it on the
positions of one slice, comparing only the values, so it gives torch's order exactly. It is a
Python loop, run only where it can matter: slices longer than 16 (an insertion sort alone is
stable, as NumPy's stable argsort) that hold equal values, up to ``REPLAY_LIMIT`` values in
all (beyond that, the stable order: documented in docs/pytorch.md).
"""
from __future__ import annotations

from typing import Any, Callable, List

import numpy as np

__all__ = ["sort_order", "torch_cpu_order", "REPLAY_LIMIT"]

_THRESHOLD = 16
REPLAY_LIMIT = 1 << 18      # values in all whose order is replayed in Python


def sort_order(values: List[Any], less: Callable[[Any, Any], bool]) -> List[int]:
    """The positions 0..n-1 in the order libstdc++'s ``std::sort`` leaves them, comparing
    ``values[i]`` by ``less``."""
    a = list(range(len(values)))

    def lt(i: int, j: int) -> bool:
        return less(values[i], values[j])

    def adjust_heap(first: int, hole: int, length: int, value: int) -> None:
        top, child = hole, hole
        while child < (length - 1) // 2:
            child = 2 * (child + 1)
            if lt(a[first + child], a[first + child - 1]):
                child -= 1
            a[first + hole] = a[first + child]
            hole = child
        if length % 2 == 0 and child == (length - 2) // 2:
            child = 2 * (child + 1)
            a[first + hole] = a[first + child - 1]
            hole = child - 1
        parent = (hole - 1) // 2
        while hole > top and lt(a[first + parent], value):
            a[first + hole] = a[first + parent]
            hole = parent
            parent = (hole - 1) // 2
        a[first + hole] = value

    def heap_sort(first: int, last: int) -> None:
        length = last - first
        if length >= 2:
            parent = (length - 2) // 2
            while True:
                adjust_heap(first, parent, length, a[first + parent])
                if parent == 0:
                    break
                parent -= 1
        while last - first > 1:
            last -= 1
            value = a[last]
            a[last] = a[first]
            adjust_heap(first, 0, last - first, value)

    def median_to_first(result: int, x: int, y: int, z: int) -> None:
        if lt(a[x], a[y]):
            pick = y if lt(a[y], a[z]) else (z if lt(a[x], a[z]) else x)
        else:
            pick = x if lt(a[x], a[z]) else (z if lt(a[y], a[z]) else y)
        a[result], a[pick] = a[pick], a[result]

    def partition(first: int, last: int, pivot: int) -> int:
        while True:
            while lt(a[first], a[pivot]):
                first += 1
            last -= 1
            while lt(a[pivot], a[last]):
                last -= 1
            if not first < last:
                return first
            a[first], a[last] = a[last], a[first]
            first += 1

    def introsort(first: int, last: int, depth: int) -> None:
        while last - first > _THRESHOLD:
            if depth == 0:
                heap_sort(first, last)
                return
            depth -= 1
            median_to_first(first, first + 1, first + (last - first) // 2, last - 1)
            cut = partition(first + 1, last, first)
            introsort(cut, last, depth)
            last = cut

    def linear_insert(last: int) -> None:
        value = a[last]
        previous = last - 1
        while lt(value, a[previous]):
            a[last] = a[previous]
            last = previous
            previous -= 1
        a[last] = value

    def insertion_sort(first: int, last: int) -> None:
        for i in range(first + 1, last):
            if lt(a[i], a[first]):
                value = a[i]
                a[first + 1:i + 1] = a[first:i]
                a[first] = value
            else:
                linear_insert(i)

    n = len(a)
    if n > 1:
        introsort(0, n, 2 * (n.bit_length() - 1))
        if n > _THRESHOLD:
            insertion_sort(0, _THRESHOLD)
            for i in range(_THRESHOLD, n):
                linear_insert(i)
        else:
            insertion_sort(0, n)
    return a


def _less_nan_last(x: float, y: float) -> bool:
    """torch's ascending sort comparison: NaN after every number."""
    return (x < y) or (y != y and x == x)


def _less(x: Any, y: Any) -> bool:
    return x < y


def torch_cpu_order(rows: Any, nan_last: bool = True) -> Any:
    """The sort order of each row of ``rows`` (R, N) as torch's CPU ``std::sort`` leaves it
    (NaN last with ``nan_last``, torch's sort; plain < otherwise, torch's mode): a stable
    argsort where that is the same (no equal values, or N <= 16), the replay elsewhere."""
    if rows.dtype.kind not in "biuf" or rows.dtype.itemsize < 4 and rows.dtype.kind == "f":
        rows = rows.astype(np.float32)          # float16, bfloat16: exact in float32
    order = np.argsort(rows, axis=-1, kind="stable")
    n = rows.shape[-1]
    if n <= 1 or rows.size > REPLAY_LIMIT:
        return order
    ordered = np.take_along_axis(rows, order, axis=-1)
    floating = rows.dtype.kind not in "biu"
    nan = np.isnan(rows).any(axis=1) if floating else np.zeros(rows.shape[0], bool)
    if nan_last:                         # NaNs last by the comparison too: only ties matter
        same = ordered[:, 1:] == ordered[:, :-1]
        if floating:
            same |= np.isnan(ordered[:, 1:]) & np.isnan(ordered[:, :-1])
        replay = same.any(axis=1) & (n > _THRESHOLD)
    else:                                # a NaN is "equal" to everything under plain <
        replay = ((ordered[:, 1:] == ordered[:, :-1]).any(axis=1) & (n > _THRESHOLD)) | nan
    less = _less_nan_last if nan_last else _less
    for r in np.flatnonzero(replay):
        order[r] = sort_order(rows[r].tolist(), less)
    return order
