"""Comparisons, logic and index queries with PyTorch's names: eq, ne, lt, le, gt, ge,
logical_and/or/xor/not, isclose, count_nonzero, nonzero, argsort, any, all, numel.

None of these is differentiable (their results are bools or indices, piecewise constant in
the input), so they compute on the arrays and return tensors that need no gradient, like the
operators ``==``, ``<``, ... of tensor/conversion.py.
"""
from __future__ import annotations

from typing import Any, Optional, Tuple, Union

import numpy as np

from .. import backend
from ..broadcast_error import broadcast_error
from ..precision import DtypeError, refuse_complex_order
from ..promotion import compared_operands
from ..tensor import Tensor
from .compare import _sort_indices
from .reduce import _axes, _single_axis

__all__ = ["eq", "ne", "lt", "le", "gt", "ge", "logical_and", "logical_or", "logical_xor",
           "logical_not", "isclose", "count_nonzero", "nonzero", "argsort", "any", "all",
           "numel"]


def _array(value: Any, op: str, like: Optional[Tensor] = None) -> Any:
    """A tensor's array, or a Python number / bool as it is (NumPy broadcasts it)."""
    if isinstance(value, Tensor):
        if like is not None and value.device != like.device:
            raise RuntimeError(f"{op}: inputs are on different devices ({like.device} and "
                               f"{value.device}); move one with .to(...) first")
        return value._data
    if isinstance(value, (bool, int, float, complex, np.number, np.bool_)):
        return value
    raise TypeError(f"{op}: expected a Tensor or a number, got {type(value).__name__}")


def _elementwise(op: str, ufunc: str, input: Tensor, other: Any) -> Tensor:  # noqa: A002
    if not isinstance(input, Tensor):
        raise TypeError(f"{op}: the first argument must be a Tensor, got "
                        f"{type(input).__name__}")
    a, b = input._data, _array(other, op, input)
    if op in ("lt", "le", "gt", "ge"):      # the logical ops test non-zero: complex is fine
        refuse_complex_order(op, a, b)
    xp = backend.get_array_module(a)
    a, b = compared_operands(a, b)      # torch converts both to the result type first
    try:
        return Tensor._wrap(xp.asarray(getattr(xp, ufunc)(a, b)))
    except ValueError as exc:
        if "broadcast" not in str(exc):
            raise
        raise broadcast_error([input.shape, getattr(other, "shape", ())], op) or RuntimeError(
            f"{op}: shapes {input.shape} and {other.shape} do not broadcast (sizes must match "
            f"or be 1, aligned from the right)") from None


def eq(input: Tensor, other: Any) -> Tensor:  # noqa: A002 - PyTorch's names
    """``input == other`` elementwise (broadcasting), a bool tensor."""
    return _elementwise("eq", "equal", input, other)


def ne(input: Tensor, other: Any) -> Tensor:  # noqa: A002
    return _elementwise("ne", "not_equal", input, other)


def lt(input: Tensor, other: Any) -> Tensor:  # noqa: A002
    return _elementwise("lt", "less", input, other)


def le(input: Tensor, other: Any) -> Tensor:  # noqa: A002
    return _elementwise("le", "less_equal", input, other)


def gt(input: Tensor, other: Any) -> Tensor:  # noqa: A002
    return _elementwise("gt", "greater", input, other)


def ge(input: Tensor, other: Any) -> Tensor:  # noqa: A002
    return _elementwise("ge", "greater_equal", input, other)


def logical_and(input: Tensor, other: Tensor) -> Tensor:  # noqa: A002
    """True where both are non-zero; any dtypes (0 and False are false), as PyTorch."""
    return _logical("logical_and", input, other)


def logical_or(input: Tensor, other: Tensor) -> Tensor:  # noqa: A002
    return _logical("logical_or", input, other)


def logical_xor(input: Tensor, other: Tensor) -> Tensor:  # noqa: A002
    return _logical("logical_xor", input, other)


def _logical(op: str, input: Tensor, other: Tensor) -> Tensor:  # noqa: A002
    if not isinstance(other, Tensor):         # as torch: no Python numbers here
        raise TypeError(f"{op}: other must be a Tensor (as in PyTorch), got "
                        f"{type(other).__name__}; wrap a number with tinyattn.tensor(...)")
    return _elementwise(op, op, input, other)


def logical_not(input: Tensor) -> Tensor:  # noqa: A002
    """True where x is zero (or False); any dtype."""
    if not isinstance(input, Tensor):
        raise TypeError(f"logical_not: expected a Tensor, got {type(input).__name__}")
    return Tensor._wrap(backend.get_array_module(input._data).logical_not(input._data))


def isclose(input: Tensor, other: Tensor, rtol: float = 1e-05, atol: float = 1e-08,  # noqa
            equal_nan: bool = False) -> Tensor:
    """|input - other| <= atol + rtol * |other| elementwise (infinities equal themselves),
    as ``torch.isclose``. The two tensors must have one dtype, as PyTorch requires."""
    if not isinstance(input, Tensor) or not isinstance(other, Tensor):
        raise TypeError("isclose: both arguments must be Tensors")
    if input.dtype != other.dtype:
        raise DtypeError(f"isclose: the tensors have different dtypes ({input.dtype} and "
                        f"{other.dtype}); convert one with .to(other.dtype) first")
    if rtol < 0 or atol < 0:
        raise RuntimeError(f"isclose: rtol and atol must be >= 0, got rtol={rtol}, atol={atol}")
    a, b = input._data, _array(other, "isclose", input)
    xp = backend.get_array_module(a)
    try:
        return Tensor._wrap(xp.asarray(xp.isclose(a, b, rtol=rtol, atol=atol,
                                                  equal_nan=equal_nan)))
    except ValueError as exc:
        raise RuntimeError(f"isclose: shapes {input.shape} and {other.shape} do not "
                           f"broadcast") from exc


def count_nonzero(input: Tensor, dim: Union[int, Tuple[int, ...], None] = None  # noqa: A002
                  ) -> Tensor:
    """How many elements are non-zero, over ``dim`` (all by default); int64."""
    axes = _axes(dim, input.ndim, "count_nonzero")
    xp = backend.get_array_module(input._data)
    counts = (input._data != 0).sum(axis=axes if input.ndim else None)
    return Tensor._wrap(xp.asarray(counts, dtype=np.int64))


def nonzero(input: Tensor, *, as_tuple: bool = False) -> Any:  # noqa: A002
    """The indices of the non-zero elements, in row-major order: an (n, ndim) int64 tensor,
    one row per element (torch's layout; NumPy's nonzero returns a tuple). With
    ``as_tuple=True``, a tuple of ndim 1-D tensors (for indexing: ``x[x.nonzero(as_tuple=
    True)]``); a 0-d tensor counts as 1-D there, as in PyTorch."""
    xp = backend.get_array_module(input._data)
    data = input._data
    if as_tuple:
        found = xp.nonzero(data.reshape(1) if data.ndim == 0 else data)
        return tuple(Tensor._wrap(i.astype(np.int64)) for i in found)
    if data.ndim == 0:
        return Tensor._wrap(xp.zeros((int(data != 0), 0), dtype=np.int64))
    return Tensor._wrap(xp.stack(xp.nonzero(data), axis=1).astype(np.int64))


def argsort(input: Tensor, dim: int = -1, descending: bool = False,  # noqa: A002
            stable: bool = False) -> Tensor:
    """The indices that sort ``input`` along ``dim`` (int64), as ``torch.argsort``: ties keep
    their order with ``stable=True``; without it, on the CPU, the order torch's CPU sort
    leaves them in (ops/tie_order.py), on a GPU the stable order."""
    axis = _single_axis(dim, input.ndim, "argsort")
    refuse_complex_order("argsort", input)
    xp = backend.get_array_module(input._data)
    if input.ndim == 0:
        return Tensor._wrap(xp.zeros((), dtype=np.int64))
    return Tensor._wrap(_sort_indices(input._data, axis, descending, bool(stable))
                       .astype(np.int64))


def any(input: Tensor, dim: Optional[int] = None, keepdim: bool = False) -> Tensor:  # noqa
    """True where any element (along ``dim``) is non-zero (uint8 input gives uint8, as
    PyTorch)."""
    return _any_all("any", input, dim, keepdim)


def all(input: Tensor, dim: Optional[int] = None, keepdim: bool = False) -> Tensor:  # noqa
    """True where every element (along ``dim``) is non-zero."""
    return _any_all("all", input, dim, keepdim)


def _any_all(op: str, input: Tensor, dim: Any, keepdim: bool) -> Tensor:  # noqa: A002
    if not isinstance(input, Tensor):
        raise TypeError(f"{op}: expected a Tensor, got {type(input).__name__}")
    xp = backend.get_array_module(input._data)
    if dim is not None and not isinstance(dim, (int, np.integer)) and len(dim) == 0:
        # torch: any/all over no dims is each element's own truth (not the whole tensor's,
        # as the empty dim of sum/mean/amax is)
        result = input._data != 0
        return Tensor._wrap(result.astype(np.uint8) if input.dtype == np.uint8 else result)
    axes = _axes(dim, input.ndim, op) if dim is not None else None
    result = xp.asarray(getattr(input._data, op)(axis=axes, keepdims=keepdim))
    if input.dtype == np.uint8:
        result = result.astype(np.uint8)
    return Tensor._wrap(result)


def numel(input: Tensor) -> int:  # noqa: A002
    """The number of elements (a Python int)."""
    return input.numel()
