"""What the conformance run (tests/conformance) found and issue 30's fixes changed, checked
without torch (the conformance run compares the same against torch): div's rounding modes,
clamp with tensor bounds, narrow with a tensor start, normal_'s negative std, maximize= in
RMSprop and Adagrad. Each test failed before its fix."""
from __future__ import annotations

import numpy as np
import pytest

import tinyattn as ta


@pytest.mark.parametrize("mode, expected", [("floor", [-4, -4, -3, 1]),
                                            ("trunc", [-3, -3, -2, 1])])
def test_div_rounding_modes_keep_integers_and_round_as_named(mode, expected):
    a, b = ta.tensor([-7, 7, -8, 5]), ta.tensor([2, -2, 3, 5])
    out = ta.div(a, b, rounding_mode=mode)             # TypeError: no rounding_mode=
    assert out.dtype == np.int64
    np.testing.assert_array_equal(out.numpy(), expected)
    x = ta.tensor([-7.5, 7.5], requires_grad=True)
    y = x.div(2.0, rounding_mode=mode)
    np.testing.assert_array_equal(y.detach().numpy(), [-4.0, 3.0] if mode == "floor" else
                                  [-3.0, 3.0])
    y.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [0.0, 0.0])  # a step function, as torch
    with pytest.raises(ValueError, match="rounding_mode"):
        ta.div(a, b, rounding_mode="round")


def test_div_rounding_mode_saves_its_inputs_as_torch_does():
    x = ta.tensor([3.0, 5.0], requires_grad=True) * 1
    y = ta.div(x, 2.0, rounding_mode="floor")
    x.mul_(2)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()


def test_clamp_with_tensor_bounds_sends_each_gradient_to_its_source():
    x = ta.tensor([[-2.0, 0.5, 3.0]], requires_grad=True)
    low = ta.tensor([-1.0, -1.0, -1.0], requires_grad=True)
    high = ta.tensor([[1.0], [2.0]], requires_grad=True)
    out = ta.clamp(x, min=low, max=high)               # TypeError: tensor bounds
    assert out.shape == (2, 3)
    np.testing.assert_array_equal(out.detach().numpy(), [[-1, 0.5, 1], [-1, 0.5, 2]])
    out.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [[0, 2, 0]])
    np.testing.assert_array_equal(low.grad.numpy(), [2, 0, 0])
    np.testing.assert_array_equal(high.grad.numpy(), [[1], [1]])


def test_a_one_element_tensor_bound_gets_its_gradient():
    x = ta.tensor([0.1, 0.9], requires_grad=True)
    bound = ta.tensor(0.5, requires_grad=True)
    ta.clamp(x, max=bound).sum().backward()            # was read with .item(): no gradient
    assert bound.grad is not None and bound.grad.item() == 1.0


def test_clamp_refuses_a_tensor_and_a_number_as_torch_does():
    with pytest.raises(TypeError, match="both as tensors or both as numbers"):
        ta.clamp(ta.tensor([1.0]), min=ta.tensor([0.0]), max=2.0)


def test_narrow_takes_a_zero_dim_integer_tensor_start():
    x = ta.tensor(np.arange(6.0))
    np.testing.assert_array_equal(x.narrow(0, ta.tensor(2), 3).numpy(), [2, 3, 4])
    with pytest.raises(RuntimeError, match="0-d integer tensor"):
        x.narrow(0, ta.tensor([2]), 3)


def test_normal_refuses_a_negative_std():
    with pytest.raises(RuntimeError, match="std >= 0"):
        ta.zeros(3).normal_(0.0, -1.0)


@pytest.mark.parametrize("name", ["RMSprop", "Adagrad"])
def test_maximize_climbs(name):
    w = ta.tensor([1.0], requires_grad=True)
    optimizer = getattr(ta.optim, name)([w], lr=0.1, maximize=True)
    (w * 2.0).sum().backward()
    optimizer.step()
    assert w.item() > 1.0                               # TypeError: no maximize=


def test_batch_norm_takes_bias_false_and_refuses_eps_zero_in_training():
    layer = ta.nn.BatchNorm1d(3, bias=False)           # TypeError: no bias=
    assert layer.bias is None and "bias" not in layer.state_dict()
    assert "bias=False" in repr(layer)
    x = ta.tensor(np.random.default_rng(0).standard_normal((4, 3)), dtype="float32")
    assert layer(x).shape == (4, 3)
    with pytest.raises(ValueError, match="eps must be positive during training"):
        ta.nn.BatchNorm1d(3, eps=0.0)(x)                # divided 0 by 0 for equal values
    ta.nn.BatchNorm1d(3, eps=0.0).eval()(x)              # eval: allowed, as torch


def test_cross_entropy_refuses_ignore_index_with_probability_targets():
    logits = ta.tensor(np.zeros((2, 3)), dtype="float32")
    target = ta.tensor(np.full((2, 3), 1 / 3), dtype="float32")
    ta.nn.functional.cross_entropy(logits, target)                 # the default: fine
    with pytest.raises(RuntimeError, match="ignore_index is not supported"):
        ta.nn.functional.cross_entropy(logits, target, ignore_index=1)   # was ignored
