"""Function.apply's checks hold on its unrolled one- and two-input paths and its general path.

Function.apply runs for every op, so its checks are written to cost one cheap test each in
the common case (benchmarks/cases/small_op.py times it beside torch). These tests show that
the cheap versions still catch what the full ones did: mixed floating dtypes, mixed devices,
an input changed in place before backward, a saved array written through ``.data``; and that
a tensor read by many ops keeps a short list of the ops that saved it.
"""
import weakref

import numpy as np
import pytest

import tinyattn as ta
from tinyattn import autograd, strict_device
from tinyattn.ops import stack


def _leaf(dtype="float32", n=4):
    return ta.tensor(np.arange(n, dtype=dtype), requires_grad=True)


@pytest.mark.parametrize("op", [lambda a, b: a * b, lambda a, b: a + b,
                                lambda a, b: stack([a, b, a])])
def test_mixed_floating_dtypes_are_refused_on_every_path_in_strict_mode(op):
    with ta.strict_promotion(), pytest.raises(TypeError, match="mix floating dtypes"):
        op(_leaf("float32"), _leaf("float64"))


@pytest.mark.parametrize("op", [lambda a, b: a * b, lambda a, b: a + b,
                                lambda a, b: stack([a, b, a])])
def test_mixed_floating_dtypes_promote_on_every_path(op):
    a, b = _leaf("float32"), _leaf("float64")
    out = op(a, b)
    assert out.dtype == np.float64
    out.sum().backward()
    assert a.grad.dtype == np.float32 and b.grad.dtype == np.float64


def test_same_dtype_passes_the_check():          # negative control of the test above
    assert (_leaf() * _leaf()).dtype == np.float32


def test_mixed_devices_are_refused_on_the_two_input_path():
    strict_device.enable()
    a, b = _leaf(), _leaf().to(strict_device.DEVICE)
    with pytest.raises(RuntimeError, match="different devices"):
        a * b


def test_an_input_changed_in_place_before_backward_raises_on_the_fast_path():
    a, b = _leaf(), _leaf()
    out = a * b                                   # saves a and b
    with ta.no_grad():
        a.add_(1.0)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        out.sum().backward()


def test_saved_data_is_read_only_until_backward_in_anomaly_mode():
    a, b = _leaf(), _leaf()
    with ta.autograd.detect_anomaly():          # opt-in; torch allows the write silently
        out = a * b
        with pytest.raises(ta.SavedDataWriteError, match="backward of Mul"):
            a.data[0] = 5.0
        out.sum().backward()
        a.data[0] = 5.0                          # after backward nothing needs it


def test_a_tensor_read_by_many_ops_keeps_only_its_live_savers():
    a, b = _leaf(), _leaf()
    kept = [a * b for _ in range(3)]
    for _ in range(5000):
        a * b                                     # each result is dropped at once
    savers = a._vc.savers
    assert len(savers) < 64, len(savers)         # was 5003: one weak reference per op ever run
    live = [ref for ref in savers if ref() is not None]
    assert len(live) == 3 and all(t._ctx in [ref() for ref in live] for t in kept)


def test_pruning_keeps_savers_whose_backward_is_pending():
    counter = autograd.VersionCounter()
    alive = [autograd.Function() for _ in range(20)]
    for fn in alive:
        counter.add_saver(weakref.ref(fn))
    assert [ref() for ref in counter.savers] == alive


@pytest.mark.parametrize("symbol", ["+", "-", "*", "/"])
def test_operators_give_what_the_functions_give(symbol):
    """The operators' direct path (two tensors of one floating dtype) and their fallback
    (numbers, integer tensors, mixed dtypes) agree with the public functions."""
    name = {"+": "add", "-": "sub", "*": "mul", "/": "div"}[symbol]
    function = getattr(ta, name)
    pairs = [(_leaf(), _leaf() + 1.0), (_leaf(), 2.0), (ta.tensor([1, 2, 3, 4]), _leaf()),
             (ta.tensor([4, 6]), ta.tensor([2, 3])), (_leaf("float64"), _leaf("float64"))]
    for a, b in pairs:
        got = eval(f"a {symbol} b")                  # noqa: S307 - the operator under test
        want = function(a, b)
        assert got.dtype == want.dtype
        assert np.array_equal(got.numpy(), want.numpy(), equal_nan=True)


def test_operator_errors_are_the_functions_errors():
    with pytest.raises(RuntimeError, match=r"mul: shapes \(4,\) and \(3,\) do not broadcast"):
        _leaf() * _leaf(n=3)
    with pytest.raises(RuntimeError, match="sub: subtraction .* with a bool tensor"):
        ta.tensor([True]) - ta.tensor([False])
