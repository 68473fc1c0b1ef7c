"""Group normalisation, fused: PyTorch's ``F.group_norm`` (docs/derivations.md#group-norm).

Input (N, C, *): the C channels are split into G groups of C / G; each (sample, group) is
normalised with its own mean and biased variance over its C / G * (spatial) elements, then
every channel is scaled and shifted by its own weight and bias. No running statistics: it
behaves the same in training and evaluation (and with a batch of one).
"""
from __future__ import annotations

from typing import Optional

import numpy as np

from .. import backend
from ..autograd import Function
from ..precision import is_floating
from ..tensor import Tensor

__all__ = ["group_norm"]


class GroupNorm(Function):
    """With x viewed as (N, G, M), M = C / G * spatial, statistics over M:
        xhat = (x - mean) * rstd,   rstd = 1 / sqrt(var + eps),   out = xhat * w[c] + b[c]
    Layer norm's derivation per (sample, group), with g_hat = g * w[c]:
        dx = (rstd / M) * (M * g_hat - sum_M(g_hat) - xhat * sum_M(g_hat * xhat))
        dw[c] = sum of g * xhat over N and the spatial positions;  db[c] = sum of g.
    """

    def forward(self, x, *affine, groups: int, eps: float, has_weight: bool, has_bias: bool):
        xp = backend.get_array_module(x)
        dtype = x.dtype
        work = x.astype(np.float32, copy=False) if dtype.itemsize < 4 else x
        n, c = x.shape[:2]
        per_group = x.size // max(n * groups, 1)
        rows = work.reshape(n, groups, per_group)               # (N, C, *) -> (N, G, M)
        mean = rows.mean(axis=-1, keepdims=True)
        var = ((rows - mean) ** 2).mean(axis=-1, keepdims=True)
        rstd = 1 / xp.sqrt(var + eps)
        xhat = ((rows - mean) * rstd).reshape(x.shape)          # (N, C, *)
        channel = (1, c) + (1,) * (x.ndim - 2)
        weight = affine[0].astype(work.dtype).reshape(channel) if has_weight else None
        out = xhat * weight if has_weight else xhat.copy()
        if has_bias:
            out += affine[-1].astype(work.dtype).reshape(channel)
        # x and weight are saved as torch saves them (their versions are checked)
        self.save_for_backward(x, affine[0] if has_weight else None, xhat, rstd, weight,
                               groups, has_bias, dtype)
        return out.astype(dtype, copy=False)

    def backward(self, grad):
        _, _, xhat, rstd, weight, groups, has_bias, dtype = self.saved
        g = grad.astype(xhat.dtype, copy=False)
        axes = (0,) + tuple(range(2, g.ndim))               # every axis but the channel
        grads = [None]
        if weight is not None:
            grads.append((g * xhat).sum(axis=axes).astype(dtype) if self.needs_input_grad[1]
                         else None)
        if has_bias:
            grads.append(g.sum(axis=axes).astype(dtype) if self.needs_input_grad[-1] else None)
        if self.needs_input_grad[0]:
            n = g.shape[0]
            per_group = g.size // max(n * groups, 1)
            g_hat = (g * weight if weight is not None else g).reshape(n, groups, per_group)
            xh = xhat.reshape(n, groups, per_group)             # (N, G, M)
            m = xh.shape[-1]
            dx = m * g_hat - g_hat.sum(axis=-1, keepdims=True)
            dx -= xh * (g_hat * xh).sum(axis=-1, keepdims=True)
            dx *= rstd / m
            grads[0] = dx.reshape(g.shape).astype(dtype, copy=False)
        return tuple(grads)


def group_norm(input: Tensor, num_groups: int,  # noqa: A002 - torch's names
               weight: Optional[Tensor] = None, bias: Optional[Tensor] = None,
               eps: float = 1e-5) -> Tensor:
    """``F.group_norm``: input (N, C, *) with C divisible by num_groups; weight and bias
    (C,) per channel."""
    if input.ndim < 2:
        raise RuntimeError(f"group_norm: expected an input of at least 2 dims (N, C, *), got "
                           f"shape {input.shape}")
    if not is_floating(input.dtype):
        raise RuntimeError(f"group_norm: not implemented for {input.dtype}; convert with "
                           f".float()")
    channels = input.shape[1]
    if isinstance(num_groups, bool) or not isinstance(num_groups, (int, np.integer)) \
            or num_groups <= 0 or channels % num_groups:
        raise RuntimeError(f"Expected number of channels in input to be divisible by "
                           f"num_groups, but got input of shape {list(input.shape)} and "
                           f"num_groups={num_groups}")
    for name, t in (("weight", weight), ("bias", bias)):
        if t is not None and (t.ndim != 1 or t.shape[0] != channels):
            raise RuntimeError(f"Expected {name} to be a vector of size equal to the number "
                               f"of channels in input, but got {name} of shape "
                               f"{list(t.shape)} and input of shape {list(input.shape)}")
    affine = [t for t in (weight, bias) if t is not None]
    return GroupNorm.apply(input, *affine, groups=int(num_groups), eps=float(eps),
                           has_weight=weight is not None, has_bias=bias is not None)
