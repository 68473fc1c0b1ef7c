"""Writing along one dim by index, gather's mirror images: ``scatter`` (a value or src lands
at each index), ``scatter_add`` and ``index_add`` (src is added there), and their in-place
forms ``scatter_``, ``scatter_add_``, ``index_add_``
(docs/derivations.md#scatter-scatter_add-and-index_add).

For dim 0 of a 2-D tensor: scatter writes out[index[i][j]][j] = src[i][j] for every (i, j) of
index (index may be smaller than src and than self in the other dims); index_add adds row i
of source into row index[i] of out. Indices must lie in [0, size) (no negative ones, as in
PyTorch). Where scatter would write two values into one element, which survives is
unspecified (PyTorch says so too); while gradients are recorded tinyattn refuses that, as it
does for ``x[index] = value``, because no gradient could say where each value went.
"""
from __future__ import annotations

import math
import warnings

from typing import Any, Optional, Tuple

import numpy as np

from .. import backend
from ..autograd import Function, is_grad_enabled, keep_versions
from ..precision import DtypeError
from ..tensor import Tensor
from .indexing import along_axis_index
from .inplace import _in_place
from .shape import _normalize_dim

__all__ = ["scatter", "scatter_", "scatter_add", "scatter_add_", "index_add", "index_add_"]


class Scatter(Function):
    """out = x, then out[index positions] = src[i] (or ``value``) for each position i of index.

    The overwritten elements of x never reach the output; every other element passes through;
    each used element of src is copied to one place:
        dx = g with the written positions set to 0,   dsrc[i] = g[index position of i]
    (dsrc is 0 where src is larger than index: those elements are not used). Where index
    repeats a position, one of the values lands there (which one is unspecified, in torch
    too) and every one of them gets that position's gradient: torch's formula exactly.
    """

    promotes_inputs = False    # mixed floating dtypes: refused, as torch refuses

    def forward(self, x, *src, index: Tuple[Any, ...], region: Tuple[slice, ...], value: Any):
        out = x.copy()
        out[index] = src[0][region] if src else value
        self.save_for_backward(index, region, src[0].shape if src else None)
        return out

    def backward(self, grad):
        index, region, src_shape = self.saved
        dx = grad.copy()
        dx[index] = 0
        if src_shape is None:
            return dx
        dsrc = backend.get_array_module(grad).zeros(src_shape, dtype=grad.dtype)
        dsrc[region] = grad[index]
        return dx, dsrc


class ScatterAdd(Function):
    """out = x, then out[index position of i] += src[i] for each position i of index
    (repeated positions add up). Addition passes gradients unchanged:
        dx = g,   dsrc[i] = g[index position of i]   (0 where src is larger than index).
    """

    promotes_inputs = False    # mixed floating dtypes: refused, as torch refuses

    def forward(self, x, src, index: Tuple[Any, ...], region: Tuple[slice, ...]):
        out = x.copy()
        backend.scatter_add(out, index, src[region])
        self.save_for_backward(index, region, src.shape)
        return out

    def backward(self, grad):
        index, region, src_shape = self.saved
        dsrc = backend.get_array_module(grad).zeros(src_shape, dtype=grad.dtype)
        dsrc[region] = grad[index]
        return grad, dsrc


class IndexAdd(Function):
    """out = x, then out[..., ids[i], ...] += alpha * source[..., i, ...] along ``axis``.
        dx = g,   dsource[..., i, ...] = alpha * g[..., ids[i], ...]   (index_select of g).
    """

    promotes_inputs = False    # mixed floating dtypes: refused, as torch refuses
    # torch's backward keeps source (its dsource is expand_as(source)): a write raises there
    versions_checked = (1,)

    def forward(self, x, source, ids, axis: int, alpha: Any):
        out = x.copy()
        where = (slice(None),) * axis + (ids,)
        backend.scatter_add(out, where, _scaled(source, alpha))
        self.save_for_backward(where, alpha)
        return out

    def backward(self, grad):
        where, alpha = self.saved
        dsource = grad[where]
        return grad, (dsource * alpha if alpha != 1 else dsource)


def _scaled(source: Any, alpha: Any) -> Any:
    """alpha * source in source's dtype (integers wrap around, as torch's kernel)."""
    if alpha is True or (alpha == 1 and source.dtype.kind != "b"):
        return source
    if source.dtype.kind == "b":
        return source & bool(alpha)
    if source.dtype.kind in "iu":
        return (source.astype(np.int64) * int(alpha)).astype(source.dtype)
    return source * alpha


# ------------------------------------------------------------------ checks
_TORCH_TYPE_NAMES = {"float16": "c10::Half", "bfloat16": "c10::BFloat16", "float32": "float",
                     "float64": "double", "int8": "int8_t", "uint8": "uint8_t",
                     "int16": "int16_t", "int32": "int", "int64": "int64_t"}


def checked_fill_value(value: Any, dtype: np.dtype) -> Any:
    """``value`` as ``dtype`` holds it, or torch's error when it does not fit (1e30 into
    float16, 1000 into int8): never a silent inf or a wrapped integer."""
    dtype = np.dtype(dtype)
    fits = True
    if dtype.kind in "iu" and not isinstance(value, bool):
        info = np.iinfo(dtype)
        fits = math.isfinite(float(value)) and info.min <= float(value) <= info.max
    elif dtype.kind == "f" or dtype.name == "bfloat16":
        with np.errstate(over="ignore"):
            fits = not (math.isfinite(float(value))
                        and not np.isfinite(np.asarray(value).astype(dtype)))
    if not fits:
        raise RuntimeError(f"value cannot be converted to type "
                           f"{_TORCH_TYPE_NAMES.get(dtype.name, dtype.name)} without overflow")
    return dtype.type(value)


def _index_positions(op: str, x: Tensor, dim: int, index: Tensor, src: Optional[Tensor]
                     ) -> Tuple[Tuple[Any, ...], Tuple[slice, ...]]:
    """Check scatter's arguments as PyTorch does; return the positions index writes to
    (``along_axis_index``) and the region of src they take (src[:index.shape])."""
    if not isinstance(x, Tensor):
        raise TypeError(f"{op}: self must be a Tensor, got {type(x).__name__}")
    if not isinstance(index, Tensor) or index.dtype not in (np.int64, np.int32):
        raise (DtypeError if isinstance(index, Tensor) else TypeError)(f"{op}(): Expected dtype int64 (or int32) for index, got "
                        f"{getattr(index, 'dtype', type(index).__name__)}; convert with "
                        f".long()")
    axis = _normalize_dim(int(dim), max(x.ndim, 1), op)
    if index.ndim != x.ndim or x.ndim == 0:
        raise RuntimeError(f"{op}: index has {index.ndim} dims but self has {x.ndim}; they must "
                           f"have the same number (Index tensor must have the same number of "
                           f"dimensions as self tensor)")
    for other, name in ((x, "self"), (src, "src")):
        if other is None:
            continue
        if other.device != x.device or index.device != x.device:
            raise RuntimeError(f"{op}: self, index and src must be on one device, got "
                               f"{x.device}, {index.device}, {other.device}")
        for d in range(x.ndim):
            if index.shape[d] > other.shape[d] and (name == "src" or d != axis):
                raise ValueError(f"{op}: index {index.shape} is larger than {name} "
                                 f"{other.shape} in dim {d}; index may be larger only along "
                                 f"dim {axis} of self, and never larger than src")
    if src is not None:
        if src.ndim != x.ndim:
            raise RuntimeError(f"{op}: src has {src.ndim} dims but self has {x.ndim}")
        if src.dtype != x.dtype:
            raise RuntimeError(f"{op}(): Expected self.dtype to be equal to src.dtype, got "
                               f"{x.dtype} and {src.dtype}; convert src with .to({x.dtype})")
    ids = index._data
    _check_range(op, ids, x.shape[axis], axis)
    region = tuple(slice(0, n) for n in index.shape)
    return along_axis_index(ids.copy(), axis), region


def flat_when_0d(call: Any, op: str, input: Any, dim: Any, index: Any,  # noqa: A002
                 src: Any) -> Any:
    """torch counts a 0-d self, index or src as 1-d of one element: when one of them is 0-d
    and none has more than one dim, run ``call(input, dim, index, src)`` on 1-d views and
    give the result input's shape. An empty index writes nothing whatever its shape (and
    src's): the call runs with both made empty with input's dims. None otherwise."""
    tensors = [t for t in (input, index, src) if isinstance(t, Tensor)]
    if not isinstance(input, Tensor) or not isinstance(index, Tensor):
        return None
    empty = (0,) * input.ndim
    canonical = index.shape == empty and (not isinstance(src, Tensor) or src.shape == empty)
    if index.numel() == 0 and input.ndim > 0 and not canonical:   # torch: nothing is written
        _normalize_dim(int(dim), input.ndim, op)
        no_src = src.reshape(-1)[:0].reshape(empty) if isinstance(src, Tensor) else src
        return call(input, dim, Tensor._wrap(index._data.reshape(empty)), no_src)
    if all(t.ndim > 0 for t in tensors) or any(t.ndim > 1 for t in tensors):
        return None
    _normalize_dim(int(dim), 1, op)                     # dim must be 0 or -1
    flat_src = src.reshape(-1) if isinstance(src, Tensor) else src
    return call(input.reshape(-1), 0, index.reshape(-1), flat_src).reshape(input.shape)


def _check_range(op: str, ids: Any, size: int, axis: int) -> None:
    if ids.size == 0:
        return
    xp = backend.get_array_module(ids)
    low, high = backend.to_host(xp.stack([ids.min(), ids.max()])).tolist()   # one transfer
    if low < 0 or high >= size:
        raise RuntimeError(f"{op}: index {low if low < 0 else high} is out of bounds for dim "
                           f"{axis} with size {size} (valid: 0 to {size - 1}; negative indices "
                           f"are not allowed, as in PyTorch)")


# ------------------------------------------------------------------ the ops
def scatter(input: Tensor, dim: int, index: Tensor, src: Any = None,  # noqa: A002
            *, value: Any = None, reduce: Optional[str] = None) -> Tensor:
    """``torch.scatter(input, dim, index, src)`` or ``(..., value)``: a copy of input with
    src's elements (or the number ``value``) written at the indexed positions along dim."""
    flat = flat_when_0d(lambda *a: scatter(*a, value=value, reduce=reduce), "scatter", input,
                        dim, index, src)
    if flat is not None:
        return flat
    if reduce is not None:
        if reduce not in ("add", "multiply"):
            raise RuntimeError(f"scatter: reduce argument must be either add or multiply, got "
                               f"{reduce!r} (scatter_reduce has sum, prod, mean, amax, amin)")
        if isinstance(src, Tensor):     # torch's deprecated form: scatter_reduce's sum / prod
            warnings.warn("The reduce argument of torch.scatter with Tensor src is deprecated "
                          "and will be removed in a future PyTorch release. Use "
                          "torch.scatter_reduce instead for more reduction options.",
                          UserWarning, stacklevel=2)
            from .scatter_reduce import scatter_reduce  # noqa: PLC0415 - built on this file
            return scatter_reduce(input, dim, index, src,
                                  "sum" if reduce == "add" else "prod", include_self=True)
        from .scatter_reduce import scatter_number_reduce  # noqa: PLC0415 - built on this file
        return scatter_number_reduce(input, dim, index, src if value is None else value,
                                     reduce)
    if src is not None and value is not None:
        raise TypeError("scatter: give src or value, not both")
    if src is None and value is None:
        raise TypeError("scatter: missing src (a Tensor) or value (a number)")
    tensor_src = src if isinstance(src, Tensor) else None
    if tensor_src is None:
        value = src if value is None else value
        if isinstance(value, Tensor) or not isinstance(value, (int, float, bool, np.number)):
            raise TypeError(f"scatter: value must be a Python number, got "
                            f"{type(value).__name__}")
    positions, region = _index_positions("scatter", input, dim, index, tensor_src)
    if tensor_src is None:
        out = Scatter.apply(input, index=positions, region=region,
                            value=checked_fill_value(value, input.dtype))
    else:
        out = Scatter.apply(input, tensor_src, index=positions, region=region, value=None)
    return keep_versions(out, index)      # torch keeps the index: writing to it raises


def scatter_add(input: Tensor, dim: int, index: Tensor, src: Tensor) -> Tensor:  # noqa: A002
    """``torch.scatter_add``: a copy of input with src's elements added at the indexed
    positions along dim (repeated positions add up)."""
    if not isinstance(src, Tensor):
        raise TypeError(f"scatter_add: src must be a Tensor, got {type(src).__name__}")
    flat = flat_when_0d(scatter_add, "scatter_add", input, dim, index, src)
    if flat is not None:
        return flat
    positions, region = _index_positions("scatter_add", input, dim, index, src)
    out = ScatterAdd.apply(input, src, index=positions, region=region)
    return keep_versions(out, index)      # torch keeps the index: writing to it raises


def index_add(input: Tensor, dim: int, index: Tensor, source: Tensor,  # noqa: A002
              *, alpha: Any = 1) -> Tensor:
    """``torch.index_add``: a copy of input with ``alpha * source`` slice i added into slice
    index[i] along dim; index is 1-D (int64 or int32), source is input's shape with
    len(index) along dim."""
    if not isinstance(input, Tensor) or not isinstance(source, Tensor):
        raise TypeError("index_add: self and source must be Tensors")
    if not isinstance(index, Tensor) or index.dtype not in (np.int64, np.int32) \
            or index.ndim > 1:
        raise (DtypeError if isinstance(index, Tensor) and index.ndim <= 1 else TypeError)(
            f"index_add_(): Expected a 1-D int64 or int32 index, got "
                        f"{getattr(index, 'dtype', type(index).__name__)} of shape "
                        f"{getattr(index, 'shape', '?')}")
    axis = _normalize_dim(int(dim), max(input.ndim, 1), "index_add")
    ids = index._data.reshape(-1)
    if input.ndim == 0:             # torch: one element, one index, a 0-d source
        if source.ndim != 0 or ids.size != 1:
            raise ValueError(f"index_add: source tensor shape must match self tensor shape, "
                             f"excluding the specified dimension. Got self.shape = [] "
                             f"source.shape = {list(source.shape)} (and {ids.size} indices)")
        return index_add(input.reshape(1), 0, index.reshape(1), source.reshape(1),
                         alpha=alpha).reshape(())
    expected = input.shape[:axis] + (ids.size,) + input.shape[axis + 1:]
    if source.shape != expected:
        raise RuntimeError(f"index_add: source has shape {source.shape}, expected {expected} "
                           f"(self {input.shape} with len(index) = {ids.size} along dim {axis})")
    if source.dtype != input.dtype:
        raise DtypeError(f"index_add_(): self ({input.dtype}) and source ({source.dtype}) must "
                        f"have the same dtype")
    # an integer self takes a fractional alpha truncated toward zero, as torch (2.7 -> 2)
    _check_range("index_add", ids, input.shape[axis], axis)
    out = IndexAdd.apply(input, source, ids=ids.astype(np.int64), axis=axis,
                         alpha=_alpha_for(alpha, input.dtype))
    return keep_versions(out, index)      # torch keeps the index: writing to it raises


def _alpha_for(alpha: Any, dtype: np.dtype) -> Any:
    """alpha as index_add multiplies by it: the dtype's own number for floats; a Python int
    for integers (torch's uint8 alpha=-1 subtracts, wrapping around as uint8 does), refused
    where torch refuses it (outside the dtype's range, a negative one counting for unsigned)."""
    if dtype.kind == "b":
        return bool(alpha)
    if dtype.kind not in "iu":
        return dtype.type(alpha)
    info = np.iinfo(dtype)
    low = -int(info.max) - 1 if dtype.kind == "u" else int(info.min)
    if not low <= int(alpha) <= int(info.max):
        checked_fill_value(alpha, dtype)                 # torch's overflow error
    return int(alpha)


def scatter_(x: Tensor, dim: int, index: Tensor, src: Any = None, *, value: Any = None,
             reduce: Optional[str] = None) -> Tensor:
    return _in_place(x, "scatter_", lambda t: scatter(t, dim, index, src, value=value,
                                                      reduce=reduce), (src,))


def scatter_add_(x: Tensor, dim: int, index: Tensor, src: Tensor) -> Tensor:
    return _in_place(x, "scatter_add_", lambda t: scatter_add(t, dim, index, src), (src,))


def index_add_(x: Tensor, dim: int, index: Tensor, source: Tensor, *, alpha: Any = 1
               ) -> Tensor:
    return _in_place(x, "index_add_", lambda t: index_add(t, dim, index, source, alpha=alpha),
                     (source,))
