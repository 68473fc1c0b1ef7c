"""GPT-2's byte-level BPE tokenizer in pure Python (docs/pretrained.md#gpt-2).

    text -> pieces (GPT-2's pattern, models/pretokenize.py)
         -> each piece's UTF-8 bytes, each byte shown as one printable character
         -> BPE merges inside the piece, lowest merge rank first -> vocabulary ids

Byte-level means every string can be encoded (there is no unknown token) and decoding the ids
gives the bytes back exactly. ``decode`` turns the bytes into text with
``errors="replace"``, as Hugging Face does, so ids that cut a character in half decode to
U+FFFD instead of raising.
"""
from __future__ import annotations

import os
from typing import Any, Dict, Iterable, List, Optional, Sequence, Tuple, Union

import numpy as np

from ..io import resolve_pretrained
from .bpe_files import read_merges, read_tokenizer_json, read_vocab_json
from .pretokenize import split_gpt2

__all__ = ["GPT2Tokenizer", "bytes_to_unicode"]

ENDOFTEXT = "<|endoftext|>"
_CACHE_LIMIT = 50_000          # BPE results kept per tokenizer (pieces repeat a lot)


def bytes_to_unicode() -> Dict[int, str]:
    """GPT-2's byte -> printable character table.

    The 188 bytes that are printable Latin-1 characters stand for themselves; the other 68
    (control characters, space, ...) get the code points 256, 257, ... in order. So the
    space byte 0x20 shows as 'Ġ' (U+0120) and a newline as 'Ċ' (U+010A).
    """
    printable = (list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1))
                 + list(range(ord("®"), ord("ÿ") + 1)))
    table, extra = {}, 0
    for byte in range(256):
        if byte in printable:
            table[byte] = chr(byte)
        else:
            table[byte] = chr(256 + extra)
            extra += 1
    return table


class GPT2Tokenizer:
    """Byte-level BPE with GPT-2's vocabulary (``vocab.json``) and merges (``merges.txt``).

    ``encode(text)`` -> list of ids; ``decode(ids)`` -> text; ``tokenizer(texts)`` -> a dict
    with ``input_ids`` and ``attention_mask`` (as Hugging Face's tokenizers return).
    The special token ``<|endoftext|>`` (id 50256 in GPT-2) is recognised in the text.
    """

    def __init__(self, vocab: Dict[str, int], merges: Sequence[Tuple[str, str]],
                 special_tokens: Optional[Sequence[str]] = None):
        self.encoder = dict(vocab)
        self.decoder = {i: token for token, i in self.encoder.items()}
        if len(self.decoder) != len(self.encoder):
            raise ValueError("GPT2Tokenizer: two tokens in the vocabulary share an id")
        self.bpe_ranks = {tuple(pair): rank for rank, pair in enumerate(merges)}
        self.byte_encoder = bytes_to_unicode()
        self.byte_decoder = {ch: byte for byte, ch in self.byte_encoder.items()}
        if special_tokens is None:
            special_tokens = [ENDOFTEXT] if ENDOFTEXT in self.encoder else []
        for token in special_tokens:
            if token not in self.encoder:
                raise ValueError(f"GPT2Tokenizer: special token {token!r} is not in the "
                                 f"vocabulary")
        # Longest first, so that a special token containing another one wins.
        self.special_tokens = sorted(special_tokens, key=len, reverse=True)
        self.eos_token = ENDOFTEXT if ENDOFTEXT in self.encoder else None
        self.pad_token: Optional[str] = None          # GPT-2 has none; set one to pad
        self._cache: Dict[str, Tuple[int, ...]] = {}

    # ------------------------------------------------------------------ loading
    @classmethod
    def from_pretrained(cls, path: str) -> "GPT2Tokenizer":
        """Load ``vocab.json`` and ``merges.txt`` (or, without them, a ``tokenizer.json``)
        from a folder, or from a Hugging Face Hub id (downloaded with ``huggingface_hub``
        when it is installed)."""
        folder = resolve_pretrained(path, patterns=("vocab.json", "merges.txt", "tokenizer.json"))
        vocab_path = os.path.join(folder, "vocab.json")
        merges_path = os.path.join(folder, "merges.txt")
        single = os.path.join(folder, "tokenizer.json")
        if not os.path.isfile(vocab_path) and not os.path.isfile(merges_path) \
                and os.path.isfile(single):
            vocab, merges, specials = read_tokenizer_json(single)
            return cls(vocab, merges, specials or None)
        for required in (vocab_path, merges_path):
            if not os.path.isfile(required):
                raise FileNotFoundError(f"GPT2Tokenizer: {required} not found; a GPT-2 "
                                        f"tokenizer folder holds vocab.json and merges.txt "
                                        f"(or a tokenizer.json)")
        try:
            with open(merges_path, encoding="utf-8") as f:
                merges = read_merges(f, merges_path)
        except UnicodeDecodeError as exc:
            raise ValueError(f"GPT2Tokenizer: {merges_path} is not UTF-8 text ({exc}); "
                             f"merges.txt holds one UTF-8 'a b' pair a line") from None
        return cls(read_vocab_json(vocab_path), merges)

    # ------------------------------------------------------------------ encoding
    @property
    def vocab_size(self) -> int:
        return len(self.encoder)

    def __len__(self) -> int:
        return len(self.encoder)

    @property
    def eos_token_id(self) -> Optional[int]:
        return None if self.eos_token is None else self.encoder[self.eos_token]

    @property
    def pad_token_id(self) -> Optional[int]:
        return None if self.pad_token is None else self.encoder[self.pad_token]

    def encode(self, text: str) -> List[int]:
        """Token ids of ``text``; special tokens written in the text become their id."""
        if not isinstance(text, str):
            raise TypeError(f"GPT2Tokenizer.encode: text must be a str, got "
                            f"{type(text).__name__}")
        ids: List[int] = []
        for chunk, is_special in self._split_special(text):
            if is_special:
                ids.append(self.encoder[chunk])
                continue
            for piece in split_gpt2(chunk):
                ids.extend(self._bpe_ids(piece))
        return ids

    def tokenize(self, text: str) -> List[str]:
        """The token strings of ``text`` (bytes shown through ``bytes_to_unicode``)."""
        return [self.decoder[i] for i in self.encode(text)]

    def _split_special(self, text: str) -> Iterable[Tuple[str, bool]]:
        """(chunk, is_special) pairs, cutting the text at every special token."""
        start = i = 0
        while i < len(text):
            match = next((t for t in self.special_tokens if text.startswith(t, i)), None)
            if match is None:
                i += 1
                continue
            if i > start:
                yield text[start:i], False
            yield match, True
            i = start = i + len(match)
        if start < len(text):
            yield text[start:], False

    def _bpe_ids(self, piece: str) -> Tuple[int, ...]:
        cached = self._cache.get(piece)
        if cached is not None:
            return cached
        try:
            data = piece.encode("utf-8")
        except UnicodeEncodeError as err:
            raise ValueError(f"GPT2Tokenizer: the text holds {piece[err.start]!r}, a lone "
                             f"surrogate that UTF-8 cannot encode; remove it or decode the "
                             f"original bytes properly") from None
        symbols = self._merge("".join(self.byte_encoder[b] for b in data))
        try:
            ids = tuple(self.encoder[s] for s in symbols)
        except KeyError as err:
            raise ValueError(f"GPT2Tokenizer: the symbol {err.args[0]!r} (from {piece!r}) is "
                             f"not in the vocabulary; a byte-level vocabulary must hold all "
                             f"256 byte symbols") from None
        if len(self._cache) >= _CACHE_LIMIT:
            self._cache.clear()
        self._cache[piece] = ids
        return ids

    def _merge(self, word: str) -> List[str]:
        """BPE: repeatedly merge the adjacent pair with the lowest rank in merges.txt (all its
        occurrences, left to right) until no pair of the word is a merge."""
        symbols = list(word)
        ranks = self.bpe_ranks
        while len(symbols) > 1:
            pairs = set(zip(symbols, symbols[1:]))
            best = min(pairs, key=lambda pair: ranks.get(pair, float("inf")))
            if best not in ranks:
                break
            merged, i = [], 0
            while i < len(symbols):
                if i + 1 < len(symbols) and (symbols[i], symbols[i + 1]) == best:
                    merged.append(symbols[i] + symbols[i + 1])
                    i += 2
                else:
                    merged.append(symbols[i])
                    i += 1
            symbols = merged
        return symbols

    # ------------------------------------------------------------------ decoding
    def decode(self, ids: Any, skip_special_tokens: bool = False) -> str:
        """Text of ``ids`` (a list, an array or a 1-d Tensor); bytes that are not valid UTF-8
        become U+FFFD (``errors="replace"``), as in Hugging Face."""
        ids = _id_list(ids, "decode")
        special_ids = {self.encoder[t] for t in self.special_tokens}
        parts: List[str] = []
        data = bytearray()
        for i in ids:
            token = self.decoder.get(i)
            if token is None:
                raise ValueError(f"GPT2Tokenizer.decode: id {i} is not in the vocabulary "
                                 f"(ids go from 0 to {max(self.decoder)})")
            if i in special_ids:
                parts.append(data.decode("utf-8", errors="replace"))
                data = bytearray()
                if not skip_special_tokens:
                    parts.append(token)
                continue
            data.extend(self._token_bytes(token))
        parts.append(data.decode("utf-8", errors="replace"))
        return "".join(parts)

    def _token_bytes(self, token: str) -> bytes:
        """The bytes a token stands for; a token with a character outside the byte table
        (added to the vocabulary by hand) stands for its own UTF-8, as in Hugging Face."""
        try:
            return bytes(self.byte_decoder[ch] for ch in token)
        except KeyError:
            return token.encode("utf-8", errors="replace")

    def batch_decode(self, sequences: Iterable[Any], skip_special_tokens: bool = False
                     ) -> List[str]:
        return [self.decode(ids, skip_special_tokens) for ids in sequences]

    # ------------------------------------------------------------------ batches
    def __call__(self, text: Union[str, Sequence[str]], padding: bool = False,
                 truncation: bool = False, max_length: Optional[int] = None,
                 return_tensors: Optional[str] = None) -> Dict[str, Any]:
        """Encode one text or a list of texts: {"input_ids", "attention_mask"}.

        ``padding=True`` pads on the right to the longest text (it needs ``pad_token``; GPT-2
        has none, so set ``tokenizer.pad_token = tokenizer.eos_token`` as with Hugging
        Face); ``truncation=True`` keeps the first ``max_length`` ids;
        ``return_tensors="np"`` returns int64 arrays (B, S) instead of lists.
        """
        single = isinstance(text, str)
        texts = [text] if single else list(text)
        if not all(isinstance(t, str) for t in texts):
            raise TypeError("GPT2Tokenizer: pass a str or a list of str")
        if truncation and (max_length is None or max_length < 1):
            raise ValueError(f"GPT2Tokenizer: truncation=True needs max_length >= 1, got "
                             f"{max_length!r}")
        rows = [self.encode(t) for t in texts]
        if truncation:
            rows = [row[:max_length] for row in rows]
        masks = [[1] * len(row) for row in rows]
        if padding:
            if self.pad_token is None:
                raise ValueError("GPT2Tokenizer: padding=True needs a pad token and GPT-2 has "
                                 "none; set tokenizer.pad_token = tokenizer.eos_token first")
            width = max(len(row) for row in rows)
            pad = self.pad_token_id
            masks = [m + [0] * (width - len(m)) for m in masks]
            rows = [row + [pad] * (width - len(row)) for row in rows]
        if return_tensors not in (None, "np"):
            raise ValueError(f"GPT2Tokenizer: return_tensors must be None or 'np', got "
                             f"{return_tensors!r}")
        if return_tensors == "np":
            if len({len(row) for row in rows}) > 1:
                raise ValueError("GPT2Tokenizer: texts of different lengths cannot be one "
                                 "array; pass padding=True")
            return {"input_ids": np.array(rows, dtype=np.int64).reshape(len(rows), -1),
                    "attention_mask": np.array(masks, dtype=np.int64).reshape(len(rows), -1)}
        if single:
            return {"input_ids": rows[0], "attention_mask": masks[0]}
        return {"input_ids": rows, "attention_mask": masks}


def _id_list(ids: Any, what: str) -> List[int]:
    if hasattr(ids, "numpy"):                  # a tinyattn or torch tensor
        ids = ids.numpy()
    array = np.asarray(ids)
    if array.ndim != 1 or (array.size and not np.issubdtype(array.dtype, np.integer)):
        raise ValueError(f"GPT2Tokenizer.{what}: ids must be a 1-d sequence of integers, got "
                         f"shape {array.shape} dtype {array.dtype}")
    return [int(i) for i in array]
