"""A copy of a tensor with one region replaced: ``select_scatter``, ``slice_scatter``,
``diagonal_scatter``, ``diag_embed``, ``index_copy``, ``index_put`` and ``masked_scatter``
(docs/derivations.md#scatter-into-a-region-and-masked-select).

All are one Function, ``WriteRegion``: out = x, except out[region] = src. Each output
element is either a copy of an element of x (outside the region) or of src (inside), so

    dx = g with the region zeroed,        dsrc = g[region]

(``accumulate=True`` adds src into the region instead: then dx = g everywhere). A region is
a ``place`` (an array -> a writable view of it) and a ``key`` (a NumPy index into that view):
a slice or an index for select/slice/index_copy, the diagonal's (row, col) arrays in a view
whose two diagonal dims were moved last, an index tuple for index_put, a boolean mask for
masked_scatter.
"""
from __future__ import annotations

from typing import Any, Callable, Optional, Sequence, Tuple

import numpy as np

from .. import backend
from ..autograd import Function, names_node
from ..factories import zeros
from ..tensor import Tensor
from .shape import _normalize_dim

__all__ = ["select_scatter", "slice_scatter", "diagonal_scatter", "diag_embed",
           "index_copy", "index_copy_", "index_put", "index_put_", "masked_scatter",
           "masked_scatter_", "block_diag"]


def _whole(array: Any) -> Any:
    return array


class WriteRegion(Function):
    """out = x with out[region] = src (or += src with ``accumulate``).
    dx = g, its region zeroed unless accumulating; dsrc = g[region], summed back to src's
    shape where src was broadcast into the region. ``kept`` inputs (index tensors, a mask,
    or src when torch keeps it) are saved as torch saves them, so writing to one before
    backward raises as it does in torch; they get no gradient."""

    def forward(self, x, src, *kept, place: Callable[[Any], Any], key: Any,
                accumulate: bool):
        out = x.copy()
        view = place(out)
        if accumulate:
            backend.scatter_add(view, key, backend.get_array_module(x).broadcast_to(
                src, view[key].shape) if src.shape != view[key].shape else src)
        else:
            view[key] = src
        self.save_for_backward(place, key, accumulate, src.shape, *kept)
        return out

    def backward(self, grad):
        place, key, accumulate, src_shape, *kept = self.saved
        dx = grad
        if not accumulate:
            dx = grad.copy()
            place(dx)[key] = 0
        dsrc = place(grad)[key]
        if dsrc.shape != src_shape:            # src broadcast into the region
            dsrc = _sum_to(dsrc, src_shape)
        return (dx, dsrc) + (None,) * len(kept)


def _sum_to(array: Any, shape: Tuple[int, ...]) -> Any:
    lead = array.ndim - len(shape)
    array = array.sum(axis=tuple(range(lead))) if lead > 0 else array
    axes = tuple(i for i, n in enumerate(shape) if n == 1 and array.shape[i] != 1)
    return array.sum(axis=axes, keepdims=True) if axes else array.reshape(shape)


def _tensor(value: Any, op: str, name: str) -> Tensor:
    if not isinstance(value, Tensor):
        raise TypeError(f"{op}(): argument '{name}' must be Tensor, not "
                        f"{type(value).__name__}")
    return value


def _same_dtype(x: Tensor, src: Tensor, op: str, name: str = "src") -> None:
    if x.dtype != src.dtype:
        raise RuntimeError(f"{op}: expected {name} to have the same dtype as self ({x.dtype}), "
                           f"got {src.dtype}; convert it with .to({x.dtype})")


def _int(value: Any, name: str, op: str) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{op}: {name} must be an int, got {value!r}")
    return int(value)


def _write(op: str, x: Tensor, src: Tensor, place: Callable[[Any], Any], key: Any,
           region_shape: Tuple[int, ...], kept: Tuple[Tensor, ...] = ()) -> Tensor:
    _same_dtype(x, src, op)
    if tuple(src.shape) != tuple(region_shape):
        raise RuntimeError(f"{op}: expected src to have a size equal to the slice of self. "
                           f"src size = {list(src.shape)}, slice size = {list(region_shape)}")
    return WriteRegion.apply(x, src, *kept, place=place, key=key, accumulate=False)


# ------------------------------------------------------------------ views of one region
@names_node("SelectScatterBackward0")
def select_scatter(input: Tensor, src: Tensor, dim: int, index: int) -> Tensor:  # noqa: A002
    """``torch.select_scatter``: a copy of input with ``input.select(dim, index)`` replaced
    by src (src has input's shape without ``dim``)."""
    _tensor(input, "select_scatter", "input")
    _tensor(src, "select_scatter", "src")
    if input.ndim == 0:
        raise IndexError("select_scatter() cannot be applied to a 0-dim tensor.")
    axis = _normalize_dim(_int(dim, "dim", "select_scatter"), input.ndim, "select_scatter")
    index, size = _int(index, "index", "select_scatter"), input.shape[axis]
    if not -size <= index < size:
        raise IndexError(f"select_scatter(): index {index} out of range for tensor of size "
                         f"{input.shape} at dimension {axis}")
    key = (slice(None),) * axis + (index % size,)
    region = input.shape[:axis] + input.shape[axis + 1:]
    return _write("select_scatter", input, src, _whole, key, region)


@names_node("SliceScatterBackward0")
def slice_scatter(input: Tensor, src: Tensor, dim: int = 0,  # noqa: A002
                  start: Optional[int] = None, end: Optional[int] = None,
                  step: int = 1) -> Tensor:
    """``torch.slice_scatter``: a copy of input with ``input[..., start:end:step, ...]``
    (along ``dim``) replaced by src."""
    _tensor(input, "slice_scatter", "input")
    _tensor(src, "slice_scatter", "src")
    axis = _normalize_dim(_int(dim, "dim", "slice_scatter"), max(input.ndim, 1),
                          "slice_scatter")
    step = _int(step, "step", "slice_scatter")
    if step <= 0:
        raise RuntimeError(f"slice step must be positive, got {step}")
    key = (slice(None),) * axis + (slice(start, end, step),)
    region = np.empty(input.shape, dtype=np.bool_)[key].shape
    return _write("slice_scatter", input, src, _whole, key, region)


def _diagonal_key(shape: Tuple[int, ...], offset: int, dim1: int, dim2: int, op: str,
                  device: str = "cpu") -> Tuple[Callable[[Any], Any], Any, Tuple[int, ...]]:
    ndim = len(shape)
    a = _normalize_dim(_int(dim1, "dim1", op), ndim, op)
    b = _normalize_dim(_int(dim2, "dim2", op), ndim, op)
    if a == b:
        raise RuntimeError(f"{op}: diagonal dimensions cannot be identical {dim1}, {dim2}")
    offset = _int(offset, "offset", op)
    rows, cols = shape[a], shape[b]
    length = max(0, min(rows + min(offset, 0), cols - max(offset, 0)))
    steps = backend.array_module_for(device).arange(length)     # on the data's device
    key = (Ellipsis, steps + max(-offset, 0), steps + max(offset, 0))

    def place(array: Any) -> Any:
        return backend.get_array_module(array).moveaxis(array, (a, b), (-2, -1))
    region = tuple(n for i, n in enumerate(shape) if i not in (a, b)) + (length,)
    return place, key, region


@names_node("DiagonalScatterBackward0")
def diagonal_scatter(input: Tensor, src: Tensor, offset: int = 0, dim1: int = 0,  # noqa
                     dim2: int = 1) -> Tensor:
    """``torch.diagonal_scatter``: a copy of input with ``input.diagonal(offset, dim1,
    dim2)`` replaced by src (the diagonal is src's last dim)."""
    _tensor(input, "diagonal_scatter", "input")
    _tensor(src, "diagonal_scatter", "src")
    if input.ndim < 2:
        raise RuntimeError(f"diagonal_scatter: expected a tensor of at least 2 dims, got "
                           f"{input.ndim}")
    place, key, region = _diagonal_key(input.shape, offset, dim1, dim2, "diagonal_scatter",
                                       input.device)
    return _write("diagonal_scatter", input, src, place, key, region)


@names_node("DiagEmbedBackward0")
def diag_embed(input: Tensor, offset: int = 0, dim1: int = -2,  # noqa: A002
               dim2: int = -1) -> Tensor:
    """``torch.diag_embed``: each last-dim vector of input on diagonal ``offset`` of a
    square matrix in dims (dim1, dim2) of the output (one more dim than input): a
    ``diagonal_scatter`` of input into zeros."""
    _tensor(input, "diag_embed", "input")
    offset = _int(offset, "offset", "diag_embed")
    ndim = input.ndim + 1
    a = _normalize_dim(_int(dim1, "dim1", "diag_embed"), ndim, "diag_embed")
    b = _normalize_dim(_int(dim2, "dim2", "diag_embed"), ndim, "diag_embed")
    if a == b:
        raise RuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
    n = (input.shape[-1] if input.ndim else 1) + abs(offset)
    batch = list(input.shape[:-1])
    shape = []
    for i in range(ndim):
        shape.append(n if i in (a, b) else batch.pop(0))
    source = input if input.ndim else input.reshape(1)
    base = zeros(*shape, dtype=input.dtype, device=input.device)
    place, key, _ = _diagonal_key(tuple(shape), offset, a, b, "diag_embed", input.device)
    return WriteRegion.apply(base, source, place=place, key=key, accumulate=False)


# ------------------------------------------------------------------ indexed writes
def _index_array(index: Any, op: str, size: int, name: str = "index") -> Any:
    if not isinstance(index, Tensor) or index.dtype.kind not in "iu":
        raise IndexError(f"{op}(): Expected a long tensor for {name} but got "
                         f"{getattr(index, 'dtype', type(index).__name__)}")
    if index.ndim > 1:
        raise IndexError(f"{op}(): {name} should have dimension 1 or 0 (got {index.ndim})")
    ids = index._data.reshape(-1).astype(np.int64)
    host = backend.to_host(ids)
    if host.size and (host.min() < -size or host.max() >= size):
        bad = host.min() if host.min() < -size else host.max()
        raise IndexError(f"{op}(): index {bad} is out of bounds for dimension with size "
                         f"{size}")
    return ids


@names_node("IndexCopyBackward0")
def index_copy(input: Tensor, dim: int, index: Tensor, source: Tensor) -> Tensor:  # noqa
    """``torch.index_copy``: a copy of input whose slices ``index[i]`` along dim are
    source's slices i (an index repeated: one of its slices wins, as in torch)."""
    _tensor(input, "index_copy", "input")
    _tensor(source, "index_copy", "source")
    axis = _normalize_dim(_int(dim, "dim", "index_copy"), max(input.ndim, 1), "index_copy")
    size = input.shape[axis] if input.ndim else 1
    ids = _index_array(index, "index_copy", size)
    if input.ndim == 0:
        if source.numel() != 1 or ids.size != 1:
            raise IndexError("index_copy_(): source and index of a 0-d self must hold one "
                             "element each")
        return WriteRegion.apply(input, source.reshape(()), index, source, place=_whole,
                                 key=(), accumulate=False)
    if source.ndim != input.ndim and not (source.ndim == 0 and input.ndim == 1):
        raise IndexError(f"index_copy_(): When source and destination are not scalars, their "
                         f"dimensionality must match. Source dimensionality ({source.ndim}), "
                         f"destination dimensionality ({input.ndim})")
    key = (slice(None),) * axis + (ids,)
    region = input.shape[:axis] + (ids.size,) + input.shape[axis + 1:]
    given = source
    if source.ndim == 0:
        source = source.reshape(1)
    if tuple(source.shape) != region:
        raise IndexError(f"index_copy_(): Source/destination tensor must have same slice "
                         f"shapes. Destination slice shape: {region} at dimension {axis} and "
                         f"source slice shape: {tuple(source.shape)}; index has "
                         f"{ids.size} elements")
    return _write("index_copy", input, source, _whole, key, region, (index, given))


def _index_key(input: Tensor, indices: Sequence[Any], op: str
               ) -> Tuple[Tuple[Any, ...], Tuple[int, ...]]:
    """The NumPy index of ``indices`` (on input's device) and the shape it selects."""
    if isinstance(indices, Tensor) or not isinstance(indices, (list, tuple)):
        raise TypeError(f"{op}(): argument 'indices' must be a tuple of Tensors, got "
                        f"{type(indices).__name__}")
    if len(indices) > input.ndim:
        raise IndexError(f"{op}(): too many indices for tensor of dimension {input.ndim} "
                         f"(got {len(indices)})")
    key, host_key = [], []
    dim = 0
    for i, index in enumerate(indices):
        if index is None:
            key.append(slice(None))
            host_key.append(slice(None))
            dim += 1
            continue
        if not isinstance(index, Tensor) or index.dtype.kind not in "iub":
            raise IndexError(f"{op}(): tensors used as indices must be long, int, byte or "
                             f"bool tensors, got {getattr(index, 'dtype', type(index))}")
        data = index._data
        host = backend.to_host(data)
        if data.dtype == np.uint8:
            data, host = data.astype(np.bool_), host.astype(np.bool_)
        if data.dtype == np.bool_:
            if tuple(data.shape) != input.shape[dim:dim + data.ndim]:
                raise IndexError(f"{op}(): The shape of the mask {tuple(data.shape)} at index "
                                 f"{i} does not match the shape of the indexed tensor "
                                 f"{input.shape} at index {dim}")
            dim += max(data.ndim, 1)
        else:
            size = input.shape[dim]
            if host.size and (host.min() < -size or host.max() >= size):
                bad = host.min() if host.min() < -size else host.max()
                raise IndexError(f"{op}(): index {bad} is out of bounds for dimension {dim} "
                                 f"with size {size}")
            data = data.astype(np.int64)
            dim += 1
        key.append(data)
        host_key.append(host)
    return tuple(key), np.empty(input.shape, dtype=np.bool_)[tuple(host_key)].shape


@names_node("IndexPutBackward0")
def index_put(input: Tensor, indices: Sequence[Tensor], values: Tensor,  # noqa: A002
              accumulate: bool = False) -> Tensor:
    """``torch.index_put``: a copy of input with ``input[indices] = values`` (values
    broadcast to the indexed region); ``accumulate=True`` adds them, every repeat of an
    index counting."""
    _tensor(input, "index_put", "input")
    _tensor(values, "index_put", "values")
    key, region = _index_key(input, indices, "index_put")
    try:
        np.broadcast_shapes(tuple(values.shape), region)
        fits = np.broadcast_shapes(tuple(values.shape), region) == region
    except ValueError:
        fits = False
    if not fits:
        raise RuntimeError(f"shape mismatch: value tensor of shape {list(values.shape)} cannot "
                           f"be broadcast to indexing result of shape {list(region)}")
    if values.dtype != input.dtype:
        raise RuntimeError(f"Index put requires the source and destination dtypes match, got "
                           f"{input.dtype} for the destination and {values.dtype} for the "
                           f"source.")
    kept = tuple(i for i in indices if isinstance(i, Tensor))
    return WriteRegion.apply(input, values, *kept, place=_whole, key=key,
                             accumulate=bool(accumulate))


@names_node("MaskedScatterBackward0")
def masked_scatter(input: Tensor, mask: Tensor, source: Tensor) -> Tensor:  # noqa: A002
    """``torch.masked_scatter``: a copy of input (broadcast with mask) whose elements where
    mask is True are source's first elements, in row-major order."""
    _tensor(input, "masked_scatter", "input")
    _tensor(source, "masked_scatter", "source")
    if not isinstance(mask, Tensor) or mask.dtype != np.bool_:
        raise RuntimeError(f"masked_scatter_ only supports boolean masks, but got mask with "
                           f"dtype {getattr(mask, 'dtype', type(mask).__name__)}")
    _same_dtype(input, source, "masked_scatter", "source")
    from .structure import broadcast_tensors
    x, m = broadcast_tensors(input, mask)
    chosen = m._data.copy()
    count = int(backend.to_host(chosen.sum()))       # the source's length: one transfer
    if source.numel() < count:
        raise RuntimeError(f"masked_scatter: expected source to have at least {count} "
                           f"elements (the True elements of mask), got {source.numel()}")
    return WriteRegion.apply(x, source.reshape(-1)[:count], mask, place=_whole, key=chosen,
                             accumulate=False)


def _in_place(name: str, x: Tensor, compute: Callable[[Tensor], Tensor],
              others: Sequence[Any]) -> Tensor:
    from .inplace import _in_place as write_in_place
    return write_in_place(x, name, compute, others)


def index_copy_(x: Tensor, dim: int, index: Tensor, tensor: Tensor) -> Tensor:
    """``Tensor.index_copy_(dim, index, tensor)``: ``index_copy`` written into x."""
    return _in_place("index_copy_", x, lambda t: index_copy(t, dim, index, tensor), (tensor,))


def index_put_(x: Tensor, indices: Sequence[Tensor], values: Tensor,
               accumulate: bool = False) -> Tensor:
    return _in_place("index_put_", x, lambda t: index_put(t, indices, values, accumulate),
                     (values,))


def masked_scatter_(x: Tensor, mask: Tensor, source: Tensor) -> Tensor:
    if isinstance(mask, Tensor) and isinstance(x, Tensor):
        try:
            fits = np.broadcast_shapes(mask.shape, x.shape) == x.shape
        except ValueError:
            fits = False
        if not fits:
            raise RuntimeError(f"masked_scatter_: mask of shape {mask.shape} does not "
                               f"broadcast to self's shape {x.shape}")
    return _in_place("masked_scatter_", x, lambda t: masked_scatter(t, mask, source),
                     (source,))


# ------------------------------------------------------------------ blocks on a diagonal
class BlockDiag(Function):
    """out = zeros with block i (x_i as a matrix) at rows r_i.., cols c_i.. (the blocks one
    after another down the diagonal). Each block is copied once: dx_i = g[its region]."""

    def forward(self, *blocks, regions: Tuple[Tuple[slice, slice], ...],
                shape: Tuple[int, int]):
        xp = backend.get_array_module(blocks[0]) if blocks else np
        out = xp.zeros(shape, dtype=blocks[0].dtype if blocks else np.float32)
        for block, region in zip(blocks, regions):
            out[region] = block
        self.save_for_backward(regions, tuple(b.shape for b in blocks))
        return out

    def backward(self, grad):
        regions, shapes = self.saved
        return tuple(grad[region].reshape(shape) for region, shape in zip(regions, shapes))


def block_diag(*tensors: Tensor) -> Tensor:
    """``torch.block_diag``: the tensors (0-d: 1 x 1, 1-D (n,): 1 x n, 2-D as they are) as
    blocks down the diagonal of one matrix, zeros elsewhere, in their promoted dtype."""
    from ..promotion import result_type
    for i, t in enumerate(tensors):
        _tensor(t, "block_diag", f"tensors[{i}]")
        if t.ndim > 2:
            raise RuntimeError(f"torch.block_diag: Input tensors must have 2 or fewer "
                               f"dimensions. Input {i} has {t.ndim} dimensions")
    if not tensors:
        return zeros(1, 0)
    dtype = result_type(*[Tensor._wrap(t._data.reshape(-1)[:0]) for t in tensors])
    blocks, regions, row, col = [], [], 0, 0
    for t in tensors:
        matrix = t.reshape(1, -1) if t.ndim < 2 else t
        if matrix.dtype != dtype:
            matrix = matrix.to(dtype)
        rows, cols = matrix.shape
        blocks.append(matrix)
        regions.append((slice(row, row + rows), slice(col, col + cols)))
        row, col = row + rows, col + cols
    return BlockDiag.apply(*blocks, regions=tuple(regions), shape=(row, col))
