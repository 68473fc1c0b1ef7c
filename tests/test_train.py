"""The toy training script end to end: every task learns a little and writes its files;
resume is bit-exact; Ctrl-C saves; bad checkpoints and flags get clear errors."""
import json
import os
import shutil
import signal

import numpy as np
import pytest

from tinyattn.train import loop
from tinyattn.train.cli import main
from tinyattn.train.loop import TrainConfig, train

SMALL = dict(d_model=32, heads=2, layers=1, batch_size=16, eval_size=64, quiet=True)


@pytest.mark.parametrize("task", ["reverse", "copy", "sort", "addition", "chars"])
def test_every_task_trains_and_writes_its_files(task, tmp_path):
    steps = 40
    config = TrainConfig(task=task, steps=steps, eval_every=20, out=str(tmp_path),
                         block_size=32 if task == "chars" else None, warmup=5, **SMALL)
    metrics = train(config)
    losses = json.loads(str(__import__("tinyattn").serialization.load(
        str(tmp_path / "checkpoint.npz"))["history"]))["train_loss"]
    assert len(losses) == steps
    assert np.mean(losses[-10:]) < np.mean(losses[:5]), "loss did not fall"
    on_disk = json.loads((tmp_path / "metrics.json").read_text())
    assert on_disk == json.loads(json.dumps(metrics))
    for key in ("task", "steps", "final_train_loss", "final_val_loss", "wall_time_s",
                "tokens_per_s", "device", "seed"):
        assert key in on_disk
    assert ("heldout_exact_match" in on_disk) == (task != "chars")
    for name in ("loss.png", "attention.png", "positional.png", "checkpoint.npz"):
        assert (tmp_path / name).stat().st_size > 0, name
    if task == "chars":   # the language model's validation loss falls too
        evals = json.loads(str(__import__("tinyattn").serialization.load(
            str(tmp_path / "checkpoint.npz"))["history"]))["evals"]
        assert evals[-1]["val_loss"] < evals[0]["val_loss"]


@pytest.fixture
def numbers_only(monkeypatch):
    """For the tests that check numbers and messages, not pictures: no plots drawn (they are
    most of a short run's time; the pictures are checked by the tests that ask for them, and
    the run without matplotlib by test_without_matplotlib_...)."""
    monkeypatch.setattr("tinyattn.train.plots.have_matplotlib", lambda: False)


def _losses(directory):
    from tinyattn.serialization import load
    return json.loads(str(load(os.path.join(directory, "checkpoint.npz"))["history"]))[
        "train_loss"]


@pytest.fixture(autouse=True)
def _ctrl_c_during_a_step(monkeypatch):
    """Simulate Ctrl-C: a run whose config.extra has stop_at=N sends SIGINT to itself in the
    middle of step N + 1 (after backward, before the optimizer step)."""
    original_clip = loop.optim.clip_grad_norm_
    original_train = loop.train
    calls = {"n": 0, "stop": None}

    def clip(parameters, max_norm):
        calls["n"] += 1
        if calls["stop"] is not None and calls["n"] == calls["stop"] + 1:
            os.kill(os.getpid(), signal.SIGINT)
        return original_clip(parameters, max_norm)

    def patched_train(config):
        calls["n"], calls["stop"] = 0, config.extra.get("stop_at")
        return original_train(config)

    monkeypatch.setattr(loop.optim, "clip_grad_norm_", clip)
    monkeypatch.setitem(globals(), "train", patched_train)
    yield


def test_resume_reproduces_an_uninterrupted_run_bit_for_bit(tmp_path, numbers_only):
    common = dict(task="reverse", steps=20, eval_every=10, warmup=3, dropout=0.1, **SMALL)
    train(TrainConfig(out=str(tmp_path / "full"), **common))
    stopped = TrainConfig(out=str(tmp_path / "part"), **common)
    stopped.extra = {"stop_at": 8}                  # Ctrl-C during step 9
    train(stopped)
    assert len(_losses(tmp_path / "part")) == 9     # step 9 finishes, then the run stops
    resumed = TrainConfig(out=str(tmp_path / "part"), **common)
    resumed.extra = {"resume": True, "given": set()}
    train(resumed)
    assert _losses(tmp_path / "part") == _losses(tmp_path / "full")


def test_resume_negative_control_a_different_seed_gives_different_losses(tmp_path, numbers_only):
    common = dict(task="reverse", steps=5, eval_every=5, warmup=1, **SMALL)
    train(TrainConfig(out=str(tmp_path / "a"), seed=0, **common))
    train(TrainConfig(out=str(tmp_path / "b"), seed=1, **common))
    assert _losses(tmp_path / "a") != _losses(tmp_path / "b")


def test_ctrl_c_saves_a_checkpoint_and_says_how_to_resume(tmp_path, numbers_only, capsys):
    config = TrainConfig(task="copy", steps=20, eval_every=10, out=str(tmp_path), **SMALL)
    config.extra = {"stop_at": 4}
    metrics = train(config)
    assert metrics["interrupted"] and metrics["steps"] == 5
    assert "--resume" in capsys.readouterr().out
    assert (tmp_path / "checkpoint.npz").exists()


def test_corrupt_checkpoint_gives_a_clear_error(tmp_path, capsys):
    (tmp_path / "checkpoint.npz").write_bytes(b"not a zip file")
    assert main(["--resume", str(tmp_path), "--quiet"]) == 2
    assert "corrupt or not a tinyattn checkpoint" in capsys.readouterr().err


def test_missing_checkpoint_gives_a_clear_error(tmp_path, capsys):
    assert main(["--resume", str(tmp_path), "--quiet"]) == 2
    assert "no checkpoint.npz there" in capsys.readouterr().err


@pytest.fixture(scope="module")
def three_step_run(tmp_path_factory):
    """One short run that every mismatched-flag case resumes (a copy each): a refused resume
    reads the checkpoint and stops, so the run need not be trained again per case."""
    folder = tmp_path_factory.mktemp("three_steps")
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr("tinyattn.train.plots.have_matplotlib", lambda: False)
        train(TrainConfig(task="reverse", steps=3, eval_every=3, out=str(folder), **SMALL))
    return folder


@pytest.mark.parametrize("flags,setting", [(["--d-model", "64"], "d_model=32"),
                                           (["--d-model=64"], "d_model=32"),
                                           (["--lr", "0.1"], "lr=0.003"),
                                           (["--task", "copy"], "task='reverse'")])
def test_mismatched_checkpoint_names_the_setting(flags, setting, three_step_run, tmp_path,
                                                 capsys):
    folder = tmp_path / "run"
    shutil.copytree(three_step_run, folder)
    assert main(["--resume", str(folder), *flags, "--quiet"]) == 2
    assert setting in capsys.readouterr().err


def test_resume_can_raise_the_step_count_and_stretches_the_schedule(tmp_path, numbers_only):
    train(TrainConfig(task="reverse", steps=4, eval_every=4, warmup=1, out=str(tmp_path),
                      **SMALL))
    assert main(["--resume", str(tmp_path), "--steps", "8", "--quiet"]) == 0
    from tinyattn.serialization import load
    state = load(str(tmp_path / "checkpoint.npz"))
    assert state["step"] == 8 and state["scheduler"]["total_steps"] == 8
    assert len(_losses(tmp_path)) == 8


@pytest.mark.parametrize("flags,message", [
    (["--steps", "0"], "must be at least 1"),
    (["--lr", "-1"], "must be greater than 0"),
    (["--task", "poetry"], "invalid choice"),
    (["--d-model", "30", "--heads", "4"], "divisible by --heads"),
    (["--dropout", "1.5"], "must be in [0, 1)"),
    (["--attn-impl", "tiled", "--dropout", "0.1"], "no attention dropout"),
    (["--attn-impl", "tiled", "--pos-encoding", "alibi"], "only --attn-impl plain"),
    (["--pos-encoding", "rope", "--d-model", "12", "--heads", "4"], "must be even"),
    (["--task", "chars", "--block-size", "100000"], "too long"),
    (["--warmup", "50", "--steps", "10"], "less than --steps"),
])
def test_invalid_flags_get_a_clear_message(flags, message, capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(flags)
    assert exit_info.value.code == 2
    assert message in capsys.readouterr().err


def test_training_script_runs_on_the_strict_gpu_stand_in_with_cpu_numbers(tmp_path, numbers_only):
    from tinyattn import strict_device
    strict_device.enable()
    # dropout 0: each device has its own random generator (as in PyTorch), so masks differ
    common = dict(task="reverse", steps=4, eval_every=4, warmup=1, dropout=0.0, **SMALL)
    train(TrainConfig(out=str(tmp_path / "cpu"), **common))
    train(TrainConfig(out=str(tmp_path / "dev"), device=strict_device.DEVICE, **common))
    # the same numbers to float32 round-off: since this round's float32 accuracy work (long
    # sums accumulated in float64) the two devices' losses differ in the 7th digit by step 4
    # (the exact op is not yet found; noted in the round's closing note)
    np.testing.assert_allclose(_losses(tmp_path / "dev"), _losses(tmp_path / "cpu"), rtol=2e-6)


def test_without_matplotlib_it_trains_and_says_how_to_get_plots(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr("tinyattn.train.plots.have_matplotlib", lambda: False)
    config = TrainConfig(task="copy", steps=3, eval_every=3, out=str(tmp_path), **SMALL)
    config.quiet = False
    train(config)
    assert 'pip install "tinyattn[viz]"' in capsys.readouterr().out
    assert (tmp_path / "metrics.json").exists() and not (tmp_path / "loss.png").exists()


@pytest.mark.parametrize("pos_encoding", ["sinusoidal", "rope", "alibi"])
def test_every_positional_encoding_gets_its_picture(pos_encoding, tmp_path, monkeypatch):
    # only the positional picture is drawn (the one checked; every_task checks the others)
    from tinyattn.train import attention_history, plots
    monkeypatch.setattr(plots, "plot_loss", lambda *args, **kwargs: None)
    monkeypatch.setattr(plots, "plot_attention", lambda *args, **kwargs: None)
    monkeypatch.setattr(attention_history.AttentionHistory, "write", lambda self, *a, **k: [])
    config = TrainConfig(task="copy", steps=2, eval_every=2, warmup=1, out=str(tmp_path),
                         pos_encoding=pos_encoding, **SMALL)
    train(config)
    assert (tmp_path / "positional.png").stat().st_size > 0


def test_chars_prints_generated_text(tmp_path, numbers_only, capsys):
    config = TrainConfig(task="chars", steps=2, eval_every=2, warmup=1, out=str(tmp_path),
                         block_size=16, **SMALL)
    config.quiet = False
    train(config)
    assert "sample: The " in capsys.readouterr().out
