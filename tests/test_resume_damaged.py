"""--resume from a damaged checkpoint: every variant is refused with a message that says what
is wrong (exit 2), never a KeyError/TypeError/JSONDecodeError traceback (15 of 23
variants crashed), and NaN weights or a negative step are not accepted."""
import json
import os
import shutil

import numpy as np
import pytest

import tinyattn as ta
from tinyattn.train.cli import main
from tinyattn.train.config import TrainConfig
from tinyattn.train.loop import train

TINY = dict(task="reverse", d_model=16, heads=2, layers=1, batch_size=4, eval_size=16,
            quiet=True)


@pytest.fixture(scope="module")
def good_run(tmp_path_factory):
    folder = tmp_path_factory.mktemp("good")
    mp = pytest.MonkeyPatch()
    mp.setattr("tinyattn.train.plots.have_matplotlib", lambda: False)
    try:
        train(TrainConfig(out=str(folder), steps=4, warmup=1, save_every=0, **TINY))
    finally:
        mp.undo()
    return folder


@pytest.fixture(autouse=True)
def _numbers_only(monkeypatch):
    """No pictures drawn by the resumes here (most of a short run's time): these tests check
    exit codes, messages and the saved numbers."""
    monkeypatch.setattr("tinyattn.train.plots.have_matplotlib", lambda: False)


def _pop(key):
    def damage(state):
        del state[key]
    return damage


def _set(*path_and_value):
    *path, value = path_and_value

    def damage(state):
        node = state
        for key in path[:-1]:
            node = node[key]
        node[path[-1]] = value(node[path[-1]]) if callable(value) else value
    return damage


def _history(change):
    def damage(state):
        history = json.loads(state["history"])
        state["history"] = json.dumps(change(history))
    return damage


def _nan(array):
    array = array.copy()
    array.flat[0] = np.nan
    return array


def _replace_history_key(key, value):
    def change(history):
        history[key] = value
        return history
    return change


VARIANTS = {
    "format": (_set("format", "something-else"), "not a training checkpoint"),
    **{f"no {part}": (_pop(part), f"lacks '{part}'")
       for part in ("config", "model", "optimizer", "scheduler", "step", "rng", "data_rng",
                    "history")},
    "config is a list": (_set("config", [1, 2]), "has settings ('config') that are list"),
    "config lacks d_model": (lambda s: s["config"].pop("d_model"),
                             "lacks the setting(s) d_model"),
    "d_model is text": (_set("config", "d_model", "16"), "must be a whole number, got '16'"),
    "lr is text": (_set("config", "lr", "fast"), "must be a number, got 'fast'"),
    "lr is NaN": (_set("config", "lr", float("nan")), "must be a finite number, got nan"),
    "heads is 0": (_set("config", "heads", 0), "must be at least 1, got 0"),
    "unknown task": (_set("config", "task", "poetry"), "must be one of reverse"),
    "negative step": (_set("step", -1), "is at step -1; a step is a whole number >= 0"),
    "step is text": (_set("step", "4"), "is at step '4'"),
    "step is fractional": (_set("step", 2.5), "is at step 2.5"),
    "step beyond the run": (_set("step", 10 ** 9), "is at step 1000000000 of a run of 4"),
    "step disagrees with history": (_set("step", 2), "is at step 2 but its history has 4"),
    "NaN weight": (_set("model", "tok_emb.weight", _nan),
                   "NaN or infinite value(s) in model/tok_emb.weight"),
    "wrong shape": (_set("model", "tok_emb.weight", lambda w: w[:, :3]),
                    "has 'model' that does not fit"),
    "missing weight": (lambda s: s["model"].pop("ln_f.weight"),
                       "has 'model' that does not fit"),
    "weight is text": (_set("model", "ln_f.weight", np.array(["a", "b"])),
                       "model/ln_f.weight of dtype <U1, not numbers"),
    "model is a list": (_set("model", [1]), "has 'model' as list, not a dict"),
    "optimizer lacks param_groups": (lambda s: s["optimizer"].pop("param_groups"),
                                     "has 'optimizer' that does not fit"),
    "NaN Adam moment": (_set("optimizer", "state", 0, "exp_avg", _nan),
                        "NaN or infinite value(s) in optimizer/state/0/exp_avg"),
    "optimizer lr is text": (lambda s: s["optimizer"]["param_groups"][0].update(lr="x"),
                             "has 'optimizer' that does not fit"),
    "schedule at another step": (_set("scheduler", "last_epoch", 1), "has a schedule at"),
    "empty scheduler": (_set("scheduler", {}), "has 'scheduler' that does not fit"),
    "rng not JSON": (_set("rng", "{not json"), "has 'rng' that is not valid JSON"),
    "rng of the wrong shape": (_set("rng", json.dumps({"seed": "x"})),
                               "has 'rng' that does not fit"),
    "rng is an array": (_set("rng", np.arange(3)), "has 'rng' as ndarray"),
    "data_rng of the wrong shape": (_set("data_rng", json.dumps({"state": 1})),
                                    "data generator state that does not fit"),
    "history not JSON": (_set("history", "["), "has 'history' that is not valid JSON"),
    "history is a list": (_history(lambda h: [h]), "history that is list, not a dict"),
    "history loss is text": (_history(lambda h: {**h, "train_loss": ["x"] * 4}),
                             "training loss 'x' at step 1"),
    "history lacks evals": (_history(lambda h: {"train_loss": h["train_loss"]}),
                            "without its 'train_loss' and 'evals' lists"),
    "history with negative time": (_history(_replace_history_key("wall_time_s", -1)),
                                   "'wall_time_s' of -1"),
    "history eval without a step": (_history(lambda h: {**h, "evals": [{"val_loss": 1}]}),
                                    "evaluation entry"),
}


@pytest.mark.parametrize("name", sorted(VARIANTS))
def test_a_damaged_checkpoint_is_explained(name, good_run, tmp_path, capsys):
    damage, message = VARIANTS[name]
    folder = tmp_path / "run"
    shutil.copytree(good_run, folder)
    state = ta.load(str(folder / "checkpoint.npz"))
    damage(state)
    ta.save(state, str(folder / "checkpoint.npz"))
    code = main(["--resume", str(folder), "--quiet"])
    err = capsys.readouterr().err
    assert code == 2, err
    assert message in err, err
    assert "Traceback" not in err


def test_the_undamaged_copy_resumes(good_run, tmp_path, capsys):
    """Negative control: the copy-load-save round trip itself damages nothing."""
    folder = tmp_path / "run"
    shutil.copytree(good_run, folder)
    ta.save(ta.load(str(folder / "checkpoint.npz")), str(folder / "checkpoint.npz"))
    assert main(["--resume", str(folder), "--steps", "6", "--quiet"]) == 0
    assert ta.load(str(folder / "checkpoint.npz"))["step"] == 6


def test_a_checkpoint_from_before_steps_was_saved_still_resumes(good_run, tmp_path):
    """Older files have no config['steps'] and block_size 64 for every task."""
    folder = tmp_path / "run"
    shutil.copytree(good_run, folder)
    state = ta.load(str(folder / "checkpoint.npz"))
    del state["config"]["steps"]
    state["config"]["block_size"] = 64
    history = json.loads(state["history"])
    state["history"] = json.dumps({"train_loss": history["train_loss"],
                                   "evals": history["evals"]})
    ta.save(state, str(folder / "checkpoint.npz"))
    os.remove(folder / "metrics.json")
    assert main(["--resume", str(folder), "--quiet"]) == 0      # already done: 4 of 4
    assert json.loads((folder / "metrics.json").read_text())["steps"] == 4
