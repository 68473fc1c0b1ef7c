"""Views with explicit geometry, as torch's: ``torch.as_strided(x, size, stride, offset)``,
``x.view(dtype)`` (the same bytes read as another dtype) and ``x.resize_(*sizes)``.

torch's tensors are (storage, offset, sizes, strides); tinyattn's are NumPy (CuPy) arrays, and
the storage of an array is the root of its ``.base`` chain, the array that owns the memory.
``as_strided`` counts its strides and offset in elements of that memory, as torch does (the
offset defaults to x's own ``storage_offset()``).

Derivation (docs/derivations.md#as_strided). Number the storage's elements; x's element i
sits at position p_in(i), the output's element j at p_out(j). The output reads the memory:
out_j = mem[p_out(j)], and mem[p] is x's element at p. So

    d mem[p] = sum of g_j over the j with p_out(j) = p      (a scatter-add: outputs may repeat
                                                              a position, stride 0)
    dx_i     = d mem[p_in(i)] / #{i' : p_in(i') = p_in(i)}

the division spreading a position's gradient over x's elements that share it (an expanded x),
as torch's as_strided backward does; the backward of the expand then adds them up again.
"""
from __future__ import annotations

import math
from typing import Any, Optional, Sequence, Tuple

import numpy as np

from .. import backend
from ..autograd import Function, name_node
from ..tensor import Tensor
from ..tensor.dtypes import normalize_dtype
from ..tensor.memory_format import check_memory_format
from .view_writes import _address          # NumPy's, CuPy's or the strict device's
from ..precision import scalar_type_name

__all__ = ["as_strided", "view_dtype", "resize_", "resize_as_"]


def _root(array: Any) -> Any:
    while getattr(array, "base", None) is not None and hasattr(array.base, "strides"):
        array = array.base
    return array


def _storage(data: Any) -> Tuple[Any, int, int]:
    """(the memory as a flat byte array, x's byte offset in it, its size in x's elements)."""
    root = _root(data)
    if not root.flags.c_contiguous:         # a broadcast or strided root: x alone is the memory
        if not data.flags.c_contiguous:
            data = data.copy()
        root = data
    raw = root.reshape(-1).view(np.uint8)
    return raw, _address(data) - _address(root), root.nbytes // data.itemsize


def _element_positions(shape: Sequence[int], strides: Sequence[int], start: int) -> np.ndarray:
    """The storage position (in elements) of every element of this geometry, in C order."""
    positions = np.full((), start, dtype=np.int64)
    for n, step in zip(shape, strides):
        positions = np.add.outer(positions, np.arange(n, dtype=np.int64) * step)
    return positions.reshape(-1)


def _may_overlap(size: Sequence[int], stride: Sequence[int]) -> bool:
    """False when no two elements can share a position: each dim's stride (smallest first)
    steps past everything the dims with smaller strides span."""
    reach = 0
    for n, step in sorted(((n, s) for n, s in zip(size, stride) if n > 1), key=lambda p: p[1]):
        if step <= reach:
            return True
        reach += (n - 1) * step
    return False


class AsStridedView(Function):
    """out_j = mem[p_out(j)]; dx_i = (scatter-add of g at p_out)[p_in(i)] / repeats of p_in(i)
    (module docstring)."""

    returns_view = True

    def forward(self, x, size: Tuple[int, ...], stride: Tuple[int, ...], offset: int):
        raw, start_bytes, _ = _storage(x)
        item = x.itemsize
        byte_strides = tuple(s * item for s in stride)
        if isinstance(raw, np.ndarray):     # an ndarray on the memory: its .base chain
            start = min(offset * item, raw.size)     # (an empty view may start past it)
            out = np.ndarray(size, x.dtype, buffer=raw, offset=start,  # leads to the root
                             strides=byte_strides)
        else:
            count = (raw.size - offset * item) // item
            first = raw[offset * item: offset * item + count * item].view(x.dtype)
            out = backend.get_array_module(x).lib.stride_tricks.as_strided(
                first, size, byte_strides)
        if _may_overlap(size, stride) or not x.flags.writeable:
            # read-only where elements share memory: torch refuses writes through a stride-0
            # dim, and lets other overlaps through element by element (undefined by its docs:
            # as_strided(x, (3, 3), (1, 1)).mul_(2) doubles a shared element once per
            # window), where a NumPy in-place op changes it once: refused loudly, as unfold's
            # overlapping windows are, rather than a silently different result
            out = out.view()
            out.flags.writeable = False
        if self.recording:
            in_strides = tuple(s // item for s in x.strides)
            p_in = _element_positions(x.shape, in_strides, start_bytes // item)
            p_out = _element_positions(size, stride, offset)
            low = min(p_in.min(initial=offset), p_out.min(initial=offset))
            self.save_for_backward(p_in - low, p_out - low, x.shape,
                                   _may_overlap(x.shape, in_strides))
        return out

    def backward(self, grad):
        p_in, p_out, shape, repeated = self.saved
        xp = backend.get_array_module(grad)
        n = int(max(p_in.max(initial=-1), p_out.max(initial=-1))) + 1
        memory = xp.zeros(n, dtype=grad.dtype)
        device = backend.device_of(grad)
        backend.scatter_add(memory, backend.to_device(p_out, device), grad.reshape(-1))
        dx = memory[backend.to_device(p_in, device)]
        if repeated:
            counts = np.bincount(p_in, minlength=n)[p_in]
            dx = dx / backend.to_device(counts.astype(dx.dtype), device)
        return dx.reshape(shape)


def _ints(values: Any, op: str, name: str) -> Tuple[int, ...]:
    if isinstance(values, (int, np.integer)) and not isinstance(values, bool):
        values = (values,)
    try:
        return tuple(int(v) for v in values)
    except TypeError:
        raise TypeError(f"{op}(): argument '{name}' must be a tuple of ints, got "
                        f"{type(values).__name__}") from None


def as_strided(input: Tensor, size: Any, stride: Any,  # noqa: A002 - PyTorch's names
               storage_offset: Optional[int] = None) -> Tensor:
    """``torch.as_strided``: a view of input's memory with the given sizes and strides (in
    elements), starting ``storage_offset`` elements into the memory (default: where input
    starts). Writable unless a dim of more than one element has stride 0 (torch refuses
    writes there as "internal overlap")."""
    if not isinstance(input, Tensor):
        raise TypeError(f"as_strided(): argument 'input' must be Tensor, not "
                        f"{type(input).__name__}")
    size, stride = _ints(size, "as_strided", "size"), _ints(stride, "as_strided", "stride")
    if len(size) != len(stride):
        raise RuntimeError(f"mismatch in length of strides and shape (size {list(size)}, "
                           f"stride {list(stride)})")
    if any(s < 0 for s in stride):
        raise RuntimeError(f"as_strided: Negative strides are not supported at the moment, "
                           f"got strides: {list(stride)}")
    if any(n < 0 for n in size):
        raise RuntimeError(f"Storage size calculation overflowed with sizes={list(size)} and "
                           f"strides={list(stride)}")
    _, start_bytes, elements = _storage(input._data)
    item = input._data.itemsize
    offset = start_bytes // item if storage_offset is None else int(storage_offset)
    if offset < 0:
        raise RuntimeError(f"Tensor: invalid storage offset {offset}")
    needed = 0 if 0 in size else offset + 1 + sum((n - 1) * s for n, s in zip(size, stride))
    if needed > elements:
        raise RuntimeError(f"setStorage: sizes {list(size)}, strides {list(stride)}, storage "
                           f"offset {offset}, and itemsize {item} requiring a storage size of "
                           f"{needed * item} are out of bounds for storage of size "
                           f"{elements * item}")
    out = AsStridedView.apply(input, size=size, stride=stride, offset=offset)
    if not out._is_view:                 # it may lie outside input's own elements (offset)
        out._share_memory_with(input)
    return name_node(out, "AsStridedBackward0")


def view_dtype(x: Tensor, dtype: Any) -> Tensor:
    """``x.view(dtype)``: the same memory read as ``dtype``. With the same item size the
    shape stays; a smaller item size multiplies the last dim by the ratio, a larger one
    divides it (its stride must be 1, its size and storage offset divisible by the ratio),
    as torch's rules. The result records no gradient, as torch's (even for x's own dtype)."""
    want = normalize_dtype(dtype)
    have = np.dtype(x.dtype)
    data = x._data
    if want.itemsize != have.itemsize:
        names = f"{_torch_name(have)} as {_torch_name(want)} (different element sizes)"
        if x.ndim == 0:
            raise RuntimeError(f"self.dim() cannot be 0 to view {names}")
        if x.shape[-1] != 1 and data.strides[-1] != have.itemsize:
            raise RuntimeError(f"self.stride(-1) must be 1 to view {names}, but got "
                               f"{data.strides[-1] // have.itemsize}")
        if want.itemsize > have.itemsize:
            ratio = want.itemsize // have.itemsize
            if x.shape[-1] % ratio:
                raise RuntimeError(f"self.size(-1) must be divisible by {ratio} to view "
                                   f"{names}, but got {x.shape[-1]}")
            offset = _storage(data)[1] // have.itemsize
            if offset % ratio:
                raise RuntimeError(f"self.storage_offset() must be divisible by {ratio} to "
                                   f"view {names}, but got {offset}")
        if data.shape[-1] == 1 and data.strides[-1] != have.itemsize:
            xp = backend.get_array_module(data)
            data = xp.lib.stride_tricks.as_strided(data, data.shape,
                                                   data.strides[:-1] + (have.itemsize,))
    out = Tensor._wrap(data.view(want))
    out._share_memory_with(x)
    return out


_torch_name = scalar_type_name    # torch's ScalarType name (float32 -> Float)


def resize_(x: Tensor, *size_args: Any, sizes: Any = None, memory_format: Any = None
            ) -> Tensor:
    """``x.resize_(*sizes)``: x takes the new shape, row-major over its memory from where it
    starts (so its first elements in memory order keep their values, as torch's). Growing
    beyond the memory moves x to new memory (other views of the old memory no longer see
    it), the new elements zeros here (torch leaves them uninitialised). Refused while x
    requires grad, as torch ("cannot resize variables that require grad")."""
    if sizes is not None:                       # torch's keyword: x.resize_(sizes=(2, 3))
        size_args = (sizes,)
    if len(size_args) == 1 and not isinstance(size_args[0], (int, np.integer)):
        size_args = tuple(size_args[0])
    shape = _ints(size_args, "resize_", "size")
    if any(n < 0 for n in shape):
        raise RuntimeError(f"Trying to create tensor with negative dimension {min(shape)}: "
                           f"{list(shape)}")
    if x.requires_grad:
        raise RuntimeError("cannot resize variables that require grad")
    check_memory_format(shape, memory_format, "resize_")
    count = math.prod(shape)
    raw, start, elements = _storage(x._data)
    item = x._data.itemsize
    available = elements - start // item
    if count <= available:
        memory = raw[start: start + count * item].view(x._data.dtype)
    else:                                       # torch grows the storage: the old values
        xp = backend.get_array_module(x._data)  # first, then (here) zeros
        memory = xp.zeros(count, dtype=x._data.dtype)
        memory[:available] = raw[start:start + available * item].view(x._data.dtype)
    x._data = memory.reshape(shape)
    x._bump_version()
    return x


def resize_as_(x: Tensor, other: Tensor, memory_format: Any = None) -> Tensor:
    """``x.resize_as_(other)``: ``x.resize_(other.shape)``."""
    return resize_(x, other.shape)
