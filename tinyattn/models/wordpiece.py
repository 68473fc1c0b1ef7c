"""BERT's text pipeline in pure Python: normalise, pre-tokenise, WordPiece.

The rules are those of the ``tokenizers`` library's BertNormalizer, BertPreTokenizer and
WordPiece model (what ``transformers.BertTokenizer`` runs), in this order:

1. clean: drop NUL, U+FFFD and "other" characters (Unicode categories Cc, Cf, Co: control,
   format such as a zero-width space or a soft hyphen, private use), except tab, newline and
   carriage return; turn every whitespace character (Unicode White_Space) into a space.
2. CJK: put spaces around each CJK ideograph, so each becomes its own word.
3. accents (when strip_accents, which defaults to the lowercase setting): decompose (NFD)
   and drop the combining marks (category Mn): "Café" -> "Cafe".
4. lowercase, character by character ("ΣΑΣ" -> "σασ": no final-sigma rule).
5. pre-tokenise: split on whitespace; every punctuation character (ASCII punctuation or a
   Unicode P* category) is a word of its own.
6. WordPiece: each word becomes the longest vocabulary prefix, then the longest
   "##"-prefixed piece of the rest, and so on; a word with any part not in the vocabulary,
   or longer than max_input_chars_per_word characters, becomes [UNK] as a whole.
"""
from __future__ import annotations

import re
import string
import unicodedata
from functools import lru_cache
from typing import Dict, List

__all__ = ["normalize", "pre_tokenize", "WordPiece"]

_KEEP = {"\t", "\n", "\r"}
_OTHER = {"Cc", "Cf", "Co", "Cs"}
_WHITE_SPACE = set(map(chr, [*range(0x09, 0x0E), 0x20, 0x85, 0xA0, 0x1680, *range(0x2000, 0x200B),
                             0x2028, 0x2029, 0x202F, 0x205F, 0x3000]))
_CJK = ((0x4E00, 0x9FFF), (0x3400, 0x4DBF), (0x20000, 0x2A6DF), (0x2A700, 0x2B73F),
        (0x2B740, 0x2B81F), (0x2B820, 0x2CEAF), (0xF900, 0xFAFF), (0x2F800, 0x2FA1F))
_ASCII_PUNCT = re.escape(string.punctuation)
_ASCII_WORDS = re.compile(rf"[^\t\n\x0b\x0c\r {_ASCII_PUNCT}]+|[{_ASCII_PUNCT}]")
_ASCII_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
_ASCII_SPACES = str.maketrans({c: " " for c in _WHITE_SPACE if c.isascii()})


@lru_cache(maxsize=8192)
def _category(char: str) -> str:
    return unicodedata.category(char)


def _is_cjk(char: str) -> bool:
    code = ord(char)
    return any(low <= code <= high for low, high in _CJK)


def _is_punctuation(char: str) -> bool:
    return char in string.punctuation or _category(char).startswith("P")


def normalize(text: str, lowercase: bool = True, strip_accents: bool = True,
              handle_chinese_chars: bool = True, clean_text: bool = True) -> str:
    """Steps 1-4 above."""
    if text.isascii():                        # the common case, without a per-char loop
        if clean_text:
            text = _ASCII_CONTROL.sub("", text)
            text = text.translate(_ASCII_SPACES)
        return text.lower() if lowercase else text
    chars: List[str] = []
    for char in text:
        if clean_text:
            if char == "\x00" or char == "\ufffd" or (
                    char not in _KEEP and _category(char) in _OTHER):
                continue
            if char in _WHITE_SPACE:
                char = " "
        if handle_chinese_chars and _is_cjk(char):
            chars.extend((" ", char, " "))
        else:
            chars.append(char)
    text = "".join(chars)
    if strip_accents:
        text = "".join(c for c in unicodedata.normalize("NFD", text) if _category(c) != "Mn")
    if lowercase:
        # str.lower() lowercases a final capital sigma to "ς"; tokenizers (and so the
        # checkpoint's vocabulary use) maps each character on its own: "Σ" -> "σ".
        text = "".join(map(str.lower, text)) if "Σ" in text else text.lower()
    return text


def pre_tokenize(text: str) -> List[str]:
    """Step 5: words, with each punctuation character as its own word."""
    if text.isascii():
        return _ASCII_WORDS.findall(text)
    words: List[str] = []
    current: List[str] = []
    for char in text:
        if char in _WHITE_SPACE or _is_punctuation(char):
            if current:
                words.append("".join(current))
                current = []
            if char not in _WHITE_SPACE:
                words.append(char)
        else:
            current.append(char)
    if current:
        words.append("".join(current))
    return words


class WordPiece:
    """Step 6: greedy longest-match-first subwords over a vocabulary."""

    def __init__(self, vocab: Dict[str, int], unk_token: str = "[UNK]",
                 max_input_chars_per_word: int = 100, prefix: str = "##"):
        self.vocab, self.unk_token, self.prefix = vocab, unk_token, prefix
        self.max_input_chars_per_word = max_input_chars_per_word
        self._cache: Dict[str, List[str]] = {}

    def __call__(self, word: str) -> List[str]:
        pieces = self._cache.get(word)
        if pieces is None:
            pieces = self._split(word)
            if len(self._cache) < 100_000:    # bounded: a long corpus cannot grow it forever
                self._cache[word] = pieces
        return pieces

    def _split(self, word: str) -> List[str]:
        if len(word) > self.max_input_chars_per_word:
            return [self.unk_token]
        pieces: List[str] = []
        start = 0
        while start < len(word):
            end = len(word)
            while end > start:
                piece = word[start:end] if start == 0 else self.prefix + word[start:end]
                if piece in self.vocab:
                    break
                end -= 1
            else:
                return [self.unk_token]       # some part of the word is not in the vocab
            pieces.append(piece)
            start = end
        return pieces
