"""What a training run shows the learner: attention snapshots during training (without
changing the training numbers), --pos-encoding none, and the below-usual-accuracy warning."""
import json

import numpy as np
import pytest

from tinyattn.serialization import load
from tinyattn.train import attention_history, expectations, report
from tinyattn.train.cli import build_parser, main
from tinyattn.train.expectations import USUAL, Usual, accuracy_warning
from tinyattn.train.loop import TrainConfig, train

SMALL = dict(d_model=16, heads=2, layers=1, batch_size=8, eval_size=32, quiet=True, warmup=1)


def _losses(out):
    return json.loads(str(load(str(out / "checkpoint.npz"))["history"]))["train_loss"]


def test_snapshots_are_written_and_do_not_change_the_training_numbers(tmp_path, monkeypatch,
                                                                      capsys):
    pytest.importorskip("matplotlib")
    config = dict(task="reverse", steps=12, eval_every=12, dropout=0.1, **SMALL)
    watched = TrainConfig(out=str(tmp_path / "watched"), **config)
    watched.quiet = False
    train(watched)
    log = capsys.readouterr().out
    assert "attention_evolution.png" in log
    steps = log.split("attention at steps ", 1)[1].split("\n", 1)[0].split(", ")
    assert len(steps) == attention_history.FRAMES and steps[0] == "0" and steps[-1] == "12"
    assert (tmp_path / "watched" / "attention_evolution.png").stat().st_size > 0
    assert (tmp_path / "watched" / "attention_evolution.gif").stat().st_size > 0
    # the same run without snapshots (dropout on: a snapshot that drew random numbers or
    # left the model in eval mode would change every later loss)
    monkeypatch.setattr(attention_history.AttentionHistory, "after_step",
                        lambda self, model, step: None)
    monkeypatch.setattr(report.plots, "have_matplotlib", lambda: False)   # its numbers only
    train(TrainConfig(out=str(tmp_path / "plain"), **config))
    assert _losses(tmp_path / "watched") == _losses(tmp_path / "plain")


def test_no_positional_encoding_is_a_cli_choice_and_trains(tmp_path, monkeypatch):
    assert build_parser().parse_args(["--pos-encoding", "none"]).pos_encoding == "none"
    # only the positional picture is checked here: the others (most of the run's time) are
    # not drawn
    monkeypatch.setattr(report.plots, "plot_loss", lambda *args, **kwargs: None)
    monkeypatch.setattr(report.plots, "plot_attention", lambda *args, **kwargs: None)
    monkeypatch.setattr(attention_history.AttentionHistory, "write", lambda self, *a, **k: [])
    metrics = train(TrainConfig(task="copy", steps=2, eval_every=2, out=str(tmp_path),
                                pos_encoding="none", **SMALL))
    assert metrics["config"]["pos_encoding"] == "none"
    if report.plots.have_matplotlib():
        assert (tmp_path / "positional.png").stat().st_size > 0


def _config(**changes):
    config = TrainConfig(task="addition", steps=500)
    for key, value in changes.items():
        setattr(config, key, value)
    return config


def test_the_warning_names_the_usual_accuracy_and_the_steps_to_get_there():
    usual = USUAL[("addition", "learned")]
    message = accuracy_warning(_config(), {"heldout_exact_match": 0.57, "steps": 500},
                               "runs/addition")
    assert message.startswith("warning: held-out exact match 57.0% is well below")
    assert f"{usual.accuracy:.0%}" in message and f"--steps {usual.steps}" in message
    assert f"--resume runs/addition --steps {usual.steps}" in message
    enough = accuracy_warning(_config(steps=usual.steps),
                              {"heldout_exact_match": 0.2, "steps": usual.steps}, "o")
    assert "another --seed" in enough


@pytest.mark.parametrize("case", ["usual", "interrupted", "other model", "unmeasured",
                                  "no accuracy"])
def test_no_warning_when_the_run_is_normal_or_not_comparable(case):
    usual = USUAL[("addition", "learned")]
    config, metrics = _config(), {"heldout_exact_match": 0.57, "steps": 500}
    if case == "usual":
        metrics["heldout_exact_match"] = usual.accuracy
    elif case == "interrupted":
        metrics["interrupted"] = True
    elif case == "other model":
        config.d_model = 128
    elif case == "unmeasured":
        config.task, config.pos_encoding = "sort", "alibi"
    else:
        metrics = {"steps": 500}                                # chars: no accuracy
    assert accuracy_warning(config, metrics, "o") is None


def test_the_table_covers_the_default_run_of_every_digit_task():
    for task in ("reverse", "copy", "sort", "addition"):
        assert (task, "learned") in USUAL
    assert all(0 < u.accuracy <= 1 and u.steps >= 500 for u in USUAL.values())


def test_a_run_below_usual_warns_on_stderr_even_when_quiet(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(expectations, "_MODEL_SETTINGS", ())      # compare this tiny model
    monkeypatch.setitem(expectations.USUAL, ("reverse", "learned"), Usual(900, 1.0))
    monkeypatch.setattr("tinyattn.train.plots.have_matplotlib", lambda: False)
    code = main(["--task", "reverse", "--steps", "2", "--warmup", "1", "--d-model", "16",
                 "--heads", "2", "--layers", "1", "--batch-size", "8", "--quiet",
                 "--out", str(tmp_path)])
    assert code == 0
    err = capsys.readouterr().err
    assert "warning: held-out exact match" in err and "--steps 900" in err
    saved = json.loads((tmp_path / "metrics.json").read_text())
    assert saved["warning"] in err
    assert np.isfinite(saved["final_val_loss"])


def test_the_warning_shown_in_docs_see_it_is_the_one_printed():
    import pathlib
    import re
    text = (pathlib.Path(__file__).resolve().parent.parent / "docs" / "see_it.md").read_text()
    shown = re.search(r"\n```text\n(warning: .*?)```", text, re.S).group(1)
    message = accuracy_warning(_config(), {"heldout_exact_match": 0.511, "steps": 500},
                               "runs/addition")
    assert " ".join(shown.split()) == message


def test_the_usual_figures_are_the_lower_seed_of_the_table_in_docs_see_it():
    import pathlib
    text = (pathlib.Path(__file__).resolve().parent.parent / "docs" / "see_it.md").read_text()
    table = text.split("## Is my run normal?", 1)[1]
    rows = {}
    for line in table.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 5 and cells[0] in ("reverse", "copy", "sort", "addition"):
            rows[(cells[0], cells[1].strip("`"))] = cells[2:]
    column = {500: 0, 1000: 1, 2000: 2}
    for key, usual in USUAL.items():
        seeds = [float(v.rstrip("%")) / 100 for v in rows[key][column[usual.steps]].split(",")]
        assert usual.accuracy == pytest.approx(min(seeds)), key
        if usual.steps > 500:                                 # and fewer steps were not enough
            first = [float(v.rstrip("%")) / 100 for v in rows[key][0].split(",")]
            assert min(first) < expectations.WELL_BELOW * usual.accuracy, key
