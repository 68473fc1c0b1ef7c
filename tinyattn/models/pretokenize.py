"""GPT-2's pre-tokenisation, written with ``unicodedata`` instead of the ``regex`` package.

GPT-2 first splits text into pieces with this pattern (alternatives tried in order at each
position, the first that matches wins), then runs byte-level BPE inside each piece:

    's|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+

Python's ``re`` knows no ``\\p{L}`` (letters) or ``\\p{N}`` (numbers), and its ``\\s`` is
``str.isspace()``, which also holds for U+001C..U+001F; the ``regex`` package (and the Rust
``tokenizers``) mean the Unicode White_Space property. So ``split_gpt2`` walks the text once,
classifying each character as a letter (general category L*), a number (N*), white space
(White_Space) or other, and applies the alternatives by hand:

- a contraction: an apostrophe followed by s, t, re, ve, m, ll or d (case-sensitive);
- an optional single space (U+0020 only) then a run of letters, of numbers, or of others;
- ``\\s+(?!\\S)``: a run of white space, but if a non-space follows, the run gives its last
  character back so that it can start the next piece (" world" keeps its space); a run of
  one white-space character before a non-space fails here and falls to
- ``\\s+``: the run as it is (a lone "\\n" before a letter).

Checked over every code point against ``regex`` and ``tokenizers`` (tests/test_gpt2_tokenizer.py).
One limit: the classes come from Python's ``unicodedata`` (Unicode 14.0 in Python 3.11); a
character assigned in a later Unicode version is unassigned there, so it counts as "other"
where ``regex`` (newer tables) may call it a letter.
"""
from __future__ import annotations

import unicodedata
from typing import List, Optional

__all__ = ["split_gpt2", "char_class", "WHITE_SPACE"]

# The Unicode White_Space property (PropList.txt): what \s means in `regex` and Oniguruma.
WHITE_SPACE = frozenset(
    "\t\n\x0b\x0c\r \x85\xa0\u1680" + "".join(chr(c) for c in range(0x2000, 0x200B))
    + "\u2028\u2029\u202f\u205f\u3000")

_CONTRACTIONS = ("s", "t", "re", "ve", "m", "ll", "d")   # after an apostrophe, in order
LETTER, NUMBER, SPACE, OTHER = "L", "N", "S", "O"


def char_class(ch: str) -> str:
    """'L' (\\p{L}), 'N' (\\p{N}), 'S' (\\s, White_Space) or 'O' (anything else)."""
    if ch in WHITE_SPACE:
        return SPACE
    major = unicodedata.category(ch)[0]
    return major if major in (LETTER, NUMBER) else OTHER


def split_gpt2(text: str) -> List[str]:
    """The pieces GPT-2's pattern finds in ``text``; their concatenation is ``text``."""
    classes = [char_class(ch) for ch in text]
    n, i, pieces = len(text), 0, []
    while i < n:
        end = _contraction_end(text, i)
        if end is None:
            end = _run_end(text, classes, i)
        pieces.append(text[i:end])
        i = end
    return pieces


def _contraction_end(text: str, i: int) -> Optional[int]:
    if text[i] != "'":
        return None
    for tail in _CONTRACTIONS:
        if text.startswith(tail, i + 1):
            return i + 1 + len(tail)
    return None


def _run_end(text: str, classes: List[str], i: int) -> int:
    """End of the piece starting at i, for every alternative after the contractions."""
    n = len(text)
    start = i
    # ` ?\p{L}+`, ` ?\p{N}+`, ` ?[^\s\p{L}\p{N}]+`: the space is taken when a run follows it.
    if text[i] == " " and i + 1 < n and classes[i + 1] != SPACE:
        start = i + 1
    kind = classes[start]
    if kind != SPACE:
        end = start + 1
        while end < n and classes[end] == kind:
            end += 1
        return end
    end = i + 1                                       # a run of white space from i
    while end < n and classes[end] == SPACE:
        end += 1
    if end < n and end - i > 1:                       # `\s+(?!\S)`: leave the last one
        return end - 1
    return end                                        # at the end of text, or `\s+`
