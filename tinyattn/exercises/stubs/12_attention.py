"""Exercise 12, scaled dot-product attention with a mask.

Task
    Fill in attention_backward: given grad (..., S_q, d_v) and the cache
    (q, k, v, p, scale), return (dq, dk, dv).

Shapes
    q (..., S_q, d_k), k (..., S_k, d_k), v (..., S_k, d_v) -> out (..., S_q, d_v).
    scores = q @ k^T * scale (..., S_q, S_k), scale = 1 / sqrt(d_k);
    p = softmax(scores masked with keep) per row; out = p @ v.
    The checker starts with S_q == S_k and no mask, then S_q != S_k, a causal mask, and a
    padding mask with a fully masked query row.

Hints (read docs/derivations.md#attention)
    1. Go back one step at a time, as three earlier exercises: out = p @ v (03), then
       p = softmax(scores) (06), then scores = q @ k^T * scale (03 again).
    2. Masked entries have p = 0: what does the softmax backward give them?
    3. Do not forget the scale on the way back to q and k. Check each shape as you go:
       dk is (..., S_k, d_k).

Check
    python -m tinyattn.exercises check attention --path <your folder>
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
    # Your code here (delete the raise).
    raise NotImplementedError("attention_backward")
