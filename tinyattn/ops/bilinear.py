"""``F.bilinear``: y = x1^T A x2 + b for every output feature (docs/derivations.md#bilinear)."""
from __future__ import annotations

from typing import Any, Optional

from .. import backend
from ..autograd import Function
from ..tensor import Tensor
from .blas import _check_dtypes

__all__ = ["bilinear"]


class Bilinear(Function):
    """y[n, k] = sum_ij x1[n, i] W[k, i, j] x2[n, j] (+ b[k]); x1 (N, I), x2 (N, J), W (K, I, J).

    y is linear in each of x1, x2 and W with the others fixed, so with g = dL/dy (N, K):
        dx1[n, i] = sum_kj g[n, k] W[k, i, j] x2[n, j]
        dx2[n, j] = sum_ki g[n, k] x1[n, i] W[k, i, j]
        dW[k, i, j] = sum_n g[n, k] x1[n, i] x2[n, j]
    (the bias is added by a separate Add, whose backward sums g over n).
    """

    def forward(self, x1, x2, weight, half: Any = None):
        xp = backend.get_array_module(x1)
        self.save_for_backward(x1, x2, weight)
        x1_weight = xp.einsum("ni,kij->nkj", x1, weight)                   # (N, K, J)
        if half is not None:     # half inputs (computed in float32 by the dispatch hook):
            x1_weight = x1_weight.astype(half).astype(x1.dtype)  # torch rounds between products
        return xp.einsum("nkj,nj->nk", x1_weight, x2)                       # (N, K)

    def backward(self, grad):
        x1, x2, weight = self.saved
        xp = backend.get_array_module(grad)
        grad_weight_x2 = xp.einsum("nk,kij->nij", grad, weight)             # (N, I, J)
        dx1 = xp.einsum("nij,nj->ni", grad_weight_x2, x2)
        dx2 = xp.einsum("nij,ni->nj", grad_weight_x2, x1)
        dweight = xp.einsum("nk,ni,nj->kij", grad, x1, x2)
        return dx1, dx2, dweight


def bilinear(input1: Tensor, input2: Tensor, weight: Tensor,
             bias: Optional[Tensor] = None) -> Tensor:
    """``F.bilinear(input1, input2, weight, bias=None)``: input1 (*, I), input2 (*, J) with the
    same leading dims, weight (K, I, J), bias (K,) -> (*, K)."""
    if weight.ndim != 3:
        raise RuntimeError(f"bilinear(): weight must be 3-dimensional (out_features, "
                           f"in1_features, in2_features), got shape {weight.shape}")
    if input1.ndim != input2.ndim or tuple(input1.shape[:-1]) != tuple(input2.shape[:-1]):
        raise RuntimeError(f"bilinear(): input batch dimensions do not match: got "
                           f"{tuple(input1.shape[:-1])} and {tuple(input2.shape[:-1])}")
    if input1.ndim == 0 or input1.shape[-1] != weight.shape[1]:
        raise RuntimeError(f"bilinear(): input1 size does not match weight size: got "
                           f"{input1.shape[-1] if input1.ndim else 'a 0-d input'} but expected "
                           f"{weight.shape[1]}")
    if input2.shape[-1] != weight.shape[2]:
        raise RuntimeError(f"bilinear(): input2 size does not match weight size: got "
                           f"{input2.shape[-1]} but expected {weight.shape[2]}")
    if bias is not None and tuple(bias.shape) != (weight.shape[0],):
        raise RuntimeError(f"bilinear(): bias size does not match weight size: got "
                           f"{tuple(bias.shape)} but expected ({weight.shape[0]},)")
    _check_dtypes("bilinear", *([input1, input2, weight] + ([bias] if bias is not None else [])))
    lead = tuple(input1.shape[:-1])
    out = Bilinear.apply(input1.reshape(-1, weight.shape[1]),
                         input2.reshape(-1, weight.shape[2]), weight,
                         half=input1.dtype if _is_half(input1) else None)  # (N, K)
    out = out.reshape(lead + (weight.shape[0],))                            # (*, K)
    return out if bias is None else out + bias


def _is_half(t: Tensor) -> bool:
    return t.dtype.itemsize == 2 and t.dtype.kind in "fV"     # float16 or bfloat16
