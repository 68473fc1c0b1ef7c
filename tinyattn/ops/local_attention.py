"""Local (sliding-window, band) attention in O(S * W) (docs/long_sequences.md#local-attention).

Shapes: q, k (..., S, d_k), v (..., S, d_v), the leading dims (usually (B, h)) equal; W the
window. Query i attends keys j with |i - j| <= W (causal: i - W <= j <= i).

The S x S score matrix is never formed. The queries are cut into blocks of L = max(W, 1)
rows; block b (rows bL .. bL + L - 1) can only see keys (b - 1)L .. (b + 2)L - 1, three key
blocks (two when causal). With the keys padded by one block on each side, the keys of every
query block are three shifted views of the same padded array, so the scores are
(..., nb, L, 3L) = (..., S, 3W) numbers, not (..., S, S).
"""
from __future__ import annotations

from typing import Any, Optional, Tuple

import numpy as np

from .. import backend
from ..autograd import Function
from ..tensor import Tensor
from .attention import default_scale
from .softmax import stable_softmax

__all__ = ["local_attention", "LocalAttention", "band_keep"]


def _blocks(x: Any, rows: int, num_blocks: int, before: int, after: int) -> Any:
    """x (..., S, d) zero-padded to ``before + num_blocks + after`` blocks of ``rows`` rows:
    (..., before + nb + after, L, d)."""
    xp = backend.get_array_module(x)
    s, d = x.shape[-2], x.shape[-1]
    total = (before + num_blocks + after) * rows
    padded = xp.zeros(x.shape[:-2] + (total, d), dtype=x.dtype)
    padded[..., before * rows: before * rows + s, :] = x
    return padded.reshape(x.shape[:-2] + (before + num_blocks + after, rows, d))


def _windows(blocks: Any, num_blocks: int, span: int) -> Any:
    """Padded key blocks (..., nb + span - 1, L, d) -> the keys of each query block
    (..., nb, span * L, d): block b sees padded blocks b .. b + span - 1."""
    xp = backend.get_array_module(blocks)
    shifted = [blocks[..., t: t + num_blocks, :, :] for t in range(span)]
    return xp.concatenate(shifted, axis=-2)         # span x (..., nb, L, d) -> (.., nb, span L, d)


def _fold(windows: Any, num_blocks: int, span: int, rows: int) -> Any:
    """The adjoint of ``_windows``: add each window's share back onto its padded block."""
    xp = backend.get_array_module(windows)
    lead, d = windows.shape[:-3], windows.shape[-1]
    out = xp.zeros(lead + (num_blocks + span - 1, rows, d), dtype=windows.dtype)
    for t in range(span):
        out[..., t: t + num_blocks, :, :] += windows[..., :, t * rows:(t + 1) * rows, :]
    return out


def band_keep(xp: Any, seq_len: int, window: int, rows: int, num_blocks: int,
              causal: bool) -> Any:
    """(nb, L, span * L) bool: may query bL + r attend the c-th key of its window, key
    (b - 1)L + c (non-causal) or (b - 1)L + c (causal, two blocks)? True when the key exists
    (0 <= j < S) and |i - j| <= W (causal: i - W <= j <= i)."""
    span = 2 if causal else 3
    i = xp.arange(num_blocks)[:, None, None] * rows + xp.arange(rows)[None, :, None]
    j = (xp.arange(num_blocks)[:, None, None] - 1) * rows + xp.arange(span * rows)[None, None]
    distance = i - j                                 # (nb, L, 1) - (nb, 1, span L)
    keep = (j >= 0) & (j < seq_len) & (distance <= window)
    keep &= distance >= 0 if causal else distance >= -window
    return keep


class LocalAttention(Function):
    """out_i = sum_{j in band(i)} softmax_j(q_i . k_j * scale) v_j, block by block.

    Forward per query block b (L rows), with K_b, V_b its (span L) window of keys/values:
        s = (q_b * scale) @ K_b^T   (.., L, d_k) @ (.., d_k, span L);  s = -inf off the band
        P = softmax(s) per row;  out_b = P @ V_b
    Backward: the attention rule on each block (docs/derivations.md#attention):
        dV_b = P^T g_b,  dS = P * (g_b V_b^T - rowsum(g_b * out_b)),
        dq_b = dS K_b * scale,  dK_b = dS^T (q_b * scale);
    a key lies in up to three windows, so dk, dv add the three shares (``_fold``).
    """

    def forward(self, q, k, v, window: int, causal: bool, scale: float):
        xp = backend.get_array_module(q)
        s = q.shape[-2]
        rows = max(min(window, s), 1)                   # L: one block spans the window
        nb = -(-s // rows)                              # ceil(S / L) query blocks
        span = 2 if causal else 3
        after = span - 2                                # causal windows need no block after
        q_blocks = _blocks(q * scale, rows, nb, 0, 0)   # (..., nb, L, d_k)
        k_win = _windows(_blocks(k, rows, nb, 1, after), nb, span)   # (.., nb, span L, d_k)
        v_win = _windows(_blocks(v, rows, nb, 1, after), nb, span)   # (.., nb, span L, d_v)
        scores = q_blocks @ xp.swapaxes(k_win, -1, -2)  # (.., nb, L, d_k) @ (.., d_k, span L)
        keep = band_keep(xp, s, min(window, s), rows, nb, causal)    # (nb, L, span L)
        xp.copyto(scores, -xp.inf, where=xp.logical_not(keep))
        probs = stable_softmax(scores, axis=-1, out=scores)         # (.., nb, L, span L)
        out_blocks = probs @ v_win                      # (.., nb, L, span L) @ (.., span L, d_v)
        out = out_blocks.reshape(q.shape[:-2] + (nb * rows, v.shape[-1]))[..., :s, :]
        self.save_for_backward(q_blocks, k_win, v_win, probs, out_blocks, scale, rows, nb,
                               span, s)
        return out

    def backward(self, grad):
        q_blocks, k_win, v_win, probs, out_blocks, scale, rows, nb, span, s = self.saved
        xp = backend.get_array_module(grad)
        g = _blocks(grad, rows, nb, 0, 0)               # (..., S, d_v) -> (..., nb, L, d_v)
        d_v_win = xp.swapaxes(probs, -1, -2) @ g        # (.., span L, L) @ (.., L, d_v)
        d_scores = g @ xp.swapaxes(v_win, -1, -2)       # (.., L, d_v) @ (.., d_v, span L)
        d_scores -= (g * out_blocks).sum(axis=-1, keepdims=True)    # rowsum(g * out)
        d_scores *= probs                               # dS, 0 off the band (P = 0 there)
        dq = (d_scores @ k_win) * scale                 # (.., L, span L) @ (.., span L, d_k)
        d_k_win = xp.swapaxes(d_scores, -1, -2) @ q_blocks          # (.., span L, d_k)
        lead = grad.shape[:-2]
        dq = dq.reshape(lead + (nb * rows, q_blocks.shape[-1]))[..., :s, :]
        dk = _unpad(_fold(d_k_win, nb, span, rows), lead, rows, s)
        dv = _unpad(_fold(d_v_win, nb, span, rows), lead, rows, s)
        return dq, dk, dv


def _unpad(blocks: Any, lead: Tuple[int, ...], rows: int, s: int) -> Any:
    """(..., 1 + nb + after, L, d) padded blocks -> (..., S, d) without the padding."""
    flat = blocks.reshape(lead + (blocks.shape[-3] * rows, blocks.shape[-1]))
    return flat[..., rows: rows + s, :]


def local_attention(query: Tensor, key: Tensor, value: Tensor, window: int,
                    causal: bool = False, scale: Optional[float] = None) -> Tensor:
    """Sliding-window attention: query i attends keys j with |i - j| <= ``window``
    (``causal``: i - window <= j <= i), in O(S * window) memory and time.

    query, key (..., S, d_k), value (..., S, d_v), same S and leading dims; ``scale``
    defaults to 1 / sqrt(d_k). Equal to ``scaled_dot_product_attention`` with
    ``attn_mask=sliding_window_mask(S, window + 1, causal)`` (that mask counts the query
    itself in its width: |i - j| < window + 1), without forming the S x S scores.
    """
    op = "local_attention"
    for name, t in (("query", query), ("key", key), ("value", value)):
        if not isinstance(t, Tensor):
            raise TypeError(f"{op}: {name} must be a Tensor, got {type(t).__name__}")
        if t.ndim < 2:
            raise ValueError(f"{op}: {name} must be (..., S, d), got shape {t.shape}")
    if isinstance(window, bool) or not isinstance(window, (int, np.integer)) or window < 0:
        raise ValueError(f"{op}: window must be an int >= 0 (keys within that distance of "
                         f"the query), got {window!r}")
    if query.shape[:-1] != key.shape[:-1] or key.shape[:-1] != value.shape[:-1]:
        raise ValueError(f"{op}: query {query.shape}, key {key.shape} and value {value.shape} "
                         f"must share every dim but the last ((..., S, d): self-attention "
                         f"over one sequence; broadcast the batch dims first)")
    if query.shape[-1] != key.shape[-1]:
        raise ValueError(f"{op}: query has d_k={query.shape[-1]} but key has "
                         f"d_k={key.shape[-1]}")
    if query.shape[-2] == 0:
        raise ValueError(f"{op}: the sequence is empty (shape {query.shape})")
    scale = default_scale(query.shape[-1]) if scale is None else float(scale)
    return LocalAttention.apply(query, key, value, window=int(window), causal=bool(causal),
                                scale=scale)
