"""Every differentiable op of tinyattn, and the Tensor methods that call them.

Each op lives in one module of this package as a ``Function`` subclass (forward and backward
side by side) plus a public function with PyTorch's signature. The block at the bottom attaches
the Tensor methods and operators, one explicit line each, so ``grep "Tensor.softmax"`` finds
where ``x.softmax(-1)`` comes from.
"""
from __future__ import annotations

from ..tensor import Tensor
from .attention import scaled_dot_product_attention
from .compat import allclose, equal, mm
from .dropout import dropout
from .elementwise import (add, clamp, clone, convert, div, exp, gelu, log, mul, neg, pow, relu,
                          rpow, sqrt, sub, tanh)
from .interleave import repeat_interleave
from .inplace import (add_, clamp_, copy_, div_, fill_, iadd, imul, isub, itruediv, masked_fill_,
                      mul_, neg_, normal_, pow_, setitem, sub_, uniform_, zero_)
from .embedding import embedding
from .loss import cross_entropy
from .masking import masked_fill, where
from .matmul import linear, matmul
from .norm import layer_norm
from .reduce import amax, max, mean, sum
from .rope import rope
from .shape import (cat, chunk, concat, flatten, getitem, permute, reshape, split, squeeze,
                    stack, swapaxes, transpose, unsqueeze)
from .softmax import log_softmax, softmax
from .trig import cos, sin

__all__ = [
    "add", "sub", "mul", "div", "neg", "pow", "rpow", "exp", "log", "sqrt", "tanh", "relu",
    "gelu",
    "convert", "sum", "mean", "amax", "max", "reshape", "permute", "transpose", "swapaxes",
    "unsqueeze", "squeeze", "flatten", "getitem", "cat", "concat", "stack", "split", "chunk",
    "matmul", "linear", "softmax", "log_softmax", "masked_fill", "where", "layer_norm",
    "dropout", "embedding", "cross_entropy", "scaled_dot_product_attention", "rope", "clone",
    "clamp", "add_", "sub_", "mul_", "div_", "pow_", "neg_", "clamp_", "masked_fill_", "zero_",
    "fill_", "copy_", "uniform_", "normal_", "setitem", "sin", "cos",
    "repeat_interleave", "mm", "equal", "allclose",
]


def _reflected(fn):
    def method(self, other):
        return fn(other, self)
    return method


# Operators.
Tensor.__add__ = add
Tensor.__radd__ = _reflected(add)
Tensor.__sub__ = sub
Tensor.__rsub__ = _reflected(sub)
Tensor.__mul__ = mul
Tensor.__rmul__ = _reflected(mul)
Tensor.__truediv__ = div
Tensor.__rtruediv__ = _reflected(div)
Tensor.__neg__ = neg
Tensor.__pow__ = pow
Tensor.__rpow__ = rpow
Tensor.__matmul__ = matmul
Tensor.__rmatmul__ = _reflected(matmul)
Tensor.__getitem__ = getitem
Tensor.__setitem__ = setitem
Tensor.__iadd__ = iadd
Tensor.__isub__ = isub
Tensor.__imul__ = imul
Tensor.__itruediv__ = itruediv

# Methods, named as in PyTorch.
Tensor.add = add
Tensor.sub = sub
Tensor.mul = mul
Tensor.div = div
Tensor.neg = neg
Tensor.exp = exp
Tensor.log = log
Tensor.sqrt = sqrt
Tensor.tanh = tanh
Tensor.sin = sin
Tensor.cos = cos
Tensor.repeat_interleave = repeat_interleave
Tensor.mm = mm
Tensor.equal = equal
Tensor.allclose = allclose
Tensor.relu = relu
Tensor.pow = pow
Tensor.sum = sum
Tensor.mean = mean
Tensor.amax = amax
Tensor.max = max
Tensor.reshape = reshape
Tensor.view = reshape
Tensor.permute = permute
Tensor.transpose = transpose
Tensor.swapaxes = swapaxes
Tensor.unsqueeze = unsqueeze
Tensor.squeeze = squeeze
Tensor.flatten = flatten
Tensor.split = split
Tensor.chunk = chunk
Tensor.matmul = matmul
Tensor.softmax = softmax
Tensor.log_softmax = log_softmax
Tensor.masked_fill = masked_fill
Tensor.clone = clone
Tensor.clamp = clamp
Tensor.clip = clamp

# In-place methods (ops/inplace.py): each counts a version.
Tensor.add_ = add_
Tensor.sub_ = sub_
Tensor.mul_ = mul_
Tensor.div_ = div_
Tensor.pow_ = pow_
Tensor.neg_ = neg_
Tensor.clamp_ = clamp_
Tensor.clip_ = clamp_
Tensor.masked_fill_ = masked_fill_
Tensor.zero_ = zero_
Tensor.fill_ = fill_
Tensor.copy_ = copy_
Tensor.uniform_ = uniform_
Tensor.normal_ = normal_
