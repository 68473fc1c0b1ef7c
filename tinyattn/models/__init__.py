"""``tinyattn.models``: real pretrained transformers, loaded from Hugging Face checkpoints
(docs/pretrained.md). Sits above ``nn``: built from its layers, so every backward is
tinyattn's own.

    from tinyattn.models import BertModel, BertTokenizer, SentenceEmbedder
    embedder = SentenceEmbedder.from_pretrained("path/to/all-MiniLM-L6-v2")
    vectors = embedder.encode(["a sentence", "another one"])        # (2, 384), unit length

GPT-2 itself is ``tinyattn.nn.GPT.from_pretrained``, whose checkpoint format is read by
``gpt2.py`` (registered with nn when this package is imported); its tokenizer is
``GPT2Tokenizer``.
"""
from __future__ import annotations

from . import gpt2
from .bert import BertConfig, BertModel, BertModelOutput
from .bert_tokenizer import BatchEncoding, BertTokenizer
from .gpt2_tokenizer import GPT2Tokenizer
from .sentence import SentenceEmbedder, pool

__all__ = ["BertConfig", "BertModel", "BertModelOutput", "BertTokenizer", "BatchEncoding",
           "SentenceEmbedder", "pool", "GPT2Tokenizer"]
