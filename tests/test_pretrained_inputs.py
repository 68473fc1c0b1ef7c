"""Hostile or odd pretrained folders give a clear error naming the file: a weight
under both its bare and its transformer.-prefixed name, a config.json that is a list, a
vocab.txt or merges.txt that is not UTF-8."""
import json

import numpy as np
import pytest

import tinyattn as ta
import tinyattn.nn as nn
from conftest import squash
from tinyattn.io import PretrainedError, load_safetensors, save_safetensors
from tinyattn.models import BertModel, BertTokenizer, GPT2Tokenizer
from tinyattn.models.bert import BertConfig


def _gpt_folder(tmp_path):
    ta.manual_seed(0)
    model = nn.GPT(nn.GPTConfig(vocab_size=20, block_size=8, n_layer=1, n_head=2, d_model=8,
                                activation="gelu_tanh"))
    folder = tmp_path / "gpt"
    model.save_pretrained(str(folder))
    return folder


def test_a_weight_under_two_names_is_refused(tmp_path):
    folder = _gpt_folder(tmp_path)
    weights = dict(load_safetensors(str(folder / "model.safetensors"), mmap=False))
    assert "transformer.wte.weight" in weights
    weights["wte.weight"] = weights["transformer.wte.weight"] + 1.0
    save_safetensors(weights, str(folder / "model.safetensors"))
    with pytest.raises(PretrainedError) as info:
        nn.GPT.from_pretrained(str(folder))
    assert "wte.weight" in str(info.value) and "transformer.wte.weight" in str(info.value)


def test_the_prefixed_names_alone_still_load(tmp_path):
    """Negative control: the folder as saved loads."""
    assert nn.GPT.from_pretrained(str(_gpt_folder(tmp_path))).config.vocab_size == 20


def test_a_gpt_config_that_is_a_list_is_refused(tmp_path):
    folder = _gpt_folder(tmp_path)
    (folder / "config.json").write_text(json.dumps([1, 2]))
    with pytest.raises(PretrainedError) as info:
        nn.GPT.from_pretrained(str(folder))
    assert "config.json" in str(info.value) and "list" in str(info.value)


def _bert_folder(tmp_path):
    ta.manual_seed(0)
    model = BertModel(BertConfig(vocab_size=12, hidden_size=8, num_hidden_layers=1,
                                 num_attention_heads=2, intermediate_size=16,
                                 max_position_embeddings=16))
    folder = tmp_path / "bert"
    model.save_pretrained(str(folder))
    (folder / "vocab.txt").write_text("\n".join(
        ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "cat", "sat"]) + "\n")
    return folder


def test_a_bert_config_that_is_a_list_is_refused(tmp_path):
    folder = _bert_folder(tmp_path)
    (folder / "config.json").write_text("[]")
    with pytest.raises(PretrainedError) as info:
        BertModel.from_pretrained(str(folder))
    assert "config.json" in str(info.value)


def test_a_vocab_txt_that_is_not_utf8_names_the_file(tmp_path):
    folder = _bert_folder(tmp_path)
    assert BertTokenizer.from_pretrained(str(folder))("the cat")["input_ids"]   # control
    (folder / "vocab.txt").write_bytes(b"[PAD]\n[UNK]\n\xff\xfe caf\xe9\n")
    with pytest.raises(PretrainedError) as info:
        BertTokenizer.from_pretrained(str(folder))
    assert "vocab.txt" in str(info.value) and "UTF-8" in squash(info.value)


def test_a_merges_txt_that_is_not_utf8_names_the_file(tmp_path):
    folder = tmp_path / "bpe"
    folder.mkdir()
    (folder / "vocab.json").write_text(json.dumps({"a": 0, "b": 1, "ab": 2}))
    (folder / "merges.txt").write_text("#version: 0.2\na b\n")
    assert GPT2Tokenizer.from_pretrained(str(folder))                         # control
    (folder / "merges.txt").write_bytes(b"#version: 0.2\na \xe9\n")
    with pytest.raises(ValueError) as info:
        GPT2Tokenizer.from_pretrained(str(folder))
    assert "merges.txt" in str(info.value) and "UTF-8" in squash(info.value)
