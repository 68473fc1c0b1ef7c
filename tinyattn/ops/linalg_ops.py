"""Matrix functions with hand-derived backwards: inv and det (torch.linalg.inv, linalg.det,
torch.inverse, torch.det; docs/derivations.md#inverse-and-determinant). Each takes a square
matrix or a batch of them (..., n, n); NumPy's (CuPy's) linalg computes the values.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from .. import backend
from ..amp.dispatch import cast_args
from ..autograd import Function, keep_versions, name_node
from ..precision import is_floating
from ..tensor import Tensor
from .return_types import return_type
from .decompositions import converged

__all__ = ["inv", "det", "slogdet", "logdet", "solve", "eigvalsh", "svdvals"]

SignLogAbsDet = return_type("linalg_slogdet", ["sign", "logabsdet"])


def _mT(a: Any) -> Any:
    return backend.get_array_module(a).swapaxes(a, -1, -2)


class Inv(Function):
    """out = A^-1.   From A A^-1 = I: dA A^-1 + A d(A^-1) = 0, so d(A^-1) = -A^-1 dA A^-1;
    the adjoint of that map gives dA = -out^T g out^T (only the output is kept)."""

    def forward(self, a):
        xp = backend.get_array_module(a)
        try:
            out = xp.asarray(xp.linalg.inv(a))
        except np.linalg.LinAlgError:
            raise RuntimeError("linalg.inv: the matrix is singular (not invertible), as torch "
                               "reports; use linalg.pinv for a least-squares inverse") from None
        self.save_for_backward(out)
        return out

    def backward(self, grad):
        (out,) = self.saved
        return -(_mT(out) @ grad @ _mT(out))


class Det(Function):
    """out = det A.   Jacobi's formula: d det A = det A * tr(A^-1 dA), so
    dA = g * det A * A^-T (for invertible A; A and out are kept, as torch)."""

    def forward(self, a):
        xp = backend.get_array_module(a)
        out = xp.asarray(xp.linalg.det(a))
        self.save_for_backward(a, out)
        return out

    def backward(self, grad):
        a, out = self.saved
        xp = backend.get_array_module(grad)
        scale = (grad * out)[..., None, None]
        return scale * _mT(xp.linalg.inv(a))


class LogAbsDet(Function):
    """out = log |det A|.   d log|det A| = tr(A^-1 dA) (Jacobi's formula over det A), so
    dA = g A^-T. ``nan_if_negative`` (logdet) makes out NaN where det A < 0, as torch."""

    def forward(self, a, nan_if_negative: bool):
        xp = backend.get_array_module(a)
        sign, out = xp.linalg.slogdet(a)
        out = xp.asarray(out)
        if nan_if_negative:
            out = xp.asarray(xp.where(sign < 0, np.nan, out).astype(a.dtype))
        self.save_for_backward(a, None)    # A, as torch (slogdet keeps the sign: below)
        return out

    def backward(self, grad):
        a, _ = self.saved
        xp = backend.get_array_module(grad)
        return grad[..., None, None] * _mT(xp.linalg.inv(a))


class Solve(Function):
    """X = A^-1 B (A X = B).   dB = A^-T g (X is linear in B); dA = -dB X^T (from
    dA X + A dX = 0: dX = -A^-1 dA X). B is (..., n) or (..., n, k)."""

    def forward(self, a, b, vector: bool):
        xp = backend.get_array_module(a)
        rhs = b[..., None] if vector else b
        try:
            out = xp.linalg.solve(a, rhs)
        except np.linalg.LinAlgError:
            raise RuntimeError("linalg.solve: the matrix A is singular (not invertible), as "
                               "torch reports") from None
        out = out[..., 0] if vector else out
        self.save_for_backward(a, out, vector, b.shape)
        return out

    def backward(self, grad):
        a, out, vector, b_shape = self.saved
        xp = backend.get_array_module(grad)
        g = grad[..., None] if vector else grad
        x = out[..., None] if vector else out
        db = xp.linalg.solve(_mT(a), g)
        da = -(db @ _mT(x))
        return (_sum_to(da, a.shape) if self.needs_input_grad[0] else None,
                _sum_to(db[..., 0] if vector else db, b_shape)
                if self.needs_input_grad[1] else None)


def _sum_to(grad: Any, shape: Any) -> Any:
    """grad summed over the leading batch dims it has beyond ``shape`` (broadcast batches)."""
    extra = grad.ndim - len(shape)
    if extra > 0:
        grad = grad.sum(axis=tuple(range(extra)))
    axes = tuple(i for i, n in enumerate(shape) if n == 1 and grad.shape[i] != 1)
    return grad.sum(axis=axes, keepdims=True) if axes else grad


class Eigvalsh(Function):
    """w = the eigenvalues of a symmetric A (ascending), A = V diag(w) V^T (the lower
    triangle is read, or the upper with UPLO="U").   For distinct eigenvalues
    dw_i = v_i^T dA v_i, so dA = V diag(g) V^T."""

    def forward(self, a, uplo: str):
        xp = backend.get_array_module(a)
        w, v = converged("linalg.eigh", "eigenvalues", xp.linalg.eigh, a, UPLO=uplo)
        w = xp.asarray(w)
        self.save_for_backward(v, w)                    # w: as torch keeps it
        return w

    def backward(self, grad):
        v, _ = self.saved
        return (v * grad[..., None, :]) @ _mT(v)


class Svdvals(Function):
    """s = the singular values of A (descending), A = U diag(s) V^T.   For distinct
    singular values ds_i = u_i^T dA v_i, so dA = U diag(g) V^T."""

    def forward(self, a):
        xp = backend.get_array_module(a)
        u, s, vt = converged("linalg.svd", "singular values", xp.linalg.svd, a,
                             full_matrices=False)
        s = xp.asarray(s)
        self.save_for_backward(u, vt, s)                # s: as torch keeps it
        return s

    def backward(self, grad):
        u, vt, _ = self.saved
        return (u * grad[..., None, :]) @ vt


class DetSign(Function):
    """out = sign(det A), piecewise constant: dA = 0 (torch gives the sign a graph too)."""

    def forward(self, a):
        xp = backend.get_array_module(a)
        self.save_for_backward(a.shape)
        return xp.asarray(xp.linalg.slogdet(a)[0]).astype(a.dtype)

    def backward(self, grad):
        (shape,) = self.saved
        return backend.get_array_module(grad).zeros(shape, dtype=grad.dtype)


def _square(a: Tensor, op: str) -> None:
    if not isinstance(a, Tensor) or a.ndim < 2 or a.shape[-1] != a.shape[-2]:
        shape = getattr(a, "shape", None)
        raise RuntimeError(f"{op}: A must be batches of square matrices, but they are "
                           f"{shape[-2] if shape is not None and len(shape) >= 2 else '?'} by "
                           f"{shape[-1] if shape else '?'} matrices")
    if not is_floating(a.dtype):
        raise RuntimeError(f"{op}: Expected a floating point or complex tensor as input. Got "
                           f"{a.dtype.name.capitalize()}")


def inv(A: Tensor) -> Tensor:  # noqa: N803 - torch.linalg's name
    """The inverse of a square matrix or a batch of them (``torch.linalg.inv``)."""
    _square(A, "linalg.inv")
    return Inv.apply(A)


def det(A: Tensor) -> Tensor:  # noqa: N803 - torch.linalg's name
    """The determinant of a square matrix or a batch of them (``torch.linalg.det``)."""
    _square(A, "linalg.det")
    return Det.apply(A)


def slogdet(A: Tensor) -> SignLogAbsDet:  # noqa: N803 - torch.linalg's name
    """(sign, log |det A|) of a square matrix or a batch (``torch.linalg.slogdet``); the
    sign has no gradient."""
    _square(A, "linalg.slogdet")
    sign = name_node(DetSign.apply(A), "LinalgSlogdetBackward0")   # torch: one node, both
    logabsdet = name_node(LogAbsDet.apply(A, nan_if_negative=False), "LinalgSlogdetBackward0")
    # torch's one node keeps A and the sign output, not log|det|: a write to the sign after
    # the op makes backward raise, a write to log|det| does not
    return SignLogAbsDet(sign, keep_versions(logabsdet, sign))


def logdet(input: Tensor) -> Tensor:  # noqa: A002 - PyTorch's name
    """log det A (NaN where det A < 0, -inf where it is 0) (``torch.logdet``)."""
    _square(input, "logdet")
    return LogAbsDet.apply(input, nan_if_negative=True)


def solve(A: Tensor, B: Tensor, *, left: bool = True) -> Tensor:  # noqa: N803
    """X with A X = B (``torch.linalg.solve``): A (..., n, n), B (..., n) or (..., n, k),
    batches broadcast. ``left=False`` (X A = B) is not supported."""
    if not left:
        raise NotImplementedError("linalg.solve(left=False) is not implemented; solve "
                                  "A^T X^T = B^T instead")
    _square(A, "linalg.solve")
    A, B = cast_args("linalg_solve", A, B)    # float32 in CPU autocast, as torch's
    if B.dtype != A.dtype:
        raise RuntimeError(f"linalg.solve: Expected A and B to have the same dtype, but found "
                           f"A of type {A.dtype.name} and B of type {B.dtype.name} instead")
    vector = B.ndim == 1 or (B.ndim == A.ndim - 1 and B.shape == A.shape[:-1])
    if B.shape[-2 if not vector else -1] != A.shape[-1]:
        raise RuntimeError(f"linalg.solve: incompatible shapes of A {tuple(A.shape)} and B "
                           f"{tuple(B.shape)}")
    return Solve.apply(A, B, vector=vector)


def eigvalsh(A: Tensor, UPLO: str = "L") -> Tensor:  # noqa: N803 - torch.linalg's names
    """The eigenvalues of a symmetric matrix, ascending (``torch.linalg.eigvalsh``)."""
    _square(A, "linalg.eigvalsh")
    if UPLO not in ("L", "U"):
        raise RuntimeError(f"Expected UPLO argument to be 'L' or 'U', but got {UPLO}")
    return Eigvalsh.apply(A, uplo=UPLO)


def svdvals(A: Tensor) -> Tensor:  # noqa: N803 - torch.linalg's name
    """The singular values, descending (``torch.linalg.svdvals``), of (..., m, n)."""
    if A.ndim < 2:
        raise RuntimeError("linalg.svd: The input tensor A must have at least 2 dimensions.")
    if not is_floating(A.dtype):
        raise RuntimeError(f"linalg.svdvals: Expected a floating point or complex tensor as "
                           f"input. Got {A.dtype.name.capitalize()}")
    return Svdvals.apply(A)
