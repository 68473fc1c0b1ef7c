"""``python -m tinyattn generate`` on a small GPT-2 folder built here (a random transformers
model and a byte-level BPE trained by `tokenizers`): the text equals what the Python API
gives, seeds repeat, and bad input gives a message and a non-zero exit."""
import json
import subprocess
import sys

import numpy as np
import pytest

import tinyattn.nn as nn
from tinyattn.cli import main
from tinyattn.models import GPT2Tokenizer


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    tokenizers = pytest.importorskip("tokenizers")
    from pydoc_data.topics import topics
    path = tmp_path_factory.mktemp("tiny-gpt2")
    bpe = tokenizers.ByteLevelBPETokenizer()
    bpe.train_from_iterator(list(topics.values())[:20], vocab_size=400, min_frequency=2,
                            special_tokens=["<|endoftext|>"], show_progress=False)
    bpe.save_model(str(path))
    vocab = len(json.loads((path / "vocab.json").read_text()))
    torch.manual_seed(0)
    config = transformers.GPT2Config(vocab_size=vocab, n_positions=64, n_embd=32, n_layer=2,
                                     n_head=2, bos_token_id=0, eos_token_id=0)
    transformers.GPT2LMHeadModel(config).save_pretrained(path, safe_serialization=True)
    return str(path)


def test_greedy_text_equals_the_python_api(folder, capsys):
    assert main(["generate", "--model", folder, "--prompt", "The value of x is",
                 "--max-new-tokens", "12", "--temperature", "0"]) == 0
    out, err = capsys.readouterr()
    tokenizer = GPT2Tokenizer.from_pretrained(folder)
    model = nn.GPT.from_pretrained(folder)
    ids = tokenizer.encode("The value of x is")
    new = model.generate(np.array([ids]), 12, temperature=0).numpy()[0, len(ids):].tolist()
    if tokenizer.eos_token_id in new:
        new = new[:new.index(tokenizer.eos_token_id)]
    assert out == tokenizer.decode(ids + new) + "\n"
    assert out.startswith("The value of x is")
    assert "tokens/s" in err and "seed" in err


def test_sampling_repeats_with_a_seed(folder, capsys):
    args = ["generate", "--model", folder, "--prompt", "def f(x):", "--max-new-tokens", "15",
            "--temperature", "1.5", "--top-k", "50", "--top-p", "0.95"]
    outputs = []
    for seed in ("3", "3", "4"):
        assert main(args + ["--seed", seed]) == 0
        outputs.append(capsys.readouterr().out)
    assert outputs[0] == outputs[1] != outputs[2]


def test_empty_prompt_starts_from_endoftext(folder, capsys):
    assert main(["generate", "--model", folder, "--prompt", "", "--max-new-tokens", "3",
                 "--seed", "0"]) == 0
    assert "<|endoftext|>" not in capsys.readouterr().out


def test_errors_are_messages_with_a_non_zero_exit(folder, tmp_path, capsys):
    assert main(["generate", "--model", str(tmp_path / "nope"), "--prompt", "hi"]) == 1
    assert "no such folder" in capsys.readouterr().err
    assert main(["generate", "--model", str(tmp_path), "--prompt", "hi"]) == 1
    assert "vocab.json not found" in capsys.readouterr().err
    for flags, message in ((["--temperature", "nan"], "temperature must be a finite number"),
                           (["--top-p", "1.5"], "top_p must be a probability"),
                           (["--top-k", "0"], "top_k must be a whole number"),
                           (["--max-new-tokens", "-1"], "--max-new-tokens must be"),
                           (["--seed", "-2"], "--seed must be >= 0")):
        with pytest.raises(SystemExit) as exit_info:
            main(["generate", "--model", folder, "--prompt", "hi"] + flags)
        assert exit_info.value.code == 2
        assert message in capsys.readouterr().err
    with pytest.raises(SystemExit) as exit_info:
        main(["generate", "--prompt", "hi"])
    assert exit_info.value.code == 2 and "--model" in capsys.readouterr().err


def test_the_command_runs_as_a_module(folder):
    result = subprocess.run([sys.executable, "-m", "tinyattn", "generate", "--model", folder,
                             "--prompt", "Hello", "--max-new-tokens", "4", "--seed", "1"],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("Hello")
