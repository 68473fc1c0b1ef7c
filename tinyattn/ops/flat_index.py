"""Indexing a tensor as if it were flat, and reducing slices into it: ``take``, ``put`` (and
``Tensor.put_``), ``unravel_index``, ``nonzero_static`` and ``index_reduce`` (and
``Tensor.index_reduce_``).

Each is a composition of ops with their own backward (reshape, gather, the region write
of index_put, scatter_reduce), so its gradient is the chain rule through them
(docs/derivations.md#scatter-into-a-region-and-masked-select); unravel_index and
nonzero_static return positions and have none.
"""
from __future__ import annotations

from typing import Any, Tuple

import numpy as np

from .. import backend
from ..autograd import keep_versions, name_node
from ..precision import is_floating
from ..tensor import Tensor
from .index_writes import WriteRegion, _whole
from .indexing import gather
from .layout import expand
from .logic import nonzero
from .scatter_reduce import scatter_reduce
from .shape import _normalize_dim, reshape

__all__ = ["take", "put", "put_", "unravel_index", "nonzero_static", "index_reduce",
           "index_reduce_"]


def _flat_index(index: Tensor, size: int, op: str) -> Tensor:
    """An integer index into a flat tensor of ``size`` elements, negative ones counted from
    the end; out-of-range ones refused (naming the first)."""
    if not isinstance(index, Tensor) or index.dtype.kind not in "iu":
        raise RuntimeError(f"{op}(): Expected a long tensor for index, but got "
                           f"{getattr(index, 'dtype', type(index).__name__)}")
    host = backend.to_host(index._data)
    if host.size and (host.min() < -size or host.max() >= size):
        bad = host.min() if host.min() < -size else host.max()
        raise IndexError(f"{op}(): index {bad} out of range for tensor of size [{size}].")
    return Tensor._wrap(index._data.astype(np.int64) % max(size, 1))


def take(input: Tensor, index: Tensor) -> Tensor:  # noqa: A002 - torch's names
    """``torch.take``: input read as a flat (row-major) tensor at ``index``; the result has
    index's shape. Built of reshape and gather."""
    flat = reshape(input, (-1,))
    ids = _flat_index(index, flat.shape[0], "take")
    out = reshape(gather(flat, 0, reshape(ids, (-1,))), index.shape)
    name_node(out, "TakeBackward0")
    return keep_versions(out, index, input)   # torch's take keeps index and input (put_)


def put(input: Tensor, index: Tensor, source: Tensor,  # noqa: A002
        accumulate: bool = False) -> Tensor:
    """``torch.put``: a copy of input, read as flat, with source's elements written at
    ``index`` (added there with ``accumulate``). Built of reshape and index_put's region
    write, keeping index (and source when it requires grad) as torch's put keeps them."""
    if not isinstance(source, Tensor) or source.numel() != index.numel():
        raise RuntimeError(f"put(): Expected source and index to have the same number of "
                           f"elements, but got source with "
                           f"{getattr(source, 'numel', lambda: '?')()} and index with "
                           f"{index.numel()}")
    flat = reshape(input, (-1,))
    ids = _flat_index(index, flat.shape[0], "put")
    if source.dtype != input.dtype:
        raise RuntimeError(f"put(): expected source ({source.dtype}) to have the dtype of "
                           f"self ({input.dtype})")
    # what torch's put keeps: index, and source whenever source needs a gradient (its
    # backward reshapes to source's shape; accumulate or not, self's needs only its sizes)
    kept = (index, source) if source.requires_grad else (index,)
    out = WriteRegion.apply(flat, reshape(source, (-1,)), *kept, place=_whole,
                            key=(ids._data.reshape(-1),), accumulate=bool(accumulate))
    return name_node(reshape(out, input.shape), "PutBackward0")


def put_(x: Tensor, index: Tensor, source: Tensor, accumulate: bool = False) -> Tensor:
    """``Tensor.put_``: ``put`` written into x."""
    from .inplace import _in_place
    return _in_place(x, "put_", lambda t: put(t, index, source, accumulate), (source,))


def unravel_index(indices: Tensor, shape: Any) -> Tuple[Tensor, ...]:
    """``torch.unravel_index``: flat indices into a tensor of ``shape`` as one int64 tensor
    per dim (negative ones counted from the end)."""
    if not isinstance(indices, Tensor) or indices.dtype.kind not in "iu":
        raise TypeError(f"expected 'indices' to be integer dtype, but got "
                        f"{getattr(indices, 'dtype', type(indices).__name__)}")
    shape = (int(shape),) if isinstance(shape, (int, np.integer)) else tuple(int(n)
                                                                          for n in shape)
    if any(n < 0 for n in shape):
        raise ValueError(f"'shape' cannot have negative values, but got {shape}")
    size = int(np.prod(shape)) if shape else 1
    host = backend.to_host(indices._data).astype(np.int64)
    if host.size and (host.min() < -size or host.max() >= size):
        raise RuntimeError(f"unravel_index: 'indices' must be in range [{-size}, {size - 1}] "
                           f"for shape {shape}")
    coords = np.unravel_index(host % max(size, 1), shape) if shape else ()
    return tuple(Tensor._wrap(backend.to_device(np.asarray(c, dtype=np.int64),
                                                indices.device)) for c in coords)


def nonzero_static(input: Tensor, *, size: int, fill_value: int = -1) -> Tensor:  # noqa
    """``torch.nonzero_static``: ``nonzero`` cut or padded (with ``fill_value``) to
    exactly ``size`` rows."""
    if isinstance(size, bool) or not isinstance(size, (int, np.integer)) or size < 0:
        raise RuntimeError(f"nonzero_static: 'size' must be a non-negative integer, got "
                           f"{size!r}")
    found = backend.to_host(nonzero(input)._data)
    out = np.full((int(size), found.shape[1]), fill_value, dtype=np.int64)
    count = min(int(size), found.shape[0])
    out[:count] = found[:count]
    return Tensor._wrap(backend.to_device(out, input.device))


def index_reduce(input: Tensor, dim: int, index: Tensor, source: Tensor,  # noqa: A002
                 reduce: str, *, include_self: bool = True) -> Tensor:
    """``torch.index_reduce``: a copy of input whose slice ``index[i]`` along dim is
    reduced ("prod", "mean", "amax", "amin") with source's slice i (and with itself when
    ``include_self``): ``scatter_reduce`` with index spread over source's shape."""
    if reduce not in ("prod", "mean", "amax", "amin"):
        raise RuntimeError(f"index_reduce(): Expected reduce to be one of prod, mean, amax or "
                           f"amin but got {reduce}.")
    if not isinstance(index, Tensor) or index.dtype.kind not in "iu" or index.ndim > 1:
        raise IndexError("index_reduce_(): Index is supposed to be a vector")
    if not isinstance(source, Tensor):
        raise TypeError("index_reduce(): source must be a Tensor")
    axis = _normalize_dim(int(dim), max(input.ndim, 1), "index_reduce")
    if input.ndim == 0:                   # one element: reduce it as a (1,) tensor
        if index.numel() != 1 or source.numel() != 1:
            raise IndexError("index_reduce_(): a 0-d self takes one index and one source "
                             "element")
        one = scatter_reduce(reshape(input, (1,)), 0,
                             Tensor._wrap(index._data.reshape(1).astype(np.int64) % 1),
                             reshape(source, (1,)), reduce, include_self=include_self)
        return keep_versions(reshape(one, ()), index, source)
    if source.ndim != input.ndim or source.shape[axis] != index.numel():
        raise IndexError(f"index_reduce_(): source {source.shape} must have input's dims "
                         f"{input.shape} with {index.numel()} slices along dim {axis}")
    view = [1] * input.ndim
    view[axis] = index.numel()
    spread = expand(reshape(index, tuple(view)), source.shape)        # index per source elt
    out = scatter_reduce(input, axis, Tensor._wrap(spread._data.astype(np.int64).copy()),
                         source, reduce, include_self=include_self)
    if reduce in ("mean", "prod") and input.dtype.itemsize == 2 \
            and is_floating(input.dtype) and input.dtype == source.dtype:
        # the values as torch's kernel rounds them; the gradients (mean's grad / count, prod's
        # grad * out / x) are scatter_reduce's, which stay right up to those roundings
        out._data = backend.to_device(_half_sequential(input, axis, index, source,
                                                       include_self, reduce), out.device)
    return keep_versions(out, index)      # torch keeps index (and source): writing raises


def _half_sequential(input: Tensor, axis: int, index: Tensor,  # noqa: A002
                     source: Tensor, include_self: bool, reduce: str) -> np.ndarray:
    """index_reduce's float16/bfloat16 mean and prod as torch's CPU kernel rounds them:
    source's slices are added (multiplied) one at a time, in index order, each result rounded
    to the half dtype; mean's count is kept in the half dtype too and the sum is divided by it
    at the end (rounded once more). (A float32 sum or product rounded once differs in the last
    bits: 0.125 in 123 (1e-3 relative, over float16's tolerance) for a product of 3 factors in
    op_db's samples.)"""
    if reduce == "prod":
        return _half_prod(input, axis, index, source, include_self)
    dtype = input.dtype
    half = lambda v: v.astype(dtype).astype(np.float32)     # noqa: E731 - one c10::Half op
    total = np.moveaxis(backend.to_host(input._data), axis, 0).astype(np.float32)   # copy
    adds = np.moveaxis(backend.to_host(source._data), axis, 0).astype(np.float32)
    where = backend.to_host(index._data).reshape(-1).astype(np.int64) % total.shape[0]
    count = np.ones_like(total)
    if not include_self:
        total[where] = 0.0
        count[where] = 0.0
    for i, slot in enumerate(where):
        total[slot] = half(total[slot] + adds[i])
        count[slot] = half(count[slot] + 1.0)
    mean = half(total / np.maximum(count, 1.0))
    return np.moveaxis(mean, 0, axis).astype(dtype)


def _half_prod(input: Tensor, axis: int, index: Tensor, source: Tensor,  # noqa: A002
               include_self: bool) -> np.ndarray:
    """index_reduce's half "prod": out[slot] = half(out[slot] * source[i]), i in order."""
    dtype = input.dtype
    half = lambda v: v.astype(dtype).astype(np.float32)     # noqa: E731 - one c10::Half op
    total = np.moveaxis(backend.to_host(input._data), axis, 0).astype(np.float32)   # copy
    factors = np.moveaxis(backend.to_host(source._data), axis, 0).astype(np.float32)
    where = backend.to_host(index._data).reshape(-1).astype(np.int64) % total.shape[0]
    if not include_self:
        total[where] = 1.0
    for i, slot in enumerate(where):
        total[slot] = half(total[slot] * factors[i])
    return np.moveaxis(total, 0, axis).astype(dtype)


def index_reduce_(x: Tensor, dim: int, index: Tensor, source: Tensor, reduce: str, *,
                  include_self: bool = True) -> Tensor:
    """``Tensor.index_reduce_``: ``index_reduce`` written into x."""
    from .inplace import _in_place
    return _in_place(x, "index_reduce_", lambda t: index_reduce(
        t, dim, index, source, reduce, include_self=include_self), (source,))
