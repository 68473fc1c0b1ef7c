"""softmax and log_softmax along one axis, numerically stable (docs/derivations.md#softmax)."""
from __future__ import annotations

import warnings
from typing import Any, Optional

import numpy as np

from .. import backend
from ..autograd import Function
from ..tensor import Tensor
from .elementwise import _as_float
from .row_blocks import BLAS_ROW_SUM, by_row_blocks, row_block_ranges, row_dot
from .shape import reshape
from ..precision import is_low_precision

__all__ = ["softmax", "log_softmax", "stable_softmax", "safe_row_max", "torch_softmax",
           "softmax_empty_rows_zero", "softmax_by_blocks", "softmax_backward_by_blocks"]


def safe_row_max(x: Any, axis: int) -> Any:
    """Row maximum, with rows that are entirely -inf given 0 so x - max stays -inf, not NaN.
    An empty axis (no entries to take the max of, e.g. zero keys) gives 0 too: the shift
    only has to keep exp() in range, and there is nothing to keep in range."""
    xp = backend.get_array_module(x)
    if x.ndim and x.shape[axis] == 0:
        axis %= x.ndim
        return xp.zeros(x.shape[:axis] + (1,) + x.shape[axis + 1:], dtype=x.dtype)
    m = x.max(axis=axis, keepdims=True)
    return xp.where(xp.isfinite(m), m, 0)


def stable_softmax(x: Any, axis: int = -1, out: Any = None) -> Any:
    """Array-level softmax: exp(x - max) / sum. A row that is entirely -inf (fully masked)
    gives zeros, not 0/0 = NaN. Shared with the attention ops; ``out=x`` computes it in x's
    own buffer (attention does, for scores no one else holds)."""
    xp = backend.get_array_module(x)
    y = xp.subtract(x, safe_row_max(x, axis), out=out)
    xp.exp(y, out=y)                            # in place: one buffer for the whole op
    total = y.sum(axis=axis, keepdims=True)
    y /= xp.where(total == 0, 1, total)
    return y


def _row_max(x: Any, axis: int) -> Any:
    """Row maximum as torch takes it: -inf for an all -inf row, inf if any entry is inf, NaN
    if any is NaN (an empty axis gives 0: there is nothing to shift)."""
    xp = backend.get_array_module(x)
    if x.ndim and x.shape[axis] == 0:
        return safe_row_max(x, axis)
    return x.max(axis=axis, keepdims=True)


def torch_softmax(x: Any, axis: int) -> Any:
    """Array-level softmax with torch's values at the infinities: exp(x - max) / sum, so a
    row that is entirely -inf gives NaN (-inf - -inf), and a row holding +inf gives NaN
    everywhere (inf - inf), as ``torch.softmax``."""
    xp = backend.get_array_module(x)
    with np.errstate(invalid="ignore"):
        y = xp.subtract(x, _row_max(x, axis))
        xp.exp(y, out=y)
        y /= y.sum(axis=axis, keepdims=True)
    return y


def softmax_by_blocks(x: np.ndarray, empty_rows_zero: bool = False) -> np.ndarray:
    """softmax over the last axis in three passes instead of five, with no shift by the max:
        y = exp(x) * (1 / rowsum(exp(x)))
    The shift (docs/derivations.md#softmax) only keeps exp in range, and a row needs none
    when its sum of exponentials lies in [1, 1 / tiny]: nothing overflowed (a finite sum),
    1 / sum is a normal number, and since the sum is >= 1 every term that underflows is a
    result that underflows anyway. Skipping the shift also skips the rounding of x - max, so
    these rows come out more accurate, not less (tests/test_softmax_blocks.py). A block with
    any other row (very negative rows, an inf or NaN, a fully masked row) is redone by the
    shifted formula, which gives torch's NaNs or attention's zeros as before. The row sums
    are matrix-vector products with a vector of ones (BLAS: one fast pass in the cache);
    rows longer than BLAS_ROW_SUM are summed by NumPy, whose pairwise sum stays accurate
    where BLAS's running sums would not."""
    n = x.shape[-1]
    result = np.empty(x.shape, x.dtype)
    rows, y = x.reshape(-1, n), result.reshape(-1, n)                          # (R, n)
    ones, largest = np.ones(n, x.dtype), 1.0 / np.finfo(x.dtype).tiny
    with np.errstate(over="ignore"):            # an overflow sends its block to the shift
        for start, stop in row_block_ranges(rows.shape[0], n):
            block, out = rows[start:stop], y[start:stop]
            np.exp(block, out=out)
            total = out @ ones if n <= BLAS_ROW_SUM else out.sum(axis=1)  # (b, n) -> (b,)
            if total.min() >= 1.0 and total.max() <= largest:          # NaN: False
                np.divide(1.0, total, out=total)
                out *= total[:, None]
            elif empty_rows_zero:
                stable_softmax(block, -1, out=out)
            else:
                out[...] = torch_softmax(block, -1)
    return result


def softmax_backward_by_blocks(grad: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Softmax's backward, dx = y * (g - rowsum(g * y)), block by block: the row sums as
    row-wise dot products (no g * y array; NumPy's sum for rows longer than BLAS_ROW_SUM),
    then two passes in the cache."""
    n = y.shape[-1]
    g_rows, y_rows = grad.reshape(-1, n), y.reshape(-1, n)                      # (R, n)
    dx = np.empty(y.shape, y.dtype)
    dx_rows = dx.reshape(-1, n)
    for start, stop in row_block_ranges(y_rows.shape[0], n):
        g, p, out = (a[start:stop] for a in (g_rows, y_rows, dx_rows))
        if n <= BLAS_ROW_SUM:
            row = row_dot(g, p)                 # sum_i g_i y_i per row, (b,)
        else:
            row = np.multiply(g, p, out=out).sum(axis=1)
        np.subtract(g, row[:, None], out=out)
        out *= p
    return dx


class Softmax(Function):
    """y_i = exp(x_i - m) / sum_j exp(x_j - m), with m = max_j x_j (softmax is shift-invariant,
    and subtracting the max keeps every exp <= 1, so nothing overflows).

    Jacobian: dy_i/dx_j = y_i (delta_ij - y_j). Applied to g without building it:
        dx_j = sum_i g_i y_i (delta_ij - y_j) = y_j (g_j - sum_i g_i y_i).
    A row that is entirely -inf gives NaN, as torch (no distribution over nothing); with
    ``empty_rows_zero`` (the attention ops, whose torch counterparts give zeros) it gives 0,
    and its gradient is 0 too (y = 0 in the formula above).
    NumPy float rows over the last axis take the block-wise versions of both formulas
    (softmax_by_blocks, softmax_backward_by_blocks above; plain ones: tinyattn/ops/plain.py).
    """

    def forward(self, x, axis: int, empty_rows_zero: bool = False):
        if by_row_blocks(x, axis):              # the same values, fewer passes (below)
            y = softmax_by_blocks(x, empty_rows_zero)
        else:
            y = stable_softmax(x, axis) if empty_rows_zero else torch_softmax(x, axis)
        self.save_for_backward(y, axis)
        return y

    def backward(self, grad):
        y, axis = self.saved
        if by_row_blocks(grad, axis) and by_row_blocks(y, axis) and grad.dtype == y.dtype:
            return softmax_backward_by_blocks(grad, y)
        # plain (tinyattn/ops/plain.py: softmax_backward), three fresh arrays:
        #     return y * (grad - (grad * y).sum(axis=axis, keepdims=True))
        # the same products and sums, bit for bit, in one buffer (docs/benchmarks.md):
        dx = grad * y
        row = dx.sum(axis=axis, keepdims=True)      # sum_i g_i y_i, one per row
        backend.get_array_module(dx).subtract(grad, row, out=dx)
        dx *= y
        return dx


def _rounded(a: Any, half: Any) -> Any:
    return a.astype(half).astype(a.dtype)


class LogSoftmax(Function):
    """out_i = x_i - logsumexp(x) = (x_i - m) - log sum_j exp(x_j - m)
    (docs/derivations.md#log-softmax).

    d out_i / d x_j = delta_ij - softmax(x)_j, so dx_j = g_j - softmax_j * sum_i g_i,
    with softmax = exp(out) (reuse the output). A row that is entirely -inf gives NaN, and so
    does a row holding +inf, as in PyTorch: the log of an empty distribution has no finite
    value. Mask with where before, not after, log_softmax.

    ``half`` (float16/bfloat16, run on float32 copies): along the last dim torch's CPU kernel
    keeps the sum and its log in the half dtype (each rounded), then subtracts in float32
    and rounds once; along another dim it rounds once. Followed here, so the results agree
    with torch's bit for bit (tests/test_half_rounding.py).
    """

    def forward(self, x, axis: int, half: Any = None):
        xp = backend.get_array_module(x)
        if x.size == 0:                         # nothing to normalise (and no log(0) warning)
            out = x.copy()
        else:
            with np.errstate(invalid="ignore", divide="ignore"):
                shifted = x - _row_max(x, axis)
                total = xp.exp(shifted).sum(axis=axis, keepdims=True)
                if half is not None and axis == x.ndim - 1:
                    total = _rounded(xp.log(_rounded(total, half)), half)
                    out = shifted - total
                else:
                    out = shifted - xp.log(total)
        self.save_for_backward(out, axis, half)
        return out

    def backward(self, grad):
        out, axis, half = self.saved
        xp = backend.get_array_module(out)
        if half is not None:        # torch's backward reads its (rounded) half output
            out = _rounded(out, half)
        # torch's kernel sums each row from its first element: a row of -0 gradients sums to
        # -0 (NumPy's sum, from +0, gives +0), so dx = -0 - p * (-0) is +0 there, as torch's
        total = grad.sum(axis=axis, keepdims=True, initial=-0.0) if xp is np else \
            grad.sum(axis=axis, keepdims=True)
        return grad - xp.exp(out) * total


def _axis(dim: int, ndim: int, op: str) -> int:
    if not -max(ndim, 1) <= dim < max(ndim, 1):
        raise IndexError(f"{op}: dim {dim} is out of range for a tensor with {ndim} dims")
    return dim % max(ndim, 1)


def implicit_dim(name: str, ndim: int) -> int:
    """torch's deprecated choice when ``dim`` is not given (``F.softmax(x)``, ``nn.Softmax()``):
    dim 0 for 0-, 1- and 3-d inputs, dim 1 otherwise, with torch's warning."""
    warnings.warn(f"Implicit dimension choice for {name} has been deprecated. Change the call "
                  f"to include dim=X as an argument.", UserWarning, stacklevel=4)
    return 0 if ndim in (0, 1, 3) else 1


def softmax(x: Tensor, dim: Optional[int] = None) -> Tensor:
    if dim is None:
        dim = implicit_dim("softmax", x.ndim)
    axis = _axis(dim, x.ndim, "softmax")
    if x.ndim == 0:                               # a 0-d tensor: softmax of one element is 1
        return reshape(Softmax.apply(reshape(_as_float(x), 1), axis=0), ())
    return Softmax.apply(_as_float(x), axis=axis)


def softmax_empty_rows_zero(x: Tensor, dim: int = -1) -> Tensor:
    """softmax where a row that is entirely -inf (every key masked) gives zeros: what torch's
    scaled_dot_product_attention gives for such a row (F.softmax gives NaN)."""
    return Softmax.apply(_as_float(x), axis=_axis(dim, x.ndim, "softmax"), empty_rows_zero=True)


def log_softmax(x: Tensor, dim: Optional[int] = None) -> Tensor:
    if dim is None:
        dim = implicit_dim("log_softmax", x.ndim)
    axis = _axis(dim, x.ndim, "log_softmax")
    if x.ndim == 0:
        return reshape(log_softmax(reshape(x, 1), 0), ())
    half = x.dtype if is_low_precision(x.dtype) else None
    return LogSoftmax.apply(_as_float(x), axis=axis, half=half)
