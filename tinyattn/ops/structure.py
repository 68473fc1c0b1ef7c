"""torch's structural ops built from tinyattn's shape ops: broadcasting (``broadcast_to``,
``broadcast_tensors``, ``broadcast_shapes``), ``atleast_1d/2d/3d``, the stacks (``hstack``,
``vstack``, ``dstack``, ``column_stack``), the splits (``tensor_split``, ``hsplit``,
``vsplit``, ``dsplit``, ``split_with_sizes``), ``select``, ``narrow_copy``, ``fliplr``,
``flipud``, ``rot90``, ``cartesian_prod``, ``combinations`` and ``diagflat``.

None of them is a new Function: each is a composition of ops that have their own backward
(expand, reshape, cat, getitem, flip, transpose, clone, stack), so its gradient is the chain
rule through those, and what backward saves is what they save
(docs/derivations.md#structure-ops-made-of-shape-ops).
"""
from __future__ import annotations

from typing import Any, List, Sequence, Tuple

import numpy as np

from ..autograd import name_node
from ..tensor import Tensor
from .elementwise import clone
from .grids import diag, meshgrid
from .layout import expand, flip
from .shape import _normalize_dim, cat, getitem, reshape, split, stack, transpose

__all__ = ["broadcast_shapes", "broadcast_to", "broadcast_tensors", "atleast_1d",
           "atleast_2d", "atleast_3d", "hstack", "vstack", "dstack", "column_stack",
           "row_stack", "tensor_split", "hsplit", "vsplit", "dsplit", "split_with_sizes",
           "unsafe_split", "unsafe_chunk", "select", "narrow_copy", "fliplr", "flipud",
           "rot90", "cartesian_prod", "combinations", "diagflat"]


def _check_tensor(value: Any, op: str, name: str = "input") -> Tensor:
    if not isinstance(value, Tensor):
        raise TypeError(f"{op}: {name} must be a Tensor, got {type(value).__name__}")
    return value


def _int(value: Any, name: str, op: str) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        if isinstance(value, Tensor) and value.ndim == 0 and value.dtype.kind in "iu":
            return int(value.item())
        raise TypeError(f"{op}: {name} must be an int, got {value!r}")
    return int(value)


# ------------------------------------------------------------------ broadcasting
def broadcast_shapes(*shapes: Any) -> Tuple[int, ...]:
    """``torch.broadcast_shapes``: the shape the given shapes broadcast to (an int is the
    shape (n,)); RuntimeError naming both sizes when two cannot broadcast."""
    result: List[int] = []
    for shape in shapes:
        shape = (shape,) if isinstance(shape, (int, np.integer)) else tuple(shape)
        for size in shape:
            if isinstance(size, bool) or not isinstance(size, (int, np.integer)):
                raise TypeError(f"broadcast_shapes: sizes must be ints, got {shape!r}")
            if size < 0:
                raise RuntimeError(f"broadcast_shapes: Trying to create tensor with negative "
                                   f"dimension {size}: {shape!r}")
        if len(shape) > len(result):
            result = [1] * (len(shape) - len(result)) + result
        for i, size in enumerate(shape):
            j = len(result) - len(shape) + i
            if size == result[j] or size == 1:
                continue
            if result[j] != 1:
                raise RuntimeError(f"broadcast_shapes: Shape mismatch: objects cannot be "
                                   f"broadcast to a single shape: size {result[j]} and size "
                                   f"{size} at dim {j - len(result)}")
            result[j] = int(size)
    return tuple(result)


def broadcast_to(input: Tensor, shape: Sequence[int]) -> Tensor:  # noqa: A002 - torch's name
    """``torch.broadcast_to``: ``input.expand(shape)`` (-1 keeps a dim's size)."""
    return expand(_check_tensor(input, "broadcast_to"), tuple(shape))


def broadcast_tensors(*tensors: Tensor) -> Tuple[Tensor, ...]:
    """``torch.broadcast_tensors``: every tensor expanded to their common shape."""
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tuple(tensors[0])
    for i, t in enumerate(tensors):
        _check_tensor(t, "broadcast_tensors", f"tensor {i}")
    shape = broadcast_shapes(*(t.shape for t in tensors))
    return tuple(expand(t, shape) for t in tensors)


# ------------------------------------------------------------------ at least n dims
def _at_least(op: str, shape_of: Any, tensors: Tuple[Any, ...]) -> Any:
    single = len(tensors) == 1 and isinstance(tensors[0], Tensor)
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tuple(tensors[0])
    out = []
    for i, t in enumerate(tensors):
        _check_tensor(t, op, f"tensor {i}")
        new_shape = shape_of(t.shape)
        if new_shape == t.shape:
            out.append(t)
        elif t.ndim:                # torch unsqueezes a 1-D or 2-D tensor, reshapes a 0-d one
            out.append(name_node(reshape(t, new_shape), "UnsqueezeBackward0"))
        else:
            out.append(reshape(t, new_shape))
    return out[0] if single else tuple(out)


def atleast_1d(*tensors: Any) -> Any:
    """``torch.atleast_1d``: a 0-d tensor as shape (1,); others unchanged. One tensor gives
    a tensor; several (or a list) give a tuple."""
    return _at_least("atleast_1d", lambda s: s if len(s) >= 1 else (1,), tensors)


def atleast_2d(*tensors: Any) -> Any:
    """``torch.atleast_2d``: () -> (1, 1), (n,) -> (1, n); others unchanged."""
    return _at_least("atleast_2d", lambda s: s if len(s) >= 2 else (1,) * (2 - len(s)) + s,
                     tensors)


def atleast_3d(*tensors: Any) -> Any:
    """``torch.atleast_3d``: () -> (1, 1, 1), (n,) -> (1, n, 1), (m, n) -> (m, n, 1)."""
    def shape_of(s: Tuple[int, ...]) -> Tuple[int, ...]:
        if len(s) == 0:
            return (1, 1, 1)
        if len(s) == 1:
            return (1, s[0], 1)
        if len(s) == 2:
            return s + (1,)
        return s
    return _at_least("atleast_3d", shape_of, tensors)


# ------------------------------------------------------------------ stacks
def _tensor_list(tensors: Any, op: str) -> List[Tensor]:
    if isinstance(tensors, Tensor) or not isinstance(tensors, (list, tuple)):
        raise TypeError(f"{op}(): argument 'tensors' must be a tuple or list of Tensors, got "
                        f"{type(tensors).__name__}")
    if len(tensors) == 0:
        raise RuntimeError(f"{op} expects a non-empty TensorList")
    return list(tensors)


def hstack(tensors: Sequence[Tensor]) -> Tensor:
    """``torch.hstack``: cat along dim 0 for 1-D tensors (0-d become (1,)), else dim 1."""
    parts = atleast_1d(tuple(_tensor_list(tensors, "hstack")))
    return cat(parts, 0 if parts[0].ndim == 1 else 1)


def vstack(tensors: Sequence[Tensor]) -> Tensor:
    """``torch.vstack`` (``row_stack``): cat along dim 0 after ``atleast_2d``."""
    return cat(atleast_2d(tuple(_tensor_list(tensors, "vstack"))), 0)


row_stack = vstack


def dstack(tensors: Sequence[Tensor]) -> Tensor:
    """``torch.dstack``: cat along dim 2 after ``atleast_3d``."""
    return cat(atleast_3d(tuple(_tensor_list(tensors, "dstack"))), 2)


def column_stack(tensors: Sequence[Tensor]) -> Tensor:
    """``torch.column_stack``: 0-d and 1-D tensors become columns (n, 1), then cat along
    dim 1."""
    parts = [reshape(t, (t.numel(), 1)) if t.ndim <= 1 else t
             for t in _tensor_list(tensors, "column_stack")]
    return cat(parts, 1)


# ------------------------------------------------------------------ splits
def _piece(x: Tensor, axis: int, start: int, stop: int) -> Tensor:
    return getitem(x, (slice(None),) * axis + (slice(start, max(start, stop)),))


def tensor_split(input: Tensor, indices_or_sections: Any = None, dim: int = 0,  # noqa: A002
                 *, sections: Any = None, indices: Any = None) -> Tuple[Tensor, ...]:
    """``torch.tensor_split``: an int n gives n pieces (the first ``size % n`` one longer);
    a list of indices splits before each (``[2, 5]``: [:2], [2:5], [5:]); a 0-d int tensor
    is a count, a 1-D one a list of indices. Each piece is a slice of input."""
    _check_tensor(input, "tensor_split")
    given = [v for v in (indices_or_sections, sections, indices) if v is not None]
    if len(given) != 1:
        raise TypeError("tensor_split(): give one of indices_or_sections, sections= or "
                        "indices=")
    indices_or_sections = given[0]
    if input.ndim == 0:
        raise RuntimeError("tensor_split expected at least a 1-dimensional tensor, but got a "
                           "tensor with 0 dims")
    axis = _normalize_dim(_int(dim, "dim", "tensor_split"), input.ndim, "tensor_split")
    size = input.shape[axis]
    spec = indices_or_sections
    if isinstance(spec, Tensor):
        if spec.dtype.kind not in "iu" or spec.ndim > 1:
            raise RuntimeError(f"tensor_split expected tensor_indices_or_sections to be a "
                               f"zero-dimensional or one-dimensional tensor of integer dtype, "
                               f"but got a tensor with {spec.ndim} dims of {spec.dtype}")
        spec = int(spec.item()) if spec.ndim == 0 else [int(i) for i in spec.tolist()]
    if isinstance(spec, (int, np.integer)) and not isinstance(spec, bool):
        sections = int(spec)
        if sections <= 0:
            raise RuntimeError(f"number of sections must be larger than 0, got {sections}")
        small, extra = divmod(size, sections)
        bounds, start = [], 0
        for i in range(sections):
            stop = start + small + (1 if i < extra else 0)
            bounds.append((start, stop))
            start = stop
    else:
        indices = [_int(i, "index", "tensor_split") for i in spec]
        edges = [0] + [_clip_index(i, size) for i in indices] + [size]
        bounds = list(zip(edges[:-1], edges[1:]))
    return tuple(_piece(input, axis, a, b) for a, b in bounds)


def _clip_index(index: int, size: int) -> int:
    """Where a split index falls, as a Python slice bound reads it (negative from the end)."""
    if index < 0:
        index += size
    return min(max(index, 0), size)


def _split_by(op: str, input: Tensor, spec: Any, dim: int, min_dims: int) -> Tuple[Tensor, ...]:
    _check_tensor(input, op)
    if input.ndim < min_dims:
        raise RuntimeError(f"torch.{op} requires a tensor with at least {min_dims} dimension, "
                           f"but got a tensor with {input.ndim} dimensions!")
    if isinstance(spec, (int, np.integer)) and not isinstance(spec, bool):
        if spec == 0 or input.shape[dim] % int(spec) != 0:
            raise RuntimeError(f"torch.{op} attempted to split along dimension {dim}, but the "
                               f"size of the dimension {input.shape[dim]} is not divisible by "
                               f"the split_size {spec}!")
    return tensor_split(input, spec, dim)


def hsplit(input: Tensor, indices_or_sections: Any) -> Tuple[Tensor, ...]:  # noqa: A002
    """``torch.hsplit``: ``tensor_split`` along dim 1 (dim 0 for a 1-D tensor); an int count
    must divide that dim evenly."""
    dim = 0 if getattr(input, "ndim", 0) == 1 else 1
    return _split_by("hsplit", input, indices_or_sections, dim, 1)


def vsplit(input: Tensor, indices_or_sections: Any) -> Tuple[Tensor, ...]:  # noqa: A002
    """``torch.vsplit``: ``tensor_split`` along dim 0 of a tensor of at least 2 dims."""
    return _split_by("vsplit", input, indices_or_sections, 0, 2)


def dsplit(input: Tensor, indices_or_sections: Any) -> Tuple[Tensor, ...]:  # noqa: A002
    """``torch.dsplit``: ``tensor_split`` along dim 2 of a tensor of at least 3 dims."""
    return _split_by("dsplit", input, indices_or_sections, 2, 3)


def split_with_sizes(input: Tensor, split_sizes: Sequence[int], dim: int = 0  # noqa: A002
                     ) -> Tuple[Tensor, ...]:
    """``torch.split_with_sizes``: pieces of the given sizes, which must add up to the
    size of ``dim``."""
    _check_tensor(input, "split_with_sizes")
    sizes = [_int(s, "split size", "split_with_sizes") for s in split_sizes]
    if any(s < 0 for s in sizes):
        raise RuntimeError(f"split_with_sizes expects split_sizes have only non-negative "
                           f"entries, but got split_sizes={sizes}")
    return tuple(split(input, sizes, dim))


def unsafe_split(input: Tensor, split_size: Any, dim: int = 0) -> Tuple[Tensor, ...]:  # noqa
    """``torch.unsafe_split``: ``split`` (tinyattn's pieces never alias a later write)."""
    return tuple(split(_check_tensor(input, "unsafe_split"), split_size, dim, _node="UnsafeSplit"))


def unsafe_chunk(input: Tensor, chunks: int, dim: int = 0) -> Tuple[Tensor, ...]:  # noqa
    """``torch.unsafe_chunk``: ``chunk``."""
    from .shape import chunk
    return tuple(chunk(_check_tensor(input, "unsafe_chunk"), chunks, dim, _node="UnsafeSplit"))


# ------------------------------------------------------------------ picking and turning
def select(input: Tensor, dim: int, index: int) -> Tensor:  # noqa: A002 - torch's names
    """``torch.select``: the slice at ``index`` of ``dim``, that dim removed
    (``x.select(1, 2)`` is ``x[:, 2]``)."""
    _check_tensor(input, "select")
    if input.ndim == 0:
        raise IndexError("select() cannot be applied to a 0-dim tensor.")
    axis = _normalize_dim(_int(dim, "dim", "select"), input.ndim, "select")
    index, size = _int(index, "index", "select"), input.shape[axis]
    if not -size <= index < size:
        raise IndexError(f"select(): index {index} out of range for tensor of size "
                         f"{input.shape} at dimension {axis}")
    return getitem(input, (slice(None),) * axis + (index % size,))


def narrow_copy(input: Tensor, dim: int, start: int, length: int) -> Tensor:  # noqa: A002
    """``torch.narrow_copy``: ``narrow`` as a new tensor (a clone of the slice).

    One error differs from ``narrow``'s, as in torch: a dim past the last (``dim >= ndim``)
    is a RuntimeError here (torch's narrow_copy checks it before normalising the dim), while
    a dim below ``-ndim`` is narrow's IndexError."""
    from .rearrange import narrow
    _check_tensor(input, "narrow_copy")
    if input.ndim and isinstance(dim, (int, np.integer)) and not isinstance(dim, bool) \
            and dim >= input.ndim:
        raise RuntimeError(f"narrow_copy: dim {dim} is out of range for a tensor of "
                           f"{input.ndim} dims (expected dim < {input.ndim}); pass a dim "
                           f"from {-input.ndim} to {input.ndim - 1}")
    return clone(narrow(input, dim, start, length))


def fliplr(input: Tensor) -> Tensor:  # noqa: A002
    """``torch.fliplr``: reverse dim 1 (left/right) of a tensor of at least 2 dims."""
    if _check_tensor(input, "fliplr").ndim < 2:
        raise RuntimeError(f"fliplr: Input must be >= 2-d, got shape {input.shape}")
    return flip(input, (1,))


def flipud(input: Tensor) -> Tensor:  # noqa: A002
    """``torch.flipud``: reverse dim 0 (up/down) of a tensor of at least 1 dim."""
    if _check_tensor(input, "flipud").ndim < 1:
        raise RuntimeError("flipud: Input must be >= 1-d, got a 0-d tensor")
    return flip(input, (0,))


def rot90(input: Tensor, k: int = 1, dims: Sequence[int] = (0, 1)) -> Tensor:  # noqa: A002
    """``torch.rot90``: rotate by 90 degrees k times in the plane ``dims``, from the first
    dim towards the second: k=1 is flip(dims[1]) then transpose, k=2 flips both, k=3 is
    flip(dims[0]) then transpose, k=0 a copy."""
    _check_tensor(input, "rot90")
    dims = list(dims)
    if len(dims) != 2:
        raise RuntimeError(f"rot90: expected total rotation dims == 2, but got dims = "
                           f"{len(dims)}")
    if input.ndim < 2:
        raise RuntimeError(f"rot90: expected total dims >= 2, but got total dims = "
                           f"{input.ndim}")
    a, b = (_normalize_dim(_int(d, "dim", "rot90"), input.ndim, "rot90") for d in dims)
    if a == b:
        raise RuntimeError(f"rot90: expected rotation dims to be different, but got dim0 = "
                           f"{dims[0]} and dim1 = {dims[1]}")
    turns = _int(k, "k", "rot90") % 4
    if turns == 1:
        out = transpose(flip(input, (b,)), a, b)
    elif turns == 2:
        out = flip(input, (a, b))
    elif turns == 3:
        out = transpose(flip(input, (a,)), a, b)
    else:
        out = clone(input)
    return name_node(out, "Rot90Backward0")      # torch: one node


# ------------------------------------------------------------------ products of sets
def cartesian_prod(*tensors: Tensor) -> Tensor:
    """``torch.cartesian_prod``: every tuple (a, b, ...) with a from the first 1-D tensor,
    b from the second, ..., as rows of an (N, k) tensor in row-major order (one tensor: the
    tensor itself). Built of meshgrid, reshape and stack."""
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tuple(tensors[0])
    for i, t in enumerate(tensors):
        if _check_tensor(t, "cartesian_prod", f"tensor {i}").ndim != 1:
            raise RuntimeError(f"Expect a 1D vector, but got shape {list(t.shape)}")
    if len(tensors) == 1:
        return tensors[0]
    grids = meshgrid(*tensors, indexing="ij")
    return stack([reshape(g, (-1,)) for g in grids], 1)     # k x (N,) -> (N, k)


def combinations(input: Tensor, r: int = 2, with_replacement: bool = False  # noqa: A002
                 ) -> Tensor:
    """``torch.combinations``: the r-element combinations of a 1-D tensor's elements, as
    rows of a (C, r) tensor in itertools' order (``with_replacement``: repeats allowed).
    r=0 gives an empty (0,) tensor. Built as torch builds it: an r-fold meshgrid of input,
    each grid's elements with increasing indices picked by masked_select, then stacked."""
    _check_tensor(input, "combinations")
    if input.ndim != 1:
        raise RuntimeError(f"Expect a 1D vector, but got shape {list(input.shape)}")
    r = _int(r, "r", "combinations")
    if r < 0:
        raise RuntimeError(f"Expect a non-negative number, but got {r}")
    if r == 0:
        return getitem(input, slice(0, 0))
    n = input.shape[0]
    grids = meshgrid(*([input] * r), indexing="ij")          # r x (n, ..., n)
    indices = np.indices((n,) * r)
    steps = indices[1:] >= indices[:-1] if with_replacement else indices[1:] > indices[:-1]
    keep = np.logical_and.reduce(steps, axis=0) if r > 1 else np.ones((n,), dtype=np.bool_)
    from ..tensor import as_tensor
    from .picks import masked_select
    mask = as_tensor(keep, device=input.device)
    return stack([masked_select(g, mask) for g in grids], 1)  # r x (C,) -> (C, r)


def diagflat(input: Tensor, offset: int = 0) -> Tensor:  # noqa: A002
    """``torch.diagflat``: the flattened input on diagonal ``offset`` of a square matrix."""
    return diag(reshape(_check_tensor(input, "diagflat"), (-1,)), _int(offset, "offset",
                                                                       "diagflat"))
