"""float32 accuracy as torch's (issue 30), stream accuracy42: each case runs one op in float32
in tinyattn and in torch on the same float32 inputs and measures the normwise error
max |out32 - ref64| / max |ref64| against torch's float64 result on those inputs; tinyattn's
must be at most twice torch's (plus a floor of a quarter unit of float32 round-off). Each
case has a negative control: the float32 formula tinyattn used before (written here in NumPy)
is more than twice torch's on the same input, so the case can fail.

Found while bisecting d2l's ResNet18 (digits 96x96, batch 16) layer by layer: batch norm's
per-channel sums were float32 over N * H * W terms (torch's CPU kernel accumulates them in
double), and adaptive average pooling's backward multiplied by a rounded 1/3 twice.
"""
from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import tinyattn as ta  # noqa: E402
import tinyattn.functional as F  # noqa: E402

FLOOR = 2.0 ** -26


def _err(out, ref) -> float:
    out, ref = np.asarray(out, np.float64), np.asarray(ref, np.float64)
    return float(np.abs(out - ref).max() / np.abs(ref).max())


def _as_numpy(t):
    return t.detach().double().numpy() if isinstance(t, torch.Tensor) else \
        t.detach().numpy().astype(np.float64)


# --- batch norm (training): (64, 8, 8, 8), mean 5 -------------------------------------------

def _bn_inputs():
    rng = np.random.default_rng(0)
    x = (rng.standard_normal((64, 8, 8, 8)) + 5).astype(np.float32)
    g = rng.standard_normal(x.shape).astype(np.float32)
    return x, g


def _bn_run(lib, x, g, dtype):
    fn = torch.nn.functional.batch_norm if lib is torch else F.batch_norm
    X = lib.tensor(x).to(dtype).requires_grad_(True)
    W = lib.ones(x.shape[1], dtype=dtype, requires_grad=True)
    B = lib.zeros(x.shape[1], dtype=dtype, requires_grad=True)
    y = fn(X, None, None, W, B, training=True)
    y.backward(lib.tensor(g).to(dtype))
    return {"y": _as_numpy(y), "dx": _as_numpy(X.grad), "dw": _as_numpy(W.grad),
            "db": _as_numpy(B.grad)}


def _bn_naive_float32(x, g):
    """The former float32 formulas: statistics and sums in float32 over the axes (0, 2, 3)."""
    axes, n = (0, 2, 3), x.size // x.shape[1]
    mean = x.mean(axis=axes, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=axes, keepdims=True)
    rstd = 1 / np.sqrt(var + np.float32(1e-5))
    xhat = (x - mean) * rstd
    dx = n * g - g.sum(axis=axes, keepdims=True)
    dx -= xhat * (g * xhat).sum(axis=axes, keepdims=True)
    dx *= rstd / n
    return {"y": xhat, "dx": dx, "dw": (g * xhat).sum(axis=axes), "db": g.sum(axis=axes)}


@pytest.fixture(scope="module")
def bn_results():
    x, g = _bn_inputs()
    return (_bn_run(torch, x, g, torch.float64), _bn_run(torch, x, g, torch.float32),
            _bn_run(ta, x, g, ta.float32), _bn_naive_float32(x, g))


@pytest.mark.parametrize("part", ["y", "dx", "dw", "db"])
def test_batch_norm_float32_error_at_most_twice_torch(bn_results, part):
    ref, theirs, ours, _ = bn_results
    assert _err(ours[part], ref[part]) <= 2 * _err(theirs[part], ref[part]) + FLOOR


@pytest.mark.parametrize("part", ["y", "dw"])
def test_batch_norm_negative_control_float32_sums_fail(bn_results, part):
    ref, theirs, _, naive = bn_results
    assert _err(naive[part], ref[part]) > 2 * _err(theirs[part], ref[part]) + FLOOR


def test_batch_norm_running_stats_and_float64_unchanged():
    x, g = _bn_inputs()
    runs = []
    for lib, fn in ((torch, torch.nn.functional.batch_norm), (ta, F.batch_norm)):
        for dtype in (lib.float32, lib.float64):
            rm, rv = lib.zeros(8, dtype=dtype), lib.ones(8, dtype=dtype)
            fn(lib.tensor(x).to(dtype), rm, rv, training=True, momentum=0.3)
            runs.append((_as_numpy(rm), _as_numpy(rv)))
    (t32m, t32v), (t64m, t64v), (a32m, a32v), (a64m, a64v) = runs
    np.testing.assert_allclose(a64m, t64m, rtol=1e-12)
    np.testing.assert_allclose(a64v, t64v, rtol=1e-12)
    assert _err(a32m, t64m) <= 2 * _err(t32m, t64m) + FLOOR
    assert _err(a32v, t64v) <= 2 * _err(t32v, t64v) + FLOOR


# --- adaptive average pooling's backward: g / 9 ---------------------------------------------

def _pool_grad(lib, dtype, output_size):
    rng = np.random.default_rng(1)
    x = lib.tensor(rng.standard_normal((16, 64, 3, 3)).astype(np.float32)).to(dtype)
    x.requires_grad_(True)
    y = lib.nn.functional.adaptive_avg_pool2d(x, output_size)
    g = rng.standard_normal(tuple(y.shape)).astype(np.float32)
    y.backward(lib.tensor(g).to(dtype))
    return _as_numpy(x.grad), g


@pytest.mark.parametrize("output_size", [1, (1, 3)])
def test_adaptive_avg_pool_backward_float32_error_at_most_twice_torch(output_size):
    ref, g = _pool_grad(torch, torch.float64, output_size)
    theirs, _ = _pool_grad(torch, torch.float32, output_size)
    ours, _ = _pool_grad(ta, ta.float32, output_size)
    assert _err(ours, ref) <= 2 * _err(theirs, ref) + FLOOR
    if output_size == 1:    # negative control: times float32 1/3, twice (the former product)
        third = np.float32(1 / 3)
        naive = np.broadcast_to((g * third * third)[..., :1, :1], ref.shape)
        assert _err(naive, ref) > 2 * _err(theirs, ref) + FLOOR


# --- long reductions and scans along dim 0 (found by the op sweep at 10^5-10^6 elements) ---

def _lse_naive(x):
    m = x.max(0, keepdims=True)
    return (np.log(np.exp(x - m).sum(0, keepdims=True)) + m)[0]


# name -> (call on a library's module, input maker, the former float32 formula in NumPy)
LONG = {
    "nansum": (lambda T, x: T.nansum(x, 0),
               lambda r: (r.standard_normal((8192, 4)) + 1).astype(np.float32),
               lambda x: np.nansum(x, 0)),
    "nanmean": (lambda T, x: T.nanmean(x, 0),
                lambda r: (r.standard_normal((8192, 4)) + 1).astype(np.float32),
                lambda x: np.nansum(x, 0) / np.float32(x.shape[0])),
    "logsumexp": (lambda T, x: T.logsumexp(x, 0),
                  lambda r: (r.standard_normal((8192, 4)) * 3).astype(np.float32), _lse_naive),
    "logcumsumexp": (lambda T, x: T.logcumsumexp(x, 0),
                     lambda r: (r.standard_normal((2048, 2)) * 3).astype(np.float32),
                     lambda x: np.logaddexp.accumulate(x, 0)),
    "cumprod": (lambda T, x: T.cumprod(x, 0),
                lambda r: (1 + r.standard_normal((1024, 4)) * 0.01).astype(np.float32),
                lambda x: np.cumprod(x, 0)),
}


def _long_run(lib, name, x, dtype):
    call = LONG[name][0]
    t = lib.tensor(x).to(dtype).requires_grad_(True)
    out = call(lib, t)
    g = np.random.default_rng(2).standard_normal(tuple(out.shape)).astype(np.float32)
    out.backward(lib.tensor(g).to(dtype))
    return _as_numpy(out), _as_numpy(t.grad)


@pytest.mark.parametrize("name", list(LONG))
def test_long_reduction_float32_error_at_most_twice_torch(name):
    x = LONG[name][1](np.random.default_rng(0))
    ref = _long_run(torch, name, x, torch.float64)
    theirs = _long_run(torch, name, x, torch.float32)
    ours = _long_run(ta, name, x, ta.float32)
    for part in (0, 1):
        assert _err(ours[part], ref[part]) <= 2 * _err(theirs[part], ref[part]) + FLOOR, part
    # negative control: the former float32 formula, more than twice torch's error here
    naive = LONG[name][2](x)
    assert _err(naive, ref[0]) > 2 * _err(theirs[0], ref[0]) + FLOOR


def test_nansum_nanmean_still_skip_nans_and_keep_dtype():
    x = np.random.default_rng(3).standard_normal((300, 3)).astype(np.float32)
    x[::7, 1] = np.nan
    x[:, 2] = np.nan
    for op in ("nansum", "nanmean"):
        ours = getattr(ta, op)(ta.tensor(x), 0)
        theirs = getattr(torch, op)(torch.tensor(x), 0)
        assert ours.dtype == ta.float32
        np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-6, equal_nan=True)


# --- GRU's hidden bias gradient: a sum over every (step, sample) row ----------------------

def _gru_grads(lib, dtype, state):
    layer = lib.nn.GRU(8, 32, batch_first=True)
    layer.load_state_dict({k: lib.tensor(v) for k, v in state.items()})
    layer = layer.to(dtype)
    rng = np.random.default_rng(4)
    x = lib.tensor(rng.standard_normal((2048, 2, 8)).astype(np.float32) + 0.5).to(dtype)
    y, _ = layer(x)
    y.backward(lib.tensor(rng.standard_normal(tuple(y.shape)).astype(np.float32)).to(dtype))
    return {k: _as_numpy(p.grad) for k, p in layer.named_parameters()}


def test_gru_bias_gradient_float32_error_at_most_twice_torch():
    # the former float32 column sum over the 4,096 (sample, step) rows: 2.6x torch's error
    torch.manual_seed(0)
    state = {k: v.numpy().copy() for k, v in torch.nn.GRU(8, 32, batch_first=True)
             .state_dict().items()}
    ref = _gru_grads(torch, torch.float64, state)
    theirs = _gru_grads(torch, torch.float32, state)
    ours = _gru_grads(ta, ta.float32, state)
    for name in ("bias_hh_l0", "bias_ih_l0"):
        assert _err(ours[name], ref[name]) <= 2 * _err(theirs[name], ref[name]) + FLOOR, name

