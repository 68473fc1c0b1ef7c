"""Multi-head attention (docs/nn.md#multi-head-attention).

Shape letters, fixed across tinyattn: B batch, S_q query length, S_k key length, D = d_model,
h = num_heads, d_k = D / h (width of one head). The module

    1. projects:     q = query W_q^T + b_q,  k = key W_k^T + b_k,  v = value W_v^T + b_v
    2. splits heads: (B, S, D) -> (B, S, h, d_k) -> (B, h, S, d_k)
    3. attends:      softmax(q k^T / sqrt(d_k) + bias, masked) v per head (one fused op)
    4. merges heads: (B, h, S_q, d_k) -> (B, S_q, h, d_k) -> (B, S_q, D), then W_o.

``MultiHeadAttention`` (tinyattn's: batch-first, q/k/v kept apart, RoPE, ALiBi, grouped-query
heads, a KV cache) takes PyTorch's forward arguments with PyTorch's meaning (key_padding_mask
and attn_mask: True = NOT allowed; returns (output, weights)) plus ``mask=`` with True = MAY
attend. ``MultiheadAttention`` (nn/torch_mha.py) is PyTorch's module itself. A query whose
keys are all masked gets zeros (and zero gradients) in both; PyTorch gives NaN there with
need_weights=True and on its inference fast path.
"""
from __future__ import annotations

import math
from typing import Any, List, Optional, Tuple

import numpy as np

from ..precision import get_default_dtype

from .. import backend
from .. import functional as F
from ..autograd import is_grad_enabled
from ..ops import cat
from ..ops.attention import packed_rows, packed_self_attention
from ..ops.masking import mask_array
from ..tensor import Tensor, as_tensor
from .layers import Linear, uniform_parameter
from .module import Module, Parameter
from .attention_variants import (VARIANTS, check_variant_call, make_variant_state,
                                 variant_attention)
from .positional import RotaryEmbedding
from ..precision import is_floating

__all__ = ["MultiHeadAttention", "KVCache"]

_IMPLS = ("plain", "tiled", "composed") + VARIANTS
_REMOVED: Any = object()     # marks a keyword that was removed (to explain what replaces it)


class KVCache:
    """The keys and values (B, h, S_cached, d_k) one attention layer has seen so far.

    Used for generation: each step feeds only the new tokens, and attention reads the cached
    keys and values of the earlier ones instead of recomputing them. Keys are cached after
    RoPE, so a key keeps the rotation of its own position.

    Without gradients (generation runs under ``no_grad``) the keys and values are written
    into preallocated (B, h, capacity, d_k) buffers, and ``k``/``v`` are views of their first
    ``length`` positions: a step copies only its own new keys, not the whole cache. The
    buffers hold ``capacity`` positions (``GPT.generate`` passes what it needs) and double
    when full. When the new keys need gradients, they are concatenated instead (``cat``),
    so the backward reaches every step.
    """

    def __init__(self, capacity: Optional[int] = None) -> None:
        if capacity is not None and (isinstance(capacity, bool) or not isinstance(capacity, int)
                                     or capacity < 1):
            raise ValueError(f"KVCache: capacity must be a positive int (or None), got "
                             f"{capacity!r}")
        self.capacity = capacity
        self.k: Optional[Tensor] = None
        self.v: Optional[Tensor] = None
        self._buffers: Optional[Tuple[Any, Any]] = None      # (B, h, capacity, d_k) each

    @property
    def length(self) -> int:
        return 0 if self.k is None else self.k.shape[-2]

    def reset(self) -> None:
        self.k = self.v = None
        self._buffers = None

    def append(self, k: Tensor, v: Tensor) -> Tuple[Tensor, Tensor]:
        """Add the new keys and values (B, h, S, d_k); return all of them."""
        if is_grad_enabled() and (k.requires_grad or v.requires_grad):
            self._buffers = None
            if self.k is not None:
                k = cat([self.k, k], dim=2)     # (B, h, S_cached, d_k) + (B, h, S, d_k)
                v = cat([self.v, v], dim=2)
            self.k, self.v = k, v
            return k, v
        if self.k is not None and (k.shape[:2] != self.k.shape[:2] or k.shape[3] != self.k.shape[3]
                                   or k.dtype != self.k.dtype):
            raise ValueError(f"KVCache: new keys {k.shape} {k.dtype} do not match the cached "
                             f"{self.k.shape} {self.k.dtype}; reset() the cache for a new batch")
        start, stop = self.length, self.length + k.shape[2]
        buffers = self._buffers
        if buffers is None or buffers[0].shape[2] < stop:
            buffers = self._grow(k, v, stop)
        for buffer, new in zip(buffers, (k, v)):
            buffer[:, :, start:stop] = new._data               # (B, h, S, d_k) into place
        self.k = Tensor._wrap(buffers[0][:, :, :stop])        # views, (B, h, stop, d_k)
        self.v = Tensor._wrap(buffers[1][:, :, :stop])
        return self.k, self.v

    def _grow(self, k: Tensor, v: Tensor, needed: int) -> Tuple[Any, Any]:
        """New buffers for at least ``needed`` positions, holding what is cached so far."""
        xp = backend.get_array_module(k._data)
        old = self._buffers
        size = max(needed, self.capacity or 0, 2 * old[0].shape[2] if old else 0)
        made = []
        for new, cached in zip((k, v), (self.k, self.v)):
            batch, heads, _, width = new.shape
            buffer = xp.empty((batch, heads, size, width), dtype=new.dtype)
            if cached is not None:
                buffer[:, :, :cached.shape[2]] = cached._data
            made.append(buffer)
        self._buffers = (made[0], made[1])
        return self._buffers


class MultiHeadAttention(Module):
    """Multi-head scaled dot-product attention with separate q/k/v/out projections:
    tinyattn's own module, batch-first, with RoPE, ALiBi biases, grouped-query heads, a KV
    cache and the tiled kernel. For PyTorch's exact interface (sequence-first by default,
    packed ``in_proj_weight``) use ``nn.MultiheadAttention``.

    Args:
        d_model: D, the width of queries and of the output; must be divisible by num_heads.
        num_heads: h, the query heads.
        dropout: probability of zeroing an attention weight while training.
        bias: whether the four projections have biases.
        kdim, vdim: feature sizes of key and value inputs (default D), for cross-attention.
        num_kv_heads: h_kv key/value heads shared by groups of h / h_kv query heads
            (grouped-query attention; 1 is multi-query attention; default h).
        rope: rotate q and k by their positions (RoPE) after the head split.
        attn_impl: "plain" (default), "tiled" (memory linear in S; no dropout; weights are
            never formed) or "composed" (separate ops, each in the graph): the ``impl`` of
            ``F.scaled_dot_product_attention``; or, for long sequences
            (docs/long_sequences.md), "local" (``F.local_attention`` with ``window``),
            "performer" (``F.performer_attention`` with ``num_features`` features drawn once,
            kept as the buffer ``performer_projection``) or "linformer" (keys and values
            projected from ``seq_len`` to ``linformer_k`` positions; never causal). These
            three take no masks, biases, dropout or KV cache.
        block_size: the tile size for attn_impl="tiled".
        scale: the factor on q . k (default None: 1 / sqrt(d_k), as
            ``F.scaled_dot_product_attention``'s ``scale``; examples/scaling_experiment.py
            trains with 1.0 to see what the 1 / sqrt(d_k) buys).
        device, dtype: where and in which dtype to make the parameters (as PyTorch's).

    Initialisation (as PyTorch's): q/k/v weights Xavier-uniform, U(-a, a). PyTorch draws
    them as one packed (3D, D) matrix when kdim = vdim = D, so a = sqrt(6 / (D + 3D)); with
    other kdim/vdim each projection is its own matrix, a = sqrt(6 / (fan_in + D)).
    out_proj weight U(-1/sqrt(D), 1/sqrt(D)); biases 0.
    """

    def __init__(self, d_model: int, num_heads: int, dropout: float = 0.0, bias: bool = True,
                 kdim: Optional[int] = None, vdim: Optional[int] = None, *,
                 num_kv_heads: Optional[int] = None, rope: bool = False,
                 rope_base: float = 10000.0, attn_impl: str = "plain", block_size: int = 64,
                 window: int = 64, num_features: int = 64, seq_len: Optional[int] = None,
                 linformer_k: int = 32, scale: Optional[float] = None,
                 device: Optional[str] = None, dtype: Any = None):
        num_kv_heads = num_heads if num_kv_heads is None else num_kv_heads
        for name, value in (("d_model", d_model), ("num_heads", num_heads),
                            ("num_kv_heads", num_kv_heads)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"MultiHeadAttention: {name} must be a positive int, got "
                                 f"{value!r}")
        if d_model % num_heads != 0:
            raise ValueError(f"MultiHeadAttention: d_model={d_model} is not divisible by "
                             f"num_heads={num_heads}; each head gets d_model / num_heads "
                             f"features, so choose num_heads dividing d_model")
        if num_heads % num_kv_heads != 0:
            raise ValueError(f"MultiHeadAttention: num_heads={num_heads} is not a multiple of "
                             f"num_kv_heads={num_kv_heads}; each key/value head serves an "
                             f"equal group of query heads")
        if not 0.0 <= dropout <= 1.0:
            raise ValueError(f"MultiHeadAttention: dropout must be in [0, 1], got {dropout}")
        if attn_impl not in _IMPLS:
            raise ValueError(f"MultiHeadAttention: attn_impl must be one of {_IMPLS}, got "
                             f"{attn_impl!r}")
        self.d_model, self.num_heads, self.head_dim = d_model, num_heads, d_model // num_heads
        self.num_kv_heads = num_kv_heads
        self.kdim = d_model if kdim is None else kdim
        self.vdim = d_model if vdim is None else vdim
        self.dropout, self.attn_impl, self.block_size = dropout, attn_impl, block_size
        if scale is not None and (isinstance(scale, bool) or not isinstance(
                scale, (int, float)) or not math.isfinite(scale) or scale <= 0):
            raise ValueError(f"MultiHeadAttention: scale must be a positive number (or None "
                             f"for 1 / sqrt(d_k)), got {scale!r}")
        self.scale = None if scale is None else float(scale)
        kv_width = num_kv_heads * self.head_dim
        packed = self.kdim == d_model and self.vdim == d_model and kv_width == d_model
        fan_out = 3 * d_model if packed else d_model     # torch's in_proj_weight is (3D, D)
        self.q_proj = _xavier_linear(d_model, d_model, bias, fan_out)
        self.k_proj = _xavier_linear(self.kdim, kv_width, bias, fan_out)
        self.v_proj = _xavier_linear(self.vdim, kv_width, bias, fan_out)
        if packed:
            self._pack_projections()
        self.out_proj = Linear(d_model, d_model, bias=bias)
        if bias:
            self.out_proj.bias = Parameter(np.zeros(d_model, dtype=get_default_dtype()))
        self.rotary = RotaryEmbedding(self.head_dim, rope_base) if rope else None
        make_variant_state(self, window=window, num_features=num_features, seq_len=seq_len,
                           linformer_k=linformer_k)
        if device is not None or dtype is not None:
            self.to(device=device, dtype=dtype)

    def extra_repr(self) -> str:
        extra = ", rope=True" if self.rotary is not None else ""
        if self.num_kv_heads != self.num_heads:
            extra += f", num_kv_heads={self.num_kv_heads}"
        return (f"d_model={self.d_model}, num_heads={self.num_heads}, dropout={self.dropout}"
                f"{extra}, attn_impl={self.attn_impl!r}")

    # ------------------------------------------------------------------ forward
    def forward(self, query: Tensor, key: Optional[Tensor] = None,
                value: Optional[Tensor] = None, key_padding_mask: Any = None,
                need_weights: bool = True, attn_mask: Any = None,
                average_attn_weights: bool = True, is_causal: bool = False, *,
                mask: Any = None, attn_bias: Any = None, kv_cache: Optional[KVCache] = None,
                padding_mask: Any = _REMOVED) -> Tuple[Tensor, Optional[Tensor]]:
        """Attend from ``query`` (B, S_q, D) to ``key`` (B, S_k, kdim) / ``value``
        (B, S_k, vdim); self-attention when both are omitted (value defaults to key).
        Returns ``(output (B, S_q, D), weights or None)``, as PyTorch's MultiheadAttention.

        The arguments PyTorch's ``nn.MultiheadAttention.forward`` has mean what they mean
        there (batch-first):
        key_padding_mask: (B, S_k), bool with True = padding (ignored), or float added.
        need_weights: also return the attention weights, detached, before dropout: averaged
            over heads (B, S_q, S_k) when ``average_attn_weights``, else (B, h, S_q, S_k).
        attn_mask: bool with True = NOT allowed, or float added to the scores; (S_q, S_k) or
            (B * h, S_q, S_k).
        is_causal: query i sees keys up to its own position; the last query is aligned with
            the last key, so this also holds after S_k - S_q cached tokens (PyTorch treats
            it as a hint that needs attn_mask too; here it applies the causal mask itself).
        tinyattn's additions (keyword-only):
        mask: bool, broadcastable to (B, h, S_q, S_k), True = MAY attend (the polarity of
            ``F.scaled_dot_product_attention``'s attn_mask, the opposite of attn_mask here).
        attn_bias: float, broadcastable to (B, h, S_q, S_k), added to the scaled scores
            (ALiBi); plain path only.
        kv_cache: a ``KVCache`` to read earlier keys/values from and append to
            (self-attention only; for generation).
        A query whose keys are all masked gets zeros (and zero gradients).
        """
        if padding_mask is not _REMOVED:
            raise TypeError("MultiHeadAttention: padding_mask= was removed: it meant True = "
                            "real token, the opposite of PyTorch's key_padding_mask (True = "
                            "padding). Pass key_padding_mask=~padding_mask")
        if key is None and value is not None:
            raise ValueError("MultiHeadAttention: value was given without key; pass both "
                             "(cross-attention) or neither (self-attention)")
        if kv_cache is not None and key is not None:
            raise ValueError("MultiHeadAttention: kv_cache works for self-attention only; "
                             "call it without key and value")
        self_attention = key is None or (key is query and (value is None or value is query))
        key = query if key is None else key
        value = key if value is None else value
        batch, s_q = self._check_inputs(query, key, value)
        if attn_bias is not None and self.attn_impl != "plain":
            raise ValueError(f"MultiHeadAttention: attn_bias (ALiBi) needs attn_impl='plain', "
                             f"got attn_impl={self.attn_impl!r}; the tiled kernel takes no "
                             f"additive bias")
        if self.attn_impl in VARIANTS:
            check_variant_call(self, self_attention, mask, attn_mask,
                               key_padding_mask, kv_cache, is_causal)
            q, k, v = self._separate_qkv(query, key, value, None)
            out, weights = variant_attention(self, q, k, v, bool(is_causal), need_weights)
            out = out.transpose(1, 2)                        # (B, h, S_q, d_k) -> (B, S_q, h, d_k)
            out = self.out_proj(out.reshape(batch, s_q, self.d_model))   # -> (B, S_q, D)
            if weights is not None and average_attn_weights:
                weights = weights.mean(dim=1)                # (B, h, S_q, S_k) -> (B, S_q, S_k)
            return out, weights
        impl = "plain" if need_weights else self.attn_impl
        s_k = key.shape[1] + (0 if kv_cache is None else kv_cache.length)
        expected = (batch, self.num_heads, s_q, s_k)
        keep, bias = self._masks(query, mask, attn_mask, key_padding_mask, attn_bias,
                                 expected)
        # A square causal mask with nothing else can go to the fused op as is_causal (the
        # tiled path then skips whole tiles above the diagonal); otherwise build it here.
        # A single query, aligned with the last key (a decoding step), sees every key: the
        # causal mask is all True and is skipped.
        causal_flag = bool(is_causal) and s_q == s_k and keep is None and bias is None
        if is_causal and not causal_flag and s_q != 1:
            xp = backend.get_array_module(query._data)
            causal = xp.tri(s_q, s_k, k=s_k - s_q, dtype=bool)         # (S_q, S_k)
            keep = causal if keep is None else keep & causal
        if bias is not None and keep is not None:                    # one float mask
            xp = backend.get_array_module(query._data)
            bias = F.where(xp.broadcast_to(keep, expected), bias, float("-inf"))
            keep = None
        p = self.dropout if self.training else 0.0
        # Plain self-attention projects q, k, v with one packed matmul and keeps them stacked
        # in one tensor; RoPE, a KV cache, grouped heads and biases need them apart.
        packed = (self_attention and kv_cache is None and self.rotary is None and bias is None
                  and impl == "plain" and self._biases_match()
                  and self.num_kv_heads == self.num_heads)
        if packed:
            result = packed_self_attention(self._packed_qkv(query), mask=keep, dropout_p=p,
                                           is_causal=causal_flag, scale=self.scale,
                                           need_weights=need_weights)
        else:
            q, k, v = self._separate_qkv(query, key, value, kv_cache)
            extra = {} if impl == "plain" else {"impl": impl, "block_size": self.block_size}
            result = F.scaled_dot_product_attention(
                q, k, v, keep if bias is None else bias, dropout_p=p, is_causal=causal_flag,
                scale=self.scale, enable_gqa=self.num_kv_heads != self.num_heads,
                need_weights=need_weights, **extra)
        out, weights = result if need_weights else (result, None)
        out = out.transpose(1, 2)                            # (B, h, S_q, d_k) -> (B, S_q, h, d_k)
        out = self.out_proj(out.reshape(batch, s_q, self.d_model))   # -> (B, S_q, D)
        if weights is not None and average_attn_weights:
            weights = weights.mean(dim=1)                    # (B, h, S_q, S_k) -> (B, S_q, S_k)
        return out, weights

    def _masks(self, query: Tensor, mask: Any, attn_mask: Any, key_padding_mask: Any,
               attn_bias: Any, expected: Tuple[int, ...]) -> Tuple[Any, Optional[Tensor]]:
        """All masks as (boolean keep-mask broadcastable to ``expected`` or None, additive
        float bias Tensor or None)."""
        batch, h, s_q, s_k = expected
        keeps: List[Any] = []
        biases: List[Tensor] = []
        if mask is not None:
            keeps.append(_bool_array(mask, "mask", expected, query.device))
        if attn_mask is not None:
            data = attn_mask._data if isinstance(attn_mask, Tensor) else attn_mask
            if getattr(data, "ndim", 2) == 3:                 # (B * h, S_q, S_k), torch's
                if tuple(data.shape) != (batch * h, s_q, s_k):
                    raise ValueError(f"MultiHeadAttention: a 3-D attn_mask must be (B * "
                                     f"num_heads, S_q, S_k) = {(batch * h, s_q, s_k)}, got "
                                     f"{tuple(data.shape)}")
                attn_mask = as_tensor(data).reshape(batch, h, s_q, s_k)
            self._torch_mask(attn_mask, "attn_mask", (s_q, s_k) if getattr(
                data, "ndim", 2) == 2 else expected, query, keeps, biases, lambda m: m)
        if key_padding_mask is not None:
            self._torch_mask(key_padding_mask, "key_padding_mask", (batch, s_k), query, keeps,
                             biases, lambda m: m[:, None, None, :])   # (B, S_k) -> (B,1,1,S_k)
        if attn_bias is not None:
            biases.append(self._check_bias(attn_bias, expected, query))
        keep = None
        for m in keeps:
            keep = m if keep is None else keep & m
        bias = None
        for b in biases:
            bias = b if bias is None else bias + b
        return keep, bias

    @staticmethod
    def _torch_mask(value: Any, what: str, shape: Tuple[int, ...], query: Tensor,
                    keeps: List[Any], biases: List[Tensor], place: Any) -> None:
        """One PyTorch-convention mask: bool True = NOT allowed (kept as its negation), or
        float, added to the scores."""
        data = value._data if isinstance(value, Tensor) else value
        if not hasattr(data, "dtype"):
            data = np.asarray(data)
        if data.dtype == np.bool_:
            checked = mask_array(data, "MultiHeadAttention", shape, query.device, what=what,
                                 layout="", exact=True)
            keeps.append(place(~checked))
            return
        if not is_floating(data.dtype):
            raise TypeError(f"MultiHeadAttention: {what} must be boolean (True = not allowed, "
                            f"as in PyTorch) or floating (added to the scores), got dtype "
                            f"{data.dtype}")
        if tuple(data.shape) != tuple(shape):
            raise ValueError(f"MultiHeadAttention: {what} of shape {tuple(data.shape)} does "
                             f"not match the expected shape {tuple(shape)}")
        bias = value if isinstance(value, Tensor) else as_tensor(data)
        if bias.dtype != query.dtype:
            bias = bias.to(query.dtype)
        biases.append(place(bias))

    def _packed_qkv(self, x: Tensor) -> Tensor:
        """q, k, v for self-attention from one matmul: x (B, S, D) @ [W_q; W_k; W_v]^T.

        The weights stay three Parameters (state dicts, torch parity), made in ``__init__`` as
        row blocks of one (3D, D) array (``_share_one_array``), so stacking them by rows is
        that array, not a copy (``packed_rows``; after ``.to()`` or a reassigned weight they
        are stacked by ``cat``). One (B*S, D) @ (D, 3D) product is faster than three
        (B*S, D) @ (D, D) ones, and gives x's gradient whole instead of in three parts.
        """
        batch, s, _ = x.shape
        projections = (self.q_proj, self.k_proj, self.v_proj)
        weight = packed_rows([m.weight for m in projections])         # 3 x (D, D) -> (3D, D)
        bias = None
        if self.q_proj.bias is not None:
            bias = packed_rows([m.bias for m in projections])         # 3 x (D,) -> (3D,)
        qkv = F.linear(x, weight, bias)                               # (B, S, D) -> (B, S, 3D)
        qkv = qkv.reshape(batch, s, 3, self.num_heads, self.head_dim)  # -> (B, S, 3, h, d_k)
        return qkv.permute(2, 0, 3, 1, 4)                             # -> (3, B, h, S, d_k)

    def _pack_projections(self) -> None:
        """Make W_q, W_k, W_v (and their biases) row blocks of one array, values unchanged,
        so that the packed projection reads them without a copy (``_packed_qkv``). Called by
        ``__init__`` and by models that assign new weights after it (``GPT``)."""
        if self.kdim == self.vdim == self.d_model and self.num_kv_heads == self.num_heads \
                and self._biases_match():
            _share_one_array((self.q_proj, self.k_proj, self.v_proj))

    def _biases_match(self) -> bool:
        """All three of q/k/v_proj have a bias, or none has (then their rows can be packed),
        and all are float ``Linear`` layers (a quantized one multiplies its own way)."""
        projections = (self.q_proj, self.k_proj, self.v_proj)
        if not all(isinstance(m, Linear) for m in projections):
            return False
        return len({m.bias is None for m in projections}) == 1

    def _separate_qkv(self, query: Tensor, key: Tensor, value: Tensor,
                      kv_cache: Optional[KVCache]) -> Tuple[Tensor, Tensor, Tensor]:
        """Three projections, heads split, RoPE applied, the KV cache read and extended:
        q (B, h, S_q, d_k), k and v (B, h_kv, S_k, d_k)."""
        batch, s_q = query.shape[:2]
        h, h_kv, d_k = self.num_heads, self.num_kv_heads, self.head_dim
        q = self.q_proj(query).reshape(batch, s_q, h, d_k)   # (B, S_q, D) -> (B, S_q, h, d_k)
        q = q.transpose(1, 2)                                # -> (B, h, S_q, d_k)
        s_new = key.shape[1]
        k = self.k_proj(key).reshape(batch, s_new, h_kv, d_k)  # (B, S_k, h_kv * d_k) -> 4-D
        k = k.transpose(1, 2)                                # -> (B, h_kv, S_k, d_k)
        v = self.v_proj(value).reshape(batch, s_new, h_kv, d_k)
        v = v.transpose(1, 2)                                # -> (B, h_kv, S_k, d_k)

        offset = 0 if kv_cache is None else kv_cache.length
        if self.rotary is not None:
            q, k = self.rotary(q, offset), self.rotary(k, offset)
        if kv_cache is not None:
            k, v = kv_cache.append(k, v)                     # (B, h_kv, offset + S, d_k)
        return q, k, v

    # ------------------------------------------------------------------ checks
    def _check_inputs(self, query: Tensor, key: Tensor, value: Tensor) -> Tuple[int, int]:
        name = "MultiHeadAttention"
        for label, x, width, arg in (("query", query, self.d_model, "d_model"),
                                     ("key", key, self.kdim, "kdim"),
                                     ("value", value, self.vdim, "vdim")):
            if not isinstance(x, Tensor):
                raise TypeError(f"{name}: {label} must be a Tensor, got {type(x).__name__}")
            if x.ndim != 3:
                raise ValueError(f"{name}: {label} must be (B, S, features), got shape "
                                 f"{x.shape}")
            if x.shape[-1] != width:
                raise ValueError(f"{name}: {label} has {x.shape[-1]} features (shape "
                                 f"{x.shape}) but the module was built with {arg}={width}; "
                                 f"pass {arg}={x.shape[-1]} or project the input first")
        if not query.shape[0] == key.shape[0] == value.shape[0]:
            raise ValueError(f"{name}: batch sizes differ: query {query.shape}, key "
                             f"{key.shape}, value {value.shape}")
        if key.shape[1] != value.shape[1]:
            raise ValueError(f"{name}: key has S_k={key.shape[1]} positions but value has "
                             f"{value.shape[1]} (shapes {key.shape} and {value.shape})")
        return query.shape[0], query.shape[1]

    @staticmethod
    def _check_bias(bias: Any, expected: Tuple[int, ...], q: Tensor) -> Tensor:
        bias = bias if isinstance(bias, Tensor) else as_tensor(bias, dtype=q.dtype)
        if bias.dtype != q.dtype:
            raise TypeError(f"MultiHeadAttention: attn_bias is {bias.dtype} but the queries are "
                            f"{q.dtype}; build the bias in the model's dtype")
        try:
            shape = np.broadcast_shapes(bias.shape, expected)
        except ValueError:
            shape = None
        if shape != expected:
            raise ValueError(f"MultiHeadAttention: attn_bias of shape {bias.shape} does not "
                             f"broadcast to (B, num_heads, S_q, S_k) = {expected}")
        return bias


def _bool_array(mask: Any, what: str, expected: Tuple[int, ...], device: str,
                exact: bool = False) -> Any:
    """A boolean mask's array, checked (by ops.masking.mask_array) to broadcast to, or with
    ``exact`` to equal, ``expected``."""
    layout = "(B, S_k)" if exact else "(B, num_heads, S_q, S_k)"
    return mask_array(mask, "MultiHeadAttention", expected, device, what=what, layout=layout,
                      exact=exact)


def _share_one_array(projections: Tuple[Linear, ...]) -> None:
    """Give the projections' weights (and biases) the same values as row blocks of one
    array, so that the packed projection reads them without stacking a copy each call."""
    for name in ("weight", "bias"):
        params = [getattr(m, name) for m in projections]
        if any(p is None for p in params):
            continue
        whole = np.concatenate([p._data for p in params])            # (3D, D) or (3D,)
        start = 0
        for m, p in zip(projections, params):
            setattr(m, name, Parameter(whole[start:start + p.shape[0]]))   # a view of whole
            start += p.shape[0]


def _xavier_linear(in_features: int, out_features: int, bias: bool, fan_out: int) -> Linear:
    layer = Linear(in_features, out_features, bias=bias)
    layer.weight = uniform_parameter((out_features, in_features),
                                     math.sqrt(6.0 / (in_features + fan_out)))
    if bias:
        layer.bias = Parameter(np.zeros(out_features, dtype=get_default_dtype()))
    return layer
