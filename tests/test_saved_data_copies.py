"""A copy of a saved tensor's data is new memory: writable. Only the saved array itself (and
its views) refuses writes while a backward needs it. Under run-torch ``x.data.clone()`` is a
Tensor that in-place ops may change, as in torch."""
from __future__ import annotations

import numpy as np
import pytest

import tinyattn as ta
from tinyattn.torch_shim import patches


def _saved():
    x = ta.tensor([1.0, 2.0], requires_grad=True)
    return x, x * x                                  # Mul saves x for its backward


@pytest.mark.parametrize("copy", [lambda d: d.copy(), lambda d: d.flatten(),
                                  lambda d: d.astype(np.float64), lambda d: np.copy(d)])
def test_copies_of_plain_data_are_writable(copy):
    x, y = _saved()
    c = copy(x.data)
    c[0] = 5.0
    c.fill(3.0)
    np.add(c, 1.0, out=c)
    assert (c == 4.0).all()
    y.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [2.0, 4.0])        # the saved x intact


def test_the_saved_array_and_its_views_still_refuse_in_anomaly_mode():
    x, _ = _saved()
    for write in (lambda d: d.__setitem__(0, 1.0), lambda d: d.fill(0.0),
                  lambda d: np.add(d, 1, out=d), lambda d: d[:1].__setitem__(0, 1.0)):
        with ta.autograd.detect_anomaly(), \
                pytest.raises(ta.SavedDataWriteError, match="saved for the backward"):
            write(x.data)


def test_run_torch_data_clone_is_writable():
    x, y = _saved()
    patches.apply()
    try:
        c = x.data.clone()
        c[0] = 9.0
        c.add_(1.0)
        assert c.tolist() == [10.0, 3.0]
        with ta.autograd.detect_anomaly(), pytest.raises(ta.SavedDataWriteError):
            x.data[0] = 9.0
    finally:
        patches.restore()
    y.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [2.0, 4.0])
