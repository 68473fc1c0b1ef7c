"""Tests for the exercises (tinyattn/exercises): the course, the checker, the command line.

- the course: 20+ exercises in two tracks, stubs and solutions with the same given code;
- every reference solution passes the checker (run as a learner's file is: in a subprocess),
  and the ops-track solutions agree with tinyattn's own op gradients;
- unwritten stubs, learner exceptions, changed forwards and missing files get kind messages;
- the command line: list, check (exit status, streaming, --once), start, --path, --solution.
Planted mistakes are in test_exercise_mistakes.py, attacks on the checker in
test_exercise_integrity.py, training with a learner's backward in test_exercise_payoff.py.
"""
from __future__ import annotations

import ast
import math
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import tinyattn as ta
from tinyattn.ops.rnn import gru_cell, lstm_cell
import tinyattn.functional as F
from tinyattn.ops.softmax import softmax_empty_rows_zero
from conftest import squash
from tinyattn.exercises import EXERCISES, check, check_module, find_exercise, load_file, main
from tinyattn.exercises.checker import SOLUTIONS_DIR, STUBS_DIR

REPO = Path(__file__).resolve().parents[1]
OP_PARTS = [(ex, part) for ex in EXERCISES if ex.track == "ops" for part in ex.parts]


def _solution(exercise):
    return load_file(SOLUTIONS_DIR / exercise.filename)


def _with(name, **overrides):
    """The reference solution of ``name`` with some functions replaced, judged in-process."""
    exercise = find_exercise(name)
    module = _solution(exercise)
    for attr, fn in overrides.items():
        setattr(module, attr, fn)
    return check_module(exercise, module)


# ------------------------------------------------------------------ the course itself
def test_twenty_six_exercises_in_three_tracks_covering_the_issue_list():
    assert len(EXERCISES) >= 26
    assert [ex.number for ex in EXERCISES] == list(range(1, len(EXERCISES) + 1))
    assert {ex.track for ex in EXERCISES} == {"ops", "engine", "systems"}
    parts = {part.name for ex in EXERCISES for part in ex.parts}
    assert {"add", "mul", "matmul", "sum", "mean", "softmax", "log_softmax", "nll",
            "keep_or_fill", "masked_softmax", "layer_norm", "linear", "embedding",
            "attention", "split_heads", "merge_heads", "gelu", "rope"} <= parts
    assert {"topological_order", "backward", "unbroadcast", "no_grad", "numeric_gradient",
            "gradcheck", "zero_grad", "sgd_step", "train_step"} <= parts
    assert "masked_fill" not in parts       # it filled where keep was False: renamed


def _definitions(text):
    tree = ast.parse(text)
    return {n.name: ast.get_source_segment(text, n) for n in tree.body
            if isinstance(n, (ast.FunctionDef, ast.ClassDef))}


@pytest.mark.parametrize("exercise", EXERCISES, ids=lambda ex: ex.name)
def test_stub_and_solution_share_the_given_code_and_the_stub_is_a_task(exercise):
    stub_text = (STUBS_DIR / exercise.filename).read_text()
    solution_text = (SOLUTIONS_DIR / exercise.filename).read_text()
    stub, solution = _definitions(stub_text), _definitions(solution_text)
    learner = {p.backward_name if p.kind == "op" else name for p in exercise.parts
               for name in p.functions}
    if exercise.track != "engine":              # a solution may add helpers (unbroadcast)
        assert set(stub) <= set(solution)
    else:                                       # the engine's given code is all shared
        assert set(stub) == set(solution)
    for name in stub:
        if name in learner:
            assert "raise NotImplementedError" in stub[name], name
            assert "NotImplementedError" not in solution[name], name
        else:
            assert stub[name] == solution[name], f"{exercise.filename}: {name} differs"
    for word in ("Task", "Hints", "Check", exercise.read):
        assert word in stub_text, f"{exercise.filename} stub lacks {word!r}"
    assert "Derivation" in solution_text and exercise.read in solution_text
    assert max(len(line) for line in stub_text.splitlines() + solution_text.splitlines()) < 100


def test_every_reference_solution_passes_in_a_subprocess():
    """The real path: each file runs in its own process, the verdict is computed here."""
    for exercise in EXERCISES:
        result = check(exercise, SOLUTIONS_DIR)
        assert result.passed, result.text
        assert all("passed" in p.text for p in result.parts)


def test_the_engine_payoff_line_reports_a_falling_loss():
    text = check_module("train", _solution(find_exercise("train"))).text
    assert "your MLP's loss went from" in text and "on an engine you wrote" in text


# ------------------------------------------------------------------ tinyattn as the reference
def _rope_matrix(positions, d, base):
    theta = base ** (-np.arange(0, d, 2) / d)
    angle = positions[:, None] * theta[None, :]             # (S, D/2)
    rot = np.zeros((len(positions), d, d))
    for i in range(d // 2):
        c, s = np.cos(angle[:, i]), np.sin(angle[:, i])
        rot[:, 2 * i, 2 * i], rot[:, 2 * i, 2 * i + 1] = c, -s
        rot[:, 2 * i + 1, 2 * i], rot[:, 2 * i + 1, 2 * i + 1] = s, c
    return rot                                              # (S, D, D)


def _tinyattn_op(part, tensors, consts):
    """The same computation, written with tinyattn's own ops."""
    t = tensors
    name = part.name
    if name == "add":
        return t[0] + t[1]
    if name == "mul":
        return t[0] * t[1]
    if name in ("sum", "mean"):
        return getattr(t[0], name)(consts["axis"], consts["keepdims"])
    if name == "matmul":
        return ta.matmul(t[0], t[1])
    if name == "linear":
        return F.linear(*t)
    if name == "gelu":
        return F.gelu(t[0])
    if name == "softmax":
        return F.softmax(t[0], dim=-1)
    if name == "log_softmax":
        return F.log_softmax(t[0], dim=-1)
    if name == "nll":
        target = consts["target"]
        return -t[0][np.arange(len(target)), target].mean()
    if name == "cross_entropy":
        return F.cross_entropy(t[0], ta.tensor(consts["target"]))
    if name == "keep_or_fill":                  # F.masked_fill fills where its mask is True
        return F.masked_fill(t[0], ~np.broadcast_to(consts["keep"], t[0].shape),
                             consts["value"])
    if name == "masked_softmax":
        # the attention ops' softmax: a fully masked row gives zeros (F.softmax: NaN, as torch)
        return softmax_empty_rows_zero(F.masked_fill(t[0], ~consts["keep"], -math.inf), dim=-1)
    if name == "layer_norm":
        return F.layer_norm(t[0], t[0].shape[-1], t[1], t[2], eps=1e-5)
    if name == "embedding":
        return F.embedding(ta.tensor(consts["ids"]), t[0])
    if name == "split_heads":
        b, s, d = t[0].shape
        h = consts["num_heads"]
        return t[0].reshape(b, s, h, d // h).transpose(1, 2)
    if name == "merge_heads":
        b, h, s, d_k = t[0].shape
        return t[0].transpose(1, 2).reshape(b, s, h * d_k)
    if name == "attention":
        return F.scaled_dot_product_attention(*t, attn_mask=consts["keep"])
    if name == "rope":
        positions, base = consts["positions"], consts.get("base", 10000.0)
        offset = int(positions[0])
        if np.array_equal(positions, np.arange(offset, offset + len(positions))):
            return F.rope(t[0], offset=offset, base=base)   # tinyattn's fused op
        rot = _rope_matrix(positions, t[0].shape[-1], base)  # any positions: R x as a matmul
        return ta.matmul(ta.tensor(rot), t[0].unsqueeze(-1)).squeeze(-1)
    if name == "lstm_cell":                     # tinyattn's step: [h | c] as the exercise
        x, h_prev, c_prev, w_ih, w_hh, b = t
        return ta.cat(list(lstm_cell(x, (h_prev, c_prev), w_ih, w_hh, b)), dim=1)
    if name == "gru_cell":
        return gru_cell(*t)
    if name == "conv2d":
        return F.conv2d(*t, **consts)
    if name == "max_pool2d":
        return F.max_pool2d(t[0], **consts)
    raise AssertionError(f"no tinyattn reference for {name}")


@pytest.mark.parametrize("exercise, part", OP_PARTS, ids=lambda v: getattr(v, "name", ""))
def test_solution_agrees_with_tinyattns_own_op(exercise, part):
    solution = _solution(exercise)
    forward = getattr(solution, part.forward_name)
    backward = getattr(solution, part.backward_name)
    rng = np.random.default_rng(7)
    for case in part.cases(np.random.default_rng(exercise.number * 100)):
        out, cache = forward(*[x.copy() for x in case.inputs.values()], **case.consts)
        grad = rng.standard_normal(np.shape(out))
        grads = backward(grad, cache)
        grads = grads if isinstance(grads, tuple) else (grads,)
        tensors = [ta.tensor(x.copy(), requires_grad=True) for x in case.inputs.values()]
        reference = _tinyattn_op(part, tensors, case.consts)
        np.testing.assert_allclose(reference.numpy(), out, rtol=1e-12, atol=1e-12)
        reference.backward(ta.tensor(grad))
        for name, mine, tensor in zip(part.inputs, grads, tensors):
            assert mine.shape == tensor.shape
            np.testing.assert_allclose(mine, tensor.grad.numpy() if hasattr(
                tensor.grad, "numpy") else tensor.grad, rtol=1e-10, atol=1e-12,
                err_msg=f"{part.name} {case.label}: d{name}")


def test_engine_solution_gradients_agree_with_tinyattn():
    """The engine track's reference engine against tinyattn's on one graph with reuse and
    broadcasting: y = sum(tanh(x @ W + b) * x @ W)."""
    engine = _solution(find_exercise("train"))
    rng = np.random.default_rng(0)
    x, w, b = rng.standard_normal((4, 3)), rng.standard_normal((3, 3)), rng.standard_normal(3)
    leaves = [engine.Tensor(a) for a in (x, w, b)]
    h = engine.matmul(leaves[0], leaves[1])
    engine.backward(engine.sum_all(engine.mul(engine.tanh(h + leaves[2]), h)))
    ours = [ta.tensor(a, requires_grad=True) for a in (x, w, b)]
    h2 = ours[0] @ ours[1]
    ((h2 + ours[2]).tanh() * h2).sum().backward()
    for mine, tensor in zip(leaves, ours):
        np.testing.assert_allclose(mine.grad, np.asarray(tensor.grad.numpy() if hasattr(
            tensor.grad, "numpy") else tensor.grad), rtol=1e-12)


# ------------------------------------------------------------------ kind messages
def test_unwritten_stubs_say_so_kindly():
    result = check("broadcast")                             # the package's own stubs
    assert not result.passed
    assert [p.status for p in result.parts] == ["not_implemented"] * 2
    text = result.text
    assert "add_backward still raises NotImplementedError" in text
    assert "mul_backward" in text and "docs/derivations.md#broadcasting" in text
    assert "Traceback" not in text and "start my_exercises" in text


def test_learner_exception_shows_only_the_learners_lines():
    def sum_backward(grad, cache):
        shape, axis, keepdims = cache
        return np.broadcast_to(grad, shape)                 # forgot to put the axis back

    result = _with("reductions", sum_backward=sum_backward)
    part = result.parts[0]
    assert part.status == "error" and part.diagnosis.kind == "shape_error"
    assert "return np.broadcast_to(grad, shape)" in squash(part.text)
    assert "test_exercises.py" in part.text and "ValueError" in part.text
    assert "runner.py" not in part.text and "checker.py" not in part.text
    assert "numpy" not in part.text.split("ValueError")[0]


def test_a_shape_error_is_explained_in_the_exercises_letters():
    def matmul_backward(grad, cache):
        a, b = cache
        return grad @ b, np.swapaxes(a, -1, -2) @ grad     # da needs b^T

    text = _with("matmul", matmul_backward=matmul_backward).text
    assert "sizes in this case: M = 3, K = 4, N = 2" in text
    assert "grad (3, 2)" in text and "b (4, 2)" in text
    assert "last axis of a must equal the second-to-last axis of b" in text


def test_writing_into_grad_gets_a_hint():
    def softmax_backward(grad, cache):
        (y,) = cache
        grad -= (grad * y).sum(-1, keepdims=True)
        return y * grad

    text = _with("softmax", softmax_backward=softmax_backward).text
    assert "read-only" in text and "grad.copy()" in text


def test_a_changed_forward_is_refused():
    result = _with("gelu", gelu_forward=lambda x: (x, (x, np.ones_like(x))),
                   gelu_backward=lambda g, c: g)
    assert result.parts[0].diagnosis.kind == "forward_changed"


def test_a_forward_that_returns_no_pair_and_a_shape_that_changes_with_grad():
    result = _with("gelu", gelu_forward=lambda x: x)
    assert result.parts[0].diagnosis.kind == "forward_changed"
    assert "(out, cache)" in squash(result.text)

    def shifty(grad, cache):                    # right shape only for the random grads
        (y,) = cache
        dx = y * (grad - (grad * y).sum(-1, keepdims=True))
        return dx if np.count_nonzero(grad) > 1 else dx[..., :1]

    result = _with("softmax", softmax_backward=shifty)
    assert result.parts[0].status == "error" and result.parts[0].diagnosis.kind == "varies"


def test_a_stateful_backward_right_only_for_random_grads_is_caught():
    calls = {"n": 0}

    def softmax_backward(grad, cache):
        calls["n"] += 1
        (y,) = cache
        right = y * (grad - (grad * y).sum(-1, keepdims=True))
        return right if calls["n"] <= 2 else right * 1.5      # the one-hots are off

    result = _with("softmax", softmax_backward=softmax_backward)
    assert not result.passed and result.parts[0].diagnosis.kind == "inconsistent"


def test_missing_file_and_syntax_error(tmp_path):
    result = check("softmax", tmp_path)
    assert not result.passed and "start" in squash(result.text)
    (tmp_path / "06_softmax.py").write_text("def softmax_forward(x:\n    pass\n")
    result = check("softmax", tmp_path)
    assert not result.passed and "does not parse: line 1" in squash(result.text)


# ------------------------------------------------------------------ start, --path, CLI
def test_start_copies_the_stubs_and_keeps_the_learners_work(tmp_path, capsys):
    folder = tmp_path / "mine"
    assert main(["start", str(folder)]) == 0
    for ex in EXERCISES:
        assert (folder / ex.filename).read_text() == (STUBS_DIR / ex.filename).read_text()
    (folder / "06_softmax.py").write_text("# my work\n")
    assert main(["start", str(folder)]) == 0
    assert (folder / "06_softmax.py").read_text() == "# my work\n"
    assert "kept your" in capsys.readouterr().out


def test_start_onto_a_file_an_unwritable_folder_or_an_empty_name(tmp_path, capsys,
                                                                 monkeypatch):
    target = tmp_path / "a_file"
    target.write_text("not a folder")
    assert main(["start", str(target)]) == 2
    assert "is a file, not a folder" in capsys.readouterr().err
    assert main(["start", ""]) == 2
    assert "give a folder name" in capsys.readouterr().err

    def refuse(*args, **kwargs):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr("tinyattn.exercises.cli.shutil.copyfile", refuse)
    assert main(["start", str(tmp_path / "locked")]) == 2
    err = capsys.readouterr().err
    assert "cannot write into" in err and "permission denied" in err
    assert "Traceback" not in err


def test_list_and_check_with_a_missing_or_empty_path(tmp_path, capsys):
    assert main(["list", "--path", str(tmp_path / "nope")]) == 2
    assert "does not exist; create it with" in capsys.readouterr().err
    assert main(["check", "softmax", "--path", ""]) == 2
    assert "--path is empty" in capsys.readouterr().err
    (tmp_path / "f").write_text("")
    assert main(["check", "softmax", "--path", str(tmp_path / "f")]) == 2
    assert "is a file" in capsys.readouterr().err


def test_check_path_uses_the_learners_copy(tmp_path, capsys):
    for ex in EXERCISES[:7]:
        (tmp_path / ex.filename).write_text((STUBS_DIR / ex.filename).read_text())
    assert main(["check", "softmax", "--path", str(tmp_path)]) == 1
    solution = (SOLUTIONS_DIR / "06_softmax.py").read_text()
    (tmp_path / "06_softmax.py").write_text(solution)
    assert main(["check", "06", "--path", str(tmp_path)]) == 0
    wrong = solution.replace("y * (grad - (grad * y).sum(axis=-1, keepdims=True))",
                             "grad * y * (1 - y)")
    assert wrong != solution
    (tmp_path / "06_softmax.py").write_text(wrong)
    assert main(["check", "softmax", "--path", str(tmp_path)]) == 1
    out = capsys.readouterr().out
    assert str(tmp_path) in out and "Only the diagonal of the Jacobian" in out


def test_once_runs_one_call_and_shows_the_prints(tmp_path, capsys):
    source = (SOLUTIONS_DIR / "07_log_softmax_nll.py").read_text().replace(
        "    n = logp.shape[0]\n    dlogits", "    print('my debug line', grad)\n"
        "    n = logp.shape[0]\n    dlogits")
    (tmp_path / "07_log_softmax_nll.py").write_text(source)
    assert main(["check", "cross_entropy", "--path", str(tmp_path), "--once"]) == 0
    out = capsys.readouterr().out
    assert out.count("my debug line") == 1                  # one call, not dozens
    assert "--- what your code printed ---" in out and "cross_entropy" in out
    assert "log_softmax:" not in out                        # only the part asked for
    assert main(["check", "cross_entropy", "--path", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "my debug line" not in out and "--once" in out   # a pointer, not the flood


def test_learn_and_exercise_docs_links_resolve():
    """docs/learn.md used to copy the README's section with links that broke inside docs/."""
    import re
    for doc in (REPO / "docs" / "learn.md", REPO / "docs" / "exercises.md",
                REPO / "README.md"):
        for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", doc.read_text()):
            if "://" not in target:
                assert (doc.parent / target).exists(), f"{doc.name}: broken link {target}"
    assert "#the-same-path-from-the-command-line" in (REPO / "docs" / "learn.md").read_text()


def test_unknown_exercise_name_is_a_clear_value_error():
    assert find_exercise("6") is find_exercise("06_softmax.py") is find_exercise("softmax")
    assert find_exercise("nll").name == "log_softmax_nll"
    assert find_exercise("topological_order").name == "topo_sort"
    with pytest.raises(ValueError, match="no exercise called 'softmx'; choose one of"):
        find_exercise("softmx")


def test_solution_list_and_usage_errors(capsys):
    for exercise in EXERCISES:
        assert main(["--solution", exercise.name]) == 0
        out = capsys.readouterr().out
        assert "Derivation" in out and "NotImplementedError" not in out
    assert main(["list"]) == 0
    out = capsys.readouterr().out
    assert all(ex.name in out for ex in EXERCISES)
    assert "The ops track" in out and "The engine track" in out
    assert main(["check", "no_such_exercise"]) == 2
    assert "choose one of" in capsys.readouterr().err


def _run(*args, timeout=120):
    env = dict(os.environ, PYTHONPATH=str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    return subprocess.run([sys.executable, "-m", "tinyattn.exercises", *args], cwd=REPO,
                          env=env, capture_output=True, text=True, timeout=timeout)


def test_cli_exit_status_in_a_subprocess(tmp_path):
    stub = _run("check", "softmax")
    assert stub.returncode == 1
    assert "NOT WRITTEN YET" in stub.stdout and "Traceback" not in stub.stdout + stub.stderr
    (tmp_path / "06_softmax.py").write_text((SOLUTIONS_DIR / "06_softmax.py").read_text())
    solved = _run("check", "softmax", "--path", str(tmp_path))
    assert solved.returncode == 0 and "PASSED" in solved.stdout


# ------------------------------------------------------------------ examples/eps_sweep.py
def _eps_sweep():
    return load_file(REPO / "examples" / "eps_sweep.py")


def test_eps_sweep_shows_truncation_and_round_off():
    sweep = _eps_sweep().sweep
    eps = [1e-12, 1e-6, 1e-2, 1e-1]
    f64, f32 = sweep("float64", eps), sweep("float32", eps)
    assert f64[1] < 1e-8 < f32[1]                           # float64 fine at 1e-6, float32 not
    assert f64[0] > 100 * f64[1]                            # round-off: tiny eps is worse
    assert 50 < f64[3] / f64[2] < 200                       # truncation: error ~ eps^2
    assert f32[0] > 0.5                                     # x + eps u rounds back to x


def test_eps_sweep_without_matplotlib_says_how_to_get_the_plot(tmp_path, capsys, monkeypatch):
    module = _eps_sweep()
    monkeypatch.setattr(module, "EPSILONS", np.logspace(-10, 0, 6))
    # As if not installed. Only setitem: monkeypatch puts the real module back afterwards
    # (deleting and re-importing it would leave a second, half-initialised matplotlib).
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    assert module.main(["--out", str(tmp_path / "none.png")]) == 0
    assert 'pip install "tinyattn[viz]"' in capsys.readouterr().out
    assert not (tmp_path / "none.png").exists()


def test_eps_sweep_saves_a_plot(tmp_path, monkeypatch):
    pytest.importorskip("matplotlib")
    module = _eps_sweep()
    monkeypatch.setattr(module, "EPSILONS", np.logspace(-10, 0, 6))
    assert module.main(["--out", str(tmp_path / "sweep.png")]) == 0
    assert (tmp_path / "sweep.png").read_bytes()[:4] == b"\x89PNG"
