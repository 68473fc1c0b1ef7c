"""What an outside probe of PyTorch tutorial programs (makemore, backprop ninja, the
autograd and nn tutorials, nanoGPT) found: each case once silently differed from torch or
raised a raw TypeError. Values are checked by hand; torch, where present, must agree."""
import numpy as np
import pytest

import tinyattn as ta
import tinyattn.functional as F

INF = float("inf")


def _torch():
    return pytest.importorskip("torch")


# -------------------------------------------------- masked backwards select, never multiply
@pytest.mark.parametrize("name, expected", [
    ("relu", [0.0, 0.0, 1.0, 1.0]),
    ("clamp_min", [0.0, INF, 1.0, 1.0]),            # at the bound the gradient passes
    ("clamp_both", [0.0, INF, 1.0, 0.0]),
    ("hardtanh", [0.0, 0.0, 1.0, 0.0]),
])
def test_an_infinite_incoming_gradient_gives_zero_where_the_op_is_flat(name, expected):
    """inf * 0 is NaN: a backward that multiplies by its mask leaks it into every sum
    downstream (sqrt(relu(x)) at 0 is the usual source); selecting gives 0, as torch."""
    ops = {"relu": ta.relu, "clamp_min": lambda x: x.clamp(min=0),
           "clamp_both": lambda x: x.clamp(0, 2), "hardtanh": lambda x: F.hardtanh(x, 0, 2)}
    x = ta.tensor([-1.0, 0.0, 1.0, 4.0], requires_grad=True)
    ops[name](x).backward(ta.tensor([INF, INF, 1.0, 1.0]))
    np.testing.assert_array_equal(x.grad.numpy(), expected)


def test_sqrt_of_relu_has_a_finite_gradient_like_torch():
    x = ta.tensor([-1.0, 0.0, 1.0, 4.0], requires_grad=True)
    with np.errstate(divide="ignore"):
        ta.sqrt(ta.relu(x)).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [0.0, 0.0, 0.5, 0.25])


# -------------------------------------------------- dtypes
def test_clamp_keeps_an_integer_tensors_dtype_with_whole_bounds():
    a = ta.tensor([-3, 5])
    assert a.clamp(min=0).dtype == ta.int64 and a.clamp(min=0).tolist() == [0, 5]
    assert ta.clamp(a, 0, 2).dtype == ta.int64 and a.int().clamp(0, 2).dtype == ta.int32
    assert a.clamp(max=0.5).dtype == ta.float32            # a fractional bound: float32
    b = a.clone()
    b.clamp_(0, 2)
    assert b.tolist() == [0, 2] and b.dtype == ta.int64
    logits = ta.zeros(2, 6)
    F.cross_entropy(logits, a.clamp(min=0))                # integer targets stay integers


def test_joining_integers_with_one_float_dtype_takes_that_dtype():
    assert ta.cat([ta.tensor([1, 2]), ta.tensor([0.5])]).dtype == ta.float32
    assert ta.stack([ta.tensor([1, 2]), ta.tensor([0.5, 1.5])]).dtype == ta.float32
    x = ta.tensor([1.0], dtype="float64", requires_grad=True)
    joined = ta.cat([ta.tensor([True, False]), x])
    assert joined.dtype == ta.float64
    joined.sum().backward()
    assert x.grad.tolist() == [1.0]
    assert ta.cat([ta.tensor([1], dtype="int32"), ta.tensor([2])]).dtype == ta.int64
    # two floats promote as torch's (float16 with float32: float32), the integers with them
    assert ta.cat([ta.tensor([1.0], dtype="float16"), ta.tensor([2.0])]).dtype == ta.float32
    assert ta.cat([ta.tensor([1]), ta.tensor([1.0], dtype="bfloat16"),
                   ta.tensor([2.0], dtype="float16")]).dtype == ta.float32
    with ta.strict_promotion(), pytest.raises(TypeError, match="mix floating dtypes"):
        ta.cat([ta.tensor([1.0], dtype="float16"), ta.tensor([2.0])])


# -------------------------------------------------- operators and names tutorials use
def test_floor_division_remainder_and_abs_operators():
    x = ta.tensor([7, -7])
    assert (x // 2).tolist() == [3, -4] and (x // 2).dtype == ta.int64
    assert (x % 3).tolist() == [1, 2] and (-7 % x).tolist() == [0, 0]
    assert (10 // x).tolist() == [1, -2]
    assert ta.fmod(x, 3).tolist() == [1, -1]
    assert (ta.tensor([7.0, -7.0]) % 3).tolist() == [1.0, 2.0]
    assert (x // ta.tensor(2.0)).dtype == ta.float32
    assert abs(ta.tensor([-2.0, 3.0])).tolist() == [2.0, 3.0]
    with pytest.raises(ZeroDivisionError, match="integer division by zero"):
        x // 0
    with pytest.raises(RuntimeError):                    # PyTorch raises a RuntimeError
        x % ta.tensor([1, 0])


def test_remainder_and_fmod_gradients_are_one_and_minus_the_whole_quotient():
    a = ta.tensor([7.0, -7.0, 5.5], requires_grad=True)
    b = ta.tensor([2.0, 2.0, -1.5], requires_grad=True)
    (a % b).sum().backward()
    assert a.grad.tolist() == [1.0, 1.0, 1.0] and b.grad.tolist() == [-3.0, 4.0, 4.0]
    a.grad = b.grad = None
    ta.fmod(a, b).sum().backward()
    assert b.grad.tolist() == [-3.0, 3.0, 3.0]
    a.grad = b.grad = None
    (a // b).sum().backward()                            # a step function: zero gradient
    assert a.grad.tolist() == [0.0] * 3 and b.grad.tolist() == [0.0] * 3


def test_log2_log10_nelement_and_keepdims():
    x = ta.tensor([1.0, 8.0, 100.0], requires_grad=True)
    np.testing.assert_allclose(x.log2().numpy(), np.log2([1.0, 8.0, 100.0]), rtol=1e-6)
    ta.log10(x).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), 1 / (np.array([1.0, 8.0, 100.0]) * np.log(10)),
                               rtol=1e-6)
    assert ta.log10(ta.tensor([100])).dtype == ta.float32
    assert ta.ones(2, 3).nelement() == 6
    p = ta.ones(2, 3)
    assert p.sum(1, keepdims=True).shape == (2, 1) == ta.mean(p, 1, keepdims=True).shape
    assert p.max(1, keepdims=True).values.shape == (2, 1) == p.std(1, keepdims=True).shape
    with pytest.raises(TypeError, match="both keepdims= and keepdim="):   # one name only
        p.sum(1, keepdim=True, keepdims=True)


def test_the_same_cases_in_torch():
    torch = _torch()
    x = torch.tensor([-1.0, 0.0, 1.0, 4.0], requires_grad=True)
    torch.relu(x).backward(torch.tensor([INF, INF, 1.0, 1.0]))
    assert x.grad.tolist() == [0.0, 0.0, 1.0, 1.0]
    a = torch.tensor([-3, 5])
    assert a.clamp(min=0).dtype == torch.int64
    assert torch.cat([torch.tensor([1, 2]), torch.tensor([0.5])]).dtype == torch.float32
    assert (torch.tensor([7, -7]) // 2).tolist() == [3, -4]
    assert (torch.tensor([7, -7]) % 3).tolist() == [1, 2]
    p, q = torch.tensor([7.0, -7.0, 5.5], requires_grad=True), torch.tensor([2.0, 2.0, -1.5])
    q.requires_grad_()
    (p % q).sum().backward()
    assert q.grad.tolist() == [-3.0, 4.0, 4.0]
    with pytest.raises(RuntimeError):
        torch.tensor([7, -7]) // 0
    assert torch.ones(2, 3).sum(1, keepdims=True).shape == (2, 1)
