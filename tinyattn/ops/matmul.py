"""Matrix products: ``matmul`` (batched, broadcasting) and the fused ``linear``.

Shapes: ``a`` (..., M, K) @ ``b`` (..., K, N) -> (..., M, N); batch dims broadcast.
A 1-D ``a`` acts as (1, K) and a 1-D ``b`` as (K, 1), with that axis dropped from the output,
as in NumPy and PyTorch (docs/derivations.md#matmul).
"""
from __future__ import annotations

import math
from typing import Optional

import numpy as np

from .. import backend
from ..autograd import Function, name_node, unbroadcast
from ..tensor import Tensor
from .shape import ShapeError

__all__ = ["matmul", "linear", "bmm"]


def _refuse_integer_mix(op: str, *tensors: Tensor) -> None:
    """torch's matrix products need one dtype: an integer or bool operand next to a floating
    one (``long_ids @ weight``, ``Linear`` on an int64 batch) raises there. NumPy would
    promote to float64, a result torch never gives, so refuse it as torch does. (Floating
    mixes are refused, or cast under autocast, by Function.apply.)"""
    dtypes = [t.dtype for t in tensors]
    if len(set(dtypes)) > 1 and any(d.kind in "biu" for d in dtypes):
        names = " and ".join(str(d) for d in dtypes)
        raise RuntimeError(f"{op}: expected m1 and m2 to have the same dtype, but got {names} "
                           f"(as PyTorch); convert the integer tensor with .float() (or "
                           f".to(dtype)) first")


def _refuse_bool(op: str, *tensors: Tensor) -> None:
    """torch has no bool matrix product (CPU or GPU); NumPy's would be a logical
    or-of-ands, not the count a learner may expect from ``mask @ mask``: refuse it."""
    if any(t.dtype == np.bool_ for t in tensors):
        raise NotImplementedError(
            f"\"addmm_impl_cpu_\" not implemented for 'Bool' ({op} of bool tensors, as "
            f"torch; convert them with .int() for counts or .float())")


def _swap(x):
    """x^T over the last two axes: (..., M, N) -> (..., N, M), a view. Shared by the
    attention ops."""
    return x.swapaxes(-1, -2)


def _rows(x, width: int):
    """x (..., width) as a (rows, width) matrix; reshape(-1, 0) cannot infer the rows of a
    tensor with no columns, so they are counted."""
    rows = 1
    for n in x.shape[:-1]:
        rows *= n
    return x.reshape(rows, width)


# torch's CPU bmm (the batched path of matmul) multiplies small matrices, K*M*N under this,
# with a plain loop: out[m, n] = ((0 + a[m, 0] b[0, n]) + a[m, 1] b[1, n]) + ..., in k order,
# each step rounded to the dtype (float32 for float16/bfloat16 inputs: Function.apply already
# computes those in float32 and rounds once). A BLAS kernel adds the same products in another
# order, which can differ from torch's by more than assert_close's float32 tolerance where the
# sum cancels ((10,) @ (5, 5, 10, 5) in op_db's matmul samples: 1.5e-5). Larger products go to
# BLAS there as here (MKL's order is not reproducible: both are equally accurate).
_SMALL_BMM = 400


def _batched(a2, b2):
    """a2 @ b2 with at least one operand batched (torch's bmm path): small products (K*M*N <
    _SMALL_BMM) accumulated in k order as torch's CPU kernel does, others by BLAS."""
    m, k = a2.shape[-2:]
    n = b2.shape[-1]
    if k * m * n >= _SMALL_BMM or k == 0 or type(a2) is not np.ndarray \
            or a2.dtype.kind not in "fc":
        return a2 @ b2
    batch = np.broadcast_shapes(a2.shape[:-2], b2.shape[:-2])
    out = np.zeros(batch + (m, n), dtype=np.result_type(a2.dtype, b2.dtype))
    for i in range(k):                       # acc += a[..., m, i] * b[..., i, n], i = 0..K-1
        out += a2[..., :, i, None] * b2[..., i, None, :]
    return out


class Matmul(Function):
    """out = a @ b.

    Each out[m, n] = sum_k a[m, k] b[k, n], so d out[m, n] / d a[m, k] = b[k, n]:
        da = g @ b^T    (..., M, N) @ (..., N, K) -> (..., M, K)
        db = a^T @ g    (..., K, M) @ (..., M, N) -> (..., K, N)
    then summed over any batch dims the input was broadcast along. When b is a 2-D weight and
    a is (B, S, K), every product folds the batch into rows, e.g. db is one
    (K, B*S) @ (B*S, N) product instead of B products summed afterwards: the batch sum happens
    inside the matrix multiply, and one large BLAS call beats B small ones.
    """

    promotes_inputs = False    # mixed floating dtypes: refused, as torch refuses

    def forward(self, a, b):
        a2 = a[None, :] if a.ndim == 1 else a   # (K,) -> (1, K)
        b2 = b[:, None] if b.ndim == 1 else b   # (K,) -> (K, 1)
        if b2.ndim == 2 and a2.ndim > 2:        # fold batch dims into rows: one BLAS call
            k, n = b2.shape
            out = (_rows(a2, k) @ b2).reshape(a2.shape[:-1] + (n,))  # (B*M, K) @ (K, N)
        elif a2.ndim > 2 or b2.ndim > 2:
            out = _batched(a2, b2)              # (..., M, K) @ (..., K, N) -> (..., M, N)
        else:
            out = a2 @ b2                       # (M, K) @ (K, N): one BLAS call, as torch's mm
        needs_a, needs_b = self.needs_input_grad
        if a.ndim <= 2 and b.ndim >= 3 and b.size and needs_a:
            # torch computes a vector or matrix times a batch as (b^T a^T)^T with b^T folded
            # into one matrix: it keeps that copy, not b, so writing to b after the op leaves
            # its backward valid; keep a copy too (no version check on b, as torch)
            b = b2 = b.copy()
        # as torch's mm: a is kept only when b needs a gradient (db = a^T g), b only when a
        # does (da = g b^T); a write to the other after the op leaves this backward valid
        self.save_for_backward(a if needs_b else None, b if needs_a else None,
                               a2 if needs_b else None, b2 if needs_a else None, out.shape,
                               a.shape, b.shape, a2.shape, b2.shape)
        if b.ndim == 1:
            out = out[..., 0]
        if a.ndim == 1:
            out = out[..., 0, :] if b.ndim > 1 else out[..., 0]
        return out

    def backward(self, grad):
        _, _, a2, b2, out_shape, a_shape, b_shape, a2_shape, b2_shape = self.saved
        g = grad.reshape(out_shape)             # restore the (..., M, N) axes dropped for 1-D
        folded = len(b2_shape) == 2 and len(a2_shape) > 2
        da = db = None
        if self.needs_input_grad[0]:
            if b2.dtype.kind == "c":            # complex: da = g @ conj(b)^T, db = conj(a)^T @ g
                b2 = b2.conj()                  # (torch's convention, docs/derivations.md)
            if folded:
                k, n = b2_shape
                da = (_rows(g, n) @ b2.T).reshape(a_shape)  # (B*M, N) @ (N, K)
            else:
                da = unbroadcast(g @ _swap(b2), a2_shape).reshape(a_shape)  # (..., M, K)
        if self.needs_input_grad[1]:
            if a2.dtype.kind == "c":
                a2 = a2.conj()
            if folded:
                k, n = b2_shape
                db = _rows(a2, k).T @ _rows(g, n)  # (K, B*S) @ (B*S, N) -> (K, N)
            else:
                db = unbroadcast(_swap(a2) @ g, b2_shape)    # (..., K, N)
            db = db.reshape(b_shape)
        return da, db


class Linear(Function):
    """out = x @ W^T + b, with W of shape (out_features, in_features) as in PyTorch
    (docs/derivations.md#linear).

    x (..., in) -> out (..., out). With x flattened to X (N, in) and G (N, out):
        dX = G @ W          (N, out) @ (out, in) -> (N, in)
        dW = G^T @ X        (out, N) @ (N, in)   -> (out, in)
        db = sum_n G[n]     (out,)
    """

    promotes_inputs = False    # mixed floating dtypes: refused, as torch refuses

    def forward(self, x, weight, bias=None):
        # as torch's addmm/mm: x is kept only for dW and W only for dX, so an in-place
        # write to an input whose partner needs no gradient leaves backward valid
        needs = self.needs_input_grad
        self.save_for_backward(x if needs[1] else None, weight if needs[0] else None)
        self.shapes = x.shape, weight.shape
        out_features, in_features = weight.shape
        x2 = _rows(x, in_features)         # (..., in) -> (N, in): one BLAS call
        out = x2 @ weight.T                     # (N, in) @ (in, out) -> (N, out)
        if bias is not None:
            out += bias
        return out.reshape(x.shape[:-1] + (out_features,))

    def backward(self, grad):
        x, weight = self.saved
        x_shape, (out_features, in_features) = self.shapes
        g2 = _rows(grad, out_features)     # (..., out) -> (N, out)
        dx = dw = db = None
        if self.needs_input_grad[0]:
            dx = (g2 @ weight).reshape(x_shape)  # (N, out) @ (out, in) -> (..., in)
        if self.needs_input_grad[1]:
            dw = g2.T @ _rows(x, in_features)  # (out, N) @ (N, in) -> (out, in)
        if len(self.needs_input_grad) > 2 and self.needs_input_grad[2]:
            db = backend.accurate_sum(g2, 0)    # (N, out) -> (out,)
        return dx, dw, db


def _in_torch_words(a_shape: tuple, b_shape: tuple, explanation: str) -> str:
    """torch's message for two matrices that do not line up (2-d @ 2-d: 'mat1 and mat2 shapes
    cannot be multiplied (2x3 and 4x5)'), with tinyattn's ``explanation`` after it."""
    if len(a_shape) == 2 and len(b_shape) == 2:
        return (f"mat1 and mat2 shapes cannot be multiplied ({a_shape[0]}x{a_shape[1]} and "
                f"{b_shape[0]}x{b_shape[1]}) ({explanation})")
    return explanation


def matmul(a: Tensor, b: Tensor) -> Tensor:
    if a.ndim == 0 or b.ndim == 0:
        raise ShapeError(f"matmul: both operands need at least 1 dim, got shapes {a.shape} "
                         f"and {b.shape}; use * for scaling by a number")
    k_a = a.shape[-1]
    k_b = b.shape[0] if b.ndim == 1 else b.shape[-2]
    if k_a != k_b:
        raise ShapeError(_in_torch_words(a.shape, b.shape, (
            f"matmul: shapes {a.shape} and {b.shape} do not line up: the last dim of the "
            f"first ({k_a}) must equal the second-to-last of the second ({k_b}); did you mean "
            f"to transpose one of them?")))
    if a.dtype != b.dtype and "c" in (a.dtype.kind, b.dtype.kind):
        raise RuntimeError(f"matmul: expected both operands to have the same dtype, got "
                           f"{a.dtype} and {b.dtype} (torch does not promote a real operand "
                           f"of a complex matmul either); convert one with .to({a.dtype if a.dtype.kind == 'c' else b.dtype})")
    _refuse_integer_mix("matmul", a, b)
    _refuse_bool("matmul", a, b)
    try:
        return Matmul.apply(a, b)
    except ValueError:
        raise RuntimeError(f"matmul: batch dims of {a.shape} and {b.shape} do not broadcast") \
            from None


def bmm(input: Tensor, mat2: Tensor) -> Tensor:  # noqa: A002 - PyTorch's names
    """Batched matrix product of two 3-D tensors, (B, M, K) @ (B, K, N) -> (B, M, N), with
    no broadcasting (PyTorch's ``bmm``; ``matmul`` broadcasts). Its backward is matmul's."""
    for name, t in (("input", input), ("mat2", mat2)):
        if t.ndim != 3:
            raise ValueError(f"bmm: {name} must be a 3-D tensor (B, rows, cols), got shape "
                             f"{t.shape}; use matmul for other shapes")
    batch, _, k = input.shape
    if mat2.shape[:2] != (batch, k):
        raise ShapeError(f"Expected size for first two dimensions of batch2 tensor to be: "
                         f"[{batch}, {k}] but got: [{mat2.shape[0]}, {mat2.shape[1]}]. (bmm: "
                         f"input {input.shape} needs mat2 of shape ({batch}, {k}, N), got "
                         f"{mat2.shape}; bmm does not broadcast (matmul does))")
    _refuse_integer_mix("bmm", input, mat2)
    _refuse_bool("bmm", input, mat2)
    return name_node(Matmul.apply(input, mat2), "BmmBackward0")   # matmul's: UnsafeView


def linear(x: Tensor, weight: Tensor, bias: Optional[Tensor] = None) -> Tensor:
    """``x @ weight.T + bias`` as one op (PyTorch's ``F.linear``)."""
    if weight.ndim != 2:
        raise ValueError(f"linear: weight must be 2-D (out_features, in_features), got shape "
                         f"{weight.shape}")
    if x.ndim == 0 or x.shape[-1] != weight.shape[1]:
        rows = math.prod(x.shape[:-1]) if x.ndim else 1
        raise ShapeError(f"mat1 and mat2 shapes cannot be multiplied ({rows}x"
                         f"{x.shape[-1] if x.ndim else 1} and {weight.shape[1]}x"
                         f"{weight.shape[0]}) (linear: input of shape {x.shape} has "
                         f"{x.shape[-1] if x.ndim else 0} features but weight {weight.shape} "
                         f"expects in_features={weight.shape[1]})")
    if bias is not None and bias.shape != (weight.shape[0],):
        raise ValueError(f"linear: bias has shape {bias.shape}, expected ({weight.shape[0]},)")
    _refuse_integer_mix("linear", x, weight, *(() if bias is None else (bias,)))
    if bias is None:
        return Linear.apply(x, weight)
    return Linear.apply(x, weight, bias)
