"""Training runs that share a folder, resumed runs that must end like uninterrupted ones, and a
checkpoint that stays bounded as the run grows."""
import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

import tinyattn as ta
from conftest import squash
from tinyattn.train import checkpoint
from tinyattn.train.history import record_eval, record_loss

if os.name != "posix":
    pytest.skip("starts and signals POSIX processes", allow_module_level=True)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(ta.__file__)))
NO_PLOTS = "import sys; sys.modules['matplotlib'] = None; "
LAUNCH = "from tinyattn.train.cli import main; import sys; sys.exit(main(sys.argv[1:]))"
FLAGS = ["--d-model", "16", "--heads", "2", "--layers", "1", "--batch-size", "4", "--quiet"]


def _start(*args, plots=False):
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""),
               MPLBACKEND="Agg")
    code = LAUNCH if plots else NO_PLOTS + LAUNCH
    return subprocess.Popen([sys.executable, "-c", code, *args], env=env, cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _run(*args, plots=False):
    child = _start(*args, plots=plots)
    out, err = child.communicate(timeout=600)
    return child.returncode, out, err


def _wait_for(path, child):
    deadline = time.monotonic() + 300
    while not os.path.exists(path):
        assert child.poll() is None, child.communicate()
        assert time.monotonic() < deadline, f"no {path} after 300 s"
        time.sleep(0.005)


# ------------------------------------------------------------------ one folder, one run
def test_two_runs_started_together_on_one_out_one_is_refused(tmp_path):
    folder = str(tmp_path / "run")
    runs = [_start(*FLAGS, "--steps", "60", "--seed", str(seed), "--out", folder)
            for seed in (0, 1)]
    results = [(run.wait(timeout=600),) + run.communicate() for run in runs]
    codes = sorted(code for code, _, _ in results)
    assert codes == [0, 2], results
    refused = next(err for code, _, err in results if code == 2)
    assert "Traceback" not in refused and folder in squash(refused)
    winner = next(seed for seed, (code, _, _) in zip((0, 1), results) if code == 0)
    assert checkpoint.read(folder)["config"]["seed"] == winner


def test_a_run_in_progress_holds_its_folder_and_says_so(tmp_path):
    folder = str(tmp_path / "run")
    first = _start(*FLAGS, "--steps", "100000", "--save-every", "5", "--out", folder)
    try:
        _wait_for(os.path.join(folder, "checkpoint.npz"), first)
        code, _, err = _run(*FLAGS, "--steps", "100000", "--save-every", "5", "--out",
                            folder, "--overwrite")
        assert code == 2 and "another training run" in squash(err), err
        assert str(first.pid) in err
        code, _, err = _run("--resume", folder, "--quiet")
        assert code == 2 and "another training run" in squash(err), err
    finally:
        first.send_signal(signal.SIGKILL)
        first.wait(timeout=60)
    # killed: the lock goes with the process, and the run resumes (to a short total, which
    # must stay above the saved warm-up however far the killed run got)
    saved = checkpoint.read(folder)
    total = max(saved["step"], saved["config"]["warmup"]) + 2
    code, _, err = _run("--resume", folder, "--quiet", "--steps", str(total))
    assert code == 0, err


def test_a_lock_file_left_by_a_dead_run_does_not_block(tmp_path):
    folder = tmp_path / "run"
    folder.mkdir()
    (folder / ".tinyattn-train.lock").write_text("pid 999999999\n")
    code, _, err = _run(*FLAGS, "--steps", "3", "--out", str(folder))
    assert code == 0, err


# ------------------------------------------------------------------ resume = uninterrupted
EVERY = ["--eval-every", "10", "--save-every", "10"]


def _evals(folder):
    return [e["step"] for e in checkpoint.read(folder)["history"]["evals"]]


def test_a_resumed_run_keeps_eval_every_and_save_every(tmp_path):
    part = str(tmp_path / "part")
    child = _start(*FLAGS, "--steps", "60", *EVERY, "--out", part)
    _wait_for(os.path.join(part, "checkpoint.npz"), child)
    child.send_signal(signal.SIGKILL)
    child.wait(timeout=60)
    assert checkpoint.read(part)["step"] < 60
    code, _, err = _run("--resume", part, "--quiet")
    assert code == 0, err
    # the evaluations of an uninterrupted run (every 10th step of 60), none twice or missed
    assert _evals(part) == [10, 20, 30, 40, 50, 60]
    state = checkpoint.read(part)
    assert state["config"]["save_every"] == 10 and state["config"]["eval_every"] == 10


def test_a_resume_after_a_stop_while_drawing_writes_every_picture(tmp_path):
    """Ctrl-C while the pictures were drawn: the last checkpoint is saved, some pictures are
    not; --resume draws what is missing, the attention evolution included."""
    folder = tmp_path / "run"
    code, _, err = _run(*FLAGS, "--steps", "4", "--out", str(folder), plots=True)
    assert code == 0, err
    expected = sorted(p.name for p in folder.iterdir())
    for name in ("attention_evolution.png", "attention_evolution.gif", "attention.png"):
        if (folder / name).exists():
            (folder / name).unlink()
    code, _, err = _run("--resume", str(folder), "--quiet", plots=True)
    assert code == 0, err
    assert sorted(p.name for p in folder.iterdir()) == expected


# ------------------------------------------------------------------ bounded checkpoints
def _checkpoint_size(tmp_path, steps):
    from tinyattn.train.config import TrainConfig, finalize
    from tinyattn import nn, optim
    config = TrainConfig(steps=steps, d_model=8, heads=2, layers=1)
    finalize(config)
    model = nn.GPT(nn.GPTConfig(vocab_size=5, block_size=4, n_layer=1, n_head=2, d_model=8))
    opt = optim.AdamW(model.parameters())
    sched = optim.WarmupCosineLR(opt, warmup_steps=1, total_steps=steps)
    history = {"train_loss": [], "evals": [], "wall_time_s": 0.0, "tokens": 0}
    rng = np.random.default_rng(0)
    losses = rng.random(steps)
    for step in range(1, steps + 1):
        record_loss(history, float(losses[step - 1]), step)
        if step % 10 == 0:
            record_eval(history, {"step": step, "val_loss": 0.5})
    folder = tmp_path / str(steps)
    folder.mkdir()
    path = str(folder / checkpoint.CHECKPOINT)
    checkpoint.save_checkpoint(path, config, model, opt, sched, steps, rng, history)
    state = checkpoint.read(str(folder))                     # and it reads back, checked
    assert state["step"] == steps
    return os.path.getsize(path), state["history"]


def test_a_checkpoint_stays_bounded_as_the_run_grows(tmp_path):
    """At most MAX_POINTS losses and evaluations: ten times the steps, not ten times the
    size (one loss per step would be over 6 MB at 300,000 steps and grow on)."""
    small, _ = _checkpoint_size(tmp_path, 30_000)
    large, history = _checkpoint_size(tmp_path, 300_000)
    assert large < 2.5 * 2**20 and large < 2.5 * small, (small, large)
    assert history["evals"][-1]["step"] == 300_000
    stride = history["train_loss_stride"]
    assert len(history["train_loss"]) == -(-300_000 // stride)


def test_a_short_history_is_kept_whole(tmp_path):
    _, history = _checkpoint_size(tmp_path, 1000)
    assert len(history["train_loss"]) == 1000 and history.get("train_loss_stride", 1) == 1
