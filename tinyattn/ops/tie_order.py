"""The order torch's CPU kernels leave equal values in, replayed on positions.

torch's CPU ``sort`` (stable=False), ``mode`` and ``quantile`` use C++'s ``std::sort``;
``topk`` uses ``std::partial_sort`` (k * 64 <= n) or ``std::nth_element`` then ``std::sort``
of the first k - 1; ``kthvalue`` uses torch's own quickselect. None is stable, all are
deterministic, so which of several equal values lands where follows from the algorithm:

- libstdc++'s ``std::sort``: introsort (median of three moved to the front, an unguarded
  partition, heapsort past a depth of 2 log2 n, slices of 16 or fewer left to a final
  insertion sort);
- ``std::nth_element``: introselect (the same partition step, kept only on the side holding
  the n-th place, while more than 3 values remain; heap select past the depth limit; an
  insertion sort of the last few);
- ``std::partial_sort``: heap select (a max-heap of the first k, each later value smaller
  than its top replaces it) then a heap sort of the k;
- torch's quickselect (kthvalue): median of three of (left, middle, right) with the middle
  moved next to the left, a Hoare partition around the left value, the pivot swapped into
  place, kept on the side holding k.

``_Replay`` runs these on the positions 0..n-1 of one slice, comparing only the values, so it
gives torch's order exactly (tested against torch for many sizes with ties). It is a Python
loop, run only where it can matter: slices that hold equal values (or NaN), up to
``REPLAY_LIMIT`` values in all (beyond that, the stable order: documented in docs/pytorch.md).
"""
from __future__ import annotations

from typing import Any, Callable, List

import numpy as np

__all__ = ["sort_order", "torch_cpu_order", "torch_cpu_topk", "torch_cpu_kth",
           "REPLAY_LIMIT"]

_THRESHOLD = 16
REPLAY_LIMIT = 1 << 18      # values in all whose order is replayed in Python


class _Replay:
    """Positions ``a`` of ``values`` rearranged as the C++ algorithms do, by ``less``."""

    def __init__(self, values: List[Any], less: Callable[[Any, Any], bool]) -> None:
        self.values = values
        self.less = less
        self.a = list(range(len(values)))

    def lt(self, i: int, j: int) -> bool:
        """less on the values at positions (not places) i and j"""
        return self.less(self.values[i], self.values[j])

    # ---------------------------------------------------------------- heaps (max by less)
    def adjust_heap(self, first: int, hole: int, length: int, value: int) -> None:
        a, lt = self.a, self.lt
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

    def make_heap(self, first: int, last: int) -> None:
        length = last - first
        if length < 2:
            return
        parent = (length - 2) // 2
        while True:
            self.adjust_heap(first, parent, length, self.a[first + parent])
            if parent == 0:
                return
            parent -= 1

    def pop_heap(self, first: int, last: int, result: int) -> None:
        """the heap's top to place ``result``, the value there into the heap [first, last)"""
        a = self.a
        value = a[result]
        a[result] = a[first]
        self.adjust_heap(first, 0, last - first, value)

    def heap_select(self, first: int, middle: int, last: int) -> None:
        self.make_heap(first, middle)
        a, lt = self.a, self.lt
        for i in range(middle, last):
            if lt(a[i], a[first]):
                self.pop_heap(first, middle, i)

    def sort_heap(self, first: int, last: int) -> None:
        while last - first > 1:
            last -= 1
            self.pop_heap(first, last, last)

    # ---------------------------------------------------------------- partition
    def median_to_first(self, result: int, x: int, y: int, z: int) -> None:
        a, lt = self.a, self.lt
        if lt(a[x], a[y]):
            pick = y if lt(a[y], a[z]) else (z if lt(a[x], a[z]) else x)
        else:
            pick = x if lt(a[x], a[z]) else (z if lt(a[y], a[z]) else y)
        a[result], a[pick] = a[pick], a[result]

    def partition(self, first: int, last: int, pivot: int) -> int:
        a, lt = self.a, self.lt
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

    def partition_pivot(self, first: int, last: int) -> int:
        self.median_to_first(first, first + 1, first + (last - first) // 2, last - 1)
        return self.partition(first + 1, last, first)

    # ---------------------------------------------------------------- insertion sorts
    def linear_insert(self, last: int) -> None:
        a, lt = self.a, self.lt
        value = a[last]
        previous = last - 1
        while lt(value, a[previous]):
            a[last] = a[previous]
            last = previous
            previous -= 1
        a[last] = value

    def insertion_sort(self, first: int, last: int) -> None:
        a, lt = self.a, self.lt
        for i in range(first + 1, last):
            if lt(a[i], a[first]):
                value = a[i]
                a[first + 1:i + 1] = a[first:i]
                a[first] = value
            else:
                self.linear_insert(i)

    # ---------------------------------------------------------------- the algorithms
    def sort(self, first: int, last: int) -> None:
        """``std::sort(first, last)``"""
        n = last - first
        if n < 2:
            return
        self.introsort(first, last, 2 * (n.bit_length() - 1))
        if n > _THRESHOLD:
            self.insertion_sort(first, first + _THRESHOLD)
            for i in range(first + _THRESHOLD, last):
                self.linear_insert(i)
        else:
            self.insertion_sort(first, last)

    def introsort(self, first: int, last: int, depth: int) -> None:
        while last - first > _THRESHOLD:
            if depth == 0:
                self.make_heap(first, last)
                self.sort_heap(first, last)
                return
            depth -= 1
            cut = self.partition_pivot(first, last)
            self.introsort(cut, last, depth)
            last = cut

    def nth_element(self, first: int, nth: int, last: int) -> None:
        """``std::nth_element(first, nth, last)``"""
        if first == last or nth == last:
            return
        depth = 2 * ((last - first).bit_length() - 1)
        while last - first > 3:
            if depth == 0:
                self.heap_select(first, nth + 1, last)
                self.a[first], self.a[nth] = self.a[nth], self.a[first]
                return
            depth -= 1
            cut = self.partition_pivot(first, last)
            if cut <= nth:
                first = cut
            else:
                last = cut
        self.insertion_sort(first, last)

    def partial_sort(self, first: int, middle: int, last: int) -> None:
        """``std::partial_sort(first, middle, last)``"""
        self.heap_select(first, middle, last)
        self.sort_heap(first, middle)

    def quick_select(self, k: int) -> None:
        """torch's CPU quickselect (kthvalue): place k holds the k-th by ``less``; its
        comparison is "greater" = less with the arguments swapped."""
        a, lt = self.a, self.lt
        left, right = 0, len(a) - 1
        while right > left:
            if right == left + 1:
                if lt(a[right], a[left]):
                    a[left], a[right] = a[right], a[left]
                return
            middle = left + (right - left) // 2
            a[middle], a[left + 1] = a[left + 1], a[middle]
            if lt(a[right], a[left + 1]):
                a[left + 1], a[right] = a[right], a[left + 1]
            if lt(a[right], a[left]):
                a[left], a[right] = a[right], a[left]
            if lt(a[left], a[left + 1]):
                a[left + 1], a[left] = a[left], a[left + 1]
            pivot = a[left]
            i, j = left + 1, right
            while True:
                i += 1
                while lt(a[i], pivot):
                    i += 1
                j -= 1
                while lt(pivot, a[j]):
                    j -= 1
                if j < i:
                    break
                a[i], a[j] = a[j], a[i]
            a[left], a[j] = a[j], a[left]
            if j <= k:
                left = i
            if j >= k:
                right = j - 1


def sort_order(values: List[Any], less: Callable[[Any, Any], bool]) -> List[int]:
    """The positions 0..n-1 in the order libstdc++'s ``std::sort`` leaves them, comparing
    ``values[i]`` by ``less``."""
    replay = _Replay(values, less)
    replay.sort(0, len(values))
    return replay.a


def _less_nan_last(x: float, y: float) -> bool:
    """torch's ascending sort comparison: NaN after every number."""
    return (x < y) or (y != y and x == x)


def _greater_nan_first(x: float, y: float) -> bool:
    """torch's descending sort comparison: NaN before every number."""
    return (x > y) or (x != x and y == y)


def _less(x: Any, y: Any) -> bool:
    return x < y


def _as_comparable(rows: Any) -> Any:
    if rows.dtype.kind not in "biuf" or rows.dtype.itemsize < 4 and rows.dtype.kind == "f":
        return rows.astype(np.float32)          # float16, bfloat16: exact in float32
    return rows


def _stable_order(rows: Any, descending: bool) -> Any:
    """stable argsort of each row, NaN largest (first when descending)"""
    if not descending:
        return np.argsort(rows, axis=-1, kind="stable")
    n = rows.shape[-1]
    return (n - 1) - np.argsort(rows[:, ::-1], axis=-1, kind="stable")[:, ::-1]


def _rows_to_replay(rows: Any, order: Any, nan_equal: bool, at_least: int) -> Any:
    """the rows where a replay can differ from the stable order: rows longer than
    ``at_least`` holding equal values (or any NaN, when NaN compares "equal" to all)"""
    n = rows.shape[-1]
    if n <= at_least or rows.size > REPLAY_LIMIT:
        return np.zeros(rows.shape[0], dtype=bool)
    ordered = np.take_along_axis(rows, order, axis=-1)
    same = ordered[:, 1:] == ordered[:, :-1]
    floating = rows.dtype.kind == "f"
    if floating:
        same |= np.isnan(ordered[:, 1:]) & np.isnan(ordered[:, :-1])
    replay = same.any(axis=1)
    if nan_equal and floating:
        replay |= np.isnan(rows).any(axis=1)
    return replay


def torch_cpu_order(rows: Any, nan_last: bool = True, descending: bool = False) -> Any:
    """The sort order of each row of ``rows`` (R, N) as torch's CPU ``std::sort`` leaves it
    (NaN last with ``nan_last``, torch's sort, NaN first when ``descending``; plain <
    otherwise, torch's mode): a stable argsort where that is the same (no equal values, or
    N <= 16), the replay elsewhere."""
    rows = _as_comparable(rows)
    order = _stable_order(rows, descending)
    if rows.shape[-1] <= 1:
        return order
    replay = _rows_to_replay(rows, order, not nan_last, _THRESHOLD)
    if not nan_last and rows.dtype.kind == "f":     # plain < with a NaN: no stable argsort
        replay |= np.isnan(rows).any(axis=1)        # gives std::sort's order, at any length
    less = _less if not nan_last else (_greater_nan_first if descending else _less_nan_last)
    for r in np.flatnonzero(replay):
        order[r] = sort_order(rows[r].tolist(), less)
    return order


def torch_cpu_topk(rows: Any, k: int, largest: bool, sorted: bool) -> Any:  # noqa: A002
    """The positions torch's CPU ``topk`` returns for each row of ``rows`` (R, N), (R, k):
    the stable order's first k where no tie can matter, the replay elsewhere."""
    rows = _as_comparable(rows)
    n = rows.shape[-1]
    order = _stable_order(rows, largest)
    if k == 0:
        return order[:, :0]
    replay = _rows_to_replay(rows, order, False, 1)
    less = _greater_nan_first if largest else _less_nan_last
    for r in np.flatnonzero(replay):
        run = _Replay(rows[r].tolist(), less)
        if k * 64 <= n:
            run.partial_sort(0, k, n)
        else:
            run.nth_element(0, k - 1, n)
            if sorted:
                run.sort(0, k - 1)
        order[r, :k] = run.a[:k]
    return order[:, :k]


def torch_cpu_kth(rows: Any, k: int) -> Any:
    """The position of the k-th smallest (0-based, NaN largest) of each row of ``rows``
    (R, N) as torch's CPU ``kthvalue`` picks it (its quickselect), (R,)."""
    rows = _as_comparable(rows)
    order = _stable_order(rows, False)
    pick = order[:, k].copy()
    replay = _rows_to_replay(rows, order, False, 1)
    for r in np.flatnonzero(replay):
        run = _Replay(rows[r].tolist(), _less_nan_last)
        run.quick_select(k)
        pick[r] = run.a[k]
    return pick
