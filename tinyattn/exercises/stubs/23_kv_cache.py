"""Exercise 23, one decoding step with a key/value cache.

Task
    Write decode_step(cache_k, cache_v, length, q_new, k_new, v_new): store the new key
    and value at row ``length`` of the buffers (in place), attend q_new over rows
    0..length (the new token included), return (out, length + 1).

Hints (read docs/attention_systems.md#a-kv-cache-decoding-step)
    1. The buffers are longer than the sequence: rows past the length hold anything.
    2. The new token attends to itself: rows 0..length INCLUSIVE after the write.
    3. Scale the scores by 1 / sqrt(d_k) and subtract the max before exp.

Check
    python -m tinyattn.exercises check kv_cache --path <your folder>
"""
import math

import numpy as np


def decode_step(cache_k, cache_v, length, q_new, k_new, v_new):
    """cache_k (T_max, d_k), cache_v (T_max, d_v), rows 0..length-1 filled; q_new, k_new
    (d_k,), v_new (d_v,). Returns (out (d_v,), length + 1); writes the new row in place."""
    raise NotImplementedError("decode_step: write it")
