"""Layer normalisation, fused (docs/derivations.md#layer-norm)."""
from __future__ import annotations

from typing import Optional, Sequence, Union

from .. import backend
from ..autograd import Function
from ..tensor import Tensor
from .elementwise import convert, half_as_float32

__all__ = ["layer_norm"]


class LayerNorm(Function):
    """Normalise over the last dims (N elements each), then scale and shift.

        mu = mean(x),  var = mean((x - mu)^2),  rstd = 1 / sqrt(var + eps)
        xhat = (x - mu) * rstd,   out = xhat * w + b

    Backward (mean over the N normalised elements; the forward caches xhat and rstd):
        dxhat = g * w
        dx = rstd * (dxhat - mean(dxhat) - xhat * mean(dxhat * xhat))
        dw = sum over the other dims of g * xhat,   db = sum of g
    The two means are the paths through mu and through var; each is one line of the chain rule.
    """

    def forward(self, x, *affine, axes, eps: float, has_weight: bool, has_bias: bool):
        xp = backend.get_array_module(x)
        mu = x.mean(axis=axes, keepdims=True)
        xhat = x - mu                           # centred; normalised in place below
        buffer = xp.multiply(xhat, xhat)        # (x - mu)^2, then reused for the output
        var = buffer.mean(axis=axes, keepdims=True)
        rstd = 1 / xp.sqrt(var + eps)
        xhat *= rstd
        weight = affine[0] if has_weight else None
        bias = affine[-1] if has_bias else None
        self.save_for_backward(xhat, rstd, weight, axes, has_bias)
        out = xp.multiply(xhat, weight, out=buffer) if has_weight else xhat.copy()
        if has_bias:
            out += bias
        return out

    def backward(self, grad):
        xhat, rstd, weight, axes, has_bias = self.saved
        xp = backend.get_array_module(grad)
        batch_axes = tuple(range(grad.ndim - len(axes)))
        grads = [None]
        scratch = xp.multiply(grad, xhat)       # g * xhat: dw, then reused twice below
        if weight is not None:
            grads.append(scratch.sum(axis=batch_axes) if self.needs_input_grad[1] else None)
        if has_bias:
            grads.append(grad.sum(axis=batch_axes) if self.needs_input_grad[-1] else None)
        if self.needs_input_grad[0]:
            # dx = rstd * (dxhat - mean(dxhat) - xhat * mean(dxhat * xhat)), in two buffers
            dx = grad * weight if weight is not None else grad.copy()      # dxhat
            mean_dxhat_xhat = xp.multiply(dx, xhat, out=scratch).mean(axis=axes, keepdims=True)
            dx -= dx.mean(axis=axes, keepdims=True)
            dx -= xp.multiply(xhat, mean_dxhat_xhat, out=scratch)
            dx *= rstd
            grads[0] = dx
        return tuple(grads)


def layer_norm(x: Tensor, normalized_shape: Union[int, Sequence[int]],
               weight: Optional[Tensor] = None, bias: Optional[Tensor] = None,
               eps: float = 1e-5) -> Tensor:
    """PyTorch's ``F.layer_norm``: normalise over the trailing ``normalized_shape`` dims."""
    shape = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
    if tuple(x.shape[x.ndim - len(shape):]) != shape or len(shape) > x.ndim:
        raise ValueError(f"layer_norm: normalized_shape {shape} must equal the last dims of the "
                         f"input, whose shape is {x.shape}")
    for name, param in (("weight", weight), ("bias", bias)):
        if param is not None and tuple(param.shape) != shape:
            raise ValueError(f"layer_norm: {name} has shape {param.shape}, expected {shape}")
    axes = tuple(range(x.ndim - len(shape), x.ndim))
    affine = [half_as_float32(p) for p in (weight, bias) if p is not None]
    out = LayerNorm.apply(half_as_float32(x), *affine, axes=axes, eps=float(eps),
                          has_weight=weight is not None, has_bias=bias is not None)
    return convert(out, dtype=x.dtype)      # float16 is normalised in float32, as PyTorch
