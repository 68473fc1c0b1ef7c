"""The rest of torch's activation functions: relu6, hardsigmoid, hardswish, hardshrink,
softshrink, tanhshrink, threshold, mish, celu, selu, rrelu, glu, prelu and softmin
(docs/derivations.md#more-activations).

The pointwise ones are Functions whose backward is ``dx = g * f'(x)``, with torch's choice
at each kink written in the docstring (which side a boundary point takes decides the
gradient there), each saving what torch's saves. glu, tanhshrink and softmin are
compositions of ops with their own backward (split, sigmoid, mul, tanh, sub, softmax), as
torch composes them.
"""
from __future__ import annotations

import warnings

from typing import Any, Optional

import numpy as np

from .. import backend
from ..amp.dispatch import autocast_state
from ..autograd import Function, name_node, unbroadcast
from ..tensor import Tensor
from .activations import Hardtanh
from .elementwise import _as_float, mul, neg, sub, tanh
from .pointwise import in_place_op, sigmoid, stable_sigmoid
from .products import _torch_name   # torch's C++ dtype names (float32 is 'Float')
from .shape import _normalize_dim, reshape, split
from .softmax import softmax

__all__ = ["relu6", "hardsigmoid", "hardswish", "hardshrink", "softshrink", "tanhshrink",
           "threshold", "mish", "celu", "selu", "rrelu", "glu", "prelu", "softmin"]


ONE_SIXTH = float(np.float32(1.0 / 6.0))     # torch's hardsigmoid_backward multiplies by it


class Hardsigmoid(Function):
    """out = relu6(x + 3) / 6: 0 below -3, 1 above 3, the line x / 6 + 1/2 between.
    dx = g / 6 strictly inside (-3, 3), 0 elsewhere (torch: at +-3 no gradient). x is
    saved, as torch saves it; 1/6 is torch's float32 constant, in every dtype."""

    def forward(self, x):
        xp = backend.get_array_module(x)
        self.save_for_backward(x)
        return (xp.clip(x + 3, 0, 6) / 6).astype(x.dtype)

    def backward(self, grad):
        (x,) = self.saved
        inside = (x > -3) & (x < 3)
        return backend.get_array_module(grad).where(inside, grad * ONE_SIXTH, 0) \
            .astype(grad.dtype)


class Hardswish(Function):
    """out = x * relu6(x + 3) / 6.   Below -3 it is 0 (dx = 0); above 3 it is x (dx = g);
    between, d/dx x (x + 3) / 6 = (2x + 3) / 6 = x / 3 + 1/2. torch takes the outer sides
    at the kinks: dx = 0 at -3 and g at 3."""

    def forward(self, x):
        xp = backend.get_array_module(x)
        self.save_for_backward(x)
        return (x * xp.clip(x + 3, 0, 6) / 6).astype(x.dtype)

    def backward(self, grad):
        (x,) = self.saved
        xp = backend.get_array_module(grad)
        middle = grad * (x / 3 + 0.5)
        return xp.where(x <= -3, 0, xp.where(x < 3, middle, grad)).astype(grad.dtype)


class Shrink(Function):
    """hardshrink: out = x where |x| > lambd, else 0.   softshrink: out = x - lambd above
    lambd, x + lambd below -lambd, else 0. Both are the identity or a shift outside
    [-lambd, lambd] and constant inside, so dx = g outside and 0 on the closed interval."""

    def forward(self, x, lambd: float, soft: bool):
        xp = backend.get_array_module(x)
        inside = (x >= -lambd) & (x <= lambd)
        self.save_for_backward(x, lambd)
        if soft:
            out = xp.where(inside, 0, xp.where(x > lambd, x - lambd, x + lambd))  # NaN: NaN
        else:
            out = xp.where(inside, 0, x)
        return out.astype(x.dtype)

    def backward(self, grad):
        x, lambd = self.saved
        inside = (x >= -lambd) & (x <= lambd)
        return backend.get_array_module(grad).where(inside, 0, grad).astype(grad.dtype)


class Threshold(Function):
    """out = value where x <= threshold, else x.   dx = 0 where x <= threshold, else g.

    Written as torch's test ``x <= threshold`` (not ``x > threshold``): a NaN fails both
    comparisons, so NaN stays NaN (and passes its gradient), as in torch."""

    def forward(self, x, threshold: float, value: Any):
        self.save_for_backward(x, threshold)
        return backend.get_array_module(x).where(x <= threshold, value, x).astype(x.dtype)

    def backward(self, grad):
        x, threshold = self.saved
        below = x <= threshold
        return backend.get_array_module(grad).where(below, 0, grad).astype(grad.dtype)


class Mish(Function):
    """out = x tanh(softplus(x)).   With t = tanh(softplus(x)) and softplus' = sigmoid:
    dx = g (t + x sigmoid(x) (1 - t^2))."""

    def forward(self, x):
        xp = backend.get_array_module(x)
        soft = xp.maximum(x, 0) + xp.log1p(xp.exp(-xp.abs(x)))
        self.save_for_backward(x)
        return x * xp.tanh(soft)

    def backward(self, grad):
        (x,) = self.saved
        xp = backend.get_array_module(x)
        t = xp.tanh(xp.maximum(x, 0) + xp.log1p(xp.exp(-xp.abs(x))))
        return grad * (t + x * stable_sigmoid(x) * (1 - t * t))


class Celu(Function):
    """celu: out = x for x > 0, alpha (e^(x / alpha) - 1) otherwise; dx = g for x > 0,
    g e^(x / alpha) otherwise (the chain rule's 1 / alpha cancels alpha).
    selu is the same shape with the exponent undivided and a scale: out = scale x for x > 0,
    scale alpha (e^x - 1) otherwise; dx = scale g, or scale alpha e^x g. Both as one rule:
    out = scale * (x or alpha (e^(x / d) - 1)), dx = scale g (1 or (alpha / d) e^(x / d)),
    d = alpha for celu, 1 for selu. x is saved, as torch saves it."""

    def forward(self, x, alpha: float, divisor: float, scale: float = 1.0):
        xp = backend.get_array_module(x)
        self.save_for_backward(x, alpha, divisor, scale)
        out = xp.where(x > 0, x, alpha * xp.expm1(xp.minimum(x, 0) / divisor))
        return (out * scale if scale != 1.0 else out).astype(x.dtype)

    def backward(self, grad):
        x, alpha, divisor, scale = self.saved
        xp = backend.get_array_module(grad)
        slope = (alpha / divisor) * xp.exp(xp.minimum(x, 0) / divisor)
        dx = xp.where(x > 0, grad, grad * slope)
        return (dx * scale if scale != 1.0 else dx).astype(grad.dtype)


class LeakyWithSlopes(Function):
    """rrelu: out = x for x > 0, slope * x otherwise (a slope per element in training, the
    mean slope in eval).   dx = g for x > 0, slope * g otherwise. x is saved, as torch's
    rrelu saves it."""

    def forward(self, x, slopes: Any):
        self.save_for_backward(x, slopes)
        return backend.get_array_module(x).where(x > 0, x, x * slopes).astype(x.dtype)

    def backward(self, grad):
        x, slopes = self.saved
        xp = backend.get_array_module(grad)
        return xp.where(x > 0, grad, grad * slopes).astype(grad.dtype)


class Prelu(Function):
    """out = x for x > 0, w x otherwise (w broadcast over x).   dx = g for x > 0, g w
    otherwise; dw = the sum of g x over the x <= 0 that each slope served."""

    def forward(self, x, w):
        xp = backend.get_array_module(x)
        self.save_for_backward(x, w)
        return xp.where(x > 0, x, w * x).astype(x.dtype)

    def backward(self, grad):
        x, w = self.saved
        xp = backend.get_array_module(grad)
        dx = xp.where(x > 0, grad, grad * w)
        dw = unbroadcast(xp.where(x > 0, 0, grad * x), w.shape)
        return dx.astype(x.dtype), dw.astype(w.dtype)


# ------------------------------------------------------------------ public functions
def _floating(input: Any, op: str) -> Tensor:
    if not isinstance(input, Tensor):
        raise TypeError(f"{op}(): argument 'input' must be Tensor, not {type(input).__name__}")
    return _as_float(input)


def relu6(input: Tensor, inplace: bool = False) -> Tensor:  # noqa: A002 - torch's name
    """``F.relu6``: min(max(x, 0), 6), hardtanh(x, 0, 6) (no gradient at 0 and 6, as
    torch); integer tensors stay integer."""
    if inplace:                                 # written into the input, as torch
        return in_place_op(input, "relu6", relu6)
    if not isinstance(input, Tensor):
        raise TypeError(f"relu6(): argument 'input' must be Tensor, not "
                        f"{type(input).__name__}")
    if input.dtype == np.bool_:
        raise RuntimeError("relu6: bool tensors are not supported; convert with .float()")
    if input.dtype.kind in "iu":
        return Hardtanh.apply(input, low=0, high=6)
    return Hardtanh.apply(input, low=0.0, high=6.0)


def hardsigmoid(input: Tensor, inplace: bool = False) -> Tensor:  # noqa: A002
    """``F.hardsigmoid``: relu6(x + 3) / 6."""
    if inplace:                                 # written into the input, as torch
        return in_place_op(input, "hardsigmoid", hardsigmoid)
    return Hardsigmoid.apply(_floating(input, "hardsigmoid"))


def hardswish(input: Tensor, inplace: bool = False) -> Tensor:  # noqa: A002
    """``F.hardswish``: x * relu6(x + 3) / 6."""
    if inplace:                                 # written into the input, as torch
        return in_place_op(input, "hardswish", hardswish)
    return Hardswish.apply(_floating(input, "hardswish"))


def _lambd(lambd: Any, op: str) -> float:
    value = float(lambd)
    if not value >= 0:
        raise RuntimeError(f"{op}: lambda must be greater or equal to 0, but found to be "
                           f"{lambd}.")
    return value


def hardshrink(input: Tensor, lambd: float = 0.5) -> Tensor:  # noqa: A002
    """``F.hardshrink``: x where |x| > lambd, else 0."""
    return name_node(Shrink.apply(_floating(input, "hardshrink"), lambd=float(lambd), soft=False),
                     "HardshrinkBackward0")


def softshrink(input: Tensor, lambd: float = 0.5) -> Tensor:  # noqa: A002
    """``F.softshrink``: x - lambd above lambd, x + lambd below -lambd, else 0."""
    return name_node(Shrink.apply(_floating(input, "softshrink"),
                                  lambd=_lambd(lambd, "softshrink"), soft=True),
                     "SoftshrinkBackward0")


def tanhshrink(input: Tensor) -> Tensor:  # noqa: A002
    """``F.tanhshrink``: x - tanh(x), composed as torch composes it (so a half tensor's
    tanh is rounded before the subtraction, and tanh keeps its result, not x, for backward):
    dx = g - g (1 - tanh(x)^2) = g tanh(x)^2."""
    x = _floating(input, "tanhshrink")
    return sub(x, tanh(x))


def threshold(input: Tensor, threshold: float, value: float,  # noqa: A002
              inplace: bool = False) -> Tensor:
    """``F.threshold``: x where x > threshold, else value (integer tensors stay integer)."""
    if inplace:                                 # written into the input, as torch
        level = threshold                       # the argument hides this function's name
        return in_place_op(input, "threshold", lambda t: _threshold(t, level, value))
    if not isinstance(input, Tensor):
        raise TypeError(f"threshold(): argument 'input' must be Tensor, not "
                        f"{type(input).__name__}")
    x = input if input.dtype.kind in "iu" else _as_float(input)
    return Threshold.apply(x, threshold=threshold, value=value)


_threshold = threshold


def mish(input: Tensor, inplace: bool = False) -> Tensor:  # noqa: A002
    """``F.mish``: x * tanh(softplus(x))."""
    if inplace:                                 # written into the input, as torch
        return in_place_op(input, "mish", mish)
    return Mish.apply(_floating(input, "mish"))


def celu(input: Tensor, alpha: float = 1.0, inplace: bool = False) -> Tensor:  # noqa: A002
    """``F.celu``: x for x > 0, alpha * (exp(x / alpha) - 1) otherwise."""
    if inplace:                                 # written into the input, as torch
        return in_place_op(input, "celu", lambda t: celu(t, alpha))
    if float(alpha) == 0:
        raise RuntimeError("ZeroDivisionError: celu: alpha must not be 0")
    return Celu.apply(_floating(input, "celu"), alpha=float(alpha), divisor=float(alpha))


SELU_ALPHA = 1.6732632423543772848170429916717
SELU_SCALE = 1.0507009873554804934193349852946


def selu(input: Tensor, inplace: bool = False) -> Tensor:  # noqa: A002
    """``F.selu``: scale * elu(x, alpha) with torch's constants (alpha ~ 1.6733, scale ~
    1.0507): celu's Function with the exponent's divisor 1 and torch's scale."""
    if inplace:                                 # written into the input, as torch
        return in_place_op(input, "selu", selu)
    return name_node(Celu.apply(_floating(input, "selu"), alpha=SELU_ALPHA, divisor=1.0,
                                scale=SELU_SCALE), "EluBackward0")     # torch's selu is an elu


def rrelu(input: Tensor, lower: float = 1.0 / 8, upper: float = 1.0 / 3,  # noqa: A002
          training: bool = False, inplace: bool = False, generator: Any = None) -> Tensor:
    """``F.rrelu``: leaky_relu whose negative slope is drawn uniformly from [lower, upper]
    for each element in training; in eval (the default) the fixed slope (lower + upper) / 2."""
    if inplace:                                 # written into the input, as torch
        return in_place_op(input, "rrelu",
                           lambda t: rrelu(t, lower, upper, training, generator=generator))
    x = _floating(input, "rrelu")
    if float(lower) > float(upper):
        raise RuntimeError(f"Lower bound should be less than or equal to the upper bound, "
                           f"got lower={lower}, upper={upper}")
    xp = backend.get_array_module(x._data)
    if not training:
        slopes = xp.asarray((float(lower) + float(upper)) / 2, dtype=x.dtype)
    else:
        draws = backend.uniform(x.shape, backend.device_of(x._data), x.dtype, generator)
        slopes = (float(lower) + draws * (float(upper) - float(lower))).astype(x.dtype)
    return name_node(LeakyWithSlopes.apply(x, slopes=slopes), "RreluWithNoiseBackward0")


def glu(input: Tensor, dim: int = -1) -> Tensor:  # noqa: A002
    """``F.glu``: a * sigmoid(b), a and b the two halves of input along ``dim``."""
    if not isinstance(input, Tensor):
        raise TypeError(f"glu(): argument 'input' must be Tensor, not {type(input).__name__}")
    if input.ndim == 0:
        raise RuntimeError("glu does not support scalars because halving size must be even")
    axis = _normalize_dim(int(dim), input.ndim, "glu")
    size = input.shape[axis]
    if size % 2:
        raise RuntimeError(f"Halving dimension must be even, but dimension {axis} is size "
                           f"{size}")
    first, second = split(_as_float(input), size // 2, axis)
    return name_node(mul(first, sigmoid(second)), "GluBackward0")


def prelu(input: Tensor, weight: Tensor) -> Tensor:  # noqa: A002
    """``F.prelu``: x where x > 0, weight * x elsewhere; weight holds one slope, or one per
    channel (dim 1 of input). Built of where and mul: dx = g or g * w, dw = sum of g * x
    over the non-positive x of its channel."""
    if not isinstance(input, Tensor) or not isinstance(weight, Tensor):
        raise TypeError("prelu(): input and weight must be Tensors")
    if input.dtype != weight.dtype and \
            str(input.device).split(":")[0] not in autocast_state.dtypes:  # autocast casts both
        raise RuntimeError(f"prelu: Type promoting not supported. Got {_torch_name(input.dtype)} "
                           f"and {_torch_name(weight.dtype)} (as torch); convert the input or "
                           f"the weight so both have one dtype (e.g. x.float() for "
                           f"nn.PReLU's float32 weight)")
    channels = input.shape[1] if input.ndim >= 2 else 1
    if weight.ndim > 1:
        raise RuntimeError(f"prelu: Expected `weight` to be a scalar or 1D tensor, but got: "
                           f"ndim = {weight.ndim}")
    if weight.numel() not in (1, channels):
        raise RuntimeError(f"Mismatch of parameter numbers and input channel size. Found "
                           f"parameter numbers = {weight.numel()} and channel size = "
                           f"{channels}.")
    w = weight
    if input.ndim >= 2 and weight.numel() == channels and weight.ndim == 1:
        w = reshape(weight, (channels,) + (1,) * (input.ndim - 2))
    elif weight.ndim == 1 and input.ndim == 0:
        w = reshape(weight, ())
    return Prelu.apply(_as_float(input), w)


def softmin(input: Tensor, dim: Optional[int] = None, _stacklevel: int = 3,  # noqa: A002
            dtype: Any = None) -> Tensor:
    """``F.softmin``: softmax(-x) along ``dim`` (with ``dtype``: -x converted, as torch)."""
    if not isinstance(input, Tensor):
        raise TypeError(f"softmin(): argument 'input' must be Tensor, not "
                        f"{type(input).__name__}")
    if dim is None:
        warnings.warn("Implicit dimension choice for softmin has been deprecated. Change the "
                      "call to include dim=X as an argument.", UserWarning, stacklevel=2)
        dim = 0 if input.ndim in (0, 1, 3) else 1          # torch's legacy choice
    negated = neg(input)       # torch negates in the input's dtype, then converts: an
    if dtype is not None:      # unsigned input wraps (uint8 200 -> 56), as torch's does
        negated = negated.to(dtype)
    return softmax(negated, dim)
