"""BERT encoders, loaded from Hugging Face checkpoints (docs/pretrained.md#bertmodel).

Shapes: B batch, S sequence, D = hidden_size, h heads, d_k = D / h, F = intermediate_size,
V = vocab_size.

    ids (B, S) -> word + token-type + position embeddings -> LayerNorm -> L layers
        -> last_hidden_state (B, S, D)     (and pooler_output = tanh(W h[:, 0]) (B, D))
    each layer is post-LN:  a = LayerNorm(x + W_o attention(x));  x' = LayerNorm(a + FFN(a))
    with FFN(a) = W_2 gelu(W_1 a + b_1) + b_2, the exact (erf) GELU.

Every module and parameter has the Hugging Face name, so ``state_dict()`` keys equal the
checkpoint's (``encoder.layer.0.attention.self.query.weight``, ...), and everything is built
from tinyattn's layers and ops, so the backward is tinyattn's hand-derived one.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field, fields
from typing import Any, Dict, List, Optional, Tuple

import numpy as np

from .. import backend
from .. import functional as F
from ..io import PretrainedError, read_json, resolve_pretrained, save_safetensors
from ..autograd import is_grad_enabled
from ..factories import zeros
from ..ops import cat, where
from ..ops.attention import packed_self_attention
from ..nn import Dropout, Embedding, LayerNorm, Linear, Module, ModuleList
from ..nn.layers import skip_init
from ..serialization import atomic_write
from ..tensor import Tensor, normalize_dtype
from .checkpoint import load_checkpoint_state
from .inputs import attention_mask_array, id_array
from ..precision import is_floating

__all__ = ["BertConfig", "BertModel", "BertModelOutput"]

# config.json's hidden_act -> tinyattn's GELU flavour (HF's "gelu_new" is the tanh one).
_ACTIVATIONS = {"gelu": "gelu", "gelu_new": "gelu_tanh", "gelu_pytorch_tanh": "gelu_tanh",
                "relu": "relu"}


@dataclass
class BertConfig:
    """The fields of a BERT ``config.json`` that shape the model (Hugging Face's names)."""

    vocab_size: int = 30522
    hidden_size: int = 768
    num_hidden_layers: int = 12
    num_attention_heads: int = 12
    intermediate_size: int = 3072
    hidden_act: str = "gelu"
    hidden_dropout_prob: float = 0.1
    attention_probs_dropout_prob: float = 0.1
    max_position_embeddings: int = 512
    type_vocab_size: int = 2
    layer_norm_eps: float = 1e-12
    pad_token_id: int = 0
    extra: Dict[str, Any] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        for name in ("vocab_size", "hidden_size", "num_hidden_layers", "num_attention_heads",
                     "intermediate_size", "max_position_embeddings", "type_vocab_size"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise PretrainedError(f"BertConfig: {name} must be a positive int, got "
                                      f"{value!r}")
        if self.hidden_size % self.num_attention_heads:
            raise PretrainedError(f"BertConfig: hidden_size={self.hidden_size} is not "
                                  f"divisible by num_attention_heads="
                                  f"{self.num_attention_heads}")
        if self.hidden_act not in _ACTIVATIONS:
            raise PretrainedError(f"BertConfig: hidden_act={self.hidden_act!r} is not "
                                  f"supported; tinyattn supports {sorted(_ACTIVATIONS)}")
        for name in ("hidden_dropout_prob", "attention_probs_dropout_prob"):
            if not 0.0 <= float(getattr(self, name)) <= 1.0:
                raise PretrainedError(f"BertConfig: {name} must be in [0, 1], got "
                                      f"{getattr(self, name)!r}")

    @classmethod
    def from_dict(cls, data: Dict[str, Any], source: str = "config.json") -> "BertConfig":
        """Read a Hugging Face config; refuse what this BertModel does not implement."""
        refusals = [
            (data.get("model_type", "bert") != "bert",
             f"model_type={data.get('model_type')!r} (only 'bert' is supported: RoBERTa, "
             f"DistilBERT, ALBERT, ... name or place their weights differently)"),
            (data.get("position_embedding_type", "absolute") != "absolute",
             f"position_embedding_type={data.get('position_embedding_type')!r} (only "
             f"'absolute' learned positions are supported)"),
            (bool(data.get("is_decoder")), "is_decoder=true (a causal BERT decoder)"),
            (bool(data.get("add_cross_attention")), "add_cross_attention=true"),
            ("embedding_size" in data and data["embedding_size"] != data.get("hidden_size"),
             f"embedding_size={data.get('embedding_size')} different from hidden_size"),
        ]
        for refused, what in refusals:
            if refused:
                raise PretrainedError(f"{source}: {what}; tinyattn's BertModel implements "
                                      f"the original post-LN BERT encoder")
        known = {f.name for f in fields(cls)} - {"extra"}
        kwargs = {k: v for k, v in data.items() if k in known}
        extra = {k: v for k, v in data.items() if k not in known}
        try:
            return cls(**kwargs, extra=extra)
        except PretrainedError as exc:
            raise PretrainedError(f"{source}: {exc}") from None

    def to_dict(self) -> Dict[str, Any]:
        """config.json for ``transformers.BertModel``."""
        data = {k: v for k, v in self.extra.items()
                if k not in ("architectures", "model_type", "torch_dtype", "dtype")}
        data.update({f.name: getattr(self, f.name) for f in fields(self) if f.name != "extra"})
        data.update(architectures=["BertModel"], model_type="bert",
                    position_embedding_type="absolute")
        return data


@dataclass
class BertModelOutput:
    """What ``BertModel.forward`` returns (Hugging Face's field names)."""

    last_hidden_state: Tensor                      # (B, S, D)
    pooler_output: Optional[Tensor] = None         # (B, D), when the checkpoint has a pooler
    attentions: Optional[List[Tensor]] = None      # L x (B, h, S, S), with output_attentions


# ---------------------------------------------------------------------------- modules
class BertEmbeddings(Module):
    def __init__(self, config: BertConfig):
        d = config.hidden_size
        self.word_embeddings = Embedding(config.vocab_size, d)
        self.position_embeddings = Embedding(config.max_position_embeddings, d)
        self.token_type_embeddings = Embedding(config.type_vocab_size, d)
        self.LayerNorm = LayerNorm(d, eps=config.layer_norm_eps)
        self.dropout = Dropout(config.hidden_dropout_prob)
        self.pad_token_id = config.pad_token_id

    def forward(self, ids: Any, token_type_ids: Any) -> Tensor:
        xp = backend.get_array_module(ids)
        positions = xp.arange(ids.shape[1])                          # (S,)
        words = self.word_embeddings(ids)                            # (B, S) -> (B, S, D)
        weight = self.word_embeddings.weight
        if is_grad_enabled() and weight.requires_grad:
            # transformers' word embedding has padding_idx=pad_token_id: the [PAD] row is
            # used in the forward but gets no gradient, so fine-tuning never moves it.
            is_pad = ids == self.pad_token_id
            if bool(is_pad.any()):
                frozen = F.embedding(ids, weight.detach())
                words = where(is_pad[..., None], frozen, words)      # (B, S, 1) picks rows
        x = words + self.token_type_embeddings(token_type_ids)
        x = x + self.position_embeddings(positions)    # (B, S, D) + (S, D) -> (B, S, D)
        return self.dropout(self.LayerNorm(x))


class BertSelfAttention(Module):
    """softmax(q k^T / sqrt(d_k), padding masked) v per head, with HF's query/key/value."""

    def __init__(self, config: BertConfig):
        d = config.hidden_size
        self.num_heads, self.head_dim = config.num_attention_heads, d // config.num_attention_heads
        self.query, self.key, self.value = Linear(d, d), Linear(d, d), Linear(d, d)
        self.dropout_p = config.attention_probs_dropout_prob

    def forward(self, x: Tensor, mask: Any, need_weights: bool,
                packing: Optional["_Packing"] = None) -> Tuple[Tensor, Optional[Tensor]]:
        # One (B*S, D) @ (D, 3D) product for q, k, v (the weights stay three Parameters).
        projections = (self.query, self.key, self.value)
        weight = cat([m.weight for m in projections])                # 3 x (D, D) -> (3D, D)
        bias = cat([m.bias for m in projections])                    # 3 x (D,) -> (3D,)
        qkv = F.linear(x, weight, bias)                              # (B, S, D) -> (B, S, 3D)
        if packing is not None:
            qkv = packing.unpack(qkv)          # (N, 3D) -> (B, S, 3D), zeros at the padding
        batch, s, d = qkv.shape[0], qkv.shape[1], x.shape[-1]
        qkv = qkv.reshape(batch, s, 3, self.num_heads, self.head_dim)  # -> (B, S, 3, h, d_k)
        qkv = qkv.permute(2, 0, 3, 1, 4)                             # -> (3, B, h, S, d_k)
        p = self.dropout_p if self.training else 0.0
        result = packed_self_attention(qkv, mask=mask, dropout_p=p, need_weights=need_weights)
        out, weights = result if need_weights else (result, None)
        out = out.transpose(1, 2).reshape(batch, s, d)  # (B, h, S, d_k) -> (B, S, h, d_k) -> D
        return (out if packing is None else packing.pack(out)), weights  # -> (N, D) packed


class BertSelfOutput(Module):
    def __init__(self, config: BertConfig):
        self.dense = Linear(config.hidden_size, config.hidden_size)
        self.LayerNorm = LayerNorm(config.hidden_size, eps=config.layer_norm_eps)
        self.dropout = Dropout(config.hidden_dropout_prob)

    def forward(self, hidden: Tensor, residual: Tensor) -> Tensor:
        return self.LayerNorm(self.dropout(self.dense(hidden)) + residual)


class BertAttention(Module):
    def __init__(self, config: BertConfig):
        self.self = BertSelfAttention(config)      # HF's name: attention.self.query.weight
        self.output = BertSelfOutput(config)

    def forward(self, x: Tensor, mask: Any, need_weights: bool,
                packing: Optional["_Packing"] = None) -> Tuple[Tensor, Optional[Tensor]]:
        context, weights = self.self(x, mask, need_weights, packing)
        return self.output(context, x), weights


class BertIntermediate(Module):
    def __init__(self, config: BertConfig):
        self.dense = Linear(config.hidden_size, config.intermediate_size)
        self.activation = _ACTIVATIONS[config.hidden_act]

    def forward(self, x: Tensor) -> Tensor:
        x = self.dense(x)                                            # (B, S, D) -> (B, S, F)
        if self.activation == "relu":
            return F.relu(x)
        return F.gelu(x, approximate="tanh" if self.activation == "gelu_tanh" else "none")


class BertOutput(Module):
    """The feed-forward block's second half (HF's name): LayerNorm(W_2 h + b_2 + residual)."""

    def __init__(self, config: BertConfig):
        self.dense = Linear(config.intermediate_size, config.hidden_size)
        self.LayerNorm = LayerNorm(config.hidden_size, eps=config.layer_norm_eps)
        self.dropout = Dropout(config.hidden_dropout_prob)

    def forward(self, hidden: Tensor, residual: Tensor) -> Tensor:
        return self.LayerNorm(self.dropout(self.dense(hidden)) + residual)  # (B, S, F) -> D


class BertLayer(Module):
    def __init__(self, config: BertConfig):
        self.attention = BertAttention(config)
        self.intermediate = BertIntermediate(config)
        self.output = BertOutput(config)

    def forward(self, x: Tensor, mask: Any, need_weights: bool = False,
                packing: Optional["_Packing"] = None) -> Tuple[Tensor, Optional[Tensor]]:
        attended, weights = self.attention(x, mask, need_weights, packing)
        return self.output(self.intermediate(attended), attended), weights


class BertEncoder(Module):
    def __init__(self, config: BertConfig):
        self.layer = ModuleList([BertLayer(config) for _ in range(config.num_hidden_layers)])


class BertPooler(Module):
    """tanh(W h_[CLS] + b): the [CLS] vector through one layer (next-sentence pretraining)."""

    def __init__(self, config: BertConfig):
        self.dense = Linear(config.hidden_size, config.hidden_size)

    def forward(self, hidden: Tensor) -> Tensor:
        return F.tanh(self.dense(hidden[:, 0]))                      # (B, S, D) -> (B, D)


class _Packing:
    """The real tokens of a padded (B, S) batch as N rows (``skip_padding=True``): every
    per-token layer (each Linear, GELU, LayerNorm, residual add) then runs on N rows instead
    of B * S. Attention alone needs the sequences: ``unpack`` lays q, k, v out as (B, S, ...)
    with zeros at the padding, ``mask`` (B, 1, S, S) lets a padding position neither see nor
    be seen (attention without a graph then skips it), and ``pack`` keeps the real rows of
    the output. Both are integer-array indexing, so gradients flow through them.
    Position 0 is always computed, padding or not (left padding), as a query that sees the
    real keys, exactly as without packing: the pooler reads it."""

    def __init__(self, real: Any):                                    # (B, S) bool
        xp = backend.get_array_module(real)
        self.shape = tuple(real.shape)
        computed = real.copy()
        computed[:, :1] = True                                          # position 0: pooler
        self.mask = computed[:, None, :, None] & real[:, None, None, :]  # (B, 1, S, S)
        self.rows = xp.flatnonzero(computed.reshape(-1))                # (N,) in B*S
        slots = xp.full(real.size, self.rows.size)                      # (B*S,): N = zero row
        slots[self.rows] = xp.arange(self.rows.size)
        self.slots = slots

    def pack(self, x: Tensor) -> Tensor:
        return x.reshape((-1,) + x.shape[2:])[self.rows]      # (B, S, ...) -> (N, ...)

    def unpack(self, x: Tensor) -> Tensor:
        zero = zeros((1,) + x.shape[1:], dtype=x.dtype, device=x.device)
        padded = cat([x, zero])[self.slots]                            # (N, ...) -> (B*S, ...)
        return padded.reshape(self.shape + x.shape[1:])                # -> (B, S, ...)


# ---------------------------------------------------------------------------- the model
class BertModel(Module):
    """A BERT encoder: ``model(input_ids, attention_mask, token_type_ids)``.

    ``BertModel.from_pretrained(path)`` loads a Hugging Face checkpoint (a local folder or,
    with ``tinyattn[hub]``, a Hub repo id) and returns the model in eval mode (dropout off),
    as ``transformers`` does; call ``model.train()`` to fine-tune with dropout.
    """

    def __init__(self, config: BertConfig, add_pooling_layer: bool = True):
        self.config = config
        self.embeddings = BertEmbeddings(config)
        self.encoder = BertEncoder(config)
        self.pooler = BertPooler(config) if add_pooling_layer else None
        self.unused_weights: List[str] = []

    def forward(self, input_ids: Any, attention_mask: Any = None, token_type_ids: Any = None,
                output_attentions: bool = False, skip_padding: bool = False
                ) -> BertModelOutput:
        """input_ids (B, S) ints; attention_mask (B, S), 1 (or True) for real tokens and 0 for
        padding, as the tokenizer returns it (default: all real); token_type_ids (B, S),
        0 for the first segment and 1 for the second (default: all 0).

        Returns ``BertModelOutput``: last_hidden_state (B, S, D), pooler_output (B, D) when
        the model has a pooler, and with ``output_attentions`` the attention weights of every
        layer, L x (B, h, S, S) (detached). A padding key gets weight 0; padding positions
        still get hidden states (ignore them, as mean pooling does).

        ``skip_padding=True`` (tinyattn's addition) computes the real tokens only: their
        hidden states are the same (up to rounding), and the padding positions of
        last_hidden_state are 0 (as torch's nn.TransformerEncoder fast path returns them), so
        a batch of mixed lengths costs its real tokens, not B * S. Position 0 is computed
        even when it is padding (left padding), so pooler_output is unchanged. Made for what
        ignores the padding (pooling, as ``SentenceEmbedder`` does); not with
        ``output_attentions``.
        """
        config, device = self.config, self.embeddings.word_embeddings.weight.device
        ids = id_array(input_ids, "input_ids", config.vocab_size, device)
        batch, s = ids.shape
        if s > config.max_position_embeddings:
            raise ValueError(f"BertModel: the sequence has {s} tokens but the model has "
                             f"max_position_embeddings={config.max_position_embeddings}; "
                             f"truncate it (tokenizer(..., truncation=True, max_length="
                             f"{config.max_position_embeddings}))")
        if token_type_ids is None:
            token_types = backend.get_array_module(ids).zeros_like(ids)
        else:
            token_types = id_array(token_type_ids, "token_type_ids", config.type_vocab_size,
                                   device, shape=ids.shape)
        mask = attention_mask_array(attention_mask, ids.shape, device)  # (B, 1, 1, S) or None
        if skip_padding and output_attentions:
            raise ValueError("BertModel: skip_padding=True does not compute the padding "
                             "positions, so it cannot return every attention weight; pass "
                             "output_attentions=False or skip_padding=False")
        packing = _Packing(mask[:, 0, 0]) if skip_padding and mask is not None else None
        x = self.embeddings(ids, token_types)                          # (B, S, D)
        if packing is not None:
            x = packing.pack(x)                                        # (B, S, D) -> (N, D)
        attentions: List[Tensor] = []
        for layer in self.encoder.layer:
            x, weights = layer(x, mask if packing is None else packing.mask, output_attentions,
                               packing)
            if output_attentions:
                attentions.append(weights)
        if packing is not None:
            x = packing.unpack(x)                      # (N, D) -> (B, S, D), 0 at the padding
        pooled = self.pooler(x) if self.pooler is not None else None
        return BertModelOutput(x, pooled, attentions if output_attentions else None)

    # ------------------------------------------------------------------ files
    @classmethod
    def from_pretrained(cls, name_or_path: Any, dtype: Any = "float32") -> "BertModel":
        """Load ``config.json`` and ``model.safetensors`` (or sharded safetensors) from a
        folder in the Hugging Face layout, or a Hub repo id with ``tinyattn[hub]``.

        float32 weights in a float32 model are the file's memory-mapped bytes (no copy; the
        mapping is copy-on-write, so training never writes to the file); other dtypes are
        converted one tensor at a time.
        """
        want = normalize_dtype(dtype)
        if want is None or not is_floating(want):
            raise TypeError(f"BertModel.from_pretrained: dtype must be a float dtype "
                            f"('float32', 'float64' or 'float16'), got {dtype!r}")
        folder = resolve_pretrained(name_or_path)
        config = BertConfig.from_dict(read_json(folder, "config.json"),
                                      os.path.join(folder, "config.json"))
        # float32 uses the mapped file as it is; a conversion reads a tensor, converts it and
        # drops it, so memory peaks near the converted model's size plus one tensor.
        state, unused = load_checkpoint_state(folder, mmap=want == np.float32)
        with skip_init():                         # every weight comes from the file
            model = cls(config, add_pooling_layer="pooler.dense.weight" in state)
        model.load_pretrained_state(state, want, source=folder)
        model.unused_weights = unused
        return model.eval()

    def load_pretrained_state(self, state: Dict[str, np.ndarray], dtype: Any,
                              source: str = "the checkpoint") -> None:
        """Point every parameter at the checkpoint's array (converted to ``dtype``), after
        checking that the names and shapes match exactly. Empties ``state``."""
        params = dict(self.named_parameters())
        missing = sorted(set(params) - set(state))
        unexpected = sorted(set(state) - set(params))
        if missing or unexpected:
            raise PretrainedError(f"{source}: the weights do not match a BertModel of this "
                                  f"config: missing {missing[:8]}, unexpected "
                                  f"{unexpected[:8]}")
        for name, param in params.items():
            if tuple(state[name].shape) != param.shape:
                raise PretrainedError(f"{source}: {name} has shape {tuple(state[name].shape)} "
                                      f"in the checkpoint but {param.shape} in a BertModel "
                                      f"built from its config.json")
            if not is_floating(state[name].dtype):
                raise PretrainedError(f"{source}: {name} is stored as {state[name].dtype}, "
                                      f"not a float")
        device = params["embeddings.word_embeddings.weight"].device
        for name, param in params.items():
            array = state.pop(name)                   # the caller's dict: emptied as we go
            param.data = backend.to_device(array.astype(dtype, copy=False), device)
            param.grad = None
            del array

    def save_pretrained(self, folder: str) -> None:
        """Write ``config.json`` and ``model.safetensors`` (Hugging Face names, float as
        stored) so ``transformers.BertModel.from_pretrained(folder)`` loads this model."""
        os.makedirs(folder, exist_ok=True)
        import json  # noqa: PLC0415 - only needed here
        config = self.config.to_dict()
        with atomic_write(os.path.join(folder, "config.json"), "w") as f:
            json.dump(config, f, indent=2, sort_keys=True)
            f.write("\n")
        save_safetensors(self.state_dict(), os.path.join(folder, "model.safetensors"),
                         metadata={"format": "pt"})
