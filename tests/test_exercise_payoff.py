"""The payoff: train the toy model with the learner's own backward passes.

- with right answers the run learns like tinyattn's own (float64: the same losses);
- the swap lasts exactly as long as the ``with`` block, and only parts that pass are used;
- a wrong backward that passed the checker (wrong only on the model's shapes) is caught on
  the first step and named; a wrong one used on purpose (unchecked) visibly stops learning;
- the command line: --backward-from DIR, and its errors.
"""
from __future__ import annotations

import json

import numpy as np
import pytest

from tinyattn.exercises import find_exercise
from tinyattn.exercises.adapters import SWAPS
from tinyattn.exercises.checker import SOLUTIONS_DIR
from tinyattn.exercises.payoff import learner_backward
from tinyattn.ops.matmul import Linear
from tinyattn.ops.norm import LayerNorm
from tinyattn.train.cli import main as train_main
from tinyattn.train.loop import TrainConfig, train

SMALL = dict(d_model=16, heads=2, layers=1, batch_size=8, eval_size=32, eval_every=10,
             warmup=2, quiet=True)
FILES = ["04_linear.py", "05_gelu.py", "07_log_softmax_nll.py", "09_layer_norm.py",
         "10_embedding.py", "12_attention.py"]


@pytest.fixture(autouse=True)
def _no_pictures(monkeypatch):
    """The runs here are about whose backward trained the model, not the pictures a run
    draws at its end (test_train.py checks those): without matplotlib's loss, attention and
    attention-history figures each run costs about a third of the CPU time it did."""
    monkeypatch.setattr("tinyattn.train.plots.have_matplotlib", lambda: False)


def _folder(tmp_path, files=FILES, edits=()):
    folder = tmp_path / "mine"
    folder.mkdir()
    for name in files:
        source = (SOLUTIONS_DIR / name).read_text()
        for file, old, new in edits:
            if file == name:
                assert old in source
                source = source.replace(old, new, 1)
        (folder / name).write_text(source)
    return str(folder)


def _losses(tmp_path, tag, **overrides):
    config = TrainConfig(steps=12, out=str(tmp_path / tag), **dict(SMALL, **overrides))
    train(config)
    return np.array(json.loads(__import__("tinyattn").serialization.load(
        str(tmp_path / tag / "checkpoint.npz"))["history"])["train_loss"])


def test_every_swap_names_a_real_exercise_part():
    for swap in SWAPS:
        exercise = find_exercise(swap.exercise)
        assert swap.part in {p.name for p in exercise.parts}
        assert "backward" in swap.op.__dict__


def test_right_answers_train_exactly_like_tinyattn(tmp_path):
    folder = _folder(tmp_path)
    reference = _losses(tmp_path, "reference", dtype="float64")
    original = Linear.__dict__["backward"]
    lines = []
    with learner_backward(folder, out=lines.append) as report:
        assert Linear.__dict__["backward"] is not original
        mine = _losses(tmp_path, "mine", dtype="float64")
    assert Linear.__dict__["backward"] is original          # put back on leaving
    np.testing.assert_allclose(mine, reference, rtol=1e-8)
    used = {r.swap.op.__name__: r for r in report.records}
    for name in ("Linear", "LayerNorm", "Gelu", "CrossEntropy", "Embedding",
                 "PackedSelfAttention"):
        assert used[name].calls > 0 and used[name].compared > 0, name
        assert used[name].worst < 1e-9, (name, used[name].worst)
    assert "Training with YOUR backward passes" in "\n".join(lines)
    assert not report.disagreeing and "not called by this model" in report.summary()


def test_only_parts_that_pass_are_swapped_in(tmp_path):
    folder = _folder(tmp_path, ["09_layer_norm.py"],
                     [("09_layer_norm.py", "dxhat = grad * weight", "dxhat = grad")])
    lines = []
    with learner_backward(folder, out=lines.append) as report:
        assert LayerNorm.__dict__["backward"].__name__ == "backward"
        assert report.records == []
    text = "\n".join(lines)
    assert "09 layer_norm, layer_norm: failed" in text and "No file in the folder for: 01" in text
    assert "None of your backward passes can be used yet" in text


def test_a_backward_wrong_only_on_the_models_shapes_is_named_on_the_first_step(tmp_path):
    """It passes the checker's small cases, then disagrees with tinyattn's on the model."""
    planted = ("    return dx, dweight, dbias",
               "    if x.ndim == 3 and x.shape[1] > 4:\n        dx = 1.5 * dx\n"
               "    return dx, dweight, dbias")
    folder = _folder(tmp_path, ["04_linear.py"], [("04_linear.py",) + planted])
    lines = []
    with learner_backward(folder, out=lines.append) as report:
        _losses(tmp_path, "run")
    text = " ".join(" ".join(lines).split())
    assert [r.swap.op.__name__ for r in report.disagreeing] == ["Linear"]
    assert "your backward for Linear (exercise 04 linear, linear) DISAGREES" in text
    assert "check linear --path" in text and "DISAGREED" in report.summary()


def test_a_wrong_backward_used_on_purpose_visibly_does_not_learn(tmp_path):
    planted = ("07_log_softmax_nll.py", "return dlogits * (grad / n)",
               "return -dlogits * (grad / n)")   # gradient ASCENT on the loss
    folder = _folder(tmp_path, ["07_log_softmax_nll.py"], [planted])
    reference = _losses(tmp_path, "reference", lr=1e-2)
    lines = []
    with learner_backward(folder, unchecked=True, out=lines.append) as report:
        mine = _losses(tmp_path, "mine", lr=1e-2)
    assert reference[-3:].mean() < reference[:3].mean()      # tinyattn's learns ...
    assert mine[-3:].mean() > mine[:3].mean()                # ... the wrong one does not
    assert [r.swap.op.__name__ for r in report.disagreeing] == ["CrossEntropy"]
    assert "CrossEntropy (exercise 07 log_softmax_nll, cross_entropy) DISAGREES" in \
        " ".join(" ".join(lines).split())


def test_a_backward_that_raises_falls_back_and_says_so(tmp_path):
    planted = ("10_embedding.py", "    dweight = np.zeros((vocab, dim))",
               "    if grad.shape[0] > 4:\n        raise RuntimeError('my bug')\n"
               "    dweight = np.zeros((vocab, dim))")
    folder = _folder(tmp_path, ["10_embedding.py"], [planted])
    lines = []
    with learner_backward(folder, out=lines.append) as report:
        losses = _losses(tmp_path, "run")
    assert np.isfinite(losses).all()
    assert "RuntimeError: my bug" in " ".join(" ".join(lines).split())
    assert "raised" in report.summary()


def test_the_train_command_line_flag(tmp_path, capsys):
    folder = _folder(tmp_path, ["04_linear.py"])
    argv = ["--steps", "6", "--d-model", "16", "--heads", "2", "--layers", "1",
            "--batch-size", "8", "--eval-every", "6", "--warmup", "1", "--quiet",
            "--out", str(tmp_path / "run")]
    assert train_main(argv + ["--backward-from", folder]) == 0
    out = capsys.readouterr().out
    assert "Training with YOUR backward passes" in out
    assert "Linear                     exercise 04 linear, linear_backward" in out
    assert "Your backward passes in this run" in out
    assert train_main(argv + ["--backward-from", str(tmp_path / "nope")]) == 2
    assert "is not a folder" in capsys.readouterr().err
    empty = tmp_path / "empty"
    empty.mkdir()
    assert train_main(argv + ["--backward-from", str(empty)]) == 1
    assert "nothing to train with" in capsys.readouterr().err


@pytest.mark.parametrize("swap", SWAPS, ids=lambda s: s.op.__name__)
def test_each_adapter_matches_tinyattns_backward_with_the_solution(swap):
    """Every adapter, on a forward run by tinyattn: the reference solution through the
    adapter gives tinyattn's own gradients."""
    import tinyattn as ta
    import tinyattn.functional as F
    from tinyattn.exercises import load_file
    from tinyattn.exercises.payoff import _ReadOnlySaved
    rng = np.random.default_rng(0)
    x = ta.tensor(rng.standard_normal((2, 3, 4)), requires_grad=True)
    w = ta.tensor(rng.standard_normal((4, 4)), requires_grad=True)
    name = swap.op.__name__
    build = {
        "Add": lambda: x + w[0], "Mul": lambda: x * w[0], "Sum": lambda: x.sum(1),
        "Mean": lambda: x.mean((0, 2), keepdim=True), "Matmul": lambda: x @ w,
        "Linear": lambda: F.linear(x, w, w[0]), "Gelu": lambda: F.gelu(x),
        "Softmax": lambda: F.softmax(x, dim=1), "LogSoftmax": lambda: F.log_softmax(x),
        "CrossEntropy": lambda: F.cross_entropy(x.reshape(6, 4), ta.tensor(
            np.array([0, 3, -100, 1, 2, 2]))),
        "MaskedFill": lambda: F.masked_fill(x, rng.random((2, 3, 4)) < 0.5, 0.0),
        "LayerNorm": lambda: F.layer_norm(x, 4, w[0], w[1]),
        "Embedding": lambda: F.embedding(ta.tensor(np.array([[0, 2, 0], [3, 3, 1]])), w),
        "ScaledDotProductAttention": lambda: F.scaled_dot_product_attention(
            x, x * 0.5, x, is_causal=True),
        "PackedSelfAttention": lambda: ta.ops.attention.packed_self_attention(
            ta.stack([x, x * 0.5, x]).reshape(3, 2, 1, 3, 4), is_causal=True),
        "Rope": lambda: F.rope(x, offset=2)}[name]
    out = build()
    fn = out._ctx
    assert type(fn) is swap.op
    grad = rng.standard_normal(out.shape)
    module = load_file(SOLUTIONS_DIR / find_exercise(swap.exercise).filename)
    learner = getattr(module, f"{swap.part}_backward")
    mine = swap.adapter(_ReadOnlySaved(fn), grad, learner)
    theirs = fn.backward(grad)
    mine = mine if isinstance(mine, tuple) else (mine,)
    theirs = theirs if isinstance(theirs, tuple) else (theirs,)
    for m, t in zip(mine, theirs):
        if t is not None:
            np.testing.assert_allclose(m, t, rtol=1e-10, atol=1e-12)


def test_the_payoff_runs_attention_from_separate_ops_so_softmax_and_mul_are_yours(
        tmp_path, capsys):
    """`train --backward-from DIR` builds attention from separate ops (unless --attn-impl is
    given), so the learner's softmax, masked fill, mul and matmul run; the summary says how
    often each of their backwards ran, of all the op backwards, and how long it took."""
    folder = _folder(tmp_path, ["01_broadcast.py", "03_matmul.py", "06_softmax.py",
                                "08_masked_softmax.py", "04_linear.py"])
    out = tmp_path / "run"
    main = train_main
    code = main(["--backward-from", str(folder), "--steps", "6", "--eval-every", "6",
                 "--d-model", "16", "--heads", "2", "--layers", "1", "--batch-size", "8",
                 "--warmup", "1", "--out", str(out), "--quiet"])
    text = capsys.readouterr().out
    assert code == 0, text
    assert "attention is computed from separate ops" in text
    rows = {line.split()[0]: line for line in text.splitlines() if line.startswith("  ")
            and len(line.split()) > 3 and line.split()[0][:1].isupper()}
    for op in ("Softmax", "MaskedFill", "Mul", "Matmul"):
        calls = int(rows[op].split()[3].replace(",", ""))
        assert calls > 0, rows[op]
    assert "ScaledDotProductAttention" not in rows
    mine, total = [int(n.replace(",", "")) for n in text.split("in this run (from ")[1]
                   .split(":", 1)[1].split()[:4:3]]
    assert 0 < mine < total
    assert "tinyattn's own backward (no exercise of yours covers them)" in text
    assert "took" in text and " s (wall time" in text
    # negative control: asking for the fused op keeps ScaledDotProductAttention, not Softmax
    code = main(["--backward-from", str(folder), "--steps", "6", "--eval-every", "6",
                 "--d-model", "16", "--heads", "2", "--layers", "1", "--batch-size", "8",
                 "--warmup", "1", "--out", str(tmp_path / "fused"), "--quiet",
                 "--attn-impl", "plain"])
    fused = capsys.readouterr().out
    assert code == 0 and "attention is computed from separate ops" not in fused
    assert "not called by this model" in fused and "Softmax" in fused.split(
        "not called by this model")[1]


@pytest.mark.parametrize("options", [dict(padding_idx=0), dict(scale_grad_by_freq=True)])
def test_the_embedding_adapter_hands_options_the_exercise_lacks_back_to_tinyattn(options):
    """Exercise 10's backward is the plain scatter-add: with padding_idx or
    scale_grad_by_freq the adapter says NotCovered (tinyattn's own backward runs) instead
    of returning the plain gradient, which would be silently wrong for those options."""
    import tinyattn as ta
    import tinyattn.functional as F
    from tinyattn.exercises.adapters import NotCovered
    from tinyattn.exercises.payoff import _ReadOnlySaved
    swap = next(s for s in SWAPS if s.op.__name__ == "Embedding")
    w = ta.tensor(np.ones((4, 3)), requires_grad=True)
    ids = ta.tensor(np.array([[0, 2, 0], [3, 3, 1]]))
    learner = load_solution_backward(swap)
    grad = np.ones((2, 3, 3))
    plain = F.embedding(ids, w)._ctx             # negative control: the plain call is covered
    np.testing.assert_allclose(swap.adapter(_ReadOnlySaved(plain), grad, learner),
                               plain.backward(grad))
    fn = F.embedding(ids, w, **options)._ctx
    with pytest.raises(NotCovered, match=next(iter(options))):
        swap.adapter(_ReadOnlySaved(fn), grad, learner)


def load_solution_backward(swap):
    from tinyattn.exercises import load_file
    module = load_file(SOLUTIONS_DIR / find_exercise(swap.exercise).filename)
    return getattr(module, f"{swap.part}_backward")
