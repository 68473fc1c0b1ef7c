"""Exercise 23, one decoding step with a key/value cache: reference solution.

Derivation (docs/attention_systems.md#a-kv-cache-decoding-step)
    Generating token t needs attention of its query over the keys and values of tokens
    0..t. Those of 0..t-1 were computed at earlier steps: keep them in preallocated buffers
    cache_k, cache_v (T_max, d) and a length. One step:
        write k_new, v_new at row ``length`` (in place: the buffers are the cache),
        attend q_new over rows 0..length INCLUSIVE (the new token sees itself),
        return the output and length + 1.
    Rows past the length hold anything (old tokens, garbage): never read them. The result
    equals row t of full causal attention over the whole sequence, at O(t) cost per step.
"""
import math

import numpy as np


def decode_step(cache_k, cache_v, length, q_new, k_new, v_new):
    """cache_k (T_max, d_k), cache_v (T_max, d_v), rows 0..length-1 filled; q_new, k_new
    (d_k,), v_new (d_v,). Returns (out (d_v,), length + 1); writes the new row in place."""
    cache_k[length] = k_new
    cache_v[length] = v_new
    keys, values = cache_k[:length + 1], cache_v[:length + 1]   # (t + 1, d_k), (t + 1, d_v)
    s = keys @ q_new / math.sqrt(q_new.shape[-1])               # (t + 1,)
    p = np.exp(s - s.max())
    return p @ values / p.sum(), length + 1
