"""The engine: topological order, accumulation, freeing, grad modes, anomaly detection."""
import numpy as np
import pytest

import tinyattn as ta
from tinyattn import Function


def test_chain_of_10000_ops_needs_no_recursion():
    x = ta.tensor([1.0], dtype="float64", requires_grad=True)
    y = x
    for _ in range(10_000):
        y = y * 1.0001
    y.sum().backward()
    np.testing.assert_allclose(x.grad, [1.0001 ** 10_000], rtol=1e-9)


def test_a_tensor_used_twice_accumulates_both_paths():
    x = ta.tensor([2.0, 3.0], dtype="float64", requires_grad=True)
    y = x * x + x.exp() * x        # d/dx = 2x + e^x (1 + x)
    y.sum().backward()
    xs = np.array([2.0, 3.0])
    np.testing.assert_allclose(x.grad, 2 * xs + np.exp(xs) * (1 + xs))


def test_diamond_graph_gets_each_path_once():
    x = ta.tensor(1.5, dtype="float64", requires_grad=True)
    a = x * 2.0
    out = a * a + a               # d/dx = (2a + 1) * 2
    out.backward()
    assert x.grad == pytest.approx((2 * 3.0 + 1) * 2)


def test_grads_accumulate_across_backward_calls_until_zeroed():
    x = ta.tensor([1.0], requires_grad=True)
    (x * 3.0).sum().backward()
    (x * 3.0).sum().backward()
    np.testing.assert_allclose(x.grad, [6.0])
    x.zero_grad()
    assert x.grad is None


def test_two_leaves_never_share_a_gradient_array():
    a = ta.tensor([1.0, 2.0], requires_grad=True)
    b = ta.tensor([3.0, 4.0], requires_grad=True)
    (a + b).sum().backward()
    a.grad *= 10                  # in-place, as gradient clipping does
    np.testing.assert_allclose(b.grad, [1.0, 1.0])


def test_second_backward_through_freed_graph_raises_clearly():
    x = ta.tensor([1.0, 2.0], requires_grad=True)
    y = (x * x).sum()
    y.backward()
    with pytest.raises(RuntimeError, match="second time.*retain_graph=True"):
        y.backward()


def test_retain_graph_allows_a_second_backward():
    x = ta.tensor([1.0, 2.0], requires_grad=True)
    y = (x * x).sum()
    y.backward(retain_graph=True)
    y.backward()
    np.testing.assert_allclose(x.grad, [4.0, 8.0])


def test_saved_arrays_are_freed_after_backward():
    x = ta.tensor([1.0, 2.0], requires_grad=True)
    y = x.exp()
    fn = y._ctx
    y.sum().backward()
    assert fn.saved is None


def test_no_grad_records_nothing():
    x = ta.tensor([1.0], requires_grad=True)
    with ta.no_grad():
        y = x * 2.0
    assert not y.requires_grad and y._ctx is None
    assert ta.is_grad_enabled()


class Recorder(Function):
    computed = []

    def forward(self, a, b):
        return a * b

    def backward(self, grad):
        Recorder.computed.append(self.needs_input_grad)
        return (grad if self.needs_input_grad[0] else None,
                grad if self.needs_input_grad[1] else None)


def test_needs_input_grad_tells_backward_what_to_skip():
    Recorder.computed.clear()
    a = ta.tensor([1.0], requires_grad=True)
    b = ta.tensor([2.0])
    Recorder.apply(a, b).sum().backward()
    assert Recorder.computed == [(True, False)]
    assert b.grad is None


def test_backward_on_non_scalar_without_grad_says_what_to_do():
    x = ta.tensor([1.0, 2.0], requires_grad=True)
    with pytest.raises(RuntimeError, match=r"shape \(2,\).*\.sum\(\)"):
        (x * 2.0).backward()


def test_backward_with_explicit_gradient():
    x = ta.tensor([1.0, 2.0], requires_grad=True)
    (x * 3.0).backward(np.array([1.0, 10.0], dtype=np.float32))
    np.testing.assert_allclose(x.grad, [3.0, 30.0])


def test_requires_grad_on_integer_tensor_is_refused():
    with pytest.raises(TypeError, match="floating-point.*float"):
        ta.tensor([1, 2, 3], requires_grad=True)


def test_detach_cuts_the_graph():
    x = ta.tensor([1.0], requires_grad=True)
    y = (x * 2.0).detach()
    assert not y.requires_grad
    assert x.grad is None


def test_retain_grad_keeps_intermediate_gradients():
    x = ta.tensor([1.0, 2.0], requires_grad=True)
    h = (x * 2.0).retain_grad()
    (h * h).sum().backward()
    np.testing.assert_allclose(h.grad, [4.0, 8.0])


def test_detect_anomaly_names_the_op_and_user_line():
    x = ta.tensor([-1.0, 1.0], requires_grad=True)
    with ta.detect_anomaly():
        with pytest.raises(FloatingPointError, match=r"forward of Log.*test_autograd.py:\d+"):
            with np.errstate(invalid="ignore"):
                x.log()


def test_detect_anomaly_catches_backward_nan():
    x = ta.tensor([0.0, 1.0], requires_grad=True)
    with ta.detect_anomaly():
        y = (x.sqrt() * 0.0).sum()  # forward finite; d sqrt / dx = inf at 0, times 0 -> NaN
        with pytest.raises(FloatingPointError, match="backward of Sqrt"):
            with np.errstate(divide="ignore", invalid="ignore"):
                y.backward()


def test_float32_graph_stays_float32_end_to_end():
    x = ta.randn(4, 8, requires_grad=True)
    w = ta.randn(16, 8, requires_grad=True)
    y = ta.functional.linear(x, w).tanh() * 0.5 + 2 - x.sum() / 3
    loss = (y ** 2).mean() + ta.functional.gelu(y).softmax(-1).sum()
    assert loss.dtype == np.float32
    loss.backward()
    assert x.grad.dtype == np.float32 and w.grad.dtype == np.float32


def test_numpy_float64_scalar_does_not_upcast():
    x = ta.randn(3, requires_grad=True)
    y = x * np.float64(2.0) + np.float64(1.0)
    assert y.dtype == np.float32


def test_mixing_float_dtypes_is_refused_clearly_in_strict_mode():
    a = ta.randn(3)
    b = ta.randn(3, dtype="float64")
    with ta.strict_promotion(), pytest.raises(TypeError, match="float32 and float64.*double"):
        a + b
    assert (a + b).dtype == np.float64                     # torch's promotion otherwise


def test_manual_seed_reproduces_random_tensors():
    ta.manual_seed(123)
    a = ta.randn(5)
    ta.manual_seed(123)
    b = ta.randn(5)
    np.testing.assert_array_equal(a.numpy(), b.numpy())


def test_rng_state_round_trip():
    ta.manual_seed(7)
    ta.randn(3)
    state = ta.get_rng_state()
    a = ta.randn(4)
    ta.set_rng_state(state)
    np.testing.assert_array_equal(a.numpy(), ta.randn(4).numpy())


def test_integer_operands_never_upcast_float32():
    x = ta.randn(4, requires_grad=True)
    assert (ta.arange(4) * x).dtype == np.float32
    assert (x + ta.tensor([1, 2, 3, 4])).dtype == np.float32
    assert (ta.tensor([1, 2]) * 0.5).dtype == np.float32
    assert (ta.tensor([7]) / 2).dtype == np.float32
    assert (ta.tensor([1, 2]) * 2).dtype == np.int64
    (ta.arange(4) * x).sum().backward()
    assert x.grad.dtype == np.float32
