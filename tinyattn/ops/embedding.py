"""Embedding lookup (docs/derivations.md#embedding)."""
from __future__ import annotations

from typing import Any, Optional

import numpy as np

from .. import backend
from ..autograd import Function, keep_versions
from ..tensor import Tensor

__all__ = ["embedding", "check_index_range", "normalize_padding_idx",
           "check_embedding_options"]


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
    With ``padding_idx`` p, row p gets no gradient at all (PyTorch's rule: the padding row
    stays as it is, zeros from initialisation, however often padding appears).
    """

    def forward(self, weight, ids, padding_idx: Optional[int] = None):
        self.save_for_backward(ids, weight.shape, padding_idx)
        return weight[ids]                      # (V, D)[ids] -> (..., D)

    def backward(self, grad):
        ids, (vocab, dim), padding_idx = self.saved
        xp = backend.get_array_module(grad)
        dweight = xp.zeros((vocab, dim), dtype=grad.dtype)
        backend.scatter_add(dweight, ids.reshape(-1), grad.reshape(-1, dim))  # (N, D) -> rows
        if padding_idx is not None:
            dweight[padding_idx] = 0            # the padding row is never trained
        return dweight


def embedding(ids: Tensor, weight: Tensor, padding_idx: Optional[int] = None,
              max_norm: Optional[float] = None, norm_type: float = 2.0,
              scale_grad_by_freq: bool = False, sparse: bool = False) -> Tensor:
    """PyTorch's ``F.embedding(input, weight, padding_idx=None)``: rows of ``weight`` picked
    by integer ids; row ``padding_idx`` (negative counts from the end) gets no gradient.
    ``max_norm``, ``scale_grad_by_freq`` and ``sparse`` are not supported and say so."""
    check_embedding_options(max_norm, scale_grad_by_freq, sparse)
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
    padding_idx = normalize_padding_idx(padding_idx, weight.shape[0])
    out = Embedding.apply(weight, ids=ids_data.copy(), padding_idx=padding_idx)
    return keep_versions(out, ids if isinstance(ids, Tensor) else None)   # as torch keeps them


def normalize_padding_idx(padding_idx: Optional[int], num_embeddings: int) -> Optional[int]:
    """``padding_idx`` as a row number in [0, V) (negative counts from the end), or None."""
    if padding_idx is None:
        return None
    if isinstance(padding_idx, bool) or not isinstance(padding_idx, (int, np.integer)):
        raise TypeError(f"embedding: padding_idx must be an int or None, got {padding_idx!r}")
    if not -num_embeddings <= padding_idx < num_embeddings:
        raise ValueError(f"embedding: padding_idx {padding_idx} is out of range for "
                         f"num_embeddings={num_embeddings}; it must lie in "
                         f"[-{num_embeddings}, {num_embeddings - 1}]")
    return int(padding_idx) % num_embeddings


def check_embedding_options(max_norm: Any, scale_grad_by_freq: bool, sparse: bool) -> None:
    if max_norm is not None:
        raise NotImplementedError("embedding: max_norm (renormalising looked-up rows in place) "
                                  "is not supported in tinyattn; leave it None")
    if scale_grad_by_freq:
        raise NotImplementedError("embedding: scale_grad_by_freq=True is not supported in "
                                  "tinyattn; leave it False")
    if sparse:
        raise NotImplementedError("embedding: sparse gradients are not supported in tinyattn "
                                  "(gradients are dense arrays); leave sparse=False")
