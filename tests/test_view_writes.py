"""In-place writes into a view of a tensor that requires grad are recorded as PyTorch records
them (the base takes CopySlices, the views AsStrided): ``X = (w * 1).reshape(-1, 4);
X[X == 0] = -1.0`` used to be refused. Each scenario's gradients are compared with torch's
and gradchecked in float64; the version counter still refuses what torch refuses."""
from __future__ import annotations

import numpy as np
import pytest

import tinyattn as ta

RNG = np.random.default_rng(0)
W = np.round(RNG.standard_normal((2, 4)), 1)
W[0, 0] = W[1, 2] = 0.0
V = RNG.standard_normal(4)


def _torch():
    return pytest.importorskip("torch")


def _softmax(lib, x):
    return lib.softmax(x, dim=-1) if hasattr(lib, "softmax") else lib.functional.softmax(x, -1)


def _masked_softmax_helper(lib, w, v):
    x = (w * 1).reshape(-1, 4)
    x[x == 0] = -1.0
    return (_softmax(lib, x) * v).sum()


def _masked_fill_on_view(lib, w, v):
    base = w * 2
    view = base[1]
    view.masked_fill_(view > 0.5, -3.0)
    return (base * base).sum() + (view * v).sum()


def _column_assignment_from_a_value(lib, w, v):
    x = w * 2
    x[:, 0] = v[:2] * 3
    return (x * x).sum()


def _add_into_a_transposed_view(lib, w, v):
    base = w * 1
    base.t().add_(v[:2] * w[:, :1].t())            # (4, 2) view += (1, 2)
    return (base ** 2).sum()


def _sibling_view_sees_the_write(lib, w, v):
    base = w + 0
    row = base[0]
    col = base[:, 0]
    col.mul_(v[:2])
    return (row * v).sum() + col.sum()


def _write_into_a_base_that_has_views(lib, w, v):
    base = w * 1
    view = base.reshape(8)
    base.mul_(3)
    return (view * lib.cat([v, v])).sum()


def _view_of_a_view(lib, w, v):
    base = w * 1
    inner = base.reshape(4, 2)[1:3]
    inner[0].zero_()
    inner[1].add_(v[:2])
    return (base * base).sum()


SCENARIOS = [_masked_softmax_helper, _masked_fill_on_view, _column_assignment_from_a_value,
             _add_into_a_transposed_view, _sibling_view_sees_the_write,
             _write_into_a_base_that_has_views, _view_of_a_view]


def _grads(lib, scenario):
    w = lib.tensor(W, dtype=lib.float64, requires_grad=True)
    v = lib.tensor(V, dtype=lib.float64, requires_grad=True)
    loss = scenario(lib, w, v)
    loss.backward()
    return loss.item(), w.grad.numpy(), v.grad.numpy()


@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda f: f.__name__.strip("_"))
def test_gradients_as_torch(scenario):
    torch = _torch()
    expected = _grads(torch, scenario)
    got = _grads(ta, scenario)
    assert got[0] == pytest.approx(expected[0], rel=1e-12)
    np.testing.assert_allclose(got[1], expected[1], rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(got[2], expected[2], rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda f: f.__name__.strip("_"))
def test_gradcheck(scenario):
    w = ta.tensor(W + 0.05, dtype="float64", requires_grad=True)    # away from the kinks
    v = ta.tensor(V, dtype="float64", requires_grad=True)
    assert ta.gradcheck(lambda a, b: scenario(ta, a, b), [w, v])


def test_the_written_view_has_a_history_and_the_base_copy_slices():
    w = ta.tensor(W, requires_grad=True)
    x = (w * 1).reshape(-1, 4)
    x[x == 0] = -1.0
    assert type(x.grad_fn).__name__ == "AsStrided"
    assert type(x._base.grad_fn).__name__ == "CopySlices"
    assert x.tolist()[0][0] == -1.0


def test_a_saved_base_modified_through_a_view_still_refuses():
    torch = _torch()
    for lib in (torch, ta):
        w = lib.tensor(W, requires_grad=True)
        base = w * 1
        squared = base.pow(3)                   # keeps base for its backward
        base[0].add_(1.0)
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            squared.sum().backward()


def test_an_output_saved_by_its_op_modified_through_a_view_refuses():
    torch = _torch()
    for lib in (torch, ta):
        w = lib.tensor(W, requires_grad=True)
        y = w.tanh()                            # tanh keeps its output for the backward
        y[:, 0] = 0.0
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            y.sum().backward()


def test_a_view_of_a_leaf_that_requires_grad_is_refused():
    torch = _torch()
    for lib in (torch, ta):
        w = lib.tensor(W, requires_grad=True)
        with pytest.raises(RuntimeError, match="leaf"):
            w[0].add_(1.0)


def test_detached_tensor_writes_do_not_reach_the_original_history():
    w = ta.tensor(W, requires_grad=True)
    base = w * 1
    d = base.detach()
    d.add_(ta.tensor(V[:4], requires_grad=True))      # d: its own history, as torch
    base.sum().backward()
    np.testing.assert_array_equal(w.grad.numpy(), np.ones((2, 4)))
