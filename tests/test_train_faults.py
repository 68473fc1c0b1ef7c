"""The training script under faults: resuming to the right total with the same
weights, non-finite settings and losses, the output folder, signals, periodic checkpoints,
never overwriting another run, damaged checkpoints, and settings that used to crash.

Plots are switched off here (they cost a second per run and are tested in test_train.py);
subprocess tests with real signals are in test_interrupts.py."""
import json
import math
import os
import signal

import numpy as np
import pytest

import tinyattn as ta
from tinyattn.train import loop, report
from tinyattn.train.cli import main
from tinyattn.train.config import ConfigError, TrainConfig, default_warmup, finalize
from tinyattn.train.loop import TrainingDiverged, train

TINY = dict(task="reverse", d_model=16, heads=2, layers=1, batch_size=4, eval_size=16,
            quiet=True)
TINY_FLAGS = ["--d-model", "16", "--heads", "2", "--layers", "1", "--batch-size", "4",
              "--quiet"]


@pytest.fixture(autouse=True)
def _no_plots(monkeypatch):
    monkeypatch.setattr("tinyattn.train.plots.have_matplotlib", lambda: False)


@pytest.fixture
def at_step(monkeypatch):
    """at_step(n, action): run ``action()`` inside training step n (after its backward, before
    its update), as a signal or crash arriving mid-step would."""
    original = loop.optim.clip_grad_norm_
    plan = {"calls": 0, "step": None, "action": None}

    def clip(parameters, max_norm):
        plan["calls"] += 1
        if plan["calls"] == plan["step"]:
            plan["action"]()
        return original(parameters, max_norm)

    monkeypatch.setattr(loop.optim, "clip_grad_norm_", clip)

    def arm(step, action):
        plan.update(calls=0, step=step, action=action)
    return arm


def _state(folder):
    return ta.load(os.path.join(folder, "checkpoint.npz"))


def _assert_same_run(a, b):
    """Two checkpoints hold the same weights, optimizer moments and losses, bit for bit."""
    sa, sb = _state(a), _state(b)
    assert sa["step"] == sb["step"]
    for name in sa["model"]:
        np.testing.assert_array_equal(sa["model"][name], sb["model"][name], err_msg=name)
    for index, entries in sa["optimizer"]["state"].items():
        for key, value in entries.items():
            np.testing.assert_array_equal(value, sb["optimizer"]["state"][index][key])
    assert json.loads(sa["history"])["train_loss"] == json.loads(sb["history"])["train_loss"]
    assert sa["scheduler"] == sb["scheduler"]


def _sigint():
    os.kill(os.getpid(), signal.SIGINT)


# ------------------------------------------------------------------ resuming
def test_resume_without_steps_trains_to_the_saved_total_with_the_same_weights(tmp_path, at_step):
    """The issue's case: a run longer than the default 500 steps, stopped, then resumed with
    no --steps, must end where the uninterrupted run ends (here 30 steps, not 500 defaults)."""
    common = dict(steps=30, eval_every=10, warmup=3, dropout=0.1, save_every=7, **TINY)
    train(TrainConfig(out=str(tmp_path / "full"), **common))
    at_step(12, _sigint)
    assert train(TrainConfig(out=str(tmp_path / "part"), **common))["steps"] == 12
    assert main(["--resume", str(tmp_path / "part"), "--quiet"]) == 0
    assert _state(tmp_path / "part")["scheduler"]["total_steps"] == 30
    _assert_same_run(tmp_path / "part", tmp_path / "full")


def test_the_same_weights_check_catches_a_different_run(tmp_path):
    """Negative control for _assert_same_run: one step fewer is not the same run."""
    common = dict(eval_every=10, warmup=3, **TINY)
    train(TrainConfig(out=str(tmp_path / "a"), steps=12, **common))
    train(TrainConfig(out=str(tmp_path / "b"), steps=12, seed=1, **common))
    with pytest.raises(AssertionError):
        _assert_same_run(tmp_path / "a", tmp_path / "b")


def test_resume_with_steps_below_the_saved_step_is_refused(tmp_path, capsys):
    train(TrainConfig(out=str(tmp_path), steps=10, **TINY))
    assert main(["--resume", str(tmp_path), "--steps", "6", "--quiet"]) == 2
    assert "--steps 6 is below step 10, where the saved run already is" in \
        capsys.readouterr().err
    assert _state(tmp_path)["step"] == 10


def test_resume_to_another_total_says_so_loudly_and_records_it(tmp_path, capsys):
    train(TrainConfig(out=str(tmp_path), steps=10, warmup=2, **TINY))
    assert main(["--resume", str(tmp_path), "--steps", "16", "--quiet"]) == 0
    err = capsys.readouterr().err                       # shown even with --quiet
    assert "--steps 16 changes the saved run's total of 10 steps" in err
    assert "follows neither the saved 10-step run nor a fresh 16-step run" in err
    metrics = json.loads((tmp_path / "metrics.json").read_text())
    assert metrics["schedule_changes"] == [{"at_step": 10, "from_total": 10, "to_total": 16}]
    assert metrics["steps"] == metrics["total_steps"] == 16
    # the next resume without --steps goes to the new total: nothing left to do
    assert main(["--resume", str(tmp_path), "--quiet"]) == 0
    assert "changes the saved run's total" not in capsys.readouterr().err


def test_a_resume_with_nothing_to_do_changes_nothing(tmp_path, capsys):
    train(TrainConfig(out=str(tmp_path), steps=8, **TINY))
    before = (tmp_path / "metrics.json").read_text()
    checkpoint_bytes = (tmp_path / "checkpoint.npz").read_bytes()
    assert json.loads(before)["wall_time_s"] > 0 and json.loads(before)["tokens_per_s"] > 0
    assert main(["--resume", str(tmp_path)]) == 0
    assert "already at step 8 of 8: nothing to train" in capsys.readouterr().out
    assert (tmp_path / "metrics.json").read_text() == before
    assert (tmp_path / "checkpoint.npz").read_bytes() == checkpoint_bytes


def test_time_and_tokens_add_up_over_a_resumed_run(tmp_path, at_step):
    at_step(5, _sigint)
    first = train(TrainConfig(out=str(tmp_path), steps=12, **TINY))
    config = TrainConfig(out=str(tmp_path), steps=12, **TINY)
    config.extra = {"resume": True, "given": set()}
    second = train(config)
    history = json.loads(_state(tmp_path)["history"])
    assert history["tokens"] == 12 * 4 * 16                # batch 4, context 16
    assert second["wall_time_s"] >= first["wall_time_s"]
    assert second["tokens_per_s"] == pytest.approx(history["tokens"] / history["wall_time_s"],
                                                   rel=0.01)


# ------------------------------------------------------------------ non-finite values
@pytest.mark.parametrize("flags,message", [
    (["--lr", "inf"], "must be a finite number, got 'inf'"),
    (["--lr", "1e400"], "must be a finite number, got '1e400' (= inf)"),
    (["--lr", "nan"], "must be a finite number, got 'nan'"),
    (["--lr=-inf"], "must be a finite number"),
    (["--dropout", "nan"], "must be in [0, 1), got nan"),
])
def test_non_finite_flags_are_refused(flags, message, capsys):
    with pytest.raises(SystemExit) as info:
        main(flags)
    assert info.value.code == 2 and message in capsys.readouterr().err


@pytest.mark.parametrize("field,value,message", [
    ("lr", math.inf, "--lr (lr) must be a finite number, got inf"),
    ("lr", math.nan, "--lr (lr) must be a finite number, got nan"),
    ("weight_decay", math.nan, "weight_decay) must be a finite number"),
    ("dropout", math.nan, "--dropout (dropout) must be a finite number"),
    ("lr", 0.0, "must be in (0.0, inf)"),
    ("batch_size", 0, "--batch-size (batch_size) must be at least 1, got 0"),
    ("eval_every", 0, "--eval-every (eval_every) must be at least 1, got 0"),
    ("save_every", -1, "--save-every (save_every) must be at least 0"),
    ("d_model", "64", "--d-model (d_model) must be a whole number, got '64'"),
    ("steps", 2.5, "must be a whole number, got 2.5"),
    ("heads", True, "must be a whole number, got True"),
    ("task", "poetry", "--task (task) must be one of reverse, copy"),
    ("dtype", "float16", "must be one of float32, float64"),
    ("warmup", 600, "--warmup 600 must be less than --steps 500"),
    ("block_size", 32, "--block-size sets the context of --task chars only"),
])
def test_the_api_refuses_what_the_command_line_refuses(field, value, message):
    config = TrainConfig(**{field: value})
    with pytest.raises(ConfigError) as info:
        train(config)
    assert message in str(info.value)


@pytest.mark.filterwarnings("ignore::RuntimeWarning")   # NumPy's overflow warnings
def test_a_diverging_run_stops_at_the_first_non_finite_loss(tmp_path, capsys):
    code = main([*TINY_FLAGS, "--out", str(tmp_path), "--steps", "40", "--lr", "1e30",
                 "--save-every", "1"])
    assert code == 3
    err = capsys.readouterr().err
    assert "the training loss became nan at step 2" in err and "lower --lr" in err
    text = (tmp_path / "metrics.json").read_text()
    metrics = json.loads(text, parse_constant=lambda token: pytest.fail(f"{token} in JSON"))
    assert metrics["diverged"]["step"] == 2 and metrics["steps"] == 1
    saved = _state(tmp_path)                        # the step-1 checkpoint is left
    assert saved["step"] == 1


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_the_api_raises_on_divergence(tmp_path):
    with pytest.raises(TrainingDiverged, match="became nan at step 2"):
        train(TrainConfig(out=str(tmp_path), steps=10, lr=1e30, **TINY))


def test_metrics_are_strict_json_even_with_non_finite_values():
    data = {"a": math.nan, "b": [math.inf, 1.0], "c": {"d": -math.inf}, "e": np.float32(2)}
    with pytest.raises(ValueError):                  # negative control: the raw dict is not
        json.dumps(data, allow_nan=False)
    assert json.loads(json.dumps(report.strict(data), allow_nan=False)) == \
        {"a": None, "b": [None, 1.0], "c": {"d": None}, "e": 2.0}


# ------------------------------------------------------------------ the output folder
@pytest.fixture
def no_training(monkeypatch):
    """Fail the test if a training step starts."""
    def refuse(*args, **kwargs):
        pytest.fail("training started before the problem was reported")
    monkeypatch.setattr(loop._Run, "train_step", refuse)


def test_out_naming_a_file_is_refused_before_any_step(tmp_path, capsys, no_training):
    (tmp_path / "notes.txt").write_text("mine")
    assert main([*TINY_FLAGS, "--out", str(tmp_path / "notes.txt")]) == 2
    assert "is a file, not a folder" in capsys.readouterr().err
    assert (tmp_path / "notes.txt").read_text() == "mine"


@pytest.mark.parametrize("out,reason", [("/proc/tinyattn-run", "No such file"),
                                        ("/proc/version/run", "Not a directory")])
def test_an_unwritable_out_is_refused_before_any_step(out, reason, capsys, no_training):
    assert main([*TINY_FLAGS, "--out", out]) == 2
    err = capsys.readouterr().err
    assert f"--out {out}: cannot write there" in err and reason in err


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into read-only folders")
def test_a_read_only_out_is_refused_before_any_step(tmp_path, capsys, no_training):
    os.chmod(tmp_path, 0o500)
    try:
        assert main([*TINY_FLAGS, "--out", str(tmp_path / "run")]) == 2
    finally:
        os.chmod(tmp_path, 0o700)
    assert "cannot write there (Permission denied)" in capsys.readouterr().err


def test_a_changed_flag_never_overwrites_the_run_in_out(tmp_path, capsys):
    out = str(tmp_path / "run")
    assert main([*TINY_FLAGS, "--out", out, "--steps", "6"]) == 0
    saved = (tmp_path / "run" / "checkpoint.npz").read_bytes()
    assert main([*TINY_FLAGS, "--out", out, "--steps", "6", "--pos-encoding", "rope"]) == 2
    err = capsys.readouterr().err
    assert "holds a different run (pos_encoding='learned' there, 'rope' here)" in err
    assert "--overwrite" in err
    assert (tmp_path / "run" / "checkpoint.npz").read_bytes() == saved
    assert main([*TINY_FLAGS, "--out", out, "--steps", "6", "--pos-encoding", "rope",
                 "--overwrite"]) == 0
    assert _state(out)["config"]["pos_encoding"] == "rope"


def test_without_out_a_different_run_goes_to_a_fresh_folder(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert main([*TINY_FLAGS, "--steps", "6"]) == 0
    assert main([*TINY_FLAGS, "--steps", "6", "--pos-encoding", "rope"]) == 0
    assert "writing this run to runs/reverse-2/ instead" in capsys.readouterr().err
    assert _state("runs/reverse")["config"]["pos_encoding"] == "learned"
    assert _state("runs/reverse-2")["config"]["pos_encoding"] == "rope"
    # the same experiment again finds its own folder; the same settings rerun in place
    assert main([*TINY_FLAGS, "--steps", "6", "--pos-encoding", "rope"]) == 0
    assert main([*TINY_FLAGS, "--steps", "6"]) == 0
    assert sorted(os.listdir("runs")) == ["reverse", "reverse-2"]


def test_an_unfinished_run_is_never_restarted_silently(tmp_path, capsys, at_step):
    out = str(tmp_path / "run")
    at_step(3, _sigint)
    assert main([*TINY_FLAGS, "--out", out, "--steps", "10"]) == 130
    assert main([*TINY_FLAGS, "--out", out, "--steps", "10"]) == 2
    err = capsys.readouterr().err
    assert "unfinished run with these settings (step 3 of 10)" in err
    assert f"--resume {out} continues it" in err


# ------------------------------------------------------------------ signals and crashes
def test_sigterm_is_handled_like_ctrl_c(tmp_path, at_step, capsys):
    at_step(4, lambda: os.kill(os.getpid(), signal.SIGTERM))
    assert main([*TINY_FLAGS, "--out", str(tmp_path), "--steps", "10"]) == 143
    assert "interrupted by SIGTERM at step 4" in capsys.readouterr().out
    assert _state(tmp_path)["step"] == 4
    metrics = json.loads((tmp_path / "metrics.json").read_text())
    assert metrics["stopped_by"] == "SIGTERM" and metrics["interrupted"]


def test_a_second_signal_aborts_and_leaves_the_last_periodic_checkpoint(tmp_path, at_step,
                                                                         capsys):
    def twice():
        os.kill(os.getpid(), signal.SIGINT)
        os.kill(os.getpid(), signal.SIGINT)
    at_step(7, twice)
    assert main([*TINY_FLAGS, "--out", str(tmp_path), "--steps", "10", "--save-every",
                 "5"]) == 130
    assert "the last checkpoint (step 5)" in capsys.readouterr().err
    assert _state(tmp_path)["step"] == 5


def test_a_crash_leaves_the_last_periodic_checkpoint_and_resume_finishes_the_run(
        tmp_path, at_step, capsys):
    common = dict(steps=14, eval_every=5, warmup=2, save_every=4, **TINY)
    train(TrainConfig(out=str(tmp_path / "full"), **common))

    def crash():
        raise RuntimeError("the machine fell over")
    at_step(11, crash)
    with pytest.raises(RuntimeError, match="fell over"):
        train(TrainConfig(out=str(tmp_path / "part"), **common))
    assert "the last checkpoint (step 8)" in capsys.readouterr().err
    assert _state(tmp_path / "part")["step"] == 8
    at_step(-1, None)
    assert main(["--resume", str(tmp_path / "part"), "--quiet"]) == 0
    _assert_same_run(tmp_path / "part", tmp_path / "full")


def test_periodic_checkpoints_follow_save_every(tmp_path, at_step):
    seen = []
    at_step(7, lambda: seen.append(_state(tmp_path)["step"]))
    train(TrainConfig(out=str(tmp_path), steps=9, save_every=3, **TINY))
    assert seen == [6]                              # steps 3 and 6 were saved before step 7


# ------------------------------------------------------------------ settings that crashed
def test_a_model_too_big_for_memory_is_refused_with_an_estimate(capsys, no_training):
    with pytest.raises(SystemExit) as info:
        main(["--d-model", "1000000000000", "--heads", "1", "--quiet"])
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert "this model would need at least" in err and "use a smaller --d-model" in err


def test_the_default_warmup_scales_with_a_short_run(tmp_path):
    assert default_warmup(500) == 100 and default_warmup(3) == 0 and default_warmup(60) == 12
    assert main([*TINY_FLAGS, "--out", str(tmp_path), "--steps", "3"]) == 0
    assert _state(tmp_path)["config"]["warmup"] == 0
    with pytest.raises(SystemExit):                 # a warm-up the user typed is still checked
        main([*TINY_FLAGS, "--out", str(tmp_path / "b"), "--steps", "3", "--warmup", "5"])


def test_block_size_applies_to_chars_and_is_refused_elsewhere(tmp_path, capsys):
    with pytest.raises(SystemExit):
        main([*TINY_FLAGS, "--block-size", "32"])
    assert "--block-size sets the context of --task chars only" in capsys.readouterr().err
    metrics = train(TrainConfig(out=str(tmp_path), steps=2, **{**TINY, "task": "chars"},
                                block_size=24))
    assert metrics["config"]["context_length"] == 24


def test_finalize_fills_in_the_defaults_once():
    config = TrainConfig(steps=50)
    finalize(config)
    assert config.warmup == 10 and config.block_size is None
    config = TrainConfig(task="chars")
    finalize(config)
    assert config.block_size == 64


def test_the_new_flags_are_in_help_and_in_the_readme(capsys):
    with pytest.raises(SystemExit):
        main(["--help"])
    help_text = " ".join(capsys.readouterr().out.split())   # wrapped at the terminal width
    readme = open(os.path.join(os.path.dirname(__file__), "..", "docs", "training.md")).read()
    for flag in ("--save-every", "--overwrite", "--resume", "--steps", "--warmup",
                 "--block-size"):
        assert flag in help_text and f"`{flag}" in readme, flag
    assert "Exit status" in help_text and "| what stops the run |" in readme


def test_a_resume_with_nothing_to_do_writes_the_reports_a_kill_left_unwritten(tmp_path):
    train(TrainConfig(out=str(tmp_path), steps=6, **TINY))
    os.remove(tmp_path / "metrics.json")              # as if killed right after the save
    assert main(["--resume", str(tmp_path), "--quiet"]) == 0
    assert json.loads((tmp_path / "metrics.json").read_text())["steps"] == 6
