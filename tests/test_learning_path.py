"""The learning path's front door and small promises (issue 35): the README is short and
points on; docs/learn.md's reading map states true facts (files, names, line counts); the
engine's walk is one short function with nothing else in it; a finished run's folder lists
only what the run wrote; a progress bar redraws inside a notebook; the gradcheck table
never cuts a word."""
from __future__ import annotations

import ast
import inspect
import io
import pathlib
import re


ROOT = pathlib.Path(__file__).resolve().parent.parent
MAP_ROW = re.compile(r"^\| `(tinyattn/[\w/]+\.py)`(?:, `[^`]+`)* \| (.+?) \| .+ \|$", re.M)


def reading_map_problems(text: str, root: pathlib.Path = ROOT) -> list:
    """What is false in a reading map: missing files, names not defined in their file, line
    counts more than 10% off, the total size more than 10% off."""
    problems = []
    section = text.split("## A reading map of the core", 1)[1].split("\n## ", 1)[0]
    rows = MAP_ROW.findall(section)
    if len(rows) < 8:
        problems.append(f"only {len(rows)} rows in the reading map")
    for path, lines in rows:
        file = root / path
        if not file.is_file():
            problems.append(f"{path}: no such file")
            continue
        source = file.read_text(encoding="utf-8")
        count = len(source.splitlines())
        defined = {n.name for n in ast.walk(ast.parse(source))
                   if isinstance(n, (ast.FunctionDef, ast.ClassDef))}
        for name in re.findall(r"`(\w+)`", lines):
            if name not in defined:
                problems.append(f"{path}: `{name}` is not defined there")
        for stated in [int(n) for n in re.findall(r"(?:\ball \(|\bof )(\d+)\)?", lines)]:
            if abs(stated - count) > 0.1 * count:
                problems.append(f"{path}: {stated} lines stated, {count} in the file")
    total = sum(len(p.read_text(encoding="utf-8").splitlines())
                for p in (root / "tinyattn").rglob("*.py"))
    stated = re.search(r"tinyattn is about ([\d,]+) lines", section)
    if not stated or abs(int(stated.group(1).replace(",", "")) - total) > 0.1 * total:
        problems.append(f"the total: {stated and stated.group(1)} stated, {total} measured")
    for named in re.findall(r"`((?:tinyattn/)?[\w/]+/)`|`(\w+\.py)`", section):
        folder = named[0]
        if folder and not ((root / folder).is_dir() or (root / "tinyattn" / folder).is_dir()):
            problems.append(f"{folder}: no such folder")
    return problems


def test_learn_md_reading_map_states_true_facts():
    assert reading_map_problems((ROOT / "docs" / "learn.md").read_text()) == []


def test_negative_control_a_stale_reading_map_is_caught():
    text = (ROOT / "docs" / "learn.md").read_text()
    stale, replaced = re.subn(r"(\| `tinyattn/ops/matmul\.py` \| all \()\d+\)", r"\g<1>100)",
                              text)
    assert replaced == 1                        # the control really planted a stale count
    stale = stale.replace("`backward_walk`", "`run_everything`").replace(
        "`optable/`", "`optables/`")
    problems = reading_map_problems(stale)
    assert any("100 lines stated" in p for p in problems), problems
    assert any("run_everything" in p for p in problems), problems
    assert any("optables/" in p for p in problems), problems


def test_readme_is_what_a_newcomer_needs_first():
    readme = (ROOT / "README.md").read_text()
    heads = re.findall(r"^## (.+)$", readme, re.M)
    assert heads == ["Set up (two commands, from a clone)", "Fifteen lines",
                     "Where to go next", "License"], heads
    assert len(readme.splitlines()) <= 100
    for page in ("docs/learn.md", "docs/training.md", "docs/overview.md",
                 "docs/notebooks/README.md", "docs/exercises.md"):
        assert f"]({page}" in readme, page
    assert "SUITE_TIME" not in readme and "FAST_COMMAND" not in readme
    assert "python3 -m tinyattn learn" in readme


def test_the_fast_subset_in_the_readme_names_real_test_files():
    readme = (ROOT / "README.md").read_text()
    command = readme.split("fast subset", 1)[1].split("```bash\n", 1)[1].split("\n```", 1)[0]
    files = re.findall(r"tests/\S+\.py", command)
    assert len(files) >= 3 and all((ROOT / f).is_file() for f in files), files


def test_the_engine_walk_is_one_short_function_with_nothing_else_in_it():
    from tinyattn.autograd import engine
    source = inspect.getsource(engine.backward_walk)
    body = [line for line in source.split('"""')[-1].splitlines() if line.strip()]
    assert len(body) <= 14, body
    for word in ("hook", "anomaly", "lock", "observer", "retain", "capture", "saved"):
        assert word not in source.split('"""')[-1], word


def test_the_walk_alone_computes_the_gradients():
    """backward_walk with the plainest call and deliver gives the engine's gradients: the
    rest of the engine is instrumentation, not the algorithm."""
    import numpy as np
    import tinyattn as ta
    from tinyattn.autograd.engine import backward_walk
    x = ta.tensor([1.0, 2.0, 3.0], dtype="float64", requires_grad=True)
    w = ta.tensor([[0.5, -1.0, 2.0]], dtype="float64", requires_grad=True)
    loss = ((x * w).tanh() * x).sum() + (x * x).sum()
    got = {}

    def call(fn, grad):
        grads = fn.backward(grad)
        grads = grads if isinstance(grads, tuple) else (grads,)
        return [g if need else None for g, need in zip(grads, fn.needs_input_grad)]

    def deliver(leaf, grad):
        got[id(leaf)] = got.get(id(leaf), 0) + grad

    backward_walk([loss._ctx], {id(loss._ctx): np.ones(())}, call, deliver)
    loss.backward()
    np.testing.assert_allclose(got[id(x)], x.grad.numpy())
    np.testing.assert_allclose(got[id(w)], w.grad.numpy())


def test_a_finished_run_lists_only_what_it_wrote(tmp_path, monkeypatch):
    from tinyattn.train import TrainConfig, train
    from tinyattn.train.outdir import LOCK_FILE, lock_folder, unlock_folder
    # the lock file is what is checked, not the pictures (most of the run's time to draw)
    monkeypatch.setattr("tinyattn.train.plots.have_matplotlib", lambda: False)
    train(TrainConfig(steps=2, eval_every=2, d_model=16, heads=2, layers=1, batch_size=4,
                      eval_size=8, warmup=1, quiet=True, out=str(tmp_path)))
    assert LOCK_FILE not in [p.name for p in tmp_path.iterdir()]
    handle = lock_folder(str(tmp_path))             # while a run holds it, the file is there
    assert (tmp_path / LOCK_FILE).is_file()
    unlock_folder(handle)
    assert not (tmp_path / LOCK_FILE).exists()


def test_a_progress_bar_redraws_its_line_in_a_notebook():
    from tinyattn.train.progress import ProgressBar
    kernel_stream = type("OutStream", (io.StringIO,), {"__module__": "ipykernel.iostream"})()
    bar = ProgressBar(total=3, desc="train", stream=kernel_stream)
    for step in (1, 2, 3):
        bar.update(step, loss="1.0")
    bar.close()
    text = kernel_stream.getvalue()
    assert text.count("\r") >= 3 and "\033[K" not in text
    assert text.split("\n")[0].rsplit("\r", 1)[-1].strip().startswith("train [")
    plain = io.StringIO()                             # a file: one line per log_every
    bar = ProgressBar(total=3, desc="train", stream=plain)
    bar.update(3)
    bar.close()
    assert "\r" not in plain.getvalue()


def test_the_gradcheck_table_never_cuts_a_word(capsys):
    from tinyattn.cli import run_gradcheck_table
    assert run_gradcheck_table(["attention"], fast=True) == 0
    out = capsys.readouterr().out
    assert "fully masked" in out and "fully m\n" not in out and "..." not in out
    from tinyattn.optable import OP_TABLE
    import numpy as np
    labels = [c.label for s in OP_TABLE if s.name == "attention"
              for c in s.cases(np.random.default_rng(0))]
    words = {w for label in labels for w in label.split()}
    printed = set(out.split())
    assert words <= printed, words - printed


def test_positional_png_says_what_its_bright_diagonal_is():
    from tinyattn.train.plot_positional import LOOK_FOR
    for kind in ("learned", "sinusoidal"):
        assert "diagonal" in LOOK_FOR[kind] and "itself" in LOOK_FOR[kind], LOOK_FOR[kind]


def test_the_learn_command_opens_jupyterlab_on_the_first_notebook(capsys, monkeypatch):
    """Measured by hand once JupyterLab was installed (the learn extra): the server answered
    /lab with 200 and listed examples/notebooks. Here: the command it runs, and the message
    when JupyterLab is missing."""
    import importlib.util
    from tinyattn.cli import main
    assert main(["learn", "--print-command"]) == 0
    command = capsys.readouterr().out
    assert "-m jupyterlab" in command and "01_qkv_scaled_dot_product.ipynb" in command
    assert str(ROOT / "examples" / "notebooks") in command
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "jupyterlab" else real(name, *a))
    assert main(["learn"]) == 2
    err = capsys.readouterr().err
    assert 'pip install -e ".[learn]"' in err and "docs/notebooks/" in err
    setup = (ROOT / "setup.cfg").read_text()
    assert "learn =" in setup and "jupyterlab" in setup.split("learn =", 1)[1].split("\n\n")[0]
