"""Exercise 26, local (sliding-window) attention: write its backward.

Task
    Write local_attention_backward(grad, cache): (dq, dk, dv) of sliding-window attention,
    where query i attends keys i - window < j <= i.

Hints (read docs/attention_systems.md#local-attention)
    1. The cache holds p, which is 0 outside each query's window.
    2. It is attention's backward (exercise 12); check that nothing reaches a key outside
       every window of the queries that could see it.

Check
    python -m tinyattn.exercises check local_attention --path <your folder>
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
    raise NotImplementedError("local_attention_backward: write it")
