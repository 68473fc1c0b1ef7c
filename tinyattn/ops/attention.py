"""Scaled dot-product attention as one fused op (docs/derivations.md#attention).

Shapes (letters fixed across tinyattn): B batch, h heads, S_q query length, S_k key length,
d_k query/key width, d_v value width. q (..., S_q, d_k), k (..., S_k, d_k), v (..., S_k, d_v);
the leading dims (usually (B, h)) must match or broadcast.

Masks follow PyTorch's ``F.scaled_dot_product_attention``: boolean with True = "may attend", or
float and added to the scores, broadcastable to (..., S_q, S_k). A query row whose
keys are all masked gets an output of zeros and zero gradients (torch.nn.MultiheadAttention
gives NaN there with need_weights=True or on its inference fast path: docs/nn.md#masks).
"""
from __future__ import annotations

import functools
import math
from typing import Any, List, Optional, Sequence, Tuple

import numpy as np

from .. import backend, kernels
from ..broadcast_error import broadcast_error
from ..autograd import Function, name_node, unbroadcast
from ..tensor import Tensor
from .masking import mask_array
from .shape import cat
from .matmul import _swap
from .softmax import safe_row_max
from .row_blocks import BLAS_ROW_SUM
from .tiled_attention import TiledAttention
from ..precision import is_floating, is_low_precision

__all__ = ["scaled_dot_product_attention", "packed_self_attention", "causal_mask_array",
           "attention_mask_array", "attention_gradients", "default_scale", "row_sums",
           "causal_query_blocks", "attention_blocks", "packed_rows", "rows_of_one_array"]



class ScaledDotProductAttention(Function):
    """out = dropout(softmax(mask(q k^T * scale + bias))) v.

    Forward, with P the attention probabilities and A = P after dropout:
        S = (q * scale) @ k^T + bias    (..., S_q, d_k) @ (..., d_k, S_k) -> (..., S_q, S_k)
        S = where(mask, S, -inf);  P = softmax(S) per row (an all-masked row -> 0)
        A = P * keep / (1 - p);  out = A @ v   (..., S_q, S_k) @ (..., S_k, d_v)
    Backward (softmax rule row by row; masked entries have P = 0, so they get dS = 0):
        dv = A^T @ g,   dA = g @ v^T,   dP = dA * keep / (1 - p)
        dS = P * (dP - rowsum(dP * P)),  and rowsum(dP * P) = rowsum(g * out), since
             sum_j P_ij keep_ij / (1 - p) (g_i . v_j) = g_i . (A v)_i: an (S_q, d_v) product
             instead of an (S_q, S_k) one
        dq = dS @ k * scale,   dk = dS^T @ (q * scale)
    The scale multiplies q (and dq), never the (S_q, S_k) arrays: d_k is usually smaller.
    What it keeps of q, k, v and the output follows torch (``_kept_as_torch_keeps``).
    """

    promotes_inputs = False    # mixed floating dtypes: refused, as torch refuses

    def forward(self, q, k, v, mask, scale: float, dropout_p: float, generator: Any,
                weights_sink: Optional[List[Any]], bias: Any = None):
        xp = backend.get_array_module(q)
        if (not self.recording and xp is np and dropout_p == 0.0 and weights_sink is None
                and bias is None and q.ndim >= 3 and q.shape[:-2] == k.shape[:-2]
                and k.shape[:-2] == v.shape[:-2]):
            return _attention_without_graph(q, k, v, mask, scale)
        blocks = (attention_blocks(q, k, v, mask, bias)
                  if dropout_p == 0.0 and weights_sink is None else None)
        if blocks is not None:
            out, lse = _forward_by_blocks(q, k, v, scale, blocks)
            if self.recording:
                q_kept, k_kept, v_kept, out_kept = _kept_as_torch_keeps(q, k, v, out, 0.0)
                self.save_for_backward(q_kept, k_kept, v_kept, None, None, None, out_kept,
                                       scale, lse, mask, bias)
            return out
        scores = _scores(q, k, scale, mask, bias)           # (..., S_q, S_k)
        probs, lse = softmax_and_logsumexp(scores)          # P in scores' buffer
        if weights_sink is not None:
            weights_sink.append(probs)
        attn, keep = probs, None
        if dropout_p > 0.0:
            scale_keep = 0.0 if dropout_p >= 1.0 else 1.0 / (1.0 - dropout_p)
            keep = backend.uniform(probs.shape, backend.device_of(probs), probs.dtype,
                                   generator) >= dropout_p
            keep = keep * probs.dtype.type(scale_keep)
            attn = probs * keep
        out = attn @ v                          # (..., S_q, S_k) @ (..., S_k, d_v)
        if keep is None and weights_sink is None:
            probs = attn = None                 # recomputed from lse in the backward
        if self.recording:
            q_kept, k_kept, v_kept, out_kept = _kept_as_torch_keeps(q, k, v, out, dropout_p)
            self.save_for_backward(q_kept, k_kept, v_kept, probs, attn, keep, out_kept, scale,
                                   lse, mask, bias)
        return out

    def backward(self, grad):
        q, k, v = self.saved[:3]
        dq, dk, dv = attention_gradients(grad, self.saved, self.needs_input_grad)
        return (None if dq is None else unbroadcast(dq, q.shape),
                None if dk is None else unbroadcast(dk, k.shape),
                None if dv is None else unbroadcast(dv, v.shape))


def _kept_as_torch_keeps(q: Any, k: Any, v: Any, out: Any, dropout_p: float) -> Tuple[Any, ...]:
    """q, k, v and the output as the backward keeps them: the arrays themselves where torch's
    attention keeps them (an in-place write to one after the op makes backward raise), own
    copies where torch keeps something else (a write is allowed and the gradient stays that
    of the values the op saw). torch's CPU attention takes its fused kernel for 4-D q, k, v
    with the same batch dims and no dropout, which keeps all four; otherwise it is built of
    matmuls and a softmax: q and k are kept scaled (copies), the output is not kept, and v is
    kept unless it had to be broadcast (expanded and copied) to the other batch dims."""
    batch = np.broadcast_shapes(q.shape[:-2], k.shape[:-2], v.shape[:-2])
    empty = 0 in q.shape or 0 in k.shape or 0 in v.shape
    if q.ndim == k.ndim == v.ndim == 4 and dropout_p == 0.0 and not empty \
            and q.shape[:-2] == k.shape[:-2] == v.shape[:-2]:
        return q, k, v, out
    v_kept = v if v.shape[:-2] == batch and not empty else v.copy()
    return q.copy(), k.copy(), v_kept, out.copy()


def attention_gradients(grad: Any, saved: Tuple[Any, ...], needs: Sequence[bool],
                        out: Sequence[Any] = (None, None, None)) -> Tuple[Any, Any, Any]:
    """dq, dk, dv of ``ScaledDotProductAttention`` (its docstring derives them), before any
    unbroadcast; each is written into the matching ``out`` buffer when one is given."""
    q, k, v, probs, attn, keep, attn_out, scale, lse, mask, bias = saved
    xp = backend.get_array_module(grad)
    if probs is None:
        blocks = attention_blocks(q, k, v, mask, bias)
        if blocks is not None:
            return _gradients_by_blocks(grad, saved, needs, out, blocks)
    if probs is None:                           # P = exp(S - lse), S recomputed
        probs = attn = probabilities_from_logsumexp(q, k, scale, mask, bias, lse)
    dq = dk = dv = None
    if needs[2]:
        dv = xp.matmul(_swap(attn), grad, out=out[2])   # (..., S_k, S_q) @ (..., S_q, d_v)
    if needs[0] or needs[1]:
        d_scores = grad @ _swap(v)              # dA: (..., S_q, d_v) @ (..., d_v, S_k)
        if keep is not None:
            d_scores *= keep                    # dP = dA * keep / (1 - p)
        row_dots = row_sums(grad * attn_out)     # rowsum(g * out), (..., S_q, 1)
        d_scores -= row_dots
        d_scores *= probs                       # dS, in dP's buffer
        if needs[0]:
            dq = xp.matmul(d_scores, k, out=out[0])              # (..., S_q, S_k) @ (.., d_k)
            dq *= scale
        if needs[1]:
            dk = xp.matmul(_swap(d_scores), q, out=out[1])  # (.., S_k, S_q) @ (.., S_q, d_k)
            dk *= scale
    return dq, dk, dv


# Causal attention over S >= 2 * _CAUSAL_BLOCK positions runs by blocks of this many queries.
_CAUSAL_BLOCK = 64


def causal_query_blocks(q: Any, k: Any, v: Any, mask: Any, bias: Any) -> Optional[List[Any]]:
    """The (start, stop) query blocks of causal self-attention, or None where the plain
    path runs: a mask that is exactly the causal one (``causal_mask_array``, what
    ``is_causal=True`` makes), S_q = S_k >= 2 * _CAUSAL_BLOCK, NumPy arrays with one set of
    batch dims, no float mask. The queries of block [start, stop) see only the keys before
    ``stop``: every score to the right of that is masked, so it is neither computed nor
    multiplied (with 2 blocks 3/4 of the scores are computed, with 4 blocks 5/8)."""
    s = q.shape[-2]
    if (mask is None or bias is not None or s < 2 * _CAUSAL_BLOCK or k.shape[-2] != s
            or type(q) is not np.ndarray or q.shape[:-2] != k.shape[:-2]
            or k.shape[:-2] != v.shape[:-2] or mask is not causal_mask_array(np, s, s)):
        return None
    return [(start, min(start + _CAUSAL_BLOCK, s)) for start in range(0, s, _CAUSAL_BLOCK)]


# Scores computed unmasked and not causal run by blocks of the batch with about this many
# scores each (512 KiB of float32), so that the softmax's passes find them in the cache.
_BLOCK_SCORES = 1 << 17

# Without the row maximum subtracted, exp(S) stays a normal float (above 1e-38 in float32,
# below 3e38 once summed over up to 1e12 keys) while |S| <= this (exp(60) ~ 1.1e26).
_UNSHIFTED_LIMIT = 60.0


def attention_blocks(q: Any, k: Any, v: Any, mask: Any, bias: Any
                     ) -> Optional[List[Tuple[Any, Any, Any, bool]]]:
    """The blocks the recorded forward and the backward run on without keeping P, or None
    where the whole-matrix path runs. Each block is (rows, keys, mask, whole): ``q[rows]``
    attends to ``k[keys]`` under ``mask`` (None: no masking), and ``whole`` says that no
    other block's queries see those keys (so dk and dv are written, not added to).

    - causal self-attention (``causal_query_blocks``): blocks of queries over the keys
      they see;
    - no mask and no bias, NumPy float32/float64 arrays of at least 3 dims with one set of
      batch dims: blocks of the batch (the last batch dim in chunks) of about
      ``_BLOCK_SCORES`` scores each, all queries and keys."""
    causal = causal_query_blocks(q, k, v, mask, bias)
    if causal is not None:
        return [((Ellipsis, slice(start, stop), slice(None)),
                 (Ellipsis, slice(0, stop), slice(None)), mask[start:stop, :stop], False)
                for start, stop in causal]
    if (mask is not None or bias is not None or type(q) is not np.ndarray
            or type(k) is not np.ndarray or type(v) is not np.ndarray or q.ndim < 3
            or q.dtype not in (np.float32, np.float64) or k.dtype != q.dtype
            or v.dtype != q.dtype or q.shape[:-2] != k.shape[:-2]
            or k.shape[:-2] != v.shape[:-2] or 0 in q.shape or 0 in k.shape
            or 0 in v.shape):
        return None
    batch = q.shape[:-2]
    chunk = max(1, _BLOCK_SCORES // (q.shape[-2] * k.shape[-2]))
    everything = (slice(None), slice(None))
    return [(outer + (slice(start, start + chunk),) + everything,) * 2 + (None, True)
            for outer in np.ndindex(*batch[:-1])
            for start in range(0, batch[-1], chunk)]


def _exp_stays_in_range(q: Any, k: Any, scale: float) -> bool:
    """|S_ij| = |scale q_i . k_j| <= |scale| max_i |q_i| max_j |k_j| (Cauchy-Schwarz) is at
    most ``_UNSHIFTED_LIMIT``, so exp(S) needs no shift by the row maximum (False for a
    NaN or inf anywhere in q or k: the shifted softmax handles those)."""
    bound = abs(scale) * math.sqrt(_largest_squared_norm(q) * _largest_squared_norm(k))
    return bound <= _UNSHIFTED_LIMIT


def _largest_squared_norm(x: Any) -> float:
    """max_i |x_i|^2 over the rows of x (..., n), as a Python float (NaN if any is NaN)."""
    vecdot = getattr(np, "vecdot", None)        # NumPy >= 2.0; einsum before
    squares = vecdot(x, x) if vecdot is not None else np.einsum("...j,...j->...", x, x)
    return float(squares.max())


def _forward_by_blocks(q: Any, k: Any, v: Any, scale: float,
                       blocks: List[Tuple[Any, Any, Any, bool]]) -> Tuple[Any, Any]:
    """The forward's out = softmax(mask(q k^T * scale)) v and the row log-sum-exp, one block
    (``attention_blocks``) at a time: each row's softmax is its own, so a block needs
    nothing from the others, and its scores stay in the cache through the softmax. Where
    ``_exp_stays_in_range``, P v = (exp(S) v) / rowsum(exp(S)): no row maximum (NumPy's
    maximum along a short last axis costs as much as the product with v) and the division
    on the (S_q, d_v) output instead of the (S_q, S_k) scores; lse = log rowsum(exp(S)).
    Equal to the plain forward up to float round-off (tests/test_perf_paths.py)."""
    out = np.empty(q.shape[:-1] + (v.shape[-1],), dtype=q.dtype)       # (..., S, d_v)
    lse = np.empty(q.shape[:-1] + (1,), dtype=q.dtype)                 # (..., S, 1)
    unshifted = (q.dtype in (np.float32, np.float64)      # exp(60) overflows float16
                 and _exp_stays_in_range(q, k, scale))
    for rows, keys, mask, _ in blocks:
        scores = _scores(q[rows], k[keys], scale, mask, None)          # (..., b, s_k)
        if unshifted:
            np.exp(scores, out=scores)
            total = _blas_row_sums(scores)                             # (..., b, 1), > 0
            out_b = out[rows]
            np.matmul(scores, v[keys], out=out_b)                      # (..., b, d_v)
            out_b /= total
            np.log(total, out=lse[rows])
        else:
            probs, lse[rows] = softmax_and_logsumexp(scores)
            np.matmul(probs, v[keys], out=out[rows])                   # (..., b, d_v)
    return out, lse


def _blas_row_sums(x: Any) -> Any:
    """sum_j x[..., j] as (..., 1), one BLAS matrix-vector product with a vector of ones
    (rows up to ``row_blocks.BLAS_ROW_SUM`` long; longer ones by NumPy's sum)."""
    if x.shape[-1] > BLAS_ROW_SUM:
        return x.sum(axis=-1, keepdims=True)
    return np.matmul(x, np.ones(x.shape[-1], dtype=x.dtype))[..., None]


def _gradients_by_blocks(grad: Any, saved: Tuple[Any, ...], needs: Sequence[bool],
                         out: Sequence[Any], blocks: List[Tuple[Any, Any, Any, bool]]
                         ) -> Tuple[Any, Any, Any]:
    """``attention_gradients`` one block (``attention_blocks``) at a time: the same
    formulas on the block's rows and the keys they see, P recomputed from lse per block;
    dq is each block's own, dk and dv add up the blocks' parts where queries of several
    blocks see the same keys (causal) and are written directly where not."""
    q, k, v, _, _, _, attn_out, scale, lse, _, _ = saved
    added = not blocks[0][3]
    dq = dk = dv = None
    if needs[0]:
        dq = np.empty_like(q) if out[0] is None else out[0]
    if needs[1]:
        dk = np.empty_like(k) if out[1] is None else out[1]
        if added:
            dk[...] = 0
    if needs[2]:
        dv = np.empty_like(v) if out[2] is None else out[2]
        if added:
            dv[...] = 0
    for rows, keys, mask, _ in blocks:
        q_b, k_b, v_b, g_b = q[rows], k[keys], v[keys], grad[rows]
        probs = probabilities_from_logsumexp(q_b, k_b, scale, mask, None,
                                             lse[rows])                # (..., b, s_k)
        if needs[2]:
            if added:
                dv[keys] += _swap(probs) @ g_b         # (.., s_k, b) @ (.., b, d_v)
            else:
                np.matmul(_swap(probs), g_b, out=dv[keys])
        if needs[0] or needs[1]:
            d_scores = g_b @ _swap(v_b)               # dA: (.., b, d_v) @ (.., d_v, s_k)
            d_scores -= row_sums(g_b * attn_out[rows])
            d_scores *= probs                         # dS
            if needs[0]:
                np.matmul(d_scores, k_b, out=dq[rows])  # (.., b, s_k) @ (.., s_k, d_k)
            if needs[1]:
                if added:
                    dk[keys] += _swap(d_scores) @ q_b  # (.., s_k, b) @ (.., b, d_k)
                else:
                    np.matmul(_swap(d_scores), q_b, out=dk[keys])
    if needs[0]:
        dq *= scale
    if needs[1]:
        dk *= scale
    return dq, dk, dv


def _scores(q: Any, k: Any, scale: float, mask: Any, bias: Any) -> Any:
    """S = (q * scale) @ k^T + bias, masked entries -inf: a new (..., S_q, S_k) array. The
    scale multiplies q, never the (S_q, S_k) scores: d_k is usually smaller."""
    scores = (q * scale) @ _swap(k)         # (..., S_q, d_k) @ (..., d_k, S_k)
    if bias is not None:                    # a float mask: a constant added to the scores
        scores += bias                      # in place: scores is ours alone
    if mask is not None:
        backend.get_array_module(q).copyto(scores, -np.inf, where=~mask)   # ours alone
    return scores


def softmax_and_logsumexp(scores: Any) -> Tuple[Any, Any]:
    """P = softmax(S) per row, in S's own buffer, and lse = log sum_j exp(S_ij) (..., S_q, 1),
    from which the backward recomputes P = exp(S - lse) instead of keeping it (as torch's
    flash attention does): an (S_q, S_k) array per layer less alive until the backward. A
    fully masked row gets P = 0 and lse = +inf, so that exp(-inf - lse) is 0 again."""
    xp = backend.get_array_module(scores)
    shift = safe_row_max(scores, -1)        # (..., S_q, 1)
    scores -= shift
    xp.exp(scores, out=scores)
    total = row_sums(scores)                # (..., S_q, 1)
    empty = total == 0
    scores /= xp.where(empty, 1, total)
    with np.errstate(divide="ignore"):
        lse = xp.log(total)
    lse += shift
    lse[empty] = np.inf
    return scores, lse


# Rows up to this long are summed by BLAS (row_sums); longer ones by NumPy's reduction.
_SHORT_ROW = 128


def row_sums(x: Any) -> Any:
    """sum_j x[..., j], kept as (..., 1). NumPy's reduction over the last axis pays about
    0.1 us per row, which dominates when rows are short (the 32 keys of a small model's
    scores, the d_v = 16-64 entries of rowsum(g * out)); there the sum is one matrix-vector
    product with a vector of ones, 10-25x faster (docs/benchmarks.md). Both sum in the
    array's dtype (float32 terms pairwise in NumPy, in BLAS's blocked order): the results
    differ by float32 round-off. Other dtypes and arrays (float16, CuPy) use NumPy's sum."""
    n = x.shape[-1]
    if type(x) is not np.ndarray or n > _SHORT_ROW or n == 0 or x.ndim < 2 \
            or (x.dtype != np.float32 and x.dtype != np.float64):
        return x.sum(axis=-1, keepdims=True)
    return np.matmul(x, np.ones(n, dtype=x.dtype))[..., None]     # (..., S, n) @ (n,)


def probabilities_from_logsumexp(q: Any, k: Any, scale: float, mask: Any, bias: Any,
                                 lse: Any) -> Any:
    """P = exp(S - lse), the forward's probabilities (to float32 round-off)."""
    scores = _scores(q, k, scale, mask, bias)
    scores -= lse
    return backend.get_array_module(q).exp(scores, out=scores)


class PackedSelfAttention(ScaledDotProductAttention):
    """The same op for self-attention with q, k, v stacked in one tensor qkv (3, ..., S, d_k),
    as one packed projection makes them (``MultiHeadAttention`` does).

    Forward and gradients are the parent's; only where the gradients go differs. Three
    inputs sliced from one tensor would each get a gradient padded with zeros to qkv's shape,
    which the engine would then add up; here dq, dk, dv are written into the three slices of
    one buffer laid out like qkv (so the transpose back to the projection's layout is free).
    """

    def forward(self, qkv, **options):
        out = ScaledDotProductAttention.forward(self, qkv[0], qkv[1], qkv[2], **options)
        if self.recording:
            self.save_for_backward(*self.saved, qkv)    # qkv: the layout the gradient copies
        return out

    def backward(self, grad):
        *saved, qkv = self.saved
        dqkv = backend.get_array_module(grad).empty_like(qkv)   # (3, ..., S, d_k)
        attention_gradients(grad, tuple(saved), (True, True, True),
                            out=(dqkv[0], dqkv[1], dqkv[2]))
        return dqkv


def _attention_without_graph(q: Any, k: Any, v: Any, mask: Any, scale: float) -> Any:
    """The forward when no graph is recorded (NumPy, no dropout, no weights asked for): the
    same softmax(mask(q k^T * scale)) v, computed for one index of the first axis (usually
    one sequence: its heads) at a time, so its scores stay in the CPU cache, and
    - over the keys that some query of that sequence may see: a padded sequence drops its
      padding keys from both products, and a padding mask then needs no masking at all;
    - for the queries that see some key (a mask with a query axis can hide every key from a
      query; its output is 0, as on the recorded path, without computing it);
    - dividing by the row sums after the product with v, on (S_q, d_v) numbers instead of
      the (S_q, S_k) probabilities (softmax(s) v = (exp(s - m) v) / sum exp(s - m)).
    Equal to the recorded forward up to float32 round-off (tests/test_perf_paths.py), with
    one exception: a key that no query may see is left out, so a NaN or inf in v there does
    not reach the output (on the recorded path, as in PyTorch, 0 * NaN spreads it).
    """
    batch, s_q, s_k, d_v = q.shape[0], q.shape[-2], k.shape[-2], v.shape[-1]
    out = np.empty(q.shape[:-1] + (d_v,), q.dtype)                      # (..., S_q, d_v)
    if mask is not None:
        mask = mask.reshape((1,) * (q.ndim - mask.ndim) + mask.shape)  # one dim per q dim
        if mask.shape[-1] != s_k:                                       # a key axis of 1
            mask = np.broadcast_to(mask, mask.shape[:-1] + (s_k,))
    for b in range(batch):
        q_b, k_b, v_b = q[b], k[b], v[b]                               # (.., S_q or S_k, d)
        keep = None if mask is None else mask[b if mask.shape[0] > 1 else 0]
        asks = None                                     # the queries that see some key: all
        if keep is not None:
            seen = keep.reshape(-1, keep.shape[-1]).any(axis=0)       # (S_k,): keys in use
            if not seen.all():
                k_b, v_b, keep = k_b[..., seen, :], v_b[..., seen, :], keep[..., seen]
            if keep.shape[-2] == s_q:
                asks = keep.any(axis=-1).reshape(-1, s_q).any(axis=0)  # (S_q,)
                if asks.all():
                    asks = None
                else:
                    q_b, keep = q_b[..., asks, :], keep[..., asks, :]
            if keep.all():
                keep = None
        scores = (q_b * scale) @ _swap(k_b)     # (.., S_q', d_k) @ (.., d_k, S_k') -> S_k'
        if keep is not None:
            np.copyto(scores, -np.inf, where=np.logical_not(keep))
        scores -= safe_row_max(scores, -1)
        np.exp(scores, out=scores)
        total = scores.sum(axis=-1, keepdims=True)                     # (.., S_q', 1)
        total[total == 0] = 1                   # a row that sees no key: 0 / 1 = 0
        if asks is None:
            np.divide(scores @ v_b, total, out=out[b])                 # (.., S_q, d_v)
        else:
            out_b = out[b]                                             # a view: writes go to out
            out_b[..., ~asks, :] = 0
            out_b[..., asks, :] = (scores @ v_b) / total
    return out


@functools.lru_cache(maxsize=64)
def causal_mask_array(xp: Any, s_q: int, s_k: int) -> Any:
    """(S_q, S_k) bool, True on and below the diagonal: query i may see keys 0..i
    (top-left aligned, as PyTorch's ``is_causal``; ``nn.causal_mask`` and
    ``MultiHeadAttention(is_causal=True)`` align to the bottom right for KV caches, which is
    the same whenever S_q == S_k: docs/nn.md#multi-head-attention). Cached per device and
    size, since every causal layer of every step asks for the same one: shared, so never
    write into it."""
    return xp.tri(s_q, s_k, dtype=bool)


def attention_mask_array(q: Tensor, k: Tensor, mask: Any, is_causal: bool, op: str) -> Any:
    """Validate ``mask`` against (..., S_q, S_k), fold in the causal mask, return an array."""
    batch = tuple(np.broadcast_shapes(q.shape[:-2], k.shape[:-2]))
    return _mask_array(q._data, batch, q.shape[-2], k.shape[-2], mask, is_causal, op)


def _mask_array(like: Any, batch: Tuple[int, ...], s_q: int, s_k: int, mask: Any,
                is_causal: bool, op: str) -> Any:
    """The combined boolean mask for scores (*batch, S_q, S_k) on ``like``'s device."""
    combined = None
    if mask is not None:
        combined = mask_array(mask, op, batch + (s_q, s_k), backend.device_of(like),
                              what="attention mask (True = attend)")
    if is_causal:
        causal = causal_mask_array(backend.get_array_module(like), s_q, s_k)
        combined = causal if combined is None else combined & causal
    return combined


def default_scale(d_k: int) -> float:
    """1 / sqrt(d_k). With d_k = 0 every score is an empty dot product, 0 whatever the scale
    (PyTorch's 1/sqrt(0) = inf multiplies nothing either), so attention is uniform over the
    keys; 1.0 stands in for the infinite factor instead of dividing by zero."""
    return 1.0 / math.sqrt(d_k) if d_k > 0 else 1.0


def _check_qkv(q: Tensor, k: Tensor, v: Tensor, op: str, enable_gqa: bool = False) -> None:
    for name, t in (("query", q), ("key", k), ("value", v)):
        if not isinstance(t, Tensor):
            raise TypeError(f"{op}: {name} must be a Tensor, got {type(t).__name__}")
    if q.ndim < 2 or k.ndim < 2 or v.ndim < 2:
        raise ValueError(f"{op}: q, k, v need shape (..., S, d), got {q.shape}, {k.shape}, "
                         f"{v.shape}")
    if q.shape[-1] != k.shape[-1]:
        raise ValueError(f"{op}: q has d_k={q.shape[-1]} but k has d_k={k.shape[-1]}; the "
                         f"query and key widths must match (shapes {q.shape} and {k.shape})")
    if k.shape[-2] != v.shape[-2]:
        raise ValueError(f"{op}: k has S_k={k.shape[-2]} keys but v has {v.shape[-2]} values "
                         f"(shapes {k.shape} and {v.shape})")
    if enable_gqa:
        if q.ndim < 3 or k.ndim < 3 or v.ndim < 3 or k.shape[-3] != v.shape[-3]:
            raise ValueError(f"{op}: enable_gqa needs (..., heads, S, d) inputs with as many "
                             f"key as value heads, got {q.shape}, {k.shape}, {v.shape}")
        if q.shape[-3] % k.shape[-3] != 0:
            raise ValueError(f"{op}: enable_gqa: {q.shape[-3]} query heads cannot share "
                             f"{k.shape[-3]} key/value heads evenly; the query heads must be "
                             f"a multiple of the key/value heads")
        if q.shape[-3] != k.shape[-3]:
            return      # the batch dims are checked on the grouped shapes
    try:
        np.broadcast_shapes(q.shape[:-2], k.shape[:-2], v.shape[:-2])
    except ValueError:
        hint = (" (fewer key/value heads than query heads? pass enable_gqa=True)"
                if q.ndim >= 3 and k.ndim >= 3 and q.shape[-3] != k.shape[-3] else "")
        raise ValueError(f"{op}: batch dims of q {q.shape}, k {k.shape} and v {v.shape} do not "
                         f"broadcast{hint}") from None


def _check_impl(impl: Any, block_size: Any, dropout_p: float, need_weights: bool,
                op: str) -> None:
    if impl not in ("plain", "tiled", "composed"):
        raise ValueError(f"{op}: impl must be 'plain', 'tiled' or 'composed', got {impl!r}")
    if isinstance(block_size, bool) or not isinstance(block_size, (int, np.integer)):
        raise TypeError(f"{op}: block_size must be an int, got {type(block_size).__name__} "
                        f"{block_size!r}")
    if block_size < 1:
        raise ValueError(f"{op}: block_size must be a positive number of rows, got "
                         f"{block_size}; try 64 (tests) or 256-512 (long sequences)")
    if impl == "tiled" and dropout_p > 0.0:
        raise ValueError(
            f"{op}: impl='tiled' does not support dropout (got dropout_p={dropout_p}): its "
            f"backward recomputes each tile of probabilities instead of storing them, so it "
            f"would have to redraw the identical dropout mask per tile, which needs a "
            f"counter-based random generator tinyattn does not have. Use dropout_p=0.0 or "
            f"impl='plain'")
    if impl == "tiled" and need_weights:
        raise ValueError(
            f"{op}: impl='tiled' cannot return the attention weights (need_weights=True): "
            f"never building the (S_q, S_k) matrix is the point of the tiled path. Use "
            f"impl='plain' to inspect the weights")


def scaled_dot_product_attention(query: Tensor, key: Tensor, value: Tensor,
                                 attn_mask: Any = None, dropout_p: float = 0.0,
                                 is_causal: bool = False, scale: Optional[float] = None,
                                 enable_gqa: bool = False, *, need_weights: bool = False,
                                 generator: Any = None, impl: Optional[str] = None,
                                 block_size: int = 64):
    """softmax(q k^T * scale + mask) v, PyTorch's ``F.scaled_dot_product_attention``.

    query (..., h, S_q, d_k), key (..., h_kv, S_k, d_k), value (..., h_kv, S_k, d_v).
    ``attn_mask``, as in PyTorch: boolean with True = may attend, or a float tensor added to
    the scores (-inf where not allowed), broadcastable to (..., S_q, S_k). ``is_causal``:
    query i sees keys 0..i (top-left aligned). ``scale`` defaults to 1/sqrt(d_k).
    ``enable_gqa``: grouped-query attention, h query heads sharing h_kv key/value heads
    (h divisible by h_kv; query head j uses key/value head j // (h / h_kv)).

    tinyattn's additions (keyword-only): ``need_weights=True`` also returns the weights
    (..., S_q, S_k), the probabilities before dropout, detached (for plotting);
    ``generator`` for the dropout mask; ``impl``/``block_size`` below. A query whose keys
    are all masked gets an output of zeros and zero gradients (as torch 2.13's CPU kernel
    does; nn.MultiheadAttention with need_weights=True gives NaN: docs/nn.md#masks).
    ``attn_mask`` together with ``is_causal=True`` is refused, as torch documents (its math
    kernel and CUDA raise): fold the causal mask into ``attn_mask`` instead.

    Why divide by sqrt(d_k): if q and k have independent unit-variance entries, q . k is a sum
    of d_k unit-variance terms, so its variance is d_k. Scaling by 1/sqrt(d_k) brings the
    logits back to unit variance, which keeps softmax away from saturated one-hot rows whose
    gradients vanish.

    ``impl=None`` (default) lets the kernel switches choose (``torch.nn.attention.sdpa_kernel``:
    tinyattn/kernels.py; "plain" unless a switch leaves only fused kernels allowed).
    ``impl="plain"`` builds the whole (..., S_q, S_k) probability matrix and keeps it
    for the backward. ``impl="tiled"`` gives the same result computed ``block_size`` queries
    by ``block_size`` keys at a time with an online softmax, keeping only the output and one
    logsumexp per row, so memory grows linearly in S (docs/tiled_attention.md). The tiled
    path supports boolean masks and ``is_causal`` but not dropout, float masks or
    ``need_weights``. ``impl="composed"`` computes the same values from separate ops
    (matmul, scale, masked_fill, softmax, dropout, matmul), each with its own backward: slower,
    but a graph of it (``tinyattn.viz.explore``) shows every step.
    """
    result = _scaled_dot_product_attention(
        query, key, value, attn_mask, dropout_p, is_causal, scale, enable_gqa,
        need_weights=need_weights, generator=generator, impl=impl, block_size=block_size)
    if _torch_uses_half_flash(query, key, value, attn_mask, dropout_p, need_weights,
                              enable_gqa):
        # the values as torch's kernel rounds them; the graph (and so the gradients) is the
        # float32 computation's, which these values differ from in the last place only
        result._data = backend.to_device(_half_flash_values(
            query, key, value, attn_mask, is_causal,
            default_scale(query.shape[-1]) if scale is None else float(scale)), result.device)
    if isinstance(result, tuple):
        return result
    return name_node(result, _torch_node_name(query, key, value, attn_mask, dropout_p,
                                              enable_gqa))


def _torch_node_name(q: Tensor, k: Tensor, v: Tensor, attn_mask: Any, dropout_p: float,
                     enable_gqa: bool) -> str:
    """The grad_fn name torch's CPU dispatch gives (measured on torch 2.13): its flash
    kernel for 4-D q, k, v of equal batch and head sizes (or grouped heads), one width, no
    dropout, no mask or a 2-D/4-D one that needs no gradient; else the math path, which ends
    in matmul (a view of a bmm; mm for 2-D)."""
    flash = (q.ndim == k.ndim == v.ndim == 4 and not dropout_p
             and q.shape[-1] == k.shape[-1] == v.shape[-1] and q.shape[-2] > 0
             and q.shape[0] == k.shape[0] == v.shape[0] and k.shape[1] == v.shape[1]
             and (q.shape[1] == k.shape[1] or (enable_gqa and q.shape[1] % k.shape[1] == 0))
             and (attn_mask is None or (isinstance(attn_mask, Tensor) and attn_mask.ndim in (2, 4)
                                        and not attn_mask.requires_grad)))
    if flash:
        return "ScaledDotProductFlashAttentionForCpuBackward0"
    return "MmBackward0" if q.ndim == k.ndim == 2 else "UnsafeViewBackward0"


_FLASH_KEY_BLOCK = 512          # torch's CPU flash kernel splits the keys into blocks of 512


def _torch_uses_half_flash(q: Any, k: Any, v: Any, attn_mask: Any, dropout_p: float,
                           need_weights: bool, enable_gqa: bool) -> bool:
    """Whether torch's CPU flash kernel computes this float16/bfloat16 call (4-D query, key
    and value with the same batch and head sizes, no dropout) with one block of keys, the
    case _half_flash_values reproduces (measured: 3-D or broadcast inputs take torch's math
    path, which computes in float32 and rounds once, as tinyattn does)."""
    tensors = (q, k, v)
    if not all(isinstance(t, Tensor) for t in tensors) or need_weights or dropout_p:
        return False
    if enable_gqa or any(t.ndim != 4 or t.dtype != q.dtype for t in tensors):
        return False
    if not is_low_precision(q.dtype) or q.shape[:2] != k.shape[:2] or k.shape[:2] != v.shape[:2]:
        return False
    if attn_mask is not None and not isinstance(attn_mask, Tensor):
        return False
    return 0 < k.shape[-2] <= _FLASH_KEY_BLOCK and q.shape[-2] > 0


def _half_flash_values(q: Tensor, k: Tensor, v: Tensor, attn_mask: Any, is_causal: bool,
                       scale: float) -> np.ndarray:
    """softmax(q k^T * scale + mask) v as torch's CPU flash kernel rounds it in float16/
    bfloat16: scores s = (q k^T) * scale (+ mask) in float32, e = exp(s - rowmax(s)), and
    the output (round_half(e) @ v) / rowsum(e): the unnormalised exps are rounded to the half
    dtype before the product with v, the row sums are not. A row with no visible key gives 0.
    (Bit for bit against torch on 4-D inputs with up to 512 keys:
    tests/test_half_reductions_as_torch.py; computing everything in float32 and rounding
    once, as tinyattn does elsewhere, is slightly more accurate but differs in the last
    place for about one element in six.)"""
    dtype = q.dtype
    f32 = lambda t: backend.to_host(t._data).astype(np.float32)     # noqa: E731
    qf, kf, vf = f32(q), f32(k), f32(v)
    products = qf @ np.swapaxes(kf, -1, -2)                           # (B, H, L, S)
    scores = products * np.float32(scale)
    s_q, s_k = scores.shape[-2:]
    if is_causal:
        scores = np.where(np.tril(np.ones((s_q, s_k), dtype=bool)), scores, -np.inf)
    if attn_mask is not None:
        mask = backend.to_host(attn_mask._data)
        if mask.dtype == np.bool_:
            scores = np.where(mask, scores, -np.inf)
        else:
            scores = scores + mask.astype(np.float32)
    top = scores.max(axis=-1, keepdims=True)
    seen = np.isfinite(top)
    with np.errstate(invalid="ignore", divide="ignore"):
        e = np.exp(scores - np.where(seen, top, 0.0)).astype(np.float32)
        total = e.sum(axis=-1, keepdims=True)
        out = (e.astype(dtype).astype(np.float32) @ vf) / total
    out = np.where(seen & (total > 0), out, 0.0)
    return out.astype(dtype)


def _scaled_dot_product_attention(query: Tensor, key: Tensor, value: Tensor,
                                  attn_mask: Any = None, dropout_p: float = 0.0,
                                  is_causal: bool = False, scale: Optional[float] = None,
                                  enable_gqa: bool = False, *, need_weights: bool = False,
                                  generator: Any = None, impl: Optional[str] = None,
                                  block_size: int = 64):
    """scaled_dot_product_attention's computation (its docstring says what it does)."""
    op = "scaled_dot_product_attention"
    if attn_mask is not None and is_causal:
        raise RuntimeError(
            f"{op}: Explicit attn_mask should not be set when is_causal=True (torch "
            f"documents the refusal; its CPU flash kernel computes 4-D inputs anyway). Combine them into one mask, e.g. attn_mask & "
            f"ones(S_q, S_k, dtype=bool).tril() for a boolean mask, and pass is_causal=False")
    mask_dtype = getattr(attn_mask, "dtype", None)
    if mask_dtype is not None and is_floating(np.dtype(mask_dtype)) \
            and np.dtype(mask_dtype) not in (np.dtype(np.float32), np.dtype(query.dtype)):
        raise RuntimeError(      # torch's check: bool, float32, or the query's dtype
            f"Expected attn_mask dtype to be bool or float or to match query dtype, but got "
            f"attn_mask.dtype: {np.dtype(mask_dtype)} and query.dtype: {query.dtype} instead "
            f"(as torch); convert the mask with .to(query.dtype)")
    q, k, v = query, key, value
    if impl is None:                    # the kernel switches (torch.nn.attention.sdpa_kernel)
        impl = kernels.choose_impl(q.device, float(dropout_p), _is_float_mask(attn_mask),
                                   need_weights)
    _check_qkv(q, k, v, op, enable_gqa)
    if not 0.0 <= dropout_p <= 1.0:
        raise ValueError(f"{op}: dropout_p must be in [0, 1], got {dropout_p}")
    _check_impl(impl, block_size, dropout_p, need_weights, op)
    if enable_gqa and q.shape[-3] != k.shape[-3]:
        return _grouped_query(q, k, v, attn_mask, dropout_p, is_causal, scale, need_weights,
                              generator, impl, block_size)
    if q.dtype == k.dtype == v.dtype == np.float16:
        result = scaled_dot_product_attention(
            q.float(), k.float(), v.float(), _float32_bias(attn_mask), dropout_p, is_causal,
            scale, need_weights=need_weights, generator=generator, impl=impl,
            block_size=block_size)
        return _rounded_to_half(result)
    scale = default_scale(q.shape[-1]) if scale is None else float(scale)
    bool_mask, bias = _split_attn_mask(attn_mask, q, k, op)
    if bias is not None and impl == "tiled":
        raise ValueError(f"{op}: impl='tiled' takes boolean masks only (True = may attend); "
                         f"a float attn_mask is added to every score, which the tiled kernel "
                         f"does not do. Use impl='plain'")
    if impl == "composed" or (bias is not None and bias.requires_grad):
        return _attention_from_ops(q, k, v, bool_mask, is_causal, bias, scale, dropout_p,
                                   need_weights, generator)
    if impl == "tiled":
        mask_data = attention_mask_array(q, k, bool_mask, False, op)  # causal: per tile
        if mask_data is not None:
            mask_data = mask_data.copy()   # kept for the backward: never the caller's array
        return TiledAttention.apply(q, k, v, mask=mask_data, scale=scale,
                                    is_causal=bool(is_causal), block_size=block_size)
    mask_data = attention_mask_array(q, k, bool_mask, is_causal, op)
    sink: Optional[List[Any]] = [] if need_weights else None
    out = ScaledDotProductAttention.apply(q, k, v, mask=mask_data, scale=scale,
                                          dropout_p=float(dropout_p), generator=generator,
                                          weights_sink=sink,
                                          bias=None if bias is None else bias._data)
    out = _in_query_layout(out, q, dropout_p)
    if need_weights:
        return out, Tensor._wrap(sink[0].copy())  # a copy: editing it cannot touch backward
    return out


def _in_query_layout(out: Tensor, q: Tensor, dropout_p: float) -> Tensor:
    """torch's memory layout for the output: when q is (B, h, S, d) laid out as a (B, S, h, d)
    array (``x.view(B, S, h, d).transpose(1, 2)``), so is the output, and
    ``out.transpose(1, 2).view(B, S, h * d)`` needs no copy (torch's CPU kernel does this;
    with dropout it returns a contiguous array, and so does tinyattn). Same values."""
    data = q._data
    if (dropout_p > 0.0 or data.ndim != 4 or data.flags.c_contiguous
            or not data.transpose(0, 2, 1, 3).flags.c_contiguous):
        return out
    xp = backend.get_array_module(out._data)
    b, h, s, d = out.shape
    laid = xp.empty((b, s, h, d), dtype=out.dtype).transpose(0, 2, 1, 3)  # (B, h, S, d)
    laid[...] = out._data
    out._data = laid                    # a fresh output: no one holds the old array's layout
    return out


def _float32_bias(attn_mask: Any) -> Any:
    """A float16 float mask as float32 (differentiably if it is a Tensor); others as given."""
    if isinstance(attn_mask, Tensor):
        return attn_mask.float() if attn_mask.dtype == np.float16 else attn_mask
    if getattr(attn_mask, "dtype", None) == np.float16:
        return attn_mask.astype(np.float32)
    return attn_mask


def _rounded_to_half(result: Any) -> Any:
    """Attention computed in float32 for float16 inputs, rounded back: float16 tops out at
    65504, so q k^T overflows to inf long before softmax would saturate, and softmax's
    inf - inf makes the row NaN. PyTorch's CPU kernel accumulates in float32 too. The output
    goes through the differentiable cast, so the gradients come back in float16."""
    if isinstance(result, tuple):                   # (out, weights): weights are detached
        out, weights = result
        return _rounded_to_half(out), Tensor._wrap(weights._data.astype(np.float16))
    return result.to(dtype="float16")


def _is_float_mask(attn_mask: Any) -> bool:
    if attn_mask is None:
        return False
    dtype = attn_mask.dtype if hasattr(attn_mask, "dtype") else np.asarray(attn_mask).dtype
    return np.dtype(dtype).kind == "f"


def _split_attn_mask(attn_mask: Any, q: Tensor, k: Tensor, op: str
                     ) -> Tuple[Any, Optional[Tensor]]:
    """(boolean mask or None, float bias Tensor or None) from PyTorch's attn_mask."""
    if attn_mask is None:
        return None, None
    dtype = attn_mask.dtype if hasattr(attn_mask, "dtype") else np.asarray(attn_mask).dtype
    if dtype == np.bool_:
        return attn_mask, None
    if not is_floating(np.dtype(dtype)):
        raise TypeError(f"{op}: attn_mask must be boolean (True = may attend) or floating "
                        f"(added to the scores), got dtype {dtype}; for a 0/1 mask pass "
                        f"mask.bool()")
    bias = attn_mask if isinstance(attn_mask, Tensor) else Tensor._wrap(
        backend.to_device(np.asarray(attn_mask), q.device))
    if bias.dtype != q.dtype:
        bias = Tensor._wrap(bias._data.astype(q.dtype)) if not bias.requires_grad else bias
    target = tuple(np.broadcast_shapes(q.shape[:-2], k.shape[:-2])) + (q.shape[-2],
                                                                       k.shape[-2])
    try:
        ok = np.broadcast_shapes(bias.shape, target) == target
    except ValueError:
        ok = False
    if not ok:
        raise broadcast_error([target, bias.shape], f"{op}: scores and attn_mask") or \
            RuntimeError(f"{op}: attn_mask of shape {bias.shape} does not broadcast to the "
                         f"scores' shape {target} (..., S_q, S_k)")
    return None, bias


def _attention_from_ops(q: Tensor, k: Tensor, v: Tensor, mask: Any, is_causal: bool,
                        bias: Tensor, scale: float, dropout_p: float, need_weights: bool,
                        generator: Any):
    """softmax(q k^T * scale + bias, masked) v from separate ops, each with its own
    hand-written backward: the path for a float mask that itself needs a gradient, and
    ``impl="composed"`` (a graph that shows each step: tinyattn.viz.explore)."""
    from .dropout import dropout        # noqa: PLC0415 - same layer
    from .masking import masked_fill    # noqa: PLC0415
    from .matmul import matmul          # noqa: PLC0415
    from .softmax import softmax_empty_rows_zero  # noqa: PLC0415
    root = math.sqrt(scale)     # as torch's math path: q and k each scaled by sqrt(scale),
    scores = matmul(q * root, k.transpose(-2, -1) * root)    # so the matmul keeps those
    # (..., S_q, d_k) @ (..., d_k, S_k): a write to q or k after the op is allowed
    if bias is not None:
        scores = scores + bias
    keep = attention_mask_array(q, k, mask, is_causal, "scaled_dot_product_attention")
    if keep is not None:
        xp = backend.get_array_module(scores._data)
        scores = masked_fill(scores, ~xp.broadcast_to(keep, scores.shape), float("-inf"))
    probs = softmax_empty_rows_zero(scores, -1)     # a row of -inf only gives zeros
    weights = Tensor._wrap(probs._data.copy()) if need_weights else None
    out = matmul(dropout(probs, dropout_p, generator=generator), v)
    return (out, weights) if need_weights else out


def _grouped_query(q: Tensor, k: Tensor, v: Tensor, attn_mask: Any, dropout_p: float,
                   is_causal: bool, scale: Optional[float], need_weights: bool,
                   generator: Any, impl: str, block_size: int):
    """Grouped-query attention as ordinary attention with one more batch axis: the h query
    heads are viewed as (h_kv, g) and each key/value head is broadcast over its g query
    heads, so the fused op's unbroadcast sums each group's key/value gradients."""
    h, h_kv = q.shape[-3], k.shape[-3]
    g = h // h_kv
    q5 = q.reshape(q.shape[:-3] + (h_kv, g) + q.shape[-2:])  # (.., h, S_q, d) -> (.., h_kv, g, ..)
    k5, v5 = k.unsqueeze(-3), v.unsqueeze(-3)                 # (.., h_kv, 1, S_k, d)
    mask5 = _group_mask(attn_mask, h, h_kv, q.device)
    result = scaled_dot_product_attention(
        q5, k5, v5, mask5, dropout_p, is_causal, scale, need_weights=need_weights,
        generator=generator, impl=impl, block_size=block_size)
    out, weights = result if need_weights else (result, None)
    out = out.reshape(q.shape[:-1] + (v.shape[-1],))          # (.., h_kv, g, S_q, d_v) -> h heads
    if need_weights:
        return out, weights.reshape(q.shape[:-1] + (k.shape[-2],))
    return out


def _group_mask(attn_mask: Any, h: int, h_kv: int, device: str) -> Any:
    """A mask for (..., h, S_q, S_k) scores reshaped for (..., h_kv, g, S_q, S_k) scores."""
    if attn_mask is None:
        return None
    mask = attn_mask if isinstance(attn_mask, Tensor) else Tensor._wrap(
        backend.to_device(np.asarray(attn_mask), device))
    if mask.ndim < 3 or mask.shape[-3] == 1:
        return mask.unsqueeze(-3) if mask.ndim >= 3 else mask
    if mask.shape[-3] != h:
        raise ValueError(f"scaled_dot_product_attention: attn_mask of shape {mask.shape} has "
                         f"{mask.shape[-3]} heads; expected 1 or the {h} query heads")
    return mask.reshape(mask.shape[:-3] + (h_kv, h // h_kv) + mask.shape[-2:])


class PackedRows(Function):
    """out = cat(parts) along the first axis, for parts that already lie one after another
    in one array (``MultiHeadAttention`` keeps W_q, W_k, W_v as row blocks of one (3D, D)
    array): out is that array, not a copy. Backward, as cat's: each part gets its rows of
    the gradient, d part_i = g[start_i:stop_i].

    Because out is the parts' own memory, an in-place change of a part after the forward
    would reach the backward of the op that read out; every part's version is noted
    (``versions_checked``), so the backward raises instead, naming the part."""

    versions_checked = (0, 1, 2)

    def forward(self, *parts):
        self.save_for_backward(tuple(part.shape[0] for part in parts))
        if rows_of_one_array(parts):
            return parts[0].base
        # a hook (autocast, half dtypes) handed over other arrays: copy them, as cat does
        return backend.get_array_module(parts[0]).concatenate(parts)

    def backward(self, grad):
        (rows,) = self.saved
        grads, start = [], 0
        for n in rows:
            grads.append(grad[start:start + n])     # (n, ...) rows of the (N, ...) gradient
            start += n
        return tuple(grads)


def rows_of_one_array(arrays: Sequence[Any]) -> bool:
    """Do ``arrays`` (at most 3) lie one after another, in order, and fill one C-contiguous
    NumPy array (their common ``base``)? Then ``PackedRows`` can stand in for ``cat``."""
    base = arrays[0].base
    if (len(arrays) > 3 or type(base) is not np.ndarray or not base.flags.c_contiguous
            or base.ndim != arrays[0].ndim):
        return False
    address = base.__array_interface__["data"][0]
    rows = 0
    for a in arrays:
        if (type(a) is not np.ndarray or a.base is not base or a.dtype != base.dtype
                or not a.flags.c_contiguous or a.shape[1:] != base.shape[1:]
                or a.__array_interface__["data"][0] != address + rows * base.strides[0]):
            return False
        rows += a.shape[0]
    return rows == base.shape[0]


def packed_rows(parts: Sequence[Tensor]) -> Tensor:
    """``cat(parts)`` (dim 0), without the copy when the parts are row blocks of one array in
    order (``PackedRows``); otherwise ``cat`` itself."""
    if rows_of_one_array([t._data for t in parts]):
        return PackedRows.apply(*parts)
    return cat(list(parts))


def packed_self_attention(qkv: Tensor, mask: Any = None, dropout_p: float = 0.0,
                          is_causal: bool = False, scale: Optional[float] = None,
                          need_weights: bool = False, generator: Any = None):
    """Self-attention on qkv (3, ..., S, d_k), the queries, keys and values stacked on the
    first axis (``MultiHeadAttention``'s packed projection makes them so).

    Equal to ``scaled_dot_product_attention(qkv[0], qkv[1], qkv[2], ...)`` with the same
    arguments (plain path), but qkv gets one gradient, written in place, instead of three
    zero-padded ones added up (``PackedSelfAttention``).
    """
    op = "packed_self_attention"
    if qkv.ndim < 3 or qkv.shape[0] != 3:
        raise ValueError(f"{op}: qkv must be (3, ..., S, d_k), q, k and v stacked on the first "
                         f"axis, got shape {qkv.shape}")
    if not 0.0 <= dropout_p <= 1.0:
        raise ValueError(f"{op}: dropout_p must be in [0, 1], got {dropout_p}")
    if qkv.dtype == np.float16:                     # as in scaled_dot_product_attention
        return _rounded_to_half(packed_self_attention(
            qkv.float(), mask, dropout_p, is_causal, scale, need_weights, generator))
    s, d_k = qkv.shape[-2], qkv.shape[-1]
    mask_data = _mask_array(qkv._data, tuple(qkv.shape[1:-2]), s, s, mask, is_causal, op)
    scale = default_scale(d_k) if scale is None else float(scale)
    sink: Optional[List[Any]] = [] if need_weights else None
    out = PackedSelfAttention.apply(qkv, mask=mask_data, scale=scale,
                                    dropout_p=float(dropout_p), generator=generator,
                                    weights_sink=sink)
    if need_weights:
        return out, Tensor._wrap(sink[0].copy())  # a copy: editing it cannot touch backward
    return out
