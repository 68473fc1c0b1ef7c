"""A small decoder-only language model (GPT) with a key/value cache (docs/nn.md#gpt).

Shapes: B batch, S sequence (S <= block_size), D = d_model, V = vocab_size, h = n_head.

    ids (B, S) -> token embedding (+ positions) -> n_layer pre-LN blocks -> LayerNorm
        -> lm_head -> logits (B, S, V)

Each block: x = x + attn(ln1(x)) with a causal mask;  x = x + mlp(ln2(x)).

A Llama-style model is the same skeleton with other parts (docs/nn.md#llama-style-gpt):
``GPTConfig(pos_encoding="rope", norm="rmsnorm", mlp="swiglu", n_kv_head=2, bias=False,
tie_weights=False)``: RoPE, RMSNorm, the SwiGLU feed-forward, grouped-query attention.

Initialisation (GPT-2's): every Linear and Embedding weight ~ N(0, 0.02^2), biases 0, and the
projections that write into the residual stream (attn.out_proj, mlp.linear2 or mlp.w2) ~
N(0, (0.02 / sqrt(2 n_layer))^2), so the residual's variance does not grow with depth.
Everything is drawn from the default generator: ``tinyattn.manual_seed(s)`` first.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Optional, Tuple, Union

import numpy as np

from ..precision import get_default_dtype

from .. import functional as F
from ..autograd import is_grad_enabled
from ..tensor import Tensor, as_tensor
from ..utils.checkpoint import checkpoint
from . import generation
from .attention import KVCache, MultiHeadAttention
from .long_attention import RelativePositionBias
from .layers import (Dropout, Embedding, FeedForward, LayerNorm, Linear, RMSNorm,
                     normal_parameter)
from .containers import ModuleList
from .module import Module, Parameter
from .positional import ALiBi, LearnedPositionalEmbedding, SinusoidalPositionalEncoding
from .swiglu import SwiGLU, llama_hidden_dim

__all__ = ["GPTConfig", "GPT", "Block", "register_checkpoint_format"]

_POS_KINDS = ("learned", "sinusoidal", "rope", "alibi", "t5", "none")
_ATTN_IMPLS = ("plain", "tiled", "composed", "local", "performer", "linformer")
_NORMS = ("layernorm", "rmsnorm")
_MLPS = ("feedforward", "swiglu")


@dataclass
class GPTConfig:
    """Hyper-parameters of ``GPT``.

    block_size is the context length (the most tokens the model sees at once);
    attn_block_size is the tile size of attn_impl="tiled" (unrelated to the context).
    pos_encoding: "learned" (GPT-2), "sinusoidal" (fixed table), "rope" (rotate q, k),
    "alibi" (distance bias on the scores; needs attn_impl="plain"), "t5" (T5's learned
    bias per bucket of distance, ``RelativePositionBias``, one shared by all layers; needs
    attn_impl="plain"), "none" (no position
    information beyond what the causal mask lets the model infer: to see what positions buy).
    tie_weights: lm_head shares the token embedding matrix (V, D).
    norm: "layernorm" (GPT-2) or "rmsnorm" (Llama), with ``norm_eps``.
    mlp: "feedforward" (linear, ``activation``, linear) or "swiglu" (Llama's gated MLP; its
    hidden width ``d_ff`` defaults to int(8 d_model / 3) rounded up to a multiple of 8).
    n_kv_head: key/value heads for grouped-query attention (None: n_head; 1: multi-query).
    attn_impl: "plain", "tiled", "composed" (separate ops, for tinyattn.viz.explore), or a
    long-sequence variant (docs/long_sequences.md):
    "local" (each token sees the ``attn_window`` tokens before it and itself), "performer"
    (``performer_features`` random features, causal prefix sums). "linformer" is refused:
    its projections mix future tokens into every key, which a causal model must not see.
    gradient_checkpointing: in training mode, keep only each block's input and recompute the
    block in the backward (all blocks but the last, whose activations the backward needs at
    once; tinyattn.utils.checkpoint; docs/precision_memory_time.md).
    """

    vocab_size: int = 65
    block_size: int = 64
    n_layer: int = 2
    n_head: int = 4
    d_model: int = 64
    dropout: float = 0.0
    pos_encoding: str = "learned"
    tie_weights: bool = True
    bias: bool = True
    d_ff: Optional[int] = None           # default 4 * d_model
    activation: str = "gelu"
    attn_impl: str = "plain"
    attn_block_size: int = 64
    rope_base: float = 10000.0
    norm: str = "layernorm"
    norm_eps: float = 1e-5
    mlp: str = "feedforward"
    n_kv_head: Optional[int] = None      # default n_head
    attn_window: int = 64
    performer_features: int = 64
    attn_scale: Optional[float] = None   # default 1 / sqrt(d_k)
    gradient_checkpointing: bool = False  # recompute each block in backward (less memory)

    def __post_init__(self) -> None:
        for name in ("vocab_size", "block_size", "n_layer", "n_head", "d_model",
                     "attn_block_size", "n_kv_head", "d_ff"):
            value = getattr(self, name)
            if value is None and name in ("n_kv_head", "d_ff"):
                continue
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"GPTConfig: {name} must be a positive int, got {value!r}")
        if self.n_kv_head is not None and self.n_head % self.n_kv_head != 0:
            raise ValueError(f"GPTConfig: n_head={self.n_head} is not a multiple of "
                             f"n_kv_head={self.n_kv_head}; each key/value head serves an equal "
                             f"group of query heads")
        if self.norm not in _NORMS:
            raise ValueError(f"GPTConfig: norm must be one of {_NORMS}, got {self.norm!r}")
        if self.mlp not in _MLPS:
            raise ValueError(f"GPTConfig: mlp must be one of {_MLPS}, got {self.mlp!r}")
        if self.d_model % self.n_head != 0:
            raise ValueError(f"GPTConfig: d_model={self.d_model} is not divisible by "
                             f"n_head={self.n_head}")
        if self.pos_encoding not in _POS_KINDS:
            raise ValueError(f"GPTConfig: pos_encoding must be one of {_POS_KINDS}, got "
                             f"{self.pos_encoding!r}")
        if self.attn_impl == "linformer":
            raise ValueError("GPTConfig: attn_impl='linformer' cannot be causal: its (k, S) "
                             "projections mix every position, the future included, into each "
                             "key, so the model would see the tokens it must predict. Use "
                             "nn.LinformerSelfAttention in an encoder, or attn_impl='local' "
                             "or 'performer' here")
        if self.attn_impl not in _ATTN_IMPLS:
            raise ValueError(f"GPTConfig: attn_impl must be one of {_ATTN_IMPLS}, got "
                             f"{self.attn_impl!r}")
        if self.pos_encoding in ("alibi", "t5") and self.attn_impl != "plain":
            raise ValueError(f"GPTConfig: pos_encoding={self.pos_encoding!r} adds a bias to "
                             f"the scores, which only attn_impl='plain' supports (got "
                             f"{self.attn_impl!r})")
        if not 0.0 <= self.dropout <= 1.0:
            raise ValueError(f"GPTConfig: dropout must be in [0, 1], got {self.dropout}")
        if isinstance(self.norm_eps, bool) or not isinstance(self.norm_eps, (int, float)) \
                or not 0 < self.norm_eps < 1:
            raise ValueError(f"GPTConfig: norm_eps must be a small positive number (GPT-2: "
                             f"1e-5), got {self.norm_eps!r}")


def _make_norm(config: GPTConfig) -> Module:
    if config.norm == "rmsnorm":
        return RMSNorm(config.d_model, eps=config.norm_eps)
    return LayerNorm(config.d_model, eps=config.norm_eps, bias=config.bias)


def _make_mlp(config: GPTConfig) -> Module:
    d = config.d_model
    if config.mlp == "swiglu":
        hidden = config.d_ff if config.d_ff is not None else llama_hidden_dim(d, multiple_of=8)
        return SwiGLU(d, hidden, bias=config.bias)
    return FeedForward(d, config.d_ff, dropout=config.dropout, activation=config.activation,
                       bias=config.bias)


class Block(Module):
    """One pre-norm transformer block with causal self-attention."""

    def __init__(self, config: GPTConfig):
        d = config.d_model
        self.ln1 = _make_norm(config)
        self.attn = MultiHeadAttention(d, config.n_head, dropout=config.dropout,
                                       bias=config.bias, rope=config.pos_encoding == "rope",
                                       rope_base=config.rope_base, attn_impl=config.attn_impl,
                                       block_size=config.attn_block_size,
                                       num_kv_heads=config.n_kv_head,
                                       window=config.attn_window,
                                       num_features=config.performer_features,
                                       scale=config.attn_scale)
        self.drop1 = Dropout(config.dropout)
        self.ln2 = _make_norm(config)
        self.mlp = _make_mlp(config)
        self.drop2 = Dropout(config.dropout)

    def forward(self, x: Tensor, attn_bias: Optional[Tensor] = None,
                kv_cache: Optional[KVCache] = None, need_weights: bool = False
                ) -> Tuple[Tensor, Optional[Tensor]]:
        """x (B, S, D) -> (x (B, S, D), weights (B, h, S, S_k) or None)."""
        attended, weights = self.attn(self.ln1(x), need_weights=need_weights,
                                      average_attn_weights=False, is_causal=True,
                                      attn_bias=attn_bias, kv_cache=kv_cache)
        x = x + self.drop1(attended)
        x = x + self.drop2(self.mlp(self.ln2(x)))
        return x, weights


# GPT-2's checkpoint format (Hugging Face's config.json + model.safetensors) is read and
# written by tinyattn/models/gpt2.py: file formats sit above nn (docs/architecture.md). That
# module registers its two functions here when tinyattn.models is imported, which
# ``import tinyattn`` does, so GPT.from_pretrained works as torch users expect while nn
# imports nothing above it.
_CHECKPOINT_FORMAT: Dict[str, Callable[..., Any]] = {}


def register_checkpoint_format(load: Callable[..., Any], save: Callable[..., Any]) -> None:
    """Make ``load(cls, name_or_path, dtype=, dropout=)`` and ``save(model, folder)`` the
    functions behind ``GPT.from_pretrained`` and ``GPT.save_pretrained``."""
    _CHECKPOINT_FORMAT.update(load=load, save=save)


def _checkpoint_format(kind: str) -> Callable[..., Any]:
    if kind not in _CHECKPOINT_FORMAT:
        raise RuntimeError("GPT.from_pretrained / save_pretrained need tinyattn.models, which "
                           "registers GPT-2's checkpoint format; `import tinyattn` (or "
                           "`import tinyattn.models`) before calling them")
    return _CHECKPOINT_FORMAT[kind]


class GPT(Module):
    """Decoder-only transformer language model.

    ``forward(idx)`` -> logits (B, S, V); ``forward(idx, targets)`` -> (logits, loss), the mean
    cross-entropy over all B * S positions (targets equal to ``ignore_index`` are skipped);
    ``return_attention=True`` appends a list with one (B, h, S, S) weight tensor per layer.
    """

    def __init__(self, config: GPTConfig):
        self.config = config
        d, kind = config.d_model, config.pos_encoding
        self.tok_emb = Embedding(config.vocab_size, d)
        self.pos_emb: Optional[Module] = None
        if kind == "learned":
            self.pos_emb = LearnedPositionalEmbedding(config.block_size, d)
        elif kind == "sinusoidal":
            self.pos_emb = SinusoidalPositionalEncoding(d, config.block_size)
        self.alibi = ALiBi(config.n_head) if kind == "alibi" else None
        self.rel_bias = (RelativePositionBias(num_heads=config.n_head, bidirectional=False)
                         if kind == "t5" else None)
        self.drop = Dropout(config.dropout)
        self.blocks = ModuleList([Block(config) for _ in range(config.n_layer)])
        self.ln_f = _make_norm(config)
        self.lm_head = Linear(d, config.vocab_size, bias=False)
        self._init_weights()
        if config.tie_weights:
            self.lm_head.weight = self.tok_emb.weight        # one (V, D) Parameter, two uses

    def _init_weights(self) -> None:
        std = 0.02
        residual_std = std / math.sqrt(2 * self.config.n_layer)
        for name, module in self.named_modules():
            if isinstance(module, (Linear, Embedding)):
                last = name.rsplit(".", 1)[-1]
                is_residual = last in ("out_proj", "linear2", "w2")
                module.weight = normal_parameter(module.weight.shape,
                                                 residual_std if is_residual else std)
                if isinstance(module, Linear) and module.bias is not None:
                    module.bias = Parameter(np.zeros(module.bias.shape, dtype=get_default_dtype()))
            elif isinstance(module, LearnedPositionalEmbedding):
                module.weight = normal_parameter(module.weight.shape, std)
        for module in self.modules():       # q/k/v weights as one array again (no copy a step)
            if isinstance(module, MultiHeadAttention):
                module._pack_projections()

    # ------------------------------------------------------------------ checkpoints
    @classmethod
    def from_pretrained(cls, name_or_path: Any, dtype: Any = "float32",
                        dropout: float = 0.0) -> "GPT":
        """A GPT-2 from a Hugging Face folder (``config.json`` + ``model.safetensors``) or a
        Hub id such as ``"gpt2"`` (downloaded with ``pip install "tinyattn[hub]"``).

        The name map and the transposed weights are one table in models/gpt2.py (the file
        format lives with the models, above nn: see ``register_checkpoint_format``).
        float32 weights are views of the memory-mapped file (no copy). Returned in eval
        mode; ``dropout`` (default 0) is applied where tinyattn's GPT applies it when you
        train (GPT-2 trained with 0.1). Errors name what is missing or unsupported.
        """
        return _checkpoint_format("load")(cls, name_or_path, dtype=dtype, dropout=dropout)

    def save_pretrained(self, folder: str) -> None:
        """Write ``config.json`` and ``model.safetensors`` with GPT-2's names (Conv1D
        weights transposed back, q/k/v packed into c_attn), so
        ``transformers.GPT2LMHeadModel.from_pretrained(folder)`` loads this model. Needs
        learned positions and biases (GPT-2's architecture)."""
        _checkpoint_format("save")(self, folder)

    def extra_repr(self) -> str:
        c = self.config
        return (f"vocab_size={c.vocab_size}, block_size={c.block_size}, "
                f"pos_encoding={c.pos_encoding!r}, tie_weights={c.tie_weights}")

    # ------------------------------------------------------------------ forward
    def forward(self, idx: Any, targets: Any = None, *, return_attention: bool = False,
                kv_caches: Optional[List[KVCache]] = None, ignore_index: int = -100
                ) -> Union[Tensor, Tuple[Any, ...]]:
        """idx (B, S) integer token ids -> logits (B, S, V) [, loss] [, weights per layer].

        With ``kv_caches`` (one ``KVCache`` per layer), idx holds only the new tokens; they sit
        after the cached ones (positions offset..offset+S-1) and the caches grow by S.
        """
        idx = _as_ids(idx, "idx")
        x, weights = self.trunk(idx, kv_caches, return_attention)
        batch, seq_len = idx.shape
        logits = self.lm_head(self.ln_f(x))                  # (B, S, D) -> (B, S, V)
        outputs: List[Any] = [logits]
        if targets is not None:
            targets = _as_ids(targets, "targets")
            if targets.shape != (batch, seq_len):
                raise ValueError(f"GPT: targets must have the shape of idx {idx.shape}, got "
                                 f"{targets.shape}")
            vocab = self.config.vocab_size
            loss = F.cross_entropy(logits.reshape(batch * seq_len, vocab),   # (B*S, V)
                                   targets.reshape(batch * seq_len),          # (B*S,)
                                   ignore_index=ignore_index)
            outputs.append(loss)
        if return_attention:
            outputs.append(weights)
        return outputs[0] if len(outputs) == 1 else tuple(outputs)

    def trunk(self, idx: Any, kv_caches: Optional[List[KVCache]] = None,
              return_attention: bool = False) -> Tuple[Tensor, List[Optional[Tensor]]]:
        """idx (B, S) -> the residual stream after the last block (B, S, D), before ln_f and
        lm_head, and the attention weights per layer (None unless ``return_attention``).
        ``generate`` applies ln_f and lm_head to the last position only."""
        idx = _as_ids(idx, "idx")
        if idx.ndim != 2:
            raise ValueError(f"GPT: idx must be (B, S) token ids, got shape {idx.shape}")
        batch, seq_len = idx.shape
        if kv_caches is not None and len(kv_caches) != len(self.blocks):
            raise ValueError(f"GPT: got {len(kv_caches)} KV caches for {len(self.blocks)} "
                             f"layers; pass one KVCache per layer")
        offset = 0 if kv_caches is None else kv_caches[0].length
        if offset + seq_len > self.config.block_size:
            raise ValueError(f"GPT: {offset + seq_len} tokens (cached {offset} + new "
                             f"{seq_len}) exceed block_size={self.config.block_size}; crop "
                             f"the input to the last {self.config.block_size} tokens")
        x = self.tok_emb(idx)                                # (B, S) -> (B, S, D)
        if self.config.pos_encoding == "sinusoidal":
            # The fixed table has entries of size ~1 while the embeddings start at std 0.02:
            # scale them by sqrt(d_model), as the original Transformer does, or the positions
            # drown the tokens (reverse then stays at chance for hundreds of steps).
            x = x * math.sqrt(self.config.d_model)
        if self.pos_emb is not None:
            x = self.pos_emb(x, offset)                      # + (S, D)
        x = self.drop(x)
        bias = None
        if self.alibi is not None:                           # (h, S, offset + S)
            bias = self.alibi(seq_len, offset + seq_len, dtype=x.dtype, device=x.device)
        if self.rel_bias is not None:                        # (1, h, S, offset + S)
            bias = self.rel_bias(seq_len, offset + seq_len)
        weights = []
        recompute = (self.config.gradient_checkpointing and self.training and kv_caches is None
                     and not return_attention and is_grad_enabled())
        last = len(self.blocks) - 1
        for i, block in enumerate(self.blocks):
            # The last block's activations are used at once by the backward: recomputing them
            # would only cost time (torch's checkpoint_sequential leaves its last segment too).
            if recompute and i < last:      # the block's activations are rebuilt in backward
                x, w = checkpoint(block, x, bias, use_reentrant=False)
            else:
                cache = None if kv_caches is None else kv_caches[i]
                x, w = block(x, attn_bias=bias, kv_cache=cache, need_weights=return_attention)
            weights.append(w)
        return x, weights

    # ------------------------------------------------------------------ generation
    def generate(self, idx: Any, max_new_tokens: int, temperature: float = 1.0,
                 top_k: Optional[int] = None, top_p: Optional[float] = None,
                 use_cache: bool = True, generator: Any = None) -> Tensor:
        """Append ``max_new_tokens`` tokens to idx (B, S); returns (B, S + new).

        Each step samples from softmax(logits / temperature) of the last position, keeping
        only the ``top_k`` most likely tokens (exactly k, ties to the lower id) and then the
        smallest set of most likely tokens whose probability reaches ``top_p``;
        ``temperature=0`` (or one so small that 1 / temperature overflows) picks the argmax.
        Invalid options (a NaN, inf or negative temperature, top_p outside (0, 1]) are
        refused, and logits holding NaN or inf raise ``NonFiniteLogitsError`` (a
        FloatingPointError) naming the step.
        With ``use_cache`` the prompt is run once and each later step feeds one token,
        reading earlier keys/values from a ``KVCache`` per layer. When the context reaches
        block_size, the caches are rebuilt from the last block_size tokens, exactly what the
        uncached path computes. Draws come from ``generator`` (a numpy Generator) or the
        default one (``tinyattn.manual_seed``). Runs without gradients and in eval mode
        (dropout off); the training mode is restored afterwards. See nn/generation.py.
        """
        return generation.generate(self, idx, max_new_tokens, temperature=temperature,
                                   top_k=top_k, top_p=top_p, use_cache=use_cache,
                                   generator=generator)


def _as_ids(ids: Any, what: str) -> Tensor:
    tensor = ids if isinstance(ids, Tensor) else as_tensor(np.asarray(ids))
    if not np.issubdtype(tensor.dtype, np.integer):
        raise TypeError(f"GPT: {what} must hold integer token ids, got dtype {tensor.dtype}; "
                        f"convert with .long()")
    return tensor
