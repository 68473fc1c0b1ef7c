"""softmax's block-wise forward and backward (tinyattn/ops/softmax.py: softmax_by_blocks,
softmax_backward_by_blocks) against the plain formulas of tinyattn/ops/plain.py and torch:
random rows over several blocks, every kind of row that sends a block back to the shifted
formula (masked, fully masked, +inf, NaN, very large or very negative logits), accuracy
against float64, and the dtypes and layouts that keep the plain path."""
from __future__ import annotations

import importlib

import numpy as np
import pytest

import tinyattn as ta
import tinyattn.functional as F
from tinyattn.ops import plain
from tinyattn.ops.row_blocks import BLOCK_VALUES, by_row_blocks
from tinyattn.ops.softmax import (softmax_backward_by_blocks, softmax_by_blocks,
                                  softmax_empty_rows_zero, torch_softmax)

RNG = np.random.default_rng(38)
row_blocks = importlib.import_module("tinyattn.ops.row_blocks")
INF = float("inf")


@pytest.fixture(autouse=True)
def _blocks_for_small_arrays_too(monkeypatch):
    """The blocks run from MIN_VALUES values on; these tests take them at every size."""
    monkeypatch.setattr(row_blocks, "MIN_VALUES", 0)


def _torch():
    return pytest.importorskip("torch", reason="torch is the oracle of these checks")


def _exact(x: np.ndarray) -> np.ndarray:
    """softmax in float64 from the float64 copy of x (the reference for accuracy)."""
    x = x.astype(np.float64)
    with np.errstate(invalid="ignore"):
        e = np.exp(x - x.max(-1, keepdims=True))
        return e / e.sum(-1, keepdims=True)


def _edge_rows(n: int, dtype) -> np.ndarray:
    """One row of each kind the fast path must hand back to the shifted formula, and a few
    it must keep."""
    rows = RNG.standard_normal((12, n)) * 3
    rows[0] = -INF                                   # fully masked: NaN, or attention's 0
    rows[1, ::2] = -INF                              # partly masked
    rows[2, 3] = INF                                 # +inf: NaN everywhere, as torch
    rows[3, 1] = np.nan
    rows[4] += 1e4                                   # exp overflows without the shift
    rows[5] -= 1e3                                   # every exp underflows to 0
    rows[6] = rows[6] - 60                           # sum of exps far below 1
    rows[7] = rows[7] * 0 + 85.0                     # a near-overflow constant row
    rows[8] = [1e4, -1e4] + [0.0] * (n - 2)          # the example of docs/derivations.md
    return rows.astype(dtype)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("empty_rows_zero", [False, True])
def test_forward_equals_the_shifted_formula_on_edge_rows(dtype, empty_rows_zero):
    n = 64
    x = np.concatenate([RNG.standard_normal((3 * BLOCK_VALUES // n, n)).astype(dtype),
                        _edge_rows(n, dtype)])        # several blocks, the last one mixed
    assert by_row_blocks(x, 1)
    with np.errstate(over="ignore", invalid="ignore"):
        assert not np.isfinite(np.exp(x[-8]).sum())  # the row that needs the shift
    got = softmax_by_blocks(x, empty_rows_zero)
    expected = plain.softmax(x) if empty_rows_zero else torch_softmax(x, -1)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(expected))
    np.testing.assert_allclose(got, expected, rtol=8 * np.finfo(dtype).eps, atol=0)
    if empty_rows_zero:
        np.testing.assert_array_equal(got[-12], 0.0)
    else:
        assert np.isnan(got[-12]).all() and np.isnan(got[-10]).all()


@pytest.mark.parametrize("n", [1, 5, 256, 1024, 1025, 4096, 70_000])
def test_forward_float32_as_accurate_as_the_shifted_formula(n):
    """Without the shift nothing rounds x - max, so the fast rows are at least as close to
    the float64 result as the shifted formula's (checked, with a margin of one rounding)."""
    x = (RNG.standard_normal((max(2, 2 * BLOCK_VALUES // n), n)) * 4).astype(np.float32)
    exact = _exact(x)
    fast = np.abs(softmax_by_blocks(x) - exact) / exact
    shifted = np.abs(torch_softmax(x, -1) - exact) / exact
    assert fast.max() <= shifted.max() + np.finfo(np.float32).eps


def test_matches_torch_forward_and_backward():
    torch = _torch()
    for dtype in ("float32", "float64"):
        x = np.concatenate([RNG.standard_normal((2000, 33)) * 5, _edge_rows(33, "float64")])
        x = x.astype(dtype)
        g = RNG.standard_normal(x.shape).astype(dtype)
        X = ta.tensor(x, requires_grad=True)
        out = F.softmax(X, dim=-1)
        out.backward(ta.tensor(g))
        xt = torch.tensor(x, requires_grad=True)
        out_t = torch.softmax(xt, dim=-1)
        out_t.backward(torch.tensor(g))
        torch.testing.assert_close(out.numpy(), out_t.detach().numpy(), equal_nan=True)
        torch.testing.assert_close(X.grad.numpy(), xt.grad.numpy(), equal_nan=True)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_half_dtypes_keep_their_path(dtype):
    torch = _torch()
    x = ta.randn(40, 17).to(dtype)
    x.requires_grad_(True)
    assert not by_row_blocks(x.detach().numpy(), 1)
    out = F.softmax(x, dim=-1)
    out.sum().backward()
    xt = torch.tensor(x.detach().float().numpy()).to(getattr(torch, dtype)).requires_grad_()
    expected = torch.softmax(xt, dim=-1)
    expected.sum().backward()
    assert str(out.dtype).endswith(dtype) and str(x.grad.dtype).endswith(dtype)
    torch.testing.assert_close(out.float().numpy(), expected.float().detach().numpy())


@pytest.mark.parametrize("layout", ["transposed", "dim 0", "dim 1 of 3"])
def test_other_layouts_take_the_shifted_path_with_the_same_values(layout):
    x = RNG.standard_normal((6, 5, 7))
    view, dim = {"transposed": (x.transpose(0, 2, 1), -1), "dim 0": (x, 0),
                 "dim 1 of 3": (x, 1)}[layout]
    got = F.softmax(ta.tensor(view), dim=dim).numpy()
    np.testing.assert_allclose(got, np.moveaxis(plain.softmax(np.moveaxis(view, dim, -1)),
                                                -1, dim), rtol=1e-13)


@pytest.mark.parametrize("n", [30, 9000])
def test_backward_by_blocks_is_the_formula(n):
    y = softmax_by_blocks(RNG.standard_normal((150_000 // n, n)))
    g = RNG.standard_normal(y.shape)
    np.testing.assert_allclose(softmax_backward_by_blocks(g, y),
                               plain.softmax_backward(g, y), rtol=1e-12, atol=1e-15)


def test_attention_convention_gradient_of_a_fully_masked_row_is_zero():
    x = RNG.standard_normal((4, 9)).astype(np.float32)
    x[2] = -INF
    X = ta.tensor(x, requires_grad=True)
    out = softmax_empty_rows_zero(X, -1)
    out.backward(ta.tensor(RNG.standard_normal(x.shape).astype(np.float32)))
    np.testing.assert_array_equal(out.numpy()[2], 0.0)
    np.testing.assert_array_equal(X.grad.numpy()[2], 0.0)
    assert np.isfinite(X.grad.numpy()).all()
