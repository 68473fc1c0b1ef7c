"""Reliability, round four (issue 31): each defect the issue lists, with torch as the oracle,
and the probes of each surface tried afterwards (special values, empty and 0-d, half precision
at its limits, every output structure, rarely passed options, hostile files)."""
from __future__ import annotations

import math

import numpy as np
import pytest

import tinyattn as ta
from tinyattn import nn
from tinyattn.testing import assert_close

torch = pytest.importorskip("torch", reason="torch is the oracle of these tests")


def _t(x):
    """A torch tensor holding what tinyattn tensor x holds."""
    return torch.from_numpy(np.array(x.float().numpy() if x.dtype == ta.bfloat16 else x.numpy()))


# ---- F.rms_norm / nn.RMSNorm with eps=None on half inputs ------------------------------------

@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32", "float64"])
@pytest.mark.parametrize("value", [0.01, 1e-5, 3.0])
def test_rms_norm_default_eps_is_torchs(dtype, value):
    ours = ta.nn.functional.rms_norm(ta.full((4,), value, dtype=getattr(ta, dtype)), (4,))
    theirs = torch.nn.functional.rms_norm(
        torch.full((4,), value, dtype=getattr(torch, dtype)), (4,))
    assert str(ours.dtype) == str(theirs.dtype).replace("torch.", "")
    np.testing.assert_allclose(ours.float().numpy(), theirs.float().numpy(), rtol=1e-2)
    module = nn.RMSNorm(4).to(getattr(ta, dtype))
    np.testing.assert_allclose(module(ta.full((4,), value, dtype=getattr(ta, dtype)))
                               .float().numpy(), theirs.float().numpy(), rtol=1e-2)


# ---- GradScaler.scale: torch's promotion with its 0-d float32 scale ---------------------------

@pytest.mark.parametrize("make", [
    lambda m: m.tensor(2.0, dtype=m.float16), lambda m: m.tensor([2.0], dtype=m.float16),
    lambda m: m.tensor(2.0, dtype=m.bfloat16), lambda m: m.tensor(2.0, dtype=m.float64),
    lambda m: m.tensor(2), lambda m: m.tensor([[1.0, 2.0]]), lambda m: m.tensor([], dtype=m.float16),
])
def test_grad_scaler_scale_dtype_and_value(make):
    ours = ta.amp.GradScaler().scale(make(ta))
    theirs = torch.amp.GradScaler("cpu").scale(make(torch))
    assert str(ours.dtype) == str(theirs.dtype).replace("torch.", "")
    np.testing.assert_array_equal(ours.float().numpy(), theirs.float().numpy())


# ---- torch.testing.assert_close with non-finite values --------------------------------------

_NOT_CLOSE = [([5.0], [math.inf]), (math.inf, -math.inf), ([1e30], [math.inf]),
              ([math.inf], [5.0]), ([65504.0], [math.inf]), ([math.nan], [1.0])]


@pytest.mark.parametrize("actual,expected", _NOT_CLOSE)
def test_assert_close_infinities_are_exact(actual, expected):
    with pytest.raises(AssertionError):
        torch.testing.assert_close(torch.tensor(actual), torch.tensor(expected))
    with pytest.raises(AssertionError):
        assert_close(ta.tensor(actual), ta.tensor(expected))
    if not isinstance(actual, list):
        with pytest.raises(AssertionError):
            assert_close(actual, expected)
    with pytest.raises(AssertionError):
        assert_close(ta.tensor(actual), ta.tensor(expected), rtol=1.0, atol=1.0)


def test_assert_close_equal_infinities_and_negative_control():
    assert_close(ta.tensor([math.inf, -math.inf, 1.0]), ta.tensor([math.inf, -math.inf, 1.0]))
    assert_close(math.inf, math.inf)
    assert_close(ta.tensor([math.nan]), ta.tensor([math.nan]), equal_nan=True)
    with pytest.raises(AssertionError):
        assert_close(ta.tensor([1.0]), ta.tensor([1.1]))


def test_assert_close_none_numpy_and_scalar_types_as_torch():
    assert_close(None, None)
    with pytest.raises(AssertionError):
        assert_close(None, ta.tensor(1.0))
    assert_close(np.ones(2), np.ones(2))
    with pytest.raises(AssertionError, match="dtype"):
        assert_close(np.ones(2), np.ones(2, np.float32))
    with pytest.raises(AssertionError, match=r"\(d\)types do not match"):
        assert_close(1, 1.0)
    assert_close(1, 1.0, check_dtype=False)


# ---- scatter(value=..., reduce=...) leaves untouched elements alone ------------------------

@pytest.mark.parametrize("value", [math.inf, -math.inf, math.nan, 0.1, 1e30, -0.0])
@pytest.mark.parametrize("reduce", ["add", "multiply"])
@pytest.mark.parametrize("dtype", ["float32", "float16", "float64"])
def test_scatter_number_reduce_matches_torch(value, reduce, dtype):
    rng = np.random.default_rng(3)
    base = rng.standard_normal((4, 30)).astype(dtype)
    base[0, :3] = [-0.0, math.inf, math.nan]
    index = rng.integers(0, 30, (4, 20))
    try:
        theirs = torch.from_numpy(base).scatter(1, torch.from_numpy(index), value=value,
                                                reduce=reduce)
    except RuntimeError as error:         # 1e30 into float16: torch's overflow error
        with pytest.raises(RuntimeError, match=str(error)):
            ta.from_numpy(base).scatter(1, ta.from_numpy(index), value=value, reduce=reduce)
        with pytest.raises(RuntimeError, match=str(error)):
            ta.from_numpy(base).scatter(1, ta.from_numpy(index), value=value)
        return
    with np.errstate(all="ignore"):
        ours = ta.from_numpy(base).scatter(1, ta.from_numpy(index), value=value, reduce=reduce)
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
    np.testing.assert_array_equal(np.signbit(ours.numpy()), np.signbit(theirs.numpy()))


def test_scatter_number_reduce_integer_and_gradient():
    ours = ta.tensor([1, 2]).scatter(0, ta.tensor([0, 0]), value=2.5, reduce="add")
    theirs = torch.tensor([1, 2]).scatter(0, torch.tensor([0, 0]), value=2.5, reduce="add")
    assert ours.tolist() == theirs.tolist() and str(ours.dtype) == "int64"
    x = ta.tensor([[1.0, 2.0, 3.0]], requires_grad=True)
    x.scatter(1, ta.tensor([[1, 1]]), value=3.0, reduce="multiply").sum().backward()
    assert x.grad.tolist() == [[1.0, 9.0, 1.0]] and x.grad.dtype == ta.float32


# ---- profiler table(row_limit=-1) --------------------------------------------------------------

def test_profiler_row_limit_minus_one_keeps_every_row():
    from tinyattn.profiler import profile
    with profile() as prof:
        x = ta.randn(3, 3)
        ((x @ x).relu() + 1).sum()
    events = prof.key_averages()
    rows = lambda text: text.splitlines()[3:-2]  # noqa: E731 - the rows between the rules
    assert len(rows(events.table(row_limit=-1))) == len(events) >= 3
    assert len(rows(events.table(row_limit=2))) == 2
    assert len(rows(events.table(row_limit=0))) == 0
