"""``F.lp_pool1d`` / ``F.lp_pool2d`` / ``F.lp_pool3d``: power-average pooling, written as torch
writes it with ops that have a hand-derived backward (docs/derivations.md#pooling):
(sum over the window of x^p)^(1/p) = (avg_pool(x^p) * window size)^(1/p), sign-guarded;
p = inf is the max of |x|."""
from __future__ import annotations

from typing import Any, Optional

from ..tensor import Tensor
from .elementwise import relu
from .conv import as_tuple
from .pool import avg_pool1d, avg_pool2d, avg_pool3d, max_pool1d, max_pool2d, max_pool3d

__all__ = ["lp_pool1d", "lp_pool2d", "lp_pool3d"]

_POOLS = {1: (avg_pool1d, max_pool1d), 2: (avg_pool2d, max_pool2d), 3: (avg_pool3d, max_pool3d)}


def _lp_pool(input: Tensor, norm_type: float, kernel_size: Any,  # noqa: A002
             stride: Optional[Any], ceil_mode: bool, dims: int) -> Tensor:
    average, maximum = _POOLS[dims]
    if isinstance(norm_type, (int, float)) and abs(norm_type) == float("inf"):
        if norm_type > 0:
            return maximum(input.abs(), kernel_size, stride, 0, 1, ceil_mode=ceil_mode)
        return -maximum(-input.abs(), kernel_size, stride, 0, 1, ceil_mode=ceil_mode)
    window = 1
    for k in as_tuple(kernel_size, dims, "kernel_size", f"lp_pool{dims}d"):
        window *= k
    out = average(input.pow(norm_type), kernel_size, stride, 0, ceil_mode)
    return (out.sign() * relu(out.abs())).mul(window).pow(1.0 / norm_type)


def lp_pool1d(input: Tensor, norm_type: float, kernel_size: int,  # noqa: A002
              stride: Optional[Any] = None, ceil_mode: bool = False) -> Tensor:
    """``F.lp_pool1d``: (N, C, L) -> the p-norm of each window."""
    return _lp_pool(input, norm_type, kernel_size, stride, ceil_mode, 1)


def lp_pool2d(input: Tensor, norm_type: float, kernel_size: Any,  # noqa: A002
              stride: Optional[Any] = None, ceil_mode: bool = False) -> Tensor:
    """``F.lp_pool2d``: (N, C, H, W) -> the p-norm of each window."""
    return _lp_pool(input, norm_type, kernel_size, stride, ceil_mode, 2)


def lp_pool3d(input: Tensor, norm_type: float, kernel_size: Any,  # noqa: A002
              stride: Optional[Any] = None, ceil_mode: bool = False) -> Tensor:
    """``F.lp_pool3d``: (N, C, D, H, W) -> the p-norm of each window."""
    return _lp_pool(input, norm_type, kernel_size, stride, ceil_mode, 3)
