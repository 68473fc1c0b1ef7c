"""Embedding lookup (docs/derivations.md#embedding)."""
from __future__ import annotations

import numpy as np

from .. import backend
from ..autograd import Function
from ..tensor import Tensor

__all__ = ["embedding", "check_index_range"]


def check_index_range(ids, size: int, op: str, what: str) -> None:
    """Raise a clear error when an integer array holds a value outside [0, size)."""
    if ids.size == 0:
        return
    xp = backend.get_array_module(ids)
    low, high = backend.to_host(xp.stack([ids.min(), ids.max()])).tolist()  # one transfer
    if low < 0 or high >= size:
        bad = low if low < 0 else high
        valid = f"valid values are 0 to {size - 1}" if size > 0 else "there are none (size 0)"
        raise ValueError(f"{op}: {what} {bad} is out of range; {valid}")


class Embedding(Function):
    """out[...] = weight[ids[...]]: row lookup, (V, D) indexed by ids (...) -> (..., D).

    dweight[v] = sum of g[...] over every position whose id is v. Ids repeat (a token appears
    many times), so the rows are scatter-ADDED: assigning would keep only one of them (and
    NumPy does not promise which).
    """

    def forward(self, weight, ids):
        self.save_for_backward(ids, weight.shape)
        return weight[ids]                      # (V, D)[ids] -> (..., D)

    def backward(self, grad):
        ids, (vocab, dim) = self.saved
        xp = backend.get_array_module(grad)
        dweight = xp.zeros((vocab, dim), dtype=grad.dtype)
        backend.scatter_add(dweight, ids.reshape(-1), grad.reshape(-1, dim))  # (N, D) -> rows
        return dweight


def embedding(ids: Tensor, weight: Tensor) -> Tensor:
    """PyTorch's ``F.embedding(input, weight)``: rows of ``weight`` picked by integer ids."""
    ids_data = ids._data if isinstance(ids, Tensor) else np.asarray(ids)
    if not np.issubdtype(ids_data.dtype, np.integer):
        raise TypeError(f"embedding: ids must be integers, got dtype {ids_data.dtype}; "
                        f"convert with .long()")
    if weight.ndim != 2:
        raise ValueError(f"embedding: weight must be (num_embeddings, dim), got {weight.shape}")
    if backend.device_of(ids_data) != weight.device:
        raise RuntimeError(f"embedding: ids are on {backend.device_of(ids_data)} but weight is "
                           f"on {weight.device}; move them to one device")
    check_index_range(ids_data, weight.shape[0], "embedding", "token id")
    # The op keeps the ids for its backward: its own copy (a few bytes per token), so a
    # caller who reuses the id buffer after the forward cannot change the gradient.
    return Embedding.apply(weight, ids=ids_data.copy())
