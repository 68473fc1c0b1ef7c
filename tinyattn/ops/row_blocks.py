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

__all__ = ["BLOCK_VALUES", "BLAS_ROW_SUM", "MIN_VALUES", "by_row_blocks", "row_dot",
           "rows_per_block", "row_block_ranges"]

# 131,072 values: 512 KiB of float32 per array. Measured on this project's machine (1 MiB
# of L2 per core, shared with other jobs, load average 15): 2^17 and 2^18 fastest, 2^16
# 5-15% slower, 2^14 40-50% slower (Python per block), the whole array at once 30% slower.
BLOCK_VALUES = 1 << 17

# Rows up to this length are summed as BLAS matrix-vector products (BLAS adds each row in
# a few running sums, NumPy pairwise). Measured for float32 softmax rows (std 4, against
# float64): the block path's largest relative error 3.6e-7 to 5.4e-7 at 256 terms and
# 4.9e-7 to 8.6e-7 at 1,024, below the shifted formula's 1.2e-6 to 2.1e-6; at 4,096 terms
# 1.3e-6 to 2.2e-6, sometimes above it. Longer rows take NumPy's sums (softmax) or the
# plain formulas (layer norm).
BLAS_ROW_SUM = 1024


# Arrays smaller than this take the plain formulas: they fit in the cache whole, and the
# blocks' fixed cost (a few arrays and BLAS calls, about 50 us for layer norm's fwd+bwd)
# outweighs their gain. Measured fwd+bwd against main's plain code: layer norm 130 against
# 83 us at 4,096 values, 149 against 139 at 8,192, 178 against 187 at 16,384, 229 against
# 290 at 32,768; softmax 40 against 36 us at 4,096, 48 against 53 at 8,192.
MIN_VALUES = 1 << 14


def by_row_blocks(x: Any, axis: int) -> bool:
    """Whether a block-wise path applies: a C-contiguous NumPy float32 or float64 array of
    at least MIN_VALUES values, reduced over its last axis (anything else, CuPy included,
    takes the plain path)."""
    return (type(x) is np.ndarray and x.dtype in (np.float32, np.float64)
            and x.size >= max(MIN_VALUES, 1) and axis == x.ndim - 1 and x.flags.c_contiguous)


def rows_per_block(rows: int, row_length: int) -> int:
    """How many rows a block holds: about BLOCK_VALUES values, one row at least."""
    return min(rows, max(1, BLOCK_VALUES // max(row_length, 1)))


def row_block_ranges(rows: int, row_length: int) -> Iterator[Tuple[int, int]]:
    """(start, stop) of the consecutive row blocks that cover ``rows`` rows."""
    step = max(1, rows_per_block(rows, row_length))
    for start in range(0, rows, step):
        yield start, min(start + step, rows)


def row_dot(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """sum_j a_ij b_ij for each row i of two (n, m) arrays, (n,): np.vecdot (BLAS dot
    products), or einsum where NumPy is older than 2.0."""
    if _vecdot is not None:
        return _vecdot(a, b)
    return np.einsum("ij,ij->i", a, b)


_vecdot = getattr(np, "vecdot", None)

