"""Exercise 10, embedding lookup: reference solution for embedding_backward.

Derivation (docs/derivations.md#embedding)
    out[p] = weight[ids[p]] for each position p: a copy of one row. So d out[p] / d weight[v]
    is the identity when ids[p] == v and 0 otherwise, and
        dweight[v] = sum over the positions p with ids[p] == v of grad[p].
    Rows never looked up get 0. A repeated id must ACCUMULATE: dweight[ids] = grad (or +=)
    writes each row once, keeping only one occurrence, because NumPy's fancy-index
    assignment does not add up duplicates. np.add.at does (unbuffered scatter-add).
"""
import numpy as np


def embedding_forward(weight, ids):
    """out = weight[ids]: weight (V, D), integer ids of any shape (...) -> (..., D).
    Given; do not change."""
    return weight[ids], (ids, weight.shape)


def embedding_backward(grad, cache):
    """Return dweight, of weight's shape (V, D)."""
    ids, (vocab, dim) = cache
    dweight = np.zeros((vocab, dim))
    np.add.at(dweight, ids.reshape(-1), grad.reshape(-1, dim))  # (N,) ids, (N, D) rows
    return dweight
