"""Issue 30's first half of the new ops, at the places torch's OpInfo samples do not reach:
half-precision steps and roundings, out-of-range shifts, tie gradients, a wide-range
logcumsumexp, and the Tensor operators on integers. torch is the oracle (skipped without it);
each check has a negative control showing it can fail."""
import numpy as np
import pytest

import tinyattn as ta

torch = pytest.importorskip("torch", reason="torch is the oracle for these values")


def _ours(values, dtype):
    return ta.tensor(np.asarray(values, dtype=np.float32)).to(dtype)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_nextafter_steps_one_unit_of_the_half_dtype(dtype):
    a = [0.0, 1.0, -1.0, 3.5, -0.0, 2.0, 1e-3]
    b = [1.0, 2.0, 0.0, -5.0, -1.0, 2.0, -1.0]
    want = torch.nextafter(torch.tensor(a).to(getattr(torch, dtype)),
                           torch.tensor(b).to(getattr(torch, dtype))).float().numpy()
    got = ta.nextafter(_ours(a, dtype), _ours(b, dtype)).float().numpy()
    np.testing.assert_array_equal(got, want)
    # negative control: a float32 step rounds back to the input in half precision
    assert not np.array_equal(np.asarray(a, np.float32), want)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("eps", [None, 0.2])
def test_logit_rounds_as_torch_in_half_precision(dtype, eps):
    x = torch.rand(2000, generator=torch.Generator().manual_seed(0)) * 1.2 - 0.1
    x = x.to(getattr(torch, dtype))
    want = torch.logit(x, eps).float().numpy()
    got = ta.logit(ta.tensor(x.float().numpy()).to(dtype), eps).float().numpy()
    np.testing.assert_array_equal(got, want)
    once = torch.logit(x.float(), eps).to(getattr(torch, dtype)).float().numpy()
    assert not np.array_equal(once, want, equal_nan=True)   # rounding once would differ


@pytest.mark.parametrize("dtype", [np.int8, np.int32, np.int64, np.uint8])
def test_shifts_by_the_width_or_more_or_negative_follow_torch(dtype):
    a = np.array([1, -3, 5, 7, -1, 100]).astype(dtype)          # uint8 wraps, as torch's
    b = np.array([0, 1, 8, 9, 70, -1]).astype(dtype)
    for ours, theirs in ((ta.bitwise_left_shift, torch.bitwise_left_shift),
                         (ta.bitwise_right_shift, torch.bitwise_right_shift)):
        got = ours(ta.tensor(a), ta.tensor(b)).numpy()
        want = theirs(torch.tensor(a), torch.tensor(b)).numpy()
        np.testing.assert_array_equal(got, want)
    assert (ta.tensor(a) << ta.tensor(b)).dtype == np.dtype(dtype)


def test_integer_operators_are_bitwise_as_in_torch():
    a, b = np.array([6, 3, -2]), np.array([3, 5, 7])
    x, y = ta.tensor(a), ta.tensor(b)
    for got, want in (((x & y), a & b), ((x | y), a | b), ((x ^ y), a ^ b), ((~x), ~a),
                      ((3 & x), 3 & a), ((x >> 1), a >> 1)):
        np.testing.assert_array_equal(got.numpy(), want)
    with pytest.raises(RuntimeError, match="not implemented for 'float32'"):
        ta.tensor([1.0]) & ta.tensor([1.0])


def test_clamp_min_with_a_tensor_bound_sends_ties_to_the_input():
    x = torch.tensor([1.0, 0.0, -2.0, float("nan")], requires_grad=True)
    m = torch.tensor([1.0, 0.5, 0.0, 0.0], requires_grad=True)
    torch.clamp_min(x, m).sum().backward()
    tx = ta.tensor([1.0, 0.0, -2.0, np.nan], requires_grad=True)
    tm = ta.tensor([1.0, 0.5, 0.0, 0.0], requires_grad=True)
    out = ta.clamp_min(tx, tm)
    np.testing.assert_array_equal(out.detach().numpy(), torch.clamp_min(x, m).detach().numpy())
    out.sum().backward()
    np.testing.assert_array_equal(tx.grad.numpy(), x.grad.numpy())
    np.testing.assert_array_equal(tm.grad.numpy(), m.grad.numpy())
    assert tx.grad.numpy()[0] == 1 and tm.grad.numpy()[0] == 0     # the tie goes to x


def test_logcumsumexp_gradient_stays_finite_over_a_wide_range():
    values = np.array([[-800.0, 0.0, 700.0, -3.0, 690.0]])
    g = np.array([[1.0, -2.0, 0.5, 3.0, -1.0]])
    x = torch.tensor(values, requires_grad=True)
    torch.logcumsumexp(x, 1).backward(torch.tensor(g))
    t = ta.tensor(values, requires_grad=True)
    ta.logcumsumexp(t, 1).backward(ta.tensor(g))
    assert np.isfinite(t.grad.numpy()).all()
    np.testing.assert_allclose(t.grad.numpy(), x.grad.numpy(), rtol=1e-10, atol=1e-300)
    # negative control: the direct formula e^x * sum(g e^-out) overflows here
    with np.errstate(over="ignore", invalid="ignore"):
        out = np.logaddexp.accumulate(values, axis=1)
        direct = np.exp(values) * np.cumsum((g * np.exp(-out))[:, ::-1], axis=1)[:, ::-1]
    assert not np.isfinite(direct).all()


def test_cummax_index_is_the_latest_tie_and_nan_wins():
    values = np.array([1.0, 3.0, 3.0, 2.0, np.nan, 5.0])
    want = torch.cummax(torch.tensor(values), 0)
    got = ta.cummax(ta.tensor(values), 0)
    np.testing.assert_array_equal(got.indices.numpy(), want.indices.numpy())
    np.testing.assert_array_equal(got.values.numpy(), want.values.numpy())
    assert got.indices.numpy()[2] == 2                  # not 1: the latest equal value
