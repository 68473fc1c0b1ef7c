"""The model commands check what they will write before they work, and decode what a padded
vocabulary samples: embed/attention --out into a missing folder, attention --out
with a file name that is not a PNG, --max-tokens beyond the model's positions, generate with a
model vocabulary larger than its tokenizer's."""
import json

import numpy as np
import pytest

import tinyattn as ta
import tinyattn.nn as nn
from conftest import squash
from tinyattn.cli import main
from tinyattn.models import BertModel
from tinyattn.models.bert import BertConfig


@pytest.fixture
def bert(tmp_path):
    ta.manual_seed(0)
    model = BertModel(BertConfig(vocab_size=12, hidden_size=8, num_hidden_layers=1,
                                 num_attention_heads=2, intermediate_size=16,
                                 max_position_embeddings=16))
    folder = tmp_path / "bert"
    model.save_pretrained(str(folder))
    (folder / "vocab.txt").write_text("\n".join(
        ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "cat", "sat"]) + "\n")
    return str(folder)


def test_embed_into_a_missing_folder_is_refused_before_any_work(bert, tmp_path, capsys):
    with pytest.raises(SystemExit) as info:
        main(["embed", "the cat", "--model", bert, "--out", str(tmp_path / "no" / "x.npy")])
    assert info.value.code == 2
    err = capsys.readouterr()
    assert "no such folder" in squash(err.err) and "cosine" not in err.out


def test_attention_into_a_missing_folder_is_refused(bert, tmp_path, capsys):
    pytest.importorskip("matplotlib")
    with pytest.raises(SystemExit) as info:
        main(["attention", "the cat", "--model", bert, "--out", str(tmp_path / "no" / "a.png")])
    assert info.value.code == 2 and "no such folder" in squash(capsys.readouterr().err)


def test_attention_never_writes_a_picture_over_a_file_that_is_not_one(bert, tmp_path, capsys):
    pytest.importorskip("matplotlib")
    notes = tmp_path / "notes.md"
    notes.write_text("my notes\n")
    with pytest.raises(SystemExit) as info:
        main(["attention", "the cat", "--model", bert, "--out", str(notes)])
    assert info.value.code == 2 and ".png" in capsys.readouterr().err
    assert notes.read_text() == "my notes\n"
    picture = tmp_path / "a.png"                                        # control
    assert main(["attention", "the cat", "--model", bert, "--out", str(picture)]) == 0
    assert picture.read_bytes().startswith(b"\x89PNG")


def test_max_tokens_beyond_the_models_positions_is_refused(bert, tmp_path, capsys):
    pytest.importorskip("matplotlib")
    with pytest.raises(SystemExit) as info:
        main(["attention", "the cat sat " * 20, "--model", bert, "--max-tokens", "1000",
              "--out", str(tmp_path / "a.png")])
    assert info.value.code == 2
    assert "16" in capsys.readouterr().err and not (tmp_path / "a.png").exists()
    # the default (40) is cut to the model's 16 positions
    assert main(["attention", "the cat sat " * 20, "--model", bert, "--out",
                 str(tmp_path / "b.png")]) == 0


def test_generate_with_a_padded_model_vocabulary_decodes(tmp_path, capsys):
    """A model vocabulary of 300 beside a 257-token tokenizer (padded, as many checkpoints
    are): an id without a token must not crash decode."""
    folder = tmp_path / "gpt"
    byte_tokens = {chr(0x100 + i) if i < 33 else chr(i) for i in range(256)}
    vocab = {t: i for i, t in enumerate(sorted(byte_tokens))}
    vocab = {t: i for i, t in enumerate(vocab)}
    assert len(vocab) == 256
    vocab["<|endoftext|>"] = 256
    ta.manual_seed(0)
    model = nn.GPT(nn.GPTConfig(vocab_size=300, block_size=16, n_layer=1, n_head=2, d_model=8,
                                activation="gelu_tanh"))
    model.save_pretrained(str(folder))
    from tinyattn.io import load_safetensors, save_safetensors
    weights = dict(load_safetensors(str(folder / "model.safetensors"), mmap=False))
    wte = weights["transformer.wte.weight"].copy()
    wte[:257] = 0.0                                   # only the padding ids can win:
    wte[257:] = 1.0
    weights["transformer.wte.weight"] = wte
    # the final layer norm's output has zero mean, so sum(h) (a padding id's logit through the
    # tied head) is 0 give or take rounding; a constant output of ones makes it 8 for certain
    weights["transformer.ln_f.weight"] = np.zeros_like(weights["transformer.ln_f.weight"])
    weights["transformer.ln_f.bias"] = np.ones_like(weights["transformer.ln_f.bias"])
    save_safetensors(weights, str(folder / "model.safetensors"))
    (folder / "vocab.json").write_text(json.dumps(vocab))
    (folder / "merges.txt").write_text("#version: 0.2\n")
    code = main(["generate", "--model", str(folder), "--prompt", "hi", "--temperature", "0",
                 "--max-new-tokens", "3"])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    assert captured.out.startswith("hi") and "257" in captured.err
