"""``python -m tinyattn train --quick``: a first run on a slow machine that still ends at 100%
on the reverse task (the claim made in the README and docs/learn.md)."""
import json

import pytest

from tinyattn.serialization import load
from tinyattn.train import report
from tinyattn.train.cli import QUICK, main


def test_quick_is_100_steps_and_reverse_reaches_100_percent(tmp_path, monkeypatch):
    monkeypatch.setattr(report.plots, "have_matplotlib", lambda: False)    # the numbers only
    assert main(["--quick", "--quiet", "--out", str(tmp_path)]) == 0
    metrics = json.loads((tmp_path / "metrics.json").read_text())
    assert metrics["steps"] == QUICK["steps"] == 100
    assert metrics["task"] == "reverse"
    assert metrics["heldout_exact_match"] == 1.0
    history = json.loads(str(load(str(tmp_path / "checkpoint.npz"))["history"]))
    assert [e["step"] for e in history["evals"]] == [20, 40, 60, 80, 100]


@pytest.mark.parametrize("flags, named", [
    (["--quick", "--steps", "50"], "--steps"),
    (["--quick", "--eval-every", "5"], "--eval-every"),
    (["--quick", "--resume", "runs/reverse"], "--resume"),
])
def test_quick_refuses_flags_that_contradict_it(flags, named, capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(flags)
    assert exit_info.value.code == 2
    message = " ".join(capsys.readouterr().err.split())
    assert "--quick" in message and named in message


def test_negative_control_without_quick_the_default_is_500_steps():
    from tinyattn.train.cli import build_parser
    args = build_parser().parse_args([])
    assert args.quick is False and args.steps is None
