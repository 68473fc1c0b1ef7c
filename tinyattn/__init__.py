"""tinyattn: a from-scratch tensor and reverse-mode autograd framework on NumPy (CuPy on a GPU),
with a hand-derived backward for every op, built to learn how attention and backprop work.

    import tinyattn as ta
    import tinyattn.functional as F
"""
from __future__ import annotations

from . import backend, functional, nn, ops, optim, utils
from . import models  # registers GPT-2's checkpoint format for nn.GPT.from_pretrained
from . import testing
from . import autograd, viz  # viz: draw_graph, trace_backward (see docs/see_it.md)
from . import ao, profiler, quantization  # docs/precision_memory_time.md
# tensors sent to other processes travel through shared memory, registered at import as
# import torch registers torch's (multiprocessing/reductions.py)
from . import multiprocessing
from .autograd import (Function, detect_anomaly, enable_grad, inference_mode, is_grad_enabled,
                       no_grad, set_grad_enabled)
from .backend import cuda_is_available, get_rng_state, set_rng_state
from .gradcheck import GradcheckError, gradcheck, gradcheck_report
from .factories import (arange, empty, empty_like, eye, full, full_like, linspace, logspace,
                        multinomial, ones, ones_like, rand, rand_like, randint, randint_like,
                        randn, randn_like, randperm, zeros, zeros_like)
from .ops import (abs, add, allclose, amax, amin, argmax, argmin, bmm, cat, chunk, clamp, clone,
                  concat, cos, cumsum, div, einsum, equal, exp, flatten, flip, gather, log,
                  log_softmax, logsumexp, matmul, max, maximum, mean, min, minimum, mm, spmm, mul, neg,
                  norm, permute, pow, prod, relu, repeat_interleave, reshape, rsqrt, sigmoid,
                  sin, softmax, sort, split, sqrt, squeeze, stack, std, sub, sum, tanh, topk,
                  transpose, tril, triu, unsqueeze, var, where)
from .ops import (addmm, all, any, argsort, ceil, count_nonzero, cumprod, diagonal, dot, eq,
                  expm1, floor, ge, gt, index_select, isclose, isfinite, isinf, isnan, le, lerp,
                  log1p, logical_and, logical_not, logical_or, logical_xor, lt, masked_fill,
                  movedim, mv, nan_to_num, narrow, ne, nonzero, numel, outer, reciprocal,
                  roll, round, sgn, sign, square, swapdims, tile, trace, trunc, unbind,
                  unflatten)
from .ops import floor_divide, fmod, log2, log10, remainder
from .ops import (angle, complex, conj, conj_physical, imag, polar, real,  # noqa: A004
                  view_as_complex, view_as_real)
from .ops import diag, index_add, meshgrid, scatter, scatter_add, unique, zero_
from .ops import clamp as clip
from .ops import (acos, asin, atan, atan2, bincount, cosh, exp2, index_fill, isneginf,
                  isposinf, normal, scatter_reduce, sinh, tan)
from .ops import (abs_, ceil_, cos_, exp_, expm1_, floor_, histogram, log1p_, log_,
                  reciprocal_, relu_, rsqrt_, sigmoid_, signbit, sin_, sqrt_, square_, tanh_,
                  trunc_)
# ops/structure.py
from .ops import (broadcast_shapes, broadcast_to, broadcast_tensors, atleast_1d, atleast_2d,
                  atleast_3d, hstack, vstack, dstack, column_stack, row_stack, tensor_split,
                  hsplit, vsplit, dsplit, split_with_sizes, unsafe_split, unsafe_chunk, select,
                  narrow_copy, fliplr, flipud, rot90, cartesian_prod, combinations, diagflat)
from .ops import block_diag, index_reduce, nonzero_static, put, take, unravel_index
from .ops import (select_scatter, slice_scatter, diagonal_scatter, diag_embed, index_copy,
                  index_put, masked_scatter, masked_select, take_along_dim)
from .ops import (searchsorted, bucketize, isin, histc, argwhere, unique_consecutive, triu_indices,
                  tril_indices, bernoulli)
from .ops import (expand_copy, diagonal_copy, alias_copy, view_copy, permute_copy,
                  split_with_sizes_copy, unbind_copy, unfold_copy, squeeze_copy, unsqueeze_copy,
                  transpose_copy, t_copy, ravel, positive, msort, adjoint, renorm)
from .generator import Generator, manual_seed
from .printing import get_printoptions, set_printoptions
from .factories import get_default_device, set_default_device
from .serialization import CheckpointError, load, save
from .tensor import SavedDataWriteError, Tensor, as_tensor, from_numpy, tensor
from .tensor.memory_format import (channels_last, channels_last_3d, contiguous_format,
                                   memory_format, preserve_format)
from .tensor.layout import (jagged, layout, sparse_bsc, sparse_bsr, sparse_coo, sparse_csc,
                            sparse_csr, strided)
from . import amp
from .amp import autocast
from .precision import finfo, get_default_dtype, iinfo, set_default_dtype
from .promotion import is_strict_promotion, set_strict_promotion, strict_promotion

# dtype names, as torch's: tinyattn.float is float32, tinyattn.long int64, tinyattn.int int32.
float16, float32, float64 = "float16", "float32", "float64"
half, double = "float16", "float64"
float = "float32"  # noqa: A001 - PyTorch's name (tinyattn.float is a dtype, as torch.float)
int8, int16, int32, int64, uint8 = "int8", "int16", "int32", "int64", "uint8"
int, long, short = "int32", "int64", "int16"  # noqa: A001 - PyTorch's names
bool, bool_ = "bool", "bool"  # noqa: A001
bfloat16 = "bfloat16"
complex64, complex128 = "complex64", "complex128"
cfloat, cdouble = "complex64", "complex128"
qint8, quint8 = "qint8", "quint8"    # quantized dtypes: tinyattn.quantization.quantize_dynamic

__version__ = "0.1.0"

__all__ = [
    "Tensor", "tensor", "as_tensor", "zeros", "ones", "zeros_like", "ones_like", "full",
    "randn", "rand", "arange", "manual_seed", "get_rng_state", "set_rng_state",
    "cuda_is_available", "no_grad", "enable_grad", "inference_mode", "is_grad_enabled",
    "detect_anomaly",
    "Function", "gradcheck", "gradcheck_report", "GradcheckError", "functional", "ops",
    "backend", "nn", "optim", "save", "load", "CheckpointError", "cat", "concat", "stack",
    "split", "matmul", "where", "exp", "log", "sqrt", "tanh", "clone", "clamp", "from_numpy",
    "autograd", "viz", "set_grad_enabled", "SavedDataWriteError", "utils", "models",
    "empty", "empty_like", "eye", "full_like", "linspace", "logspace", "multinomial", "rand_like",
    "randint", "randint_like", "randn_like", "abs", "amax", "amin", "argmax", "argmin", "bmm",
    "chunk", "cumsum", "einsum", "flatten", "flip", "gather", "log_softmax", "logsumexp", "max",
    "maximum", "mean", "min", "minimum", "norm", "permute", "prod", "relu", "reshape", "rsqrt",
    "sigmoid", "softmax", "sort", "squeeze", "std", "sum", "topk", "transpose", "tril", "triu",
    "unsqueeze", "var",
    "sin", "cos", "repeat_interleave", "add", "sub", "mul", "div", "neg", "pow", "mm", "spmm",
    "equal", "allclose",
    "square", "reciprocal", "log1p", "expm1", "sign", "sgn", "floor", "ceil", "round", "trunc",
    "isnan", "isinf", "isfinite", "nan_to_num", "eq", "ne", "lt", "le", "gt", "ge",
    "logical_and", "logical_or", "logical_xor", "logical_not", "isclose", "count_nonzero",
    "nonzero", "argsort", "any", "all", "numel", "clip", "unbind", "narrow", "index_select",
    "roll", "movedim", "swapdims", "unflatten", "tile", "masked_fill", "outer", "dot", "mv",
    "addmm", "lerp", "cumprod", "diagonal", "trace", "log2", "log10", "remainder", "fmod",
    "floor_divide", "randperm", "diag", "index_add", "meshgrid", "scatter", "scatter_add",
    "unique", "zero_",
    "sinh", "cosh", "tan", "asin", "acos", "atan", "atan2", "exp2", "isposinf", "isneginf",
    "signbit", "histogram", "exp_", "sigmoid_", "relu_", "tanh_", "abs_", "sqrt_", "rsqrt_",
    "log_", "ceil_", "floor_", "trunc_", "reciprocal_", "square_", "sin_", "cos_", "log1p_",
    "expm1_",
    "bincount", "index_fill", "scatter_reduce", "normal", "Generator", "get_default_device",
    "set_default_device", "get_default_dtype", "set_default_dtype", "set_printoptions",
    "get_printoptions", "testing",
    "float16", "float32", "float64", "half", "double", "float", "int8", "int16", "int32",
    "int64", "uint8", "int", "long", "short", "bool", "bool_",
    "bfloat16", "complex64", "complex128", "cfloat", "cdouble",
    "angle", "complex", "conj", "conj_physical", "imag", "polar", "real", "view_as_complex",
    "view_as_real",
    "amp", "autocast", "finfo", "iinfo",
    "ao", "profiler", "quantization", "qint8", "quint8",
    "memory_format", "contiguous_format", "preserve_format", "channels_last",
    "channels_last_3d",
    "layout", "strided", "sparse_coo", "sparse_csr", "sparse_csc", "sparse_bsr", "sparse_bsc",
    "jagged",
    "broadcast_shapes", "broadcast_to", "broadcast_tensors", "atleast_1d", "atleast_2d",
    "atleast_3d", "hstack", "vstack", "dstack", "column_stack", "row_stack", "tensor_split",
    "hsplit", "vsplit", "dsplit", "split_with_sizes", "unsafe_split", "unsafe_chunk", "select",
    "narrow_copy", "fliplr", "flipud", "rot90", "cartesian_prod", "combinations", "diagflat",
    "block_diag", "index_reduce", "nonzero_static", "put", "take", "unravel_index",
    "select_scatter", "slice_scatter", "diagonal_scatter", "diag_embed", "index_copy",
    "index_put", "masked_scatter", "masked_select", "take_along_dim",
    "searchsorted", "bucketize", "isin", "histc", "argwhere", "unique_consecutive",
    "triu_indices", "tril_indices", "bernoulli",
    "expand_copy", "diagonal_copy", "alias_copy", "view_copy", "permute_copy",
    "split_with_sizes_copy", "unbind_copy", "unfold_copy", "squeeze_copy", "unsqueeze_copy",
    "transpose_copy", "t_copy", "ravel", "positive", "msort", "adjoint", "renorm",
    "set_strict_promotion", "is_strict_promotion", "strict_promotion",
]

# Coverage of torch's ops (issue 30): special functions, and torch.special
from .ops import (acosh, asinh, atanh, deg2rad, digamma, erf, erfc, erfinv, frac, i0, lgamma,
                  logit, rad2deg, sinc)
from . import special
arcsinh, arccosh, arctanh = asinh, acosh, atanh
__all__ += ["special", "erf", "erfc", "erfinv", "lgamma", "digamma", "logit", "i0", "sinc",
            "asinh", "acosh", "atanh", "arcsinh", "arccosh", "arctanh", "frac", "deg2rad",
            "rad2deg"]
from .ops import (addcdiv, addcmul, bitwise_and, bitwise_left_shift, bitwise_not, bitwise_or,
                  bitwise_right_shift, bitwise_xor, clamp_max, clamp_min, copysign, float_power,
                  fmax, fmin, gcd, heaviside, hypot, lcm, ldexp, logaddexp, logaddexp2,
                  nextafter, positive, rsub, signbit, true_divide, xlogy)
__all__ += ["addcdiv", "addcmul", "bitwise_and", "bitwise_left_shift", "bitwise_not",
            "bitwise_or", "bitwise_right_shift", "bitwise_xor", "clamp_max", "clamp_min",
            "copysign", "float_power", "fmax", "fmin", "gcd", "heaviside", "hypot", "lcm",
            "ldexp", "logaddexp", "logaddexp2", "nextafter", "positive", "rsub", "signbit",
            "true_divide", "xlogy"]
from .ops import (addbmm, addmv, addr, baddbmm, cross, inner, kron, matrix_power, tensordot,
                  vdot)
from . import linalg
from . import fft  # noqa: E402 - torch.fft (ops/fft.py)
from . import func  # noqa: E402 - torch.func.functional_call (nn/utils/stateless.py)
__all__ += ["fft"]
from . import signal  # noqa: E402 - torch.signal.windows (signal/windows.py)
from .signal.windows import (bartlett_window, blackman_window, hamming_window,  # noqa: E402
                             hann_window, kaiser_window)
__all__ += ["signal", "bartlett_window", "blackman_window", "hamming_window", "hann_window",
            "kaiser_window"]
__all__ += ["linalg", "addbmm", "addmv", "addr", "baddbmm", "cross", "inner", "kron",
            "matrix_power", "tensordot", "vdot"]
from .ops import det_older_name as det
from .ops import inverse
__all__ += ["det", "inverse"]
from .ops import (aminmax, cummax, cummin, diff, kthvalue, logcumsumexp, median, nanmean,
                  nanmedian, nansum, std_mean, var_mean)
__all__ += ["aminmax", "cummax", "cummin", "diff", "kthvalue", "logcumsumexp", "median",
            "nanmean", "nanmedian", "nansum", "std_mean", "var_mean"]
from .ops import logdet
from .ops import can_cast, promote_types, result_type
__all__ += ["can_cast", "promote_types", "result_type"]
from .ops import slogdet_older_name as slogdet
__all__ += ["logdet", "slogdet"]
from .ops import cholesky_older_name as cholesky
from .ops import qr_older_name as qr
from .ops import svd_older_name as svd
__all__ += ["cholesky", "qr", "svd"]
from .ops import pinverse, triangular_solve     # matrix_exp: torch_top_level.py
__all__ += ["pinverse", "triangular_solve"]
from .ops import corrcoef, cov
__all__ += ["corrcoef", "cov"]
from .ops import cumulative_trapezoid, dist, isreal, trapezoid, trapz
__all__ += ["cumulative_trapezoid", "dist", "isreal", "trapezoid", "trapz"]
from .ops import cdist, frexp, mode, nanquantile, pdist, quantile
__all__ += ["cdist", "frexp", "mode", "nanquantile", "pdist", "quantile"]
from .ops import mvlgamma, polygamma
__all__ += ["mvlgamma", "polygamma"]

from .factories_extra import asarray, empty_strided, scalar_tensor  # noqa: E402
from .factories_extra import range  # noqa: E402,A004 - torch.range (deprecated, end included)
from .ops import as_strided, resize_as_, resolve_conj, resolve_neg  # noqa: E402
__all__ += ["asarray", "empty_strided", "scalar_tensor", "range", "as_strided", "resize_as_",
            "resolve_conj", "resolve_neg"]

# torch.compile: the model back, wrapped as torch wraps it (OptimizedModule, _orig_mod.);
# tinyattn runs every op eagerly (nn/compiled.py)
from .nn.compiled import compile  # noqa: E402,A004
__all__ += ["compile"]

# torch's second names and top-level forms of ops above (torch.multiply, torch.conv2d,
# torch.embedding(weight, indices), ...): tinyattn/torch_top_level.py
from . import torch_top_level as _torch_top_level
for _name, _value in _torch_top_level.names().items():
    if _name not in globals():
        globals()[_name] = _value
        __all__.append(_name)

# names and methods added after ops/ (torch_top_level, other modules): NumPy's axis=/keepdims=
from .ops.torch_keywords import numpy_spellings_on as _numpy_spellings_on
_numpy_spellings_on(globals(), __all__, Tensor)
# pickle finds each public function where it is public (torch.save of a model that keeps
# F.relu as an attribute): functional first, then the top level
from .ops.torch_keywords import picklable_under as _picklable_under
_picklable_under(functional)
_picklable_under(ops)
_picklable_under(__import__("sys").modules[__name__])
