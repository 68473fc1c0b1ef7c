"""GPT2Tokenizer: the pre-tokeniser against the `regex` package, ids and text against Hugging
Face (`tokenizers` and `transformers`) on a byte-level BPE trained here, the exact round
trip (hypothesis), invalid UTF-8 on decode, batches, bad files; negative controls."""
import json
import re

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from tinyattn.models import GPT2Tokenizer
from tinyattn.models.gpt2_tokenizer import bytes_to_unicode
from tinyattn.models.pretokenize import char_class, split_gpt2

PATTERN = r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""

CORPUS = [
    "Hello world", "Hello, world! How are you?", "", " ", "   ", "\n", "\n\n\n", "\t",
    "  two  spaces  ", "ends with spaces   ", "   starts with spaces", "a\n\nb\t\tc  \n d",
    "line one\r\nline two\r\n", "tabs\t\tand\t \tspaces", "a \n b", "x \n\n y",
    "don't I'll we've they're she'd he's it'm", "'S 'LL 'Re (capitals are not contractions)",
    "''''", "'ll've'd", "rock 'n' roll", " 's", "it's 's",
    "café naïve résumé Ångström Zürich", "e\u0301 combining accent", "ﬁ ligature",
    "東京は日本の首都です。", "中文分词测试", "한국어 텍스트", "Привет, мир!", "مرحبا بالعالم",
    "नमस्ते दुनिया", "ไทย", "😀👍🏽 👨‍👩‍👧‍👦 🇫🇷", "emoji😀inside",
    "12345 6,789 3.14159 -42 1e-10", "２０２４ fullwidth", "x² ½ ¾ Ⅻ ⑤", "v1.2.3-beta+build.5",
    "https://example.com/path?query=1&b=two#frag", "mailto:someone@example.org",
    "def f(x):\n    return x ** 2  # square\n", "if (a && b) { c++; }\n\tprintf(\"%d\\n\", c);",
    "<html><body class=\"x\">Hi</body></html>", "$$ \\frac{a}{b} $$", "snake_case_name = 3",
    "\x00\x01\x1c\x1d\x1e\x1f\x7f", "\x85next\xa0nbsp\u2028\u2029\u3000ideographic",
    "zero\u200bwidth\u180emongolian", "\ufeffBOM", "a" * 300, "ab" * 150,
    "<|endoftext|>", "a<|endoftext|>b", "<|endoftext|><|endoftext|>", "<|endoftext",
    "The quick brown fox jumps over the lazy dog. " * 3,
]


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """A byte-level BPE trained by `tokenizers` on Python's own documentation."""
    tokenizers = pytest.importorskip("tokenizers")
    from pydoc_data.topics import topics
    folder = tmp_path_factory.mktemp("bpe")
    bpe = tokenizers.ByteLevelBPETokenizer()
    bpe.train_from_iterator(list(topics.values())[:40], vocab_size=1500, min_frequency=2,
                            special_tokens=["<|endoftext|>"], show_progress=False)
    bpe.save_model(str(folder))
    return folder, bpe


@pytest.fixture(scope="module")
def ours(trained):
    return GPT2Tokenizer.from_pretrained(str(trained[0]))


# ------------------------------------------------------------------ pre-tokenisation
def test_split_matches_the_regex_package_on_the_corpus():
    regex = pytest.importorskip("regex")
    pattern = regex.compile(PATTERN)
    for text in CORPUS:
        assert split_gpt2(text) == pattern.findall(text), text


@given(st.text(st.characters(exclude_categories=("Cs", "Cn", "Co")), max_size=60))
def test_split_matches_the_regex_package_on_any_text(text):
    regex = pytest.importorskip("regex")
    assert split_gpt2(text) == regex.findall(PATTERN, text)


@given(st.text(alphabet=st.sampled_from(" \t\n\xa0a1.'é"), max_size=30))
def test_split_matches_on_dense_whitespace_and_apostrophes(text):
    regex = pytest.importorskip("regex")
    assert split_gpt2(text) == regex.findall(PATTERN, text)


def test_every_assigned_character_is_classed_as_the_regex_package_does():
    """\\p{L}, \\p{N} and \\s for all of Unicode at once. Characters that Python's own
    unicodedata does not know (assigned in a later Unicode version) are left out: they are
    'other' here and may be letters to `regex`."""
    regex = pytest.importorskip("regex")
    import unicodedata
    text = "".join(chr(c) for c in range(0x110000)
                   if unicodedata.category(chr(c)) not in ("Cn", "Cs"))
    for label, pattern in (("L", r"\p{L}"), ("N", r"\p{N}"), ("S", r"\s")):
        expected = set(regex.findall(pattern, text))
        ours = {ch for ch in text if char_class(ch) == label}
        assert ours == expected, (label, sorted(ours ^ expected)[:10])


def test_negative_control_pythons_re_classes_differ_on_the_corpus():
    """Python's re (\\s = isspace, letters as [^\\W\\d_]) splits some corpus texts
    differently: the corpus exercises the difference this module exists to get right."""
    naive = re.compile(r"""'s|'t|'re|'ve|'m|'ll|'d| ?[^\W\d_]+| ?\d+| ?[^\s\w]+|\s+(?!\S)|\s+""")
    assert any(naive.findall(text) != split_gpt2(text) for text in CORPUS)


# ------------------------------------------------------------------ ids against Hugging Face
def test_ids_and_text_equal_tokenizers_byte_level_bpe(trained, ours):
    _, bpe = trained
    for text in CORPUS:
        ids = ours.encode(text)
        assert ids == bpe.encode(text).ids, text
        assert ours.decode(ids) == bpe.decode(ids, skip_special_tokens=False) == text


def test_ids_and_text_equal_transformers_gpt2_tokenizer(trained, ours):
    transformers = pytest.importorskip("transformers")
    hf = transformers.GPT2Tokenizer.from_pretrained(str(trained[0]))
    for text in CORPUS:
        ids = ours.encode(text)
        assert ids == hf.encode(text), text
        assert ours.decode(ids) == hf.decode(ids, clean_up_tokenization_spaces=False)
    assert ours.eos_token_id == hf.eos_token_id
    batch = ["hi there", "a much longer sentence here"]
    assert ours(batch) == {k: v for k, v in hf(batch).items()}
    ours.pad_token = hf.pad_token = "<|endoftext|>"
    try:
        padded = ours(batch, padding=True, return_tensors="np")
        theirs = hf(batch, padding=True, return_tensors="np")
        for key in ("input_ids", "attention_mask"):
            assert np.array_equal(padded[key], theirs[key])
    finally:
        ours.pad_token = None


@given(st.text(st.characters(exclude_categories=("Cs", "Cn", "Co")), max_size=40))
def test_ids_equal_tokenizers_on_any_text(trained, ours, text):
    assert ours.encode(text) == trained[1].encode(text).ids


def test_negative_control_merge_order_matters(trained, ours):
    """Applying the merges highest rank first gives other ids: the comparisons above would
    catch a BPE that ignored the ranks."""
    vocab = dict(ours.encoder)
    reversed_merges = sorted(ours.bpe_ranks, key=ours.bpe_ranks.get, reverse=True)
    wrong = GPT2Tokenizer(vocab, reversed_merges)
    assert any(wrong.encode(t) != ours.encode(t) for t in CORPUS)


def test_a_tokenizer_json_alone_loads_the_same_tokenizer(trained, tmp_path):
    tokenizers = pytest.importorskip("tokenizers")
    _, bpe = trained
    bpe.save(str(tmp_path / "tokenizer.json"))
    from_json = GPT2Tokenizer.from_pretrained(str(tmp_path))
    for text in CORPUS:
        assert from_json.encode(text) == bpe.encode(text).ids, text
    assert from_json.eos_token_id == bpe.token_to_id("<|endoftext|>")
    other = tmp_path / "wordpiece"
    other.mkdir()
    wordpiece = tokenizers.BertWordPieceTokenizer()
    wordpiece.train_from_iterator(["some text for a vocabulary"], vocab_size=60,
                                  show_progress=False)
    wordpiece.save(str(other / "tokenizer.json"))
    with pytest.raises(ValueError, match="is not a BPE tokenizer"):
        GPT2Tokenizer.from_pretrained(str(other))


# ------------------------------------------------------------------ round trip and decode
@given(st.text())
def test_round_trip_is_exact_for_any_string(text):
    tok = _byte_only_tokenizer()
    assert tok.decode(tok.encode(text)) == text


@given(st.text(max_size=50))
def test_round_trip_with_merges(ours, text):
    assert ours.decode(ours.encode(text)) == text


def test_invalid_utf8_in_ids_decodes_with_replacement_as_hugging_face(trained, ours):
    _, bpe = trained
    byte_id = {b: ours.encoder[ch] for b, ch in bytes_to_unicode().items()}
    cases = [[0xFF], [0xE6, 0x9D], [0x61, 0xE6, 0x9D, 0x62], [0xF0, 0x9F, 0x98],
             [0xC0, 0xAF], [0xED, 0xA0, 0x80], [0x80, 0x80, 0x41]]
    for raw in cases:
        ids = [byte_id[b] for b in raw]
        expected = bytes(raw).decode("utf-8", errors="replace")
        assert ours.decode(ids) == expected == bpe.decode(ids), raw
    halves = ours.encode("東")                        # one character, three bytes
    assert ours.decode(halves[:1]) == "\ufffd" or len(halves) == 1


def test_special_token_and_skip_special_tokens(ours):
    eos = ours.eos_token_id
    ids = ours.encode("a<|endoftext|>b")
    assert eos in ids and ours.decode(ids) == "a<|endoftext|>b"
    assert ours.decode(ids, skip_special_tokens=True) == "ab"
    assert ours.tokenize("a the")[1] == "Ġthe"


def test_bytes_to_unicode_is_a_bijection_onto_printable_characters():
    table = bytes_to_unicode()
    assert len(set(table.values())) == 256
    assert table[ord("A")] == "A" and table[0x20] == "Ġ" and table[0x0A] == "Ċ"
    assert all(ch.isprintable() and not ch.isspace() for ch in table.values())


# ------------------------------------------------------------------ errors
def test_clear_errors(tmp_path, ours):
    with pytest.raises(FileNotFoundError, match="no such folder"):
        GPT2Tokenizer.from_pretrained(str(tmp_path / "missing"))
    with pytest.raises(FileNotFoundError, match="vocab.json not found.*tokenizer.json"):
        GPT2Tokenizer.from_pretrained(str(tmp_path))
    (tmp_path / "vocab.json").write_text("{not json")
    (tmp_path / "merges.txt").write_text("#version: 0.2\na b\n")
    with pytest.raises(ValueError, match="not valid JSON"):
        GPT2Tokenizer.from_pretrained(str(tmp_path))
    (tmp_path / "vocab.json").write_text(json.dumps({"a": 0}))
    (tmp_path / "merges.txt").write_text("#version: 0.2\na b c\n")
    with pytest.raises(ValueError, match="line 2 is 'a b c'"):
        GPT2Tokenizer.from_pretrained(str(tmp_path))
    (tmp_path / "merges.txt").write_text("")
    with pytest.raises(ValueError, match="'b' .* is not in the vocabulary"):
        GPT2Tokenizer.from_pretrained(str(tmp_path)).encode("ab")
    with pytest.raises(ValueError, match="id 99999 is not in the vocabulary"):
        ours.decode([1, 99999])
    with pytest.raises(ValueError, match="lone surrogate"):
        ours.encode("a\ud800b")
    with pytest.raises(TypeError, match="must be a str"):
        ours.encode(b"bytes")
    with pytest.raises(ValueError, match="needs a pad token"):
        ours(["a", "bb"], padding=True)
    with pytest.raises(ValueError, match="pass padding=True"):
        ours(["a", "a b c"], return_tensors="np")


def _byte_only_tokenizer():
    """256 byte symbols and no merges: the round trip checks the byte layer alone."""
    vocab = {ch: i for i, ch in enumerate(bytes_to_unicode().values())}
    vocab["<|endoftext|>"] = 256
    return GPT2Tokenizer(vocab, [])
