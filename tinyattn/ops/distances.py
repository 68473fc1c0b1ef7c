"""Distances between the rows of matrices: ``torch.cdist`` (every row of x1 against every row
of x2, batched) and ``torch.pdist`` / ``F.pdist`` (every pair of rows of one matrix), for
every p >= 0 (docs/derivations.md#cdist-and-pdist).

Both take the p-norm of a difference d = x1_i - x2_j of two rows of M numbers:
    p = 0: the count of d_k != 0;   p = 1: sum |d_k|;   p = 2: sqrt(sum d_k^2);
    p = inf: max |d_k|;             else: (sum |d_k|^p)^(1/p).
The gradient of dist with respect to d is torch's (aten's _cdist_backward kernels), with its
subgradient 0 where the distance is 0:
    p = 0: 0;   p = 1: sign(d);   p = 2: d / dist;   p = inf: sign(d) [|d| = dist];
    p < 2: sign(d) |d|^(p-1) / dist^(p-1) (0 where d = 0 and p < 1);
    p > 2: d |d|^(p-2) / dist^(p-1).
x1 gets the sum over j of g_ij times that, x2 minus the sum over i (d is odd in x2).

``cdist``'s p = 2 has torch's second algorithm ("use_mm_for_euclid_dist", and by default when
either matrix has more than 25 rows): dist^2 = |x1|^2 - 2 x1 x2^T + |x2|^2 from one matrix
product, clamped at 0 (``EuclideanDist``), with torch's own backward for it.
"""
from __future__ import annotations

import math
from typing import Any, Tuple

import numpy as np

from .. import backend
from ..amp.dispatch import cast_args
from ..autograd import Function, unbroadcast
from ..precision import is_floating, scalar_type_name
from ..tensor import Tensor

__all__ = ["cdist", "pdist"]

_COMPUTE_MODES = {"use_mm_for_euclid_dist_if_necessary": 0, "use_mm_for_euclid_dist": 1,
                  "donot_use_mm_for_euclid_dist": 2}
_torch_name = scalar_type_name    # torch's ScalarType name (float32 -> Float)


def _lp_distance(xp: Any, diff: Any, p: float) -> Any:
    """The p-norm of ``diff`` over its last axis (see the module docstring)."""
    if p == 0:
        return (diff != 0).sum(axis=-1).astype(diff.dtype)
    if p == 1:
        return xp.abs(diff).sum(axis=-1)
    if p == 2:
        return xp.sqrt((diff * diff).sum(axis=-1))
    if math.isinf(p):
        if diff.shape[-1] == 0:
            return xp.zeros(diff.shape[:-1], dtype=diff.dtype)
        return xp.abs(diff).max(axis=-1)
    return (xp.abs(diff) ** p).sum(axis=-1) ** (1.0 / p)


def _lp_distance_grad(xp: Any, diff: Any, dist: Any, grad: Any, p: float) -> Any:
    """g * d dist / d diff, elementwise over diff's last axis (dist and grad lack that axis):
    torch's kernels, 0 where dist = 0."""
    dist, grad = dist[..., None], grad[..., None]
    if p == 0:
        return xp.zeros_like(diff)
    if p == 1:
        return grad * xp.sign(diff)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        if p == 2:
            out = grad * diff / dist
        elif math.isinf(p):
            out = grad * xp.sign(diff) * (xp.abs(diff) == dist)
        elif p < 2:
            out = xp.sign(diff) * xp.abs(diff) ** (p - 1) * grad / dist ** (p - 1)
            if p < 1:
                out = xp.where(diff == 0, 0, out)
        else:
            out = diff * xp.abs(diff) ** (p - 2) * grad / dist ** (p - 1)
    if not math.isinf(p):
        out = xp.where(dist == 0, 0, out)
    return out.astype(diff.dtype, copy=False)


def _batch_shapes(x1: Any, x2: Any) -> Tuple[Tuple[int, ...], Tuple[int, ...]]:
    """x1 (*, P, M) and x2 (*, R, M) with their batch dims broadcast together."""
    batch = np.broadcast_shapes(x1.shape[:-2], x2.shape[:-2])
    return batch + x1.shape[-2:], batch + x2.shape[-2:]


class Cdist(Function):
    """out[..., i, j] = ||x1[..., i, :] - x2[..., j, :]||_p   (x1: (*, P, M), x2: (*, R, M)).
    With d = x1_i - x2_j and dd = g_ij * d dist / d d (module docstring):
    dx1_i = sum_j dd_ij,   dx2_j = -sum_i dd_ij, each summed back over broadcast batch dims."""

    promotes_inputs = False

    def forward(self, x1, x2, p: float):
        xp = backend.get_array_module(x1)
        shape1, shape2 = _batch_shapes(x1, x2)
        a, b = xp.broadcast_to(x1, shape1), xp.broadcast_to(x2, shape2)
        diff = a[..., :, None, :] - b[..., None, :, :]          # (*, P, R, M)
        out = _lp_distance(xp, diff, p)                          # (*, P, R)
        self.save_for_backward(x1, x2, out, p)
        return out

    def backward(self, grad):
        x1, x2, out, p = self.saved
        xp = backend.get_array_module(grad)
        shape1, shape2 = _batch_shapes(x1, x2)
        a, b = xp.broadcast_to(x1, shape1), xp.broadcast_to(x2, shape2)
        diff = a[..., :, None, :] - b[..., None, :, :]          # (*, P, R, M)
        dd = _lp_distance_grad(xp, diff, out, grad, p)
        dx1 = unbroadcast(dd.sum(axis=-2), x1.shape) if self.needs_input_grad[0] else None
        dx2 = unbroadcast(-dd.sum(axis=-3), x2.shape) if self.needs_input_grad[1] else None
        return dx1, dx2


class EuclideanDist(Function):
    """out = sqrt(max(0, |x1_i|^2 - 2 x1_i . x2_j + |x2_j|^2)), as one matrix product of
    [-2 x1, |x1|^2, 1] and [x2, 1, |x2|^2] (torch's _euclidean_dist, batch dims broadcast).
    d out / d x1_i = (x1_i - x2_j) / out, so with r = g / out (0 where out = 0):
    dx1 = x1 * sum_j r_ij - r @ x2,   dx2 = x2 * sum_i r_ij - r^T @ x1.
    As torch, an input its batch dims broadcast is kept as a broadcast copy (torch reshapes
    the expanded input, which copies it), so a later write to it is allowed; an input kept
    as it is makes such a write raise."""

    promotes_inputs = False

    def forward(self, x1, x2):
        xp = backend.get_array_module(x1)
        shape1, shape2 = _batch_shapes(x1, x2)
        a, b = xp.broadcast_to(x1, shape1), xp.broadcast_to(x2, shape2)
        norm1 = (a * a).sum(axis=-1, keepdims=True)                  # (*, P, 1)
        norm2 = (b * b).sum(axis=-1, keepdims=True)                  # (*, R, 1)
        left = xp.concatenate([-2 * a, norm1, xp.ones_like(norm1)], axis=-1)    # (*, P, M+2)
        right = xp.concatenate([b, xp.ones_like(norm2), norm2], axis=-1)        # (*, R, M+2)
        out = xp.sqrt(xp.maximum(left @ xp.swapaxes(right, -1, -2), 0))        # (*, P, R)
        kept1 = x1 if a.size == x1.size else a.copy()
        kept2 = x2 if b.size == x2.size else b.copy()
        self.save_for_backward(kept1, kept2, out, x1.shape, x2.shape)
        return out

    def backward(self, grad):
        kept1, kept2, out, shape1, shape2 = self.saved
        xp = backend.get_array_module(grad)
        a = xp.broadcast_to(kept1, out.shape[:-2] + kept1.shape[-2:])
        b = xp.broadcast_to(kept2, out.shape[:-2] + kept2.shape[-2:])
        with np.errstate(divide="ignore", invalid="ignore"):
            ratio = xp.where(out == 0, 0, grad / out).astype(grad.dtype)     # (*, P, R)
        dx1 = a * ratio.sum(axis=-1, keepdims=True) - ratio @ b
        dx2 = b * ratio.sum(axis=-2)[..., None] - xp.swapaxes(ratio, -1, -2) @ a
        return unbroadcast(dx1, shape1), unbroadcast(dx2, shape2)


class Pdist(Function):
    """out[k] = ||x_i - x_j||_p for the pairs i < j of rows of x (N, M), in the order
    (0, 1), (0, 2), ..., (1, 2), ...: N (N - 1) / 2 values. With d = x_i - x_j and dd_k =
    g_k * d dist / d d (module docstring): dx_i += dd_k, dx_j -= dd_k over every pair k."""

    def forward(self, x, p: float):
        xp = backend.get_array_module(x)
        first, second = (backend.to_device(i, backend.device_of(x))
                          for i in np.triu_indices(x.shape[0], 1))
        diff = x[first] - x[second]                                  # (K, M)
        out = _lp_distance(xp, diff, p)                              # (K,)
        self.save_for_backward(x, out, p)
        return out

    def backward(self, grad):
        x, out, p = self.saved
        xp = backend.get_array_module(grad)
        first, second = (backend.to_device(i, backend.device_of(x))
                          for i in np.triu_indices(x.shape[0], 1))
        dd = _lp_distance_grad(xp, x[first] - x[second], out, grad, p)   # (K, M)
        dx = xp.zeros(x.shape, dtype=grad.dtype)
        backend.scatter_add(dx, first, dd)
        backend.scatter_add(dx, second, -dd)
        return dx


# ------------------------------------------------------------------ public functions
def _check_floating(op: str, x: Tensor, label: str, half_ok: bool = False) -> None:
    if not is_floating(x.dtype):
        got = f", {label} got: {_torch_name(x.dtype)}" if label else ""
        raise RuntimeError(f"{op} only supports floating-point dtypes{got} (as torch); convert "
                           f"with .float() first")
    if np.dtype(x.dtype).itemsize < 4 and not half_ok:
        raise NotImplementedError(f'"{op}" not implemented for {_torch_name(x.dtype)!r} (as '
                                  f"torch on the CPU); convert with .float() first")


def cdist(x1: Tensor, x2: Tensor, p: float = 2.0,
          compute_mode: str = "use_mm_for_euclid_dist_if_necessary") -> Tensor:
    """``torch.cdist``: the p-norm distance between each row of x1 (*, P, M) and each row of
    x2 (*, R, M), batch dims broadcast: (*, P, R). ``compute_mode`` chooses, for p = 2, the
    matrix-product form ("use_mm_for_euclid_dist"), the direct one ("donot_use_mm_...") or,
    by default, the product form when P or R exceeds 25 (faster, less exact near 0)."""
    if compute_mode not in _COMPUTE_MODES:
        raise ValueError(f"{compute_mode} is not a valid value for compute_mode")
    mode = _COMPUTE_MODES[compute_mode]
    for label, x in (("X1", x1), ("X2", x2)):
        if not isinstance(x, Tensor):
            raise TypeError(f"cdist(): argument '{label.lower()}' must be Tensor, not "
                            f"{type(x).__name__}")
        if x.ndim < 2:
            raise RuntimeError(f"cdist only supports at least 2D tensors, {label} got: "
                               f"{x.ndim}D")
    x1, x2 = cast_args("cdist", x1, x2)   # autocast: float32, as torch's CPU list runs cdist
    if x1.shape[-1] != x2.shape[-1]:
        raise RuntimeError(f"X1 and X2 must have the same number of columns. X1: "
                           f"{x1.shape[-1]} X2: {x2.shape[-1]}")
    p = float(p)
    rows1, rows2 = x1.shape[-2], x2.shape[-2]
    use_product = p == 2 and (mode == 1 or (mode == 0 and (rows1 > 25 or rows2 > 25)))
    # torch's matrix-product path is matmuls, which have half kernels; its direct kernel not
    _check_floating("cdist", x1, "X1", half_ok=use_product)
    _check_floating("cdist", x2, "X2", half_ok=use_product)
    if not p >= 0:
        raise RuntimeError("cdist only supports non-negative p values")
    try:
        np.broadcast_shapes(x1.shape[:-2], x2.shape[:-2])
    except ValueError:
        raise RuntimeError(f"cdist: the batch dims of x1 {tuple(x1.shape[:-2])} and x2 "
                           f"{tuple(x2.shape[:-2])} do not broadcast") from None
    if x1.dtype != x2.dtype:
        raise RuntimeError(f"expected scalar type {_torch_name(x1.dtype)} but found "
                           f"{_torch_name(x2.dtype)} (cdist takes x1 and x2 of one dtype, as "
                           f"torch; convert one with .to(other.dtype))")
    if use_product and x1.numel() and x2.numel():
        if np.dtype(x1.dtype).itemsize < 4:    # half: the products in float32, rounded once
            return EuclideanDist.apply(x1.float(), x2.float()).to(x1.dtype)
        return EuclideanDist.apply(x1, x2)
    return Cdist.apply(x1, x2, p=p)


def pdist(input: Tensor, p: float = 2.0) -> Tensor:  # noqa: A002 - torch's names
    """``torch.pdist`` / ``F.pdist``: the p-norm distance between every pair of rows i < j of
    input (N, M), as the N (N - 1) / 2 values of the upper triangle of cdist(x, x), row by
    row."""
    if input.ndim != 2:
        raise RuntimeError(f"pdist only supports 2D tensors, got: {input.ndim}D")
    _check_floating("pdist", input, "")
    p = float(p)
    if not p >= 0:
        raise RuntimeError("pdist only supports non-negative p values")
    return Pdist.apply(input, p=p)
