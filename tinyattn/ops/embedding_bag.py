"""``F.embedding_bag``: sums, means or maxima of bags of embedding rows, without building the
(number of ids, dim) lookup first in torch (here it is built: the values are the same)
(docs/derivations.md#embedding-bag).

The ids are split into bags: a 2-D input (B, N) is B bags of N ids; a 1-D input is split by
``offsets`` (bag b is ids[offsets[b]:offsets[b + 1]], the last bag running to the end, or
with ``include_last_offset`` the last offset closing it). Ids equal to ``padding_idx`` are
left out (not counted by the mean). With e_j = weight[ids[j]] and B_b the bag's kept ids:

- sum:  out[b] = sum_{j in B_b} s_j e_j   (s_j = per_sample_weights[j], else 1)
- mean: out[b] = sum_{j in B_b} e_j / |B_b|
- max:  out[b, d] = max_{j in B_b} e_j[d]  (the first j reaching it)
and an empty bag gives zeros.

Backward (each mode linear in the rows it read, max in the row that won):
d weight[v] = sum over j with ids[j] = v of s_j g[bag(j)]  (sum), g[bag(j)] / |B_bag(j)|
(mean); d weight[ids[argmax], d] += g[b, d] (max); with ``scale_grad_by_freq`` each row's
gradient divided by a count as torch's CPU kernel does (EmbeddingBag.backward: not always
the id's own count). d s_j = e_j . g[bag(j)].
"""
from __future__ import annotations

from typing import Any, Optional

import numpy as np

from .. import backend
from ..autograd import Function, keep_versions
from ..tensor import Tensor
from .embedding import (check_embedding_options, check_index_range, embedding_renorm_,
                        normalize_padding_idx)
from .rearrange import index_select

__all__ = ["embedding_bag"]


class EmbeddingBag(Function):
    """out (B, D) from weight (V, D) and optional per-sample weights (module docstring)."""

    def forward(self, weight, *per_sample, ids, bag, bags: int, mode: str,
                scale_grad_by_freq: bool, all_ids: Any, longest: int):
        xp = backend.get_array_module(weight)
        rows = weight[ids]                                           # (M, D)
        dim = weight.shape[1]
        counts = xp.bincount(bag, minlength=bags)                    # kept ids per bag
        self.first = None
        if mode == "max":
            # the bags side by side, padded with -inf to the longest: (B, L, D); the kept ids
            # of a bag are contiguous (offsets never decrease)
            start = xp.cumsum(counts) - counts
            slots = start[:, None] + xp.arange(max(longest, 1))[None, :]      # (B, L)
            filled = xp.arange(max(longest, 1))[None, :] < counts[:, None]
            slots = xp.where(filled, slots, 0)
            stacked = rows[xp.minimum(slots, max(ids.shape[0] - 1, 0))] if ids.shape[0] \
                else xp.zeros(slots.shape + (dim,), dtype=weight.dtype)
            stacked = xp.where(filled[..., None], stacked, -xp.inf)
            best = stacked.argmax(axis=1)                                     # (B, D) first
            self.first = xp.where(counts[:, None] > 0,
                                  xp.take_along_axis(slots, best, axis=1), ids.shape[0])
            out = xp.where(counts[:, None] > 0, stacked.max(axis=1), 0).astype(weight.dtype)
        else:
            picked = rows * per_sample[0][:, None] if per_sample else rows
            out = xp.zeros((bags, dim), dtype=weight.dtype)
            backend.scatter_add(out, bag, picked)
            if mode == "mean":
                out = (out / xp.maximum(counts, 1)[:, None]).astype(weight.dtype)
        # torch's backward keeps the weight only for the per-sample weights' gradient
        self.save_for_backward(*((weight, *per_sample) if per_sample else (weight.shape,)))
        self.ids, self.bag, self.counts = ids, bag, counts
        self.mode, self.by_freq, self.all_ids = mode, scale_grad_by_freq, all_ids
        return out

    def backward(self, grad):
        weight, *per_sample = self.saved
        ids, bag, counts = self.ids, self.bag, self.counts
        xp = backend.get_array_module(grad)
        vocab, dim = weight.shape if per_sample else weight
        dweight = xp.zeros((vocab, dim), dtype=grad.dtype)
        if self.mode == "max":
            empty = self.first == ids.shape[0]
            winners = ids[xp.where(empty, 0, self.first)]             # (B, D) row ids
            columns = xp.broadcast_to(xp.arange(dim), winners.shape)
            backend.scatter_add(dweight, (winners[~empty], columns[~empty]), grad[~empty])
        else:
            spread = grad[bag]                                       # (M, D)
            if self.mode == "mean":
                spread = spread / xp.maximum(counts, 1)[bag][:, None].astype(grad.dtype)
            if per_sample:
                spread = spread * per_sample[0][:, None]
            backend.scatter_add(dweight, ids, spread.astype(grad.dtype))
        if self.by_freq:
            # torch's CPU rule, observed (torch 2.13): the k-th distinct id (ascending) is
            # divided by the count of the id at position k of the SORTED ids (all of them,
            # padding included): its own count while no smaller id repeats, not after
            frequency = xp.bincount(self.all_ids, minlength=vocab)
            distinct = xp.unique(self.all_ids)
            divisor = xp.ones(vocab, dtype=grad.dtype)
            divisor[distinct] = frequency[xp.sort(self.all_ids)[:distinct.size]]
            dweight = dweight / divisor[:, None]
        if not per_sample:
            return dweight
        return dweight, (weight[ids] * grad[bag]).sum(axis=1).astype(grad.dtype)


def embedding_bag(input: Tensor, weight: Tensor, offsets: Optional[Tensor] = None,  # noqa: A002
                  max_norm: Optional[float] = None, norm_type: float = 2,
                  scale_grad_by_freq: bool = False, mode: str = "mean", sparse: bool = False,
                  per_sample_weights: Optional[Tensor] = None,
                  include_last_offset: bool = False,
                  padding_idx: Optional[int] = None) -> Tensor:
    """``F.embedding_bag``: per bag of ids the sum, mean or max of their rows (module
    docstring for the bags, padding_idx and the gradients)."""
    check_embedding_options(max_norm, scale_grad_by_freq, sparse)
    if weight.ndim != 2:
        raise ValueError(f"weight has to be a 2D Tensor, but got Tensor of dimension "
                         f"{weight.ndim}")
    if not isinstance(input, Tensor) or input.dtype.kind not in "iu":
        raise TypeError(f"embedding_bag: input must be an integer (int64 or int32) tensor of "
                        f"ids, got {getattr(input, 'dtype', type(input).__name__)}")
    if per_sample_weights is not None and tuple(input.shape) != tuple(
            per_sample_weights.shape):
        raise ValueError(f"embedding_bag: If per_sample_weights "
                         f"({tuple(per_sample_weights.shape)}) is not None, then it must have "
                         f"the same shape as the input ({tuple(input.shape)})")
    if input.device != weight.device:
        raise RuntimeError(f"embedding_bag: input is on {input.device} but weight is on "
                           f"{weight.device}; move them to one device")
    ids_data = backend.to_host(input._data).astype(np.int64)
    if input.ndim == 2:
        if offsets is not None:
            raise ValueError(f"if input is 2D, then offsets has to be None, as input is "
                             f"treated is a mini-batch of fixed length sequences. However, "
                             f"found offsets of type {type(offsets).__name__}")
        starts = np.arange(0, input.shape[0] * input.shape[1], input.shape[1], dtype=np.int64)
        ends = starts + input.shape[1]
        ids_data = ids_data.reshape(-1)
    elif input.ndim == 1:
        if offsets is None:
            raise ValueError("offsets has to be a 1D Tensor but got None")
        if offsets.ndim != 1:
            raise ValueError("offsets has to be a 1D Tensor")
        cuts = backend.to_host(offsets._data).astype(np.int64)
        if cuts.size and cuts[0] != 0:
            raise RuntimeError(f"offsets[0] has to be 0, i.e., the first sequence in the "
                               f"mini-batch has to start from position 0. However, got "
                               f"{int(cuts[0])}")
        if cuts.size and cuts[-1] > ids_data.size:
            raise RuntimeError(f"offsets[-1] can not be greater than input's length "
                               f"{ids_data.size} but got offsets[-1] of {int(cuts[-1])}")
        if cuts.size > 1 and (np.diff(cuts) < 0).any():
            raise RuntimeError(f"embedding_bag: offsets must be non-decreasing, got "
                               f"{cuts.tolist()}")
        if include_last_offset:
            starts, ends = cuts[:-1], cuts[1:]
        else:
            starts, ends = cuts, np.append(cuts[1:], ids_data.size)
    else:
        raise ValueError(f"input has to be 1D or 2D Tensor, but got Tensor of dimension "
                         f"{input.ndim}")
    if mode not in ("sum", "mean", "max"):
        raise ValueError("mode has to be one of sum, mean or max")
    if max_norm is not None:
        embedding_renorm_(weight, ids_data, float(max_norm), norm_type)
    if scale_grad_by_freq and mode == "max":
        raise ValueError("max mode does not support scaling the gradient by the frequency")
    if per_sample_weights is not None and mode != "sum":
        raise NotImplementedError(f"embedding_bag: per_sample_weights was not None. "
                                  f"per_sample_weights is only supported for mode='sum' (got "
                                  f"mode='{mode}'). Please open a feature request on GitHub.")
    check_index_range(ids_data, weight.shape[0], "embedding_bag", "id")
    padding = normalize_padding_idx(padding_idx, weight.shape[0])
    total = ids_data.size
    bag_of = np.full(total, -1, dtype=np.int64)
    for b, (start, end) in enumerate(zip(starts.tolist(), ends.tolist())):
        bag_of[start:end] = b
    kept = bag_of >= 0
    if padding is not None:
        kept &= ids_data != padding
    device = weight.device
    kept_ids = backend.to_device(ids_data[kept], device)
    inputs = [weight]
    if per_sample_weights is not None:
        inputs.append(_select(per_sample_weights.reshape(-1), np.flatnonzero(kept)))
    bag_ids = bag_of[kept]
    longest = int(np.bincount(bag_ids, minlength=len(starts)).max()) if len(starts) else 0
    out = EmbeddingBag.apply(*inputs, ids=kept_ids, bag=backend.to_device(bag_ids, device),
                             bags=len(starts), mode=mode,
                             scale_grad_by_freq=bool(scale_grad_by_freq),
                             all_ids=backend.to_device(ids_data, device), longest=longest)
    # torch's backward keeps the ids, the offsets and the per-sample weights: an in-place
    # write to one of them after the op makes its backward raise, and so here
    return keep_versions(out, input, offsets, per_sample_weights)


def _select(values: Tensor, positions: np.ndarray) -> Tensor:
    """the kept per-sample weights (a differentiable index, so their gradient reaches the
    caller's tensor at the kept places and is 0 at the others)"""
    return index_select(values, 0, Tensor._wrap(backend.to_device(positions, values.device)))
