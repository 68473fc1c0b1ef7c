"""python -m tinyattn sample: a trained checkpoint round-trips into generation; prompts in
the task's vocabulary; clear errors for missing or corrupt checkpoints and bad prompts."""
import numpy as np
import pytest

import tinyattn as ta
from tinyattn import cli, nn
from tinyattn.serialization import load
from tinyattn.train import report
from tinyattn.train.loop import TrainConfig, train
from tinyattn.train.sample import _digit_report, encode_prompt, main
from tinyattn.train.tasks import make_task

SMALL = dict(d_model=16, heads=2, layers=1, batch_size=8, eval_size=16, quiet=True, warmup=1)


@pytest.fixture(scope="module")
def reverse_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("reverse")
    original = report.plots.have_matplotlib
    report.plots.have_matplotlib = lambda: False          # no pictures: faster
    try:
        train(TrainConfig(task="reverse", steps=3, eval_every=3, out=str(out), **SMALL))
    finally:
        report.plots.have_matplotlib = original
    return out


def _greedy_from_checkpoint(out, prompt_ids, new):
    """What the saved weights generate, rebuilt by hand (not through the sample command)."""
    state = load(str(out / "checkpoint.npz"))
    saved = state["config"]
    model = nn.GPT(nn.GPTConfig(vocab_size=11, block_size=16, n_layer=saved["layers"],
                                n_head=saved["heads"], d_model=saved["d_model"]))
    model.load_state_dict(state["model"])
    return model.generate(np.array([prompt_ids]), new, temperature=0).numpy()[0]


def test_sample_completes_a_prompt_with_the_checkpoints_weights(reverse_run, capsys):
    assert main(["--checkpoint", str(reverse_run), "--prompt", "3 1 4 1 5 9 2 6 |"]) == 0
    printed = capsys.readouterr().out.splitlines()
    prompt = [3, 1, 4, 1, 5, 9, 2, 6, 10]
    ids = _greedy_from_checkpoint(reverse_run, prompt, 8)
    vocab = make_task("reverse").vocab
    assert printed[0] == " ".join(vocab[i] for i in ids)
    assert printed[0].startswith("3 1 4 1 5 9 2 6 | ") and len(printed[0].split()) == 17
    assert printed[1].startswith("expected: 6 2 9 5 1 4 1 3 (")
    # the checkpoint file itself and a prompt without spaces mean the same
    assert main(["--checkpoint", str(reverse_run / "checkpoint.npz"), "--prompt",
                 "31415926|"]) == 0
    assert capsys.readouterr().out.splitlines()[0] == printed[0]


def test_sample_through_the_main_cli_with_a_random_prompt_and_sampling(reverse_run, capsys):
    args = ["sample", "--checkpoint", str(reverse_run), "--seed", "5"]
    assert cli.main(args) == 0
    first = capsys.readouterr().out
    assert cli.main(args) == 0
    assert capsys.readouterr().out == first                     # a seed repeats
    tokens = first.splitlines()[0].split()
    assert len(tokens) == 17 and tokens[8] == "|"
    assert cli.main(args + ["--temperature", "1.5", "--max-new-tokens", "3"]) == 0
    assert len(capsys.readouterr().out.splitlines()[0].split()) == 12


def test_digit_report_says_right_wrong_or_why_it_cannot_tell():
    task = make_task("addition")
    prompt = encode_prompt(task, "123+456=")
    assert _digit_report(task, prompt, np.array([0, 5, 7, 9])) == ["expected: 0 5 7 9 (right)"]
    assert _digit_report(task, prompt, np.array([0, 5, 7, 8])) == ["expected: 0 5 7 9 (wrong)"]
    short = encode_prompt(task, "12+4=")
    assert "outside what the model learned" in _digit_report(task, short, np.zeros(4, int))[0]


def test_every_digit_task_solves_its_own_prompts():
    for name in ("reverse", "copy", "sort", "addition"):
        task = make_task(name)
        prompts, answers = task.make_pairs(np.random.default_rng(1), 200)
        assert np.array_equal(task.solve(prompts), answers), name
    wrong = make_task("sort")
    prompts, answers = wrong.make_pairs(np.random.default_rng(1), 200)
    assert not np.array_equal(make_task("reverse").solve(prompts), answers)   # control


def test_chars_samples_text_from_a_prompt(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr("tinyattn.train.plots.have_matplotlib", lambda: False)
    train(TrainConfig(task="chars", steps=2, eval_every=2, out=str(tmp_path), block_size=16,
                      **SMALL))
    capsys.readouterr()
    assert main(["--checkpoint", str(tmp_path), "--prompt", "def ", "--max-new-tokens",
                 "30"]) == 0
    text = capsys.readouterr().out
    assert text.startswith("def ") and len(text.rstrip("\n")) >= 30
    assert main(["--checkpoint", str(tmp_path), "--prompt", "caf\u00e9\u2603"]) == 2
    assert "not in the 'chars' vocabulary" in capsys.readouterr().err


@pytest.mark.parametrize("problem", ["missing", "corrupt", "other file", "bad prompt",
                                     "empty prompt"])
def test_sample_errors_are_clear_and_exit_2(problem, reverse_run, tmp_path, capsys):
    path = reverse_run
    args = []
    if problem == "missing":
        path = tmp_path / "nowhere"
    elif problem == "corrupt":
        (tmp_path / "checkpoint.npz").write_bytes(b"not a checkpoint at all")
        path = tmp_path
    elif problem == "other file":
        path = reverse_run / "metrics.json"
    elif problem == "bad prompt":
        args = ["--prompt", "3 1 x |"]
    else:
        args = ["--prompt", "   "]
    assert main(["--checkpoint", str(path)] + args) == 2
    err = capsys.readouterr().err
    expected = {"missing": "no checkpoint.npz there", "corrupt": "corrupt",
                "other file": "expected a run folder", "bad prompt": "'x', not in the",
                "empty prompt": "--prompt is empty"}[problem]
    assert err.startswith("error: ") and expected in err
    assert "--resume" not in err and "Traceback" not in err


def test_bad_numbers_are_refused_by_the_parser(reverse_run, capsys):
    for flag, value in (("--temperature", "-1"), ("--temperature", "nan"), ("--top-k", "0"),
                        ("--max-new-tokens", "2.5"), ("--seed", "-3")):
        with pytest.raises(SystemExit) as stop:
            main(["--checkpoint", str(reverse_run), flag, value])
        assert stop.value.code == 2
        assert flag in capsys.readouterr().err


def test_weights_that_do_not_fit_the_settings_are_a_checkpoint_error(tmp_path, capsys,
                                                                     monkeypatch):
    monkeypatch.setattr("tinyattn.train.plots.have_matplotlib", lambda: False)
    train(TrainConfig(task="copy", steps=2, eval_every=2, out=str(tmp_path), **SMALL))
    state = load(str(tmp_path / "checkpoint.npz"))
    state["config"]["d_model"] = 32                              # the weights are 16 wide
    ta.save(state, str(tmp_path / "checkpoint.npz"))
    assert main(["--checkpoint", str(tmp_path)]) == 2
    assert "'model' that does not fit" in capsys.readouterr().err     # the resume check


def test_a_checkpoint_with_nan_weights_is_refused_as_resume_refuses_it(tmp_path, capsys,
                                                                        monkeypatch):
    monkeypatch.setattr("tinyattn.train.plots.have_matplotlib", lambda: False)
    train(TrainConfig(task="copy", steps=2, eval_every=2, out=str(tmp_path), **SMALL))
    state = load(str(tmp_path / "checkpoint.npz"))
    state["model"]["tok_emb.weight"][0, 0] = np.nan
    ta.save(state, str(tmp_path / "checkpoint.npz"))
    assert main(["--checkpoint", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "NaN or infinite" in err and "--checkpoint" in err
