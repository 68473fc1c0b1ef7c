"""PyTorch spellings that are special cases of other ops: ``mm`` (matmul of two matrices,
differentiated by matmul's backward), and the comparisons ``equal`` and ``allclose``, which
answer one Python bool and have no gradient.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from .. import backend
from ..precision import DtypeError
from ..tensor import Tensor
from .matmul import matmul

__all__ = ["mm", "spmm", "equal", "allclose", "detach_"]


def mm(input: Tensor, mat2: Tensor) -> Tensor:  # noqa: A002 - PyTorch's name
    """(n, m) @ (m, p) -> (n, p); both must be matrices, as in ``torch.mm`` (use matmul or
    ``@`` for batches and vectors). torch's errors: TypeError for a non-tensor, RuntimeError
    for a tensor that is not a matrix."""
    return _matrix_product("mm", input, mat2)


def spmm(input: Tensor, mat2: Tensor) -> Tensor:  # noqa: A002 - PyTorch's name
    """``torch.spmm``: ``mm`` for a sparse first operand. tinyattn has no sparse tensors, so
    with the dense matrices it gets (pytorch/examples' GCN once its adjacency is dense) it is
    ``mm``, as torch's is for dense operands (same value, same gradient)."""
    return _matrix_product("spmm", input, mat2)


def _matrix_product(op: str, input: Tensor, mat2: Tensor) -> Tensor:  # noqa: A002
    for name, t in (("input", input), ("mat2", mat2)):
        if not isinstance(t, Tensor):
            raise TypeError(f"{op}(): argument {name!r} must be Tensor, not "
                            f"{type(t).__name__}")
        if t.ndim != 2:
            raise RuntimeError(f"{op}: {name} must be a 2-D tensor (a matrix), got shape "
                               f"{t.shape}; use torch.matmul (or @) for batched or 1-D "
                               f"operands")
    return matmul(input, mat2)


def _pair(name: str, a: Any, b: Any) -> None:
    if not isinstance(a, Tensor) or not isinstance(b, Tensor):
        raise TypeError(f"{name} compares two tensors, got {type(a).__name__} and "
                        f"{type(b).__name__}")
    if a.device != b.device:
        raise RuntimeError(f"{name}: the tensors are on different devices ({a.device} and "
                           f"{b.device})")


def equal(input: Tensor, other: Tensor) -> bool:  # noqa: A002 - PyTorch's name
    """True when both have the same shape and the same values (``torch.equal``); NaN is
    never equal to NaN."""
    _pair("equal", input, other)
    if input.shape != other.shape:
        return False
    xp = backend.get_array_module(input._data)
    return bool(backend.to_host(xp.array_equal(input._data, other._data)))


def allclose(input: Tensor, other: Tensor, rtol: float = 1e-5,  # noqa: A002
             atol: float = 1e-8, equal_nan: bool = False) -> bool:
    """True when |input - other| <= atol + rtol * |other| everywhere (``torch.allclose``),
    after broadcasting the two shapes."""
    _pair("allclose", input, other)
    if input.dtype != other.dtype:      # torch's "Float did not match Double", as isclose
        raise DtypeError(f"allclose: the tensors have different dtypes ({input.dtype} and "
                         f"{other.dtype}); convert one with .to(other.dtype) first")
    try:
        np.broadcast_shapes(input.shape, other.shape)
    except ValueError:
        raise RuntimeError(f"allclose: shapes {input.shape} and {other.shape} do not broadcast"
                         ) from None
    xp = backend.get_array_module(input._data)
    close = xp.allclose(input._data, other._data, rtol=rtol, atol=atol, equal_nan=equal_nan)
    return bool(backend.to_host(xp.asarray(close)))


def detach_(x: Tensor) -> Tensor:
    """``x.detach_()``: x itself leaves the graph (no history, no gradient from now on), in
    place; the values are not touched, so the version does not change. Views are refused, as
    in PyTorch ("Can't detach views in-place"): their base would still be in the graph."""
    if x._is_view and x.requires_grad:
        raise RuntimeError("detach_: Can't detach views in-place. Use detach() instead (y = "
                           "x.detach() gives a new tensor sharing the memory)")
    x._ctx = None
    x._requires_grad = False
    return x
