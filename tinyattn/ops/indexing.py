"""Picking elements along one dim by index: ``gather`` (and the values of ``sort``/``topk``),
and ``one_hot`` (docs/derivations.md#gather).
"""
from __future__ import annotations

import builtins
from typing import Any, Tuple

import numpy as np

from .. import backend
from ..autograd import Function, keep_versions, name_node
from ..precision import DtypeError
from ..tensor import Tensor
from .embedding import check_index_range
from .reduce import _single_axis

__all__ = ["gather", "gather_at_picked", "one_hot", "along_axis_index", "Gather"]


def along_axis_index(indices: Any, axis: int) -> Tuple[Any, ...]:
    """The full index that reads ``x[i_0, ..., indices[i], ..., i_{n-1}]`` for every position
    i of ``indices``: an arange for each other axis, shaped to broadcast, and ``indices`` on
    ``axis``. ``x[along_axis_index(idx, axis)]`` has ``idx``'s shape."""
    xp = backend.get_array_module(indices)
    parts = []
    for d, n in enumerate(indices.shape):
        if d == axis:
            parts.append(indices)
        else:
            shape = [1] * indices.ndim
            shape[d] = n
            parts.append(xp.arange(n).reshape(shape))
    return tuple(parts)


class Gather(Function):
    """out[i] = x[i with its ``axis`` coordinate replaced by index[i]].

    Each output element is a copy of one input element, so the gradient goes back there:
        dx = zeros like x, then dx[index positions] += g.
    One input element may be picked several times (an index repeating along the axis): the
    contributions are scatter-ADDED. ``unique=True`` (sort and topk, which pick every element
    at most once) assigns instead, which is faster. ``keep_input`` saves x itself, as
    torch's gather saves its input (so writing to it before backward raises there too); sort
    and topk keep only their indices, as torch's do.
    """

    def forward(self, x, index: Tuple[Any, ...], unique: bool, keep_input: bool = False):
        self.save_for_backward(x.shape, x.dtype, index, unique, x if keep_input else None)
        return x[index]

    def backward(self, grad):
        shape, dtype, index, unique, _ = self.saved
        dx = backend.get_array_module(grad).zeros(shape, dtype=dtype)
        if unique:
            dx[index] = grad
        else:
            backend.scatter_add(dx, index, grad)
        return dx


def gather(input: Tensor, dim: int, index: Tensor,  # noqa: A002 - PyTorch's names
           *, sparse_grad: bool = False) -> Tensor:
    """``torch.gather``: out[i][j][k] = input[index[i][j][k]][j][k] for dim 0 (and so on).

    ``index`` is an integer tensor with as many dims as input, no larger than input in the
    other dims; the output has index's shape."""
    if not isinstance(index, Tensor) or index.dtype.kind not in "iu":
        raise (DtypeError if isinstance(index, Tensor) else TypeError)(f"gather: index must be an integer tensor, got "
                        f"{getattr(index, 'dtype', type(index).__name__)}; convert with .long()")
    axis = _single_axis(dim, builtins.max(input.ndim, 1), "gather")
    if index.numel() == 0:     # torch: an empty index gives an empty output (of any dims)
        xp = backend.get_array_module(input._data)
        nothing = (xp.zeros(index.shape, dtype=np.int64),)      # reads no element
        out = Gather.apply(input.reshape(-1), index=nothing, unique=False)
        name_node(out, "GatherBackward0")
        # a new tensor, not a view of input; torch's node keeps input and index as for any
        # other index: a write to either before backward raises
        return keep_versions(out, index, input)
    if index.device != input.device:
        raise RuntimeError(f"gather: index is on {index.device} but input is on "
                           f"{input.device}; move it with .to('{input.device}')")
    if builtins.max(index.ndim, 1) != builtins.max(input.ndim, 1):
        raise RuntimeError(f"gather: index has {index.ndim} dims but input has {input.ndim}; "
                           f"they must have the same number (unsqueeze the index); Index tensor "
                           f"must have the same number of dimensions as input tensor")
    if input.ndim == 0 or index.ndim == 0:      # a 0-d tensor counts as 1-d of one element
        return name_node(gather(input.reshape(-1), 0, index.reshape(-1)).reshape(index.shape),
                         "GatherBackward0")
    for d in range(input.ndim):
        if d != axis and index.shape[d] > input.shape[d]:
            raise RuntimeError(f"gather: index {index.shape} is larger than input "
                               f"{input.shape} in dim {d}; only dim {dim} may differ")
    check_index_range(index._data, input.shape[axis], "gather", "index")
    idx = index._data.astype(np.int64)          # a copy: the caller may reuse their index
    out = Gather.apply(input, index=along_axis_index(idx, axis), unique=False,
                       keep_input=True)
    name_node(out, "GatherBackward0")    # the node sort's gather shares
    return keep_versions(out, index)      # torch keeps the index: writing to it raises


def gather_at_picked(input: Tensor, axis: int, index: Tensor) -> Tensor:  # noqa: A002
    """``gather(input, axis, index)`` for an index an op picked itself (kthvalue, median,
    mode along a dim): torch's backward of those keeps the indices only, so the input is not
    kept (a write to it after the op is allowed) and the index is (a write to it raises)."""
    idx = index._data.astype(np.int64)
    out = Gather.apply(input, index=along_axis_index(idx, axis), unique=False)
    return keep_versions(out, index)


def one_hot(tensor: Tensor, num_classes: int = -1) -> Tensor:
    """``F.one_hot``: class indices (...) -> int64 (..., num_classes) with a 1 at each index.
    ``num_classes=-1`` uses the largest index + 1. Not differentiable (integer output)."""
    if not isinstance(tensor, Tensor) or tensor.dtype.kind not in "iu":
        raise DtypeError(f"one_hot: expects an integer tensor of class indices, got "
                        f"{getattr(tensor, 'dtype', type(tensor).__name__)}; convert with "
                        f".long()")
    data = tensor._data
    xp = backend.get_array_module(data)
    if num_classes == -1:
        if data.size == 0:
            raise ValueError("one_hot: cannot infer num_classes from an empty tensor; pass "
                             "num_classes=")
        num_classes = int(data.max()) + 1
    check_index_range(data, num_classes, "one_hot", "class index")
    classes = xp.arange(num_classes)
    return Tensor._wrap((data[..., None] == classes).astype(np.int64))
