"""Every differentiable op of tinyattn, and the Tensor methods that call them.

Each op lives in one module of this package as a ``Function`` subclass (forward and backward
side by side) plus a public function with PyTorch's signature. The block at the bottom attaches
the Tensor methods and operators, one explicit line each, so ``grep "Tensor.softmax"`` finds
where ``x.softmax(-1)`` comes from.
"""
from __future__ import annotations

import functools
from typing import Any

import numpy as np

from .. import factories
from ..autograd import name_node as _name_node
from ..precision import is_floating as _is_floating
from ..tensor import Tensor
from .activations import cosine_similarity, elu, hardtanh, logsigmoid, normalize, softsign
from .attention import scaled_dot_product_attention
from .batch_norm import batch_norm
from .compat import allclose, detach_, equal, mm, spmm
from .compare import argmax, argmin, max, maximum, min, minimum, sort, topk
from .dropout import dropout
from .einsum import einsum
from .grids import diag, meshgrid, unique
from .elementwise import (add, clone, convert, div, exp, gelu, log, mul, neg, pow, relu,
                          rpow, sqrt, sub, tanh)
from .elementwise import Add, Div, Mul, Sub, binary_operator
from .embedding import embedding
from .indexing import gather, one_hot
from .interleave import repeat_interleave
from .inplace import (add_, clamp_, copy_, div_, fill_, floor_divide_, fmod_, iadd, ifloordiv,
                      imod, imul, ipow, isub, itruediv, masked_fill_, mul_, neg_, normal_, pow_,
                      remainder_, setitem, sub_, uniform_, zero_)
from .layout import (T, contiguous, expand, expand_as, flip, mT, repeat, t, tril, triu, type_as,
                     view)
from .logic import (all, any, argsort, count_nonzero, eq, ge, gt, isclose, le, logical_and,
                    logical_not, logical_or, logical_xor, lt, ne, nonzero, numel)
from .loss import cross_entropy
from .masking import masked_fill, where
from .nll import nll_loss
from .matmul import bmm, linear, matmul
from .norm import layer_norm, rms_norm
from .pad import pad
from .products import addmm, cumprod, dot, lerp, mv, outer
from .division import divide, floor_divide, fmod, remainder
from .clamp_bounds import clamp                 # number bounds, and tensor bounds (torch's)
from .pointwise import abs, leaky_relu, log2, log10, rsqrt, sigmoid, silu, softplus
from .pointwise_loss import (binary_cross_entropy, binary_cross_entropy_with_logits, l1_loss,
                             mse_loss)
from .rearrange import (diagonal, index_select, movedim, narrow, reshape_as, roll, swapdims,
                        tile, trace, unbind, unflatten, view_as)
from .reduce import amax, amin, cumsum, mean, prod, sum
from .robust_loss import huber_loss, kl_div, smooth_l1_loss
from .rope import rope
from .scatter import index_add, index_add_, scatter, scatter_, scatter_add, scatter_add_
from .rounding import (ceil, expm1, floor, isfinite, isinf, isnan, log1p, nan_to_num, reciprocal,
                       round, sgn, sign, square, trunc)
from .shape import (cat, chunk, concat, flatten, getitem, permute, reshape, split, squeeze,
                    stack, swapaxes, transpose, unsqueeze)
from .softmax import log_softmax, softmax
from .stats import logsumexp, norm, std, var
from .trig import cos, sin
from .torch_keywords import unwrapped as _op
from .torch_keywords import with_torch_keywords as _kw
from .torch_keywords import out_apart, out_same_dtype, stable_keyword_only
from .hyperbolic import cosh, exp2, sinh
from .normal_sample import normal
from .inverse_trig import acos, asin, atan, atan2, tan
from .rounding import isneginf, isposinf, signbit
from .histogram import histogram
from .inplace_unary import UNARY_IN_PLACE, lerp_
from .scatter_reduce import (bincount, index_fill, index_fill_, scatter_reduce,
                             scatter_reduce_)
from .index_writes import block_diag
from .flat_index import (index_reduce, index_reduce_, nonzero_static, put, put_, take,
                         unravel_index)
from .index_writes import (select_scatter, slice_scatter, diagonal_scatter, diag_embed, index_copy,
                           index_copy_, index_put, index_put_, masked_scatter, masked_scatter_)
from .picks import masked_select, take_along_dim, unfold
from .complex_numbers import (angle, complex, conj, conj_physical, imag, polar, real,
                              view_as_complex, view_as_real)
from .more_activations import (relu6, hardsigmoid, hardswish, hardshrink, softshrink, tanhshrink,
                               threshold, mish, celu, selu, rrelu, glu, prelu, softmin)
from .search import (searchsorted, bucketize, isin, histc, argwhere, unique_consecutive,
                     triu_indices, tril_indices, bernoulli, bernoulli_)
from .view_copies import (expand_copy, diagonal_copy, alias_copy, view_copy, permute_copy,
                          split_with_sizes_copy, unbind_copy, unfold_copy, squeeze_copy,
                          unsqueeze_copy, transpose_copy, t_copy, ravel, positive, msort, H, mH,
                          adjoint, sum_to_size, renorm, renorm_)
from .structure import (broadcast_shapes, broadcast_to, broadcast_tensors, atleast_1d, atleast_2d,
                        atleast_3d, hstack, vstack, dstack, column_stack, row_stack, tensor_split,
                        hsplit, vsplit, dsplit, split_with_sizes, unsafe_split, unsafe_chunk,
                        select, narrow_copy, fliplr, flipud, rot90, cartesian_prod, combinations,
                        diagflat)

__all__ = [
    "add", "sub", "mul", "div", "neg", "pow", "rpow", "exp", "log", "sqrt", "tanh", "relu",
    "gelu",
    "convert", "sum", "mean", "amax", "max", "reshape", "permute", "transpose", "swapaxes",
    "unsqueeze", "squeeze", "flatten", "getitem", "cat", "concat", "stack", "split", "chunk",
    "matmul", "linear", "softmax", "log_softmax", "masked_fill", "where", "layer_norm", "rms_norm",
    "dropout", "embedding", "cross_entropy", "scaled_dot_product_attention", "rope", "clone",
    "clamp", "add_", "sub_", "mul_", "div_", "pow_", "neg_", "clamp_", "masked_fill_", "zero_",
    "remainder_", "fmod_", "floor_divide_",
    "fill_", "copy_", "uniform_", "normal_", "setitem",
    # PyTorch's pointwise, comparison, logic, indexing and product ops
    "sigmoid", "abs", "rsqrt", "log2", "log10", "remainder", "fmod", "floor_divide",
    "leaky_relu", "silu", "softplus", "maximum", "minimum", "min",
    "amin", "argmax", "argmin", "sort", "topk", "gather", "one_hot", "var", "std",
    "logsumexp", "norm", "prod", "cumsum", "expand", "expand_as", "repeat", "flip", "tril",
    "triu", "T", "mT", "t", "view", "contiguous", "type_as", "pad", "einsum", "bmm",
    "mse_loss", "l1_loss", "binary_cross_entropy", "binary_cross_entropy_with_logits",
    "nll_loss",
    # ops the PyTorch tutorials need (examples/pytorch/)
    "sin", "cos", "repeat_interleave", "mm", "spmm", "equal", "allclose",
    # rounding, division, rearranging and activation ops
    "square", "reciprocal", "log1p", "expm1", "sign", "sgn", "floor", "ceil", "round", "trunc",
    "isnan", "isinf", "isfinite", "nan_to_num",
    "eq", "ne", "lt", "le", "gt", "ge", "logical_and", "logical_or", "logical_xor",
    "logical_not", "isclose", "count_nonzero", "nonzero", "argsort", "any", "all", "numel",
    "unbind", "narrow", "index_select", "roll", "movedim", "swapdims", "unflatten", "tile",
    "view_as", "reshape_as", "diagonal", "trace", "outer", "dot", "mv", "addmm", "lerp",
    "cumprod", "normalize", "cosine_similarity", "logsigmoid", "elu", "hardtanh", "softsign",
    "smooth_l1_loss", "huber_loss", "kl_div",
    # batch norm, scatter and grids (makemore, backprop ninja, nanoGPT)
    "batch_norm", "meshgrid", "diag", "unique", "scatter", "scatter_", "scatter_add",
    "scatter_add_", "index_add", "index_add_", "detach_",
    # names learners' codebases call
    "sinh", "cosh", "exp2", "tan", "asin", "acos", "atan", "atan2", "isposinf", "isneginf",
    "signbit", "histogram",
    "exp_", "sigmoid_", "relu_", "tanh_", "abs_", "sqrt_", "rsqrt_", "log_", "ceil_", "floor_",
    "trunc_", "reciprocal_", "square_", "sin_", "cos_", "log1p_", "expm1_",
    "scatter_reduce", "scatter_reduce_", "index_fill", "index_fill_", "bincount", "normal",
    # structure ops made of shape ops (ops/structure.py)
    "broadcast_shapes", "broadcast_to", "broadcast_tensors", "atleast_1d", "atleast_2d",
    "atleast_3d", "hstack", "vstack", "dstack", "column_stack", "row_stack", "tensor_split",
    "hsplit", "vsplit", "dsplit", "split_with_sizes", "unsafe_split", "unsafe_chunk", "select",
    "narrow_copy", "fliplr", "flipud", "rot90", "cartesian_prod", "combinations", "diagflat",
    # more activations (ops/more_activations.py)
    "relu6", "hardsigmoid", "hardswish", "hardshrink", "softshrink", "tanhshrink", "threshold",
    "mish", "celu", "selu", "rrelu", "glu", "prelu", "softmin",
    # searching and counting (ops/search.py)
    "searchsorted", "bucketize", "isin", "histc", "argwhere", "unique_consecutive",
    "triu_indices", "tril_indices", "bernoulli", "bernoulli_",
    # copies of views and small views (ops/view_copies.py)
    "expand_copy", "diagonal_copy", "alias_copy", "view_copy", "permute_copy",
    "split_with_sizes_copy", "unbind_copy", "unfold_copy", "squeeze_copy", "unsqueeze_copy",
    "transpose_copy", "t_copy", "ravel", "positive", "msort", "H", "mH", "adjoint",
    "sum_to_size", "renorm", "renorm_",
    # region writes and picks (ops/index_writes.py, ops/picks.py)
    "block_diag", "take", "put", "put_", "unravel_index", "nonzero_static", "index_reduce",
    "index_reduce_",
    "select_scatter", "slice_scatter", "diagonal_scatter", "diag_embed", "index_copy",
    "index_copy_", "index_put", "index_put_", "masked_scatter", "masked_scatter_",
    "masked_select", "take_along_dim", "unfold",
]


def _reflected(fn):
    def method(self, other):
        return fn(other, self)
    return method


def _added_to(fn):
    """``other + x`` (``x.__radd__(other)``) computed as torch's Tensor.__radd__ does,
    ``x.add(other)``: the same sum, except for complex numbers, where add scales its second
    operand by alpha = 1 + 0i (an inf part of it makes the other part NaN, ops/elementwise.py's
    Add), so the operands' order shows."""
    def __radd__(self, other):
        return fn(self, other)
    return __radd__


def _nonzero_out(fn):
    """``nonzero`` refusing what torch refuses of an out= (a tuple of tensors, out= with
    ``as_tuple=True``, an out= tensor that is not int64) instead of writing into it."""
    @functools.wraps(fn)
    def nonzero(*args, **kwargs):
        out = kwargs.get("out")
        if out is not None:
            if not isinstance(out, Tensor):
                raise TypeError(f"nonzero(): argument 'out' must be Tensor, not "
                                f"{type(out).__name__}")
            if kwargs.get("as_tuple"):
                raise RuntimeError("nonzero does not support the out kwarg when as_tuple is "
                                   "True")
            if out.dtype != np.int64:
                raise RuntimeError(f"nonzero: Expected out tensor to have scalar type Long but "
                                   f"got scalar type {out.dtype} (pass an int64 out=)")
        return fn(*args, **kwargs)
    return nonzero


def _named_reflected(fn, node):
    def __rsub__(self, other):      # a tensor other (called directly): rsub.Tensor's node
        return _name_node(fn(other, self), "RsubBackward0" if isinstance(other, Tensor)
                          else node)
    return __rsub__


def _keepdims_too(fn):
    """PyTorch's reductions also take NumPy's spelling ``keepdims=`` (makemore's tutorials
    write ``P.sum(1, keepdims=True)``); so do these."""
    @functools.wraps(fn)
    def reduction(*args, **kwargs):
        if "keepdims" in kwargs:
            if "keepdim" in kwargs:
                raise TypeError(f"{fn.__name__}: give keepdim or keepdims, not both")
            kwargs["keepdim"] = kwargs.pop("keepdims")
        return fn(*args, **kwargs)
    return reduction


(sum, mean, amax, amin, max, min, std, var, prod, logsumexp, argmax, argmin, any,
 all) = map(_keepdims_too, (sum, mean, amax, amin, max, min, std, var, prod, logsumexp,
                            argmax, argmin, any, all))


def _sum_like_out(fn):
    """torch.sum / torch.prod with ``out=``: torch's out= overload needs ``dim`` (without it
    torch's argument parser refuses the call: TypeError), and the sum is taken in out's dtype
    (``dtype=out.dtype`` unless dtype= is given), as torch's."""
    @functools.wraps(fn)
    def call(*args, **kwargs):
        out = kwargs.get("out")
        if out is not None:
            if len(args) < 2 and kwargs.get("dim", kwargs.get("axis")) is None:
                raise TypeError(f"{fn.__name__}() received an invalid combination of "
                                f"arguments - got (Tensor, out=Tensor): torch's out= form "
                                f"takes dim too ({fn.__name__}(x, dim, out=...)); without "
                                f"dim, assign the result instead")
            if kwargs.get("dtype") is None and isinstance(out, Tensor):
                kwargs["dtype"] = out.dtype
        return fn(*args, **kwargs)
    return call


# torch's keyword names (input=, other=, out=, dtype=, inplace=) on every public op, checked
# against torch's own signatures by tests/test_torch_keywords.py (ops/torch_keywords.py).
abs = _kw(abs, input=True, out=True)
acos = _kw(acos, out=True)
add = _kw(add, input=True, other=True, out=True)
addmm = _kw(addmm, out=True)
all = _kw(all, out=True)
amax = _kw(amax, input=True, out=True)
amin = _kw(amin, input=True, out=True)
any = _kw(any, out=True)
argmax = _kw(argmax, input=True, out=True)
argmin = _kw(argmin, input=True, out=True)
asin = _kw(asin, out=True)
atan = _kw(atan, out=True)
atan2 = _kw(atan2, out=True)
bmm = _kw(bmm, out=True)
cat = out_apart(_kw(cat, out=True))
ceil = _kw(ceil, out=True)
chunk = _kw(chunk, input=True)
clamp = _kw(clamp, input=True, out=True)
clone = _kw(clone, input=True)
concat = _kw(concat, out=True)
cos = _kw(cos, out=True)
cosh = _kw(cosh, out=True)
cumprod = _kw(cumprod, out=True)
cumsum = _kw(cumsum, input=True, out=True)
diag = _kw(diag, out=True)
div = _kw(divide, input=True, other=True, out=True)     # rounding_mode= too (division.py)
dot = _kw(dot, out=True)
dropout = _kw(dropout, input=True, inplace=True)
embedding = _kw(embedding, input=True)
eq = _kw(eq, out=True)
exp = _kw(exp, input=True, out=True)
exp2 = _kw(exp2, out=True)
expm1 = _kw(expm1, out=True)
flatten = _kw(flatten, input=True)
flip = _kw(flip, input=True)
floor = _kw(floor, out=True)
floor_divide = _kw(floor_divide, out=True)
fmod = _kw(fmod, out=True)
gather = out_apart(out_same_dtype(_kw(gather, out=True)))
ge = _kw(ge, out=True)
gelu = _kw(gelu, input=True, out=True)
gt = _kw(gt, out=True)
index_add = out_apart(_kw(index_add, out=True))
index_select = out_apart(_kw(index_select, out=True))
isneginf = _kw(isneginf, out=True)
isposinf = _kw(isposinf, out=True)
layer_norm = _kw(layer_norm, input=True)
le = _kw(le, out=True)
leaky_relu = _kw(leaky_relu, input=True)
lerp = _kw(lerp, out=True)
linear = _kw(linear, input=True, out=True)
log = _kw(log, input=True, out=True)
log10 = _kw(log10, input=True, out=True)
log1p = _kw(log1p, out=True)
log2 = _kw(log2, input=True, out=True)
log_softmax = out_same_dtype(_kw(log_softmax, input=True, dtype=True, out=True))
logical_and = _kw(logical_and, out=True)
logical_not = _kw(logical_not, out=True)
logical_or = _kw(logical_or, out=True)
logical_xor = _kw(logical_xor, out=True)
logsumexp = _kw(logsumexp, input=True, out=True)
lt = _kw(lt, out=True)
masked_fill = _kw(masked_fill, input=True)
matmul = _kw(matmul, input=True, other=True, out=True)
max = _kw(max, input=True, out=True)
maximum = _kw(maximum, out=True)
mean = _kw(mean, input=True, out=True)
min = _kw(min, input=True, out=True)
minimum = _kw(minimum, out=True)
mm = _kw(mm, out=True)
mul = _kw(mul, input=True, other=True, out=True)
mv = _kw(mv, out=True)
nan_to_num = _kw(nan_to_num, out=True)
ne = _kw(ne, out=True)
neg = _kw(neg, input=True, out=True)
nonzero = _nonzero_out(_kw(nonzero, out=True))
norm = _kw(norm, input=True, out=True)
normal = _kw(normal, out=True)
outer = _kw(outer, out=True)
permute = _kw(permute, input=True)
pow = _kw(pow, input=True, out=True)
prod = _sum_like_out(_kw(prod, input=True, out=True))
reciprocal = _kw(reciprocal, out=True)
relu = _kw(relu, input=True, inplace=True)
remainder = _kw(remainder, out=True)
reshape = _kw(reshape, input=True)
rms_norm = _kw(rms_norm, input=True)
round = _kw(round, out=True)
rsqrt = _kw(rsqrt, input=True, out=True)
sgn = _kw(sgn, out=True)
sigmoid = _kw(sigmoid, input=True, out=True)
sign = _kw(sign, out=True)
silu = _kw(silu, input=True)
sin = _kw(sin, out=True)
sinh = _kw(sinh, out=True)
softmax = out_same_dtype(_kw(softmax, input=True, dtype=True, out=True))
softplus = _kw(softplus, input=True, out=True)
sort = stable_keyword_only(_kw(sort, input=True, out=True), "sort")
argsort = stable_keyword_only(argsort, "argsort")
sqrt = _kw(sqrt, input=True, out=True)
square = _kw(square, out=True)
squeeze = _kw(squeeze, input=True)
stack = out_apart(_kw(stack, out=True))
std = _kw(std, input=True, out=True)
sub = _kw(sub, input=True, other=True, out=True)
sum = _sum_like_out(_kw(sum, input=True, out=True))
tan = _kw(tan, out=True)
tanh = _kw(tanh, input=True, out=True)
topk = out_apart(_kw(topk, input=True, out=True))
transpose = _kw(transpose, input=True)
tril = _kw(tril, input=True, out=True)
triu = _kw(triu, input=True, out=True)
trunc = _kw(trunc, out=True)
unsqueeze = _kw(unsqueeze, input=True)
var = _kw(var, input=True, out=True)
where = out_same_dtype(_kw(where, out=True))     # out= of the result dtype only, as torch

# torch's out= on the new ops of issue 30 (structure, search, picks, index_writes)
bernoulli = out_apart(_kw(bernoulli, out=True))
bucketize = _kw(bucketize, out=True)
column_stack = out_apart(_kw(column_stack, out=True))
dstack = out_apart(_kw(dstack, out=True))
histc = _kw(histc, out=True)
hstack = out_apart(_kw(hstack, out=True))
index_copy = out_apart(_kw(index_copy, out=True))
masked_select = out_apart(_kw(masked_select, out=True))
msort = _kw(msort, out=True)
narrow_copy = _kw(narrow_copy, out=True)
renorm = _kw(renorm, out=True)
row_stack = out_apart(_kw(row_stack, out=True))
searchsorted = _kw(searchsorted, out=True)
take_along_dim = out_apart(_kw(take_along_dim, out=True))
take = out_apart(_kw(take, out=True))
index_reduce = out_apart(_kw(index_reduce, out=True))
vstack = out_apart(_kw(vstack, out=True))

# Operators: the functions themselves, not their torch-keyword wrappers (an operator never
# gets keywords); +, -, * and / of two tensors of one floating dtype go straight to the op
# (elementwise.binary_operator; benchmarks/cases/small_op.py times a * b).
Tensor.__add__ = binary_operator(Add, _op(add))
Tensor.__radd__ = _added_to(_op(add))       # x.__radd__(y) is x + y, as torch (complex: x + 1*y)
Tensor.__sub__ = binary_operator(Sub, _op(sub))
Tensor.__rsub__ = _named_reflected(_op(sub), "RsubBackward1")    # 1 - x: torch's rsub.Scalar
Tensor.__mul__ = binary_operator(Mul, _op(mul))
Tensor.__rmul__ = _reflected(_op(mul))
Tensor.__truediv__ = binary_operator(Div, _op(div))
def _number_over_tensor(self, other):
    """``other / x`` (``x.__rtruediv__(other)``) as torch's Tensor.__rdiv__ computes it for a
    floating x: ``reciprocal(x) * other``. Its backward keeps 1/x (an intermediate) and
    other, not x, so a write to x after the op is allowed, as in torch; the values are
    torch's too (other * (1/x), rounded twice, not other / x)."""
    # (type(1j): a complex number, also 1j / bfloat16_x; ``complex`` here is torch.complex)
    if _is_floating(self.dtype) and not isinstance(other, (bool, np.bool_)) and (
            isinstance(other, (int, float, type(1j), np.number, Tensor))):
        return mul(reciprocal(self), other)
    return div(other, self)


Tensor.__rtruediv__ = _number_over_tensor
Tensor.__neg__ = _op(neg)
Tensor.__pow__ = _op(pow)
Tensor.__rpow__ = rpow
Tensor.__floordiv__ = _op(floor_divide)
Tensor.__rfloordiv__ = _reflected(_op(floor_divide))
Tensor.__mod__ = _op(remainder)
Tensor.__rmod__ = _reflected(_op(remainder))
Tensor.__abs__ = _op(abs)
Tensor.__matmul__ = _op(matmul)
Tensor.__rmatmul__ = _reflected(_op(matmul))
Tensor.__getitem__ = getitem
Tensor.__setitem__ = setitem
Tensor.__iadd__ = iadd
Tensor.__isub__ = isub
Tensor.__imul__ = imul
Tensor.__itruediv__ = itruediv
Tensor.__ifloordiv__ = ifloordiv
Tensor.__imod__ = imod
Tensor.__ipow__ = ipow

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
Tensor.view = view
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
Tensor.abs = abs
Tensor.sigmoid = sigmoid
Tensor.rsqrt = rsqrt
Tensor.log2 = log2
Tensor.log10 = log10
Tensor.remainder = remainder
Tensor.fmod = fmod
Tensor.floor_divide = floor_divide
Tensor.maximum = maximum
Tensor.minimum = minimum
Tensor.min = min
Tensor.amin = amin
Tensor.argmax = argmax
Tensor.argmin = argmin
Tensor.sort = sort
Tensor.topk = topk
Tensor.gather = gather
Tensor.var = var
Tensor.std = std
Tensor.logsumexp = logsumexp
Tensor.norm = norm
Tensor.prod = prod
Tensor.cumsum = cumsum
Tensor.expand = expand
Tensor.expand_as = expand_as
Tensor.repeat = repeat
Tensor.flip = flip
Tensor.tril = tril
Tensor.triu = triu
Tensor.T = property(T)
Tensor.mT = property(mT)
Tensor.t = t
Tensor.contiguous = contiguous
Tensor.type_as = type_as
Tensor.bmm = bmm
Tensor.square = square
Tensor.reciprocal = reciprocal
Tensor.log1p = log1p
Tensor.expm1 = expm1
Tensor.sign = sign
Tensor.sgn = sgn
Tensor.floor = floor
Tensor.ceil = ceil
Tensor.round = round
Tensor.trunc = trunc
Tensor.isnan = isnan
Tensor.isinf = isinf
Tensor.isfinite = isfinite
Tensor.nan_to_num = nan_to_num
Tensor.eq = eq
Tensor.ne = ne
Tensor.lt = lt
Tensor.le = le
Tensor.gt = gt
Tensor.ge = ge
Tensor.logical_and = logical_and
Tensor.logical_or = logical_or
Tensor.logical_xor = logical_xor
Tensor.isclose = isclose
Tensor.count_nonzero = count_nonzero
Tensor.nonzero = nonzero
Tensor.argsort = argsort
Tensor.unbind = unbind
Tensor.narrow = narrow
Tensor.index_select = index_select
Tensor.roll = roll
Tensor.movedim = movedim
Tensor.moveaxis = movedim
Tensor.swapdims = swapdims
Tensor.unflatten = unflatten
Tensor.tile = tile
Tensor.view_as = view_as
Tensor.reshape_as = reshape_as
Tensor.diagonal = diagonal
Tensor.trace = trace
Tensor.outer = outer
Tensor.dot = dot
Tensor.mv = mv
Tensor.addmm = addmm
Tensor.lerp = lerp
Tensor.cumprod = cumprod
Tensor.diag = diag
Tensor.unique = unique
Tensor.scatter = scatter
Tensor.scatter_add = scatter_add
Tensor.index_add = index_add
Tensor.new_zeros = factories.new_zeros
Tensor.new_ones = factories.new_ones
Tensor.new_empty = factories.new_empty
Tensor.new_full = factories.new_full
Tensor.new_tensor = factories.new_tensor

# In-place methods (ops/inplace.py): each counts a version.
Tensor.add_ = add_
Tensor.remainder_ = remainder_
Tensor.fmod_ = fmod_
Tensor.floor_divide_ = floor_divide_
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
Tensor.scatter_ = scatter_
Tensor.scatter_add_ = scatter_add_
Tensor.index_add_ = index_add_
Tensor.detach_ = detach_

# Names learners' codebases call.
Tensor.sinh = sinh
Tensor.cosh = cosh
Tensor.exp2 = exp2
Tensor.tan = tan
Tensor.asin = asin
Tensor.arcsin = asin
Tensor.acos = acos
Tensor.arccos = acos
Tensor.atan = atan
Tensor.arctan = atan
Tensor.atan2 = atan2
Tensor.arctan2 = atan2
Tensor.isposinf = isposinf
Tensor.signbit = signbit
Tensor.histogram = histogram
Tensor.lerp_ = lerp_
for _name, _function in UNARY_IN_PLACE.items():      # x.exp_(), x.sigmoid_(), ... (a version)
    setattr(Tensor, _name, _function)
exp_, sigmoid_, relu_, tanh_ = (UNARY_IN_PLACE[n] for n in ("exp_", "sigmoid_", "relu_", "tanh_"))
abs_, sqrt_, rsqrt_, log_ = (UNARY_IN_PLACE[n] for n in ("abs_", "sqrt_", "rsqrt_", "log_"))
ceil_, floor_, trunc_ = (UNARY_IN_PLACE[n] for n in ("ceil_", "floor_", "trunc_"))
reciprocal_, square_, sin_, cos_ = (UNARY_IN_PLACE[n] for n in ("reciprocal_", "square_", "sin_",
                                                                "cos_"))
log1p_, expm1_ = UNARY_IN_PLACE["log1p_"], UNARY_IN_PLACE["expm1_"]
Tensor.isneginf = isneginf
Tensor.scatter_reduce = scatter_reduce
Tensor.scatter_reduce_ = scatter_reduce_
Tensor.index_fill = index_fill
Tensor.index_fill_ = index_fill_
Tensor.bincount = bincount

# Structure ops, region writes and picks (ops/structure.py, index_writes.py, picks.py).
Tensor.broadcast_to = broadcast_to
Tensor.tensor_split = tensor_split
Tensor.hsplit = hsplit
Tensor.vsplit = vsplit
Tensor.dsplit = dsplit
Tensor.split_with_sizes = split_with_sizes
Tensor.unsafe_split = unsafe_split
Tensor.unsafe_chunk = unsafe_chunk
Tensor.select = select
Tensor.narrow_copy = narrow_copy
Tensor.fliplr = fliplr
Tensor.flipud = flipud
Tensor.rot90 = rot90
Tensor.diagflat = diagflat
Tensor.select_scatter = select_scatter
Tensor.slice_scatter = slice_scatter
Tensor.diagonal_scatter = diagonal_scatter
Tensor.diag_embed = diag_embed
Tensor.index_copy = index_copy
Tensor.index_copy_ = index_copy_
Tensor.index_put = index_put
Tensor.index_put_ = index_put_
Tensor.masked_scatter = masked_scatter
Tensor.masked_scatter_ = masked_scatter_
Tensor.masked_select = masked_select
Tensor.take_along_dim = take_along_dim
Tensor.unfold = unfold
Tensor.hardshrink = hardshrink
Tensor.histc = histc
Tensor.argwhere = argwhere
Tensor.unique_consecutive = unique_consecutive
Tensor.bernoulli = bernoulli
Tensor.bernoulli_ = bernoulli_
Tensor.ravel = ravel
Tensor.positive = positive
Tensor.msort = msort
Tensor.sum_to_size = sum_to_size
Tensor.adjoint = adjoint
Tensor.H = property(H)
Tensor.mH = property(mH)
Tensor.renorm = renorm
Tensor.renorm_ = renorm_
Tensor.take = take
Tensor.put = put
Tensor.put_ = put_
Tensor.index_reduce = index_reduce
Tensor.index_reduce_ = index_reduce_
# Special functions (issue 30: ops/special_functions.py), their methods and in-place methods.
from .special_functions import (acosh, asinh, atanh, deg2rad, digamma, entr, erf, erfc, erfcx,
                                erfinv, frac, i0, i0e, i1, i1e, lgamma, log_ndtr, logit, ndtr,
                                ndtri, rad2deg, sinc)
from .inplace_of import in_place_of

__all__ += ["erf", "erfc", "erfinv", "lgamma", "digamma", "logit", "i0", "sinc", "asinh",
            "acosh", "atanh", "frac", "deg2rad", "rad2deg", "i0e", "i1", "i1e", "ndtr", "ndtri",
            "log_ndtr", "erfcx", "entr"]
erf = _kw(erf, out=True)
erfc = _kw(erfc, out=True)
erfinv = _kw(erfinv, out=True)
lgamma = _kw(lgamma, out=True)
digamma = _kw(digamma, out=True)
logit = _kw(logit, out=True)
i0 = _kw(i0, out=True)
sinc = _kw(sinc, out=True)
asinh = _kw(asinh, out=True)
acosh = _kw(acosh, out=True)
atanh = _kw(atanh, out=True)
frac = _kw(frac, out=True)
deg2rad = _kw(deg2rad, out=True)
rad2deg = _kw(rad2deg, out=True)
Tensor.erf = erf
Tensor.erfc = erfc
Tensor.erfinv = erfinv
Tensor.lgamma = lgamma
Tensor.digamma = digamma
Tensor.logit = logit
Tensor.i0 = i0
Tensor.sinc = sinc
Tensor.asinh = asinh
Tensor.arcsinh = asinh
Tensor.acosh = acosh
Tensor.arccosh = acosh
Tensor.atanh = atanh
Tensor.arctanh = atanh
Tensor.frac = frac
Tensor.deg2rad = deg2rad
Tensor.rad2deg = rad2deg
Tensor.erf_ = in_place_of(_op(erf), "erf_")
Tensor.erfc_ = in_place_of(_op(erfc), "erfc_")
Tensor.erfinv_ = in_place_of(_op(erfinv), "erfinv_")
Tensor.lgamma_ = in_place_of(_op(lgamma), "lgamma_")
Tensor.digamma_ = in_place_of(_op(digamma), "digamma_")
Tensor.logit_ = in_place_of(_op(logit), "logit_")
Tensor.i0_ = in_place_of(_op(i0), "i0_")
Tensor.sinc_ = in_place_of(_op(sinc), "sinc_")
Tensor.asinh_ = in_place_of(_op(asinh), "asinh_")
Tensor.arcsinh_ = in_place_of(_op(asinh), "arcsinh_")
Tensor.acosh_ = in_place_of(_op(acosh), "acosh_")
Tensor.arccosh_ = in_place_of(_op(acosh), "arccosh_")
Tensor.atanh_ = in_place_of(_op(atanh), "atanh_")
Tensor.arctanh_ = in_place_of(_op(atanh), "arctanh_")
Tensor.frac_ = in_place_of(_op(frac), "frac_")
Tensor.deg2rad_ = in_place_of(_op(deg2rad), "deg2rad_")
Tensor.rad2deg_ = in_place_of(_op(rad2deg), "rad2deg_")

# Binary pointwise and bitwise ops (issue 30: ops/binary_special.py, ops/bitwise.py).
from .binary_special import (addcdiv, addcmul, clamp_max, clamp_min, copysign, float_power,
                             float_power_, fmax, fmin, heaviside, hypot, ldexp, logaddexp,
                             logaddexp2, nextafter, xlog1py, xlogy)
from .bitwise import (bitwise_and, bitwise_left_shift, bitwise_not, bitwise_or,
                      bitwise_right_shift, bitwise_xor, gcd, lcm, signbit)


def rsub(input: Any, other: Any, alpha: Any = 1) -> Tensor:  # noqa: A002 - PyTorch's names
    """``torch.rsub``: other - alpha * input (``sub`` with its operands swapped)."""
    if not isinstance(input, Tensor):
        raise TypeError(f"rsub(): argument 'input' must be Tensor, not {type(input).__name__}")
    # torch's node: rsub.Tensor (RsubBackward0), rsub.Scalar for a number (RsubBackward1)
    return _name_node(_op(sub)(other, input, alpha=alpha),
                     "RsubBackward0" if isinstance(other, Tensor) else "RsubBackward1")


def positive(input: Tensor) -> Tensor:  # noqa: A002 - PyTorch's name
    """``torch.positive``: +x, the tensor itself (bool tensors are refused, as torch)."""
    if input.dtype == np.bool_:
        raise RuntimeError("The `+` operator, on a bool tensor is not supported (as torch)")
    return input


def true_divide(dividend: Any, divisor: Any) -> Tensor:
    """``torch.true_divide``: ``div`` under its older name (true division, floats out)."""
    return _op(div)(dividend, divisor)


__all__ += ["angle", "complex", "conj", "conj_physical", "imag", "polar", "real",
            "view_as_complex", "view_as_real"]
__all__ += ["xlogy", "xlog1py", "logaddexp", "logaddexp2", "hypot", "copysign", "fmax", "fmin",
            "clamp_min", "clamp_max", "nextafter", "heaviside", "addcmul", "addcdiv",
            "float_power", "ldexp", "bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_not",
            "bitwise_left_shift", "bitwise_right_shift", "gcd", "lcm", "signbit", "rsub",
            "positive", "true_divide"]
xlogy = _kw(xlogy, out=True)
logaddexp = _kw(logaddexp, out=True)
logaddexp2 = _kw(logaddexp2, out=True)
hypot = _kw(hypot, out=True)
copysign = _kw(copysign, out=True)
fmax = _kw(fmax, out=True)
fmin = _kw(fmin, out=True)
nextafter = _kw(nextafter, out=True)
heaviside = _kw(heaviside, out=True)
addcmul = _kw(addcmul, out=True)
addcdiv = _kw(addcdiv, out=True)
float_power = _kw(float_power, out=True)
ldexp = _kw(ldexp, out=True)
bitwise_and = _kw(bitwise_and, out=True)
bitwise_or = _kw(bitwise_or, out=True)
bitwise_xor = _kw(bitwise_xor, out=True)
bitwise_not = _kw(bitwise_not, out=True)
bitwise_left_shift = _kw(bitwise_left_shift, out=True)
bitwise_right_shift = _kw(bitwise_right_shift, out=True)
gcd = _kw(gcd, out=True)
lcm = _kw(lcm, out=True)
signbit = _kw(signbit, out=True)
clamp_min = _kw(clamp_min, out=True)
clamp_max = _kw(clamp_max, out=True)
true_divide = _kw(true_divide, out=True)
Tensor.xlogy = xlogy
Tensor.logaddexp = logaddexp
Tensor.logaddexp2 = logaddexp2
Tensor.hypot = hypot
Tensor.copysign = copysign
Tensor.fmax = fmax
Tensor.fmin = fmin
Tensor.clamp_min = clamp_min
Tensor.clamp_max = clamp_max
Tensor.nextafter = nextafter
Tensor.heaviside = heaviside
Tensor.addcmul = addcmul
Tensor.addcdiv = addcdiv
Tensor.float_power = float_power
Tensor.ldexp = ldexp
Tensor.true_divide = true_divide
Tensor.positive = positive
Tensor.signbit = signbit
Tensor.bitwise_and = bitwise_and
Tensor.bitwise_or = bitwise_or
Tensor.bitwise_xor = bitwise_xor
Tensor.bitwise_not = bitwise_not
Tensor.bitwise_left_shift = bitwise_left_shift
Tensor.bitwise_right_shift = bitwise_right_shift
Tensor.gcd = gcd
Tensor.lcm = lcm
Tensor.xlogy_ = in_place_of(_op(xlogy), "xlogy_")
Tensor.hypot_ = in_place_of(_op(hypot), "hypot_")
Tensor.copysign_ = in_place_of(_op(copysign), "copysign_")
Tensor.clamp_min_ = in_place_of(_op(clamp_min), "clamp_min_")
Tensor.clamp_max_ = in_place_of(_op(clamp_max), "clamp_max_")
Tensor.nextafter_ = in_place_of(_op(nextafter), "nextafter_")
Tensor.heaviside_ = in_place_of(_op(heaviside), "heaviside_")
Tensor.addcmul_ = in_place_of(_op(addcmul), "addcmul_")
Tensor.addcdiv_ = in_place_of(_op(addcdiv), "addcdiv_")
Tensor.float_power_ = float_power_
Tensor.ldexp_ = in_place_of(_op(ldexp), "ldexp_")
Tensor.true_divide_ = div_
Tensor.bitwise_and_ = in_place_of(_op(bitwise_and), "bitwise_and_")
Tensor.bitwise_or_ = in_place_of(_op(bitwise_or), "bitwise_or_")
Tensor.bitwise_xor_ = in_place_of(_op(bitwise_xor), "bitwise_xor_")
Tensor.bitwise_not_ = in_place_of(_op(bitwise_not), "bitwise_not_")
Tensor.bitwise_left_shift_ = in_place_of(_op(bitwise_left_shift), "bitwise_left_shift_")
Tensor.bitwise_right_shift_ = in_place_of(_op(bitwise_right_shift), "bitwise_right_shift_")
Tensor.gcd_ = in_place_of(_op(gcd), "gcd_")
Tensor.lcm_ = in_place_of(_op(lcm), "lcm_")
Tensor.__and__ = _op(bitwise_and)
Tensor.__or__ = _op(bitwise_or)
Tensor.__xor__ = _op(bitwise_xor)
Tensor.__rand__ = _reflected(_op(bitwise_and))
Tensor.__ror__ = _reflected(_op(bitwise_or))
Tensor.__rxor__ = _reflected(_op(bitwise_xor))
Tensor.__invert__ = _op(bitwise_not)
Tensor.__lshift__ = _op(bitwise_left_shift)
Tensor.__rshift__ = _op(bitwise_right_shift)
Tensor.__rlshift__ = _reflected(_op(bitwise_left_shift))
Tensor.__rrshift__ = _reflected(_op(bitwise_right_shift))
Tensor.__iand__ = Tensor.bitwise_and_
Tensor.__ior__ = Tensor.bitwise_or_
Tensor.__ixor__ = Tensor.bitwise_xor_
Tensor.__ilshift__ = Tensor.bitwise_left_shift_
Tensor.__irshift__ = Tensor.bitwise_right_shift_
Tensor.__rdiv__ = Tensor.__rtruediv__

# More products (issue 30: ops/blas.py).
from .blas import (addbmm, addmv, addr, baddbmm, cross, inner, kron, linalg_cross,
                   matrix_power, multi_dot, tensordot, vdot, vecdot)

__all__ += ["addmv", "addbmm", "baddbmm", "addr", "vdot", "inner", "kron", "tensordot",
            "cross", "linalg_cross", "vecdot", "multi_dot", "matrix_power"]
addmv = _kw(addmv, out=True)
addbmm = _kw(addbmm, out=True)
baddbmm = _kw(baddbmm, out=True)
addr = _kw(addr, out=True)
vdot = _kw(vdot, out=True)
inner = _kw(inner, out=True)
kron = _kw(kron, out=True)
cross = _kw(cross, out=True)
linalg_cross = _kw(linalg_cross, out=True)
vecdot = _kw(vecdot, out=True)
matrix_power = _kw(matrix_power, out=True)
Tensor.addmv = addmv
Tensor.addbmm = addbmm
Tensor.baddbmm = baddbmm
Tensor.addr = addr
Tensor.vdot = vdot
Tensor.inner = inner
Tensor.kron = kron
Tensor.cross = cross
Tensor.matrix_power = matrix_power
Tensor.addmv_ = in_place_of(_op(addmv), "addmv_")
Tensor.addbmm_ = in_place_of(_op(addbmm), "addbmm_")
Tensor.baddbmm_ = in_place_of(_op(baddbmm), "baddbmm_")
Tensor.addr_ = in_place_of(_op(addr), "addr_")
from .linalg_ops import det, inv

__all__ += ["det", "inv", "inverse"]


def inverse(input: Tensor) -> Tensor:  # noqa: A002 - PyTorch's name
    """``torch.inverse``: ``linalg.inv`` under its older name."""
    return inv(input)


def _det(input: Tensor) -> Tensor:  # noqa: A002 - PyTorch's name
    """``torch.det``: ``linalg.det`` under its older name."""
    return det(input)


inverse = _kw(inverse, out=True)
inv = _kw(inv, out=True)
det_older_name = _kw(_det)
Tensor.inverse = inverse
Tensor.det = det_older_name

# More reductions and scans (issue 30: ops/more_reductions.py).
from .more_reductions import (aminmax, cummax, cummin, diff, kthvalue, logcumsumexp, median,
                              nanmean, nanmedian, nansum, std_mean, var_mean)

__all__ += ["nansum", "nanmean", "var_mean", "std_mean", "logcumsumexp", "cummax", "cummin",
            "diff", "aminmax", "median", "nanmedian", "kthvalue"]
nansum = _kw(nansum, out=True)
var_mean = _kw(var_mean, out=True)
std_mean = _kw(std_mean, out=True)
nanmean = _kw(nanmean, out=True)
logcumsumexp = _kw(logcumsumexp, out=True)
cummax = _kw(cummax, out=True)
cummin = _kw(cummin, out=True)
diff = _kw(diff, out=True)
aminmax = out_apart(out_same_dtype(_kw(aminmax, out=True)))
median = out_apart(_kw(median, out=True))
nanmedian = out_apart(_kw(nanmedian, out=True))
kthvalue = out_apart(out_same_dtype(_kw(kthvalue, out=True)))
Tensor.nansum = nansum
Tensor.nanmean = nanmean
Tensor.logcumsumexp = logcumsumexp
Tensor.cummax = cummax
Tensor.cummin = cummin
Tensor.diff = diff
Tensor.aminmax = aminmax
Tensor.median = median
Tensor.nanmedian = nanmedian
Tensor.kthvalue = kthvalue

# More of torch.linalg (issue 30: ops/linalg_ops.py), and vector_norm over stats.norm.
from .linalg_ops import eigvalsh, logdet, slogdet, solve, svdvals


def vector_norm(x: Tensor, ord: Any = 2, dim: Any = None,  # noqa: A002 - torch's names
                keepdim: bool = False, *, dtype: Any = None) -> Tensor:
    """``torch.linalg.vector_norm``: the ord-norm of the elements over ``dim`` (``norm``'s
    Function, docs/derivations.md#norm); ``dtype`` converts x first."""
    if dtype is not None:
        x = x.to(dtype)
    return norm(x, ord, dim, keepdim)


__all__ += ["slogdet", "logdet", "solve", "eigvalsh", "svdvals", "vector_norm"]
from .linalg_norms import linalg_norm, matrix_norm  # noqa: E402 - matrix norms (edge30)
__all__ += ["linalg_norm", "matrix_norm"]
from .return_types import return_type  # noqa: E402 - torch.return_types.<name> results


def slogdet_older_name(input: Tensor) -> Any:  # noqa: A002 - PyTorch's name
    """``torch.slogdet``: ``linalg.slogdet`` under its older name, (sign, logabsdet), a
    ``torch.return_types.slogdet``."""
    return return_type("slogdet", ["sign", "logabsdet"])(*slogdet(input))


logdet = _kw(logdet)
vector_norm = _kw(vector_norm, out=True)
matrix_norm = _kw(matrix_norm, out=True)
linalg_norm = _kw(linalg_norm, out=True)
slogdet_older_name = _kw(slogdet_older_name)
Tensor.logdet = logdet
Tensor.slogdet = slogdet_older_name

# Compositions of existing ops (issue 30, stream cov30: ops/compositions.py).
from .compositions import (channel_shuffle, cosine_embedding_loss, cumulative_trapezoid, dist,
                           gaussian_nll_loss, hinge_embedding_loss, isreal, linalg_diagonal,
                           margin_ranking_loss, multilabel_soft_margin_loss, pairwise_distance,
                           pixel_shuffle, pixel_unshuffle, poisson_nll_loss, soft_margin_loss,
                           trapezoid, trapz, triplet_margin_loss,
                           triplet_margin_with_distance_loss)

isreal = _kw(isreal)
dist = _kw(dist)
Tensor.isreal = isreal
Tensor.dist = dist

# Matrix decompositions (issue 30, stream linalg30: ops/decompositions.py).
from .decompositions import (LinAlgError, cholesky, cholesky_ex, cholesky_older_name, eigh, qr,
                             svd, svd_older_name)


def qr_older_name(input: Tensor, some: bool = True) -> Any:  # noqa: A002 - torch's names
    """``torch.qr`` (deprecated in torch): ``linalg.qr`` with ``some=False`` for "complete"."""
    q, r = qr(input, mode="reduced" if some else "complete")
    return return_type("qr", ["Q", "R"])(q, r)     # a torch.return_types.qr


__all__ += ["LinAlgError", "cholesky", "cholesky_ex", "cholesky_older_name", "eigh", "qr",
            "qr_older_name", "svd", "svd_older_name"]
cholesky = _kw(cholesky, out=True)
cholesky_ex = _kw(cholesky_ex, out=True)
cholesky_older_name = _kw(cholesky_older_name, out=True)
eigh = _kw(eigh, out=True)
qr = _kw(qr, out=True)
qr_older_name = _kw(qr_older_name, out=True)
svd = _kw(svd, out=True)
svd_older_name = _kw(svd_older_name, out=True)
Tensor.cholesky = cholesky_older_name
Tensor.qr = qr_older_name
Tensor.svd = svd_older_name

# Solvers, pseudo-inverse, matrix exponential (issue 30, stream linalg30: ops/linalg_solvers.py).
from .linalg_solvers import (cond, lstsq, matrix_exp, matrix_rank, pinv, pinverse,
                             solve_triangular, triangular_solve, vander)

__all__ += ["cond", "lstsq", "matrix_exp", "matrix_rank", "pinv", "pinverse",
            "solve_triangular", "triangular_solve", "vander"]
cond = _kw(cond, out=True)
lstsq = _kw(lstsq, out=True)
matrix_exp = _kw(matrix_exp)
matrix_rank = _kw(matrix_rank, out=True)
pinv = _kw(pinv, out=True)
pinverse = _kw(pinverse)
solve_triangular = _kw(solve_triangular, out=True)
triangular_solve = _kw(triangular_solve, out=True)
vander = _kw(vander)
Tensor.matrix_exp = matrix_exp
Tensor.pinverse = pinverse
Tensor.triangular_solve = triangular_solve

# Covariance and correlation (issue 30, stream linalg30: ops/statistics.py).
from .statistics import corrcoef, cov

__all__ += ["corrcoef", "cov"]
cov = _kw(cov)
corrcoef = _kw(corrcoef)
Tensor.cov = cov
Tensor.corrcoef = corrcoef

# Distances, quantiles, mode, frexp (issue 30, stream absentA38: ops/distances.py,
# ops/order_stats.py, ops/float_parts.py).
from .distances import cdist, pdist  # noqa: E402
from .order_stats import mode, nanquantile, quantile  # noqa: E402
from .float_parts import frexp  # noqa: E402

__all__ += ["cdist", "pdist", "mode", "quantile", "nanquantile", "frexp"]
cdist = _kw(cdist)
pdist = _kw(pdist)
mode = out_apart(out_same_dtype(_kw(mode, out=True)))
quantile = _kw(quantile, out=True)
nanquantile = _kw(nanquantile, out=True)
frexp = out_apart(_kw(frexp, out=True))
Tensor.mode = mode
Tensor.quantile = quantile
Tensor.nanquantile = nanquantile
Tensor.frexp = frexp

# polygamma and the multivariate log-gamma (issue 30, stream absentA38: ops/polygamma.py).
from .polygamma import mvlgamma, mvlgamma_method, polygamma, polygamma_method  # noqa: E402

__all__ += ["polygamma", "mvlgamma"]
polygamma = _kw(polygamma, out=True)
mvlgamma = _kw(mvlgamma, out=True)
Tensor.polygamma = polygamma_method
Tensor.mvlgamma = mvlgamma_method
Tensor.polygamma_ = in_place_of(polygamma_method, "polygamma_")
Tensor.mvlgamma_ = in_place_of(mvlgamma_method, "mvlgamma_")

# torch's out= on the functions that took none (issue 30, stream out39): write_out
# (torch_keywords.py) is the one place that applies it: the result is computed as without
# out=, then written into out (resized, with torch's warning when it had elements), out
# bumped and returned; refused under autograd. torch's kernels of these ops, except the
# special functions', want out in the result's own dtype ("Expected out tensor to have dtype
# float, but got double instead": out_same_dtype); the special functions cast into out
# (torch's RuntimeError when they can't). A tuple out for slogdet, lstsq and histogram; a
# list for split_with_sizes_copy and unbind_copy (out_pieces: they return None then).
from .torch_keywords import out_pieces as _out_pieces  # noqa: E402


def _out_of_own_dtype(fn, **keywords):
    return out_same_dtype(_kw(fn, out=True, **keywords))


(isin, scatter, scatter_add, scatter_reduce, slice_scatter, tensordot, histogram, alias_copy,
 diagonal_copy, expand_copy, permute_copy, squeeze_copy, t_copy, transpose_copy, unfold_copy,
 unsqueeze_copy, view_copy, det, solve, slogdet, svdvals, eigvalsh, multi_dot) = (
    _out_of_own_dtype(fn) for fn in (
        isin, scatter, scatter_add, scatter_reduce, slice_scatter, tensordot, histogram,
        alias_copy, diagonal_copy, expand_copy, permute_copy, squeeze_copy, t_copy,
        transpose_copy, unfold_copy, unsqueeze_copy, view_copy, det, solve, slogdet, svdvals,
        eigvalsh, multi_dot))
# scatter reads input and src while it writes: any overlap with out= refused, as torch
scatter, scatter_add, scatter_reduce = (out_apart(fn) for fn in (scatter, scatter_add,
                                                                  scatter_reduce))
split_with_sizes_copy = _out_pieces(_kw(split_with_sizes_copy))
unbind_copy = _out_pieces(_kw(unbind_copy))
(entr, erfcx, i0e, i1, i1e, log_ndtr, ndtr, ndtri, xlog1py) = (
    _kw(fn, out=True) for fn in (entr, erfcx, i0e, i1, i1e, log_ndtr, ndtr, ndtri, xlog1py))
logsigmoid = _out_of_own_dtype(logsigmoid, input=True)
normalize = _kw(normalize, input=True, out=True)

from .dtype_rules import can_cast, promote_types, result_type  # noqa: E402
from .tensor_extras import register_tensor_extras  # noqa: E402
register_tensor_extras()

# NumPy's axis=/keepdims= wherever an op or method takes dim/keepdim, as torch's argument
# parser accepts them (ops/torch_keywords.py).
from .torch_keywords import numpy_spellings_on as _numpy_spellings_on  # noqa: E402

_numpy_spellings_on(globals(), __all__, Tensor)

angle = _kw(angle, out=True)
complex = out_same_dtype(_kw(complex, out=True))  # noqa: A001 - torch's name
conj_physical = _kw(conj_physical, out=True)
polar = _kw(polar, out=True)
# complex numbers (ops/complex_numbers.py): .real and .imag are views, as torch's
Tensor.real = property(real)
Tensor.imag = property(imag)
Tensor.conj = conj
Tensor.conj_physical = conj_physical
Tensor.angle = angle

# views with explicit geometry, x.view(dtype), resize_ (ops/strided.py)
from .strided import as_strided, resize_, resize_as_  # noqa: E402
Tensor.as_strided = as_strided
Tensor.resize_ = resize_
Tensor.resize_as_ = resize_as_


def resolve_conj(input: Tensor) -> Tensor:  # noqa: A002 - PyTorch's name
    """``torch.resolve_conj``: input itself. tinyattn's ``conj()`` computes the conjugate at
    once (torch's may be a lazy view with ``is_conj()`` True, which this materialises), so
    no tensor here carries a pending conjugation."""
    return input


def resolve_neg(input: Tensor) -> Tensor:  # noqa: A002 - PyTorch's name
    """``torch.resolve_neg``: input itself (no tensor here carries a lazy negation)."""
    return input


Tensor.resolve_conj = resolve_conj
Tensor.resolve_neg = resolve_neg
Tensor.is_conj = lambda self: False
Tensor.is_neg = lambda self: False
__all__ += ["as_strided", "resize_as_", "resolve_conj", "resolve_neg"]
