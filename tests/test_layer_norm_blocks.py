"""layer norm's block-wise forward and backward (tinyattn/ops/norm.py: layer_norm_by_blocks,
layer_norm_backward_by_blocks) against the plain formulas the op runs for any other input
(a non-contiguous one here) and against torch: several blocks, every combination of weight
and bias, two normalised dims, the rows that are hard on a variance (constant, far from 0,
NaN, inf), accuracy against float64, the half dtypes and the rows too long for the blocks."""
from __future__ import annotations

import importlib

import numpy as np
import pytest

import tinyattn as ta
import tinyattn.functional as F
from tinyattn.ops import plain
from tinyattn.ops.norm import _by_blocks
from tinyattn.ops.row_blocks import BLAS_ROW_SUM

RNG = np.random.default_rng(381)
row_blocks = importlib.import_module("tinyattn.ops.row_blocks")


@pytest.fixture(autouse=True)
def _blocks_for_small_arrays_too(monkeypatch):
    """The blocks run from MIN_VALUES values on; these tests take them at every size."""
    monkeypatch.setattr(row_blocks, "MIN_VALUES", 0)


def _torch():
    return pytest.importorskip("torch", reason="torch is the oracle of these checks")


def _inputs(shape, normalized, dtype, edge_rows=True):
    x = RNG.standard_normal(shape) * 2 + 0.5
    if edge_rows:
        x[0] = 3.0                                   # constant rows: variance 0
        x[1] += 1e4                                  # mean far above the spread
        x[2] *= 1e-6                                 # spread far below eps
    g = RNG.standard_normal(shape)
    w, b = RNG.standard_normal(normalized), RNG.standard_normal(normalized)
    return x.astype(dtype), g.astype(dtype), w.astype(dtype), b.astype(dtype)


def _run(x, g, w, b, normalized, contiguous):
    """(out, dx, dw, db) of tinyattn's layer_norm; x as given, or a non-contiguous copy of
    it (the plain path)."""
    if not contiguous:
        x = np.asfortranarray(x) if x.ndim > 1 else x
        g = np.asfortranarray(g) if g.ndim > 1 else g
    X = ta.tensor(x, requires_grad=True)
    W = None if w is None else ta.tensor(w, requires_grad=True)
    B = None if b is None else ta.tensor(b, requires_grad=True)
    assert _by_blocks(X.detach().numpy(), tuple(range(x.ndim - len(normalized), x.ndim))) \
        == contiguous
    out = F.layer_norm(X, normalized, W, B, eps=1e-5)
    out.backward(ta.tensor(g))
    return [None if t is None else (t.numpy() if t is out else t.grad.numpy())
            for t in (out, X, W, B)]


def _exact(x, g, w, b, n_axes):
    """(out, dx, dw, db) by the plain formulas (tinyattn/ops/plain.py) in long double, and
    each row's condition 1 + |mu| rstd, (R, 1) (rstd capped where the spread is below eps)."""
    rows = x.reshape(-1, int(np.prod(x.shape[x.ndim - n_axes:]))).astype(np.longdouble)
    g_rows = g.reshape(rows.shape).astype(np.longdouble)
    w_row = None if w is None else w.reshape(-1).astype(np.longdouble)
    mu = rows.mean(-1, keepdims=True)
    rstd = 1 / np.sqrt(((rows - mu) ** 2).mean(-1, keepdims=True) + 1e-5)
    xhat = (rows - mu) * rstd
    out = xhat * (1 if w is None else w_row) + (0 if b is None else b.reshape(-1))
    dx, dw, db = plain.layer_norm_backward(g_rows, xhat, rstd, w_row)
    outputs = (out.reshape(x.shape), dx.reshape(x.shape),
               None if w is None else dw.reshape(w.shape),
               None if b is None else db.reshape(b.shape))
    return outputs, (1 + np.abs(mu) * np.minimum(rstd, 1e3)).astype(np.float64)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("affine", ["both", "weight", "bias", "none"])
@pytest.mark.parametrize("normalized", [(7,), (3, 5)])
def test_blocks_equal_the_plain_formulas(dtype, affine, normalized, monkeypatch):
    monkeypatch.setattr(row_blocks, "BLOCK_VALUES", 4 * int(np.prod(normalized)))  # 4 rows
    x, g, w, b = _inputs((6, 5) + normalized, normalized, dtype)
    w = w if affine in ("both", "weight") else None
    b = b if affine in ("both", "bias") else None
    fast = _run(x, g, w, b, normalized, contiguous=True)
    plain = _run(x, g, w, b, normalized, contiguous=False)
    exact, condition = _exact(x, g, w, b, len(normalized))
    # Each path against the long-double result, within a few roundings times the row's
    # condition 1 + |mu| / sigma (the row whose mean is 1e4 times its spread rounds x - mu
    # at 1e4 eps, in either path); dw and db sum the rows, so their bound sums them too.
    eps, rows = np.finfo(dtype).eps, condition.shape[0]
    for name, got, expected, ref in zip(("out", "dx", "dw", "db"), fast, plain, exact):
        if expected is None:
            assert got is None, name
            continue
        scale = float(np.abs(ref).max())
        if name in ("out", "dx"):
            bound = 32 * eps * scale * condition                     # (R, 1), per row
            for path in (got, expected):
                assert (np.abs(path - ref).reshape(rows, -1) <= bound).all(), name
        else:
            bound = 32 * eps * scale * rows * condition.max()
            assert np.abs(got - ref).max() <= bound and np.abs(expected - ref).max() <= bound
        if dtype == "float64":
            assert np.abs(got - expected).max() <= 1e-6 * scale, name


def test_matches_torch_and_is_as_accurate_against_float64():
    """float32 against torch's float64 on the same inputs, normwise: the blocks within twice
    torch's own float32 error (or a few roundings, where torch's is tiny)."""
    torch = _torch()
    shape, normalized = (2048, 512), (512,)
    x, g, w, b = _inputs(shape, normalized, "float32", edge_rows=False)
    ours = _run(x, g, w, b, normalized, contiguous=True)

    def theirs(dtype):
        X = torch.tensor(x, dtype=dtype, requires_grad=True)
        W = torch.tensor(w, dtype=dtype, requires_grad=True)
        B = torch.tensor(b, dtype=dtype, requires_grad=True)
        out = torch.nn.functional.layer_norm(X, normalized, W, B, eps=1e-5)
        out.backward(torch.tensor(g, dtype=dtype))
        return [t.detach().double().numpy() for t in (out, X.grad, W.grad, B.grad)]

    exact, torch32 = theirs(torch.float64), theirs(torch.float32)
    for name, got, ref, t32 in zip(("out", "dx", "dw", "db"), ours, exact, torch32):
        scale = np.abs(ref).max()
        error, torch_error = np.abs(got - ref).max() / scale, np.abs(t32 - ref).max() / scale
        assert error <= max(2 * torch_error, 4 * np.finfo(np.float32).eps), name


def test_edge_rows_as_torch():
    torch = _torch()
    x, g, w, b = _inputs((6, 9), (9,), "float64")
    x[3, 2] = np.nan
    x[4, 0] = np.inf
    fast = _run(x, g, w, b, (9,), contiguous=True)
    X = torch.tensor(x, requires_grad=True)
    W, B = torch.tensor(w, requires_grad=True), torch.tensor(b, requires_grad=True)
    out = torch.nn.functional.layer_norm(X, (9,), W, B)
    out.backward(torch.tensor(g))
    for got, expected in zip(fast, (out, X.grad, W.grad, B.grad)):
        torch.testing.assert_close(got, expected.detach().numpy(), equal_nan=True,
                                   rtol=1e-7, atol=1e-7)
    assert np.isnan(fast[0][3]).all() and np.isfinite(fast[0][5]).all()


def test_only_the_weight_needs_a_gradient():
    x, g, w, b = _inputs((300, 16), (16,), "float64")
    W = ta.tensor(w, requires_grad=True)
    F.layer_norm(ta.tensor(x), (16,), W, ta.tensor(b)).backward(ta.tensor(g))
    X = ta.tensor(np.asfortranarray(x))
    W2 = ta.tensor(w, requires_grad=True)
    F.layer_norm(X, (16,), W2, ta.tensor(b)).backward(ta.tensor(np.asfortranarray(g)))
    scale = np.abs(W2.grad.numpy()).max()
    np.testing.assert_allclose(W.grad.numpy(), W2.grad.numpy(), rtol=1e-10, atol=1e-12 * scale)


def test_small_arrays_long_rows_and_half_dtypes_keep_the_plain_path(monkeypatch):
    torch = _torch()
    monkeypatch.setattr(row_blocks, "MIN_VALUES", 1 << 14)
    assert not _by_blocks(np.zeros((15, 1024), np.float32), (1,))
    assert _by_blocks(np.zeros((16, 1024), np.float32), (1,))
    monkeypatch.setattr(row_blocks, "MIN_VALUES", 0)
    long_row = np.zeros((2, BLAS_ROW_SUM + 1), np.float32)
    assert not _by_blocks(long_row, (1,))
    assert _by_blocks(long_row[:, 1:], (1,)) is False          # a strided view: plain
    assert _by_blocks(np.zeros((2, BLAS_ROW_SUM), np.float32), (1,))
    for dtype in ("float16", "bfloat16"):
        x = ta.randn(12, 10).to(dtype)
        out = F.layer_norm(x, (10,))
        expected = torch.nn.functional.layer_norm(
            torch.tensor(x.float().numpy()).to(getattr(torch, dtype)), (10,))
        assert str(out.dtype).endswith(dtype)
        torch.testing.assert_close(out.float().numpy(), expected.float().numpy())


def test_negative_control_a_wrong_eps_is_seen():
    x, g, w, b = _inputs((8, 7), (7,), "float64")
    fast = _run(x, g, w, b, (7,), contiguous=True)[0]
    other = F.layer_norm(ta.tensor(np.asfortranarray(x)), (7,), ta.tensor(w), ta.tensor(b),
                         eps=1e-3).numpy()
    assert np.abs(fast - other).max() > 1e-6


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_row_scale_is_the_outer_product_bit_for_bit(dtype):
    """RowScale (norm.py) writes rstd_i w_j with a (b, 2) @ (2, N) BLAS product whose second
    term is 0: each entry must be the product rounded once, as NumPy's outer product gives
    it, also for inf, NaN and subnormals, and for a block shorter than the buffers (the last
    block of an array). One documented exception: BLAS sums from +0, so a product -0 comes
    out +0 (docs/derivations.md#layer-norm)."""
    from tinyattn.ops.norm import RowScale
    w = RNG.standard_normal(37).astype(dtype)
    w[:4] = [np.inf, -0.0, np.finfo(dtype).tiny / 8, np.nan]
    r = (RNG.random(11) + 0.5).astype(dtype)
    r[0] = 1e30 if dtype == "float32" else 1e300        # overflows against w's large values
    scale = RowScale(w, rows=16)
    for n in (11, 5):
        got = scale.outer(r[:n])
        want = np.multiply.outer(r[:n], w) + np.zeros((), dtype)   # -0 + 0 is +0
        assert got.shape == (n, 37) and got.dtype == dtype
        np.testing.assert_array_equal(got, want)
        assert np.array_equal(np.signbit(got), np.signbit(want))
        assert not np.signbit(got[:, 1]).any()                     # w = -0: +0, not -0
    # negative control: the other order of rounding, (c r) w against c (r w), is not
    # bit-identical, so a comparison of the layer norm paths needs a tolerance
    c = RNG.standard_normal((11, 37)).astype(dtype)
    assert not np.array_equal((c * r[:, None]) * w, c * scale.outer(r))
