"""Type promotion as torch's: a 0-d tensor or a Python number does not widen a tensor's dtype
within its category (``int32 + tensor(5)`` is int32; ``uint8 [250] + tensor(10)`` wraps to 4),
and only a higher category (bool < integer < float) changes the result.

The grid runs + - * / and maximum over dtype pairs, 0-d against 1-d and both ways, against
torch.result_type and torch's own results. tinyattn refuses two floating tensors of different
dtypes at the same rank (docs/pytorch.md, deliberate differences): those cells must raise."""
from __future__ import annotations

import itertools
import operator

import numpy as np
import pytest

import tinyattn as ta
from tinyattn.promotion import promote_types, result_type

DTYPES = ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "float32", "float64"]
OPS = {"add": operator.add, "sub": operator.sub, "mul": operator.mul, "div": operator.truediv}
NUMBERS = [3, 2.5, True]


def _torch():
    return pytest.importorskip("torch")


def _values(dtype: str, zero_dim: bool):
    values = [True, False] if dtype == "bool" else [120, 3]
    return values[0] if zero_dim else values


def _make(lib, dtype, zero_dim):
    return lib.tensor(_values(dtype, zero_dim), dtype=getattr(lib, dtype))


def _run(lib, op, a, b):
    try:
        return op(a, b), None
    except (RuntimeError, TypeError, ValueError) as exc:
        return None, exc


def _same(got, expected):
    assert str(got.dtype).replace("torch.", "") == str(expected.dtype).replace("torch.", "")
    np.testing.assert_allclose(got.numpy().astype(np.float64),
                               expected.numpy().astype(np.float64), rtol=1e-3)


def _refused_when_strict(a, b) -> bool:
    """Two floating tensors of different dtypes with the same rank class: what the opt-in
    strict mode (tinyattn.set_strict_promotion) refuses; by default they promote."""
    return (a.dtype != b.dtype and a.dtype.kind == "f" and b.dtype.kind == "f"
            and (a.ndim == 0) == (b.ndim == 0))


@pytest.mark.parametrize("ranks", [(1, 0), (0, 1), (0, 0), (1, 1)])
@pytest.mark.parametrize("name", list(OPS))
def test_tensor_pairs_as_torch(name, ranks):
    torch = _torch()
    op = OPS[name]
    for da, db in itertools.product(DTYPES, DTYPES):
        ta_a, ta_b = _make(ta, da, ranks[0] == 0), _make(ta, db, ranks[1] == 0)
        th_a, th_b = _make(torch, da, ranks[0] == 0), _make(torch, db, ranks[1] == 0)
        assert str(result_type(ta_a, ta_b)) == str(torch.result_type(th_a, th_b))[6:], (da, db)
        expected, torch_error = _run(torch, op, th_a, th_b)
        got, error = _run(ta, op, ta_a, ta_b)
        if torch_error is not None:
            assert error is not None, (name, da, db, ranks)
            continue
        assert error is None, (name, da, db, ranks, error)
        _same(got, expected)
        with ta.strict_promotion():
            strict, strict_error = _run(ta, op, ta_a, ta_b)
        if _refused_when_strict(ta_a, ta_b):
            assert isinstance(strict_error, TypeError), (name, da, db, ranks)
        else:                                     # negative control: the rest is unchanged
            assert strict_error is None, (name, da, db, ranks, strict_error)
            _same(strict, expected)


@pytest.mark.parametrize("number", NUMBERS, ids=repr)
@pytest.mark.parametrize("name", list(OPS))
def test_tensor_and_python_number_as_torch(name, number):
    torch = _torch()
    op = OPS[name]
    for dtype, zero_dim, number_first in itertools.product(DTYPES, (True, False), (True, False)):
        ta_t, th_t = _make(ta, dtype, zero_dim), _make(torch, dtype, zero_dim)
        pair = (lambda t: (number, t)) if number_first else (lambda t: (t, number))
        assert str(result_type(*pair(ta_t))) == str(torch.result_type(*pair(th_t)))[6:]
        expected, torch_error = _run(torch, op, *pair(th_t))
        got, error = _run(ta, op, *pair(ta_t))
        if torch_error is not None:
            assert error is not None, (name, dtype, number)
            continue
        assert error is None, (name, dtype, number, error)
        _same(got, expected)


def test_the_two_cases_from_the_report():
    x = ta.tensor([250], dtype=ta.uint8) + ta.tensor(10)
    assert x.dtype == np.uint8 and x.tolist() == [4]
    assert (ta.tensor([1, 2], dtype=ta.int32) + ta.tensor(5)).dtype == np.int32


def test_promote_types_as_torch():
    torch = _torch()
    for da, db in itertools.product(DTYPES, DTYPES):
        expected = str(torch.promote_types(getattr(torch, da), getattr(torch, db)))[6:]
        assert str(promote_types(da, db)) == expected, (da, db)


def test_zero_dim_float_gradient_flows_in_its_own_dtype():
    w = ta.tensor([1.0, 2.0], requires_grad=True)
    s = ta.tensor(3.0, dtype=ta.float64, requires_grad=True)
    out = w * s
    assert out.dtype == np.float32
    out.sum().backward()
    assert s.grad.dtype == np.float64 and s.grad.item() == pytest.approx(3.0)
    np.testing.assert_allclose(w.grad.numpy(), [3.0, 3.0])


def test_float_mix_refused_in_strict_mode_only():
    with ta.strict_promotion(), pytest.raises(TypeError, match="floating dtypes"):
        ta.ones(2) + ta.ones(2, dtype=ta.float64)
    assert (ta.ones(2) + ta.ones(2, dtype=ta.float64)).dtype == np.float64
