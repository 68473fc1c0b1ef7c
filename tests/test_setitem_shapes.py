"""x[index] = value with leading size-1 dimensions in value: torch drops them, so
`out[0] = h` with h of shape (1, 3) and `out[0, 0] = w` with w of shape (1,) work forward and
backward; value's gradient keeps value's shape."""
import numpy as np
import pytest

import tinyattn as ta


def _setup():
    out = ta.zeros(2, 3, dtype="float64")
    h = ta.tensor([[1.0, 2.0, 3.0]], dtype="float64", requires_grad=True)       # (1, 3)
    return out, h


def test_a_row_of_shape_1_by_3_fills_a_row_and_gets_its_gradient():
    out, h = _setup()
    out[0] = h
    assert out.numpy().tolist() == [[1, 2, 3], [0, 0, 0]]
    weights = ta.tensor([[1.0, 10.0, 100.0], [5.0, 5.0, 5.0]], dtype="float64")
    (out * weights).sum().backward()
    assert h.grad.shape == (1, 3) and h.grad.numpy().tolist() == [[1.0, 10.0, 100.0]]


def test_one_element_of_shape_1_fills_a_scalar_place():
    out = ta.zeros(2, 3, dtype="float64")
    w = ta.tensor([7.0], dtype="float64", requires_grad=True)                  # (1,)
    out[0, 0] = w
    assert out.numpy()[0, 0] == 7.0 and out.numpy().sum() == 7.0
    (out * 3.0).sum().backward()
    assert w.grad.shape == (1,) and w.grad.numpy().tolist() == [3.0]


def test_a_leading_dimension_that_is_not_1_is_refused():
    out = ta.zeros(2, 3)
    with pytest.raises((ValueError, RuntimeError)):
        out[0] = ta.ones(2, 3)


def test_the_same_as_torch():
    torch = pytest.importorskip("torch")
    for index, shape in ((0, (1, 3)), ((0, 0), (1,)), ((slice(None), 1), (1, 1, 2))):
        value = np.arange(1, 1 + int(np.prod(shape)), dtype=np.float64).reshape(shape)
        weights = np.arange(6, dtype=np.float64).reshape(2, 3) + 1
        ours, theirs = ta.zeros(2, 3, dtype="float64"), torch.zeros(2, 3, dtype=torch.float64)
        v_ours = ta.tensor(value, requires_grad=True)
        v_theirs = torch.tensor(value, requires_grad=True)
        ours[index] = v_ours
        theirs[index] = v_theirs
        np.testing.assert_array_equal(ours.numpy(), theirs.detach().numpy())
        (ours * ta.tensor(weights)).sum().backward()
        (theirs * torch.tensor(weights)).sum().backward()
        np.testing.assert_array_equal(v_ours.grad.numpy(), v_theirs.grad.numpy())
