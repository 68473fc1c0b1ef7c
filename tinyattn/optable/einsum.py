"""The op-table rows of ops/einsum.py: each row names an op, the function under test, a
NumPy reference and its input cases (tinyattn/optable/__init__.py assembles the table)."""
from __future__ import annotations

from typing import Any, List, Tuple

import numpy as np

from .. import ops
from .cases import case_pair, shapes_label
from .spec import Case, OpSpec, Row, from_pairs


__all__ = ["ROWS"]


def _einsum_row(name: str, equation: str, *shapes: Tuple[int, ...],
                reference: Any = None) -> Row:
    def make(rng: np.random.Generator) -> List[Case]:
        return [case_pair(f"{equation!r} " + shapes_label(*shapes),
                          *(rng.standard_normal(s) for s in shapes))]
    return (name, lambda *xs: ops.einsum(equation, *xs),
            reference or (lambda *xs: np.asarray(np.einsum(equation, *xs))), make, "einsum")


ROWS: List[OpSpec] = from_pairs([
    _einsum_row("einsum_bmm", "bij,bjk->bik", (2, 3, 4), (2, 4, 5)),
    _einsum_row("einsum_implicit", "ij,kj", (3, 4), (5, 4)),
    _einsum_row("einsum_outer", "i,j->ij", (3,), (4,)),
    _einsum_row("einsum_three", "ij,jk,kl->il", (2, 3), (3, 4), (4, 2)),
    _einsum_row("einsum_trace", "ii", (4, 4)),
    _einsum_row("einsum_diagonal", "...ii->...i", (2, 3, 3)),
    _einsum_row("einsum_sum_out", "ijk->i", (2, 3, 4)),
    _einsum_row("einsum_ellipsis", "...ij,...jk->...ik", (2, 3, 4), (4, 5)),
    _einsum_row("einsum_broadcast_one", "bij,bj->bi", (2, 3, 4), (1, 4),
                reference=lambda a, b: np.einsum("bij,bj->bi", a, np.broadcast_to(b, (2, 4)))),
])
