"""Products with PyTorch's names: outer, dot, mv, addmm, lerp and the running product
cumprod (docs/derivations.md#cumprod, #outer-dot-mv-addmm-and-lerp).

``cumprod`` is a Function with a backward that stays exact when the input has zeros. The
others are compositions of ops that already have a hand-derived backward (matmul, mul, add),
as their docstrings say, with PyTorch's argument checks in front.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from .. import backend
from ..broadcast_error import expand_error
from ..autograd import Function, name_node, names_node, unbroadcast
from ..tensor import Tensor
from .elementwise import add, convert, mul
from .masking import masked_fill
from .matmul import matmul
from .reduce import _single_axis, in_integer_dtype, refuse_bool_running
from .shape import reshape
from ..amp.dispatch import cast_args, composite as autocast_as, outside_autocast
from ..precision import DtypeError, is_floating, scalar_type_name
from ..promotion import result_type

__all__ = ["outer", "dot", "mv", "addmm", "lerp", "cumprod"]


class Cumprod(Function):
    """out_i = x_0 x_1 ... x_i along ``axis`` (docs/derivations.md#cumprod).

    x_j is a factor of every out_i with i >= j, so
        dx_j = sum_{i >= j} g_i prod_{k <= i, k != j} x_k = L_j * S_j,
    with L_j = x_0 ... x_{j-1} (the product before j) and
        S_j = g_j + x_{j+1} g_{j+1} + x_{j+1} x_{j+2} g_{j+2} + ... ,
    which runs backwards as S_j = g_j + x_{j+1} S_{j+1}. No division by x_j, so zeros in x
    give exact gradients (out_i / x_j would be 0/0 there)."""

    versions_checked = (0, -1)    # what torch saves: changed in place, backward raises

    def forward(self, x, axis: int):
        self.save_for_backward(x, axis)
        return backend.get_array_module(x).cumprod(_wide(x), axis=axis).astype(x.dtype)

    def backward(self, grad):
        x, axis = self.saved
        xp = backend.get_array_module(grad)
        xs, gs = xp.moveaxis(_wide(x), axis, 0), xp.moveaxis(_wide(grad), axis, 0)  # dim first
        n = xs.shape[0]
        if n == 0:
            return grad
        before = xp.concatenate([xp.ones_like(xs[:1]), xp.cumprod(xs[:-1], axis=0)])  # L
        after = xp.empty_like(gs)                                                     # S
        after[n - 1] = gs[n - 1]
        for j in range(n - 2, -1, -1):
            after[j] = gs[j] + xs[j + 1] * after[j + 1]
        return xp.moveaxis(before * after, 0, axis).astype(grad.dtype)


def _wide(a: Any) -> Any:
    """float32 as float64: running products accumulated in double, as torch's CPU kernel
    (a float32 running product loses a rounding per factor: 38x torch's error over 4,096)."""
    return a.astype(np.float64) if a.dtype == np.float32 else a


def cumprod(input: Tensor, dim: int, *, dtype: Any = None) -> Tensor:  # noqa: A002
    """Running products along ``dim`` (required, as PyTorch); integer and bool tensors give
    int64, as PyTorch; ``dtype`` converts first and is the result's dtype."""
    if dtype is not None:
        refuse_bool_running(dtype, "cumprod")
        return in_integer_dtype(cumprod(input.to(dtype), dim), dtype)
    axis = _single_axis(dim, input.ndim, "cumprod")
    if input.ndim == 0:
        return name_node(reshape(cumprod(reshape(input, 1), 0), ()), "CumprodBackward0")
    if input.dtype.kind in "biu":
        xp = backend.get_array_module(input._data)
        return Tensor._wrap(xp.cumprod(input._data, axis=axis, dtype=np.int64))
    return Cumprod.apply(input, axis=axis)


def _check_vector(t: Any, name: str, op: str) -> None:
    if not isinstance(t, Tensor) or t.ndim != 1:
        raise RuntimeError(f"{op}: {name} must be a 1-D tensor, got "
                           f"{getattr(t, 'shape', type(t).__name__)}")


_torch_name = scalar_type_name    # torch's C++ name of a dtype (float32 is 'Float')


def _check_same_dtype(a: Tensor, b: Tensor, op: str) -> None:
    if a.dtype != b.dtype:
        raise RuntimeError(f"{op}: expected both tensors to have the same dtype, got "
                           f"{a.dtype} and {b.dtype} (as PyTorch); convert one with .to(...)")


def outer(input: Tensor, vec2: Tensor) -> Tensor:  # noqa: A002 - PyTorch's names
    """out[i, j] = input[i] * vec2[j] for two 1-D tensors: (n,) and (m,) -> (n, m). Composed
    as ``input[:, None] * vec2[None, :]``, so the gradients are broadcasting's:
    d input = g @ vec2, d vec2 = g^T @ input (the sums over the broadcast dims)."""
    _check_vector(input, "input", "outer")
    _check_vector(vec2, "vec2", "outer")
    return mul(reshape(input, -1, 1), reshape(vec2, 1, -1))


def dot(input: Tensor, tensor: Tensor) -> Tensor:  # noqa: A002
    """The inner product of two 1-D tensors of one length and dtype (a 0-d tensor), as
    ``torch.dot`` (which, unlike matmul, takes only vectors). matmul underneath."""
    _check_vector(input, "input", "dot")
    _check_vector(tensor, "tensor", "dot")
    _check_same_dtype(input, tensor, "dot")            # torch checks the dtypes first
    if input.shape != tensor.shape:
        raise RuntimeError(f"dot: the vectors have different lengths ({input.shape[0]} and "
                           f"{tensor.shape[0]}): inconsistent tensor size")
    with autocast_as("dot"):             # torch's dot: float32 under CPU autocast
        return matmul(input, tensor)


def mv(input: Tensor, vec: Tensor) -> Tensor:  # noqa: A002
    """Matrix (n, m) times vector (m,) -> (n,), as ``torch.mv``; matmul underneath."""
    if not isinstance(input, Tensor) or input.ndim != 2:
        raise RuntimeError(f"vector + matrix @ vector expected (mv: input must be a 2-D "
                           f"matrix), got "
                         f"{getattr(input, 'shape', type(input).__name__)}")
    _check_vector(vec, "vec", "mv")
    if input.shape[1] != vec.shape[0]:
        raise RuntimeError(f"size mismatch, got input ({input.shape[0]}), mat "
                           f"({input.shape[0]}x{input.shape[1]}), vec ({vec.shape[0]}) (mv: "
                           f"matrix {input.shape} and vector {vec.shape} do not line up: the "
                           f"matrix's columns must equal the vector's length)")
    _check_same_dtype(input, vec, "mv")
    with autocast_as("mv"):
        return matmul(input, vec)


@names_node("AddmmBackward0")
def addmm(input: Tensor, mat1: Tensor, mat2: Tensor, *, beta: float = 1,  # noqa: A002
          alpha: float = 1) -> Tensor:
    """beta * input + alpha * (mat1 @ mat2), with ``input`` broadcast to (n, p), as
    ``torch.addmm``. With beta = 0, input is ignored (a NaN in it does not spread, as in
    PyTorch) and gets a zero gradient (it is filled with 0 first). Composed of matmul, mul,
    add (and masked_fill for beta = 0)."""
    for name, m in (("mat1", mat1), ("mat2", mat2)):
        if not isinstance(m, Tensor) or m.ndim != 2:
            raise RuntimeError(f"{name} must be a matrix (addmm: a 2-D tensor), got "
                             f"{getattr(m, 'shape', type(m).__name__)}")
    if mat1.shape[1] != mat2.shape[0]:
        raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({mat1.shape[0]}x"
                           f"{mat1.shape[1]} and {mat2.shape[0]}x{mat2.shape[1]}) (addmm: "
                           f"mat1's columns must equal mat2's rows)")
    shape = (mat1.shape[0], mat2.shape[1])
    error = expand_error(tuple(input.shape), shape, "addmm: input to the product's shape")
    if error is not None:
        raise error
    input, mat1, mat2 = cast_args("addmm", input, mat1, mat2)   # one op under autocast
    half = input.dtype
    if half.itemsize == 2 and half.kind in "fV" and mat1.dtype == half == mat2.dtype:
        # torch's half addmm: beta * input + alpha * (mat1 @ mat2) in float32, rounded to the
        # half dtype once (the product rounded first, then the sum, differed in the last bit:
        # 2e-3 relative on op_db's addmm.decomposed float16 sample)
        with outside_autocast():            # the float32 sum inside torch's one kernel
            wide = addmm(convert(input, dtype=np.float32), convert(mat1, dtype=np.float32),
                         convert(mat2, dtype=np.float32), beta=beta, alpha=alpha)
        return convert(wide, dtype=half)
    product = matmul(mat1, mat2)
    if alpha != 1:
        product = mul(product, alpha)
    if beta == 0:
        if not input.requires_grad:
            return product
        everywhere = backend.get_array_module(input._data).ones(input.shape, dtype=bool)
        return add(masked_fill(input, everywhere, 0.0), product)   # d input = 0, no NaN
    return add(input if beta == 1 else mul(input, beta), product)


def lerp(input: Tensor, end: Tensor, weight: Any) -> Tensor:  # noqa: A002
    """input + weight * (end - input), with a number or a tensor weight (broadcasting), as
    ``torch.lerp`` (one op, ``Lerp``: d input = g (1 - w), d end = g w and
    d weight = g (end - input))."""
    if not isinstance(input, Tensor) or not isinstance(end, Tensor):
        raise TypeError("lerp: input and end must be Tensors")
    _check_same_dtype(input, end, "lerp")
    if isinstance(weight, Tensor) and weight.dtype != input.dtype:
        if weight.ndim != 0:
            raise DtypeError(f"expected dtype {_torch_name(input.dtype)} for `weight` but got "
                             f"dtype {_torch_name(weight.dtype)} (lerp, as torch: a weight "
                             f"with dimensions must have the input's dtype {input.dtype}); "
                             f"convert it with .to(input.dtype)")
        # a 0-d weight takes part in type promotion, as torch: lerp(int, int, 0-d float16)
        target = result_type(input, end, weight)           # is float16, (f32, f32, 0-d
        if is_floating(target):                            # float64) float32
            input, end, weight = (t if t.dtype == target else t.to(target)
                                  for t in (input, end, weight))
    if not is_floating(input.dtype):
        kernel = "lerp_kernel_tensor" if isinstance(weight, Tensor) else "lerp_kernel_scalar"
        raise NotImplementedError(f"\"{kernel}\" not implemented for "
                                  f"'{_torch_name(input.dtype)}' (lerp of {input.dtype} "
                                  f"tensors, as torch); convert them with .float()")
    if isinstance(weight, Tensor):
        return Lerp.apply(input, end, weight, number=None)
    return Lerp.apply(input, end, number=weight)


class Lerp(Function):
    """out = a + w (b - a), computed as torch's kernel computes it: a + w (b - a) where
    |w| < 0.5, else b - (1 - w)(b - a) (exact at w = 1), each as one fused multiply-add
    rounded once (float16/bfloat16 run on float32 copies and round once more, as torch's).
        da = g (1 - w),   db = g w,   dw = g (b - a)   (each unbroadcast).
    Keeps a, b and a tensor w, as torch's node does (a number w: nothing)."""

    def forward(self, a, b, *weight, number: Any):
        xp = backend.get_array_module(a)
        if weight:
            w = weight[0]
            small = xp.abs(w) < 0.5
            coefficient, base = xp.where(small, w, w - 1), xp.where(small, a, b)
        else:                           # a number: decided on the host, no device sync
            w = a.dtype.type(number)                        # torch: the number in opmath
            small = bool(abs(float(number)) < 0.5)
            coefficient = xp.asarray(w if small else w - 1, dtype=a.dtype)
            base = a if small else b
        if a.dtype == np.float32:           # an FMA: the product exact, one rounding
            diff = (b - a).astype(np.float64)
            out = (coefficient.astype(np.float64) * diff + base).astype(np.float32)
        else:
            out = coefficient * (b - a) + base
        if weight:
            self.save_for_backward(True, a, b, weight[0])
        else:
            self.save_for_backward(False, a.shape, b.shape, number)
        return xp.asarray(out)

    def backward(self, grad):
        has_tensor_weight, a, b, w = self.saved
        if has_tensor_weight:
            shapes = (a.shape, b.shape, w.shape)
            grads = (grad * (1 - w), grad * w, grad * (b - a))
        else:
            shapes, grads = (a, b), (grad * (1 - w), grad * w)
        return tuple(unbroadcast(g, shape) if need else None
                     for g, shape, need in zip(grads, shapes, self.needs_input_grad))
