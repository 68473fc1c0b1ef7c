"""Reductions with ``dtype=``, held to torch over every pair of (input dtype, dtype= asked).

The silent wrong result this guards against: ``x.sum(dtype=torch.int32)`` gave int64 (and
``cumsum``/``cumprod``/``prod``/``nansum`` likewise), so a program that relied on the
integer width it asked for (wrapping, memory, a later dtype check) computed something else.
Where torch refuses a dtype (``softmax(dtype=int)``, ``mean(dtype=int)``, a running sum of
bools) tinyattn refuses too; where torch refuses the *input* (``softmax`` of an integer tensor,
``mean`` of one without ``dtype=``) tinyattn's float32 answer is the documented extension.
"""
from __future__ import annotations

import numpy as np
import pytest

import tinyattn as ta

torch = pytest.importorskip("torch", reason="torch is the oracle for these tests")

DTYPES = ("bool", "uint8", "int8", "int32", "int64", "float16", "bfloat16", "float32",
          "float64")
DATA = [[1, 2, 3], [4, 5, 6], [100, 90, 7]]   # int8 sums and products overflow
OPS = {"sum": (), "prod": (), "nansum": (), "mean": (), "cumsum": (1,), "cumprod": (1,),
       "softmax": (1,), "log_softmax": (1,)}


def _run(lib, op, src, dst):
    x = lib.tensor(DATA, dtype=getattr(lib, src))
    kwargs = {} if dst is None else {"dtype": getattr(lib, dst)}
    try:
        return getattr(lib, op)(x, *OPS[op], **kwargs), None
    except (RuntimeError, NotImplementedError, TypeError) as error:
        return None, error


def _dtype_name(t) -> str:
    return str(t.dtype).replace("torch.", "")


def _agrees(op, src, dst) -> str:
    """'' when tinyattn does what torch does; else what differs."""
    expected, torch_error = _run(torch, op, src, dst)
    got, error = _run(ta, op, src, dst)
    if torch_error is not None:
        if error is not None:
            return ""
        # torch refuses the input's dtype (no integer kernel) without dtype=: the float32
        # answer is tinyattn's documented extension; a dtype= torch refuses must be refused
        return "" if dst is None or op == "nanmean" else f"computes where torch raises"
    if error is not None:
        return f"raises {error!r} where torch computes"
    if _dtype_name(expected) != _dtype_name(got):
        return f"dtype {_dtype_name(got)} where torch gives {_dtype_name(expected)}"
    want = expected.double().numpy()
    have = np.asarray(got.data, dtype=np.float64)
    tol = 1e-2 if "16" in _dtype_name(expected) else 1e-6
    if not np.allclose(have, want, rtol=tol, atol=tol, equal_nan=True):
        return f"values {have.tolist()} where torch gives {want.tolist()}"
    return ""


@pytest.mark.parametrize("op", sorted(OPS))
@pytest.mark.parametrize("src", DTYPES)
def test_dtype_argument_as_torch(op, src):
    problems = {dst: _agrees(op, src, dst) for dst in (None,) + DTYPES}
    assert not {k: v for k, v in problems.items() if v}, problems


def test_integer_sum_wraps_in_the_dtype_asked():
    x = ta.tensor([200, 100], dtype=ta.uint8)
    assert x.sum(dtype=ta.uint8).item() == 44 and x.sum(dtype=ta.uint8).dtype == np.uint8
    assert x.sum().item() == 300 and x.sum().dtype == np.int64
    assert ta.tensor([-1, 0]).sum(dtype=ta.bool).item() is True
    assert ta.tensor([2, 0]).prod(dtype=ta.bool).item() is False


def test_float_dtype_keeps_the_gradient():
    x = ta.tensor([1.0, 2.0], requires_grad=True)
    y = x.sum(dtype=ta.float64)
    y.backward()
    assert y.dtype == np.float64 and x.grad.tolist() == [1.0, 1.0]


def test_negative_control_a_wrong_dtype_is_seen(monkeypatch):
    """The comparison itself must see a dtype= that is ignored (as it was before the fix)."""
    real_sum = ta.sum
    monkeypatch.setattr(ta, "sum", lambda x, *a, dtype=None, **k: real_sum(x, *a, **k))
    assert "dtype int64 where torch gives int32" in _agrees("sum", "int64", "int32")
