"""Reading a byte-level BPE tokenizer's files: ``vocab.json`` + ``merges.txt`` (GPT-2's own
layout), or the ``tokenizers`` library's single ``tokenizer.json``. Each function returns
plain Python data (token -> id, merge pairs in rank order, special tokens) or a clear
error naming the file, the line or the field."""
from __future__ import annotations

import json
import os
from typing import Any, Dict, Iterable, List, Tuple

__all__ = ["read_vocab_json", "read_merges", "read_tokenizer_json"]

Merges = List[Tuple[str, str]]


def read_vocab_json(path: str) -> Dict[str, int]:
    """token -> id from a vocab.json."""
    return _check_vocab(_read_json(path), path)


def read_merges(lines: Iterable[str], where: str) -> Merges:
    """Pairs from a merges.txt: an optional '#version' line, then one 'a b' pair a line."""
    merges = []
    for number, line in enumerate(lines, start=1):
        line = line.rstrip("\r\n")
        if not line or (number == 1 and line.startswith("#version")):
            continue
        parts = line.split(" ")
        if len(parts) != 2 or not all(parts):
            raise ValueError(f"GPT2Tokenizer: {where} line {number} is {line!r}; each line "
                             f"must be two symbols separated by one space")
        merges.append((parts[0], parts[1]))
    return merges


def read_tokenizer_json(path: str) -> Tuple[Dict[str, int], Merges, List[str]]:
    """(vocab, merges, special tokens) from a tokenizers-library tokenizer.json, refusing
    what would not tokenize like GPT-2 (another model type, a normalizer, other
    pre-tokenisation, ignore_merges)."""
    data = _read_json(path)
    model = data.get("model") if isinstance(data, dict) else None
    if not isinstance(model, dict) or model.get("type") != "BPE":
        raise ValueError(f"GPT2Tokenizer: {path} is not a BPE tokenizer (model type "
                         f"{model.get('type') if isinstance(model, dict) else None!r})")
    pre = data.get("pre_tokenizer") or {}
    if data.get("normalizer") or pre.get("type") != "ByteLevel" or pre.get(
            "add_prefix_space") or not pre.get("use_regex", True) or model.get("ignore_merges"):
        raise ValueError(f"GPT2Tokenizer: {path} is not GPT-2's byte-level BPE (its "
                         f"normalizer, pre_tokenizer {pre.get('type')!r} with "
                         f"add_prefix_space={pre.get('add_prefix_space')}, or ignore_merges "
                         f"differ); GPT2Tokenizer only reproduces GPT-2's rules")
    vocab = _check_vocab(model.get("vocab"), path)
    merges: Merges = []
    for number, merge in enumerate(model.get("merges") or []):
        pair = merge.split(" ") if isinstance(merge, str) else merge
        if not (isinstance(pair, list) and len(pair) == 2 and all(
                isinstance(p, str) and p for p in pair)):
            raise ValueError(f"GPT2Tokenizer: {path} merge {number} is {merge!r}; expected "
                             f"'a b' or ['a', 'b']")
        merges.append((pair[0], pair[1]))
    specials = [t["content"] for t in data.get("added_tokens") or []
                if isinstance(t, dict) and t.get("special") and t.get("content") in vocab]
    return vocab, merges, specials


def _read_json(path: str) -> Any:
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except (ValueError, UnicodeDecodeError) as err:
        raise ValueError(f"GPT2Tokenizer: {path} is not valid JSON: {err}") from None


def _check_vocab(vocab: Any, path: str) -> Dict[str, int]:
    if not isinstance(vocab, dict) or not all(
            isinstance(k, str) and isinstance(v, int) and not isinstance(v, bool)
            for k, v in vocab.items()):
        raise ValueError(f"GPT2Tokenizer: {os.path.basename(path)} must map token strings to "
                         f"integer ids ({path})")
    return vocab
