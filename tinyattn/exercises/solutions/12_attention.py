"""Exercise 12, scaled dot-product attention: reference solution for attention_backward.

Derivation (docs/derivations.md#attention)
    Forward: scores = q k^T * scale (scale = 1 / sqrt(d_k)), masked entries set to -inf,
    p = softmax(scores) row by row (a fully masked row: p = 0), out = p v.
    Walk back one step at a time:
        out = p @ v:           dp = grad @ v^T,   dv = p^T @ grad          (exercise 03)
        p = softmax(scores):   dscores = p * (dp - rowsum(dp * p))       (exercise 06)
        masked entries have p = 0, so they get dscores = 0: nothing flows to them.
        scores = q k^T scale:  dq = dscores @ k * scale,  dk = dscores^T @ q * scale
    Keys index the columns of scores, hence the transpose in dk.
"""
import math

import numpy as np


def attention_forward(q, k, v, keep=None):
    """out = softmax(q @ k^T / sqrt(d_k), masked) @ v.
    q (..., S_q, d_k), k (..., S_k, d_k), v (..., S_k, d_v) -> (..., S_q, d_v); the batch
    dims (...) are equal. keep: None or bool (..., S_q, S_k), True = may attend; a query row
    that may attend to nothing gets 0. Given; do not change."""
    scale = 1.0 / math.sqrt(q.shape[-1])
    scores = q @ np.swapaxes(k, -1, -2) * scale  # (..., S_q, d_k) @ (..., d_k, S_k)
    if keep is not None:
        scores = np.where(keep, scores, -np.inf)
    row_max = scores.max(axis=-1, keepdims=True)
    row_max = np.where(np.isfinite(row_max), row_max, 0.0)
    e = np.exp(scores - row_max)
    total = e.sum(axis=-1, keepdims=True)
    p = e / np.where(total == 0.0, 1.0, total)  # (..., S_q, S_k)
    out = p @ v                                 # (..., S_q, S_k) @ (..., S_k, d_v)
    return out, (q, k, v, p, scale)


def attention_backward(grad, cache):
    """Return (dq, dk, dv), of the shapes of q, k and v."""
    q, k, v, p, scale = cache
    dv = np.swapaxes(p, -1, -2) @ grad          # (..., S_k, S_q) @ (..., S_q, d_v)
    dp = grad @ np.swapaxes(v, -1, -2)          # (..., S_q, d_v) @ (..., d_v, S_k)
    dscores = p * (dp - (dp * p).sum(axis=-1, keepdims=True))
    dq = dscores @ k * scale                    # (..., S_q, S_k) @ (..., S_k, d_k)
    dk = np.swapaxes(dscores, -1, -2) @ q * scale   # (..., S_k, S_q) @ (..., S_q, d_k)
    return dq, dk, dv
