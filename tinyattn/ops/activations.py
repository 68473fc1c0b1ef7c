"""More of ``torch.nn.functional``: the activations logsigmoid, elu, hardtanh and softsign,
and the normalisers normalize and cosine_similarity
(docs/derivations.md#activations-normalize-and-cosine-similarity).

The four activations are Functions (``dx = g * f'(x)``, as in pointwise.py); normalize and
cosine_similarity are compositions of norm, clamp, div and sum, written the way PyTorch
writes them so that their values and gradients match it even where an eps takes effect.
"""
from __future__ import annotations

from typing import Any, Tuple

import numpy as np

from .. import backend
from ..autograd import Function
from ..tensor import Tensor
from .elementwise import _as_float, add, clamp, div, mul, sub
from .layout import expand
from .pointwise import in_place_op, stable_sigmoid
from .reduce import sum as _sum
from .stats import norm
from ..precision import is_floating

__all__ = ["logsigmoid", "elu", "hardtanh", "softsign", "normalize", "cosine_similarity"]


class LogSigmoid(Function):
    """out = log sigmoid(x) = -log(1 + e^-x), computed as min(x, 0) - log(1 + e^-|x|) (no
    exp overflows).   d/dx -log(1 + e^-x) = e^-x / (1 + e^-x) = sigmoid(-x):
    dx = g * sigmoid(-x)."""

    def forward(self, x):
        xp = backend.get_array_module(x)
        self.save_for_backward(x)
        return xp.minimum(x, 0) - xp.log1p(xp.exp(-xp.abs(x)))

    def backward(self, grad):
        (x,) = self.saved
        return grad * stable_sigmoid(-x)


class Elu(Function):
    """out = x for x > 0, alpha (e^x - 1) otherwise.
    dx = g for x > 0, g * alpha e^x otherwise (at 0 the second, as PyTorch; at NaN the
    first, so g passes unchanged, also as PyTorch). alpha e^x equals out + alpha, but for
    very negative x that sum cancels (out is -alpha to every digit), so e^x is kept."""

    versions_checked = (0,)    # what torch saves: changed in place, backward raises

    def forward(self, x, alpha: float):
        xp = backend.get_array_module(x)
        positive = ~(x <= 0)                    # NaN counts as positive, as PyTorch
        below = xp.minimum(x, 0)
        out = xp.where(positive, x, alpha * xp.expm1(below))
        self.save_for_backward(positive, xp.exp(below), alpha)
        return out

    def backward(self, grad):
        positive, exp_below, alpha = self.saved
        return backend.get_array_module(grad).where(positive, grad, grad * alpha * exp_below)


class Hardtanh(Function):
    """out = x clipped to [low, high].   dx = g strictly inside (low, high), 0 elsewhere:
    at the bounds themselves PyTorch's hardtanh passes no gradient (clamp passes it). A NaN
    is neither <= low nor >= high, so it passes g, as in PyTorch."""

    versions_checked = (0,)    # what torch saves: changed in place, backward raises

    def forward(self, x, low: float, high: float):
        self.save_for_backward(x, low, high)      # x itself, as torch's hardtanh saves it
        return backend.get_array_module(x).clip(x, low, high)

    def backward(self, grad):
        x, low, high = self.saved
        inside = ~((x <= low) | (x >= high))       # NaN passes g, as PyTorch
        # where, not grad * mask: inf * 0 would be NaN (PyTorch: 0)
        return backend.get_array_module(grad).where(inside, grad, 0)


class Softsign(Function):
    """out = x / (1 + |x|).   Quotient rule (d|x|/dx = sign x, and |x| - x sign x = 0):
    f'(x) = ((1 + |x|) - x sign x) / (1 + |x|)^2 = 1 / (1 + |x|)^2."""

    versions_checked = (0,)     # what torch saves: changed in place, backward raises

    def forward(self, x):
        denominator = 1 + backend.get_array_module(x).abs(x)
        self.save_for_backward(denominator)
        return x / denominator

    def backward(self, grad):
        (denominator,) = self.saved
        return grad / (denominator * denominator)


# ------------------------------------------------------------------ public functions
def logsigmoid(input: Tensor) -> Tensor:  # noqa: A002 - PyTorch's name
    """log(sigmoid(x)), finite for any x (-1000 gives -1000, not -inf)."""
    return LogSigmoid.apply(_as_float(input))


def elu(input: Tensor, alpha: float = 1.0, inplace: bool = False) -> Tensor:  # noqa: A002
    """x for x > 0, alpha * (exp(x) - 1) otherwise (``F.elu``)."""
    if inplace:
        return in_place_op(input, "elu", lambda t: elu(t, alpha))
    return Elu.apply(_as_float(input), alpha=float(alpha))


def hardtanh(input: Tensor, min_val: float = -1.0, max_val: float = 1.0,  # noqa: A002
             inplace: bool = False) -> Tensor:
    """x clipped to [min_val, max_val] (``F.hardtanh``); no gradient at the bounds."""
    if inplace:
        return in_place_op(input, "hardtanh", lambda t: hardtanh(t, min_val, max_val))
    if float(min_val) > float(max_val):
        raise ValueError(f"hardtanh: min_val ({min_val}) must not exceed max_val ({max_val})")
    if input.dtype == np.bool_:
        raise RuntimeError("Bool inputs not supported for hardtanh (as torch); convert the "
                           "tensor with .float() or .long() first")
    if input.dtype.kind in "iu":        # ints stay ints; torch truncates the bounds to ints
        low, high = _integer_bounds(input.dtype, min_val, max_val)
        return Hardtanh.apply(input, low=low, high=high)
    return Hardtanh.apply(_as_float(input), low=float(min_val), high=float(max_val))


def _integer_bounds(dtype: np.dtype, min_val: float, max_val: float) -> Tuple[int, int]:
    """hardtanh's bounds for an integer tensor as torch converts them: truncated toward zero
    (-0.5 -> 0, 3.9 -> 3), refused when they do not fit the dtype or are negative for
    uint8."""
    low, high = int(min_val), int(max_val)
    if dtype.kind == "u" and (low < 0 or high < 0):
        raise RuntimeError(f"cannot do hardtanh on an unsigned type with negative limits "
                           f"(got min_val={min_val}, max_val={max_val} for {dtype}); give "
                           f"bounds >= 0 or convert the tensor to a signed dtype")
    info = np.iinfo(dtype)
    for bound in (low, high):
        if not info.min <= bound <= info.max:
            raise RuntimeError(f"value cannot be converted to type {dtype}_t without overflow: "
                               f"hardtanh's bound {bound} is outside {dtype}'s range "
                               f"[{info.min}, {info.max}]")
    return low, high


def softsign(input: Tensor) -> Tensor:  # noqa: A002
    """x / (1 + |x|) (``F.softsign``). An integer tensor's ``1 + |x|`` is computed in its
    own dtype first, wrapping as torch's does (int8 -128 gives -128 / -127, uint8 255 gives
    255 / 0 = inf), then divided in float32."""
    if isinstance(input, Tensor) and input.dtype.kind in "iu":
        xp = backend.get_array_module(input._data)
        with np.errstate(over="ignore"):
            denominator = (xp.abs(input._data) + input._data.dtype.type(1)).astype(np.float32)
        with np.errstate(divide="ignore", invalid="ignore"):
            return Tensor._wrap(input._data.astype(np.float32) / denominator)
    return Softsign.apply(_as_float(input))


def _float(t: Any, op: str, name: str) -> Tensor:
    if not isinstance(t, Tensor):
        raise TypeError(f"{op}: {name} must be a Tensor, got {type(t).__name__}")
    if not is_floating(t.dtype):
        raise TypeError(f"{op}: {name} must be a floating-point tensor, got {t.dtype} (as "
                        f"PyTorch); convert with .float()")
    return t


def normalize(input: Tensor, p: float = 2.0, dim: int = 1, eps: float = 1e-12,  # noqa: A002
              out: Any = None) -> Tensor:
    """x / max(||x||_p, eps) along ``dim`` (``F.normalize``). Composed as PyTorch composes
    it, ``x / norm(x, p, dim, keepdim=True).clamp(min=eps)``, so the gradient flows through
    the norm where it is above eps and only through the numerator where it is not."""
    if out is not None:
        raise ValueError("normalize: out= is not supported in tinyattn; use the return value")
    _float(input, "normalize", "input")
    if input.ndim == 0:             # torch: a 0-d tensor is normalised as one element
        if not -1 <= dim <= 0:
            raise IndexError(f"normalize: dim {dim} is out of range for a 0-d tensor "
                             f"(valid: -1 to 0)")
        return normalize(input.reshape(1), p, 0, eps).reshape(())
    return div(input, clamp(norm(input, p, dim=dim, keepdim=True), min=eps))


def _clamped_norm(x: Tensor, dim: int, eps: float) -> Tensor:
    """||x|| along dim (keepdim), raised to eps where smaller, the way PyTorch does it: the
    raise happens under no_grad, so the gradient passes as if it had not happened
    (d clamped / d norm = 1). Written as norm + (max(norm, eps) - norm) with the bracket a
    constant."""
    n = norm(x, 2, dim=dim, keepdim=True)
    raw = n.detach()
    return add(n, sub(clamp(raw, min=eps), raw))


def cosine_similarity(x1: Tensor, x2: Tensor, dim: int = 1, eps: float = 1e-8) -> Tensor:
    """sum(x1 * x2) / (max(||x1||, eps) * max(||x2||, eps)) along ``dim``, after
    broadcasting x1 and x2 (``F.cosine_similarity``). Computed as PyTorch computes it,
    sum((x1 / ||x1||) * (x2 / ||x2||)), which keeps the result within [-1, 1]; composed of
    norm, div, mul and sum."""
    _float(x1, "cosine_similarity", "x1")
    _float(x2, "cosine_similarity", "x2")
    try:
        shape = tuple(np.broadcast_shapes(x1.shape, x2.shape))
    except ValueError:
        raise RuntimeError(f"cosine_similarity: shapes {x1.shape} and {x2.shape} do not "
                           f"broadcast") from None
    rank = max(len(shape), 1)       # torch: 0-d inputs are one element along dim 0 or -1
    if not -rank <= dim < rank:
        raise IndexError(f"cosine_similarity: dim {dim} is out of range for {len(shape)}-d "
                         f"inputs (valid: {-rank} to {rank - 1})")
    if not shape:
        return cosine_similarity(x1.reshape(1), x2.reshape(1), 0, eps).reshape(())
    x1 = expand(x1, shape) if x1.shape != shape else x1
    x2 = expand(x2, shape) if x2.shape != shape else x2
    return _sum(mul(div(x1, _clamped_norm(x1, dim, eps)), div(x2, _clamped_norm(x2, dim, eps))),
                dim=dim)
