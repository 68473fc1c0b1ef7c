"""What the block-wise fast paths of softmax and layer norm share (docs/benchmarks.md).

An op over the last axis (a softmax row, a layer norm row) is a chain of NumPy passes, each
reading and writing the whole array. Run over the whole array, every pass streams it from
main memory; run over BLOCK_VALUES values at a time, the chain's later passes find the block
in the CPU's L2 cache. The row sums are BLAS matrix-vector products with a vector of ones
and the row dot products ``np.vecdot``: one pass each, much faster in the cache than
NumPy's ``sum`` along a short last axis.
"""
from __future__ import annotations

from typing import Any, Iterator, Tuple

import numpy as np

__all__ = ["BLOCK_VALUES", "BLAS_ROW_SUM", "by_row_blocks", "row_dot", "row_block_ranges"]

# 65,536 values: 256 KiB of float32 per array, so the two or three arrays a chain touches
# stay within a 1 MiB L2 cache (16,384 to 262,144 measured within noise of each other).
BLOCK_VALUES = 1 << 16

# Rows up to this length are summed as BLAS matrix-vector products; a float32 row sum's
# error then stays below NumPy's pairwise sum's times a few (measured: 1.2e-7 against
# 7.6e-8 of the sum at 256 terms, 4.2e-7 against 9.3e-8 at 4,096), while at 70,000 terms
# a softmax row was less accurate than the shifted formula's (tests/test_softmax_blocks.py).
BLAS_ROW_SUM = 4096


def by_row_blocks(x: Any, axis: int) -> bool:
    """Whether a block-wise path applies: a non-empty C-contiguous NumPy float32 or float64
    array, reduced over its last axis (anything else, CuPy included, takes the plain path)."""
    return (type(x) is np.ndarray and x.dtype in (np.float32, np.float64) and x.size > 0
            and axis == x.ndim - 1 and x.flags.c_contiguous)


def row_block_ranges(rows: int, row_length: int) -> Iterator[Tuple[int, int]]:
    """(start, stop) of consecutive row blocks of about BLOCK_VALUES values (one row at
    least)."""
    step = max(1, BLOCK_VALUES // max(row_length, 1))
    for start in range(0, rows, step):
        yield start, min(start + step, rows)


def row_dot(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """sum_j a_ij b_ij for each row i of two (n, m) arrays, (n,): np.vecdot (BLAS dot
    products), or einsum where NumPy is older than 2.0."""
    if _vecdot is not None:
        return _vecdot(a, b)
    return np.einsum("ij,ij->i", a, b)


_vecdot = getattr(np, "vecdot", None)
