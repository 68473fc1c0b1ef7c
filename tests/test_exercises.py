"""Tests for the gradient-check exercises (tinyattn/exercises).

- the course: at least 12 exercises in order, stubs and solutions with the same forward;
- every reference solution passes the checker, and agrees with tinyattn's own op gradient;
- for every exercise, typical wrong answers fail and are diagnosed as that mistake;
- unwritten stubs, learner exceptions, changed forwards and missing files get kind messages;
- the command line: list, check (exit status), start, --path, --solution.
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
import tinyattn.functional as F
from tinyattn.exercises import EXERCISES, check, check_module, find_exercise, load_file, main
from tinyattn.exercises.checker import SOLUTIONS_DIR, STUBS_DIR
from tinyattn.exercises.diagnose import close, diagnose_values

REPO = Path(__file__).resolve().parents[1]
ALL_PARTS = [(ex, part) for ex in EXERCISES for part in ex.parts]


def _solution(exercise):
    return load_file(SOLUTIONS_DIR / exercise.filename)


def _with(name, **overrides):
    """The reference solution of ``name`` with some backward functions replaced."""
    exercise = find_exercise(name)
    module = _solution(exercise)
    for attr, fn in overrides.items():
        setattr(module, attr, fn)
    return check_module(exercise, module)


# ------------------------------------------------------------------ the course itself
def test_at_least_twelve_exercises_in_order_covering_the_issue_list():
    assert len(EXERCISES) >= 12
    assert [ex.number for ex in EXERCISES] == list(range(1, len(EXERCISES) + 1))
    parts = {part.name for ex in EXERCISES for part in ex.parts}
    assert {"add", "mul", "matmul", "sum", "mean", "softmax", "log_softmax", "nll",
            "masked_softmax", "layer_norm", "linear", "embedding", "attention", "split_heads",
            "merge_heads", "gelu", "rope"} <= parts


@pytest.mark.parametrize("exercise", EXERCISES, ids=lambda ex: ex.name)
def test_stub_and_solution_share_the_forward_and_the_stub_is_a_task(exercise):
    stub_text = (STUBS_DIR / exercise.filename).read_text()
    solution_text = (SOLUTIONS_DIR / exercise.filename).read_text()

    def functions(text):
        tree = ast.parse(text)
        return {n.name: ast.get_source_segment(text, n) for n in tree.body
                if isinstance(n, ast.FunctionDef)}

    stub, solution = functions(stub_text), functions(solution_text)
    for part in exercise.parts:
        assert stub[part.forward_name] == solution[part.forward_name]
        assert "raise NotImplementedError" in stub[part.backward_name]
        assert "NotImplementedError" not in solution[part.backward_name]
    for word in ("Task", "Shapes", "Hints", exercise.read):
        assert word in stub_text, f"{exercise.filename} stub lacks {word!r}"
    assert "Derivation" in solution_text and exercise.read in solution_text
    assert max(len(line) for line in stub_text.splitlines() + solution_text.splitlines()) < 100


@pytest.mark.parametrize("exercise", EXERCISES, ids=lambda ex: ex.name)
def test_every_reference_solution_passes(exercise):
    result = check(exercise, SOLUTIONS_DIR)
    assert result.passed, result.text
    assert all("passed" in p.text for p in result.parts)


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
    if name == "masked_fill":                  # PyTorch's masked_fill fills where True
        return F.masked_fill(t[0], ~np.broadcast_to(consts["keep"], t[0].shape),
                             consts["value"])
    if name == "masked_softmax":
        return F.softmax(F.masked_fill(t[0], ~consts["keep"], -math.inf), dim=-1)
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
    raise AssertionError(f"no tinyattn reference for {name}")


@pytest.mark.parametrize("exercise, part", ALL_PARTS, ids=lambda v: getattr(v, "name", ""))
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
        reference.backward(grad)
        for name, mine, tensor in zip(part.inputs, grads, tensors):
            assert mine.shape == tensor.shape
            np.testing.assert_allclose(mine, tensor.grad, rtol=1e-10, atol=1e-12,
                                       err_msg=f"{part.name} {case.label}: d{name}")


# ------------------------------------------------------------------ typical wrong answers
def _unbroadcast(grad, shape):
    grad = grad.sum(axis=tuple(range(grad.ndim - len(shape))))
    axes = tuple(i for i, n in enumerate(shape) if n == 1 and grad.shape[i] != 1)
    return grad.sum(axis=axes, keepdims=True) if axes else grad


def _mean_forgets_n(grad, cache):
    shape, axis, keepdims = cache
    axes = tuple(range(len(shape))) if axis is None else np.atleast_1d(axis) % len(shape)
    return np.broadcast_to(grad if keepdims else np.expand_dims(grad, tuple(axes)), shape)


def _matmul_db_transposed(grad, cache):
    a, b = cache
    return (_unbroadcast(grad @ np.swapaxes(b, -1, -2), a.shape),
            _unbroadcast(np.swapaxes(grad, -1, -2) @ a, b.shape[::-1]))


def _matmul_no_batch_sum(grad, cache):
    a, b = cache
    return (_unbroadcast(grad @ np.swapaxes(b, -1, -2), a.shape),
            np.swapaxes(a, -1, -2) @ grad)


def _linear_dweight_transposed(grad, cache):
    x, weight = cache
    g2, x2 = grad.reshape(-1, weight.shape[0]), x.reshape(-1, weight.shape[1])
    return grad @ weight, x2.T @ g2, g2.sum(axis=0)


def _linear_bias_unsummed(grad, cache):
    x, weight = cache
    g2, x2 = grad.reshape(-1, weight.shape[0]), x.reshape(-1, weight.shape[1])
    return grad @ weight, g2.T @ x2, grad


def _nll_forgets_n(grad, cache):
    (n, classes), target = cache
    d = np.zeros((n, classes))
    d[np.arange(n), target] = -grad
    return d


def _cross_entropy_sign(grad, cache):
    logp, target = cache
    d = -np.exp(logp)
    d[np.arange(len(target)), target] += 1.0
    return d * grad / len(target)


def _layer_norm_dweight_unsummed(grad, cache):
    xhat, rstd, weight = cache
    dxhat = grad * weight
    dx = rstd * (dxhat - dxhat.mean(-1, keepdims=True)
                 - xhat * (dxhat * xhat).mean(-1, keepdims=True))
    return dx, grad * xhat, grad.sum(axis=tuple(range(grad.ndim - 1)))


def _embedding_assigns(grad, cache):
    ids, (vocab, dim) = cache
    dweight = np.zeros((vocab, dim))
    dweight[ids] += grad                    # buffered: a repeated id is counted once
    return dweight


def _attention(grad, cache, scale_q=True, diagonal=False):
    q, k, v, p, scale = cache
    dv = np.swapaxes(p, -1, -2) @ grad
    dp = grad @ np.swapaxes(v, -1, -2)
    ds = p * (1 - p) * dp if diagonal else p * (dp - (dp * p).sum(-1, keepdims=True))
    return ds @ k * (scale if scale_q else 1.0), np.swapaxes(ds, -1, -2) @ q * scale, dv


def _rope_forward_rotation(grad, cache):
    cos, sin = cache
    out = np.empty_like(grad)
    out[..., 0::2] = grad[..., 0::2] * cos - grad[..., 1::2] * sin
    out[..., 1::2] = grad[..., 0::2] * sin + grad[..., 1::2] * cos
    return out


def _softmax(grad, cache):
    (y,) = cache
    return y * (grad - (grad * y).sum(-1, keepdims=True))


WRONG = [
    # exercise, part, kind expected, {function: wrong backward}
    ("broadcast", "add", "shape_broadcast", {"add_backward": lambda g, c: (g, g)}),
    ("broadcast", "mul", "none",
     {"mul_backward": lambda g, c: (_unbroadcast(g * c[1], c[0].shape), None)}),
    ("reductions", "mean", "factor", {"mean_backward": _mean_forgets_n}),
    ("matmul", "matmul", "shape_transpose", {"matmul_backward": _matmul_db_transposed}),
    ("matmul", "matmul", "shape_broadcast", {"matmul_backward": _matmul_no_batch_sum}),
    ("linear", "linear", "shape_transpose", {"linear_backward": _linear_dweight_transposed}),
    ("linear", "linear", "shape_broadcast", {"linear_backward": _linear_bias_unsummed}),
    ("gelu", "gelu", "product_rule", {"gelu_backward": lambda g, c: g * c[1]}),
    ("gelu", "gelu", "sign", {"gelu_backward": lambda g, c: -g * (
        c[1] + c[0] * np.exp(-0.5 * c[0] ** 2) / math.sqrt(2 * math.pi))}),
    ("softmax", "softmax", "diagonal",
     {"softmax_backward": lambda g, c: g * c[0] * (1 - c[0])}),
    ("softmax", "softmax", "factor", {"softmax_backward": lambda g, c: 2 * _softmax(g, c)}),
    ("log_softmax_nll", "log_softmax", "diagonal",
     {"log_softmax_backward": lambda g, c: g * (1 - np.exp(c[0]))}),
    ("log_softmax_nll", "nll", "factor", {"nll_backward": _nll_forgets_n}),
    ("log_softmax_nll", "cross_entropy", "sign",
     {"cross_entropy_backward": _cross_entropy_sign}),
    ("masked_softmax", "masked_fill", "masked", {"masked_fill_backward": lambda g, c: g}),
    ("masked_softmax", "masked_softmax", "fully_masked_row",
     {"masked_softmax_backward": lambda g, c: _softmax(g, c[:1]) / c[0].sum(-1, keepdims=True)}),
    ("layer_norm", "layer_norm", "constant_stats", {"layer_norm_backward": lambda g, c: (
        g * c[2] * c[1], (g * c[0]).sum(axis=tuple(range(g.ndim - 1))),
        g.sum(axis=tuple(range(g.ndim - 1))))}),
    ("layer_norm", "layer_norm", "shape_broadcast",
     {"layer_norm_backward": _layer_norm_dweight_unsummed}),
    ("embedding", "embedding", "repeated_ids", {"embedding_backward": _embedding_assigns}),
    ("heads", "split_heads", "transpose", {"split_heads_backward": lambda g, c: g.reshape(c[0])}),
    ("heads", "merge_heads", "transpose", {"merge_heads_backward": lambda g, c: g.reshape(c[0])}),
    ("attention", "attention", "factor",
     {"attention_backward": lambda g, c: _attention(g, c, scale_q=False)}),
    ("attention", "attention", "diagonal",
     {"attention_backward": lambda g, c: _attention(g, c, diagonal=True)}),
    ("rope", "rope", "transpose", {"rope_backward": _rope_forward_rotation}),
]


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
@pytest.mark.parametrize("name, part, kind, overrides", WRONG,
                         ids=[f"{w[1]}-{w[2]}" for w in WRONG])
def test_typical_wrong_answer_fails_and_is_diagnosed(name, part, kind, overrides):
    result = _with(name, **overrides)
    assert not result.passed
    failed = {p.part: p for p in result.parts if not p.passed}
    assert set(failed) == {part}
    assert failed[part].status == "failed"
    assert failed[part].diagnosis.kind == kind, failed[part].text
    assert "diagnosis:" in failed[part].text


def test_every_exercise_has_a_diagnosed_wrong_answer():
    assert {find_exercise(w[0]).name for w in WRONG} == {ex.name for ex in EXERCISES}


def test_a_failure_names_the_input_the_worst_element_and_both_values():
    text = _with("softmax", softmax_backward=lambda g, c: g * c[0] * (1 - c[0])).text
    assert "the gradient of x is wrong" in text
    assert "worst element: d out[" in text and "/ d x[" in text
    assert "yours (analytic)" in text and "vs numeric" in text
    assert "read: docs/derivations.md#softmax" in text


def test_diagnosis_names_the_factor():
    text = _with("attention", attention_backward=lambda g, c: _attention(g, c, scale_q=False)
                 ).text
    assert "the gradient of q is wrong" in text and "sqrt(d_k)" in text
    assert "N = 4" in _with("log_softmax_nll", nll_backward=_nll_forgets_n).text


def test_value_level_transpose_is_recognised():
    part = find_exercise("matmul").parts[0]
    case = part.cases(np.random.default_rng(0))[3]          # square matrices
    want = np.arange(18.0).reshape(2, 3, 3)
    diagnosis = diagnose_values(part, case, "b", np.swapaxes(want, -1, -2), want,
                                np.ones((2, 3, 3)), None)
    assert diagnosis.kind == "transpose"
    assert close(want, want) and not close(want, want + 1e-3)


def test_a_wrong_count_is_reported():
    result = _with("matmul", matmul_backward=lambda g, c: g @ np.swapaxes(c[1], -1, -2))
    assert result.parts[0].diagnosis.kind == "count"
    assert "(da, db)" in result.parts[0].text


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
    assert part.status == "error"
    assert "return np.broadcast_to(grad, shape)" in part.text
    assert "test_exercises.py" in part.text and "ValueError" in part.text
    assert "tinyattn/autograd.py" not in part.text and "checker.py" not in part.text
    assert "numpy" not in part.text.split("ValueError")[0]


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
    assert "(out, cache)" in result.text

    def shifty(grad, cache):                    # right shape only for the random grad
        (y,) = cache
        dx = y * (grad - (grad * y).sum(-1, keepdims=True))
        return dx if np.count_nonzero(grad) > 1 else dx[..., :1]

    result = _with("softmax", softmax_backward=shifty)
    assert result.parts[0].status == "error"
    assert "the gradient check could not run" in result.text


def test_missing_file_and_syntax_error(tmp_path):
    result = check("softmax", tmp_path)
    assert not result.passed and "start" in result.text
    (tmp_path / "06_softmax.py").write_text("def softmax_forward(x:\n    pass\n")
    result = check("softmax", tmp_path)
    assert not result.passed and "does not parse: line 1" in result.text


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


def test_check_path_uses_the_learners_copy(tmp_path, capsys):
    main(["start", str(tmp_path)])
    capsys.readouterr()
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
    assert main(["list", "--path", str(tmp_path)]) == 0
    assert main(["check", "all", "--path", str(tmp_path)]) == 1
    assert "0 of 13 exercises pass" in capsys.readouterr().out


def test_unknown_exercise_name_is_a_clear_value_error():
    assert find_exercise("6") is find_exercise("06_softmax.py") is find_exercise("softmax")
    assert find_exercise("nll").name == "log_softmax_nll"
    with pytest.raises(ValueError, match="no exercise called 'softmx'; choose one of"):
        find_exercise("softmx")


def test_solution_list_and_usage_errors(capsys):
    assert main(["--solution", "softmax"]) == 0
    out = capsys.readouterr().out
    assert "Derivation" in out and "def softmax_backward" in out
    assert main(["list"]) == 0
    out = capsys.readouterr().out
    assert all(ex.name in out for ex in EXERCISES)
    assert main(["check", "no_such_exercise"]) == 2
    assert "choose one of" in capsys.readouterr().err


def _run(*args):
    env = dict(os.environ, PYTHONPATH=str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    return subprocess.run([sys.executable, "-m", "tinyattn.exercises", *args], cwd=REPO,
                          env=env, capture_output=True, text=True, timeout=60)


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
