"""Ops that move elements without changing them: reshape, permute, indexing, concat, stack.

Each backward routes every gradient element back to where its value came from
(docs/derivations.md#shape-ops).
"""
from __future__ import annotations

import math
import warnings
from typing import Any, List, Optional, Sequence, Tuple, Union

import numpy as np

from .. import backend
from ..autograd import Function, keep_versions, name_node
from ..tensor import Tensor
from ..precision import is_floating
from ..promotion import promote_types


class ShapeError(ValueError, RuntimeError):
    """A shape that does not fit the op (reshape to another size, expand, split sizes, ...):
    a ValueError, as tinyattn raised, and a RuntimeError, as torch raises."""

__all__ = ["reshape", "permute", "transpose", "swapaxes", "unsqueeze", "squeeze", "flatten",
           "getitem", "cat", "concat", "stack", "split", "chunk"]


class Reshape(Function):
    """out = x viewed with a new shape (same elements, same order).   dx = g.reshape(x.shape)."""

    returns_view = True

    def forward(self, x, shape: Tuple[int, ...]):
        self.save_for_backward(x.shape)
        return x.reshape(shape)

    def backward(self, grad):
        (shape,) = self.saved
        return grad.reshape(shape)


class Permute(Function):
    """out = x with its axes reordered: out.shape[i] = x.shape[dims[i]].

    dx = g permuted by the inverse order (argsort(dims) puts every axis back).
    """

    returns_view = True

    def forward(self, x, dims: Tuple[int, ...]):
        self.save_for_backward(dims)
        return x.transpose(dims)

    def backward(self, grad):
        (dims,) = self.saved
        return grad.transpose(tuple(int(i) for i in np.argsort(dims)))


def _has_advanced_index(index: Any) -> bool:
    parts = index if isinstance(index, tuple) else (index,)
    return any(not isinstance(p, (int, np.integer, slice, type(None), type(Ellipsis)))
               for p in parts)


class GetItem(Function):
    """out = x[index].

    dx = zeros shaped like x with g added at the indexed positions. With integer-array
    indexing one element of x can be picked several times, so the gradients are scatter-ADDED
    (``x[[0, 0]]`` gives x[0] a gradient of g[0] + g[1]); plain slices pick each element at
    most once, so they are assigned.
    """

    returns_view = True          # basic indexing (ints, slices) returns a view of x

    def forward(self, x, index: Any):
        self.save_for_backward(x.shape, x.dtype, index)
        out = x[index]
        if type(out) is not type(x):
            # NumPy answers an index naming one element (x[1, 2]) with a scalar, a copy;
            # torch's x[1, 2] is a 0-d view, so x[1, 2].add_(1) changes x. A trailing
            # Ellipsis makes NumPy return that 0-d view.
            out = x[(index if isinstance(index, tuple) else (index,)) + (Ellipsis,)]
        return out

    def backward(self, grad):
        shape, dtype, index = self.saved
        xp = backend.get_array_module(grad)
        dx = xp.zeros(shape, dtype=dtype)
        if _has_advanced_index(index):
            backend.scatter_add(dx, index, grad)
        else:
            dx[index] = grad
        return dx


class Concat(Function):
    """out = the inputs joined along ``axis``.   dx_i = the slice of g that x_i filled."""

    def forward(self, *xs, axis: int):
        self.save_for_backward(axis, [x.shape[axis] for x in xs])
        return backend.get_array_module(xs[0]).concatenate(xs, axis=axis)

    def backward(self, grad):
        axis, sizes = self.saved
        xp = backend.get_array_module(grad)
        return tuple(xp.split(grad, np.cumsum(sizes)[:-1].tolist(), axis=axis))


class Stack(Function):
    """out = the inputs stacked along a new axis.   dx_i = g taken at index i of that axis."""

    def forward(self, *xs, axis: int):
        self.save_for_backward(axis, len(xs))
        return backend.get_array_module(xs[0]).stack(xs, axis=axis)

    def backward(self, grad):
        axis, count = self.saved
        xp = backend.get_array_module(grad)
        return tuple(xp.take(grad, i, axis=axis) for i in range(count))


# ------------------------------------------------------------------ public functions
def _normalize_dim(dim: int, ndim: int, op: str) -> int:
    if not -ndim <= dim < ndim:
        raise IndexError(f"{op}: dim {dim} is out of range for a tensor with {ndim} dims "
                         f"(valid: {-ndim} to {ndim - 1})")
    return dim % ndim


def reshape(x: Tensor, *shape: Any) -> Tensor:
    if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
        shape = tuple(shape[0])
    shape = tuple(int(n) for n in shape)
    known = math.prod(n for n in shape if n != -1)   # Python ints: no NumPy call per op
    unknown = shape.count(-1)
    size = x.numel()
    if unknown > 1 or (unknown == 0 and known != size) or (
            unknown == 1 and (known == 0 or size % known != 0)):
        raise ShapeError(f"reshape: cannot view a tensor of shape {x.shape} ({size} elements) "
                         f"as shape {shape}")
    return Reshape.apply(x, shape=shape)


def permute(x: Tensor, *dims: Any) -> Tensor:
    if len(dims) == 1 and isinstance(dims[0], (tuple, list)):
        dims = tuple(dims[0])
    in_range = all(isinstance(d, (int, np.integer)) and -x.ndim <= d < x.ndim for d in dims)
    if not in_range or sorted(d % max(x.ndim, 1) for d in dims) != list(range(x.ndim)):
        raise ShapeError(f"permute: dims {dims} are not an ordering of the {x.ndim} axes of a "
                         f"tensor of shape {x.shape}")
    return Permute.apply(x, dims=tuple(d % x.ndim for d in dims))


def transpose(x: Tensor, dim0: int, dim1: int) -> Tensor:
    """Swap two axes (PyTorch's ``transpose(dim0, dim1)``)."""
    dims = list(range(x.ndim))
    ndim = max(x.ndim, 1)                  # a 0-d tensor takes dim 0 or -1, as in torch
    d0, d1 = _normalize_dim(dim0, ndim, "transpose"), _normalize_dim(dim1, ndim, "transpose")
    if x.ndim == 0:
        return name_node(Permute.apply(x, dims=()), "TransposeBackward0")
    dims[d0], dims[d1] = dims[d1], dims[d0]
    return name_node(Permute.apply(x, dims=tuple(dims)), "TransposeBackward0")


swapaxes = transpose


def unsqueeze(x: Tensor, dim: int) -> Tensor:
    dim = _normalize_dim(dim, x.ndim + 1, "unsqueeze")
    return name_node(reshape(x, x.shape[:dim] + (1,) + x.shape[dim:]), "UnsqueezeBackward0")


def squeeze(x: Tensor, dim: Union[int, Sequence[int], None] = None) -> Tensor:
    """Drop dims of size 1: all of them, or those among ``dim`` (an int or, as PyTorch 2, a
    tuple of ints); a named dim whose size is not 1 stays."""
    if dim is None:
        return name_node(reshape(x, tuple(n for n in x.shape if n != 1)), "SqueezeBackward0")
    dims = tuple(dim) if isinstance(dim, (tuple, list)) else (dim,)
    # torch's squeeze always returns a new view (of the same shape when no named dim has
    # size 1), never the input itself: x.squeeze(0).t_() leaves x as it was
    if x.ndim == 0:                             # PyTorch accepts dim 0 / -1 on a 0-d tensor
        for d in dims:
            _normalize_dim(d, 1, "squeeze")
        axes = set()
    else:
        axes = {_normalize_dim(d, x.ndim, "squeeze") for d in dims}
    out = reshape(x, tuple(n for a, n in enumerate(x.shape) if a not in axes or n != 1))
    return name_node(out, "SqueezeBackward2" if isinstance(dim, (tuple, list))
                     else "SqueezeBackward1")


def flatten(x: Tensor, start_dim: int = 0, end_dim: int = -1) -> Tensor:
    if x.ndim == 0:                             # PyTorch: a 0-d tensor flattens to shape (1,)
        _normalize_dim(start_dim, 1, "flatten")
        _normalize_dim(end_dim, 1, "flatten")
        return reshape(x, (1,))
    start = _normalize_dim(start_dim, x.ndim, "flatten")
    end = _normalize_dim(end_dim, x.ndim, "flatten")
    if start > end:         # torch refuses (the product of no dims would insert a dim of 1)
        raise RuntimeError(f"flatten() has invalid args: start_dim cannot come after end_dim "
                           f"(start_dim={start_dim}, end_dim={end_dim} for {x.ndim} dims)")
    if start == end:        # torch returns the input itself (a 1-D tensor, flatten(1, 1))
        return x
    middle = math.prod(x.shape[start:end + 1])
    return reshape(x, x.shape[:start] + (middle,) + x.shape[end + 1:])


def _index_to_arrays(index: Any, device: str, ndim: Optional[int] = None) -> Any:
    """Tensors inside an index become their arrays and lists become integer arrays, all on
    ``device`` (CuPy, like the strict device, wants index arrays where the data is). Index
    arrays are copied: an op keeps its index for backward, and the caller may reuse theirs.
    A 0-d integer array becomes a Python int, as PyTorch treats it: NumPy would count it as
    an index array, so ``x[t]`` would be a copy instead of a view and ``x[t, :, [0, 2]] = v``
    would write into a temporary.

    As torch: a list of fewer than 32 items holding a sequence, tensor, slice, None or ``...``
    is the tuple of those indices (``x[[[0, 1], [1, 2]]]`` is ``x[[0, 1], [1, 2]]``, with
    torch's deprecation warning); an empty list is an empty int64 index; a uint8 tensor is a
    mask (torch's deprecated meaning, warned), other integer tensors than int64/int32 and
    slices with a negative step are refused."""
    if _list_as_tuple(index):
        warnings.warn("Using a non-tuple sequence for multidimensional indexing is deprecated "
                      "(as in torch); use x[tuple(seq)] instead of x[seq]", UserWarning,
                      stacklevel=3)
        index = tuple(index)
    if isinstance(index, tuple):
        if ndim is not None and sum(i is Ellipsis for i in index) > 1:
            index = _torch_ellipses(index, ndim)
        return tuple(_index_part(i, device) for i in index)
    return _index_part(index, device)


def _torch_ellipses(index: tuple, ndim: int) -> tuple:
    """Several ``...`` in one index, as torch reads them (NumPy refuses): each stands for
    the dims the other items leave, ndim - (items that take a dim), so ``x[..., 1, ...]`` is
    ``x[:, 1]`` of a 2-d x. Full slices that reach past x's dims are dropped (torch skips
    them); an item there is an IndexError, as in torch."""
    taking = sum(1 for i in index if i is not None and i is not Ellipsis
                 and not (isinstance(i, (bool, np.bool_))))
    fill = max(ndim - taking, 0)
    parts: list = []
    for item in index:
        parts.extend([slice(None)] * fill if item is Ellipsis else [item])
    while sum(1 for p in parts if p is not None) > ndim and parts and \
            parts[-1] == slice(None) and parts[-1] is not None:
        parts.pop()
    return tuple(parts)


def _index_part(index: Any, device: str) -> Any:
    """One item of an index (a list here is always an index array)."""
    if isinstance(index, slice) and index.step is not None and index.step < 0:
        raise ValueError(f"step must be greater than zero (as in torch; got the slice "
                         f"{index.start}:{index.stop}:{index.step}); use x.flip(dim) to "
                         f"reverse")
    if isinstance(index, Tensor):
        if index.dtype == np.uint8 and index.ndim:
            warnings.warn("indexing with dtype torch.uint8 is now deprecated, please use a "
                          "dtype torch.bool instead (as in torch: the uint8 tensor is a mask)",
                          UserWarning, stacklevel=3)
        if index.dtype == np.uint8:
            index = index.to(np.bool_)
        elif index.dtype.kind in "iu" and index.dtype not in (np.int64, np.int32):
            raise IndexError(f"tensors used as indices must be long, int, byte or bool "
                             f"tensors, got {index.dtype}; convert with .long()")
        index = index._data
    elif isinstance(index, list):
        index = np.asarray(index) if len(index) else np.zeros(0, dtype=np.int64)
        if index.dtype.kind == "f":     # torch turns a list's numbers into int64 indices
            index = index.astype(np.int64)      # (x[[0.0, 1]] is x[[0, 1]]; 1.9 -> 1)
    if hasattr(index, "shape") and index.ndim == 0 and index.dtype.kind in "iu":
        return int(index)
    if hasattr(index, "shape") and not np.isscalar(index):
        return backend.to_device(index, device).copy()
    return index


def _list_as_tuple(index: Any) -> bool:
    """torch's rule for a non-tuple sequence that it reads as several indices."""
    return isinstance(index, list) and len(index) < 32 and any(
        isinstance(item, (Tensor, list, tuple, slice, type(None), type(Ellipsis), np.ndarray))
        for item in index)


def _is_int(part: Any) -> bool:
    if isinstance(part, (bool, np.bool_)):
        return False
    if isinstance(part, (int, np.integer)):
        return True
    return hasattr(part, "ndim") and part.ndim == 0 and part.dtype.kind in "iu"


def _is_advanced(part: Any) -> bool:
    return hasattr(part, "ndim") and not _is_int(part) and (part.ndim > 0
                                                            or part.dtype == np.bool_)


def torch_index_steps(index: Any) -> Tuple[Any, ...]:
    """``index`` as one or two NumPy indexing steps that give PyTorch's layout.

    NumPy counts an integer as an advanced index, so in ``x[0, :, [0, 2]]`` the int and the
    list are "separated by a slice" and their dims go first: shape (2, 3) for x (2, 3, 4).
    PyTorch first selects with the integers (a view), then applies the remaining indices:
    (3, 2). Both agree whenever an index has no ints or no index arrays; otherwise this
    returns (ints applied, the rest)."""
    parts = index if isinstance(index, tuple) else (index,)
    if not (any(_is_int(p) for p in parts) and any(_is_advanced(p) for p in parts)):
        return (index,)
    first, rest = [], []
    for p in parts:
        if _is_int(p):
            first.append(p)
        elif p is None:
            first.append(None)
            rest.append(slice(None))
        elif p is Ellipsis:
            first.append(Ellipsis)
            rest.append(Ellipsis)
        else:
            width = p.ndim if _is_advanced(p) and p.dtype == np.bool_ else 1
            first.extend([slice(None)] * width)
            rest.append(p)
    return (tuple(first), tuple(rest))


def getitem(x: Tensor, index: Any) -> Tensor:
    """``x[index]`` with PyTorch's indexing rules (see ``torch_index_steps``)."""
    given = _index_tensors(index)
    index = _index_to_arrays(index, x.device, x.ndim)
    try:
        out = x
        for step in torch_index_steps(index):
            out = GetItem.apply(out, index=step)
    except IndexError as exc:
        raise IndexError(f"indexing a tensor of shape {x.shape}: {exc}") from None
    # torch's IndexBackward0 keeps the index tensors (a mask too): a write to one before
    # backward raises. A 0-d one acts as a number (a select), kept by neither.
    return keep_versions(out, *given) if given and out is not x else out


def _index_tensors(index: Any) -> List[Tensor]:
    """The tensors of one or more dims among an index's items (what torch's advanced
    indexing keeps for backward)."""
    items = index if isinstance(index, tuple) or _list_as_tuple(index) else (index,)
    return [item for item in items if isinstance(item, Tensor) and item.ndim > 0]


def _check_join(op: str, tensors: Sequence[Tensor], dim: int, same_shape: bool) -> int:
    if len(tensors) == 0:
        raise ShapeError(f"{op}: needs at least one tensor")
    ndim = tensors[0].ndim
    for i, t in enumerate(tensors):
        if t.ndim == 0 and not same_shape:
            raise ShapeError(f"{op}: tensor {i} is zero-dimensional (a single number) and has no "
                             f"dim to join along; use stack, or unsqueeze(0) each tensor first")
        if t.ndim != ndim:
            raise RuntimeError(f"{op}: tensor 0 has shape {tensors[0].shape} but tensor {i} has "
                               f"shape {t.shape}; all need the same number of dims")
    axis = _normalize_dim(dim, ndim + (1 if same_shape else 0), op)

    def rest(shape: Tuple[int, ...]) -> Tuple[int, ...]:   # the dims that must match
        return shape if same_shape else shape[:axis] + shape[axis + 1:]

    first = rest(tensors[0].shape)
    for i, t in enumerate(tensors):
        if rest(t.shape) != first:
            raise RuntimeError(f"{op}: tensor 0 has shape {tensors[0].shape} but tensor {i} has "
                               f"shape {t.shape}; they must match except along dim {dim}"
                             if not same_shape else
                             f"{op}: tensor 0 has shape {tensors[0].shape} but tensor {i} has "
                             f"shape {t.shape}; stack needs equal shapes")
    return axis


def _floats_win(tensors: Sequence[Tensor]) -> List[Tensor]:
    """Integer and bool tensors joined with floating ones take the floats' dtype, as in
    PyTorch (NumPy would make int64 with float32 float64). Several floating dtypes promote
    in Function.apply (float32 with float64: float64), so the integers take the widest.
    Complex counts as floating here (int64 with complex64 is complex64, not NumPy's
    complex128)."""
    def number(dtype: Any) -> bool:         # floating or complex
        return is_floating(dtype) or dtype.kind == "c"
    floats = [t.dtype for t in tensors if number(t.dtype)]
    if not floats or len(floats) == len(tensors):
        return list(tensors)
    dtype = floats[0]
    for other in floats[1:]:
        dtype = promote_types(dtype, other)
    return [t if number(t.dtype) else Tensor._wrap(t._data.astype(dtype)) for t in tensors]


def _check_tensor_list(op: str, tensors: Any) -> List[Tensor]:
    if isinstance(tensors, Tensor) or not isinstance(tensors, (list, tuple)):
        raise TypeError(f"{op}(): argument 'tensors' (position 1) must be tuple of Tensors, "
                        f"not {type(tensors).__name__}; pass a list: {op}([a, b])")
    for i, t in enumerate(tensors):
        if not isinstance(t, Tensor):
            raise TypeError(f"{op}(): expected Tensor as element {i} in argument 0, but got "
                            f"{type(t).__name__}")
    return list(tensors)


def cat(tensors: Sequence[Tensor], dim: int = 0) -> Tensor:
    """``torch.cat``. As torch does for old code, a 1-D empty tensor (shape (0,)) joins any
    list: it is left out of the shape checks (it still counts for the result's dtype and
    gets its (empty) gradient); a list of only such tensors gives one of shape (0,)."""
    tensors = _check_tensor_list("cat", tensors)
    for i, t in enumerate(tensors):
        if t.ndim == 0:
            raise RuntimeError(f"cat: zero-dimensional tensor (at position {i}) cannot be "
                               f"concatenated; unsqueeze(0) it, or use stack")
    legacy = [t.shape == (0,) for t in tensors]
    kept = [t for t, skip in zip(tensors, legacy) if not skip]
    if not kept or not any(legacy):
        axis = _check_join("cat", tensors, dim if kept else 0, same_shape=False)
        return Concat.apply(*_floats_win(tensors), axis=axis)
    axis = _check_join("cat", kept, dim, same_shape=False)
    empty_shape = kept[0].shape[:axis] + (0,) + kept[0].shape[axis + 1:]
    joined = [t.reshape(empty_shape) if skip else t for t, skip in zip(tensors, legacy)]
    return Concat.apply(*_floats_win(joined), axis=axis)


concat = cat


def stack(tensors: Sequence[Tensor], dim: int = 0) -> Tensor:
    tensors = _check_tensor_list("stack", tensors)    # torch: a tensor is not a sequence
    axis = _check_join("stack", tensors, dim, same_shape=True)
    return Stack.apply(*_floats_win(tensors), axis=axis)


def split(x: Tensor, split_size_or_sections: Union[int, Sequence[int]], dim: int = 0,
          *, _node: str = "Split") -> Tuple[Tensor, ...]:
    """PyTorch's ``split``: chunks of one size (the last may be smaller) or of given sizes,
    a tuple as torch's (a list printed ``[tensor(...), ...]`` where torch prints ``(...)``).

    Each piece is a slice (a ``GetItem``), so its backward is the slice's; its grad_fn is
    named as torch's one node (``SplitBackward0``, ``SplitWithSizesBackward0`` for sizes;
    ``_node="UnsafeSplit"`` for unsafe_split).
    """
    axis = _normalize_dim(dim, x.ndim, "split")
    length = x.shape[axis]
    sized = not isinstance(split_size_or_sections, int)
    name = f"{_node}{'WithSizes' if sized else ''}Backward0"
    if not sized:
        if split_size_or_sections <= 0:
            raise ShapeError(f"split: size must be positive, got {split_size_or_sections}")
        sizes = [min(split_size_or_sections, length - s)
                 for s in range(0, length, split_size_or_sections)]
    else:
        sizes = list(split_size_or_sections)
        if sum(sizes) != length:
            raise ShapeError(f"split: sizes {sizes} add up to {sum(sizes)} but dim {dim} has "
                             f"length {length}")
    pieces, start = [], 0
    for size in sizes:
        index = (slice(None),) * axis + (slice(start, start + size),)
        pieces.append(name_node(GetItem.apply(x, index=index), name))
        start += size
    return tuple(pieces)


def chunk(x: Tensor, chunks: int, dim: int = 0, *, _node: str = "Split") -> Tuple[Tensor, ...]:
    if not isinstance(chunks, (int, np.integer)) or chunks < 1:
        raise ShapeError(f"chunk: chunks must be a positive integer, got {chunks!r}")
    length = x.shape[_normalize_dim(dim, x.ndim, "chunk")]
    return split(x, -(-length // chunks), dim, _node=_node)
