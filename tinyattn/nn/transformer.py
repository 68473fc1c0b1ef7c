"""Transformer layers and stacks with PyTorch's signatures (docs/nn.md#transformer-layers).

``TransformerEncoderLayer``, ``TransformerDecoderLayer``, ``TransformerEncoder``,
``TransformerDecoder`` and ``Transformer`` take PyTorch's arguments with PyTorch's meaning:
``d_model, nhead, dim_feedforward=2048, dropout=0.1, activation="relu", layer_norm_eps=1e-5,
batch_first=False, norm_first=False, bias=True``; inputs are (S, N, E) unless
``batch_first=True``; masks are PyTorch's (``src_mask``/``tgt_mask``/``memory_mask``: bool
True = NOT allowed, or float added; ``*_key_padding_mask``: (N, S), True = padding). The
attention inside is ``nn.MultiheadAttention`` and every sub-module has PyTorch's name
(``self_attn``, ``multihead_attn``, ``linear1``, ``linear2``, ``norm1``.., ``layers.0``..), so
``load_state_dict(torch_model.state_dict())`` works as is.

Post-LN (``norm_first=False``, the original paper):   x = norm(x + sublayer(x))
Pre-LN  (``norm_first=True``, GPT-2 and most modern models): x = x + sublayer(norm(x))
Pre-LN keeps an identity path from the output back to the input, which trains deep stacks
without warm-up tricks; post-LN normalises the residual stream itself.

Shapes below: S source length, T target length, N batch, E = d_model.
"""
from __future__ import annotations

import copy
import math
import warnings
from typing import Any, Callable, Optional, Union

import numpy as np

from ..precision import get_default_dtype

from .. import functional as F
from ..autograd import is_grad_enabled, no_grad
from ..tensor import Tensor, as_tensor
from .layers import Dropout, LayerNorm, Linear
from .containers import ModuleList
from .module import Module
from .torch_mha import MultiheadAttention

__all__ = ["TransformerEncoderLayer", "TransformerDecoderLayer", "TransformerEncoder",
           "TransformerDecoder", "Transformer"]

_ACTIVATIONS = {"relu": F.relu, "gelu": F.gelu}


def _activation(activation: Union[str, Callable[[Tensor], Tensor]]) -> Callable:
    if callable(activation):
        return activation
    if activation not in _ACTIVATIONS:
        raise ValueError(f"activation must be 'relu', 'gelu' or a callable, got {activation!r}")
    return _ACTIVATIONS[activation]


def _refuse_old_names(layer: str, options: dict) -> None:
    """tinyattn's earlier names, explained (they meant something else)."""
    hints = {"num_heads": "nhead", "src_padding_mask": "src_key_padding_mask (True = padding, "
             "the opposite of the old src_padding_mask: pass ~mask)",
             "tgt_padding_mask": "tgt_key_padding_mask (True = padding: pass ~mask)",
             "memory_padding_mask": "memory_key_padding_mask (True = padding: pass ~mask)"}
    for name in options:
        hint = hints.get(name)
        raise TypeError(f"{layer}: unexpected argument {name!r}" +
                        (f"; tinyattn now uses PyTorch's name {hint}" if hint else ""))


def _is_unbatched(layer: str, x: Tensor) -> bool:
    """True for an unbatched (S, E) input, which PyTorch's layers accept as well; it must not
    go through the (S, N, E) transpose, which would read it as (E, S)."""
    if x.ndim not in (2, 3):
        raise ValueError(f"{layer}: expected a batched 3-D input ((S, N, E), or (N, S, E) with "
                         f"batch_first=True) or an unbatched 2-D (S, E) one, got shape "
                         f"{x.shape}")
    return x.ndim == 2


def _batch_first(x: Tensor, batch_first: bool) -> Tensor:
    """(S, N, E) -> (N, S, E) unless already batch-first; (S, E) -> (1, S, E)."""
    if x.ndim == 2:
        return x.unsqueeze(0)
    return x if batch_first else x.transpose(0, 1)


def _restore_layout(x: Tensor, batch_first: bool, unbatched: bool) -> Tensor:
    """The inverse of ``_batch_first``: (N, S, E) back to the caller's layout."""
    if unbatched:
        return x.squeeze(0)
    return x if batch_first else x.transpose(0, 1)


def _padding_of_one(key_padding_mask: Any) -> Any:
    """An unbatched (S,) key_padding_mask as the (1, S) mask of a batch of one."""
    if key_padding_mask is None:
        return None
    mask = as_tensor(key_padding_mask)
    return mask.unsqueeze(0) if mask.ndim == 1 else mask


def _causal_float_mask(size: int, like: Tensor) -> Tensor:
    return Transformer.generate_square_subsequent_mask(size, dtype=like.dtype,
                                                       device=like.device)


class _FeedForwardMixin:
    """The position-wise MLP with PyTorch's attribute names, shared by both layers."""

    def _build_ff(self, d_model: int, dim_feedforward: int, dropout: float,
                  activation: Any, bias: bool) -> None:
        self.linear1 = Linear(d_model, dim_feedforward, bias=bias)
        self.activation = _activation(activation)
        self.dropout = Dropout(dropout)
        self.linear2 = Linear(dim_feedforward, d_model, bias=bias)

    def _ff(self, x: Tensor) -> Tensor:
        return self.linear2(self.dropout(self.activation(self.linear1(x))))  # E -> d_ff -> E


class TransformerEncoderLayer(_FeedForwardMixin, Module):
    """Self-attention then feed-forward, each with a residual connection and LayerNorm
    (``torch.nn.TransformerEncoderLayer``)."""

    def __init__(self, d_model: int, nhead: int, dim_feedforward: int = 2048,
                 dropout: float = 0.1, activation: Any = "relu", layer_norm_eps: float = 1e-5,
                 batch_first: bool = False, norm_first: bool = False, bias: bool = True,
                 device: Optional[str] = None, dtype: Any = None, **old: Any):
        _refuse_old_names("TransformerEncoderLayer", old)
        self.norm_first, self.batch_first = norm_first, batch_first
        self.self_attn = MultiheadAttention(d_model, nhead, dropout=dropout, bias=bias,
                                            batch_first=True)
        self._build_ff(d_model, dim_feedforward, dropout, activation, bias)
        self.norm1 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias)
        self.norm2 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias)
        self.dropout1 = Dropout(dropout)
        self.dropout2 = Dropout(dropout)
        if device is not None or dtype is not None:
            self.to(device=device, dtype=dtype)

    def forward(self, src: Tensor, src_mask: Any = None, src_key_padding_mask: Any = None,
                is_causal: bool = False, **old: Any) -> Tensor:
        """src (S, N, E), or (N, S, E) with batch_first -> the same shape."""
        _refuse_old_names("TransformerEncoderLayer.forward", old)
        unbatched = _is_unbatched("TransformerEncoderLayer", src)
        if unbatched:                                            # (S, E) -> (1, S, E)
            src_key_padding_mask = _padding_of_one(src_key_padding_mask)
        x = _batch_first(src, self.batch_first)                  # -> (N, S, E)
        x = self._encode(x, src_mask, src_key_padding_mask, is_causal)
        return _restore_layout(x, self.batch_first, unbatched)

    def _encode(self, x: Tensor, mask: Any, key_padding_mask: Any, is_causal: bool) -> Tensor:
        """Batch-first (N, S, E) in and out."""
        if is_causal and mask is None:
            mask = _causal_float_mask(x.shape[1], x)

        def attend(y: Tensor) -> Tensor:
            out, _ = self.self_attn(y, y, y, key_padding_mask=key_padding_mask,
                                    need_weights=False, attn_mask=mask)
            return self.dropout1(out)

        if self.norm_first:
            x = x + attend(self.norm1(x))
            return x + self.dropout2(self._ff(self.norm2(x)))
        x = self.norm1(x + attend(x))
        return self.norm2(x + self.dropout2(self._ff(x)))


class TransformerDecoderLayer(_FeedForwardMixin, Module):
    """Self-attention, cross-attention to ``memory`` (the encoder output), then feed-forward,
    each with a residual connection and LayerNorm (``torch.nn.TransformerDecoderLayer``).
    As in PyTorch, the target is causal only if ``tgt_mask`` says so (``tgt_is_causal`` is a
    hint; given alone, it applies the causal mask)."""

    def __init__(self, d_model: int, nhead: int, dim_feedforward: int = 2048,
                 dropout: float = 0.1, activation: Any = "relu", layer_norm_eps: float = 1e-5,
                 batch_first: bool = False, norm_first: bool = False, bias: bool = True,
                 device: Optional[str] = None, dtype: Any = None, **old: Any):
        _refuse_old_names("TransformerDecoderLayer", old)
        self.norm_first, self.batch_first = norm_first, batch_first
        self.self_attn = MultiheadAttention(d_model, nhead, dropout=dropout, bias=bias,
                                            batch_first=True)
        self.multihead_attn = MultiheadAttention(d_model, nhead, dropout=dropout, bias=bias,
                                                 batch_first=True)
        self._build_ff(d_model, dim_feedforward, dropout, activation, bias)
        self.norm1 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias)
        self.norm2 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias)
        self.norm3 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias)
        self.dropout1 = Dropout(dropout)
        self.dropout2 = Dropout(dropout)
        self.dropout3 = Dropout(dropout)
        if device is not None or dtype is not None:
            self.to(device=device, dtype=dtype)

    def forward(self, tgt: Tensor, memory: Tensor, tgt_mask: Any = None,
                memory_mask: Any = None, tgt_key_padding_mask: Any = None,
                memory_key_padding_mask: Any = None, tgt_is_causal: bool = False,
                memory_is_causal: bool = False, **old: Any) -> Tensor:
        """tgt (T, N, E), memory (S, N, E) (batch-first: (N, T, E), (N, S, E)) -> like tgt."""
        _refuse_old_names("TransformerDecoderLayer.forward", old)
        unbatched = _is_unbatched("TransformerDecoderLayer", tgt)
        if unbatched != _is_unbatched("TransformerDecoderLayer", memory):
            raise ValueError(f"TransformerDecoderLayer: tgt {tgt.shape} and memory "
                             f"{memory.shape} must both be batched (3-D) or both unbatched "
                             f"(2-D)")
        if unbatched:                                            # (T, E) -> (1, T, E)
            tgt_key_padding_mask = _padding_of_one(tgt_key_padding_mask)
            memory_key_padding_mask = _padding_of_one(memory_key_padding_mask)
        tgt, memory = _batch_first(tgt, self.batch_first), _batch_first(memory, self.batch_first)
        x = self._decode(tgt, memory, tgt_mask, memory_mask, tgt_key_padding_mask,
                         memory_key_padding_mask, tgt_is_causal, memory_is_causal)
        return _restore_layout(x, self.batch_first, unbatched)

    def _decode(self, x: Tensor, memory: Tensor, tgt_mask: Any, memory_mask: Any,
                tgt_key_padding_mask: Any, memory_key_padding_mask: Any, tgt_is_causal: bool,
                memory_is_causal: bool) -> Tensor:
        """Batch-first (N, T, E) and (N, S, E) in, (N, T, E) out."""
        if tgt_is_causal and tgt_mask is None:
            tgt_mask = _causal_float_mask(x.shape[1], x)
        if memory_is_causal and memory_mask is None:
            memory_mask = np.triu(np.ones((x.shape[1], memory.shape[1]), dtype=bool), k=1)

        def self_block(y: Tensor) -> Tensor:
            out, _ = self.self_attn(y, y, y, key_padding_mask=tgt_key_padding_mask,
                                    need_weights=False, attn_mask=tgt_mask)
            return self.dropout1(out)

        def cross_block(y: Tensor) -> Tensor:
            out, _ = self.multihead_attn(y, memory, memory,
                                         key_padding_mask=memory_key_padding_mask,
                                         need_weights=False, attn_mask=memory_mask)
            return self.dropout2(out)

        if self.norm_first:
            x = x + self_block(self.norm1(x))
            x = x + cross_block(self.norm2(x))
            return x + self.dropout3(self._ff(self.norm3(x)))
        x = self.norm1(x + self_block(x))
        x = self.norm2(x + cross_block(x))
        return self.norm3(x + self.dropout3(self._ff(x)))


def _why_not_nested(layer: Any) -> str:
    """The first reason torch gives for not using nested tensors, or ""."""
    if not isinstance(layer, TransformerEncoderLayer):
        return "encoder_layer was not TransformerEncoderLayer"
    if layer.norm_first:
        return "encoder_layer.norm_first was True"
    if not layer.batch_first:
        return ("encoder_layer.self_attn.batch_first was not True(use batch_first for better "
                "inference performance)")
    return ""


class TransformerEncoder(Module):
    """``num_layers`` deep copies of ``encoder_layer``, then an optional final ``norm``."""

    def __init__(self, encoder_layer: TransformerEncoderLayer, num_layers: int,
                 norm: Optional[Module] = None, enable_nested_tensor: bool = True,
                 mask_check: bool = True):
        self.layers = ModuleList([copy.deepcopy(encoder_layer) for _ in range(num_layers)])
        self.num_layers, self.norm = num_layers, norm
        self.enable_nested_tensor = bool(enable_nested_tensor)
        why = _why_not_nested(encoder_layer) if enable_nested_tensor else ""
        if why:                               # torch's notice, word for word
            warnings.warn(f"enable_nested_tensor is True, but self.use_nested_tensor is False "
                          f"because {why}", UserWarning, stacklevel=2)

    def forward(self, src: Tensor, mask: Any = None, src_key_padding_mask: Any = None,
                is_causal: Optional[bool] = None) -> Tensor:
        x = src
        for layer in self.layers:
            x = layer(x, src_mask=mask, src_key_padding_mask=src_key_padding_mask,
                      is_causal=bool(is_causal))
        if self._nested_fast_path(src, mask, src_key_padding_mask):
            padded = src_key_padding_mask != 0                      # (N, S) True: padding
            x = x.masked_fill(padded.reshape(padded.shape + (1,)), 0.0)
        return x if self.norm is None else self.norm(x)

    def _nested_fast_path(self, src: Tensor, mask: Any, padding: Any) -> bool:
        """Whether torch would take its nested-tensor fast path, which returns zeros at the
        padded positions (before the final norm): eval mode, no gradient recorded, a
        batch-first (N, S, E) input with a key padding mask and no attention mask,
        ``enable_nested_tensor`` and post-norm layers. Elsewhere torch (and tinyattn)
        computes values there, which nothing downstream should read."""
        first = self.layers[0] if len(self.layers) else None
        return (padding is not None and mask is None and not self.training
                and self.enable_nested_tensor and isinstance(padding, Tensor)
                and isinstance(first, TransformerEncoderLayer) and first.batch_first
                and not first.norm_first and src.ndim == 3
                and not (is_grad_enabled() and any(p.requires_grad for p in self.parameters())))


class TransformerDecoder(Module):
    """``num_layers`` deep copies of ``decoder_layer``, then an optional final ``norm``."""

    def __init__(self, decoder_layer: TransformerDecoderLayer, num_layers: int,
                 norm: Optional[Module] = None):
        self.layers = ModuleList([copy.deepcopy(decoder_layer) for _ in range(num_layers)])
        self.num_layers, self.norm = num_layers, norm

    def forward(self, tgt: Tensor, memory: Tensor, tgt_mask: Any = None,
                memory_mask: Any = None, tgt_key_padding_mask: Any = None,
                memory_key_padding_mask: Any = None, tgt_is_causal: Optional[bool] = None,
                memory_is_causal: bool = False) -> Tensor:
        x = tgt
        for layer in self.layers:
            x = layer(x, memory, tgt_mask=tgt_mask, memory_mask=memory_mask,
                      tgt_key_padding_mask=tgt_key_padding_mask,
                      memory_key_padding_mask=memory_key_padding_mask,
                      tgt_is_causal=bool(tgt_is_causal), memory_is_causal=memory_is_causal)
        return x if self.norm is None else self.norm(x)


class Transformer(Module):
    """``torch.nn.Transformer``: an encoder stack and a decoder stack, each with a final
    LayerNorm. ``forward(src, tgt, ...)`` returns the decoder output (like tgt)."""

    def __init__(self, d_model: int = 512, nhead: int = 8, num_encoder_layers: int = 6,
                 num_decoder_layers: int = 6, dim_feedforward: int = 2048,
                 dropout: float = 0.1, activation: Any = "relu",
                 custom_encoder: Optional[Module] = None,
                 custom_decoder: Optional[Module] = None, layer_norm_eps: float = 1e-5,
                 batch_first: bool = False, norm_first: bool = False, bias: bool = True,
                 device: Optional[str] = None, dtype: Any = None):
        options = dict(dim_feedforward=dim_feedforward, dropout=dropout, activation=activation,
                       layer_norm_eps=layer_norm_eps, batch_first=batch_first,
                       norm_first=norm_first, bias=bias)
        self.encoder = custom_encoder or TransformerEncoder(
            TransformerEncoderLayer(d_model, nhead, **options), num_encoder_layers,
            LayerNorm(d_model, eps=layer_norm_eps, bias=bias))
        self.decoder = custom_decoder or TransformerDecoder(
            TransformerDecoderLayer(d_model, nhead, **options), num_decoder_layers,
            LayerNorm(d_model, eps=layer_norm_eps, bias=bias))
        self.d_model, self.nhead, self.batch_first = d_model, nhead, batch_first
        self._reset_parameters()
        if device is not None or dtype is not None:
            self.to(device=device, dtype=dtype)

    def _reset_parameters(self) -> None:
        """Xavier-uniform for every weight matrix, as ``torch.nn.Transformer`` does when it
        is built: U(-a, a) with a = sqrt(3) * sqrt(2 / (fan_in + fan_out)), keeping the
        variance of activations and gradients alike across layers (Glorot and Bengio, 2010).
        Biases and LayerNorm parameters keep their own initialisation."""
        with no_grad():
            for p in self.parameters():
                if p.ndim > 1:
                    receptive = math.prod(p.shape[2:])
                    fan_in, fan_out = p.shape[1] * receptive, p.shape[0] * receptive
                    bound = math.sqrt(3.0) * math.sqrt(2.0 / float(fan_in + fan_out))
                    p.uniform_(-bound, bound)

    def forward(self, src: Tensor, tgt: Tensor, src_mask: Any = None, tgt_mask: Any = None,
                memory_mask: Any = None, src_key_padding_mask: Any = None,
                tgt_key_padding_mask: Any = None, memory_key_padding_mask: Any = None,
                src_is_causal: Optional[bool] = None, tgt_is_causal: Optional[bool] = None,
                memory_is_causal: bool = False) -> Tensor:
        batch_axis = 0 if self.batch_first else 1
        if src.ndim == 3 and tgt.ndim == 3 and src.shape[batch_axis] != tgt.shape[batch_axis]:
            raise RuntimeError(f"Transformer: the batch of src {src.shape} and tgt {tgt.shape} "
                               f"must be equal (batch axis {batch_axis}; batch_first="
                               f"{self.batch_first})")
        if src.shape[-1] != self.d_model or tgt.shape[-1] != self.d_model:
            raise RuntimeError(f"Transformer: the feature number of src and tgt must equal "
                               f"d_model={self.d_model}, got {src.shape} and {tgt.shape}")
        memory = self.encoder(src, mask=src_mask, src_key_padding_mask=src_key_padding_mask,
                              is_causal=src_is_causal)
        return self.decoder(tgt, memory, tgt_mask=tgt_mask, memory_mask=memory_mask,
                            tgt_key_padding_mask=tgt_key_padding_mask,
                            memory_key_padding_mask=memory_key_padding_mask,
                            tgt_is_causal=tgt_is_causal, memory_is_causal=memory_is_causal)

    @staticmethod
    def generate_square_subsequent_mask(sz: int, device: Optional[str] = None,
                                        dtype: Any = None) -> Tensor:
        """(sz, sz) float mask: 0 on and below the diagonal, -inf above (PyTorch's)."""
        mask = np.triu(np.full((sz, sz), -np.inf, dtype=get_default_dtype()), k=1)
        out = as_tensor(mask, device=device)
        return out if dtype is None else out.to(dtype)
