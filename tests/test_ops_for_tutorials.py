"""The ops PyTorch's tutorials needed that tinyattn lacked, against PyTorch: sin, cos, powers
with a tensor exponent (values, gradients, dtypes and the edge points x = 0, p = 0 where the
formulas alone would give NaN), repeat_interleave, mm, equal and allclose. The op table
(test_op_table.py) gradchecks the differentiable ones in float64."""
import numpy as np
import pytest

import tinyattn as ta

torch = pytest.importorskip("torch", reason="compared with PyTorch")


def _both(values, dtype=np.float64, requires_grad=True):
    array = np.asarray(values, dtype=dtype)
    return (ta.tensor(array, requires_grad=requires_grad),
            torch.tensor(array, requires_grad=requires_grad))


@pytest.mark.parametrize("name", ["sin", "cos"])
def test_sin_cos_match_torch(name):
    x, tx = _both(np.random.default_rng(0).standard_normal((3, 4)) * 3)
    out, tout = getattr(ta, name)(x), getattr(torch, name)(tx)
    g = np.random.default_rng(1).standard_normal((3, 4))
    out.backward(ta.tensor(g))
    tout.backward(torch.tensor(g))
    np.testing.assert_allclose(out.detach().numpy(), tout.detach().numpy(), rtol=1e-14)
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-14)
    assert getattr(x, name)().shape == (3, 4)            # the Tensor method too


def test_sin_of_integers_is_float32_as_in_torch():
    assert ta.sin(ta.tensor([1, 2])).dtype == np.float32
    assert torch.sin(torch.tensor([1, 2])).dtype == torch.float32


@pytest.mark.parametrize("base,exponent", [
    ([[0.5], [1.5], [2.0], [0.0]], [1.0, 2.5, 0.0]),      # broadcast, x = 0, p = 0
    ([0.0, 0.0, 2.0], [0.0, 3.0, -1.0]),
    ([[-1.5], [2.0]], [2.0, 3.0]),                         # negative base, whole exponents
])
def test_tensor_exponent_matches_torch_with_edges(base, exponent):
    x, tx = _both(base)
    p, tp = _both(exponent)
    (out := x ** p).sum().backward()
    (tout := tx ** tp).sum().backward()
    np.testing.assert_allclose(out.detach().numpy(), tout.detach().numpy(), rtol=1e-14)
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-14, equal_nan=True)
    np.testing.assert_allclose(p.grad.numpy(), tp.grad.numpy(), rtol=1e-14, equal_nan=True)


def test_polynomial_features_keep_float32_as_in_torch():
    x = ta.linspace(-1.0, 1.0, 5) if hasattr(ta, "linspace") else ta.tensor(
        np.linspace(-1, 1, 5, dtype=np.float32))
    features = x.unsqueeze(-1).pow(ta.tensor([1, 2, 3]))
    expected = torch.linspace(-1.0, 1.0, 5).unsqueeze(-1).pow(torch.tensor([1, 2, 3]))
    assert features.dtype == np.float32 and features.shape == (5, 3)
    np.testing.assert_allclose(features.numpy(), expected.numpy(), rtol=1e-6)


def test_a_zero_d_exponent_that_requires_grad_gets_its_gradient():
    """It used to be read with .item(), which silently dropped its gradient."""
    x, tx = _both([0.5, 1.5, 2.5])
    p, tp = _both(2.5)
    (x ** p).sum().backward()
    (tx ** tp).sum().backward()
    assert p.grad is not None
    np.testing.assert_allclose(p.grad.numpy(), tp.grad.numpy(), rtol=1e-14)


def test_integer_powers_of_integers_stay_integers_and_refuse_negative_powers():
    out = ta.tensor([2, 3]) ** ta.tensor([3, 2])
    assert out.dtype == np.int64 and out.tolist() == [8, 9]
    # as torch: a negative exponent in an integer tensor gives 0 for |base| > 1; a negative
    # Python exponent is refused
    assert (ta.tensor([2, 3]) ** ta.tensor([1, -1])).tolist() == [2, 0]
    with pytest.raises(ValueError, match="negative integer powers"):
        ta.tensor([2, 3]) ** -1


def test_integer_base_takes_the_float_exponent_dtype():
    out = ta.tensor([2, 4]) ** ta.tensor([0.5, 0.5], dtype="float64")
    assert out.dtype == np.float64
    np.testing.assert_allclose(out.numpy(), [2 ** 0.5, 2.0])


def test_shapes_that_do_not_broadcast_are_a_clear_error():
    with pytest.raises(RuntimeError, match=r"pow: shapes \(3,\) and \(2,\) do not broadcast"):
        ta.ones(3) ** ta.ones(2)


def test_a_zero_d_constant_exponent_still_acts_as_a_number():
    x = ta.tensor([1.0, 2.0])                              # float32
    out = x ** ta.tensor(2.0, dtype="float64")             # 0-d, no grad: a number
    assert out.dtype == np.float32 and out.tolist() == [1.0, 4.0]


@pytest.mark.parametrize("shape,repeats,dim", [((2, 3, 4), 2, 1), ((2, 3, 4), 3, -1),
                                               ((2, 3), 2, None), ((3,), 0, 0), ((), 3, None)])
def test_repeat_interleave_matches_torch(shape, repeats, dim):
    x, tx = _both(np.random.default_rng(0).standard_normal(shape))
    out, tout = x.repeat_interleave(repeats, dim), tx.repeat_interleave(repeats, dim)
    g = np.random.default_rng(1).standard_normal(tout.shape)
    out.backward(ta.tensor(g))
    tout.backward(torch.tensor(g))
    assert out.shape == tuple(tout.shape)
    np.testing.assert_array_equal(out.detach().numpy(), tout.detach().numpy())
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-15)


def test_repeat_interleave_takes_per_slice_counts_and_refuses_bad_arguments():
    x = ta.tensor(np.arange(6.0).reshape(2, 3))
    np.testing.assert_array_equal(x.repeat_interleave(ta.tensor([1, 2]), dim=0).numpy(),
                                  np.repeat(x.numpy(), [1, 2], axis=0))
    with pytest.raises(RuntimeError, match="repeats must have the same size"):
        x.repeat_interleave(ta.tensor([1, 2, 3]), dim=0)
    with pytest.raises(ValueError, match="repeats must be an int >= 0"):
        x.repeat_interleave(-1, dim=0)
    with pytest.raises(IndexError, match="dim 2 is out of range"):
        x.repeat_interleave(2, dim=2)
    assert ta.repeat_interleave(x, ta.tensor(2), dim=0).shape == (4, 3)   # one-element count


def test_mm_matches_torch_and_refuses_non_matrices():
    a, ta_ = _both(np.random.default_rng(0).standard_normal((3, 4)))
    b, tb = _both(np.random.default_rng(1).standard_normal((4, 2)))
    a.mm(b).sum().backward()
    ta_.mm(tb).sum().backward()
    np.testing.assert_allclose(a.grad.numpy(), ta_.grad.numpy(), rtol=1e-14)
    np.testing.assert_allclose(b.grad.numpy(), tb.grad.numpy(), rtol=1e-14)
    with pytest.raises(RuntimeError, match="mm: mat2 must be a 2-D tensor"):
        ta.mm(ta.ones(2, 3), ta.ones(3))


@pytest.mark.parametrize("a,b", [([1.0, 2.0], [1.0, 2.0]), ([1.0, 2.0], [1.0, 2.5]),
                                 ([1.0, 2.0], [[1.0, 2.0]]), ([float("nan")], [float("nan")])])
def test_equal_matches_torch(a, b):
    assert ta.equal(ta.tensor(a), ta.tensor(b)) == torch.equal(torch.tensor(a), torch.tensor(b))


@pytest.mark.parametrize("b,kwargs", [([1.0, 2.00001], {}), ([1.0, 2.1], {}),
                                      ([1.0, 2.1], {"atol": 0.2}),
                                      ([1.0, float("nan")], {"equal_nan": True}),
                                      ([1.0, float("nan")], {})])
def test_allclose_matches_torch(b, kwargs):
    a = [1.0, float("nan")] if np.isnan(b[1]) else [1.0, 2.0]
    assert ta.allclose(ta.tensor(a), ta.tensor(b), **kwargs) == torch.allclose(
        torch.tensor(a), torch.tensor(b), **kwargs)


def test_top_level_arithmetic_is_the_operators():
    a, b = ta.tensor([1.0, 2.0]), ta.tensor([3.0, 5.0])
    assert ta.add(a, b, alpha=2).tolist() == (a + 2 * b).tolist()
    assert ta.sub(a, b).tolist() == (a - b).tolist()
    assert ta.mul(a, b).tolist() == (a * b).tolist()
    assert ta.div(a, b).tolist() == (a / b).tolist()
    assert ta.neg(a).tolist() == (-a).tolist()
    assert ta.pow(a, 2).tolist() == (a ** 2).tolist()


def _linear_function(module):
    """The LinearFunction of PyTorch's "Extending PyTorch" notes, for ``module`` (torch or
    tinyattn): bias defaults to None, and backward returns three gradients either way."""
    class LinearFunction(module.autograd.Function):
        @staticmethod
        def forward(ctx, input, weight, bias=None):
            ctx.save_for_backward(input, weight)
            return input @ weight.transpose(0, 1)

        @staticmethod
        def backward(ctx, grad_output):
            input, weight = ctx.saved_tensors
            return grad_output @ weight, grad_output.transpose(0, 1) @ input, None
    return LinearFunction


def test_custom_function_may_return_extra_trailing_nones_as_in_torch():
    x, tx = _both(np.random.default_rng(0).standard_normal((3, 4)))
    w, tw = _both(np.random.default_rng(1).standard_normal((2, 4)))
    _linear_function(ta).apply(x, w).sum().backward()       # two inputs, three results
    _linear_function(torch).apply(tx, tw).sum().backward()
    np.testing.assert_allclose(w.grad.numpy(), tw.grad.numpy(), rtol=1e-14)


def test_custom_function_extra_results_that_are_not_none_are_still_an_error():
    class TooMany(ta.autograd.Function):
        @staticmethod
        def forward(ctx, a):
            return a * 2

        @staticmethod
        def backward(ctx, grad_output):
            return grad_output * 2, grad_output
    with pytest.raises(RuntimeError, match="returned 2 gradient"):
        TooMany.apply(ta.tensor([1.0], requires_grad=True)).sum().backward()
