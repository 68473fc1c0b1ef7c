"""Seeded random graphs and inputs for the engine track: what fixed scenarios miss.

A graph is a list of specs, ("leaf",), ("add", i, j), ("mul", i, i), ("tanh", i), built in
order by probes.build; the last node is the root. The generator mixes in what hand-picked
graphs tend to leave out: a value used twice by one op, shared subexpressions (a node read
by several later ones), two leaves added, leaves the root never reaches. Graphs come
smallest first, so the first scenario a wrong engine fails is the smallest input showing it.
"""
from __future__ import annotations

from itertools import combinations
from typing import List, Tuple

import numpy as np

__all__ = ["random_graph", "random_graphs", "describe", "ladder", "chain",
           "random_unbroadcast_shapes", "random_no_grad_program", "partial_unbroadcasts"]

_FORMS = {"add": "{} + {}", "mul": "{} * {}", "tanh": "tanh({})", "exp": "exp({})",
          "sum_all": "sum({})"}


def describe(nodes: List[tuple], limit: int = 8) -> str:
    """'n2 = a * b; n3 = tanh(n2); n4 = n3 + a' (leaves a, b, c, ...), cut after ``limit``."""
    names, parts, k = [], [], 0
    for i, spec in enumerate(nodes):
        if spec[0] == "leaf":
            names.append(chr(ord("a") + k))
            k += 1
            continue
        names.append(f"n{i}")
        parts.append(f"n{i} = " + _FORMS[spec[0]].format(*[names[j] for j in spec[1:]]))
    if not parts:
        return "a leaf alone is the root"
    more = f"; ... ({len(parts) - limit} more ops)" if len(parts) > limit else ""
    return "; ".join(parts[:limit]) + more


def random_graph(rng: np.random.Generator, ops: int, leaves: int) -> List[tuple]:
    """``ops`` ops over ``leaves`` leaves; the last op reads the one before (one root)."""
    nodes: List[tuple] = [("leaf",)] * leaves
    for _ in range(ops):
        n = len(nodes)
        i = int(rng.integers(max(0, n - 3), n))          # mostly recent: depth
        j = int(rng.integers(0, n))                      # anywhere: shared subexpressions
        roll = rng.random()
        if roll < 0.2:
            nodes.append((("add", "mul")[int(rng.integers(2))], i, i))   # one value twice
        elif roll < 0.45:
            nodes.append(("tanh", i))
        else:
            nodes.append((("add", "mul")[int(rng.integers(2))], i, j))
    if ops and len(nodes) > leaves + 1 and nodes[-1][0] == "tanh":
        nodes.append(("mul", len(nodes) - 1, len(nodes) - 2))
    return nodes


def random_graphs(rng: np.random.Generator, count: int, max_ops: int) -> List[List[tuple]]:
    sizes = sorted(int(rng.integers(1, max_ops + 1)) for _ in range(count))
    graphs = [[("leaf",), ("leaf",), ("add", 0, 1)]]               # two leaves added
    graphs += [random_graph(rng, size, int(rng.integers(1, 4))) for size in sizes]
    return graphs


def chain(length: int) -> List[tuple]:
    return [("leaf",)] + [("tanh", i) for i in range(length)]


def ladder(levels: int) -> List[tuple]:
    """x -> tanh(x + x) -> tanh(y + y) -> ...: 2^levels paths from the root to x."""
    nodes: List[tuple] = [("leaf",)]
    for _ in range(levels):
        nodes += [("add", len(nodes) - 1, len(nodes) - 1), ("tanh", len(nodes))]
    return nodes


def random_unbroadcast_shapes(rng: np.random.Generator, count: int
                              ) -> List[Tuple[tuple, tuple]]:
    """(grad shape, input shape) pairs with leading axes and several size-1 axes."""
    pairs = [((3, 4), (1, 1)), ((2, 3, 4), (2, 1, 1)), ((2, 3, 4, 5), (1, 3, 1, 5))]
    for _ in range(count):
        ndim = int(rng.integers(1, 4))
        shape = tuple(int(rng.integers(2, 4)) for _ in range(ndim))
        ones = rng.random(ndim) < 0.6
        small = tuple(1 if one else n for one, n in zip(ones, shape))
        lead = tuple(int(rng.integers(2, 4)) for _ in range(int(rng.integers(0, 3))))
        pairs.append((lead + shape, small[int(rng.integers(0, 2)) if ndim > 1 else 0:]
                      if rng.random() < 0.3 else small))
    return pairs


def partial_unbroadcasts(grad: np.ndarray, shape: tuple) -> List[Tuple[np.ndarray, str]]:
    """grad summed over only SOME of the axes unbroadcast must sum, each with its story."""
    extra = grad.ndim - len(shape)
    lead = tuple(range(extra))
    summed = grad.sum(axis=lead) if lead else grad
    size1 = [i for i, n in enumerate(shape) if n == 1 and summed.shape[i] != 1]
    out = []
    for r in range(len(size1)):
        for axes in combinations(size1, r):
            got = summed.sum(axis=axes, keepdims=True) if axes else summed
            out.append((got, f"you summed the input's size-1 axes {list(axes)} but not "
                             f"{[a for a in size1 if a not in axes]}"))
    return out


def random_no_grad_program(rng: np.random.Generator, depth: int = 0) -> list:
    """Nested no_grad blocks: ("block", children, raise) / ("check",); raise is None,
    "error" (a ValueError) or "interrupt" (a KeyboardInterrupt) at the block's end."""
    items: list = [("check",)]
    for _ in range(int(rng.integers(1, 3))):
        if depth < 3 and rng.random() < 0.7:
            ending = (None, None, "error", "interrupt")[int(rng.integers(4))]
            items.append(("block", random_no_grad_program(rng, depth + 1), ending))
        items.append(("check",))
    return items
