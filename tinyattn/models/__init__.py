"""``tinyattn.models``: real pretrained models and their tokenizers, built on ``tinyattn.nn``
(docs/pretrained.md)."""
from __future__ import annotations

from .gpt2_tokenizer import GPT2Tokenizer

__all__ = ["GPT2Tokenizer"]
