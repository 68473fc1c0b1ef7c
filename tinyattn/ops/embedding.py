"""Embedding lookup (docs/derivations.md#embedding)."""
from __future__ import annotations

from typing import Any, Optional

import numpy as np

from .. import backend
from ..autograd import Function, keep_versions
from ..tensor import Tensor
from ..precision import DtypeError

__all__ = ["embedding", "check_index_range", "normalize_padding_idx",
           "check_embedding_options", "embedding_renorm_"]


# the error torch raises for an index out of range, by op (IndexError otherwise)
_RANGE_ERRORS = {"gather": RuntimeError, "one_hot": RuntimeError}


def check_index_range(ids, size: int, op: str, what: str) -> None:
    """Raise a clear error when an integer array holds a value outside [0, size): the
    exception type torch raises for that op (IndexError: embedding, cross_entropy, ...)."""
    if ids.size == 0:
        return
    xp = backend.get_array_module(ids)
    low, high = backend.to_host(xp.stack([ids.min(), ids.max()])).tolist()  # one transfer
    if low < 0 or high >= size:
        bad = low if low < 0 else high
        valid = f"valid values are 0 to {size - 1}" if size > 0 else "there are none (size 0)"
        error = _RANGE_ERRORS.get(op, IndexError)
        raise error(f"{op}: {what} {bad} is out of range; {valid} (index {bad} is out of "
                    f"bounds)")


class Embedding(Function):
    """out[...] = weight[ids[...]]: row lookup, (V, D) indexed by ids (...) -> (..., D).

    dweight[v] = sum of g[...] over every position whose id is v. Ids repeat (a token appears
    many times), so the rows are scatter-ADDED: assigning would keep only one of them (and
    NumPy does not promise which).
    With ``padding_idx`` p, row p gets no gradient at all (PyTorch's rule: the padding row
    stays as it is, zeros from initialisation, however often padding appears).
    With ``scale_grad_by_freq``, row v's gradient is divided by the number of times v occurs
    in ids (torch's rule: frequent words do not dominate the update).
    """

    def forward(self, weight, ids, padding_idx: Optional[int] = None,
                scale_grad_by_freq: bool = False):
        self.save_for_backward(ids, weight.shape, padding_idx, scale_grad_by_freq)
        return weight[ids]                      # (V, D)[ids] -> (..., D)

    def backward(self, grad):
        ids, (vocab, dim), padding_idx, by_freq = self.saved
        xp = backend.get_array_module(grad)
        dweight = xp.zeros((vocab, dim), dtype=grad.dtype)
        backend.scatter_add(dweight, ids.reshape(-1), grad.reshape(-1, dim))  # (N, D) -> rows
        if by_freq:
            counts = xp.bincount(ids.reshape(-1), minlength=vocab)   # (V,) occurrences
            dweight /= xp.maximum(counts, 1)[:, None].astype(grad.dtype)
        if padding_idx is not None:
            dweight[padding_idx] = 0            # the padding row is never trained
        return dweight


def embedding_renorm_(weight: Tensor, ids: Any, max_norm: float, norm_type: float) -> None:
    """torch's ``embedding_renorm_``: each row of ``weight`` that ``ids`` looks up and whose
    ``norm_type``-norm exceeds ``max_norm`` is scaled in place, without a gradient, by
    max_norm / (norm + 1e-7). The write bumps weight's version, as torch's does."""
    xp = backend.get_array_module(weight._data)
    rows = xp.unique(ids.reshape(-1))
    if rows.size == 0:
        return
    picked = weight._data[rows].astype(np.float64)
    p = float(norm_type)
    if p == np.inf:
        norms = np.abs(picked).max(axis=1)
    elif p == 0:
        norms = (picked != 0).sum(axis=1).astype(np.float64)
    else:
        norms = (np.abs(picked) ** p).sum(axis=1) ** (1.0 / p)
    # torch's norm is a reduction in the weight's dtype (float32 accumulation for a half
    # dtype), rounded to it; the scale max_norm / (norm + 1e-7) is computed from that
    # rounded norm in double and rounded to the dtype once; the rows are multiplied by it
    norms = norms.astype(weight._data.dtype).astype(np.float64)
    over = norms > max_norm
    if not over.any():
        return
    scale = (max_norm / (norms[over] + 1e-7)).astype(weight._data.dtype)
    weight._data[rows[over]] = weight._data[rows[over]] * scale[:, None]
    weight._bump_version()


def embedding(ids: Tensor, weight: Tensor, padding_idx: Optional[int] = None,
              max_norm: Optional[float] = None, norm_type: float = 2.0,
              scale_grad_by_freq: bool = False, sparse: bool = False) -> Tensor:
    """PyTorch's ``F.embedding(input, weight, padding_idx=None, max_norm=None, norm_type=2.0,
    scale_grad_by_freq=False)``: rows of ``weight`` picked by integer ids; row
    ``padding_idx`` (negative counts from the end) gets no gradient. With ``max_norm`` the
    looked-up rows whose norm exceeds it are first renormalised IN PLACE in weight (torch's
    ``embedding_renorm_``); ``scale_grad_by_freq`` divides each row's gradient by its count
    in ids. ``sparse=True`` (a sparse gradient) is not supported and says so."""
    check_embedding_options(max_norm, scale_grad_by_freq, sparse)
    ids_data = ids._data if isinstance(ids, Tensor) else np.asarray(ids)
    if not np.issubdtype(ids_data.dtype, np.integer):
        raise DtypeError(f"embedding: ids must be integers, got dtype {ids_data.dtype}; "
                        f"convert with .long()")
    if weight.ndim != 2:
        raise RuntimeError(f"embedding: weight must be (num_embeddings, dim), got {weight.shape}")
    if backend.device_of(ids_data) != weight.device:
        raise RuntimeError(f"embedding: ids are on {backend.device_of(ids_data)} but weight is "
                           f"on {weight.device}; move them to one device")
    check_index_range(ids_data, weight.shape[0], "embedding", "token id")
    if max_norm is not None:
        embedding_renorm_(weight, ids_data, float(max_norm), norm_type)
    # The op keeps the ids for its backward: its own copy (a few bytes per token), so a
    # caller who reuses the id buffer after the forward cannot change the gradient.
    padding_idx = normalize_padding_idx(padding_idx, weight.shape[0])
    out = Embedding.apply(weight, ids=ids_data.copy(), padding_idx=padding_idx,
                          scale_grad_by_freq=bool(scale_grad_by_freq))
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
    if max_norm is not None and not isinstance(max_norm, (int, float, np.number)):
        raise TypeError(f"embedding: max_norm must be a number or None, got {max_norm!r}")
    if sparse:
        raise NotImplementedError("embedding: sparse=True (a sparse COO gradient, for "
                                  "SparseAdam) is not implemented: tinyattn has no sparse "
                                  "tensors, and a dense gradient would differ silently "
                                  "(grad.is_sparse). Leave sparse=False and use Adam or SGD")
