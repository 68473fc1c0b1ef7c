"""Which of equal values torch's CPU sort, argsort, topk, kthvalue, median and nanmedian
return (ops/tie_order.py replays std::sort, std::nth_element, std::partial_sort and torch's
quickselect): indices against torch on random small-integer rows of many sizes (around the
16-value insertion-sort threshold, past 64 k where topk switches to partial_sort), with NaN,
in every dtype, along inner and outer dims; the gradient goes to the returned index. Negative
controls: the stable order differs from torch's on these rows, so the tests are not vacuous."""
import numpy as np
import pytest

import tinyattn as ta
from tinyattn.ops.tie_order import torch_cpu_kth, torch_cpu_order, torch_cpu_topk

torch = pytest.importorskip("torch", reason="torch is the oracle for the order of ties")

SIZES = (2, 3, 5, 15, 16, 17, 31, 33, 64, 65, 129, 700)
DTYPES = ("float32", "float64", "float16", "bfloat16", "int64", "int32", "int16", "int8",
          "uint8")


def _rows(n, count=6, seed=0, nan=True):
    """``count`` rows of n small integers (many ties), every other one with some NaN"""
    rng = np.random.default_rng(seed + n)
    rows = rng.integers(0, max(2, n // 3), size=(count, n)).astype(np.float32)
    if nan:
        rows[::2][rng.random((len(rows[::2]), n)) < 0.2] = np.nan
    return rows


def _both(array, dtype):
    theirs = torch.from_numpy(array).to(getattr(torch, dtype))
    return ta.tensor(theirs.float().numpy(), dtype=getattr(ta, dtype)), theirs


def _same(ours, theirs):
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


@pytest.mark.parametrize("n", SIZES)
def test_sort_argsort_topk_kthvalue_median_indices_match_torch(n):
    x = torch.from_numpy(_rows(n))
    a = ta.tensor(x.numpy())
    for descending in (False, True):
        _same(ta.sort(a, descending=descending).indices, torch.sort(x, descending=descending)
              .indices)
        _same(ta.argsort(a, descending=descending), torch.argsort(x, descending=descending))
        _same(ta.sort(a, descending=descending, stable=True).indices,
              torch.sort(x, descending=descending, stable=True).indices)
    for k in sorted({min(k, n) for k in (1, 2, 3, max(1, n // 2), n)}):
        for largest in (True, False):
            for sorted_ in (True, False):
                _same(ta.topk(a, k, largest=largest, sorted=sorted_).indices,
                      torch.topk(x, k, largest=largest, sorted=sorted_).indices)
        _same(ta.kthvalue(a, k).indices, torch.kthvalue(x, k).indices)
    _same(ta.median(a, -1).indices, torch.median(x, -1).indices)
    _same(ta.nanmedian(a, -1).indices, torch.nanmedian(x, -1).indices)


@pytest.mark.parametrize("dtype", DTYPES)
def test_every_dtype_and_an_outer_dim(dtype):
    array = _rows(40, count=3, seed=7, nan=dtype.startswith(("float", "bfloat")))
    ours, theirs = _both(np.ascontiguousarray(array.T), dtype)     # (40, 3): along dim 0
    _same(ta.sort(ours, 0).indices, torch.sort(theirs, 0).indices)
    _same(ta.sort(ours, 0, descending=True).values.float(),
          torch.sort(theirs, 0, descending=True).values.float())
    _same(ta.topk(ours, 3, 0).indices, torch.topk(theirs, 3, 0).indices)
    _same(ta.kthvalue(ours, 5, 0).indices, torch.kthvalue(theirs, 5, 0).indices)
    _same(ta.median(ours, 0).indices, torch.median(theirs, 0).indices)


def test_bool_sort_and_empty_slices():
    flags = np.random.default_rng(3).random((2, 50)) < 0.5
    _same(ta.sort(ta.tensor(flags)).indices, torch.sort(torch.from_numpy(flags)).indices)
    for ours, theirs in ((ta.zeros(0), torch.zeros(0)), (ta.zeros(0, 3), torch.zeros(0, 3))):
        _same(ta.sort(ours).indices, torch.sort(theirs).indices)
        _same(ta.argsort(ours, 0), torch.argsort(theirs, 0))
        _same(ta.topk(ours, 0).indices, torch.topk(theirs, 0).indices)


def test_gradients_reach_torchs_element():
    data = _rows(33, count=2, seed=11, nan=False).astype(np.float64)
    g = np.random.default_rng(0).standard_normal((2, 5))
    cases = (lambda t: t.topk(5).values, lambda t: t.sort().values[:, :5],
             lambda t: t.kthvalue(9).values[:, None].expand(2, 5),
             lambda t: t.median(1).values[:, None].expand(2, 5))
    for case in cases:
        ours, theirs = ta.tensor(data, requires_grad=True), torch.tensor(data,
                                                                         requires_grad=True)
        (case(ours) * ta.tensor(g)).sum().backward()
        (case(theirs) * torch.tensor(g)).sum().backward()
        np.testing.assert_allclose(ours.grad.numpy(), theirs.grad.numpy(), rtol=1e-12)


def test_median_takes_the_first_nan_and_nanmedian_all_shares_the_gradient():
    row = [1.0, float("nan"), 2.0, float("nan"), 0.0]
    for dtype in ("float32", "bfloat16"):
        ours, theirs = _both(np.asarray(row, np.float32), dtype)
        assert ta.median(ours, 0).indices.item() == torch.median(theirs, 0).indices.item() == 1
    values = [2.0, 1.0, 2.0, 0.0, 2.0, 2.0, float("nan")]
    ours, theirs = ta.tensor(values, requires_grad=True), torch.tensor(values,
                                                                       requires_grad=True)
    ta.nanmedian(ours).backward()
    torch.nanmedian(theirs).backward()                  # shared by the four 2s
    _same(ours.grad, theirs.grad)


def test_negative_control_the_stable_order_differs_from_torchs():
    rows = _rows(65, count=4, nan=False)
    x = torch.from_numpy(rows)
    stable = np.argsort(rows, axis=-1, kind="stable")
    assert not np.array_equal(stable, torch.sort(x).indices.numpy())
    assert not np.array_equal(stable[:, :3], torch.topk(x, 3, largest=False).indices.numpy())
    assert not np.array_equal(stable[:, 20], torch.kthvalue(x, 21).indices.numpy())
    # and the replays are what make the difference
    _same(torch.from_numpy(torch_cpu_order(rows)), torch.sort(x).indices)
    _same(torch.from_numpy(torch_cpu_topk(rows, 3, False, True)),
          torch.topk(x, 3, largest=False).indices)
    _same(torch.from_numpy(torch_cpu_kth(rows, 20)), torch.kthvalue(x, 21).indices)
