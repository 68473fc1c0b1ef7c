"""``tensor(list of tensors)`` reads the list as torch does: a tensor at the innermost level is
a number (it must have one element), so ``tensor([tensor([0.9]), tensor([2.1])])`` has shape
(2,), not (2, 1): against a (2,) target a loss would otherwise broadcast to (2, 2) silently."""
from __future__ import annotations

import numpy as np
import pytest

import tinyattn as ta
import tinyattn.functional as F


def _torch():
    return pytest.importorskip("torch")


CASES = {
    "one-element 1-d": lambda t: [t.tensor([0.9]), t.tensor([2.1])],
    "0-d": lambda t: [t.tensor(0.9), t.tensor(2.1)],
    "one-element 2-d": lambda t: [t.tensor([[1.0]]), t.tensor([[2.0]])],
    "number and tensor": lambda t: [1.0, t.tensor([2.0])],
    "nested": lambda t: [[t.tensor([1.0]), t.tensor([2.0])], [t.tensor(3.0), 4.0]],
    "int": lambda t: [t.tensor([1]), t.tensor([2])],
    "int32 alone": lambda t: [t.tensor([1], dtype=t.int32)],
    "int32 and int": lambda t: [t.tensor([1], dtype=t.int32), 2],
    "int and float": lambda t: [t.tensor([1]), t.tensor([2.5])],
    "float64": lambda t: [t.tensor([1.5], dtype=t.float64), 2.0],
    "float16 and number": lambda t: [t.tensor([1.5], dtype=t.float16), 2.0],
    "uint8 and int8": lambda t: [t.tensor([1], dtype=t.uint8), t.tensor([2], dtype=t.int8)],
    "bool": lambda t: [t.tensor([True]), t.tensor([False])],
    "list then tensor row": lambda t: [[1.0, 2.0], t.tensor([3.0, 4.0])],
    "two rows": lambda t: [t.tensor([1.0, 2.0]), t.tensor([3.0, 4.0])],
    "one row": lambda t: [t.tensor([1.0, 2.0])],
    "one and two": lambda t: [t.tensor([1.0]), t.tensor([3.0, 4.0])],
    "0-d then list": lambda t: [t.tensor(1.0), [2.0]],
    "short row": lambda t: [[1.0, 2.0], t.tensor([3.0])],
}


@pytest.mark.parametrize("name", list(CASES))
def test_tensor_of_tensors_as_torch(name):
    torch = _torch()
    try:
        expected = torch.tensor(CASES[name](torch))
    except (ValueError, TypeError) as exc:
        with pytest.raises(type(exc)):
            ta.tensor(CASES[name](ta))
        return
    got = ta.tensor(CASES[name](ta))
    assert got.shape == tuple(expected.shape)
    assert str(got.dtype) == str(expected.dtype).replace("torch.", "")
    np.testing.assert_array_equal(got.numpy(), expected.numpy())


def test_mse_against_a_vector_target_is_not_broadcast():
    pred = ta.tensor([ta.tensor([0.9]), ta.tensor([2.1])])
    loss = F.mse_loss(pred, ta.tensor([1.0, 2.0]))
    assert pred.shape == (2,)
    assert abs(loss.item() - 0.01) < 1e-6                  # (2, 1) vs (2,) gave 0.61


def test_many_element_tensor_error_says_what_to_do():
    with pytest.raises(ValueError, match="stack"):
        ta.tensor([ta.tensor([1.0, 2.0]), ta.tensor([3.0, 4.0])])
