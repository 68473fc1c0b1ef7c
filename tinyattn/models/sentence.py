"""``SentenceEmbedder``: sentence-transformers models (BERT + pooling + normalise) in tinyattn
(docs/pretrained.md#sentenceembedder).

    embedder = SentenceEmbedder.from_pretrained(folder)   # e.g. all-MiniLM-L6-v2
    vectors = embedder.encode(["A man is eating.", "Someone eats."])    # (N, D), float32
    vectors @ vectors.T                                    # cosine similarities (unit rows)

A sentence-transformers folder lists its modules in ``modules.json``: a Transformer (the
BERT in the folder itself), a Pooling (``1_Pooling/config.json``) and often a Normalize.
Pooling turns the token vectors (B, S, D) into one vector (B, D) per text, over the real
tokens only (the padding mask): mean, [CLS] token, max, or mean * sqrt(length).
"""
from __future__ import annotations

import math
import os
import sys
import time
from typing import Any, Dict, List, Optional, Sequence

import numpy as np

from .. import backend
from ..autograd import no_grad
from ..io import PretrainedError, read_json, resolve_pretrained
from ..tensor import Tensor, tensor
from .bert import BertModel
from .bert_tokenizer import BertTokenizer

__all__ = ["SentenceEmbedder", "pool"]

# sentence-transformers' module types that tinyattn runs, by the end of their class path.
_TRANSFORMER, _POOLING, _NORMALIZE = "Transformer", "Pooling", "Normalize"
# Pooling config keys -> mode, in the order sentence-transformers concatenates them.
_MODES = (("pooling_mode_cls_token", "cls"), ("pooling_mode_max_tokens", "max"),
          ("pooling_mode_mean_tokens", "mean"), ("pooling_mode_mean_sqrt_len_tokens",
                                                 "mean_sqrt_len"))
_REFUSED = ("pooling_mode_weightedmean_tokens", "pooling_mode_lasttoken")


def pool(hidden: Tensor, attention_mask: Any, mode: str = "mean") -> Tensor:
    """One vector per sequence from token vectors (B, S, D) over the real tokens (mask
    (B, S), 1 = real): "mean", "cls" (the first token), "max", or "mean_sqrt_len" (the sum
    divided by sqrt(length)). Differentiable: built from tinyattn ops."""
    if mode == "cls":
        return hidden[:, 0]                                          # (B, S, D) -> (B, D)
    mask = tensor(np.asarray(attention_mask, dtype=hidden.dtype)[:, :, None],
                  device=hidden.device)                              # (B, S) -> (B, S, 1)
    if mode == "max":
        return hidden.masked_fill(mask._data == 0, -1e9).amax(dim=1)  # (B, S, D) -> (B, D)
    summed = (hidden * mask).sum(dim=1)                              # -> (B, D)
    count = np.maximum(np.asarray(attention_mask).sum(axis=1, keepdims=True), 1e-9)
    divisor = np.sqrt(count) if mode == "mean_sqrt_len" else count   # (B, 1)
    if mode not in ("mean", "mean_sqrt_len"):
        raise ValueError(f"pool: mode must be 'mean', 'cls', 'max' or 'mean_sqrt_len', got "
                         f"{mode!r}")
    return summed / tensor(divisor.astype(hidden.dtype), device=hidden.device)


class SentenceEmbedder:
    """A BERT encoder, its tokenizer, a pooling and an optional L2 normalisation."""

    def __init__(self, model: BertModel, tokenizer: BertTokenizer, modes: Sequence[str],
                 max_seq_length: int, normalize: bool = True, do_lower_case: bool = False,
                 skip_padding: bool = True):
        self.model, self.tokenizer = model, tokenizer
        self.modes, self.max_seq_length = list(modes), max_seq_length
        self.normalize, self.do_lower_case = normalize, do_lower_case
        # Pooling reads only the real tokens, so the model need not compute the padding
        # (BertModel's skip_padding); False computes every position, as sentence-transformers.
        self.skip_padding = skip_padding

    @property
    def dimension(self) -> int:
        return self.model.config.hidden_size * len(self.modes)

    @classmethod
    def from_pretrained(cls, name_or_path: Any, dtype: Any = "float32") -> "SentenceEmbedder":
        """Load a sentence-transformers folder (or Hub repo id with ``tinyattn[hub]``)."""
        folder = resolve_pretrained(name_or_path)
        modules = read_json(folder, "modules.json", required=False, allow_list=True)
        if modules is None:      # a plain BERT folder: mean pooling, as sentence-transformers
            kinds, pooling_path, normalize = [_TRANSFORMER, _POOLING], None, False
        else:
            kinds, pooling_path, normalize = _read_modules(modules, folder)
        modes = _read_pooling(folder, pooling_path) if pooling_path else ["mean"]
        config = read_json(folder, "sentence_bert_config.json", required=False) or {}
        model = BertModel.from_pretrained(folder, dtype=dtype)
        tokenizer = BertTokenizer.from_pretrained(folder)
        limit = config.get("max_seq_length") or min(tokenizer.model_max_length,
                                                    model.config.max_position_embeddings)
        if not isinstance(limit, int) or limit < 2:
            raise PretrainedError(f"{folder}/sentence_bert_config.json: max_seq_length must "
                                  f"be an int >= 2, got {limit!r}")
        return cls(model, tokenizer, modes, limit, normalize,
                   bool(config.get("do_lower_case", False)))

    def encode(self, texts: Sequence[str], batch_size: int = 32, normalize: bool = True,
               show_progress_bar: Optional[bool] = None) -> np.ndarray:
        """Embed ``texts``: an (N, D) float array, row i for texts[i] (D = 384 for MiniLM).

        normalize: scale each row to unit length, so a dot product is the cosine similarity
            (all-MiniLM-L6-v2's modules.json ends with Normalize, so sentence-transformers
            does it too; ``self.normalize`` says whether the model's modules do).
        show_progress_bar: a line on stderr per batch (default: when stderr is a terminal and
            there are over 8 batches).
        Texts are sorted by length and batched ``batch_size`` at a time, so a batch pads
        little; longer texts are cut to max_seq_length tokens, as sentence-transformers does.
        """
        if isinstance(texts, str):
            raise TypeError("encode: pass a list of texts (for one text: encode([text]))")
        texts = list(texts)
        for i, text in enumerate(texts):
            if not isinstance(text, str):
                raise TypeError(f"encode: texts[{i}] is a {type(text).__name__}, not a str")
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
            raise ValueError(f"encode: batch_size must be a positive int, got {batch_size!r}")
        dtype = self.model.embeddings.word_embeddings.weight.dtype
        out = np.zeros((len(texts), self.dimension), dtype=dtype)
        order = sorted(range(len(texts)), key=lambda i: -len(texts[i]))
        batches = math.ceil(len(texts) / batch_size)
        if show_progress_bar is None:
            show_progress_bar = batches > 8 and sys.stderr.isatty()
        start = time.perf_counter()
        for b in range(batches):
            rows = order[b * batch_size:(b + 1) * batch_size]
            out[rows] = self._embed([texts[i] for i in rows])
            if show_progress_bar:
                sys.stderr.write(f"\rencode: {b + 1}/{batches} batches, "
                                 f"{time.perf_counter() - start:.1f} s")
                sys.stderr.flush()
        if show_progress_bar:
            sys.stderr.write("\n")
        if normalize:
            out /= np.maximum(np.linalg.norm(out, axis=1, keepdims=True), 1e-12)
        return out

    def _embed(self, texts: List[str]) -> np.ndarray:
        if self.do_lower_case:
            texts = [t.lower() for t in texts]
        batch = self.tokenizer(texts, padding=True, truncation=True,
                               max_length=self.max_seq_length, return_tensors="np")
        with no_grad():
            hidden = self.model(batch["input_ids"], batch["attention_mask"],
                                batch["token_type_ids"],
                                skip_padding=self.skip_padding).last_hidden_state
            pooled = [pool(hidden, batch["attention_mask"], mode) for mode in self.modes]
        arrays = [backend.to_host(p._data) for p in pooled]
        return arrays[0] if len(arrays) == 1 else np.concatenate(arrays, axis=1)


def _read_modules(modules: Any, folder: str) -> tuple:
    """(kinds, pooling folder, normalize) from modules.json; refuse modules tinyattn lacks."""
    if not isinstance(modules, list) or not all(isinstance(m, dict) for m in modules):
        raise PretrainedError(f"{folder}/modules.json must be a list of modules")
    kinds, pooling_path, normalize = [], None, False
    for module in sorted(modules, key=lambda m: m.get("idx", 0)):
        kind = str(module.get("type", "")).rsplit(".", 1)[-1]
        if kind == _POOLING:
            pooling_path = module.get("path", "")
        elif kind == _NORMALIZE:
            normalize = True
        elif kind != _TRANSFORMER or module.get("path", "") not in ("", "."):
            raise PretrainedError(f"{folder}/modules.json: module {module.get('type')!r} at "
                                  f"{module.get('path')!r} is not supported; tinyattn runs "
                                  f"a Transformer in the folder itself, a Pooling and a "
                                  f"Normalize")
        kinds.append(kind)
    if kinds[:1] != [_TRANSFORMER] or _POOLING not in kinds:
        raise PretrainedError(f"{folder}/modules.json: expected a Transformer first and then a "
                              f"Pooling module, got {kinds}")
    return kinds, pooling_path, normalize


def _read_pooling(folder: str, path: str) -> List[str]:
    name = os.path.join(path, "config.json")
    config: Dict[str, Any] = read_json(folder, name)
    refused = [k for k in _REFUSED if config.get(k)]
    if refused:
        raise PretrainedError(f"{folder}/{name}: {refused[0]} is not supported; tinyattn "
                              f"pools with mean, cls, max or mean_sqrt_len")
    mode = config.get("pooling_mode")     # newer files may name the mode as a string
    if isinstance(mode, str):
        names = {"mean": "mean", "cls": "cls", "max": "max", "mean_sqrt_len_tokens":
                 "mean_sqrt_len", "mean_sqrt_len": "mean_sqrt_len"}
        if mode not in names:
            raise PretrainedError(f"{folder}/{name}: pooling_mode {mode!r} is not supported")
        return [names[mode]]
    modes = [mode for key, mode in _MODES if config.get(key)]
    if not modes:
        raise PretrainedError(f"{folder}/{name}: no pooling mode is switched on")
    return modes
