"""Edge rules of the pointwise, rounding and normalisation ops: in-place augmented operators,
far-tail gradients, integer, bool and 0-d inputs, and the refusals torch makes; each case was
once a silent wrong result or a silent acceptance. torch, when present, agrees."""
import numpy as np
import pytest

import tinyattn as ta
import tinyattn.functional as F


def test_augmented_modulo_floor_division_and_power_are_in_place():
    x = ta.tensor([5, -5, 7])
    alias = x
    x %= 3
    assert x is alias and alias.tolist() == [2, 1, 1]
    y = ta.tensor([5.0, -5.0, 7.0])
    alias = y
    y //= 2
    y **= 2
    assert y is alias and alias.tolist() == [4.0, 9.0, 9.0]
    p = ta.tensor([1.5], requires_grad=True)
    with pytest.raises(RuntimeError, match="remainder_: a leaf tensor that requires grad"):
        p %= 1.0                         # rebinding used to let this through


@pytest.mark.parametrize("dtype, x", [("float32", [-15.0, -17.0, -20.0]),
                                      ("float64", [-30.0, -40.0])])
def test_elu_gradient_keeps_its_digits_far_left(dtype, x):
    """alpha e^x, not out + alpha (which cancels to 0 there)."""
    t = ta.tensor(x, dtype=dtype, requires_grad=True)
    F.elu(t, alpha=1.5).sum().backward()
    np.testing.assert_allclose(t.grad.numpy(), 1.5 * np.exp(np.array(x)), rtol=1e-6)


def test_integer_and_bool_inputs_follow_torch():
    with pytest.raises(TypeError, match="both operands are bool"):
        ta.tensor([True]) % ta.tensor([True])
    assert (ta.tensor([True]) % 2).tolist() == [1]
    out = F.hardtanh(ta.tensor([-3, 0, 3]))
    assert out.dtype == ta.int64 and out.tolist() == [-1, 0, 1]
    with pytest.raises(NotImplementedError, match="lerp_kernel_scalar"):   # as torch
        ta.lerp(ta.tensor([1, 2]), ta.tensor([3, 4]), 0.5)


def test_zero_d_inputs_follow_torch():
    x = ta.tensor(2.0, requires_grad=True)
    picked = ta.index_select(x, 0, ta.tensor([0]))
    assert picked.shape == ()
    picked.backward()
    assert x.grad.item() == 1.0
    with pytest.raises(IndexError, match="exactly one entry"):
        ta.index_select(x, 0, ta.tensor([0, 0]))
    values, inverse = ta.unique(ta.tensor(5), return_inverse=True)
    assert values.shape == (1,) and inverse.shape == ()
    assert values[inverse].item() == 5
    with pytest.raises(RuntimeError, match="zero-dimensional"):     # torch's RuntimeError
        ta.cat([ta.tensor(1.0), ta.tensor(2.0)])


def test_batch_norm_needs_both_running_statistics_or_neither():
    x = ta.randn(4, 3)
    with pytest.raises(ValueError, match="both be None .*got only running_mean"):
        F.batch_norm(x, ta.zeros(3), None, training=True)


def test_clamp_with_a_nan_bound_is_nan_as_torch():
    # torch 2.13 does not refuse a NaN bound: every element is NaN (tests/test_probe41_ops.py)
    out = ta.ones(3).clamp(min=2.0, max=float("nan"))
    assert out.dtype == ta.float32 and bool(out.isnan().all())


def test_the_same_cases_in_torch():
    torch = pytest.importorskip("torch")
    x = torch.tensor([5, -5, 7])
    alias = x
    x %= 3
    assert x is alias and alias.tolist() == [2, 1, 1]
    assert torch.nn.functional.hardtanh(torch.tensor([-3, 0, 3])).dtype == torch.int64
    assert torch.index_select(torch.tensor(2.0), 0, torch.tensor([0])).shape == ()
    assert torch.unique(torch.tensor(5), return_inverse=True)[1].shape == ()
    t = torch.tensor([-17.0], requires_grad=True)
    torch.nn.functional.elu(t, alpha=1.5).sum().backward()
    np.testing.assert_allclose(t.grad.numpy(), 1.5 * np.exp([-17.0]), rtol=1e-5)
    with pytest.raises((RuntimeError, ValueError)):
        torch.nn.functional.batch_norm(torch.randn(4, 3), torch.zeros(3), None, training=True)
