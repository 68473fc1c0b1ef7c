"""F.ctc_loss / nn.CTCLoss against torch: values and float64 gradients for every reduction,
padded and concatenated targets, unequal input and target lengths, a blank other than 0,
repeated labels, unbatched inputs, zero_infinity on an impossible alignment; torch's errors.
A brute-force sum over every path checks the value independently (negative control: a
collapse rule that does not merge repeated steps gives another number)."""
import itertools

import numpy as np
import pytest

import tinyattn as ta
import tinyattn.functional as F
from tinyattn import nn

torch = pytest.importorskip("torch", reason="torch is the reference for these tests")
TF = torch.nn.functional
TOL = dict(rtol=1e-10, atol=1e-12)


def _log_probs(shape, seed=0):
    logits = np.random.default_rng(seed).standard_normal(shape)
    return logits - np.log(np.exp(logits).sum(-1, keepdims=True))


def _both(log_probs, targets, input_lengths, target_lengths, **kwargs):
    results = []
    for lib, functional in ((torch, TF), (ta, F)):
        lp = lib.tensor(log_probs, requires_grad=True)
        out = functional.ctc_loss(lp, lib.tensor(targets), input_lengths, target_lengths,
                                  **kwargs)
        g = np.random.default_rng(1).standard_normal(tuple(out.shape))
        out.backward(lib.tensor(g))
        results.append((out.detach().numpy(), lp.grad.numpy()))
    return results


@pytest.mark.parametrize("kwargs", [dict(), dict(reduction="sum"), dict(reduction="none"),
                                    dict(blank=3), dict(zero_infinity=True)], ids=str)
def test_padded_targets_match_torch(kwargs):
    rng = np.random.default_rng(2)
    blank = kwargs.get("blank", 0)
    targets = rng.integers(1, 5, (3, 4))
    targets[targets == blank] = 1
    targets[0, 1] = targets[0, 0]                                  # a repeated label
    (want, want_grad), (got, got_grad) = _both(_log_probs((9, 3, 5)), targets, [9, 7, 5],
                                               [4, 2, 3], **kwargs)
    np.testing.assert_allclose(got, want, **TOL)
    np.testing.assert_allclose(got_grad, want_grad, **TOL)


def test_concatenated_targets_tensor_lengths_and_unbatched_match_torch():
    lengths = np.array([2, 3])
    (want, want_grad), (got, got_grad) = _both(
        _log_probs((6, 2, 4)), np.array([1, 2, 3, 3, 1]), [6, 5], [2, 3])
    np.testing.assert_allclose(got, want, **TOL)
    np.testing.assert_allclose(got_grad, want_grad, **TOL)
    for lib, functional in ((torch, TF), (ta, F)):
        out = functional.ctc_loss(lib.tensor(_log_probs((6, 2, 4))),
                                  lib.tensor(np.array([[1, 2, 0], [3, 3, 1]])),
                                  lib.tensor(np.array([6, 5])), lib.tensor(lengths))
        assert out.ndim == 0
    (want, want_grad), (got, got_grad) = _both(_log_probs((6, 4)), np.array([1, 2]), [6],
                                               [2], reduction="none")
    assert got.shape == want.shape == ()
    np.testing.assert_allclose(got, want, **TOL)
    np.testing.assert_allclose(got_grad, want_grad, **TOL)


def test_impossible_alignment_is_inf_or_zero_with_zero_infinity():
    """Three labels, each repeated, need 6 steps; 3 steps cannot emit them."""
    args = (_log_probs((3, 1, 3)), np.array([[1, 1, 1]]), [3], [3])
    for zero_infinity in (False, True):
        (want, _), (got, got_grad) = _both(*args, reduction="none",
                                           zero_infinity=zero_infinity)
        np.testing.assert_array_equal(got, want)
        if zero_infinity:
            np.testing.assert_array_equal(got_grad, 0.0)
        else:
            assert np.isinf(got).all()


def _collapse(path, blank_between_repeats=True):
    if blank_between_repeats:
        merged = [c for i, c in enumerate(path) if i == 0 or c != path[i - 1]]
        return tuple(c for c in merged if c != 0)
    return tuple(c for c in path if c != 0)        # wrong: repeats are not merged


def _brute_force(log_probs, target, **kwargs):
    steps, classes = log_probs.shape
    total = sum(np.exp(sum(log_probs[t, c] for t, c in enumerate(path)))
                for path in itertools.product(range(classes), repeat=steps)
                if _collapse(path, **kwargs) == tuple(target))
    return -np.log(total)


def test_value_is_the_sum_over_every_path_and_a_wrong_collapse_is_caught():
    log_probs = _log_probs((5, 3), seed=4)
    got = F.ctc_loss(ta.tensor(log_probs), ta.tensor(np.array([2, 2])), 5, 2,
                     reduction="none").item()
    np.testing.assert_allclose(got, _brute_force(log_probs, [2, 2]), rtol=1e-12)
    assert not np.isclose(got, _brute_force(log_probs, [2, 2], blank_between_repeats=False))


@pytest.mark.parametrize("call", [
    lambda F_, lib: F_.ctc_loss(lib.zeros(5, 2, 4), lib.ones(2, 3, dtype=lib.int64), [6, 5],
                                [3, 3]),                                   # input length > T
    lambda F_, lib: F_.ctc_loss(lib.zeros(5, 2, 4), lib.ones(2, 2, dtype=lib.int64), [5, 5],
                                [3, 3]),                                   # targets too short
    lambda F_, lib: F_.ctc_loss(lib.zeros(5, 2, 4, dtype=lib.float16),
                                lib.ones(2, 2, dtype=lib.int64), [5, 5], [2, 2]),
], ids=["input_length", "target_width", "float16"])
def test_errors_as_torch(call):
    with pytest.raises(RuntimeError):
        call(TF, torch)
    with pytest.raises(RuntimeError):
        call(F, ta)


def test_module_as_torch():
    ours, theirs = nn.CTCLoss(blank=1, zero_infinity=True), torch.nn.CTCLoss(
        blank=1, zero_infinity=True)
    assert repr(ours) == repr(theirs)
    log_probs, targets = _log_probs((7, 2, 4)), np.array([[2, 3], [3, 3]])
    np.testing.assert_allclose(
        ours(ta.tensor(log_probs), ta.tensor(targets), [7, 6], [2, 2]).item(),
        theirs(torch.tensor(log_probs), torch.tensor(targets), [7, 6], [2, 2]).item(), **TOL)


def test_an_input_of_length_zero_gives_torchs_zero():
    log_probs = _log_probs((4, 2, 3))
    for target_lengths in ([2, 0], [0, 0]):
        (want, want_grad), (got, got_grad) = _both(log_probs, np.ones((2, 2), dtype=np.int64),
                                                   [4, 0], target_lengths, reduction="none")
        np.testing.assert_array_equal(got, want)
        np.testing.assert_allclose(got_grad, want_grad, **TOL)


def test_padding_beyond_the_target_length_is_never_read():
    targets = np.array([[1, 2, 99], [3, -5, 7]])       # 99, -5, 7: padding, not classes
    got = F.ctc_loss(ta.tensor(_log_probs((6, 2, 4))), ta.tensor(targets), [6, 5], [2, 1])
    want = TF.ctc_loss(torch.tensor(_log_probs((6, 2, 4))), torch.tensor(np.where(
        targets > 3, 0, np.abs(targets))), [6, 5], [2, 1])
    np.testing.assert_allclose(got.item(), want.item(), **TOL)
