"""Local (sliding-window, band) attention in O(S * W) (docs/long_sequences.md#local-attention).

Shapes: q, k (..., S, d_k), v (..., S, d_v), the leading dims (usually (B, h)) equal; W the
window. Query i attends keys j with |i - j| <= W (causal: i - W <= j <= i).

The S x S score matrix is never formed. The queries are cut into blocks of
L = max(min(W, S), 1) rows; block b (rows bL .. bL + L - 1) can only see keys
(b - 1)L .. (b + 2)L - 1, three key blocks (two when causal). With the keys padded by one
block on each side, the keys of every query block are three shifted views of the same
padded array, so the scores are (..., nb, L, 3L) = (..., S, 3W) numbers, not (..., S, S);
the backward recomputes them from the saved row log-sum-exp, a run of blocks at a time, so
nothing (S, 3W) is kept.
"""
from __future__ import annotations

from typing import Any, List, Optional, Tuple

import numpy as np

from .. import backend
from ..autograd import Function
from ..tensor import Tensor
from .attention import default_scale
from .softmax import safe_row_max

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


def _fold_into(target: Any, windows: Any, span: int, rows: int) -> None:
    """The adjoint of ``_windows``: add each window's share onto its padded block of
    ``target`` (..., run + span - 1, L, d), in place."""
    run = windows.shape[-3]
    for t in range(span):
        target[..., t: t + run, :, :] += windows[..., :, t * rows:(t + 1) * rows, :]


def band_keep(xp: Any, seq_len: int, window: int, rows: int, num_blocks: int,
              causal: bool) -> Any:
    """(nb, L, span * L) bool: may query i = bL + r attend the c-th key of its window,
    j = (b - 1)L + c? True when the key exists (0 <= j < S) and |i - j| <= W (causal:
    0 <= i - j <= W). i - j = L + r - c is the same for every block, so the band is one
    (L, span L) pattern, and only the first and last blocks lose keys off the ends."""
    span = 2 if causal else 3
    distance = rows + xp.arange(rows)[:, None] - xp.arange(span * rows)[None, :]  # (L, sL)
    band = (distance <= window) & (distance >= (0 if causal else -window))
    j = (xp.arange(num_blocks)[:, None] - 1) * rows + xp.arange(span * rows)[None, :]
    exists = (j >= 0) & (j < seq_len)                                    # (nb, span L)
    return band[None, :, :] & exists[:, None, :]        # (1, L, sL) & (nb, 1, sL)


CHUNK_ROWS = 2048       # query rows per run of blocks (a module setting; the tests lower it)


def _block_chunks(num_blocks: int, rows: int) -> List[Tuple[int, int]]:
    """Query blocks in runs of about ``CHUNK_ROWS`` rows, so that one run's scores
    (..., run, L, span L) stay small whatever S is."""
    per = max(1, CHUNK_ROWS // rows)
    return [(b0, min(b0 + per, num_blocks)) for b0 in range(0, num_blocks, per)]


class LocalAttention(Function):
    """out_i = sum_{j in band(i)} softmax_j(q_i . k_j * scale) v_j, block by block.

    Forward per query block b (L rows), with K_b, V_b its (span L) window of keys/values:
        s = (q_b * scale) @ K_b^T   (.., L, d_k) @ (.., d_k, span L);  s = -inf off the band
        P = softmax(s) per row;  out_b = P @ V_b;  kept: out and lse = log sum_j exp(s_j)
    Backward: P recomputed as exp(s - lse) (nothing (S, span L) is stored), then the
    attention rule on each block (docs/derivations.md#attention):
        dV_b = P^T g_b,  dS = P * (g_b V_b^T - rowsum(g_b * out_b)),
        dq_b = dS K_b * scale,  dK_b = dS^T (q_b * scale);
    a key lies in up to three windows, so dk, dv add the three shares (``_fold``).
    Blocks are processed a few at a time (``_block_chunks``) to bound the temporaries.
    """

    promotes_inputs = False    # mixed floating dtypes: refused, as torch refuses

    def forward(self, q, k, v, window: int, causal: bool, scale: float):
        xp = backend.get_array_module(q)
        s = q.shape[-2]
        rows = max(min(window, s), 1)                   # L: one block spans the window
        nb = -(-s // rows)                              # ceil(S / L) query blocks
        span = 2 if causal else 3
        after = span - 2                                # causal windows need no block after
        q_blocks = _blocks(q * scale, rows, nb, 0, 0)   # (..., nb, L, d_k)
        k_blocks = _blocks(k, rows, nb, 1, after)       # (..., 1 + nb + after, L, d_k)
        v_blocks = _blocks(v, rows, nb, 1, after)       # (..., 1 + nb + after, L, d_v)
        keep = band_keep(xp, s, min(window, s), rows, nb, causal)    # (nb, L, span L)
        out_blocks = xp.empty(q_blocks.shape[:-1] + (v.shape[-1],), dtype=q.dtype)
        lse = xp.empty(q_blocks.shape[:-1], dtype=q.dtype)          # (..., nb, L)
        for b0, b1 in _block_chunks(nb, rows):
            scores = self._scores(q_blocks, k_blocks, keep, b0, b1, span)
            top = safe_row_max(scores, -1)              # (..., run, L, 1)
            scores -= top
            xp.exp(scores, out=scores)
            total = scores.sum(axis=-1, keepdims=True)
            total = xp.where(total == 0, 1, total)      # a row with no key: 0, not 0 / 0
            v_win = _windows(v_blocks[..., b0: b1 + span - 1, :, :], b1 - b0, span)
            out_blocks[..., b0:b1, :, :] = (scores @ v_win) / total   # (.., L, sL) @ (.., sL, d_v)
            lse[..., b0:b1, :] = (top + xp.log(total))[..., 0]
        out = out_blocks.reshape(q.shape[:-2] + (nb * rows, v.shape[-1]))[..., :s, :]
        self.save_for_backward(q_blocks, k_blocks, v_blocks, keep, out_blocks, lse, scale,
                               rows, nb, span, s)
        return out

    @staticmethod
    def _scores(q_blocks: Any, k_blocks: Any, keep: Any, b0: int, b1: int, span: int) -> Any:
        """Masked scores of query blocks b0..b1-1: (..., b1 - b0, L, span L)."""
        xp = backend.get_array_module(q_blocks)
        k_win = _windows(k_blocks[..., b0: b1 + span - 1, :, :], b1 - b0, span)
        scores = q_blocks[..., b0:b1, :, :] @ xp.swapaxes(k_win, -1, -2)  # (.., L, sL)
        xp.copyto(scores, -xp.inf, where=xp.logical_not(keep[b0:b1]))
        return scores

    def backward(self, grad):
        q_blocks, k_blocks, v_blocks, keep, out_blocks, lse, scale, rows, nb, span, s = \
            self.saved
        xp = backend.get_array_module(grad)
        g = _blocks(grad, rows, nb, 0, 0)               # (..., S, d_v) -> (..., nb, L, d_v)
        row_dots = (g * out_blocks).sum(axis=-1, keepdims=True)      # rowsum(g * out)
        dq = xp.empty_like(q_blocks)
        dk, dv = xp.zeros_like(k_blocks), xp.zeros_like(v_blocks)
        for b0, b1 in _block_chunks(nb, rows):
            probs = self._scores(q_blocks, k_blocks, keep, b0, b1, span)
            probs -= lse[..., b0:b1, :, None]
            xp.exp(probs, out=probs)                    # P, 0 off the band (exp(-inf))
            g_run = g[..., b0:b1, :, :]
            k_win = _windows(k_blocks[..., b0: b1 + span - 1, :, :], b1 - b0, span)
            v_win = _windows(v_blocks[..., b0: b1 + span - 1, :, :], b1 - b0, span)
            d_v_win = xp.swapaxes(probs, -1, -2) @ g_run             # (.., sL, L) @ (.., d_v)
            d_scores = g_run @ xp.swapaxes(v_win, -1, -2)            # (.., L, d_v) @ (.., sL)
            d_scores -= row_dots[..., b0:b1, :, :]
            d_scores *= probs                           # dS
            dq[..., b0:b1, :, :] = (d_scores @ k_win) * scale        # (.., L, sL) @ (.., d_k)
            d_k_win = xp.swapaxes(d_scores, -1, -2) @ q_blocks[..., b0:b1, :, :]
            _fold_into(dk[..., b0: b1 + span - 1, :, :], d_k_win, span, rows)
            _fold_into(dv[..., b0: b1 + span - 1, :, :], d_v_win, span, rows)
        lead = grad.shape[:-2]
        dq = dq.reshape(lead + (nb * rows, q_blocks.shape[-1]))[..., :s, :]
        return dq, _unpad(dk, lead, rows, s), _unpad(dv, lead, rows, s)


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
