"""Matrix functions with hand-derived backwards: inv and det (torch.linalg.inv, linalg.det,
torch.inverse, torch.det; docs/derivations.md#inverse-and-determinant). Each takes a square
matrix or a batch of them (..., n, n); NumPy's (CuPy's) linalg computes the values.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from .. import backend
from ..autograd import Function
from ..precision import is_floating
from ..tensor import Tensor

__all__ = ["inv", "det"]


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
