"""The checker itself: it must fail on wrong backwards and say where (negative controls)."""
import numpy as np
import pytest

import tinyattn as ta
from tinyattn import Function


class ScaledWrong(Function):
    """x * y with a backward for y that is off by a factor of 2 at one element."""

    def forward(self, x, y):
        self.save_for_backward(x, y)
        return x * y

    def backward(self, grad):
        x, y = self.saved
        dy = grad * x
        dy = dy.copy()
        dy[1, 2] *= 2.0
        return grad * y, dy


class TransposedWrong(Function):
    """a @ b whose da forgets a transpose (only right for square symmetric b)."""

    def forward(self, a, b):
        self.save_for_backward(a, b)
        return a @ b

    def backward(self, grad):
        a, b = self.saved
        return grad @ b, a.T @ grad


def _pair(shape_x=(3, 4), shape_y=(3, 4), seed=0):
    rng = np.random.default_rng(seed)
    return (ta.tensor(rng.standard_normal(shape_x), dtype="float64", requires_grad=True),
            ta.tensor(rng.standard_normal(shape_y), dtype="float64", requires_grad=True))


def test_correct_backward_passes():
    x, y = _pair()
    assert ta.gradcheck(lambda a, b: a * b, [x, y])
    assert ta.gradcheck(lambda a, b: a * b, [x, y], fast=True)


def test_wrong_backward_fails_and_names_input_and_element():
    x, y = _pair()
    report = ta.gradcheck_report(ScaledWrong.apply, [x, y])
    assert not report.passed
    first, second = report.inputs
    assert first.passed and not second.passed
    assert second.index == 1
    assert second.worst_input_index == (1, 2)
    assert second.worst_output_index == (1, 2)
    assert second.num_failing == 1
    assert second.worst_analytic == pytest.approx(2 * second.worst_numeric, rel=1e-6)
    with pytest.raises(ta.GradcheckError, match=r"input 1 \(3, 4\).*input\[1, 2\]"):
        ta.gradcheck(ScaledWrong.apply, [x, y])
    assert ta.gradcheck(ScaledWrong.apply, [x, y], raise_exception=False) is False


class ScaledWrongWithNoise(ScaledWrong):
    """ScaledWrong plus 1e-7 on every dy entry: the off-diagonal entries, whose true value
    (and central difference) is 0, get a huge relative error although they pass atol."""

    def backward(self, grad):
        dx, dy = super().backward(grad)
        return dx, dy + 1e-7


def test_worst_element_reports_its_own_errors_not_the_maxima():
    x, y = _pair()
    second = ta.gradcheck_report(ScaledWrongWithNoise.apply, [x, y]).inputs[1]
    assert second.worst_input_index == (1, 2) and second.worst_output_index == (1, 2)
    own_abs = abs(second.worst_analytic - second.worst_numeric)
    assert second.worst_abs_error == pytest.approx(own_abs)
    assert second.worst_rel_error == pytest.approx(own_abs / abs(second.worst_numeric))
    assert second.worst_rel_error == pytest.approx(1.0, rel=1e-6)     # analytic = 2 numeric
    # negative control: the maximum over all entries is another entry's (1e-7 / 1e-12)
    assert second.max_rel_error > 1e4 * second.worst_rel_error
    text = second.describe()
    assert f"(abs error {own_abs:.2e}, rel error 1.00e+00)" in text
    assert f"max rel error {second.max_rel_error:.2e}" in text


def test_fast_mode_also_catches_the_wrong_backward():
    x, y = _pair()
    report = ta.gradcheck_report(ScaledWrong.apply, [x, y], fast=True)
    assert report.inputs[0].passed and not report.inputs[1].passed


def test_missing_transpose_is_caught():
    a, b = _pair((3, 4), (4, 4))  # square b: the wrong shape goes unnoticed, the values not
    report = ta.gradcheck_report(TransposedWrong.apply, [a, b])
    assert not report.passed


def test_float32_inputs_are_refused_with_an_explanation():
    x = ta.randn(3, requires_grad=True)
    with pytest.raises(TypeError, match="float64.*round-off"):
        ta.gradcheck(lambda t: t * 2.0, [x])


def test_no_checked_input_is_an_error():
    x = ta.tensor([1.0, 2.0], dtype="float64")
    with pytest.raises(ValueError, match="requires_grad"):
        ta.gradcheck(lambda t: t * 2.0, [x])


def test_input_without_requires_grad_must_not_receive_a_gradient():
    x, y = _pair()
    y.requires_grad = False

    def leaky(a, b):
        b.grad = ta.tensor(np.ones(b.shape))  # a planted leak: a gradient on a non-differentiable input
        return a * b

    report = ta.gradcheck_report(leaky, [x, y])
    assert report.unexpected_grads == [1]
    assert not report.passed
    assert "requires_grad=False but received a gradient" in str(report)


def test_gradcheck_leaves_inputs_unchanged():
    x, y = _pair()
    before = x.numpy().copy()
    ta.gradcheck(lambda a, b: (a * b).exp(), [x, y])
    np.testing.assert_array_equal(x.numpy(), before)
    assert x.grad is None


def test_noncontiguous_input_is_perturbed_correctly():
    rng = np.random.default_rng(1)
    base = rng.standard_normal((4, 3))
    x = ta.from_numpy(base.T).requires_grad_()  # a transposed, non-contiguous view
    assert ta.gradcheck(lambda t: (t * t).sum(dim=0), [x])


def test_zero_dim_input_keeps_its_shape():
    s = ta.tensor(0.7, dtype="float64", requires_grad=True)
    x = ta.tensor([1.0, 2.0], dtype="float64", requires_grad=True)
    assert ta.gradcheck(lambda s, x: (x * s).exp(), [s, x])
    assert s.shape == ()


def test_negative_control_a_nan_forward_never_passes():
    x = ta.tensor([-1.0, -2.0], dtype="float64", requires_grad=True)   # log of negatives
    with np.errstate(all="ignore"):
        report = ta.gradcheck_report(lambda a: a.log(), [x])
    assert not report.passed


def test_input_that_gets_no_gradient_is_reported_not_crashed_on():
    a, b = _pair()
    assert ta.gradcheck(lambda p, q: p * 2.0, [a, b])              # f ignores q: zero is right
    a, b = _pair()
    report = ta.gradcheck_report(lambda p, q: p * q.detach(), [a, b])  # f uses q, no gradient
    assert report.inputs[0].passed and not report.inputs[1].passed
    assert ta.gradcheck_report(lambda p, q: p * 2.0, [a, b], fast=True).passed
