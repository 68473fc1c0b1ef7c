"""What a row of the op table is: ``OpSpec`` (an op, its function, a NumPy reference, its
input cases and the docs section of its derivation) and ``OpCase`` (one set of inputs), and
``make_inputs``, which turns a case into tensors (tinyattn/optable/__init__.py).

A rows module may write a row as a 5-tuple ``(name, fn, reference, make, section)`` whose
``make(rng)`` returns ``(label, arrays)`` pairs (``Case``); ``from_pairs`` turns such rows into
``OpSpec``s.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, List, Sequence, Tuple

import numpy as np

from ..precision import is_floating
from ..tensor import Tensor, as_tensor, tensor

__all__ = ["OpCase", "OpSpec", "make_inputs", "Case", "Row", "from_pairs"]


@dataclass(frozen=True)
class OpCase:
    label: str                      # the shapes, as the table prints them
    arrays: Tuple[np.ndarray, ...]  # float64 arrays require grad; ints and bools do not


@dataclass(frozen=True)
class OpSpec:
    name: str
    fn: Callable[..., Tensor]
    reference: Callable[..., np.ndarray]
    cases: Callable[[np.random.Generator], List[OpCase]]
    section: str                    # "anchor" in docs/derivations.md, or "file.md#anchor"


def make_inputs(case: OpCase, dtype: Any = np.float64, device: str = "cpu") -> List[Tensor]:
    """Tensors for a case: floating arrays (cast to ``dtype``) require grad, others do not."""
    tensors = []
    for a in case.arrays:
        if is_floating(a.dtype):
            tensors.append(tensor(a.astype(dtype), requires_grad=True, device=device))
        else:
            tensors.append(as_tensor(a, device=device))
    return tensors


Case = Tuple[str, Tuple[np.ndarray, ...]]
Row = Tuple[str, Callable[..., Tensor], Callable[..., np.ndarray],
            Callable[[np.random.Generator], List[Case]], str]


def _cases_from_pairs(make: Callable[[np.random.Generator], List[Case]]
                      ) -> Callable[[np.random.Generator], List[OpCase]]:
    """A case maker that returns (label, arrays) pairs, as one that returns OpCases."""
    return lambda rng: [OpCase(label, arrays) for label, arrays in make(rng)]


def from_pairs(rows: Sequence[Row]) -> List[OpSpec]:
    """``OpSpec``s from rows written as (name, fn, reference, make, section) tuples."""
    return [OpSpec(name, fn, reference, _cases_from_pairs(make), section)
            for name, fn, reference, make, section in rows]
