"""Exercise 22, tiled attention's backward: recompute p from the log-sum-exp: reference solution.

Derivation (docs/attention_systems.md#the-backward-with-recomputed-probabilities)
    The forward keeps only q, k, v, out and lse (the row log-sum-exp), never the (S_q, S_k)
    matrix p. The backward recomputes it, one block at a time if need be:
        p = exp(q k^T scale - lse[:, None])                   (exactly softmax's p)
    Then the attention backward (exercise 12), with one change: softmax's row term
    rowsum(dp * p) equals rowsum(dO * O), because dp = dO v^T and O = p v:
        D = rowsum(dO * O)        (S_q,): needs no p at all
        dv = p^T dO,  dp = dO v^T,  ds = p * (dp - D[:, None])
        dq = ds k scale,  dk = ds^T q scale
"""
import math

import numpy as np


def flash_attention_forward(q, k, v):
    """out = softmax(q k^T / sqrt(d_k)) v; q (S_q, d_k), k (S_k, d_k), v (S_k, d_v).
    The cache holds what tiled attention keeps: q, k, v, out and lse (S_q,), no p.
    Given; do not change."""
    scale = 1.0 / math.sqrt(q.shape[-1])
    s = q @ k.T * scale                         # (S_q, d_k) @ (d_k, S_k)
    m = s.max(axis=-1, keepdims=True)
    lse = (m + np.log(np.exp(s - m).sum(axis=-1, keepdims=True)))[:, 0]
    out = np.exp(s - lse[:, None]) @ v          # (S_q, S_k) @ (S_k, d_v)
    return out, (q, k, v, out, lse)


def flash_attention_backward(grad, cache):
    """Return (dq, dk, dv), recomputing p from lse and using D = rowsum(grad * out)."""
    q, k, v, out, lse = cache
    scale = 1.0 / math.sqrt(q.shape[-1])
    p = np.exp(q @ k.T * scale - lse[:, None])  # (S_q, S_k), recomputed
    d = (grad * out).sum(axis=-1)               # (S_q,)
    dv = p.T @ grad                             # (S_k, S_q) @ (S_q, d_v)
    ds = p * (grad @ v.T - d[:, None])          # (S_q, S_k)
    return ds @ k * scale, ds.T @ q * scale, dv
