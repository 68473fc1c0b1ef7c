"""Defects found by trying the redesigned core from the outside (a PyTorch user's habits,
edge values, dtypes), each compared with torch where torch is the reference.

Every test here failed before its fix; the comment on each says what tinyattn did."""
from __future__ import annotations

import numpy as np
import pytest

import tinyattn as ta


def _torch():
    return pytest.importorskip("torch")


# ---------------------------------------------------------------- indexing with 0-d tensors
def test_assigning_through_a_zero_dim_index_tensor_writes_into_the_tensor():
    x = ta.tensor(np.arange(24.0).reshape(2, 3, 4))
    x[ta.tensor(1), :, [0, 2]] = -1.0      # wrote into a temporary copy: x was unchanged
    expected = np.arange(24.0).reshape(2, 3, 4)
    expected[1, :, [0, 2]] = -1.0
    np.testing.assert_array_equal(x.numpy(), expected)


def test_assigning_through_a_zero_dim_index_tensor_while_recording():
    x = ta.tensor(np.arange(6.0).reshape(2, 3), dtype="float64", requires_grad=True)
    y = x * 1
    y[ta.tensor(1), [0, 2]] = 0.0
    y.sum().backward()
    np.testing.assert_array_equal(y.detach().numpy(), [[0, 1, 2], [0, 4, 0]])
    np.testing.assert_array_equal(x.grad.numpy(), [[1, 1, 1], [0, 1, 0]])  # was all ones


def test_a_zero_dim_index_tensor_selects_a_view_as_an_integer_does():
    x = ta.tensor(np.arange(6.0).reshape(2, 3))
    row = x[ta.tensor(1)]
    row[0] = 100.0                          # torch: x[tensor(1)] is a view, like x[1]
    assert x[1, 0].item() == 100.0


def test_zero_dim_index_matches_torch_for_get_and_set():
    torch = _torch()
    base = np.arange(24.0).reshape(2, 3, 4)
    for index in [(1,), (1, slice(None), [0, 2]), (0, [1, 2], 1), (slice(None), 2, [0, 3])]:
        as_ta = tuple(ta.tensor(i) if isinstance(i, int) else i for i in index)
        as_torch = tuple(torch.tensor(i) if isinstance(i, int) else i for i in index)
        np.testing.assert_array_equal(ta.tensor(base)[as_ta].numpy(),
                                      torch.tensor(base)[as_torch].numpy())
        a, t = ta.tensor(base), torch.tensor(base)
        a[as_ta] = 7.0
        t[as_torch] = 7.0
        np.testing.assert_array_equal(a.numpy(), t.numpy())
