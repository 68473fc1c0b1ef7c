"""Layer normalisation and RMS normalisation, fused (docs/derivations.md#layer-norm,
docs/derivations.md#rms-norm)."""
from __future__ import annotations

from math import prod
from typing import Optional, Sequence, Tuple, Union

import numpy as np

from .. import backend
from ..autograd import Function, keep_versions
from ..tensor import Tensor
from .elementwise import convert, half_as_float32
from .row_blocks import (BLAS_ROW_SUM, by_row_blocks, row_block_ranges, row_dot,
                         rows_per_block)
from ..amp.dispatch import cast_args
from ..precision import is_floating

__all__ = ["layer_norm", "rms_norm"]


class LayerNorm(Function):
    """Normalise over the last dims (N elements each), then scale and shift.

        mu = mean(x),  var = mean((x - mu)^2),  rstd = 1 / sqrt(var + eps)
        xhat = (x - mu) * rstd,   out = xhat * w + b

    Backward (mean over the N normalised elements; the forward saves x, mu and rstd, as
    torch does, and the backward rebuilds xhat = (x - mu) * rstd from them):
        dxhat = g * w
        dx = rstd * (dxhat - mean(dxhat) - xhat * mean(dxhat * xhat))
        dw = sum over the other dims of g * xhat,   db = sum of g
    The two means are the paths through mu and through var; each is one line of the chain rule.
    C-contiguous NumPy float rows of up to BLAS_ROW_SUM features run the same formulas block
    by block (layer_norm_by_blocks and layer_norm_backward_by_blocks below).
    """

    versions_checked = (0,)    # what torch saves: changed in place, backward raises

    promotes_inputs = False    # mixed floating dtypes: refused, as torch refuses

    def forward(self, x, *affine, axes, eps: float, has_weight: bool, has_bias: bool):
        xp = backend.get_array_module(x)
        weight = affine[0] if has_weight else None
        bias = affine[-1] if has_bias else None
        if _by_blocks(x, axes):                 # the same formulas, fewer passes (below)
            out, mu, rstd = layer_norm_by_blocks(x, len(axes), eps, weight, bias)
            if self.recording:
                self.save_for_backward(x, mu, rstd, weight, axes, has_bias)
            return out
        mu = x.mean(axis=axes, keepdims=True)
        xhat = x - mu                           # centred; normalised in place below
        buffer = xp.multiply(xhat, xhat)        # (x - mu)^2, then reused for the output
        var = buffer.mean(axis=axes, keepdims=True)
        rstd = 1 / xp.sqrt(var + eps)
        xhat *= rstd
        self.save_for_backward(x, mu, rstd, weight, axes, has_bias)
        out = xp.multiply(xhat, weight, out=buffer) if has_weight else xhat
        if has_bias:
            out += bias
        return out

    def backward(self, grad):
        x, mu, rstd, weight, axes, has_bias = self.saved
        if _by_blocks(grad, axes) and _by_blocks(x, axes) and grad.dtype == x.dtype:
            dx, dw, db = layer_norm_backward_by_blocks(
                grad, x, mu, rstd, weight, len(axes), self.needs_input_grad[0])
            return (dx,) + ((dw,) if weight is not None else ()) + ((db,) if has_bias else ())
        xp = backend.get_array_module(grad)
        xhat = x - mu
        xhat *= rstd                            # as in the forward, to the last bit
        batch_axes = tuple(range(grad.ndim - len(axes)))
        grads = [None]
        scratch = xp.multiply(grad, xhat)       # g * xhat: dw, then reused twice below
        if weight is not None:
            grads.append(backend.accurate_sum(scratch, batch_axes)
                         if self.needs_input_grad[1] else None)
        if has_bias:
            grads.append(backend.accurate_sum(grad, batch_axes)
                         if self.needs_input_grad[-1] else None)
        if self.needs_input_grad[0]:
            # dx = rstd * (dxhat - mean(dxhat) - xhat * mean(dxhat * xhat)), in two buffers
            dx = grad * weight if weight is not None else grad.copy()      # dxhat
            mean_dxhat_xhat = xp.multiply(dx, xhat, out=scratch).mean(axis=axes, keepdims=True)
            dx -= dx.mean(axis=axes, keepdims=True)
            dx -= xp.multiply(xhat, mean_dxhat_xhat, out=scratch)
            dx *= rstd
            grads[0] = dx
        return tuple(grads)


def _by_blocks(x, axes) -> bool:
    """The block-wise paths below: C-contiguous NumPy float32/float64 rows of at most
    BLAS_ROW_SUM features (longer rows take the plain formulas, whose sums are pairwise)."""
    return (by_row_blocks(x, x.ndim - 1) and len(axes) > 0
            and prod(x.shape[x.ndim - len(axes):]) <= BLAS_ROW_SUM)


def layer_norm_by_blocks(x, n_axes: int, eps: float, weight, bias):
    """LayerNorm's forward (the class docstring's formulas) over blocks of rows that stay in
    the CPU cache: the mean as a BLAS product with a vector of ones, the variance as row dot
    products of the centred block with itself (two passes: no cancellation, however large
    the mean), the centred block scaled by the (rows, N) products rstd_i w_j (RowScale: one
    BLAS product) and the bias added as a whole (rows, N) block made once per call (NumPy
    runs a contiguous operand in one loop, a broadcast one in a loop per row).
    Returns out and, shaped to broadcast against x as the plain path's, mu and rstd."""
    features = prod(x.shape[x.ndim - n_axes:])
    rows = x.reshape(-1, features)                                   # (R, N)
    out_array = np.empty(x.shape, x.dtype)
    out = out_array.reshape(rows.shape)
    mu, rstd = np.empty(rows.shape[0], x.dtype), np.empty(rows.shape[0], x.dtype)
    ones = np.ones(features, x.dtype)
    block_rows = rows_per_block(*rows.shape)
    b_rows = None if bias is None else _as_rows(bias, block_rows, features)     # (b, N)
    scale = None if weight is None else RowScale(weight, block_rows)
    for start, stop in row_block_ranges(*rows.shape):
        block, centred = rows[start:stop], out[start:stop]
        m, r = mu[start:stop], rstd[start:stop]
        np.matmul(block, ones, out=m)                                # row sums, (b,)
        m /= features
        np.subtract(block, m[:, None], out=centred)                  # x - mu
        r[...] = row_dot(centred, centred)                           # sum of squares, (b,)
        r /= features
        r += eps
        np.sqrt(r, out=r)
        np.divide(1.0, r, out=r)                                     # rstd
        if scale is None:
            centred *= r[:, None]                                    # xhat
        else:
            centred *= scale.outer(r)                                # (x - mu) (rstd w)
        if b_rows is not None:
            centred += b_rows[:stop - start]
    stats_shape = x.shape[:x.ndim - n_axes] + (1,) * n_axes
    return out_array, mu.reshape(stats_shape), rstd.reshape(stats_shape)


class RowScale:
    """The (b, N) products rstd_i w_j of a block's row values with a weight row, written by
    BLAS as a matrix product [rstd, 0] (b, 2) @ [w; 0] (2, N): each entry is rstd_i w_j
    rounded once (the second term adds 0 exactly), as NumPy's outer product gives it (but
    a product -0 comes out +0: BLAS sums from +0; only the sign of a zero output moves), yet
    at the speed of one write (12 us for a (256, 512) block, against 29 us for a multiply
    by ``rstd[:, None]``, which runs NumPy's inner loop once per row). NumPy's matmul takes
    an inner dimension of 1 by a slow loop of its own (150 us), hence the zero column."""

    def __init__(self, weight, rows: int):
        features = weight.size
        self.left = np.zeros((rows, 2), weight.dtype)           # [rstd, 0] per block
        self.right = np.zeros((2, features), weight.dtype)      # [w; 0]
        self.right[0] = weight.reshape(-1)
        self.products = np.empty((rows, features), weight.dtype)

    def outer(self, row_values):
        """rstd_i w_j for the block's b = len(row_values) rows, (b, N) (a buffer reused
        by the next call)."""
        n = len(row_values)
        left = self.left[:n]
        left[:, 0] = row_values
        return np.matmul(left, self.right, out=self.products[:n])


def _as_rows(param, rows: int, features: int):
    """A weight or bias (N,) repeated as a (rows, N) block (one C-level broadcast copy:
    np.broadcast_to(...).copy() costs a few microseconds of Python per call)."""
    block = np.empty((rows, features), param.dtype)
    block[...] = param.reshape(-1)
    return block


def layer_norm_backward_by_blocks(grad, x, mu, rstd, weight, n_axes: int,
                                  need_dx: bool = True):
    """LayerNorm's backward (the class docstring's formulas) over blocks of rows in the
    cache, with c = x - mu rebuilt per block (xhat = c rstd) and every row or column sum a
    BLAS product:
        dw = sum over rows of rstd c g   (rstd @ (g c): the rows weighted by rstd)
        db = sum over rows of g,   m1 = mean(g w) = (g @ w) / N,
        m2 = mean(g w xhat) = rstd ((g c) @ w) / N
        dx = rstd (g w - m1 - m2 xhat) = rstd (g w) - (rstd^2 m2) c - rstd m1
    dw and db add each block's column sums in float64 (as backend.accurate_sum does).
    Returns dx (None unless need_dx), dw (None without a weight) and db."""
    features = prod(x.shape[x.ndim - n_axes:])
    x_rows, g_rows = x.reshape(-1, features), grad.reshape(-1, features)      # (R, N)
    mu, rstd = mu.reshape(-1), rstd.reshape(-1)                              # (R,)
    ones = np.ones(features, x.dtype)
    w = ones if weight is None else weight.reshape(-1)                       # (N,)
    block_rows = rows_per_block(*x_rows.shape)
    centred, products = (np.empty((block_rows, features), x.dtype) for _ in range(2))
    scale = None if weight is None or not need_dx else RowScale(weight, block_rows)
    row_ones = np.ones(block_rows, x.dtype)
    dx = np.empty(x.shape, x.dtype) if need_dx else None       # its own memory: a leaf
    dx_rows = None if dx is None else dx.reshape(x_rows.shape)       # takes it over, no copy
    dw, db = np.zeros(features, np.float64), np.zeros(features, np.float64)
    for start, stop in row_block_ranges(*x_rows.shape):
        g, m, r = g_rows[start:stop], mu[start:stop], rstd[start:stop]
        c, gc = centred[:stop - start], products[:stop - start]
        np.subtract(x_rows[start:stop], m[:, None], out=c)          # c = x - mu
        np.multiply(g, c, out=gc)                                    # g c = g xhat / rstd
        dw += r @ gc                                                 # (b,) @ (b, N)
        db += row_ones[:stop - start] @ g
        if not need_dx:
            continue
        m2 = gc @ w                                                  # (b, N) @ (N,)
        m2 *= r * r * r / features                                   # rstd^2 m2
        m1 = g @ w
        m1 *= r / features                                           # rstd m1
        out = dx_rows[start:stop]
        if scale is None:
            np.multiply(g, r[:, None], out=out)                      # rstd g
        else:
            np.multiply(g, scale.outer(r), out=out)                  # g (rstd w)
        c *= m2[:, None]
        out -= c
        out -= m1[:, None]
    normalized = x.shape[x.ndim - n_axes:]
    dw, db = dw.reshape(normalized).astype(x.dtype), db.reshape(normalized).astype(x.dtype)
    return dx, (None if weight is None else dw), db


def _normalized_axes(op: str, x: Tensor, normalized_shape: Union[int, Sequence[int]],
                     **params: Optional[Tensor]) -> Tuple[int, ...]:
    """The trailing axes named by ``normalized_shape``, checked against x and the params."""
    shape = (normalized_shape,) if isinstance(normalized_shape, (int, np.integer)) \
        else tuple(normalized_shape)
    if not shape:
        raise RuntimeError(f"{op}: Expected normalized_shape to be at least 1-dimensional, "
                           f"i.e., containing at least one element, but got normalized_shape "
                           f"= []; pass the trailing dims to normalise over, e.g. "
                           f"({x.shape[-1] if x.ndim else 1},)")
    if len(shape) > x.ndim or tuple(x.shape[x.ndim - len(shape):]) != shape:
        raise RuntimeError(f"{op}: normalized_shape {shape} must equal the last dims of the "
                           f"input, whose shape is {x.shape}")
    for name, param in params.items():
        if param is not None and tuple(param.shape) != shape:
            raise RuntimeError(f"{op}: {name} has shape {param.shape}, expected {shape} "
                               f"(Expected {name} to be of same shape as normalized_shape)")
    return tuple(range(x.ndim - len(shape), x.ndim))


def layer_norm(x: Tensor, normalized_shape: Union[int, Sequence[int]],
               weight: Optional[Tensor] = None, bias: Optional[Tensor] = None,
               eps: float = 1e-5) -> Tensor:
    """PyTorch's ``F.layer_norm``: normalise over the trailing ``normalized_shape`` dims."""
    if x.dtype.kind in "biu":
        # NumPy would normalise in the integer dtype and truncate (e.g. [[1, 2, 4]] -> [[-1, 0,
        # 1]]): torch has no integer kernel and raises; NotImplementedError is a RuntimeError
        raise NotImplementedError(f"layer_norm: not implemented for integer or bool input "
                                  f"({x.dtype}), as in PyTorch; convert with .float() first")
    axes = _normalized_axes("layer_norm", x, normalized_shape, weight=weight, bias=bias)
    x, weight, bias = cast_args("layer_norm", x, weight, bias)     # float32 in CUDA autocast
    affine = [half_as_float32(p) for p in (weight, bias) if p is not None]
    out = LayerNorm.apply(half_as_float32(x), *affine, axes=axes, eps=float(eps),
                          has_weight=weight is not None, has_bias=bias is not None)
    out = convert(out, dtype=x.dtype)      # float16 is normalised in float32, as PyTorch
    return keep_versions(out, bias)        # torch's native_layer_norm keeps bias too


class RMSNorm(Function):
    """Divide each row (the last dims, N elements) by its root mean square, then scale.

        rstd = 1 / sqrt(mean(x^2) + eps),   xhat = x * rstd,   out = xhat * w

    Backward (docs/derivations.md#rms-norm). d rstd / d x_j = -rstd^3 x_j / N, so the
    Jacobian of xhat is rstd (delta_ij - xhat_i xhat_j / N) and, with dxhat = g * w,
        dx = rstd * (dxhat - xhat * mean(dxhat * xhat)),   dw = sum over the other dims of g * xhat
    Layer norm's formula without the mean path: nothing is centred, so nothing is subtracted.
    """

    promotes_inputs = False    # mixed floating dtypes: refused, as torch refuses

    def forward(self, x, *weight, axes, eps: float):
        xp = backend.get_array_module(x)
        mean_square = xp.multiply(x, x).mean(axis=axes, keepdims=True)
        with np.errstate(invalid="ignore", divide="ignore"):     # eps < 0 may give NaN, as
            rstd = 1 / xp.sqrt(mean_square + eps)              # torch's (which accepts it)
        xhat = x * rstd
        w = weight[0] if weight else None
        self.save_for_backward(xhat, rstd, w, axes)
        # without a weight the output is a copy: torch keeps x, not the output, so a write
        # to the output is allowed and must not change the kept xhat
        return xhat * w if w is not None else xhat.copy()

    def backward(self, grad):
        xhat, rstd, weight, axes = self.saved
        xp = backend.get_array_module(grad)
        grads = [None]
        if weight is not None:
            batch_axes = tuple(range(grad.ndim - len(axes)))
            dw = xp.multiply(grad, xhat).sum(axis=batch_axes) if self.needs_input_grad[1] \
                else None
            grads.append(dw)
        if self.needs_input_grad[0]:
            dxhat = grad * weight if weight is not None else grad
            dx = dxhat - xhat * xp.multiply(dxhat, xhat).mean(axis=axes, keepdims=True)
            dx *= rstd
            grads[0] = dx
        return tuple(grads)


def rms_norm(x: Tensor, normalized_shape: Union[int, Sequence[int]],
             weight: Optional[Tensor] = None, eps: Optional[float] = None) -> Tensor:
    """PyTorch's ``F.rms_norm``: x / sqrt(mean(x^2) + eps) * weight over the trailing
    ``normalized_shape`` dims (a negative eps is taken as given, as torch takes it: NaN where
    mean(x^2) + eps < 0); ``eps=None`` means the machine epsilon of the dtype the
    sum is computed in, as torch: 2.2e-16 for float64 and float32's 1.19e-07 for float32,
    float16 and bfloat16 (not the half dtype's own, 9.8e-04 / 7.8e-03, which would swamp
    small inputs)."""
    axes = _normalized_axes("rms_norm", x, normalized_shape, weight=weight)
    if not is_floating(x.dtype):
        raise TypeError(f"rms_norm: expected a floating-point input, got {x.dtype}; convert "
                        f"with .float()")
    if eps is None:
        eps = float(np.finfo(np.float64 if x.dtype == np.float64 else np.float32).eps)
    weights = () if weight is None else (half_as_float32(weight),)
    out = RMSNorm.apply(half_as_float32(x), *weights, axes=axes, eps=float(eps))
    out = convert(out, dtype=x.dtype)      # float16 in float32, as layer_norm
    return keep_versions(out, x)           # torch's rms_norm (x * rsqrt(...)) keeps x
