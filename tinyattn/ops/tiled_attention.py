"""Memory-efficient attention: tiled forward with an online softmax, recomputing backward
(docs/tiled_attention.md).

Same maths and conventions as ``ScaledDotProductAttention`` in ``attention.py`` (reach it
through ``scaled_dot_product_attention(..., impl="tiled", block_size=...)``), but the
(S_q, S_k) score and probability matrices are never stored. Queries are taken
``block_size`` rows at a time and keys ``block_size`` columns at a time; only one
(..., B_q, B_k) tile of scores exists at once, so memory grows linearly with the sequence
length. Python loops run over the tiles; every tile is vectorised over the leading (B, h) dims.

Shapes: q (..., S_q, d_k), k (..., S_k, d_k), v (..., S_k, d_v); the mask (bool, True = may
attend) broadcasts to (..., S_q, S_k) and is sliced one tile at a time. With ``is_causal``
each tile's mask is built from indices, and tiles entirely above the diagonal are skipped.
B_q, B_k are the tile heights/widths (``block_size``, smaller for the last tile).
"""
from __future__ import annotations

from typing import Any, Iterator, Optional, Tuple

import numpy as np

from .. import backend
from ..autograd import Function, unbroadcast
from .matmul import _swap

__all__ = ["TiledAttention", "row_dot"]



def _blocks(n: int, size: int) -> Iterator[Tuple[int, int]]:
    """(start, stop) of consecutive blocks of ``size`` covering range(n)."""
    for start in range(0, n, size):
        yield start, min(start + size, n)


def _tile_mask(xp: Any, mask: Any, is_causal: bool, rows: Tuple[int, int],
               cols: Tuple[int, int]) -> Optional[Any]:
    """The boolean mask of one tile (queries rows[0]:rows[1], keys cols[0]:cols[1]), or None
    when every entry may attend. A user mask is sliced (an axis of size 1 broadcasts and is
    kept); the causal part is built from indices, so no (S_q, S_k) array is ever made."""
    (r0, r1), (c0, c1) = rows, cols
    tile = None
    if mask is not None:
        row_sl = slice(r0, r1) if mask.shape[-2] != 1 else slice(None)
        col_sl = slice(c0, c1) if mask.shape[-1] != 1 else slice(None)
        tile = mask[..., row_sl, col_sl]        # (..., B_q or 1, B_k or 1)
    if is_causal and c1 - 1 > r0:               # the tile crosses the diagonal
        causal = xp.arange(r0, r1)[:, None] >= xp.arange(c0, c1)[None, :]   # (B_q, B_k)
        tile = causal if tile is None else tile & causal
    return tile


def _fill_masked(scores: Any, tile_mask: Optional[Any]) -> None:
    """scores = where(tile_mask, scores, -inf), in place."""
    if tile_mask is not None:
        xp = backend.get_array_module(scores)
        xp.copyto(scores, scores.dtype.type(-np.inf), where=~tile_mask)


def row_dot(grad: Any, out: Any) -> Any:
    """D = rowsum(dO * O), shape (..., S_q, 1): equal to rowsum(P * dP) (see TiledAttention)."""
    return (grad * out).sum(axis=-1, keepdims=True)


class TiledAttention(Function):
    """out = softmax(mask(q k^T * scale)) v, computed tile by tile; saves only out and L.

    Forward, per query block, over key blocks j (online softmax; m row max, l row sum):
        S_j = (q * scale) k_j^T (masked -> -inf);  m' = max(m, rowmax S_j)
        P_j = exp(S_j - m');  a = exp(m - m');  l = a l + rowsum P_j;  acc = a acc + P_j v_j
        out = acc / l;  L = m + log l  (the row's logsumexp; -inf for a fully masked row)
    A row with no finite score yet has m' = -inf: it is shifted by 0 instead, so
    exp(-inf - (-inf)) = NaN never happens (P_j = 0, a = 0).
    Backward (P = exp(S - L) recomputed per tile; dP = g v^T; D = rowsum(g * out)):
        dS = P * (dP - D) is the softmax rule, since rowsum(P * dP) = rowsum(P (g v^T))
        = rowsum(g * (P v)) = rowsum(g * out) = D.
        dv_j += P^T g,  dq += dS k_j * scale,  dk_j += dS^T (q * scale).
    """

    promotes_inputs = False    # mixed floating dtypes: refused, as torch refuses

    def forward(self, q, k, v, mask: Optional[Any], scale: float, is_causal: bool,
                block_size: int):
        xp = backend.get_array_module(q)
        batch = np.broadcast_shapes(q.shape[:-2], k.shape[:-2], v.shape[:-2])
        s_q, s_k, d_v = q.shape[-2], k.shape[-2], v.shape[-1]
        dtype = q.dtype
        # Scale once here, not once per tile; broadcast q to the full batch so every score
        # tile has the batch of the output even when only v is batched wider.
        q_scaled = xp.broadcast_to(q * scale, batch + q.shape[-2:])  # (..., S_q, d_k)
        out = xp.empty(batch + (s_q, d_v), dtype=dtype)        # (..., S_q, d_v)
        lse = xp.empty(batch + (s_q, 1), dtype=dtype)          # (..., S_q, 1)
        for r0, r1 in _blocks(s_q, block_size):
            q_blk = q_scaled[..., r0:r1, :]                    # (..., B_q, d_k)
            m = xp.full(batch + (r1 - r0, 1), -np.inf, dtype=dtype)   # running row max
            l = xp.zeros(batch + (r1 - r0, 1), dtype=dtype)           # running row sum
            acc = xp.zeros(batch + (r1 - r0, d_v), dtype=dtype)       # unnormalised out
            for c0, c1 in _blocks(s_k, block_size):
                if is_causal and c0 > r1 - 1:                  # whole tile above diagonal
                    break
                scores = q_blk @ _swap(k[..., c0:c1, :])       # (..., B_q, d_k) @ (..., d_k, B_k)
                _fill_masked(scores, _tile_mask(xp, mask, is_causal, (r0, r1), (c0, c1)))
                m_new = xp.maximum(m, scores.max(axis=-1, keepdims=True))  # (..., B_q, 1)
                shift = xp.where(xp.isfinite(m_new), m_new, 0)  # guard: no -inf - (-inf)
                scores -= shift
                probs = xp.exp(scores, out=scores)             # (..., B_q, B_k), unnormalised
                rescale = xp.exp(m - shift)                    # 0 while the row was empty
                l *= rescale
                l += probs.sum(axis=-1, keepdims=True)
                acc *= rescale
                acc += probs @ v[..., c0:c1, :]                # (..., B_q, B_k) @ (..., B_k, d_v)
                m = m_new
            has_keys = l > 0                                   # False: a fully masked row
            out[..., r0:r1, :] = acc / xp.where(has_keys, l, 1)   # fully masked -> 0
            lse[..., r0:r1, :] = xp.where(has_keys, m + xp.log(xp.where(has_keys, l, 1)),
                                          -np.inf)
        self.save_for_backward(q, k, v, mask, out, lse, scale, is_causal, block_size)
        return out

    def backward(self, grad):
        q, k, v, mask, out, lse, scale, is_causal, block_size = self.saved
        xp = backend.get_array_module(q)
        batch = out.shape[:-2]
        s_q, s_k = q.shape[-2], k.shape[-2]
        d_rows = row_dot(grad, out)                            # D: (..., S_q, 1)
        lse = xp.where(xp.isfinite(lse), lse, 0)  # guard: fully masked rows have S = -inf
        # S = q_scaled k^T, dk = dS^T q_scaled, dq = dS k * scale (q broadcast as in forward)
        q_scaled = xp.broadcast_to(q * scale, batch + q.shape[-2:])
        dq = xp.zeros(batch + q.shape[-2:], dtype=q.dtype)     # (..., S_q, d_k)
        dk = xp.zeros(batch + k.shape[-2:], dtype=k.dtype)     # (..., S_k, d_k)
        dv = xp.zeros(batch + v.shape[-2:], dtype=v.dtype)     # (..., S_k, d_v)
        for c0, c1 in _blocks(s_k, block_size):
            k_blk, v_blk = k[..., c0:c1, :], v[..., c0:c1, :]  # (..., B_k, d_k), (..., B_k, d_v)
            for r0, r1 in _blocks(s_q, block_size):
                if is_causal and c0 > r1 - 1:                  # whole tile above diagonal
                    continue
                q_blk, g_blk = q_scaled[..., r0:r1, :], grad[..., r0:r1, :]
                scores = q_blk @ _swap(k_blk)                  # (..., B_q, d_k) @ (..., d_k, B_k)
                _fill_masked(scores, _tile_mask(xp, mask, is_causal, (r0, r1), (c0, c1)))
                scores -= lse[..., r0:r1, :]
                probs = xp.exp(scores, out=scores)             # P tile, masked entries 0
                dv[..., c0:c1, :] += _swap(probs) @ g_blk      # (..., B_k, B_q) @ (..., B_q, d_v)
                d_scores = g_blk @ _swap(v_blk)                # (..., B_q, d_v) @ (..., d_v, B_k)
                d_scores -= d_rows[..., r0:r1, :]              # dP - D
                d_scores *= probs                              # dS = P * (dP - D)
                dq[..., r0:r1, :] += d_scores @ k_blk          # (..., B_q, B_k) @ (..., B_k, d_k)
                dk[..., c0:c1, :] += _swap(d_scores) @ q_blk   # (..., B_k, B_q) @ (..., B_q, d_k)
        dq *= scale
        return (unbroadcast(dq, q.shape) if self.needs_input_grad[0] else None,
                unbroadcast(dk, k.shape) if self.needs_input_grad[1] else None,
                unbroadcast(dv, v.shape) if self.needs_input_grad[2] else None)
