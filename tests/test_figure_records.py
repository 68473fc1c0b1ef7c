"""The pictures drawn from recorded runs show what their captions claim, checked on the
records they are drawn from (docs/results/*.json, written by docs/make_figures.py), not on
pixels: the RNN-to-attention run (examples/rnn_to_attention.py) and the two-process DDP
timeline (docs/measure_distributed.py). Each check has a negative control on a made-up
record that the claim does not hold for."""
from __future__ import annotations

import importlib.util
import json
import pathlib

import numpy as np
import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
RESULTS = ROOT / "docs" / "results"
ATTENTION_MODELS = ("Bahdanau", "Luong dot", "Luong general")


def _load(path: pathlib.Path, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _record(name: str) -> dict:
    path = RESULTS / name
    assert path.is_file(), f"{path} is missing: run python docs/make_figures.py --figures ..."
    return json.loads(path.read_text(encoding="utf-8"))


# ------------------------------------------------------------ rnn_alignment.png
def anti_diagonal_rows(weights: np.ndarray) -> float:
    """The share of target steps t whose largest weight lies on the anti-diagonal, within one
    position of source position L-1-t (the digit step t outputs). The one to its right is
    where a left-to-right encoder's state has just read that digit (notebook 10 shows the
    shift); a model trained for 150 steps is not sharper than one position either way."""
    weights = np.asarray(weights)
    length = weights.shape[0]
    steps = np.arange(length)
    return float(np.mean(np.abs(weights.argmax(axis=1) - (length - 1 - steps)) <= 1))


def test_the_rnn_record_is_a_full_run_of_every_model():
    record = _record("rnn_to_attention.json")
    assert not record["settings"]["quick"] and record["steps"] >= 100
    example = _load(ROOT / "examples" / "rnn_to_attention.py", "rnn_to_attention")
    assert list(record["accuracy"]) == list(example.MODELS) == list(record["reach"])
    for name, values in record["accuracy"].items():
        assert len(values) == len(record["lengths"]), f"{name}: the run did not finish"
        assert len(record["reach"][name]) == record["lengths"][-1]


def band_density_ratio(weights: np.ndarray) -> float:
    """Mean weight per cell in the band around the anti-diagonal (source positions L-2-t,
    L-1-t, L-t) over the mean weight per cell outside it: 1 for uniform rows."""
    weights = np.asarray(weights)
    length = weights.shape[0]
    steps = np.arange(length)[:, None]
    band = np.abs(np.arange(length)[None, :] - (length - 1 - steps)) <= 1
    return float(weights[band].mean() / max(weights[~band].mean(), 1e-12))


def test_alignment_picture_is_anti_diagonal_on_reversal():
    """rnn_alignment.png's caption: target step t attends to the anti-diagonal."""
    weights = np.asarray(_record("rnn_to_attention.json")["alignment"])
    assert weights.shape[0] == weights.shape[1]
    np.testing.assert_allclose(weights.sum(axis=1), 1.0, atol=1e-5)   # rows are softmaxes
    assert anti_diagonal_rows(weights) >= 0.75
    assert band_density_ratio(weights) >= 2.0


def test_negative_control_a_diagonal_or_uniform_alignment_is_not_anti_diagonal():
    assert anti_diagonal_rows(np.eye(6)) < 0.5        # the diagonal crosses it once
    assert anti_diagonal_rows(np.eye(6)[::-1]) == 1.0
    assert anti_diagonal_rows(np.full((6, 6), 1 / 6)) < 0.5
    assert band_density_ratio(np.full((12, 12), 1 / 12)) == pytest.approx(1.0)
    assert band_density_ratio(np.eye(12)) < 2.0
    assert band_density_ratio(np.eye(12)[::-1]) > 10


def _decay(reach) -> float:
    """How much smaller the gradient at position 0 is than at the nearest position L-1."""
    return float(reach[-1] / reach[0])


def test_gradient_reach_fades_without_attention_and_not_with_it():
    """rnn_gradient_reach.png's caption: from the loss on the last target token (which needs
    source position 0), the plain encoder-decoder's gradient at position 0 is far below its
    gradient at position L-1 (as initialised: over 10x; trained: still over 2x), while
    through attention position 0 is not behind."""
    record = _record("rnn_to_attention.json")
    untrained = {k: np.asarray(v) for k, v in record["reach_untrained"].items()}
    trained = {k: np.asarray(v) for k, v in record["reach"].items()}
    assert _decay(untrained["no attention"]) > 10
    assert _decay(trained["no attention"]) > 2
    for name in ATTENTION_MODELS:
        assert _decay(untrained[name]) < 2, name
        assert untrained[name][0] > 10 * untrained["no attention"][0], name
        assert _decay(trained[name]) < _decay(trained["no attention"]) / 2, name


def test_attention_is_at_least_as_accurate_at_the_longest_length():
    """rnn_accuracy_vs_length.png's caption: at the longest length each attention model
    beats the model without attention, and the gap grows with the length."""
    accuracy = _record("rnn_to_attention.json")["accuracy"]
    plain = accuracy["no attention"]
    for name in (*ATTENTION_MODELS, "transformer"):
        assert accuracy[name][-1] >= plain[-1], name
        assert accuracy[name][-1] - plain[-1] >= accuracy[name][0] - plain[0], name


def test_the_example_draws_what_the_record_holds(tmp_path):
    """The pictures come from the record: --plot-only redraws the three from it."""
    pytest.importorskip("matplotlib")
    example = _load(ROOT / "examples" / "rnn_to_attention.py", "rnn_to_attention")
    record = RESULTS / "rnn_to_attention.json"
    assert example.main(["--plot-only", str(record), "--out-dir", str(tmp_path)]) == 0
    for name in ("accuracy_vs_length.png", "gradient_reach.png", "alignment.png"):
        assert (tmp_path / name).stat().st_size > 1000


# ------------------------------------------------------------ ddp_timeline.png
def _measure():
    return _load(ROOT / "docs" / "measure_distributed.py", "measure_distributed")


def test_ddp_record_shows_all_reduce_overlapping_the_backward():
    """ddp_timeline.png's caption: some buckets start (and finish) their all-reduce before
    the last gradient of the backward was computed."""
    record = _record("ddp_timeline.json")
    assert record["world"] == 2 and record["buckets"] > 1
    measure = _measure()
    spans = measure.timeline_spans(record)
    end = spans["gradients_computed"][1]
    early = measure.overlapping_buckets(record)
    assert early, "no bucket's all-reduce started before the backward ended"
    assert any(spans["buckets"][i]["all_reduce"][1] < end for i in early)
    for bucket in spans["buckets"]:                     # a bucket starts once it is whole
        assert bucket["all_reduce"][0] >= max(bucket["ready"], default=0.0) - 1e-9


def test_negative_control_a_timeline_without_overlap_is_found():
    record = {"world": 2, "buckets": 2, "backward_span": [0.0, 3.0],
              "log": [["forward done", None, -0.1], ["ready", 0, 0.5], ["ready", 1, 1.0],
                      ["launch", 0, 1.1], ["launch", 1, 1.2], ["done", 0, 2.0],
                      ["done", 1, 2.5]]}
    measure = _measure()
    assert measure.overlapping_buckets(record) == []
    record["log"][3] = ["launch", 0, 0.6]                 # bucket 0 starts during the backward
    assert measure.overlapping_buckets(record) == [0]
