"""GELU's tanh approximation by blocks (tinyattn/ops/tanh_gelu.py) gives the plain
expressions' values to the last bit, forward and backward, at every kind of input (zeros,
infinities, NaN, large and tiny values), over several blocks; and torch's values."""
from __future__ import annotations

import importlib

import numpy as np
import pytest

import tinyattn as ta
import tinyattn.functional as F
from tinyattn.ops.elementwise import _GELU_CUBIC, _SQRT_2_OVER_PI
from tinyattn.ops.tanh_gelu import (by_value_blocks, tanh_gelu_by_blocks,
                                    tanh_gelu_slope_times_grad_by_blocks)

RNG = np.random.default_rng(3838)
row_blocks = importlib.import_module("tinyattn.ops.row_blocks")
tanh_gelu = importlib.import_module("tinyattn.ops.tanh_gelu")
S, C = _SQRT_2_OVER_PI, _GELU_CUBIC


def _plain(x, g):
    """Gelu's plain tanh expressions (ops/elementwise.py), as written there."""
    t = np.tanh(S * (x + C * x * x * x))
    du_dx = S * (1 + 3 * C * x * x)
    return 0.5 * x * (1 + t), g * (0.5 * (1 + t) + 0.5 * x * (1 - t * t) * du_dx)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_blocks_are_the_plain_expressions_bit_for_bit(dtype, monkeypatch):
    monkeypatch.setattr(tanh_gelu, "BLOCK_VALUES", 1000)       # many blocks, a ragged last
    x = (RNG.standard_normal((7, 9, 61)) * 5).astype(dtype)
    x.flat[:9] = [0.0, -0.0, np.inf, -np.inf, np.nan, 1e30, -1e30, 1e-40, 30.0]
    g = RNG.standard_normal(x.shape).astype(dtype)
    with np.errstate(all="ignore"):
        expected_out, expected_dx = _plain(x, g)
        out = tanh_gelu_by_blocks(x, S, C)
        dx = tanh_gelu_slope_times_grad_by_blocks(g, x, S, C)
    np.testing.assert_array_equal(out, expected_out)
    np.testing.assert_array_equal(dx, expected_dx)
    assert out.dtype == dtype and dx.dtype == dtype and out.flags.owndata


def test_the_op_takes_the_blocks_and_matches_torch(monkeypatch):
    torch = pytest.importorskip("torch", reason="torch is the oracle of this check")
    x = (RNG.standard_normal((64, 300)) * 3).astype(np.float32)
    g = RNG.standard_normal(x.shape).astype(np.float32)
    assert by_value_blocks(x, g)
    calls = []
    monkeypatch.setattr(tanh_gelu, "_inner_tanh",
                        lambda *a, original=tanh_gelu._inner_tanh: calls.append(1) or original(*a))
    X = ta.tensor(x, requires_grad=True)
    out = F.gelu(X, approximate="tanh")
    out.backward(ta.tensor(g))
    assert calls                                # the blocks ran (the plain path: next test)
    xt = torch.tensor(x, requires_grad=True)
    expected = torch.nn.functional.gelu(xt, approximate="tanh")
    expected.backward(torch.tensor(g))
    torch.testing.assert_close(out.numpy(), expected.detach().numpy())
    torch.testing.assert_close(X.grad.numpy(), xt.grad.numpy())


def test_other_inputs_keep_the_plain_path():
    x = RNG.standard_normal((200, 100)).astype(np.float32)
    assert not by_value_blocks(x.T)                             # not C-contiguous
    assert not by_value_blocks(x[:10])                          # below MIN_VALUES
    assert not by_value_blocks(x.astype(np.float16))
    assert not by_value_blocks(x, x.astype(np.float64))         # mixed dtypes
    X = ta.tensor(x.T.copy(), requires_grad=True)
    g = RNG.standard_normal((200, 100)).astype(np.float32).T    # a non-contiguous gradient
    out = F.gelu(X, approximate="tanh")
    out.backward(ta.tensor(g))
    expected_out, expected_dx = _plain(x.T, g)
    np.testing.assert_array_equal(out.numpy(), expected_out)
    np.testing.assert_array_equal(X.grad.numpy(), expected_dx)
