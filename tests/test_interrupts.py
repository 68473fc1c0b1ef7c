"""Real signals sent to a real (tiny) training process, then --resume from what is left: the
final weights must equal those of a run that was never stopped.

SIGINT and SIGTERM: the current step finishes, a checkpoint is saved, exit 130 / 143.
SIGKILL: nothing runs; the last periodic checkpoint (--save-every) is what is left.
Each run is a few seconds: 300 steps of a 1-layer d_model=16 model, plots switched off."""
import json
import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

import tinyattn as ta
from tinyattn.atomic import TEMP_PREFIX

if os.name != "posix":
    pytest.skip("sends POSIX signals", allow_module_level=True)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(ta.__file__)))
# matplotlib made unimportable in the child: no plots, a second saved per run
LAUNCH = ("import sys; sys.modules['matplotlib'] = None; "
          "from tinyattn.train.cli import main; sys.exit(main(sys.argv[1:]))")
STEPS, SAVE_EVERY = 300, 10
FLAGS = ["--d-model", "16", "--heads", "2", "--layers", "1", "--batch-size", "4",
         "--dropout", "0.1", "--eval-every", "300", "--quiet"]


def _start(*args):
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    return subprocess.Popen([sys.executable, "-c", LAUNCH, *args], env=env, cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _run(*args, timeout=120):
    child = _start(*args)
    out, err = child.communicate(timeout=timeout)
    return child.returncode, out, err


def _state(folder):
    return ta.load(os.path.join(folder, "checkpoint.npz"))


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    folder = str(tmp_path_factory.mktemp("uninterrupted"))
    code, _, err = _run(*FLAGS, "--steps", str(STEPS), "--save-every", str(SAVE_EVERY),
                        "--out", folder)
    assert code == 0, err
    return _state(folder)


def _interrupt(folder, signum):
    """Start a run, send ``signum`` once its first periodic checkpoint exists; return the
    exit code and the output."""
    child = _start(*FLAGS, "--steps", str(STEPS), "--save-every", str(SAVE_EVERY), "--out",
                   folder)
    deadline = time.monotonic() + 300
    while not os.path.exists(os.path.join(folder, "checkpoint.npz")):
        assert child.poll() is None, child.communicate()
        assert time.monotonic() < deadline, "no checkpoint after 300 s"
        time.sleep(0.005)
    child.send_signal(signum)
    out, err = child.communicate(timeout=300)
    return child.returncode, out, err


def _assert_equal_runs(state, reference):
    assert state["step"] == reference["step"] == STEPS
    for name, value in reference["model"].items():
        np.testing.assert_array_equal(state["model"][name], value, err_msg=name)
    assert json.loads(state["history"])["train_loss"] == \
        json.loads(reference["history"])["train_loss"]


@pytest.mark.parametrize("signum,code,name", [(signal.SIGINT, 130, "Ctrl-C (SIGINT)"),
                                              (signal.SIGTERM, 143, "SIGTERM")])
def test_a_signal_saves_the_step_and_resume_ends_with_the_same_weights(signum, code, name,
                                                                       tmp_path, reference):
    folder = str(tmp_path / "run")
    returned, out, err = _interrupt(folder, signum)
    assert returned == code, err
    assert "Traceback" not in err
    stopped = _state(folder)["step"]
    assert 0 < stopped < STEPS, "the signal came after the run had finished"
    assert f"interrupted by {name} at step {stopped}" in out
    assert f"--resume {folder}" in out
    returned, _, err = _run("--resume", folder, "--quiet")
    assert returned == 0, err
    _assert_equal_runs(_state(folder), reference)


def test_sigkill_leaves_the_last_periodic_checkpoint_and_resume_ends_the_same(tmp_path,
                                                                             reference):
    folder = str(tmp_path / "run")
    returned, _, _ = _interrupt(folder, signal.SIGKILL)
    assert returned == -signal.SIGKILL
    left = _state(folder)["step"]
    assert left % SAVE_EVERY == 0 and 0 < left < STEPS
    returned, _, err = _run("--resume", folder, "--quiet")
    assert returned == 0, err
    _assert_equal_runs(_state(folder), reference)
    assert not [n for n in os.listdir(folder) if n.startswith(TEMP_PREFIX)]


def test_the_equality_check_catches_a_run_that_differs(tmp_path, reference):
    """Negative control: another seed does not pass _assert_equal_runs."""
    folder = str(tmp_path / "other")
    returned, _, err = _run(*FLAGS, "--steps", str(STEPS), "--seed", "1", "--out", folder)
    assert returned == 0, err
    with pytest.raises(AssertionError):
        _assert_equal_runs(_state(folder), reference)


def test_training_piped_into_head_finishes_the_run(tmp_path):
    """`train | head -1`: the reader goes away after one line; the run still trains to the
    end and saves, with no BrokenPipeError."""
    folder = str(tmp_path / "run")
    command = (f"set -o pipefail; PYTHONPATH={ROOT} {sys.executable} -c \"{LAUNCH}\" "
               f"{' '.join(a for a in FLAGS if a != '--quiet')} --steps 30 --eval-every 30 "
               f"--out {folder} | head -1")
    result = subprocess.run(["bash", "-c", command], capture_output=True, text=True,
                            timeout=120, cwd=ROOT)
    assert result.stdout.startswith("tinyattn: training")
    assert "Traceback" not in result.stderr and "BrokenPipe" not in result.stderr
    assert result.returncode == 0, result.stderr
    assert _state(folder)["step"] == 30
