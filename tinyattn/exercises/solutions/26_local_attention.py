"""Exercise 26, local (sliding-window) attention: reference solution for its backward.

Derivation (docs/attention_systems.md#local-attention)
    Query i attends only keys j with i - window < j <= i (itself and the window - 1 before
    it): the scores outside the band are -inf, so p = 0 there. The backward is attention's
    (exercise 12) with that p: entries outside the band have p = 0, so ds = p * (dp - D) is
    0 there and nothing flows to keys outside a query's window:
        dv = p^T dO,  dp = dO v^T,  ds = p * (dp - rowsum(dp * p)),
        dq = ds k scale,  dk = ds^T q scale.
    A long sequence only ever needs the band: a blocked version touches S * window entries.
"""
import math

import numpy as np


def local_attention_forward(q, k, v, window):
    """out = softmax(q k^T / sqrt(d_k), keys j with i - window < j <= i) v; q, k (S, d_k),
    v (S, d_v). Given; do not change."""
    scale = 1.0 / math.sqrt(q.shape[-1])
    i, j = np.indices((q.shape[0], k.shape[0]))
    keep = (j <= i) & (j > i - window)          # (S, S): the band
    s = np.where(keep, q @ k.T * scale, -np.inf)
    e = np.exp(s - s.max(axis=-1, keepdims=True))
    p = e / e.sum(axis=-1, keepdims=True)       # (S, S), 0 outside the band
    return p @ v, (q, k, v, p, scale)


def local_attention_backward(grad, cache):
    """Return (dq, dk, dv)."""
    q, k, v, p, scale = cache
    dv = p.T @ grad                             # (S, S) @ (S, d_v)
    dp = grad @ v.T                             # (S, d_v) @ (d_v, S)
    ds = p * (dp - (dp * p).sum(axis=-1, keepdims=True))
    return ds @ k * scale, ds.T @ q * scale, dv
