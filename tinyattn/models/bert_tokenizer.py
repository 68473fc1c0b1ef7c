"""``BertTokenizer``: WordPiece from ``vocab.txt``, in pure Python, with Hugging Face's API
(docs/pretrained.md#berttokenizer).

    tok = BertTokenizer.from_pretrained(folder)
    batch = tok(["a sentence", "another"], padding=True, truncation=True, return_tensors="np")
    batch["input_ids"], batch["attention_mask"], batch["token_type_ids"]     # (B, S) each

One sequence is ``[CLS] A [SEP]``; a pair is ``[CLS] A [SEP] B [SEP]`` with token_type_ids 0
for the first part and 1 for the second. attention_mask is 1 for real tokens, 0 for padding
(Hugging Face's convention; ``BertModel`` turns it into tinyattn's boolean key mask).
The text rules are in ``tinyattn/models/wordpiece.py``.
"""
from __future__ import annotations

import os
import re
from typing import Any, Dict, List, Optional, Sequence, Tuple, Union

import numpy as np

from ..io import PretrainedError, read_json, resolve_pretrained
from ..tensor import Tensor, from_numpy
from .wordpiece import WordPiece, normalize, pre_tokenize

__all__ = ["BertTokenizer", "BatchEncoding"]

TextInput = Union[str, Sequence[str]]
_SPECIAL_NAMES = ("pad_token", "unk_token", "cls_token", "sep_token", "mask_token")
_DEFAULTS = {"pad_token": "[PAD]", "unk_token": "[UNK]", "cls_token": "[CLS]",
             "sep_token": "[SEP]", "mask_token": "[MASK]"}
_CLEANUP = ((" .", "."), (" ?", "?"), (" !", "!"), (" ,", ","), (" ' ", "'"),
            (" n't", "n't"), (" 'm", "'m"), (" do not", " don't"), (" 's", "'s"),
            (" 've", "'ve"), (" 're", "'re"))


class BatchEncoding(dict):
    """A dict of input_ids, token_type_ids, attention_mask; also readable as attributes."""

    def __getattr__(self, name: str) -> Any:
        try:
            return self[name]
        except KeyError:
            raise AttributeError(name) from None


class BertTokenizer:
    """WordPiece tokenizer with BERT's normalisation (see ``wordpiece.py`` for the rules)."""

    def __init__(self, vocab: Dict[str, int], do_lower_case: bool = True,
                 strip_accents: Optional[bool] = None, tokenize_chinese_chars: bool = True,
                 model_max_length: int = 512, max_input_chars_per_word: int = 100,
                 **special_tokens: str):
        unknown = set(special_tokens) - set(_SPECIAL_NAMES)
        if unknown:
            raise TypeError(f"BertTokenizer: unknown argument(s) {sorted(unknown)}")
        self.vocab = dict(vocab)
        self.ids_to_tokens = {i: t for t, i in self.vocab.items()}
        self.do_lower_case, self.tokenize_chinese_chars = do_lower_case, tokenize_chinese_chars
        self.strip_accents = do_lower_case if strip_accents is None else strip_accents
        self.model_max_length = model_max_length
        tokens = {name: special_tokens.get(name, _DEFAULTS[name]) for name in _SPECIAL_NAMES}
        missing = [t for t in tokens.values() if t not in self.vocab]
        if missing:
            raise PretrainedError(f"BertTokenizer: special token(s) {missing} are not in the "
                                  f"vocabulary")
        for name, token in tokens.items():
            setattr(self, name, token)
            setattr(self, name + "_id", self.vocab[token])
        self.all_special_tokens = list(tokens.values())
        self.all_special_ids = [self.vocab[t] for t in self.all_special_tokens]
        # Special tokens typed in the text are matched as they are, before normalisation.
        longest_first = sorted(self.all_special_tokens, key=len, reverse=True)
        self._special_pattern = re.compile("(" + "|".join(map(re.escape, longest_first)) + ")")
        self.wordpiece = WordPiece(self.vocab, self.unk_token, max_input_chars_per_word)

    # ------------------------------------------------------------------ loading
    @classmethod
    def from_pretrained(cls, name_or_path: Any, **overrides: Any) -> "BertTokenizer":
        """Read ``vocab.txt`` and ``tokenizer_config.json`` (lower-casing, accents, CJK,
        special tokens, model_max_length) from a Hugging Face folder or Hub repo id."""
        folder = resolve_pretrained(name_or_path)
        vocab_path = os.path.join(folder, "vocab.txt")
        if not os.path.isfile(vocab_path):
            raise PretrainedError(f"{folder} has no vocab.txt, the WordPiece vocabulary a "
                                  f"BERT tokenizer needs")
        try:
            with open(vocab_path, encoding="utf-8") as f:
                tokens = [line.rstrip("\n").rstrip("\r") for line in f]
        except UnicodeDecodeError as exc:
            raise PretrainedError(f"{vocab_path} is not UTF-8 text ({exc}); a WordPiece "
                                  f"vocabulary is one UTF-8 token a line") from None
        vocab: Dict[str, int] = {}
        for index, token in enumerate(tokens):
            vocab.setdefault(token, index)        # a repeated line keeps its first id
        config = read_json(folder, "tokenizer_config.json", required=False) or {}
        special = read_json(folder, "special_tokens_map.json", required=False) or {}
        kwargs: Dict[str, Any] = {}
        for key in ("do_lower_case", "strip_accents", "tokenize_chinese_chars"):
            if config.get(key) is not None:
                kwargs[key] = bool(config[key])
        max_length = config.get("model_max_length")
        if isinstance(max_length, int) and 0 < max_length < 10**9:
            kwargs["model_max_length"] = max_length
        for name in _SPECIAL_NAMES:
            value = config.get(name, special.get(name))
            if isinstance(value, dict):           # {"content": "[CLS]", ...}
                value = value.get("content")
            if isinstance(value, str):
                kwargs[name] = value
        kwargs.update(overrides)
        return cls(vocab, **kwargs)

    @property
    def vocab_size(self) -> int:
        return len(self.vocab)

    def __len__(self) -> int:
        return len(self.vocab)

    # ------------------------------------------------------------------ tokens and ids
    def tokenize(self, text: str) -> List[str]:
        """WordPiece tokens of ``text``, without [CLS]/[SEP] (special tokens typed in the
        text, such as "[MASK]", stay whole)."""
        if not isinstance(text, str):
            raise TypeError(f"tokenize: expected a str, got {type(text).__name__}")
        tokens: List[str] = []
        for i, part in enumerate(self._special_pattern.split(text)):
            if i % 2:                             # odd parts are the special tokens matched
                tokens.append(part)
                continue
            part = normalize(part, self.do_lower_case, self.strip_accents,
                             self.tokenize_chinese_chars)
            for word in pre_tokenize(part):
                tokens.extend(self.wordpiece(word))
        return tokens

    def convert_tokens_to_ids(self, tokens: Union[str, Sequence[str]]) -> Any:
        if isinstance(tokens, str):
            return self.vocab.get(tokens, self.unk_token_id)
        return [self.vocab.get(t, self.unk_token_id) for t in tokens]

    def convert_ids_to_tokens(self, ids: Any, skip_special_tokens: bool = False) -> Any:
        if isinstance(ids, (int, np.integer)):
            return self._token(int(ids))
        special = set(self.all_special_ids) if skip_special_tokens else set()
        return [self._token(int(i)) for i in _flat_ids(ids) if int(i) not in special]

    def _token(self, index: int) -> str:
        if index not in self.ids_to_tokens:
            raise ValueError(f"token id {index} is outside the vocabulary (0 to "
                             f"{len(self.vocab) - 1})")
        return self.ids_to_tokens[index]

    # ------------------------------------------------------------------ encoding
    def encode(self, text: str, text_pair: Optional[str] = None,
               add_special_tokens: bool = True, truncation: Any = False,
               max_length: Optional[int] = None) -> List[int]:
        """The ids of one text (or pair): ``[CLS] A [SEP] (B [SEP])``."""
        return self(text, text_pair, add_special_tokens=add_special_tokens,
                    truncation=truncation, max_length=max_length)["input_ids"]

    def __call__(self, text: TextInput, text_pair: Optional[TextInput] = None,
                 padding: Any = False, truncation: Any = False,
                 max_length: Optional[int] = None, return_tensors: Optional[str] = None,
                 add_special_tokens: bool = True) -> BatchEncoding:
        """Tokenise a text or a list of texts (with ``text_pair``: pairs), as Hugging Face.

        padding: False (none), True / "longest" (to the longest in the batch) or
            "max_length" (to max_length, default model_max_length); always on the right.
        truncation: False, True / "longest_first" (drop tokens from the longer of a pair
            first), "only_first" or "only_second"; to max_length (default
            model_max_length), special tokens included.
        return_tensors: None (Python lists), "np" (int64 arrays) or "ta" (tinyattn Tensors).
        """
        single = isinstance(text, str)
        texts = _text_list(text, "text")
        pairs = None if text_pair is None else _text_list(text_pair, "text_pair")
        if pairs is not None and (isinstance(text_pair, str) != single or
                                  len(pairs) != len(texts)):
            raise ValueError(f"text_pair must match text: one str for one str, or a list of "
                             f"the same length ({len(texts)}), got {len(pairs)}")
        padding, truncation = _padding_mode(padding), _truncation_mode(truncation)
        if return_tensors not in (None, "np", "ta", "tinyattn"):
            raise ValueError(f"return_tensors must be None, 'np' or 'ta', got "
                             f"{return_tensors!r}" + ("; tinyattn never imports torch: use "
                                                      "'np' or 'ta'" if return_tensors == "pt"
                                                      else ""))
        limit = self.model_max_length if max_length is None else max_length
        if not isinstance(limit, int) or isinstance(limit, bool) or limit < 1:
            raise ValueError(f"max_length must be a positive int, got {max_length!r}")
        rows = [self._encode_one(a, None if pairs is None else pairs[i], add_special_tokens,
                                 truncation, limit) for i, a in enumerate(texts)]
        if padding != "do_not_pad" and rows:
            width = limit if padding == "max_length" else max(len(r[0]) for r in rows)
            rows = [(ids + [self.pad_token_id] * (width - len(ids)),
                     types + [0] * (width - len(ids)), [1] * len(ids) + [0] * (width - len(ids)))
                    for ids, types, _ in rows]
        columns = {"input_ids": [r[0] for r in rows], "token_type_ids": [r[1] for r in rows],
                   "attention_mask": [r[2] for r in rows]}
        if return_tensors is None:
            return BatchEncoding({k: v[0] if single else v for k, v in columns.items()})
        lengths = {len(r) for r in columns["input_ids"]}
        if len(lengths) > 1:
            raise ValueError(f"return_tensors={return_tensors!r} needs every sequence of one "
                             f"length, got lengths {sorted(lengths)}; pass padding=True")
        arrays = {k: np.array(v, dtype=np.int64).reshape(len(rows), -1)
                  for k, v in columns.items()}
        if return_tensors != "np":
            arrays = {k: from_numpy(v) for k, v in arrays.items()}
        return BatchEncoding(arrays)

    def _encode_one(self, text: str, pair: Optional[str], special: bool, truncation: str,
                    limit: int) -> Tuple[List[int], List[int], List[int]]:
        first = self.convert_tokens_to_ids(self.tokenize(text))
        second = None if pair is None else self.convert_tokens_to_ids(self.tokenize(pair))
        if truncation != "do_not_truncate":
            added = (2 if second is None else 3) if special else 0
            if limit < added:
                raise ValueError(f"max_length={limit} leaves no room for the {added} special "
                                 f"tokens; use max_length >= {added + 1}")
            first, second = _truncate(first, second, limit - added, truncation)
        if not special:
            ids = first + (second or [])
            return ids, [0] * len(first) + [1] * len(second or []), [1] * len(ids)
        ids = [self.cls_token_id] + first + [self.sep_token_id]
        types = [0] * len(ids)
        if second is not None:
            ids += second + [self.sep_token_id]
            types += [1] * (len(second) + 1)
        return ids, types, [1] * len(ids)

    # ------------------------------------------------------------------ decoding
    def decode(self, ids: Any, skip_special_tokens: bool = False,
               clean_up_tokenization_spaces: bool = False) -> str:
        """Text of ``ids``: "##" pieces glued to the piece before, a space between words,
        no space before . ? ! , (Hugging Face's WordPiece decoder). Lower-casing and accent
        stripping are not undone."""
        tokens = self.convert_ids_to_tokens(_flat_ids(ids), skip_special_tokens)
        words: List[str] = []
        for i, token in enumerate(tokens):
            if i:
                token = token[2:] if token.startswith("##") else " " + token
            for dirty, clean in _CLEANUP:
                token = token.replace(dirty, clean)
            words.append(token)
        text = "".join(words)
        if clean_up_tokenization_spaces:
            for dirty, clean in _CLEANUP:
                text = text.replace(dirty, clean)
        return text

    def batch_decode(self, sequences: Any, **kwargs: Any) -> List[str]:
        return [self.decode(ids, **kwargs) for ids in sequences]


# ---------------------------------------------------------------------------- helpers
def _flat_ids(ids: Any) -> List[int]:
    data = ids.numpy() if isinstance(ids, Tensor) else np.asarray(ids)
    if data.ndim > 1 or (data.size and data.dtype.kind not in "iu"):
        raise ValueError(f"expected a 1-D sequence of token ids, got shape {data.shape} of "
                         f"{data.dtype}; decode one row at a time (or use batch_decode)")
    return [int(i) for i in data.reshape(-1)]


def _text_list(value: Any, name: str) -> List[str]:
    items = [value] if isinstance(value, str) else value
    if not isinstance(items, (list, tuple)):
        raise TypeError(f"{name} must be a str or a list of str, got {type(value).__name__}")
    for i, item in enumerate(items):
        if not isinstance(item, str):
            raise TypeError(f"{name}[{i}] is a {type(item).__name__}, not a str")
    return list(items)


def _padding_mode(padding: Any) -> str:
    table = {True: "longest", False: "do_not_pad", "longest": "longest",
             "max_length": "max_length", "do_not_pad": "do_not_pad", None: "do_not_pad"}
    if not isinstance(padding, (bool, str, type(None))) or padding not in table:
        raise ValueError(f"padding must be True, False, 'longest' or 'max_length', got "
                         f"{padding!r}")
    return table[padding]


def _truncation_mode(truncation: Any) -> str:
    table = {True: "longest_first", False: "do_not_truncate", None: "do_not_truncate",
             "longest_first": "longest_first", "only_first": "only_first",
             "only_second": "only_second", "do_not_truncate": "do_not_truncate"}
    if not isinstance(truncation, (bool, str, type(None))) or truncation not in table:
        raise ValueError(f"truncation must be True, False, 'longest_first', 'only_first' or "
                         f"'only_second', got {truncation!r}")
    return table[truncation]


def _truncate(first: List[int], second: Optional[List[int]], room: int, mode: str
              ) -> Tuple[List[int], Optional[List[int]]]:
    """Cut ``first`` (and ``second``) to ``room`` tokens in all, as tokenizers does."""
    if second is None:
        if mode == "only_second":
            raise ValueError("truncation='only_second' needs a text_pair")
        return first[:room], None
    if len(first) + len(second) <= room:
        return first, second
    if mode == "only_first":
        keep = room - len(second)
        if keep < 0:
            raise ValueError(f"truncation='only_first' cannot fit: the second text alone has "
                             f"{len(second)} tokens, more than the {room} available")
        return first[:keep], second
    if mode == "only_second":
        keep = room - len(first)
        if keep < 0:
            raise ValueError(f"truncation='only_second' cannot fit: the first text alone has "
                             f"{len(first)} tokens, more than the {room} available")
        return first, second[:keep]
    # longest_first, as tokenizers computes it: with n1 <= n2 the two lengths, the shorter
    # is kept whole when it fits in half the room, else both get half (the longer the odd one)
    n1, n2 = len(first), len(second)
    swap = n1 > n2
    if swap:
        n1, n2 = n2, n1
    n2 = n1 if n1 > room else max(n1, room - n1)
    if n1 + n2 > room:
        n1 = room // 2
        n2 = n1 + room % 2
    if swap:
        n1, n2 = n2, n1
    return first[:n1], second[:n2]
