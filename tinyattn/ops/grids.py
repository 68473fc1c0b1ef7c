"""Building grids and matrices from vectors: ``meshgrid`` (made of reshape and expand, so
differentiated by their backwards), ``diag`` (a vector onto a diagonal, or a diagonal out of a
matrix), and ``unique`` (no gradient: its output is a set of values)
(docs/derivations.md#meshgrid-diag-and-unique).
"""
from __future__ import annotations

from typing import Any, List, Tuple, Union

import numpy as np

from .. import backend
from ..autograd import Function
from ..tensor import Tensor
from .no_derivative import record_without_derivative
from .layout import expand
from .rearrange import diagonal as diagonal_of
from .shape import _normalize_dim, reshape

__all__ = ["meshgrid", "diag", "unique"]


def meshgrid(*tensors: Any, indexing: str = "ij") -> Tuple[Tensor, ...]:
    """``torch.meshgrid``: from n 1-D tensors of sizes (s_0, ..., s_{n-1}), n tensors of one
    shape, the i-th varying along its own dim. ``indexing="ij"``: shape (s_0, s_1, ...);
    ``"xy"`` (NumPy's default, Cartesian): the first two sizes swap, (s_1, s_0, ...)."""
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tuple(tensors[0])
    if indexing not in ("ij", "xy"):
        raise ValueError(f"meshgrid: indexing must be 'ij' or 'xy', got {indexing!r}")
    if not tensors:
        raise ValueError("meshgrid: expects a non-empty list of tensors")
    for i, t in enumerate(tensors):
        if not isinstance(t, Tensor) or t.ndim > 1:
            raise ValueError(f"meshgrid: expected 0D or 1D tensors, but tensor {i} is "
                             f"{getattr(t, 'shape', type(t).__name__)}")
        if t.dtype != tensors[0].dtype or t.device != tensors[0].device:
            raise TypeError(f"meshgrid: expects all tensors to have the same dtype and device, "
                            f"got {tensors[0].dtype} on {tensors[0].device} and {t.dtype} on "
                            f"{t.device} (tensor {i})")
    sizes = [t.numel() for t in tensors]
    axes = list(range(len(tensors)))
    if indexing == "xy" and len(tensors) >= 2:
        axes[0], axes[1] = 1, 0                         # x varies along columns
    shape = [0] * len(tensors)
    for axis, n in zip(axes, sizes):
        shape[axis] = n
    grids = []
    for t, axis in zip(tensors, axes):
        view = [1] * len(tensors)
        view[axis] = -1
        grids.append(expand(reshape(t, *view), *shape))   # (s_i,) -> (1, .., s_i, .., 1) -> shape
    return tuple(grids)


class DiagEmbed(Function):
    """out = a square matrix of zeros with v on diagonal ``offset`` (> 0: above the main one).
    Each element of v lands in one place, so dv = g read back along that diagonal."""

    def forward(self, v, offset: int):
        n = v.shape[0] + abs(offset)
        rows, cols = _diagonal_positions(v.shape[0], offset, backend.get_array_module(v))
        out = backend.get_array_module(v).zeros((n, n), dtype=v.dtype)
        out[rows, cols] = v
        self.save_for_backward(rows, cols)
        return out

    def backward(self, grad):
        rows, cols = self.saved
        return grad[rows, cols]


def _diagonal_positions(n: int, offset: int, xp: Any) -> Tuple[Any, Any]:
    steps = xp.arange(n)
    return steps + max(-offset, 0), steps + max(offset, 0)


def diag(input: Tensor, diagonal: int = 0) -> Tensor:  # noqa: A002 - torch's names
    """``torch.diag``: a 1-D (n,) input becomes an (n + |k|, n + |k|) matrix with it on
    diagonal k; a 2-D input gives its diagonal k as a 1-D tensor (a copy)."""
    if not isinstance(input, Tensor):
        raise TypeError(f"diag: input must be a Tensor, got {type(input).__name__}")
    if isinstance(diagonal, bool) or not isinstance(diagonal, (int, np.integer)):
        raise TypeError(f"diag: diagonal must be an int, got {diagonal!r}")
    if input.ndim == 1:
        return DiagEmbed.apply(input, offset=int(diagonal))
    if input.ndim == 2:
        # a copy, as torch (diagonal is the view): a write to the result leaves the input
        return diagonal_of(input, int(diagonal)).clone()
    raise RuntimeError(f"diag(): Supports 1D or 2D tensors. Got {input.ndim}D (shape "
                       f"{input.shape}); use torch.diagonal or torch.diag_embed for batches")


def unique(input: Tensor, sorted: bool = True, return_inverse: bool = False,  # noqa: A002
           return_counts: bool = False, dim: Union[int, None] = None
           ) -> Union[Tensor, Tuple[Tensor, ...]]:
    """``torch.unique``: the distinct values (sorted), and optionally ``inverse`` (int64, where
    each input element went: ``out[inverse] == input``) and ``counts`` (int64). ``dim=None``
    flattens; ``dim=d`` finds the distinct slices along d. Not differentiable: as torch, the
    values of an input that requires grad require grad, and backward raises (no_derivative.py).
    NaNs are each their own value (NaN != NaN), as in PyTorch. ``sorted=False`` is accepted
    and still sorts (PyTorch leaves that order unspecified)."""
    if not isinstance(input, Tensor):
        raise TypeError(f"unique: input must be a Tensor, got {type(input).__name__}")
    for name, flag in (("sorted", sorted), ("return_inverse", return_inverse),
                       ("return_counts", return_counts)):
        if not isinstance(flag, (bool, np.bool_)):     # torch's parser: a bool, nothing else
            raise TypeError(f"_unique2(): argument '{name}' must be bool, not "
                            f"{type(flag).__name__} (as torch); pass True or False")
    data = backend.to_host(input._data)
    if dim is None:
        values, inverse, counts = np.unique(data.reshape(-1), return_inverse=True,
                                            return_counts=True, equal_nan=False)
        inverse = inverse.reshape(input.shape)
    else:
        if input.ndim == 0:
            raise IndexError(f"unique: dim {dim} given for a 0-d tensor; use dim=None")
        axis = _normalize_dim(int(dim), input.ndim, "unique")
        if data.shape[axis] == 0 and data.size == 0 and input.ndim > 1:
            values, inverse, counts = data, np.zeros(0, np.int64), np.zeros(0, np.int64)
        else:
            values, inverse, counts = np.unique(data, return_inverse=True, return_counts=True,
                                                axis=axis, equal_nan=False)
        inverse = inverse.reshape(-1)
    out: List[Tensor] = [record_without_derivative("_unique2" if dim is None else "unique_dim",
                                                   _wrap(values, input), input)]
    if return_inverse:
        out.append(_wrap(inverse.astype(np.int64), input))
    if return_counts:
        out.append(_wrap(counts.astype(np.int64), input))
    return out[0] if len(out) == 1 else tuple(out)


def _wrap(array: np.ndarray, like: Tensor) -> Tensor:
    return Tensor._wrap(backend.to_device(np.asarray(array, order="C"), like.device))  # 0-d kept
