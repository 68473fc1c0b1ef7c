"""``nn.MultiheadAttention``: PyTorch's module, argument for argument (docs/pytorch.md).

Shapes as PyTorch names them: L target (query) length, S source (key) length, N batch,
E = embed_dim, h = num_heads, d_k = E / h. Inputs are (L, N, E) by default and (N, L, E) with
``batch_first=True``; an unbatched (L, E) input works too. The parameters have PyTorch's names
and shapes, so ``load_state_dict(torch_mha.state_dict())`` works as is:

    in_proj_weight (3E, E) = [W_q; W_k; W_v]   (or q_proj_weight, k_proj_weight, v_proj_weight
    in_proj_bias   (3E,)                        when kdim or vdim differ from E)
    out_proj.weight (E, E), out_proj.bias (E,)

Masks mean what they mean in PyTorch: ``key_padding_mask`` (N, S) and ``attn_mask`` (L, S) or
(N * h, L, S) are boolean with True = NOT allowed, or float and added to the scores. The
forward returns ``(attn_output, attn_weights)``, the weights averaged over heads unless
``average_attn_weights=False``, or None with ``need_weights=False``.

The computation is tinyattn's: three linear projections (slices of ``in_proj_weight``, so
their gradients land in the right rows), ``F.scaled_dot_product_attention`` (one fused op with
a hand-derived backward), the output projection. A query whose keys are all masked gets what
PyTorch gives: NaN with need_weights=True and on PyTorch's inference fast path (the conditions
in ``_torch_fast_path``: eval, no gradient needed, batch_first, self-attention, boolean masks,
...), and zeros from the fused op otherwise. With need_weights=True the weights come, as in
PyTorch, after dropout and differentiable, so that path is built from separate ops.
"""
from __future__ import annotations

import warnings

import math
from typing import Any, Optional, Tuple

import numpy as np

from ..precision import get_default_dtype

from .. import backend
from .. import functional as F
from ..amp.autocast_mode import is_autocast_enabled
from ..autograd import is_grad_enabled
from ..ops.attention import default_scale
from ..ops import cat
from ..tensor import Tensor, as_tensor, ones, zeros
from .layers import Linear, NonDynamicallyQuantizableLinear, uniform_parameter
from .module import Module, Parameter
from ..precision import is_floating

__all__ = ["MultiheadAttention"]


class MultiheadAttention(Module):
    """PyTorch's ``torch.nn.MultiheadAttention``, with the same constructor, parameters and
    forward. ``add_bias_kv``: learned ``bias_k``/``bias_v`` (1, 1, E) appended to the keys
    and values as one more source position; ``add_zero_attn``: a zero key and value appended
    after the heads are split (both as torch; masks get an allowed column for each)."""

    def __init__(self, embed_dim: int, num_heads: int, dropout: float = 0.0, bias: bool = True,
                 add_bias_kv: bool = False, add_zero_attn: bool = False,
                 kdim: Optional[int] = None, vdim: Optional[int] = None,
                 batch_first: bool = False, device: Optional[str] = None, dtype: Any = None):
        for name, value in (("embed_dim", embed_dim), ("num_heads", num_heads)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"MultiheadAttention: {name} must be a positive int, got "
                                 f"{value!r}")
        if embed_dim % num_heads != 0:
            raise ValueError(f"MultiheadAttention: embed_dim={embed_dim} must be divisible by "
                             f"num_heads={num_heads}")
        if not 0.0 <= dropout <= 1.0:
            raise ValueError(f"MultiheadAttention: dropout must be in [0, 1], got {dropout}")
        self.embed_dim, self.num_heads = embed_dim, num_heads
        self.head_dim = embed_dim // num_heads
        self.kdim = embed_dim if kdim is None else kdim
        self.vdim = embed_dim if vdim is None else vdim
        self._qkv_same_embed_dim = self.kdim == embed_dim and self.vdim == embed_dim
        self.dropout, self.batch_first = dropout, batch_first
        e = embed_dim
        # The random draws come in torch's order (out_proj is built before the input
        # projections are initialised: tests/test_pytorch_programs.py feeds both frameworks
        # one stream of numbers); the attributes keep torch's order (in_proj_*, out_proj).
        out_proj = NonDynamicallyQuantizableLinear(e, e, bias=bias)
        if self._qkv_same_embed_dim:        # Xavier-uniform over the packed (3E, E) matrix
            self.in_proj_weight = uniform_parameter((3 * e, e), math.sqrt(6.0 / (4 * e)))
            self.q_proj_weight = self.k_proj_weight = self.v_proj_weight = None
        else:
            self.in_proj_weight = None
            self.q_proj_weight = uniform_parameter((e, e), math.sqrt(6.0 / (2 * e)))
            self.k_proj_weight = uniform_parameter((e, self.kdim),
                                                   math.sqrt(6.0 / (e + self.kdim)))
            self.v_proj_weight = uniform_parameter((e, self.vdim),
                                                   math.sqrt(6.0 / (e + self.vdim)))
        self.in_proj_bias = Parameter(np.zeros(3 * e, dtype=get_default_dtype())) if bias else None
        if add_bias_kv:                   # torch: xavier_normal_ over a (1, 1, E) tensor
            std = math.sqrt(2.0 / (e + e))
            draw = backend.default_generator("cpu")     # manual_seed makes it repeatable
            wanted = get_default_dtype()
            self.bias_k = Parameter((draw.standard_normal((1, 1, e)) * std).astype(wanted))
            self.bias_v = Parameter((draw.standard_normal((1, 1, e)) * std).astype(wanted))
        else:
            self.bias_k = self.bias_v = None
        self.add_zero_attn = bool(add_zero_attn)
        self.out_proj = out_proj
        if bias:
            self.out_proj.bias = Parameter(np.zeros(e, dtype=get_default_dtype()))
        if device is not None or dtype is not None:
            self.to(device=device, dtype=dtype)

    def extra_repr(self) -> str:
        return ""             # torch prints only out_proj: the settings are not in its printout

    def forward(self, query: Tensor, key: Tensor, value: Tensor, key_padding_mask: Any = None,
                need_weights: bool = True, attn_mask: Any = None,
                average_attn_weights: bool = True, is_causal: bool = False
                ) -> Tuple[Tensor, Optional[Tensor]]:
        """query (L, N, E) [or (N, L, E) batch-first, or (L, E)], key (S, N, kdim), value
        (S, N, vdim) -> (attn_output like query, attn_weights (N, L, S) or (N, h, L, S))."""
        name = "MultiheadAttention"
        for label, x in (("query", query), ("key", key), ("value", value)):
            if not isinstance(x, Tensor):
                raise TypeError(f"{name}: {label} must be a Tensor, got {type(x).__name__}")
        fast_path = self._torch_fast_path(query, key, value, attn_mask, key_padding_mask)
        unbatched = query.ndim == 2
        batch_dim = 0 if self.batch_first else 1        # where the batch of one goes
        if unbatched:                                   # (L, E) -> (1, L, E) or (L, 1, E)
            query, key, value = (x.unsqueeze(batch_dim) for x in (query, key, value))
            if key_padding_mask is not None:
                key_padding_mask = as_tensor(key_padding_mask).unsqueeze(0)
        for label, x, width in (("query", query, self.embed_dim), ("key", key, self.kdim),
                                ("value", value, self.vdim)):
            if x.ndim != 3 or x.shape[-1] != width:
                layout = "(N, L, E)" if self.batch_first else "(L, N, E)"
                raise ValueError(f"{name}: {label} must be {layout} with {width} features "
                                 f"(or unbatched), got shape {x.shape}")
        if not self.batch_first:                        # (L, N, E) -> (N, L, E)
            query, key, value = (x.transpose(0, 1) for x in (query, key, value))
        n, length, e = query.shape
        source = key.shape[1]
        if key.shape[0] != n or value.shape[0] != n or value.shape[1] != source:
            raise ValueError(f"{name}: query, key and value disagree on the batch or source "
                             f"length: {query.shape}, {key.shape}, {value.shape} (batch-first)")
        h, d_k = self.num_heads, self.head_dim
        q, k, v = self._project(query, key, value)       # each (N, len, E)
        q = q.reshape(n, length, h, d_k).transpose(1, 2)  # (N, L, E) -> (N, h, L, d_k)
        k = k.reshape(n, source, h, d_k).transpose(1, 2)  # (N, S, E) -> (N, h, S, d_k)
        v = v.reshape(n, source, h, d_k).transpose(1, 2)
        mask = _combined_mask(attn_mask, key_padding_mask, is_causal, n, h, length, source,
                              query, need_weights)
        extra = []
        if self.bias_k is not None:       # one more key/value: the learned biases
            extra.append((self.bias_k.reshape(1, h, 1, d_k).expand(n, h, 1, d_k),
                          self.bias_v.reshape(1, h, 1, d_k).expand(n, h, 1, d_k)))
        if self.add_zero_attn:            # and one all-zero key/value
            zero = k.new_zeros((n, h, 1, d_k))
            extra.append((zero, zero))
        for k_more, v_more in extra:
            k = cat([k, k_more.to(k.dtype)], dim=2)       # (N, h, S, d_k) -> (N, h, S+1, d_k)
            v = cat([v, v_more.to(v.dtype)], dim=2)
            if mask is not None:                          # the new column is allowed
                fill = (ones if mask.dtype == np.bool_ else zeros)(
                    *(tuple(mask.shape[:-1]) + (1,)), dtype=mask.dtype, device=mask.device)
                mask = cat([mask, fill], dim=-1)
        p = self.dropout if self.training else 0.0
        if need_weights or fast_path:     # softmax over no key: NaN, as torch's both paths
            out, weights = _attention_with_weights(q, k, v, mask, p)
            weights = weights if need_weights else None
        else:
            out, weights = F.scaled_dot_product_attention(q, k, v, mask, dropout_p=p), None
        out = out.transpose(1, 2).reshape(n, length, e)   # (N, h, L, d_k) -> (N, L, E)
        out = self.out_proj(out)
        if not self.batch_first:
            out = out.transpose(0, 1)                       # (N, L, E) -> (L, N, E)
        if weights is not None and average_attn_weights:
            weights = weights.mean(dim=1)                   # (N, h, L, S) -> (N, L, S)
        if unbatched:
            out = out.squeeze(batch_dim)                    # -> (L, E)
            weights = None if weights is None else weights.squeeze(0)
        return out, weights

    def _torch_fast_path(self, query: Tensor, key: Tensor, value: Tensor, attn_mask: Any,
                         key_padding_mask: Any) -> bool:
        """Whether torch's forward takes its inference fast path (its ``why_not_fast_path``
        checks, in its order), where a query with every key masked gives NaN even with
        need_weights=False. The values are the same elsewhere; only that row differs."""
        masks = [as_tensor(m) for m in (attn_mask, key_padding_mask) if m is not None]
        if any(is_floating(m.dtype) for m in masks):
            return False
        if query.ndim != 3 or query is not key or key is not value:
            return False
        if self.in_proj_weight is None or self.in_proj_bias is None or \
                query.dtype != self.in_proj_weight.dtype:
            return False
        if self.training or self.num_heads % 2 or not self.batch_first or \
                self.bias_k is not None or self.add_zero_attn or is_autocast_enabled():
            return False
        needs_grad = (query, self.in_proj_weight, self.in_proj_bias, self.out_proj.weight,
                      self.out_proj.bias)
        return not (is_grad_enabled() and any(t is not None and t.requires_grad
                                              for t in needs_grad))

    def _project(self, query: Tensor, key: Tensor, value: Tensor
                 ) -> Tuple[Tensor, Tensor, Tensor]:
        """q, k, v = x W^T + b with W rows [0, E), [E, 2E), [2E, 3E) of in_proj_weight (or
        the three separate weights): slices of one Parameter, so each projection's gradient
        is written into its own rows."""
        e = self.embed_dim
        b = self.in_proj_bias
        biases = (None, None, None) if b is None else (b[:e], b[e:2 * e], b[2 * e:])
        if self._qkv_same_embed_dim:
            w = self.in_proj_weight
            weights = (w[:e], w[e:2 * e], w[2 * e:])      # (3E, E) -> 3 x (E, E)
        else:
            weights = (self.q_proj_weight, self.k_proj_weight, self.v_proj_weight)
        return tuple(F.linear(x, wi, bi) for x, wi, bi in
                     zip((query, key, value), weights, biases))  # type: ignore[return-value]


def _attention_with_weights(q: Tensor, k: Tensor, v: Tensor, mask: Optional[Tensor],
                            dropout_p: float) -> Tuple[Tensor, Tensor]:
    """Attention from separate ops (each with its own backward), returning the weights as
    PyTorch's module does: after dropout and differentiable (a loss on them trains the
    projections). The fused op keeps its probabilities to itself, so it serves need_weights=
    False. Masked scores are -inf; a row with every key masked gives zero weights."""
    scores = (q * default_scale(q.shape[-1])) @ k.transpose(-2, -1)  # (N, h, L, d_k) @ (.., S)
    if mask is not None and mask.dtype == np.bool_:
        scores = scores.masked_fill(~mask, float("-inf"))             # mask: True = may attend
    elif mask is not None:
        scores = scores + mask                                         # a float mask is added
    weights = F.dropout(F.softmax(scores, dim=-1), dropout_p)         # (N, h, L, S)
    return weights @ v, weights                                        # (N, h, L, d_k)


def _combined_mask(attn_mask: Any, key_padding_mask: Any, is_causal: bool, n: int, h: int,
                   length: int, source: int, like: Tensor,
                   need_weights: bool = True) -> Optional[Tensor]:
    """PyTorch's masks (True = NOT allowed, or float added) as one mask for
    F.scaled_dot_product_attention: boolean True = may attend, or a float bias. A float
    mask of another dtype than the inputs' is refused as torch refuses it (its weights path
    adds it with baddbmm, which takes one dtype; without weights, sdpa takes float32 too)."""
    parts = []
    if attn_mask is not None and key_padding_mask is not None and \
            as_tensor(attn_mask).dtype != as_tensor(key_padding_mask).dtype:
        warnings.warn("Support for mismatched key_padding_mask and attn_mask is deprecated. "
                      "Use same type for both instead.", UserWarning, stacklevel=4)  # torch's
    if is_causal and attn_mask is None:
        attn_mask = np.triu(np.ones((length, source), dtype=bool), k=1)   # True above: banned
    if attn_mask is not None:
        m = as_tensor(attn_mask, device=like.device)
        if m.ndim == 3:
            if m.shape != (n * h, length, source):
                raise ValueError(f"MultiheadAttention: a 3-D attn_mask must be (N * num_heads, "
                                 f"L, S) = {(n * h, length, source)}, got {m.shape}")
            m = m.reshape(n, h, length, source)
        elif m.shape != (length, source):
            raise ValueError(f"MultiheadAttention: attn_mask must be (L, S) = "
                             f"{(length, source)} or (N * num_heads, L, S), got {m.shape}")
        parts.append(m)
    if key_padding_mask is not None:
        m = as_tensor(key_padding_mask, device=like.device)
        if m.shape != (n, source):
            raise ValueError(f"MultiheadAttention: key_padding_mask must be (N, S) = "
                             f"{(n, source)}, got {m.shape}")
        parts.append(m.reshape(n, 1, 1, source))           # (N, S) -> (N, 1, 1, S)
    keep, bias = None, None
    for m in parts:
        if m.dtype == np.bool_:
            keep = ~m if keep is None else keep & ~m
        elif is_floating(m.dtype):
            if m.dtype != like.dtype and (need_weights or m.dtype != np.float32):
                raise RuntimeError(
                    f"MultiheadAttention: a float mask of dtype {m.dtype} with {like.dtype} "
                    f"inputs (torch: \"Input dtypes must be the same\" / \"Expected attn_mask "
                    f"dtype to be bool or float or to match query dtype\"); convert the mask "
                    f"with .to({like.dtype})")
            m = m if m.dtype == like.dtype else m.to(like.dtype)
            bias = m if bias is None else bias + m
        else:
            raise TypeError(f"MultiheadAttention: masks must be boolean (True = not allowed) "
                            f"or floating (added), got {m.dtype}")
    if bias is None:
        return keep
    if keep is None:
        return bias
    return F.where(keep, bias, float("-inf"))
