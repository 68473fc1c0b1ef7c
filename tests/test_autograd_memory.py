"""What a graph keeps alive, as torch's does: a node keeps its parents' nodes and what its
backward saved, not the tensors other ops made (so an activation no backward needs is freed
in the forward), and a leaf's first gradient is taken over when nothing else refers to it
(docs/benchmarks.md#the-gpt-steps-and-their-memory)."""
import gc
import pickle
import weakref

import numpy as np
import pytest

import tinyattn as ta
from tinyattn import Function
from tinyattn.autograd import engine
from tinyattn.autograd.function import InputRecord


def _leaf(*shape, seed=0):
    rng = np.random.default_rng(seed)
    return ta.tensor(rng.standard_normal(shape).astype(np.float32), requires_grad=True)


def test_an_activation_no_backward_saved_is_freed_in_the_forward():
    x, w, b = _leaf(4, 8), _leaf(8, 8, seed=1), _leaf(4, 8, seed=2)
    h = x @ w                       # matmul saves x and w, not its output
    gone = weakref.ref(h._data)
    out = (h + b).sum()             # Add saves nothing: h is read by no backward
    del h
    gc.collect()
    assert gone() is None, "the graph still holds an activation no backward needs"
    out.backward()
    np.testing.assert_allclose(b.grad, np.ones((4, 8)))
    np.testing.assert_allclose(x.grad, np.ones((4, 8)) @ w.detach().numpy().T, rtol=1e-6)


def test_an_activation_a_backward_saved_stays_and_pictures_see_it():
    # negative control of the test above: the same shape of program, but Mul saves h
    x, w = _leaf(4, 8), _leaf(8, 8, seed=1)
    h = x @ w
    kept = weakref.ref(h._data)
    out = (h * h).sum()
    del h
    gc.collect()
    assert kept() is not None
    mul = out._ctx.parents[0]               # Sum reads Mul's output
    assert type(mul.inputs[0]) is InputRecord and mul.inputs[0] is mul.inputs[1]
    assert mul.inputs[0]._data is kept() and mul.inputs[0].still_held() is mul.inputs[0]


def test_a_record_gives_the_tensor_back_while_the_program_holds_it():
    x = _leaf(3)
    y = x * 2.0
    z = y + 1.0
    record = z._ctx.inputs[0]
    assert type(record) is InputRecord and record.still_held() is y
    assert record.shape == y.shape and record.dtype == y.dtype and record._ctx is y._ctx
    assert "made by another op" in repr(record)


def test_leaves_and_constants_are_kept_as_tensors():
    x, c = _leaf(3), ta.tensor([1.0, 2.0, 3.0])
    z = x * c
    assert z._ctx.inputs[0] is x and z._ctx.inputs[1] is c


def test_the_graph_picture_and_explorer_still_work_after_freeing():
    x, w = _leaf(2, 3), _leaf(3, 3, seed=1)
    loss = ((x @ w) + 1.0).relu().sum()
    graph = ta.viz.build_graph(loss)
    assert graph.nodes
    data = ta.viz.graph_data(loss)
    freed = [n for n in data["nodes"] if n["kind"] == "tensor" and n["value_summary"] is None]
    assert freed, "the matmul's output is freed: the page has no value for it"
    loss.backward()
    np.testing.assert_array_equal(x.grad.shape, (2, 3))


def test_a_consumed_intermediate_detached_still_pickles():
    x = _leaf(3)
    y = x * 2.0
    z = y + 1.0                     # y now carries its record (weak references)
    y.detach_()                     # a leaf now: pickled by value, the record left behind
    copy = pickle.loads(pickle.dumps(y))
    np.testing.assert_array_equal(copy.detach().numpy(), y.detach().numpy())
    assert z is not None


def test_in_place_on_an_intermediate_still_matches_torch():
    torch = pytest.importorskip("torch", reason="torch is the reference")
    values = np.array([0.5, -1.5, 2.0], dtype=np.float32)
    x = ta.tensor(values, requires_grad=True)
    y = x * 1.0
    y.pow_(2)                       # pow_ saves y: it must get the old values, not the new
    (y * y).sum().backward()
    tx = torch.tensor(values, requires_grad=True)
    ty = tx * 1.0
    ty.pow_(2)
    (ty * ty).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-6)


def test_an_in_place_change_to_a_saved_intermediate_still_raises():
    x = _leaf(3)
    y = x * 1.0
    z = y * y
    y.add_(1.0)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        z.sum().backward()


# ---------------------------------------------------------------- leaf gradients
class _Fresh(Function):
    """y = 2 x; its backward returns a new array and notes its id (not the array)."""
    made: list = []
    keep: list = []
    share = False

    def forward(self, x):
        return 2 * x

    def backward(self, grad):
        out = 2 * grad
        _Fresh.made.append(id(out))
        if _Fresh.share:
            _Fresh.keep.append(out)         # something else refers to it
        return out


@pytest.fixture
def fresh():
    _Fresh.made, _Fresh.keep, _Fresh.share = [], [], False
    yield _Fresh
    _Fresh.made, _Fresh.keep, _Fresh.share = [], [], False


@pytest.mark.skipif(engine._UNSHARED_REFS < 0, reason="no take-over on this interpreter")
def test_a_leaf_takes_over_a_gradient_nothing_else_holds(fresh):
    x = _leaf(5)
    fresh.apply(x).sum().backward()
    assert id(x.grad._data) == fresh.made[0], "the first gradient was copied, not taken over"
    np.testing.assert_allclose(x.grad.numpy(), 2.0)


def test_a_gradient_something_else_holds_is_copied(fresh):
    fresh.share = True
    x = _leaf(5)
    fresh.apply(x).sum().backward()
    assert x.grad._data is not fresh.keep[0]
    fresh.keep[0][:] = 99.0                 # the holder's writes do not reach .grad
    np.testing.assert_allclose(x.grad.numpy(), 2.0)


def test_two_leaves_given_one_array_get_two():
    a, b = _leaf(4), _leaf(4, seed=1)
    (a + b).sum().backward()                # Add hands the same gradient to both
    assert a.grad._data is not b.grad._data
    a.grad._data *= 3.0
    np.testing.assert_allclose(b.grad.numpy(), 1.0)


def test_a_hooked_or_retained_gradient_is_not_shared():
    x = _leaf(3)
    seen = []
    x.register_hook(lambda g: seen.append(g) or g)
    (x * 2.0).sum().backward()
    assert x.grad._data is not seen[0]._data
    y = x * 3.0
    y.retain_grad()
    (y * 1.0).sum().backward()
    assert y.grad._data is not x.grad._data


@pytest.mark.skipif(engine._UNSHARED_REFS < 0, reason="no take-over on this interpreter")
def test_a_view_or_a_read_only_gradient_is_copied():
    # _unshared refuses every kind of array .grad must not take over, whatever its count
    base = np.ones(6, dtype=np.float32)
    assert not engine._unshared(base[:3])
    frozen = np.ones(3, dtype=np.float32)
    frozen.flags.writeable = False
    assert not engine._unshared(frozen)
    assert not engine._unshared(np.ones((3, 4), dtype=np.float32).T.copy(order="F"))
