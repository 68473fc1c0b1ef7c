"""Searching, counting and index-making ops, none differentiable (their outputs are positions,
counts or booleans): ``searchsorted``, ``bucketize``, ``isin``, ``histc``, ``argwhere``,
``unique_consecutive``, ``triu_indices``, ``tril_indices``, and ``bernoulli`` (random 0/1
draws; torch gives it no gradient either) (docs/derivations.md#searching-and-counting).
"""
from __future__ import annotations

from typing import Any, List, Optional, Tuple, Union

import numpy as np

from .. import backend
from ..autograd import Function
from ..precision import refuse_complex_order
from ..tensor import Tensor, normalize_dtype
from ..tensor.layout import check_layout
from .logic import nonzero
from .no_derivative import record_without_derivative
from .shape import _normalize_dim

__all__ = ["searchsorted", "bucketize", "isin", "histc", "argwhere", "unique_consecutive",
           "triu_indices", "tril_indices", "bernoulli", "bernoulli_"]


def _host(value: Any) -> np.ndarray:
    return backend.to_host(value._data) if isinstance(value, Tensor) else np.asarray(value)


def _on(array: np.ndarray, like: Optional[Tensor]) -> Tensor:
    device = like.device if like is not None else "cpu"
    return Tensor._wrap(backend.to_device(np.ascontiguousarray(array) if array.ndim else array,
                                          device))


def _sortable(array: np.ndarray) -> np.ndarray:
    """bfloat16 (an ml_dtypes type NumPy cannot search) as float32; others unchanged."""
    return array.astype(np.float32) if array.dtype.kind == "V" else array


# ------------------------------------------------------------------ searching
def searchsorted(sorted_sequence: Tensor, values: Any, *, out_int32: bool = False,
                 right: bool = False, side: Optional[str] = None,
                 sorter: Optional[Tensor] = None) -> Tensor:
    """``torch.searchsorted``: for each value, the index where it would go into the sorted
    last dim of ``sorted_sequence`` to keep it sorted (``right``/``side="right"``: after
    equal values). A 1-D sequence serves every value; an N-D one has one row per row of
    values (their leading dims equal). ``values`` may be a number (a 0-d result)."""
    if not isinstance(sorted_sequence, Tensor):
        raise TypeError("searchsorted(): sorted_sequence must be a Tensor")
    if side is not None:
        if side not in ("left", "right"):
            raise RuntimeError(f"torch.searchsorted(): side can only be 'left' or 'right' but "
                               f"got {side}")
        if right and side == "left":
            raise RuntimeError("torch.searchsorted(): side and right can't be set to "
                               "opposites, got side of left while right was True")
        right = side == "right"
    refuse_complex_order("searchsorted", sorted_sequence, values)   # no order (torch refuses)
    values_bool = values.dtype == np.bool_ if isinstance(values, Tensor) \
        else isinstance(values, (bool, np.bool_))
    if sorted_sequence.dtype == np.bool_ and values_bool:
        raise NotImplementedError(   # torch searches in the common dtype and has no bool one
            "\"searchsorted_out_cpu\" not implemented for 'Bool' (as torch: a bool "
            "sequence searched for bool values); convert them with .int() first")
    boundaries = _sortable(_host(sorted_sequence))
    scalar = not isinstance(values, Tensor)
    values = _sortable(_host(values))
    if boundaries.ndim == 0:
        raise RuntimeError("torch.searchsorted(): boundaries tensor should have positive "
                           "dimension, but got 0 dimension")
    if sorter is not None:
        order = _host(sorter)
        if order.shape != boundaries.shape:
            raise RuntimeError(f"torch.searchsorted(): boundary and sorter must have the same "
                               f"size, but got boundary tensor {list(boundaries.shape)} and "
                               f"got sorter tensor {list(order.shape)}")
        boundaries = np.take_along_axis(boundaries, order.astype(np.int64), -1)
    how = "right" if right else "left"
    if boundaries.ndim > 1 and (scalar or values.ndim != boundaries.ndim
                                or values.shape[:-1] != boundaries.shape[:-1]):
        raise RuntimeError(f"torch.searchsorted(): boundaries tensor should be 1 dimension "
                           f"or the first N-1 dimensions of boundaries tensor and input "
                           f"value tensor must match, but we got boundaries tensor "
                           f"{list(boundaries.shape)} and input value tensor "
                           f"{list(np.shape(values))}")
    if boundaries.ndim == 1:
        out = _bisect(boundaries[None, :], np.reshape(values, (1, -1)), right) \
            .reshape(np.shape(values))
    elif np.size(values) == 0 or boundaries.shape[-1] == 0:
        out = np.zeros(np.shape(values), dtype=np.int64)
    else:                                        # one sorted row per row of values
        rows_b = boundaries.reshape(-1, boundaries.shape[-1])
        rows_v = values.reshape(-1, values.shape[-1])
        out = _bisect(rows_b, rows_v, right).reshape(values.shape)
    out = np.asarray(out, dtype=np.int32 if out_int32 else np.int64)
    return _on(out, sorted_sequence)


def _bisect(rows: np.ndarray, values: np.ndarray, right: bool) -> np.ndarray:
    """torch's binary search, on every value at once: rows (R, n), values (R, m) -> (R, m).
    Step right of mid while not (row[mid] >= v) (``right``: not (row[mid] > v)); so a NaN
    value goes past everything, and a NaN in a row sends the search right, as in torch
    (NumPy's searchsorted orders NaN differently)."""
    n = rows.shape[-1]
    low = np.zeros(values.shape, dtype=np.int64)
    high = np.full(values.shape, n, dtype=np.int64)
    with np.errstate(invalid="ignore"):
        while n and (low < high).any():
            active = low < high
            mid = low + (high - low) // 2
            at_mid = np.take_along_axis(rows, np.minimum(mid, n - 1), axis=-1)
            go_right = ~(at_mid > values) if right else ~(at_mid >= values)
            low = np.where(active & go_right, mid + 1, low)
            high = np.where(active & ~go_right, mid, high)
    return low


def bucketize(input: Any, boundaries: Tensor, *, out_int32: bool = False,  # noqa: A002
              right: bool = False) -> Tensor:
    """``torch.bucketize``: the bucket of each value among 1-D sorted ``boundaries``:
    i with boundaries[i-1] < x <= boundaries[i] (``right=True``: boundaries[i-1] <= x <
    boundaries[i]); searchsorted with the roles of the arguments swapped."""
    if not isinstance(boundaries, Tensor) or boundaries.ndim != 1:
        raise RuntimeError(f"boundaries tensor must be 1 dimension, but got dim("
                           f"{getattr(boundaries, 'ndim', '?')})")
    return searchsorted(boundaries, input, out_int32=out_int32, right=right)


def isin(elements: Any, test_elements: Any, *, assume_unique: bool = False,
         invert: bool = False) -> Tensor:
    """``torch.isin``: a bool tensor of elements' shape, True where the element equals one
    of ``test_elements`` (``invert``: where it equals none). Either may be a number."""
    if not isinstance(elements, Tensor) and not isinstance(test_elements, Tensor):
        raise TypeError("isin(): at least one of elements and test_elements must be a Tensor")
    for side in (elements, test_elements):
        if (side.dtype == np.bool_) if isinstance(side, Tensor) \
                else isinstance(side, (bool, np.bool_)):
            raise RuntimeError("Unsupported input type encountered for isin(): Bool (as "
                               "torch); convert the bool side with .int() first, or use "
                               "== / logical ops for bool tensors")
        if (np.dtype(side.dtype).kind == "c") if isinstance(side, Tensor) \
                else isinstance(side, (complex, np.complexfloating)):
            from ..precision import scalar_type_name
            kind = scalar_type_name(side.dtype) if isinstance(side, Tensor) else \
                scalar_type_name(np.complex128 if isinstance(side, complex) else
                                 np.asarray(side).dtype)
            raise RuntimeError(f"Unsupported input type encountered for isin(): {kind} (as "
                               f"torch: complex numbers have no order to search in); "
                               f"compare with == and .any() instead")
    like = elements if isinstance(elements, Tensor) else test_elements
    left, right = _sortable(_host(elements)), _sortable(_host(test_elements))
    out = np.isin(left, right, invert=bool(invert))
    return _on(np.asarray(out, dtype=np.bool_), like)


# ------------------------------------------------------------------ counting
def histc(input: Tensor, bins: int = 100, min: float = 0, max: float = 0  # noqa: A002
          ) -> Tensor:
    """``torch.histc``: counts of input's elements in ``bins`` equal-width bins over [min,
    max] (min == max: the data's own min and max; equal too: widened by 1 each side).
    Elements outside are ignored; one equal to max goes into the last bin. The bin of x is
    torch's placement: int((x - min) * bins / (max - min)), each operation in input's
    dtype (so float16 elements near an edge land where torch puts them, not always between
    the edges its linspace would give). Returns input's dtype."""
    if not isinstance(input, Tensor):
        raise TypeError("histc(): input must be a Tensor")
    if input.dtype.kind not in "fV":
        raise RuntimeError(f"torch.histogram: input tensor and bins tensors should have the "
                           f"same dtype, but got input {input.dtype} (histc needs a floating "
                           f"tensor; convert with .float())")
    if isinstance(bins, bool) or not isinstance(bins, (int, np.integer)) or bins <= 0:
        raise RuntimeError(f"torch.histc(): bins must be > 0, but got {bins} for dim 0")
    data = _host(input).reshape(-1)
    wide = data.astype(np.float32) if data.dtype.itemsize < 4 else data
    low, high = float(min), float(max)
    if low == high and wide.size:
        low, high = float(wide.min()), float(wide.max())
    if low == high:
        low, high = low - 1, high + 1
    if low > high:
        raise RuntimeError(f"torch.histc(): max must be larger than min, got min {min} and "
                           f"max {max}")
    if not (np.isfinite(low) and np.isfinite(high)):
        raise RuntimeError(f"torch.histc(): range of [{low}, {high}] is not finite")
    # torch.histc places x by the linear formula alone (no look at the edges, unlike
    # torch.histogram): int((x - min) * bins / (max - min)), each operation in input's dtype
    # (a float16/bfloat16 one rounded to it, as c10::Half's arithmetic), x == max in the last
    # bin
    if data.dtype.itemsize < 4:
        rounded = lambda v: np.asarray(v, np.float32).astype(data.dtype).astype(np.float32)  # noqa
    else:
        rounded = lambda v: v                                                          # noqa
    kind = wide.dtype.type
    low_t, high_t = rounded(kind(low)), rounded(kind(high))
    inside = wide[(wide >= low_t) & (wide <= high_t)]
    position = rounded(rounded(rounded(inside - low_t) * rounded(kind(bins)))
                       / rounded(high_t - low_t))
    position = np.minimum(position.astype(np.int64), bins - 1)
    counts = np.bincount(position, minlength=bins)[:bins]
    return _on(counts.astype(input.dtype), input)


def argwhere(input: Tensor) -> Tensor:  # noqa: A002 - torch's name
    """``torch.argwhere``: the (n, ndim) int64 indices of input's non-zero elements, as
    ``nonzero``."""
    if not isinstance(input, Tensor):
        raise TypeError("argwhere(): input must be a Tensor")
    return nonzero(input)


def unique_consecutive(input: Tensor, return_inverse: bool = False,  # noqa: A002
                       return_counts: bool = False, dim: Optional[int] = None
                       ) -> Union[Tensor, Tuple[Tensor, ...]]:
    """``torch.unique_consecutive``: each run of equal consecutive elements (slices along
    ``dim``) kept once; ``inverse``: the run each element belongs to; ``counts``: each run's
    length (both int64)."""
    if not isinstance(input, Tensor):
        raise TypeError("unique_consecutive(): input must be a Tensor")
    data = _host(input)
    if dim is None:
        flat = data.reshape(-1)
        starts = np.ones(flat.shape[0], dtype=np.bool_)
        starts[1:] = flat[1:] != flat[:-1]
        values = flat[starts]
        inverse_shape = data.shape
    else:
        if data.ndim == 0:
            raise IndexError(f"unique_consecutive: dim {dim} given for a 0-d tensor")
        axis = _normalize_dim(int(dim), data.ndim, "unique_consecutive")
        moved = np.moveaxis(data, axis, 0)
        starts = np.ones(moved.shape[0], dtype=np.bool_)
        if moved.shape[0] > 1:
            same = (moved[1:] == moved[:-1]).reshape(moved.shape[0] - 1, -1).all(axis=1)
            starts[1:] = ~same
        values = np.moveaxis(moved[starts], 0, axis)
        inverse_shape = (moved.shape[0],)
    runs = np.cumsum(starts) - 1
    out: List[Tensor] = [record_without_derivative("unique_consecutive",
                                                   _on(np.asarray(values), input), input)]
    if return_inverse:
        out.append(_on(runs.reshape(inverse_shape).astype(np.int64), input))
    if return_counts:
        edges = np.flatnonzero(starts).tolist() + [starts.shape[0]]
        out.append(_on(np.diff(edges).astype(np.int64), input))
    return out[0] if len(out) == 1 else tuple(out)


# ------------------------------------------------------------------ index makers
def _triangle_indices(op: str, row: int, col: int, offset: int, dtype: Any, device: Any,
                      lower: bool) -> Tensor:
    for name, value in (("row", row), ("col", col), ("offset", offset)):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
            raise TypeError(f"{op}(): argument '{name}' must be int, not "
                            f"{type(value).__name__}")
    if row < 0 or col < 0:
        raise RuntimeError(f"{op}: row must be non-negative, got {row}" if row < 0 else
                           f"{op}: col must be non-negative, got {col}")
    want = np.dtype(normalize_dtype(dtype)) if dtype is not None else np.dtype(np.int64)
    if want not in (np.dtype(np.int64), np.dtype(np.int32)):
        raise RuntimeError(f"\"{op}\" not implemented for '{want}' (use torch.long or "
                           f"torch.int)")
    rows, cols = (np.tril_indices if lower else np.triu_indices)(row, offset, col)
    out = np.stack([rows, cols]).astype(want).reshape(2, -1)
    return Tensor._wrap(backend.to_device(out, device or "cpu"))


def triu_indices(row: int, col: int, offset: int = 0, *, dtype: Any = None,
                 device: Any = None, layout: Any = None) -> Tensor:
    """``torch.triu_indices``: the (2, N) coordinates of the upper triangle of a row x col
    matrix (on and above diagonal ``offset``), row by row."""
    check_layout(layout, "triu_indices")
    return _triangle_indices("triu_indices", row, col, offset, dtype, device, False)


def tril_indices(row: int, col: int, offset: int = 0, *, dtype: Any = None,
                 device: Any = None, layout: Any = None) -> Tensor:
    """``torch.tril_indices``: the (2, N) coordinates of the lower triangle (on and below
    diagonal ``offset``), row by row."""
    check_layout(layout, "tril_indices")
    return _triangle_indices("tril_indices", row, col, offset, dtype, device, True)


# ------------------------------------------------------------------ random
class BernoulliDraw(Function):
    """out = 1 with probability p, else 0 (``draws`` are uniform in [0, 1): out = draws < p).
    A sample is piecewise constant in p, so its derivative is 0 wherever it exists: dp = 0,
    torch's rule too (its output requires grad when p does, and passes back zeros)."""

    def forward(self, p, draws: Any):
        return (draws < p).astype(p.dtype)

    def backward(self, grad):
        return backend.get_array_module(grad).zeros_like(grad)


def bernoulli(input: Tensor, p: Any = None, *, generator: Any = None) -> Tensor:  # noqa
    """``torch.bernoulli``: 1 with probability ``input`` (or ``p``) and 0 otherwise, in
    input's dtype; probabilities must lie in [0, 1]. No gradient (as torch's)."""
    if not isinstance(input, Tensor):
        raise TypeError("bernoulli(): input must be a Tensor")
    if input.dtype.kind not in "fV" and p is None:
        raise RuntimeError(f"bernoulli: expected a floating tensor of probabilities, got "
                           f"{input.dtype}")
    probs = _host(input).astype(np.float64) if p is None else np.full(input.shape, float(p))
    if probs.size and not ((probs >= 0) & (probs <= 1)).all():
        raise RuntimeError("bernoulli: all probabilities must be in [0, 1] (input.min() >= 0 "
                           "and input.max() <= 1)")
    draws = backend.to_host(backend.uniform(input.shape, "cpu", np.float64, generator))
    if p is None:
        return BernoulliDraw.apply(input, draws=backend.to_device(draws, input.device))
    return _on((draws < probs).astype(input.dtype), input)


def bernoulli_(x: Tensor, p: Any = 0.5, *, generator: Any = None) -> Tensor:
    """``Tensor.bernoulli_(p)``: x filled with 0/1 draws, each 1 with probability p (a number,
    or a tensor of probabilities broadcast to x)."""
    from .inplace import copy_
    probs = p if isinstance(p, Tensor) else None
    if probs is not None:
        chances = np.broadcast_to(_host(probs).astype(np.float64), x.shape)
        draws = bernoulli(Tensor._wrap(np.ascontiguousarray(chances)), generator=generator)
    else:
        draws = bernoulli(x.detach(), p, generator=generator)
    before = x._ctx
    copy_(x, draws.to(x.dtype))
    if x._ctx is not before:            # torch: bernoulli_.Tensor 1, bernoulli_.float 2
        x._ctx.torch_name = "BernoulliBackward1" if probs is not None else "BernoulliBackward2"
    return x
