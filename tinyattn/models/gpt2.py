"""GPT-2 checkpoints in the Hugging Face layout <-> tinyattn's ``GPT`` (docs/pretrained.md#gpt-2).

``nn.GPT.from_pretrained`` and ``save_pretrained`` call ``load_gpt2`` and ``save_gpt2``:
this module registers them with ``nn.gpt.register_checkpoint_format`` when tinyattn.models is
imported (``import tinyattn`` does), so nn, below models, knows no file format
(docs/architecture.md).

A folder holds ``config.json`` and ``model.safetensors`` (or shards listed in
``model.safetensors.index.json``). Loading is a name map plus a list of weights to transpose,
as in nanoGPT's ``GPT.from_pretrained``; the whole map is ``LAYER_NAMES`` and ``TOP_NAMES``:

- GPT-2's ``Conv1D`` stores its weight as (in, out) and computes x @ W + b; tinyattn's
  ``Linear`` stores (out, in) like PyTorch's and computes x @ W^T + b: transposed.
- ``c_attn`` packs the query, key and value projections into one (D, 3D) weight; tinyattn has
  three (D, D) Linears: split along the output axis (q first, then k, then v).
- ``lm_head`` is the token embedding (tied); the file may omit it.

Loaded float32 weights are views of the memory-mapped file (copy-on-write: training never
writes to it), transposes and splits included, so a loaded model takes about the file's size
in memory and loads in well under a second. Other dtypes are converted tensor by tensor.
"""
from __future__ import annotations

import json
import os
from typing import Any, Dict, List, Tuple

import numpy as np

from .. import backend
from ..io import (PretrainedError, load_weights, read_json,
                  resolve_pretrained, save_safetensors)
from ..serialization import atomic_write
from ..tensor import normalize_dtype
from ..nn.gpt import GPT, GPTConfig, register_checkpoint_format
from ..nn.layers import skip_init
from ..nn.module import Parameter
from ..precision import is_floating

__all__ = ["LAYER_NAMES", "TOP_NAMES", "load_gpt2", "save_gpt2", "gpt2_state", "hf_state",
           "to_hf_names", "config_from_hf", "config_to_hf"]

# Per layer: Hugging Face name after "h.{i}." -> tinyattn name(s) after "blocks.{i}.", and
# whether the array is transposed (Conv1D (in, out) -> Linear (out, in)). Several tinyattn
# names: the array is split into that many equal parts along the output axis.
LAYER_NAMES: List[Tuple[str, Tuple[str, ...], bool]] = [
    ("ln_1.weight", ("ln1.weight",), False),
    ("ln_1.bias", ("ln1.bias",), False),
    ("attn.c_attn.weight", ("attn.q_proj.weight", "attn.k_proj.weight", "attn.v_proj.weight"),
     True),
    ("attn.c_attn.bias", ("attn.q_proj.bias", "attn.k_proj.bias", "attn.v_proj.bias"), False),
    ("attn.c_proj.weight", ("attn.out_proj.weight",), True),
    ("attn.c_proj.bias", ("attn.out_proj.bias",), False),
    ("ln_2.weight", ("ln2.weight",), False),
    ("ln_2.bias", ("ln2.bias",), False),
    ("mlp.c_fc.weight", ("mlp.linear1.weight",), True),
    ("mlp.c_fc.bias", ("mlp.linear1.bias",), False),
    ("mlp.c_proj.weight", ("mlp.linear2.weight",), True),
    ("mlp.c_proj.bias", ("mlp.linear2.bias",), False),
]
TOP_NAMES: List[Tuple[str, Tuple[str, ...], bool]] = [
    ("wte.weight", ("tok_emb.weight",), False),
    ("wpe.weight", ("pos_emb.weight",), False),
    ("ln_f.weight", ("ln_f.weight",), False),
    ("ln_f.bias", ("ln_f.bias",), False),
]
# Saved by some versions of transformers, never weights: the causal mask and its fill value.
_BUFFERS = (".attn.bias", ".attn.masked_bias")
# config.json's activation_function -> GPTConfig.activation ("gelu_new" is GPT-2's tanh GELU).
_ACTIVATIONS = {"gelu_new": "gelu_tanh", "gelu_pytorch_tanh": "gelu_tanh", "gelu": "gelu",
                "relu": "relu"}
_FILES = ("config.json", "*.safetensors", "model.safetensors.index.json")


def _table(n_layer: int) -> List[Tuple[str, Tuple[str, ...], bool]]:
    """Every (Hugging Face name, tinyattn names, transposed) of an n_layer GPT-2."""
    rows = list(TOP_NAMES)
    for i in range(n_layer):
        rows += [(f"h.{i}.{hf}", tuple(f"blocks.{i}.{n}" for n in ours), t)
                 for hf, ours, t in LAYER_NAMES]
    return rows


# ---------------------------------------------------------------------------- config
def config_from_hf(hf: Dict[str, Any], dropout: float = 0.0,
                   source: str = "config.json") -> GPTConfig:
    """A ``GPTConfig`` from a GPT-2 ``config.json`` (refusing what tinyattn's GPT lacks)."""

    if hf.get("model_type", "gpt2") != "gpt2":
        raise PretrainedError(f"{source}: model_type is {hf.get('model_type')!r}; "
                              f"GPT.from_pretrained reads GPT-2 checkpoints (model_type 'gpt2')")
    unsupported = {"scale_attn_by_inverse_layer_idx": True, "add_cross_attention": True,
                   "scale_attn_weights": False}
    for key, bad in unsupported.items():
        if hf.get(key, not bad) == bad:
            raise PretrainedError(f"{source}: {key}={bad} is not supported by tinyattn's GPT "
                                  f"(it scales scores by 1/sqrt(d_k) and has no "
                                  f"cross-attention)")
    act = hf.get("activation_function", "gelu_new")
    if act not in _ACTIVATIONS:
        raise PretrainedError(f"{source}: activation_function {act!r} is not supported; "
                              f"known: {sorted(_ACTIVATIONS)}")
    try:
        return GPTConfig(vocab_size=hf.get("vocab_size", 50257),
                         block_size=hf.get("n_positions", hf.get("n_ctx", 1024)),
                         n_layer=hf.get("n_layer", 12), n_head=hf.get("n_head", 12),
                         d_model=hf.get("n_embd", 768), d_ff=hf.get("n_inner"),
                         dropout=dropout, activation=_ACTIVATIONS[act], pos_encoding="learned",
                         tie_weights=hf.get("tie_word_embeddings", True), bias=True,
                         norm_eps=hf.get("layer_norm_epsilon", 1e-5))
    except (ValueError, TypeError) as err:
        raise PretrainedError(f"{source}: {err}") from None


def config_to_hf(config: GPTConfig) -> Dict[str, Any]:
    """The ``config.json`` of ``transformers.GPT2LMHeadModel`` for this ``GPTConfig``."""
    differences = {name: getattr(config, name) for name, gpt2 in (
        ("pos_encoding", "learned"), ("bias", True), ("norm", "layernorm"),
        ("mlp", "feedforward"), ("n_kv_head", config.n_head)) if getattr(config, name) != gpt2
        and not (name == "n_kv_head" and config.n_kv_head is None)}
    if differences:
        settings = ", ".join(f"{k}={v!r}" for k, v in differences.items())
        raise ValueError(f"save_pretrained: GPT-2 has learned positions, biases, LayerNorm, a "
                         f"feed-forward MLP and one key/value head per query head; this model "
                         f"has {settings}, which transformers' GPT2LMHeadModel cannot load")
    activation = {"gelu_tanh": "gelu_new", "gelu": "gelu", "relu": "relu"}[config.activation]
    eos = 50256 if config.vocab_size > 50256 else None      # GPT-2's <|endoftext|>
    return {"model_type": "gpt2", "architectures": ["GPT2LMHeadModel"],
            "vocab_size": config.vocab_size, "n_positions": config.block_size,
            "n_embd": config.d_model, "n_layer": config.n_layer, "n_head": config.n_head,
            "n_inner": config.d_ff, "activation_function": activation,
            "resid_pdrop": config.dropout, "embd_pdrop": config.dropout,
            "attn_pdrop": config.dropout, "layer_norm_epsilon": config.norm_eps,
            "tie_word_embeddings": config.tie_weights, "scale_attn_weights": True,
            "bos_token_id": eos, "eos_token_id": eos}


# ---------------------------------------------------------------------------- loading
def load_gpt2(cls: type, name_or_path: Any, dtype: Any = "float32",
              dropout: float = 0.0) -> GPT:
    """``GPT.from_pretrained``: build the model from config.json, point its parameters at the
    checkpoint's arrays (converted to ``dtype``), return it in eval mode."""
    want = normalize_dtype(dtype)
    if want is None or not is_floating(want):
        raise TypeError(f"GPT.from_pretrained: dtype must be 'float32', 'float64' or "
                        f"'float16', got {dtype!r}")
    folder = resolve_pretrained(name_or_path, patterns=_FILES)
    config = config_from_hf(read_json(folder, "config.json"), dropout,
                            os.path.join(folder, "config.json"))
    state = gpt2_state(_read_weights(folder), config, folder)
    with skip_init():                       # every parameter is replaced below
        model = cls(config)
    params = dict(model.named_parameters())
    if set(params) != set(state):           # never leave uninitialised memory in a model
        raise PretrainedError(f"{folder}: internal name map mismatch: "
                              f"{sorted(set(params) ^ set(state))[:8]}")
    for name, param in params.items():
        array = state[name]
        if tuple(array.shape) != param.shape:
            raise PretrainedError(f"{folder}: {name} has shape {tuple(array.shape)} in the "
                                  f"checkpoint but {param.shape} in the GPT built from its "
                                  f"config.json")
    for name, param in params.items():
        setattr_path(model, name, Parameter(state[name].astype(want, copy=False)))
    if config.tie_weights:
        model.lm_head.weight = model.tok_emb.weight
    return model.eval()


def setattr_path(model: Any, dotted: str, value: Any) -> None:
    """model.blocks.0.attn.q_proj.weight = value, from its dotted name."""
    *path, last = dotted.split(".")
    for part in path:
        model = getattr(model, part)
    setattr(model, last, value)


def gpt2_state(weights: Dict[str, np.ndarray], config: GPTConfig,
               source: str = "the checkpoint") -> Dict[str, np.ndarray]:
    """Hugging Face GPT-2 arrays -> tinyattn names, transposed and split as ``_table`` says
    (views, no copies). Checks that every weight is there and nothing is left over."""
    raw: Dict[str, np.ndarray] = {}
    for name, array in weights.items():
        bare = name[len("transformer."):] if name.startswith("transformer.") else name
        if bare in raw:                      # wte.weight and transformer.wte.weight
            raise PretrainedError(f"{source}: the checkpoint holds both {bare} and "
                                  f"transformer.{bare}; a GPT-2 checkpoint has one of them, "
                                  f"so which to load is unclear: remove the other")
        raw[bare] = array
    state: Dict[str, np.ndarray] = {}
    for hf, ours, transposed in _table(config.n_layer):
        if hf not in raw:
            raise PretrainedError(f"{source}: the checkpoint has no {hf} (nor "
                                  f"transformer.{hf}); it is not a GPT-2 with "
                                  f"n_layer={config.n_layer} as its config.json says")
        array = raw.pop(hf)
        if not is_floating(array.dtype):
            raise PretrainedError(f"{source}: {hf} is stored as {array.dtype}, not a float")
        if transposed:
            if array.ndim != 2:
                raise PretrainedError(f"{source}: {hf} should be 2-D, got shape {array.shape}")
            array = array.T                                   # (in, out) -> (out, in)
        if len(ours) > 1 and array.shape[0] % len(ours) != 0:
            raise PretrainedError(f"{source}: {hf} of shape {array.shape} does not split "
                                  f"into {len(ours)} equal parts (q, k, v)")
        for name, part in zip(ours, np.split(array, len(ours), axis=0)):
            state[name] = part                                # (3D, D) -> 3 x (D, D)
    lm_head = raw.pop("lm_head.weight", None)
    if not config.tie_weights:
        if lm_head is None:
            raise PretrainedError(f"{source}: tie_word_embeddings is false but the checkpoint "
                                  f"has no lm_head.weight")
        state["lm_head.weight"] = lm_head
    left = [n for n in raw if not n.endswith(_BUFFERS)]
    if left:
        raise PretrainedError(f"{source}: weights that GPT-2 does not have: {sorted(left)[:8]}")
    return state


def _read_weights(folder: str) -> Dict[str, np.ndarray]:
    """name -> array from model.safetensors, or from every shard of its index."""
    return load_weights(folder, missing_hint=f"Download them with: hf download "
                                             f"openai-community/gpt2 config.json "
                                             f"model.safetensors --local-dir {folder}")


# ---------------------------------------------------------------------------- saving
def hf_state(model: GPT) -> Dict[str, np.ndarray]:
    """The model's parameters under Hugging Face GPT-2 names, as host arrays."""
    params = {name: backend.to_host(p._data) for name, p in model.named_parameters()}
    return to_hf_names(params, model.config)


def to_hf_names(arrays: Dict[str, np.ndarray], config: GPTConfig) -> Dict[str, np.ndarray]:
    """tinyattn-named arrays (parameters, or their gradients) -> Hugging Face GPT-2 names:
    the table read backwards (q/k/v packed back into c_attn, Conv1D weights transposed)."""
    state: Dict[str, np.ndarray] = {}
    for hf, ours, transposed in _table(config.n_layer):
        array = np.concatenate([arrays[n] for n in ours], axis=0) if len(ours) > 1 \
            else arrays[ours[0]]
        state["transformer." + hf] = np.ascontiguousarray(array.T if transposed else array)
    if not config.tie_weights:
        state["lm_head.weight"] = np.ascontiguousarray(arrays["lm_head.weight"])
    return state


def save_gpt2(model: GPT, folder: str) -> None:
    """``GPT.save_pretrained``: config.json and model.safetensors with Hugging Face names."""
    config = config_to_hf(model.config)
    os.makedirs(folder, exist_ok=True)
    with atomic_write(os.path.join(folder, "config.json"), "w") as f:
        json.dump(config, f, indent=2, sort_keys=True)
        f.write("\n")
    save_safetensors(hf_state(model), os.path.join(folder, "model.safetensors"),
                     metadata={"format": "pt"})


register_checkpoint_format(load_gpt2, save_gpt2)
