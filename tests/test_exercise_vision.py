"""Exercises 29 (conv2d) and 30 (max pooling): the checker's own trust.

- the reference solutions are torch's gradients, ties included (skipped without torch);
- the gradient-check cases of max pooling hold no tie and the tie cases do; without
  ``exact_rule`` the numeric check would reject torch's own rule at a tie (the reason the
  tie cases are judged against the rule instead): a negative control;
- other right answers pass (conv2d's dx as a full correlation with the flipped kernel, a
  max pooling written window by window with np.argmax and np.add.at);
- a learner's dx[idx] = g (fancy assignment) is named, as are the planted mistakes of
  test_exercise_mistakes.py.
"""
from __future__ import annotations

import itertools
from dataclasses import replace

import numpy as np
import pytest

from tinyattn.exercises import check_module, find_exercise, load_file
from tinyattn.exercises.checker import SOLUTIONS_DIR
from tinyattn.exercises.course import Exercise, Part
from tinyattn.exercises.vision_track import TIES, conv2d_cases, max_pool_cases

CONV = load_file(SOLUTIONS_DIR / "29_conv2d.py")
POOL = load_file(SOLUTIONS_DIR / "30_max_pool.py")


def _pool_cases():
    return max_pool_cases(np.random.default_rng(3000))


def _windows(case):
    """Every window of the case as a row of values: (windows, KH*KW)."""
    x = case.inputs["x"]
    out, (_, _, kernel, stride, padding, dilation) = POOL.max_pool2d_forward(x, **case.consts)
    xpad = np.pad(x, ((0, 0), (0, 0)) + tuple((p, p) for p in padding),
                  constant_values=-np.inf)
    taps = [xpad[:, :, rows, cols] for rows, cols in (
        POOL.taps(kh, kw, out.shape[2:], stride, dilation)
        for kh, kw in itertools.product(range(kernel[0]), range(kernel[1])))]
    return np.stack(taps, axis=-1).reshape(-1, len(taps))


def test_tie_cases_hold_ties_and_the_gradient_check_cases_do_not():
    cases = _pool_cases()
    assert any(c.exact_rule for c in cases) and any(not c.exact_rule for c in cases)
    for case in cases:
        windows = _windows(case)
        ties = ((windows == windows.max(axis=1, keepdims=True)).sum(axis=1) > 1).sum()
        assert (ties > 0) == bool(case.exact_rule), case.label
        assert case.exact_rule in ("", TIES)


def test_without_the_exact_rule_the_numeric_check_rejects_torchs_rule_at_a_tie():
    """The snag this design answers: at a tie, finite differences see half the gradient on
    each tied element, so the right answer fails them. Strip exact_rule: the reference
    solution itself is then rejected, in the tie case and only there."""
    exercise = find_exercise("max_pool")
    part = exercise.parts[0]

    def stripped(rng):
        return [replace(case, exact_rule="") for case in part.cases(rng)]

    plain = Exercise(exercise.number, exercise.name, exercise.title, exercise.read,
                     [Part(part.name, part.inputs, stripped, mistakes=part.mistakes)])
    result = check_module(plain, load_file(SOLUTIONS_DIR / exercise.filename))
    assert not result.passed and "tied maxima" in result.text, result.text
    assert check_module(exercise, load_file(SOLUTIONS_DIR / exercise.filename)).passed


def _torch_grads(torch, op, case, grad):
    tensors = [torch.tensor(v, requires_grad=True) for v in case.inputs.values()]
    out = op(*tensors, **case.consts)
    out.backward(torch.tensor(grad))
    return out.detach().numpy(), [t.grad.numpy() for t in tensors]


@pytest.mark.parametrize("which", ["conv2d", "max_pool"])
def test_the_reference_solutions_are_torchs_gradients_ties_included(which):
    torch = pytest.importorskip("torch")
    module, cases, op = {
        "conv2d": (CONV, conv2d_cases(np.random.default_rng(2900)), torch.nn.functional.conv2d),
        "max_pool": (POOL, _pool_cases(), torch.nn.functional.max_pool2d)}[which]
    rng = np.random.default_rng(0)
    for case in cases:
        forward = getattr(module, f"{'max_pool2d' if which == 'max_pool' else which}_forward")
        backward = getattr(module, forward.__name__.replace("forward", "backward"))
        out, cache = forward(*[v.copy() for v in case.inputs.values()], **case.consts)
        grad = rng.standard_normal(out.shape)
        torch_out, torch_grads = _torch_grads(torch, op, case, grad)
        np.testing.assert_allclose(out, torch_out, rtol=1e-12, atol=1e-12)
        mine = backward(grad, cache)
        for got, want in zip(mine if isinstance(mine, tuple) else (mine,), torch_grads):
            np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12, err_msg=case.label)


def test_at_a_tie_the_gradient_goes_to_the_index_torch_returns():
    torch = pytest.importorskip("torch")
    x = np.array([[[[1.0, 2.0, 2.0], [2.0, 0.0, 2.0], [2.0, 2.0, 1.0]]]])   # ties everywhere
    out, cache = POOL.max_pool2d_forward(x, 2, 1)
    _, index = torch.nn.functional.max_pool2d(torch.tensor(x), 2, 1, return_indices=True)
    for m in range(out.size):                   # one window at a time
        grad = np.zeros(out.size)
        grad[m] = 1.0
        dx = POOL.max_pool2d_backward(grad.reshape(out.shape), cache).reshape(-1)
        assert dx.sum() == 1.0 and dx[int(index.reshape(-1)[m])] == 1.0


# ------------------------------------------------------------------ other right answers
def conv2d_backward_by_full_correlation(grad, cache):
    """The textbook route: dx = g with (s - 1) zeros between its entries, padded by d(K-1),
    correlated with the kernel flipped and its channel axes swapped; dw by loops."""
    x, weight, (sh, sw), (ph, pw), (dh, dw) = cache
    n, o, h_out, w_out = grad.shape
    kh_size, kw_size = weight.shape[2:]
    spread = np.zeros((n, o, (h_out - 1) * sh + 1, (w_out - 1) * sw + 1))
    spread[:, :, ::sh, ::sw] = grad
    eh, ew = dh * (kh_size - 1), dw * (kw_size - 1)
    gpad = np.pad(spread, ((0, 0), (0, 0), (eh, eh), (ew, ew)))
    flipped = weight[:, :, ::-1, ::-1]
    reach_h, reach_w = spread.shape[2] + eh, spread.shape[3] + ew
    dxpad = np.zeros((n, x.shape[1], x.shape[2] + 2 * ph, x.shape[3] + 2 * pw))
    for kh, kw in itertools.product(range(kh_size), range(kw_size)):
        window = gpad[:, :, kh * dh:kh * dh + reach_h, kw * dw:kw * dw + reach_w]
        dxpad[:, :, :reach_h, :reach_w] += np.einsum("nohw,oc->nchw", window,
                                                     flipped[:, :, kh, kw])
    xpad = np.pad(x, ((0, 0), (0, 0), (ph, ph), (pw, pw)))
    dweight = np.zeros_like(weight)
    for kh, kw in itertools.product(range(kh_size), range(kw_size)):
        for i, j in itertools.product(range(h_out), range(w_out)):
            dweight[:, :, kh, kw] += grad[:, :, i, j].T @ xpad[:, :, i * sh + kh * dh,
                                                               j * sw + kw * dw]
    dx = dxpad[:, :, ph:ph + x.shape[2], pw:pw + x.shape[3]]
    return dx, dweight, grad.sum(axis=(0, 2, 3))


def _window_winners(cache):
    """For each window: (n, c, row, col) of its first maximum, by np.argmax, in x's plane."""
    x, out, (kh_size, kw_size), (sh, sw), (ph, pw), (dh, dw) = cache
    for n, c, i, j in itertools.product(*(range(s) for s in out.shape)):
        values, places = [], []
        for kh, kw in itertools.product(range(kh_size), range(kw_size)):
            r, q = i * sh + kh * dh - ph, j * sw + kw * dw - pw
            if 0 <= r < x.shape[2] and 0 <= q < x.shape[3]:
                values.append(x[n, c, r, q])
                places.append((n, c, r, q))
        yield (n, c, i, j), places[int(np.argmax(values))]


def max_pool2d_backward_window_by_window(grad, cache):
    dx = np.zeros_like(cache[0])
    for where, winner in _window_winners(cache):
        np.add.at(dx, winner, grad[where])
    return dx


def max_pool2d_backward_fancy_assign(grad, cache):
    """The classic slip: dx[idx] = g keeps one of two windows that share a winner."""
    dx = np.zeros_like(cache[0])
    pairs = list(_window_winners(cache))
    idx = tuple(np.array([w[k] for _, w in pairs]) for k in range(4))
    dx[idx] = np.array([grad[where] for where, _ in pairs])
    return dx


def _judged(name, **functions):
    exercise = find_exercise(name)
    module = load_file(SOLUTIONS_DIR / exercise.filename)
    for attr, fn in functions.items():
        setattr(module, attr, fn)
    return check_module(exercise, module)


def test_other_right_answers_pass():
    result = _judged("conv2d", conv2d_backward=conv2d_backward_by_full_correlation)
    assert result.passed, result.text
    result = _judged("max_pool", max_pool2d_backward=max_pool2d_backward_window_by_window)
    assert result.passed, result.text


def test_a_fancy_index_assignment_is_named():
    result = _judged("max_pool", max_pool2d_backward=max_pool2d_backward_fancy_assign)
    assert not result.passed
    assert result.parts[0].diagnosis.kind == "overlap_overwrite", result.text
    assert "np.add.at" in result.text


def test_a_stub_that_is_not_written_says_so():
    for name in ("conv2d", "max_pool"):
        result = check_module(name, load_file(
            SOLUTIONS_DIR.parent / "stubs" / find_exercise(name).filename))
        assert not result.passed and "NotImplementedError" in result.text
