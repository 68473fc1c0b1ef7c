"""Exercise 21, online softmax: tiled attention's forward, block by block: reference solution.

Derivation (docs/attention_systems.md#online-softmax)
    For one query row and a block of keys, keep three numbers per row instead of a row of
    probabilities: m = the largest score seen, l = sum_j exp(s_j - m), o = sum_j exp(s_j - m)
    v_j (not yet divided by l). Two blocks (m1, l1, o1), (m2, l2, o2) merge exactly:
        m = max(m1, m2),  a1 = exp(m1 - m),  a2 = exp(m2 - m)
        l = a1 l1 + a2 l2,  o = a1 o1 + a2 o2
    (each block's sums were taken relative to its own max; a_i moves them to the common
    one, and never overflows: m >= m_i). After the last block: out = o / l and the
    log-sum-exp L = m + log l, which the backward (exercise 22) uses to recompute p.
    A block whose scores are all -inf (masked) has m = -inf, l = 0, o = 0: it must not
    produce NaN (exp(-inf - -inf)); treat its weight as 0.
"""
import math

import numpy as np


def block_state(q, k_block, v_block, scale):
    """(m, l, o) of one block of keys: q (S_q, d_k), k_block (T, d_k), v_block (T, d_v) ->
    m (S_q,), l (S_q,), o (S_q, d_v). Given; do not change."""
    s = q @ k_block.T * scale                   # (S_q, d_k) @ (d_k, T) -> (S_q, T)
    m = s.max(axis=-1)
    e = np.exp(s - m[:, None])
    return m, e.sum(axis=-1), e @ v_block       # (S_q, T) @ (T, d_v) -> (S_q, d_v)


def _weight(m_i, m):
    """exp(m_i - m), 0 for an empty (all -inf) block."""
    empty = np.isneginf(m_i)
    return np.where(empty, 0.0, np.exp(m_i - np.where(empty, 0.0, m)))


def merge_blocks(m1, l1, o1, m2, l2, o2):
    """The state of two blocks of keys together, from each one's (m, l, o)."""
    m = np.maximum(m1, m2)
    a1, a2 = _weight(m1, m), _weight(m2, m)
    return m, a1 * l1 + a2 * l2, a1[:, None] * o1 + a2[:, None] * o2


def tiled_attention(q, k, v, block):
    """softmax(q k^T / sqrt(d_k)) v computed ``block`` keys at a time, merging the states.
    Returns (out (S_q, d_v), lse (S_q,)): the output and each row's log-sum-exp."""
    scale = 1.0 / math.sqrt(q.shape[-1])
    state = None
    for start in range(0, k.shape[0], block):
        part = block_state(q, k[start:start + block], v[start:start + block], scale)
        state = part if state is None else merge_blocks(*state, *part)
    m, l, o = state
    return o / l[:, None], m + np.log(l)
