"""More products, each composed of ops with their own backward (matmul, mul, add, sum,
reshape, permute): addmv, addbmm, baddbmm, addr, vdot, inner, kron, tensordot, cross,
vecdot, multi_dot, matrix_power (docs/derivations.md#more-products).

The ``beta * input + alpha * product`` family follows torch: with beta = 0 the input is
ignored (a NaN in it does not spread) and gets a zero gradient.
"""
from __future__ import annotations

import warnings
from typing import Any, Sequence, Tuple, Union

import numpy as np

from .. import backend
from ..autograd import keep_versions, name_node, names_node
from ..tensor import Tensor
from ..precision import is_complex_dtype, is_low_precision
from .elementwise import add, convert, mul, sub
from .layout import expand
from .linalg_ops import inv
from .masking import masked_fill
from .matmul import matmul
from .reduce import sum
from .shape import cat, permute, reshape, squeeze, unsqueeze
from .rearrange import narrow
from .complex_numbers import conj_physical

__all__ = ["addmv", "addbmm", "baddbmm", "addr", "vdot", "inner", "kron", "tensordot", "cross",
           "linalg_cross", "vecdot", "multi_dot", "matrix_power"]


def _scaled_sum(input: Tensor, product: Tensor, beta: Any, alpha: Any,  # noqa: A002
                op: str) -> Tensor:
    """beta * input + alpha * product, input broadcast to the product's shape (never the
    other way: torch refuses an input that would grow the result)."""
    try:
        shape = np.broadcast_shapes(tuple(input.shape), tuple(product.shape))
    except ValueError:
        shape = None
    if shape != tuple(product.shape):
        raise RuntimeError(f"{op}: input of shape {tuple(input.shape)} does not broadcast to "
                           f"the product's shape {tuple(product.shape)}")
    if alpha != 1:
        product = mul(product, alpha)
    if beta == 0:
        if not input.requires_grad:
            return product
        everywhere = backend.get_array_module(input._data).ones(input.shape, dtype=bool)
        return add(masked_fill(input, everywhere, 0), product)     # d input = 0, no NaN
    return add(input if beta == 1 else mul(input, beta), product)


def _in_float32(compute: Any, *tensors: Tensor) -> Tensor:
    """``compute(*tensors)``; float16/bfloat16 tensors are computed in float32 and the result
    rounded once, as torch's fused kernels do (not once per step of the composition)."""
    half = tensors[0].dtype
    if half.itemsize != 2 or half.kind not in "fV":
        return compute(*tensors)
    return convert(compute(*(convert(t, dtype=np.float32) for t in tensors)), dtype=half)


def _coefficients(beta: Any, alpha: Any, dtype: np.dtype) -> Tuple[Any, Any]:
    """beta and alpha as torch uses them: truncated to integers for an integer result."""
    if dtype.kind in "iu":
        return int(beta), int(alpha)
    return beta, alpha


def _check_ndim(t: Any, ndim: int, name: str, op: str) -> None:
    if not isinstance(t, Tensor) or t.ndim != ndim:
        raise RuntimeError(f"{op}: {name} must be a {ndim}-D tensor, got "
                           f"{getattr(t, 'shape', type(t).__name__)}")


def _check_dtypes(op: str, *tensors: Tensor) -> None:
    dtypes = {t.dtype for t in tensors}
    if len(dtypes) > 1:
        names = ", ".join(sorted(d.name for d in dtypes))
        raise RuntimeError(f"{op}: expected all tensors to have the same dtype, got {names} "
                           f"(as torch); convert them with .to()")


@names_node("AddmvBackward0")
def addmv(input: Tensor, mat: Tensor, vec: Tensor, *, beta: Any = 1,  # noqa: A002
          alpha: Any = 1) -> Tensor:
    """beta * input + alpha * (mat @ vec), mat (n, m), vec (m,) (``torch.addmv``)."""
    _check_ndim(mat, 2, "mat", "addmv")
    _check_ndim(vec, 1, "vec", "addmv")
    _check_dtypes("addmv", input, mat, vec)
    if mat.shape[1] != vec.shape[0]:
        raise RuntimeError(f"addmv: size mismatch, mat {tuple(mat.shape)} and vec "
                           f"{tuple(vec.shape)}")
    beta, alpha = _coefficients(beta, alpha, input.dtype)
    return _in_float32(lambda i, m, v: _scaled_sum(i, matmul(m, v), beta, alpha, "addmv"),
                       input, mat, vec)


@names_node("BaddbmmBackward0")
def baddbmm(input: Tensor, batch1: Tensor, batch2: Tensor, *, beta: Any = 1,  # noqa: A002
            alpha: Any = 1) -> Tensor:
    """beta * input + alpha * (batch1 @ batch2), batches (b, n, m) @ (b, m, p)
    (``torch.baddbmm``)."""
    _check_ndim(batch1, 3, "batch1", "baddbmm")
    _check_ndim(batch2, 3, "batch2", "baddbmm")
    _check_dtypes("baddbmm", input, batch1, batch2)
    if batch1.shape[0] != batch2.shape[0] or batch1.shape[2] != batch2.shape[1]:
        raise RuntimeError(f"baddbmm: batch1 {tuple(batch1.shape)} and batch2 "
                           f"{tuple(batch2.shape)} do not line up")
    beta, alpha = _coefficients(beta, alpha, input.dtype)
    return _in_float32(lambda i, b1, b2: _scaled_sum(i, matmul(b1, b2), beta, alpha,
                                                     "baddbmm"), input, batch1, batch2)


@names_node("AddbmmBackward0")
def addbmm(input: Tensor, batch1: Tensor, batch2: Tensor, *, beta: Any = 1,  # noqa: A002
           alpha: Any = 1) -> Tensor:
    """beta * input + alpha * sum_b batch1[b] @ batch2[b] (``torch.addbmm``)."""
    _check_ndim(batch1, 3, "batch1", "addbmm")
    _check_ndim(batch2, 3, "batch2", "addbmm")
    _check_dtypes("addbmm", input, batch1, batch2)
    if batch1.shape[0] != batch2.shape[0] or batch1.shape[2] != batch2.shape[1]:
        raise RuntimeError(f"addbmm: batch1 {tuple(batch1.shape)} and batch2 "
                           f"{tuple(batch2.shape)} do not line up")
    beta, alpha = _coefficients(beta, alpha, input.dtype)
    half = input.dtype if is_low_precision(input.dtype) else None

    def compute(i: Tensor, b1: Tensor, b2: Tensor) -> Tensor:
        # as torch: the products are added one batch at a time, (n, m) @ (m, p) -> (n, p)
        total = matmul(b1[0], b2[0]) if b1.shape[0] else \
            Tensor._wrap(backend.get_array_module(b1._data).zeros(
                (b1.shape[1], b2.shape[2]), dtype=b1.dtype))
        for k in range(1, b1.shape[0]):
            total = add(total, matmul(b1[k], b2[k]))
        return _scaled_sum(i, total, beta, alpha, "addbmm")

    def compute_as_half_addmms(i: Tensor, b1: Tensor, b2: Tensor) -> Tensor:
        # torch's float16/bfloat16 addbmm is one addmm per batch into the result: result =
        # beta * input + alpha * b1[0] @ b2[0], then result += alpha * b1[k] @ b2[k], each in
        # float32 and rounded to the half dtype before the next (bit for bit against torch:
        # tests/test_half_reductions_as_torch.py)
        result = _scaled_sum(i, matmul(b1[0], b2[0]), beta, alpha, "addbmm")
        for k in range(1, b1.shape[0]):
            result = convert(convert(result, dtype=half), dtype=np.float32)
            product = matmul(b1[k], b2[k])
            result = add(result, product if alpha == 1 else mul(product, alpha))
        return result
    if half is not None and batch1.shape[0] > 1:
        return _in_float32(compute_as_half_addmms, input, batch1, batch2)
    result = _in_float32(compute, input, batch1, batch2)
    if input.dtype == np.float32 and batch1.shape[0] \
            and batch1.shape[0] * batch1.shape[2] <= _SEQUENTIAL_ADDBMM_TERMS:
        # the values in torch's order of additions; the gradients (addbmm is linear in each
        # input) do not depend on them, so the composition's graph stays right
        result._data = _addbmm_float32_values(input._data, batch1._data, batch2._data,
                                              beta, alpha)
    return result


# float32 addbmm's terms (batches times the inner size) up to which the values follow
# torch's order of additions (a Python loop of that many steps); beyond it torch's BLAS
# blocks the sums in an order of its own, and tinyattn sums each batch's product with its
# matrix product
_SEQUENTIAL_ADDBMM_TERMS = 1024


def _addbmm_float32_values(input: Any, batch1: Any, batch2: Any, beta: Any,  # noqa: A002
                           alpha: Any) -> Any:
    """float32 addbmm as torch's CPU kernel orders it (measured bit for bit against torch
    2.13 on op_db's samples): one addmm per batch into the result, each addmm scaling the
    result by beta (the first only; 0 clears it) and then adding the inner index's terms
    one at a time, result += (alpha * batch1[b][:, k]) (outer) batch2[b][k, :], every product
    and sum rounded to float32. Summing a batch's products first (a matrix product) rounds
    differently, and where the sum nearly cancels the difference exceeds float32's
    tolerance."""
    xp = backend.get_array_module(batch1)
    f32 = np.float32
    shape = (batch1.shape[1], batch2.shape[2])
    result = xp.broadcast_to(input, shape).astype(f32)
    if beta == 0:
        result = xp.zeros(shape, dtype=f32)
    elif beta != 1:
        result = result * f32(beta)
    scaled = batch1 * f32(alpha) if alpha != 1 else batch1
    for b in range(batch1.shape[0]):
        for k in range(batch1.shape[2]):
            result = result + scaled[b, :, k:k + 1] * batch2[b, k:k + 1, :]
    return result


@names_node("AddrBackward0")
def addr(input: Tensor, vec1: Tensor, vec2: Tensor, *, beta: Any = 1,  # noqa: A002
         alpha: Any = 1) -> Tensor:
    """beta * input + alpha * outer(vec1, vec2) (``torch.addr``)."""
    _check_ndim(vec1, 1, "vec1", "addr")
    _check_ndim(vec2, 1, "vec2", "addr")
    _check_dtypes("addr", input, vec1, vec2)
    if input.dtype == np.bool_:                 # torch's logical form: and, or
        xp = backend.get_array_module(input._data)
        outer = vec1._data[:, None] & vec2._data[None, :]
        out = (bool(beta) & input._data) | (bool(alpha) & outer)
        return Tensor._wrap(xp.asarray(xp.broadcast_to(out, outer.shape).copy()))
    beta, alpha = _coefficients(beta, alpha, input.dtype)

    def compute(i: Tensor, v1: Tensor, v2: Tensor) -> Tensor:
        product = mul(unsqueeze(v1, 1), unsqueeze(v2, 0))    # (n, 1) * (1, m) -> (n, m)
        return _scaled_sum(i, product, beta, alpha, "addr")
    if is_low_precision(input.dtype):
        # torch's half kernel: beta * input + (alpha * vec1) * vec2 in the half dtype, with
        # beta and alpha rounded to it and every product and the sum rounded (each op here
        # computes in float32 and rounds once)
        half_beta, half_alpha = (float(np.asarray(c, dtype=input.dtype)) for c in (beta, alpha))
        product = mul(mul(unsqueeze(vec1, 1), half_alpha), unsqueeze(vec2, 0))   # (n, m)
        return _scaled_sum(input, product, half_beta, 1, "addr")
    return _in_float32(compute, input, vec1, vec2)


@names_node("VdotBackward0")
def vdot(input: Tensor, other: Tensor) -> Tensor:  # noqa: A002 - PyTorch's names
    """sum_i conj(input_i) * other_i of two 1-D tensors (``torch.vdot``; for real tensors,
    ``dot``)."""
    _check_ndim(input, 1, "input", "vdot")
    _check_ndim(other, 1, "other", "vdot")
    _check_dtypes("vdot", input, other)
    if input.shape != other.shape:
        raise RuntimeError(f"vdot: 1-D tensors of the same size expected, got "
                           f"{input.shape[0]} and {other.shape[0]}")
    if input.dtype.kind == "c":
        input = conj_physical(input)
    return matmul(input, other)


def inner(input: Tensor, other: Tensor) -> Tensor:  # noqa: A002 - PyTorch's names
    """The sum over the last dims of both: (..., n) and (..., n) -> the two batch shapes
    side by side (``torch.inner``); a 0-d operand multiplies (with mul's type promotion, as
    torch: only the contraction asks for one dtype)."""
    if input.ndim == 0 or other.ndim == 0:
        return mul(input, other)
    _check_dtypes("inner", input, other)
    if input.shape[-1] != other.shape[-1]:
        raise RuntimeError(f"inner: the last dims must match, got {tuple(input.shape)} and "
                           f"{tuple(other.shape)}")
    return tensordot(input, other, ([input.ndim - 1], [other.ndim - 1]))


def kron(input: Tensor, other: Tensor) -> Tensor:  # noqa: A002 - PyTorch's names
    """The Kronecker product: block (i, j) of the result is input[i, j] * other
    (``torch.kron``, any number of dims; the shorter shape is padded with leading 1s). Two
    dtypes promote as in mul (torch's kron is a product, not a contraction)."""
    ndim = max(input.ndim, other.ndim)
    a_shape = (1,) * (ndim - input.ndim) + tuple(input.shape)
    b_shape = (1,) * (ndim - other.ndim) + tuple(other.shape)
    a = reshape(input, tuple(s for n in a_shape for s in (n, 1)))   # (a0, 1, a1, 1, ...)
    b = reshape(other, tuple(s for n in b_shape for s in (1, n)))   # (1, b0, 1, b1, ...)
    # the product keeps copies: torch's kron keeps copies too (its reshapes of permuted
    # inputs), so a write to input or other after the op is allowed, as there
    return name_node(reshape(mul(a.clone(), b.clone()),       # torch ends in an _unsafe_view
                             tuple(x * y for x, y in zip(a_shape, b_shape))), "UnsafeViewBackward0")


def _dims_pair(dims: Any, a: Tensor, b: Tensor) -> Tuple[list, list]:
    if isinstance(dims, Tensor):
        dims = dims.tolist()
    if isinstance(dims, (int, np.integer)):
        if dims < 0:
            raise RuntimeError(f"tensordot expects dims >= 0, but got dims={dims}")
        if dims > min(a.ndim, b.ndim):
            raise RuntimeError(f"tensordot: dims={dims} is more than a {a.ndim}-D and a "
                               f"{b.ndim}-D tensor can contract")
        return list(range(a.ndim - dims, a.ndim)), list(range(dims))
    first, second = dims
    first = [first] if isinstance(first, (int, np.integer)) else list(first)
    second = [second] if isinstance(second, (int, np.integer)) else list(second)
    if len(first) != len(second):
        raise RuntimeError(f"tensordot: both dim lists should have the same length, got "
                           f"{first} and {second}")
    return [d % a.ndim for d in first], [d % b.ndim for d in second]


def _sum_keeping_dtype(t: Tensor, dim: int) -> Tensor:
    """sum over dim (kept); integer sums stay in t's dtype, as torch's tensordot gives."""
    total = sum(t, dim, keepdim=True)
    if total.dtype != t.dtype and not t.requires_grad:
        return Tensor._wrap(total._data.astype(t.dtype))
    return total


def tensordot(a: Tensor, b: Tensor, dims: Any = 2,
              out: Any = None) -> Tensor:
    """Contract ``dims`` of a with ``dims`` of b (an int n: a's last n with b's first n; or
    two lists) (``torch.tensordot``): both are permuted and reshaped into one matmul."""
    if out is not None:
        raise TypeError("tensordot: out= is not supported here; assign the result instead")
    _check_dtypes("tensordot", a, b)
    da, db = _dims_pair(dims, a, b)
    for i, j in zip(da, db):             # a contracted size 1 meets any size, as torch
        if a.shape[i] == 1 and b.shape[j] != 1:
            b = _sum_keeping_dtype(b, j)
        elif b.shape[j] == 1 and a.shape[i] != 1:
            a = _sum_keeping_dtype(a, i)
        if a.shape[i] != b.shape[j]:
            raise RuntimeError(f"tensordot: contracted dimensions need to match, but first "
                               f"has size {a.shape[i]} in dim {i} and second has size "
                               f"{b.shape[j]} in dim {j}")
    keep_a = [d for d in range(a.ndim) if d not in da]
    keep_b = [d for d in range(b.ndim) if d not in db]
    size = int(np.prod([a.shape[d] for d in da])) if da else 1
    left = reshape(permute(a, *(keep_a + da)), (-1, size))     # (kept a, contracted)
    right = reshape(permute(b, *(db + keep_b)), (size, -1))    # (contracted, kept b)
    shape = tuple(a.shape[d] for d in keep_a) + tuple(b.shape[d] for d in keep_b)
    out = reshape(matmul(left, right), shape)
    if left.shape[0] == 1 and right.shape[1] == 1:
        # one output element: torch multiplies views of both inputs (dot, or sum of a
        # product where a view cannot be flat), never copies, so its node keeps each input
        # the other's gradient needs even where the reshape above copied
        keep_versions(out, b if a.requires_grad else None, a if b.requires_grad else None)
    return out


def _cross_at(a: Tensor, b: Tensor, dim: int) -> Tensor:
    for t in (a, b):
        if t.shape[dim] != 3:
            raise RuntimeError(f"linalg.cross: inputs dimension {dim} must have length 3, "
                               f"got {t.shape[dim]}")
    a, b = _broadcast_pair(a, b)
    dim = dim % a.ndim
    a0, a1, a2 = (narrow(a, dim, i, 1) for i in range(3))
    b0, b1, b2 = (narrow(b, dim, i, 1) for i in range(3))
    return name_node(cat([sub(mul(a1, b2), mul(a2, b1)), sub(mul(a2, b0), mul(a0, b2)),
                          sub(mul(a0, b1), mul(a1, b0))], dim), "LinalgCrossBackward0")


def _broadcast_pair(a: Tensor, b: Tensor) -> Tuple[Tensor, Tensor]:
    _check_dtypes("cross", a, b)
    try:
        shape = np.broadcast_shapes(tuple(a.shape), tuple(b.shape))
    except ValueError:
        raise RuntimeError(f"linalg.cross: shapes {tuple(a.shape)} and {tuple(b.shape)} do "
                           f"not broadcast") from None
    return expand(a, *shape), expand(b, *shape)


def linalg_cross(input: Tensor, other: Tensor, *, dim: int = -1) -> Tensor:  # noqa: A002
    """The cross product of 3-vectors along ``dim`` (``torch.linalg.cross``), broadcast."""
    if input.ndim != other.ndim:
        raise RuntimeError(f"linalg.cross: inputs should have the same number of dimensions, "
                           f"got {input.ndim} and {other.ndim}")
    return _cross_at(input, other, dim)


def cross(input: Tensor, other: Tensor, dim: Union[int, None] = None) -> Tensor:  # noqa: A002
    """``torch.cross``: as linalg.cross; without ``dim`` the first dim of size 3 (torch's
    deprecated default, with its warning)."""
    if dim is None:
        shape = np.broadcast_shapes(tuple(input.shape), tuple(other.shape))
        sizes = [i for i, n in enumerate(shape) if n == 3]
        if not sizes:
            raise RuntimeError(f"cross: no dimension of size 3 in input {tuple(shape)}")
        warnings.warn("Using torch.cross without specifying the dim arg is deprecated "
                      "(as torch); pass dim=", UserWarning, stacklevel=2)
        dim = sizes[0]
    if input.ndim != other.ndim:
        raise RuntimeError(f"cross: inputs should have the same number of dimensions, got "
                           f"{input.ndim} and {other.ndim}")
    return _cross_at(input, other, dim)


def vecdot(x: Tensor, y: Tensor, *, dim: int = -1) -> Tensor:
    """sum(conj(x) * y, dim), broadcast (``torch.linalg.vecdot``: x is conjugated, as torch
    documents, so a complex x gives the inner product; real x is unchanged)."""
    _check_dtypes("linalg.vecdot", x, y)
    if is_complex_dtype(x.dtype):
        x = x.conj()
    try:
        np.broadcast_shapes(tuple(x.shape), tuple(y.shape))
    except ValueError:
        raise RuntimeError(f"linalg.vecdot: shapes {tuple(x.shape)} and {tuple(y.shape)} do "
                           f"not broadcast") from None
    out = sum(mul(x, y), dim)
    return name_node(out, "VdotBackward0") if x.ndim == y.ndim == 1 else out   # torch: vdot


def _chain_order(shapes: Sequence[Tuple[int, int]]) -> list:
    """split[i][j] = k: the product of matrices i..j is (i..k) @ (k+1..j), k the first of
    the splits with the fewest scalar multiplications (the textbook matrix-chain dynamic
    programme, ties to the leftmost split). Three matrices (a, b) (b, c) (c, d): A (B C)
    when (a c)(b + d) > (b d)(a + c), else (A B) C, which is the same rule."""
    n = len(shapes)
    dims = [s[0] for s in shapes] + [shapes[-1][1]]       # matrix i is dims[i] x dims[i+1]
    cost = [[0] * n for _ in range(n)]
    split = [[0] * n for _ in range(n)]
    for length in range(1, n):
        for i in range(n - length):
            j = i + length
            best = None
            for k in range(i, j):
                q = cost[i][k] + cost[k + 1][j] + dims[i] * dims[k + 1] * dims[j + 1]
                if best is None or q < best:
                    best, split[i][j] = q, k
            cost[i][j] = best
    return split


def multi_dot(tensors: Sequence[Tensor], *, out: Any = None) -> Tensor:
    """The chain product A1 @ A2 @ ... (``torch.linalg.multi_dot``): the first may be 1-D
    (a row), the last 1-D (a column), the others 2-D; multiplied in torch's order, the one
    with the fewest scalar multiplications (``_chain_order``): the products are the same,
    but each intermediate is rounded to the dtype (float16: 2.5 apart on op_db's 4-matrix
    sample when multiplied left to right)."""
    if out is not None:
        raise TypeError("multi_dot: out= is not supported here; assign the result instead")
    tensors = list(tensors)
    if len(tensors) < 2:
        raise RuntimeError(f"multi_dot(): expected at least 2 tensors but got {len(tensors)}")
    for i, t in enumerate(tensors):
        allowed = (1, 2) if i in (0, len(tensors) - 1) else (2,)
        if t.ndim not in allowed:
            raise RuntimeError(f"multi_dot(): tensor {i} must be "
                               f"{' or '.join(f'{n}D' for n in allowed)} but got {t.ndim}D")
    _check_dtypes("linalg.multi_dot", *tensors)
    first_vector, last_vector = tensors[0].ndim == 1, tensors[-1].ndim == 1
    mats = list(tensors)
    if first_vector:
        mats[0] = unsqueeze(mats[0], 0)
    if last_vector:
        mats[-1] = unsqueeze(mats[-1], 1)
    split = _chain_order([tuple(m.shape) for m in mats])

    def chain(i: int, j: int) -> Tensor:         # the product of mats[i..j]
        if i == j:
            return mats[i]
        k = split[i][j]
        return matmul(chain(i, k), chain(k + 1, j))
    result = chain(0, len(mats) - 1)
    if first_vector:
        result = squeeze(result, 0)
    if last_vector:
        result = squeeze(result, -1)
    return result


def matrix_power(input: Tensor, n: int) -> Tensor:  # noqa: A002 - PyTorch's names
    """A^n for a square matrix or a batch of them (``torch.linalg.matrix_power``), by
    repeated squaring (n = 0: the identity; n < 0: powers of linalg.inv(A))."""
    if input.ndim < 2 or input.shape[-1] != input.shape[-2]:
        raise RuntimeError(f"linalg.matrix_power: A must be batches of square matrices, but "
                           f"they are {input.shape[-2] if input.ndim >= 2 else '?'} by "
                           f"{input.shape[-1] if input.ndim else '?'} matrices")
    if not isinstance(n, (int, np.integer)):
        raise TypeError(f"matrix_power: n must be an int, got {type(n).__name__}")
    if n == -1:                # torch returns linalg.inv's result itself, which its node
        return inv(input)      # keeps: a write to it before backward raises
    if n < 0:
        input, n = inv(input), -n
    if n == 0:                 # the identity; input gets a zero gradient (its values unused)
        xp = backend.get_array_module(input._data)
        eye = xp.broadcast_to(xp.eye(input.shape[-1], dtype=input.dtype), input.shape).copy()
        if not input.requires_grad:
            return Tensor._wrap(eye)
        everywhere = xp.ones(input.shape, dtype=bool)       # torch copies eye into a clone
        return name_node(add(masked_fill(input, everywhere, 0), Tensor._wrap(eye)),
                         "torch::autograd::CopyBackwards")
    if n == 1:                 # torch returns a copy (CloneBackward0), never A itself
        return input.clone()
    result, square = None, input
    while n:
        if n & 1:
            result = square if result is None else matmul(result, square)
        n >>= 1
        if n:
            square = matmul(square, square)
    return result
