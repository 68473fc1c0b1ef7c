"""Scaled dot-product attention as one fused op (docs/derivations.md#attention).

Shapes (letters fixed across tinyattn): B batch, h heads, S_q query length, S_k key length,
d_k query/key width, d_v value width. q (..., S_q, d_k), k (..., S_k, d_k), v (..., S_k, d_v);
the leading dims (usually (B, h)) must match or broadcast.

Masks are boolean with True = "may attend", broadcastable to (..., S_q, S_k). A query row whose
keys are all masked gets an output of zeros and zero gradients (torch.nn.MultiheadAttention
gives NaN there).
"""
from __future__ import annotations

import math
from typing import Any, List, Optional

import numpy as np

from .. import backend
from ..autograd import Function, unbroadcast
from ..tensor import Tensor
from .masking import mask_array
from .softmax import stable_softmax
from .tiled_attention import TiledAttention

__all__ = ["scaled_dot_product_attention", "causal_mask_array", "attention_mask_array"]


def _swap(x):
    return x.swapaxes(-1, -2)


class ScaledDotProductAttention(Function):
    """out = dropout(softmax(mask(q k^T * scale))) v.

    Forward, with P the attention probabilities and A = P after dropout:
        S = q @ k^T * scale             (..., S_q, d_k) @ (..., d_k, S_k) -> (..., S_q, S_k)
        S = where(mask, S, -inf);  P = softmax(S) per row (an all-masked row -> 0)
        A = P * keep / (1 - p);  out = A @ v   (..., S_q, S_k) @ (..., S_k, d_v)
    Backward (softmax rule row by row; masked entries have P = 0, so they get dS = 0):
        dv = A^T @ g,   dA = g @ v^T,   dP = dA * keep / (1 - p)
        dS = P * (dP - rowsum(dP * P))
        dq = dS @ k * scale,   dk = dS^T @ q * scale
    """

    def forward(self, q, k, v, mask, scale: float, dropout_p: float, generator: Any,
                weights_sink: Optional[List[Any]]):
        xp = backend.get_array_module(q)
        scores = q @ _swap(k)                   # (..., S_q, d_k) @ (..., d_k, S_k)
        scores *= scale                         # -> (..., S_q, S_k)
        if mask is not None:
            scores = xp.where(mask, scores, -xp.inf)
        probs = stable_softmax(scores, axis=-1)  # (..., S_q, S_k)
        if weights_sink is not None:
            weights_sink.append(probs)
        attn, keep = probs, None
        if dropout_p > 0.0:
            scale_keep = 0.0 if dropout_p >= 1.0 else 1.0 / (1.0 - dropout_p)
            keep = backend.uniform(probs.shape, backend.device_of(probs), probs.dtype,
                                   generator) >= dropout_p
            keep = keep * probs.dtype.type(scale_keep)
            attn = probs * keep
        self.save_for_backward(q, k, v, probs, attn, keep, scale)
        return attn @ v                         # (..., S_q, S_k) @ (..., S_k, d_v)

    def backward(self, grad):
        q, k, v, probs, attn, keep, scale = self.saved
        dq = dk = dv = None
        if self.needs_input_grad[2]:
            dv = unbroadcast(_swap(attn) @ grad, v.shape)   # (..., S_k, S_q) @ (..., S_q, d_v)
        if self.needs_input_grad[0] or self.needs_input_grad[1]:
            d_probs = grad @ _swap(v)           # (..., S_q, d_v) @ (..., d_v, S_k)
            if keep is not None:
                d_probs *= keep
            d_scores = probs * (d_probs - (d_probs * probs).sum(axis=-1, keepdims=True))
            d_scores *= scale                   # fold the scale in once for both products
            if self.needs_input_grad[0]:
                dq = unbroadcast(d_scores @ k, q.shape)         # (..., S_q, S_k) @ (..., S_k, d_k)
            if self.needs_input_grad[1]:
                dk = unbroadcast(_swap(d_scores) @ q, k.shape)  # (..., S_k, S_q) @ (..., S_q, d_k)
        return dq, dk, dv


def causal_mask_array(xp: Any, s_q: int, s_k: int) -> Any:
    """(S_q, S_k) bool, True on and below the diagonal: query i may see keys 0..i
    (top-left aligned, as PyTorch's ``is_causal``)."""
    return xp.tri(s_q, s_k, dtype=bool)


def attention_mask_array(q: Tensor, k: Tensor, mask: Any, is_causal: bool, op: str) -> Any:
    """Validate ``mask`` against (..., S_q, S_k), fold in the causal mask, return an array."""
    s_q, s_k = q.shape[-2], k.shape[-2]
    expected = tuple(np.broadcast_shapes(q.shape[:-2], k.shape[:-2])) + (s_q, s_k)
    combined = None
    if mask is not None:
        combined = mask_array(mask, op, expected, q.device, what="attention mask (True = attend)")
    if is_causal:
        causal = causal_mask_array(backend.get_array_module(q.data), s_q, s_k)
        combined = causal if combined is None else combined & causal
    return combined


def _check_qkv(q: Tensor, k: Tensor, v: Tensor, op: str) -> None:
    if q.ndim < 2 or k.ndim < 2 or v.ndim < 2:
        raise ValueError(f"{op}: q, k, v need shape (..., S, d), got {q.shape}, {k.shape}, "
                         f"{v.shape}")
    if q.shape[-1] != k.shape[-1]:
        raise ValueError(f"{op}: q has d_k={q.shape[-1]} but k has d_k={k.shape[-1]}; the "
                         f"query and key widths must match (shapes {q.shape} and {k.shape})")
    if k.shape[-2] != v.shape[-2]:
        raise ValueError(f"{op}: k has S_k={k.shape[-2]} keys but v has {v.shape[-2]} values "
                         f"(shapes {k.shape} and {v.shape})")
    try:
        np.broadcast_shapes(q.shape[:-2], k.shape[:-2], v.shape[:-2])
    except ValueError:
        raise ValueError(f"{op}: batch dims of q {q.shape}, k {k.shape} and v {v.shape} do not "
                         f"broadcast") from None


def _check_impl(impl: Any, block_size: Any, dropout_p: float, need_weights: bool,
                op: str) -> None:
    if impl not in ("plain", "tiled"):
        raise ValueError(f"{op}: impl must be 'plain' or 'tiled', got {impl!r}")
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


def scaled_dot_product_attention(q: Tensor, k: Tensor, v: Tensor, mask: Any = None,
                                 dropout_p: float = 0.0, is_causal: bool = False,
                                 scale: Optional[float] = None, need_weights: bool = False,
                                 generator: Any = None, impl: str = "plain",
                                 block_size: int = 64):
    """softmax(q k^T / sqrt(d_k)) v with an optional boolean mask (True = may attend).

    Returns the output (..., S_q, d_v), or ``(output, weights)`` with ``need_weights=True``,
    where ``weights`` (..., S_q, S_k) are the probabilities before dropout, detached (for
    plotting and inspection; no gradient flows through them).

    Why divide by sqrt(d_k): if q and k have independent unit-variance entries, q . k is a sum
    of d_k unit-variance terms, so its variance is d_k. Scaling by 1/sqrt(d_k) brings the
    logits back to unit variance, which keeps softmax away from saturated one-hot rows whose
    gradients vanish.

    ``impl="plain"`` (default) builds the whole (..., S_q, S_k) probability matrix and keeps it
    for the backward. ``impl="tiled"`` gives the same result computed ``block_size`` queries
    by ``block_size`` keys at a time with an online softmax, keeping only the output and one
    logsumexp per row, so memory grows linearly in S (docs/tiled_attention.md). The tiled
    path supports masks and ``is_causal`` but not dropout or ``need_weights``.
    """
    op = "scaled_dot_product_attention"
    _check_qkv(q, k, v, op)
    if not 0.0 <= dropout_p <= 1.0:
        raise ValueError(f"{op}: dropout_p must be in [0, 1], got {dropout_p}")
    _check_impl(impl, block_size, dropout_p, need_weights, op)
    if impl == "tiled":
        scale = 1.0 / math.sqrt(q.shape[-1]) if scale is None else float(scale)
        mask_data = attention_mask_array(q, k, mask, False, op)  # causal is built per tile
        return TiledAttention.apply(q, k, v, mask=mask_data, scale=scale,
                                    is_causal=bool(is_causal), block_size=block_size)
    mask_data = attention_mask_array(q, k, mask, is_causal, op)
    scale = 1.0 / math.sqrt(q.shape[-1]) if scale is None else float(scale)
    sink: Optional[List[Any]] = [] if need_weights else None
    out = ScaledDotProductAttention.apply(q, k, v, mask=mask_data, scale=scale,
                                          dropout_p=float(dropout_p), generator=generator,
                                          weights_sink=sink)
    if need_weights:
        return out, Tensor._wrap(sink[0])
    return out
