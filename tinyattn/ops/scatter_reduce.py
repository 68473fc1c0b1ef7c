"""Reducing into indexed positions: ``scatter_reduce`` (sum, prod, mean, amax, amin of the
values that land on one element), ``scatter`` with ``reduce="add"|"multiply"`` and a number,
``index_fill`` and ``bincount`` (docs/derivations.md#scatter_reduce-index_fill-and-bincount).

For dim 0 of a 2-D tensor, scatter_reduce combines x[index[i][j]][j] (when include_self) with
every src[i][j] that lands there; an element no index points at keeps x's value.
"""
from __future__ import annotations

from typing import Any, Optional

import numpy as np

from .. import backend
from ..autograd import Function, keep_versions, name_node
from ..tensor import Tensor
from ..precision import check_fits, integer_scalar, is_floating
from .inplace import _in_place
from .masking import where
from .scatter import _index_positions, checked_fill_value, flat_when_0d
from .shape import _normalize_dim

__all__ = ["scatter_reduce", "scatter_reduce_", "scatter_number_reduce", "index_fill",
           "index_fill_", "bincount"]

_REDUCTIONS = ("sum", "prod", "mean", "amax", "amin")
_UFUNC = {"sum": "add", "mean": "add", "prod": "multiply", "amax": "maximum",
          "amin": "minimum"}


class ScatterReduce(Function):
    """out[p] = reduce({x[p] if include_self} + {src[i] : index position of i is p}); an
    element p that no index hits keeps x[p] (derivative 1). At a hit element, with n the
    number of values combined there:
        sum:  dx = g (or 0 without self),  dsrc[i] = g[p]
        mean: out = total / n, so dx = g / n (or 0),  dsrc[i] = g[p] / n
        prod: each factor's derivative is the product of the others:
              dx = g * out / x,  dsrc[i] = g[p] * out[p] / src[i]  (computed without the
              division where a factor is 0)
        amax, amin: the gradient is shared equally by the values equal to out[p] (ties),
              as in PyTorch; the others get 0. As torch, x[p] equal to out[p] counts as a
              tie even without include_self (it then gets 0, so the src share sums to less
              than g: torch's rule, followed exactly).
    """

    promotes_inputs = False    # mixed floating dtypes: refused, as torch refuses
    # torch's one backward for every reduce keeps self, src, index and the result (it keeps
    # values = src[region] here, a copy): a write to any of them raises, as there
    versions_checked = (0, 1, -1)

    def forward(self, x, src, positions, region, reduce: str, include_self: bool):
        xp = backend.get_array_module(x)
        values = src[region]
        hits = xp.zeros(x.shape, dtype=np.int64)
        backend.scatter_add(hits, positions, 1)
        hit = hits > 0
        out = x.copy()
        if not include_self:            # start each hit element from the reduction's unit
            unit = {"sum": 0, "mean": 0, "prod": 1, "amax": -np.inf, "amin": np.inf}[reduce]
            out[hit] = unit if x.dtype.kind == "f" else _int_unit(reduce, x.dtype)
        out = _reduce_at(out, positions, values, reduce)
        count = hits + (1 if include_self else 0)
        if reduce == "mean":
            total = out
            mean = total / xp.maximum(count, 1) if is_floating(x.dtype) else \
                xp.floor_divide(total, xp.maximum(count, 1))      # torch: integers floor
            out = xp.where(hit, mean, x).astype(x.dtype)
        self.save_for_backward(x, values, src.shape, positions, region, hit, count, out)
        self._reduce, self._include_self = reduce, include_self
        return out

    def backward(self, grad):
        x, values, src_shape, positions, region, hit, count, out = self.saved
        xp = backend.get_array_module(grad)
        reduce, with_self = self._reduce, self._include_self
        if reduce in ("sum", "mean"):
            share = grad / xp.maximum(count, 1).astype(grad.dtype) if reduce == "mean" \
                else grad
            dx_hit, dvalues = share, share[positions]
        elif reduce == "prod":
            dx_hit, dvalues = self._prod_grads(xp, grad, x, values, positions, out, with_self)
        else:
            ties = xp.zeros(x.shape, dtype=np.int64)
            backend.scatter_add(ties, positions, (values == out[positions]).astype(np.int64))
            self_tie = x == out                 # counted even without self, as torch
            ties = ties + self_tie
            share = grad / xp.maximum(ties, 1).astype(grad.dtype)
            dx_hit = xp.where(self_tie, share, 0)
            dvalues = xp.where(values == out[positions], share[positions], 0)
        if not with_self:
            dx_hit = xp.zeros_like(grad)
        dx = xp.where(hit, dx_hit, grad)
        dsrc = xp.zeros(src_shape, dtype=grad.dtype)
        dsrc[region] = dvalues
        return dx, dsrc

    @staticmethod
    def _prod_grads(xp, grad, x, values, positions, out, with_self):
        """The product of the other factors, by division where no factor is 0 and by a
        direct product (element by element, rare) where one is."""
        with np.errstate(divide="ignore", invalid="ignore"):
            dx = grad * out / x
            dvalues = grad[positions] * out[positions] / values
        zero_x = backend.to_host(x == 0)
        zero_values = backend.to_host(values == 0)
        if zero_x.any() or zero_values.any():
            host = [backend.to_host(a) for a in (grad, x, values, out)]
            dx, dvalues = backend.to_host(dx), backend.to_host(dvalues)
            _prod_at_zeros(host, [backend.to_host(p) for p in positions], dx, dvalues,
                           zero_x, zero_values, with_self)
            dx, dvalues = xp.asarray(dx), xp.asarray(dvalues)
        return dx, dvalues


def _prod_at_zeros(host, positions, dx, dvalues, zero_x, zero_values, with_self) -> None:
    """Where a factor is 0, its derivative is the product of the other factors there."""
    grad, x, values, _ = host
    targets = np.stack(np.broadcast_arrays(*positions), axis=-1).reshape(-1, x.ndim)
    flat_values = values.reshape(-1)
    groups = {}
    for i, p in enumerate(map(tuple, targets)):
        groups.setdefault(p, []).append(i)
    flat_dv = dvalues.reshape(-1)
    for p, members in groups.items():
        factors = [flat_values[i] for i in members] + ([x[p]] if with_self else [])
        if not any(f == 0 for f in factors):
            continue
        for k, i in enumerate(members):
            flat_dv[i] = grad[p] * np.prod(factors[:k] + factors[k + 1:])
        if with_self:
            dx[p] = grad[p] * np.prod(factors[:-1])
    dvalues[...] = flat_dv.reshape(dvalues.shape)


def _reduce_at(out: Any, positions: Any, values: Any, reduce: str) -> Any:
    """out[positions] (op)= values, repeated positions combined. Sums use the backend's
    scatter_add (on every device); prod / amax / amin have no GPU primitive in CuPy, so they
    combine on the host: one explicit copy each way."""
    if reduce in ("sum", "mean"):
        backend.scatter_add(out, positions, values)
        return out
    device = backend.device_of(out)
    host = backend.to_host(out).copy()
    getattr(np, _UFUNC[reduce]).at(host, tuple(backend.to_host(p) for p in positions),
                                   backend.to_host(values))
    return host if device == "cpu" else backend.to_device(host, device)


def _int_unit(reduce: str, dtype: np.dtype) -> Any:
    if reduce in ("amax", "amin"):
        info = np.iinfo(dtype) if dtype.kind in "iu" else None
        if info is None:
            return reduce == "amin"
        return info.min if reduce == "amax" else info.max
    return 1 if reduce == "prod" else 0


def scatter_reduce(input: Tensor, dim: int, index: Tensor, src: Tensor,  # noqa: A002
                   reduce: str, *, include_self: bool = True) -> Tensor:
    """``torch.scatter_reduce``: a copy of input where each element that index points at is
    reduced ("sum", "prod", "mean", "amax", "amin") with every src value landing there (and
    with its own value when ``include_self``)."""
    if reduce not in _REDUCTIONS:
        raise ValueError(f"scatter_reduce: reduce must be one of {', '.join(_REDUCTIONS)}, got "
                         f"{reduce!r}")
    if not isinstance(src, Tensor):
        raise TypeError(f"scatter_reduce: src must be a Tensor, got {type(src).__name__} (for "
                        f"a number use scatter(..., value, reduce='add'))")
    flat = flat_when_0d(lambda *a: scatter_reduce(*a, reduce, include_self=include_self),
                        "scatter_reduce", input, dim, index, src)
    if flat is not None:
        return flat
    positions, region = _index_positions("scatter_reduce", input, dim, index, src)
    if reduce == "mean" and input.dtype == np.bool_:
        raise NotImplementedError("scatter_reduce: reduce='mean' is not implemented for "
                                  "bool (as in torch); convert with .long() or .float()")
    out = ScatterReduce.apply(input, src, positions=positions, region=region, reduce=reduce,
                              include_self=bool(include_self))
    return keep_versions(out, index)      # torch keeps the index: writing to it raises


def scatter_reduce_(x: Tensor, dim: int, index: Tensor, src: Tensor, reduce: str, *,
                    include_self: bool = True) -> Tensor:
    return _in_place(x, "scatter_reduce_", lambda t: scatter_reduce(
        t, dim, index, src, reduce, include_self=include_self), (src,))


class ScatterNumberReduce(Function):
    """out = x with ``value`` added to (multiplied into) each element once per index that
    points at it, one after another in index order as torch's CPU kernel: an element no
    index hits is x's own, untouched (inf, NaN and -0.0 included; never x + 0 * inf). With n
    the number of hits at an element (float16 and bfloat16 combine in float32 with the value
    rounded to the dtype first, and round once at the end, as torch's kernel):
        add:      out = x + v + ... + v,   dout/dx = 1
        multiply: out = x * v * ... * v,   dout/dx = v ** n  (1 where n = 0)
    torch gives this call no derivative; tinyattn gives this one, which is exact."""

    def forward(self, x, positions, value, reduce: str):
        device = backend.device_of(x)
        value = np.asarray(value, dtype=x.dtype)          # rounded to x's dtype first
        half = x.dtype.itemsize < 4 and x.dtype.kind == "f" or x.dtype.name == "bfloat16"
        work = x.astype(np.float32) if half else x.copy()    # torch: halves add in float32
        out = _reduce_at(work, positions, backend.to_device(value.astype(work.dtype), device),
                         "sum" if reduce == "add" else "prod").astype(x.dtype)
        if reduce == "multiply":
            xp = backend.get_array_module(x)
            hits = xp.zeros(x.shape, dtype=np.int64)
            backend.scatter_add(hits, positions, 1)
            self.save_for_backward((backend.to_device(value, device) ** hits).astype(x.dtype))
        self._reduce = reduce
        return out

    def backward(self, grad):
        if self._reduce == "add":
            return (grad,)
        (factor,) = self.saved
        return (grad * factor,)


def scatter_number_reduce(input: Tensor, dim: int, index: Tensor, value: Any,  # noqa: A002
                          reduce: str) -> Tensor:
    """``scatter(input, dim, index, value, reduce="add"|"multiply")`` with a number: each
    time index points at an element, value is added to it (multiplies it), in index order
    (ScatterNumberReduce); a value the dtype cannot hold is torch's overflow error."""
    if reduce not in ("add", "multiply"):
        raise ValueError(f"scatter: reduce must be 'add' or 'multiply', got {reduce!r} (for "
                         f"sum, prod, mean, amax, amin use scatter_reduce with a src tensor)")
    if isinstance(value, Tensor) or not isinstance(value, (int, float, bool, np.number)):
        raise TypeError(f"scatter: value must be a Python number, got {type(value).__name__}")
    positions, _ = _index_positions("scatter", input, dim, index, None)
    value = checked_fill_value(value, input.dtype)
    return ScatterNumberReduce.apply(input, positions=positions, value=value, reduce=reduce)


def index_fill(input: Tensor, dim: int, index: Tensor, value: Any) -> Tensor:  # noqa: A002
    """``torch.index_fill``: a copy of input with the slices at ``index`` along dim set to
    ``value`` (a number or a 0-d tensor). Built on ``where``, so the gradient is g outside the
    filled slices, 0 inside, and their sum for a 0-d value tensor that requires grad."""
    if not isinstance(index, Tensor):
        raise TypeError(f"index_fill(): argument 'index' must be Tensor, not "
                        f"{type(index).__name__}")
    if index.dtype != np.int64:
        raise IndexError(f"index_fill_(): Expected dtype int64 for index (as torch; got "
                         f"{index.dtype}); convert it with .long()")
    if index.ndim > 1:
        raise RuntimeError(f"Index has to be a vector/scalar (index_fill, as torch; got shape "
                           f"{tuple(index.shape)})")
    if isinstance(value, Tensor) and value.ndim != 0:
        raise ValueError(f"index_fill: value must be a number or a 0-d tensor, got a tensor of "
                         f"shape {value.shape}")
    axis = _normalize_dim(int(dim), max(input.ndim, 1), "index_fill")
    size = input.shape[axis] if input.ndim else 1
    ids = backend.to_host(index._data).reshape(-1)
    if ids.size and (ids.min() < -size or ids.max() >= size):
        bad = ids.min() if ids.min() < -size else ids.max()
        raise IndexError(f"index_fill: index {bad} is out of range for dim {axis} of size "
                         f"{size}")
    xp = backend.get_array_module(input._data)
    chosen = np.zeros(size, dtype=bool)
    chosen[ids % size if size else ids] = True
    shape = [1] * input.ndim
    if input.ndim:
        shape[axis] = size
    mask = Tensor._wrap(backend.to_device(chosen.reshape(shape), input.device))
    node = "IndexFillBackward1" if isinstance(value, Tensor) else "IndexFillBackward0"
    if not isinstance(value, Tensor):     # as torch converts a scalar: -1 in uint8 is 255,
        check_fits(value, input.dtype, "index_fill")          # 300 its RuntimeError
        value = integer_scalar(value, input.dtype, "index_fill")
        value = Tensor._wrap(xp.asarray(value, dtype=input.dtype))
    elif value.dtype != input.dtype:
        if value.dtype.kind == "c" and input.dtype.kind != "c":   # .to() would drop the
            raise RuntimeError(                                   # imaginary part
                f"index_fill_(): Converting complex Scalar to non-complex type (as torch: a "
                f"complex value tensor for a {input.dtype} tensor; take .real first)")
        value = value.to(input.dtype)
    out = name_node(where(mask, value, input), node)        # torch: index_fill.int_Tensor/Scalar
    return keep_versions(out, index)   # torch keeps the index


def index_fill_(x: Tensor, dim: int, index: Tensor, value: Any) -> Tensor:
    return _in_place(x, "index_fill_", lambda t: index_fill(t, dim, index, value), (value,))


def bincount(input: Tensor, weights: Optional[Tensor] = None,  # noqa: A002
             minlength: int = 0) -> Tensor:
    """``torch.bincount``: out[v] counts the elements of the 1-D non-negative int tensor
    input equal to v (or sums their ``weights``), with max(input) + 1 or ``minlength`` bins,
    whichever is more. Counts are int64; weighted sums keep float32/float64 weights' dtype
    (other weights give float64, as in PyTorch) and are differentiable in weights
    (index_add)."""
    if not isinstance(input, Tensor) or input.ndim != 1 or input.dtype.kind not in "iu":
        raise TypeError(f"bincount only supports 1-d non-negative integral inputs, got "
                        f"{getattr(input, 'dtype', type(input).__name__)} of shape "
                        f"{getattr(input, 'shape', '?')}")
    ids = backend.to_host(input._data)
    if ids.size and ids.min() < 0:
        raise ValueError(f"bincount only supports 1-d non-negative integral inputs; input "
                         f"holds {ids.min()}")
    if isinstance(minlength, bool) or int(minlength) < 0:
        raise ValueError(f"bincount: minlength should be >= 0, got {minlength}")
    bins = max(int(ids.max()) + 1 if ids.size else 0, int(minlength))
    xp = backend.get_array_module(input._data)
    if weights is None:
        counts = np.bincount(ids, minlength=bins).astype(np.int64)
        return Tensor._wrap(backend.to_device(counts, input.device))
    if not isinstance(weights, Tensor) or weights.shape != input.shape:
        raise ValueError(f"bincount: weights must be a tensor of input's shape {input.shape}, "
                         f"got {getattr(weights, 'shape', type(weights).__name__)}")
    if weights.dtype not in (np.float32, np.float64):   # half weights keep their gradient
        weights = weights.to(np.float64) if is_floating(weights.dtype) else \
            Tensor._wrap(weights._data.astype(np.float64))
    from .scatter import index_add  # noqa: PLC0415
    zeros = Tensor._wrap(xp.zeros(bins, dtype=weights.dtype))
    return index_add(zeros, 0, Tensor._wrap(input._data.astype(np.int64)), weights)
