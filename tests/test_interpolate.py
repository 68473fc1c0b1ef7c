"""F.interpolate, nn.Upsample and friends against torch (issue 30, stream mods30): every
mode over many sizes (up, down, non-integer scales, align_corners, recompute_scale_factor),
values and gradients in float64, values in float32, module printouts and errors. Negative
controls show the comparison can fail."""
import warnings

import ml_dtypes
import numpy as np
import pytest

import tinyattn as ta
import tinyattn.functional as F
from tinyattn import nn

torch = pytest.importorskip("torch", reason="torch is the reference for these tests")
TF = torch.nn.functional
_TORCH_DTYPES = {np.dtype(np.float64): torch.float64, np.dtype(np.float32): torch.float32,
                 np.dtype(np.float16): torch.float16,
                 np.dtype(ml_dtypes.bfloat16): torch.bfloat16}

MODES = [("nearest", 3), ("nearest", 4), ("nearest", 5), ("nearest-exact", 4),
         ("nearest-exact", 3), ("linear", 3), ("bilinear", 4), ("bicubic", 4),
         ("trilinear", 5), ("area", 3), ("area", 4)]
SPECS = [dict(size=1), dict(size=4), dict(size=7), dict(size=16), dict(scale_factor=2),
         dict(scale_factor=0.5), dict(scale_factor=1.7), dict(scale_factor=0.33),
         dict(scale_factor=2.5, recompute_scale_factor=True), dict(scale_factor=3)]


def _compare(x, tol, grads=True, **kwargs):
    xt, xo = torch.tensor(x, requires_grad=grads), ta.tensor(x, requires_grad=grads)
    want, got = TF.interpolate(xt, **kwargs), F.interpolate(xo, **kwargs)
    assert tuple(got.shape) == tuple(want.shape) and got.dtype == x.dtype
    np.testing.assert_allclose(got.numpy(), want.detach().numpy(), **tol)
    if grads and want.numel():
        g = np.random.default_rng(1).standard_normal(tuple(want.shape))
        want.backward(torch.tensor(g))
        got.backward(ta.tensor(g))
        np.testing.assert_allclose(xo.grad.numpy(), xt.grad.numpy(), **tol)


@pytest.mark.parametrize("mode,ndim", MODES)
@pytest.mark.parametrize("in_size", [1, 3, 5, 8])
def test_interpolate_agrees_with_torch(mode, ndim, in_size):
    rng = np.random.default_rng(in_size)
    corners = [None] if mode in ("nearest", "nearest-exact", "area") else [False, True]
    for spec in SPECS:
        for align_corners in corners:
            x = rng.standard_normal((2, 3) + (in_size,) * (ndim - 2))
            kwargs = dict(spec, mode=mode, align_corners=align_corners)
            try:
                TF.interpolate(torch.tensor(x), **kwargs)
            except RuntimeError:               # a zero-size output: both refuse
                with pytest.raises(RuntimeError, match="greater than 0"):
                    F.interpolate(ta.tensor(x), **kwargs)
                continue
            _compare(x, dict(rtol=1e-12, atol=1e-12), **kwargs)
            _compare(x.astype(np.float32), dict(rtol=1e-5, atol=1e-5), grads=False, **kwargs)


def test_large_downsampling_float32_as_torch():
    """torch's float32 source index is one fused multiply-add; a separately rounded product
    would be off by 6e-5 here."""
    x = np.random.default_rng(0).standard_normal((1, 2, 345, 456)).astype(np.float32)
    for mode in ("bilinear", "bicubic"):
        _compare(x, dict(rtol=1e-5, atol=1e-5), grads=False, size=(270, 270), mode=mode)


def test_negative_control_align_corners_matters():
    x = np.random.default_rng(0).standard_normal((1, 1, 4, 4))
    want = TF.interpolate(torch.tensor(x), size=(7, 7), mode="bilinear", align_corners=True)
    got = F.interpolate(ta.tensor(x), size=(7, 7), mode="bilinear", align_corners=False)
    assert not np.allclose(got.numpy(), want.numpy())


def test_upsample_modules_print_and_compute_as_torch():
    x = np.random.default_rng(0).standard_normal((2, 3, 4, 5))
    pairs = [(nn.Upsample(scale_factor=2, mode="bilinear"),
              torch.nn.Upsample(scale_factor=2, mode="bilinear")),
             (nn.Upsample(size=(3, 7)), torch.nn.Upsample(size=(3, 7))),
             (nn.UpsamplingNearest2d(scale_factor=3), torch.nn.UpsamplingNearest2d(scale_factor=3)),
             (nn.UpsamplingBilinear2d(size=6), torch.nn.UpsamplingBilinear2d(size=6))]
    for ours, theirs in pairs:
        assert repr(ours) == repr(theirs)
        np.testing.assert_allclose(ours(ta.tensor(x)).numpy(), theirs(torch.tensor(x)).numpy(),
                                   rtol=1e-12, atol=1e-12)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        np.testing.assert_allclose(F.upsample_bilinear(ta.tensor(x), scale_factor=2).numpy(),
                                   TF.upsample_bilinear(torch.tensor(x), scale_factor=2).numpy(),
                                   rtol=1e-12)
        np.testing.assert_allclose(F.upsample_nearest(ta.tensor(x), size=9).numpy(),
                                   TF.upsample_nearest(torch.tensor(x), size=9).numpy())


def test_integer_nearest_keeps_the_dtype():
    x = np.arange(24, dtype=np.uint8).reshape(1, 2, 3, 4)
    got = F.interpolate(ta.tensor(x), scale_factor=1.5)
    want = TF.interpolate(torch.tensor(x), scale_factor=1.5)
    assert got.dtype == np.uint8
    np.testing.assert_array_equal(got.numpy(), want.numpy())


@pytest.mark.parametrize("kwargs,error,message", [
    (dict(size=4, scale_factor=2), ValueError, "only one of size or scale_factor"),
    (dict(), ValueError, "either size or scale_factor"),
    (dict(size=4, align_corners=True), ValueError, "align_corners option can only be set"),
    (dict(size=4, mode="linear"), NotImplementedError, "Got 4D input, but linear mode needs 3D"),
    (dict(size=(4, 4, 4)), ValueError, "same number of spatial dimensions"),
    (dict(size=4, recompute_scale_factor=True), ValueError, "not meaningful"),
    (dict(size=4, mode="bilinear", antialias=True, dtype=np.float16), NotImplementedError,
     "not implemented for 'Half'"),
    (dict(size=4, mode="bicubic", antialias=True, dtype=ml_dtypes.bfloat16),
     NotImplementedError, "not implemented for 'BFloat16'"),
    (dict(size=(4, 4, 4), mode="trilinear", antialias=True), ValueError, "Anti-alias"),
    (dict(size=4, mode="cubic"), NotImplementedError, "Input Error"),
])
def test_errors_as_torch(kwargs, error, message):
    dtype = kwargs.pop("dtype", np.float64)
    x = np.zeros((1, 1, 3, 3) if kwargs.get("mode") != "trilinear" else (1, 1, 3, 3, 3))
    with pytest.raises(error, match=message):
        F.interpolate(ta.tensor(x).to(dtype), **kwargs)
    with pytest.raises(error):
        TF.interpolate(torch.tensor(x).to(_TORCH_DTYPES[np.dtype(dtype)]), **kwargs)


@pytest.mark.parametrize("mode", ["bilinear", "bicubic"])
def test_antialias_agrees_with_torch(mode):
    """antialias=True: the filter widened by the scale when downsampling, weights summing to
    one per output; values and gradients (the transposed weights) in float64, values in
    float32, up and down, sizes and scale factors, align_corners both."""
    rng = np.random.default_rng(3)
    specs = [dict(size=(3, 4)), dict(size=(13, 2)), dict(size=1), dict(scale_factor=0.3),
             dict(scale_factor=(1.7, 0.45)), dict(scale_factor=0.5, recompute_scale_factor=True)]
    for shape in [(2, 3, 10, 7), (1, 2, 5, 9), (1, 1, 2, 6)]:
        for spec in specs:
            for align_corners in (False, True):
                x = rng.standard_normal(shape)
                kwargs = dict(spec, mode=mode, align_corners=align_corners, antialias=True)
                try:
                    TF.interpolate(torch.tensor(x), **kwargs)
                except RuntimeError:                   # a zero-size output: both refuse
                    with pytest.raises(RuntimeError, match="greater than 0"):
                        F.interpolate(ta.tensor(x), **kwargs)
                    continue
                _compare(x, dict(rtol=1e-12, atol=1e-12), **kwargs)
                _compare(x.astype(np.float32), dict(rtol=1e-5, atol=1e-5), grads=False,
                         **kwargs)


def test_antialias_negative_control():
    """downsampling with and without antialias differ (the comparison above can fail)"""
    x = np.random.default_rng(0).standard_normal((1, 1, 12, 12))
    want = TF.interpolate(torch.tensor(x), size=(3, 3), mode="bilinear", antialias=True)
    got = F.interpolate(ta.tensor(x), size=(3, 3), mode="bilinear")
    assert not np.allclose(got.numpy(), want.numpy(), atol=1e-3)


@pytest.mark.parametrize("dtype", [np.float16, ml_dtypes.bfloat16])
@pytest.mark.parametrize("mode,ndim", [("linear", 3), ("bilinear", 4), ("bicubic", 4),
                                       ("trilinear", 5), ("area", 3), ("area", 4)])
def test_half_bit_for_bit_as_torch(dtype, mode, ndim):
    """float16/bfloat16: torch's CPU kernels store linear, trilinear and bicubic weights in
    the input's dtype (1 - l from the rounded l; the cubic polynomials with fused
    multiply-adds) and sum in float32, rounding once; bilinear keeps float32 weights. Counted
    over many sizes: at most 1 element in 400 differs (by one unit in the last place: torch
    fuses its float32 multiply-adds in an order tinyattn's matrix products do not follow,
    e.g. bilinear float16 fma(x1, l1, x0 l0); without the rounding rules above about 1 in 4
    differs)."""
    rng = np.random.default_rng(7)
    total = wrong = 0
    corners = [None] if mode == "area" else [False, True]
    for in_size in (3, 5, 8):
        for spec in [dict(size=4), dict(size=7), dict(size=16), dict(scale_factor=1.7),
                     dict(scale_factor=0.5), dict(scale_factor=2.5, recompute_scale_factor=True)]:
            for align_corners in corners:
                x = (3 * rng.standard_normal((2, 3) + (in_size,) * (ndim - 2))).astype(dtype)
                kwargs = dict(spec, mode=mode, align_corners=align_corners)
                want = TF.interpolate(torch.tensor(x.astype(np.float32)).to(
                    _TORCH_DTYPES[np.dtype(dtype)]), **kwargs).float().numpy()
                got = F.interpolate(ta.tensor(x), **kwargs)
                assert got.dtype == np.dtype(dtype)
                total += want.size
                wrong += int((got.numpy().astype(np.float32) != want).sum())
    assert total > 500 and wrong <= total // 400, (wrong, total)


@pytest.mark.parametrize("mode", ["bilinear", "bicubic"])
@pytest.mark.parametrize("antialias", [False, True])
def test_uint8_bit_for_bit_as_torch(mode, antialias):
    """uint8: torch resamples the width, then the height, in integers (fixed-point weights,
    a rounding shift, clamped to [0, 255] after each pass; bicubic overshoots are clamped
    in between); every element equal over sizes, scale factors and align_corners"""
    rng = np.random.default_rng(5)
    for align_corners in (False, True):
        for shape in [(2, 3, 4, 4), (1, 3, 30, 40), (2, 1, 17, 13), (1, 2, 6, 1)]:
            for spec in [dict(size=(3, 3)), dict(size=(13, 17)), dict(scale_factor=1.7),
                         dict(scale_factor=0.45), dict(scale_factor=(2, 0.5))]:
                x = rng.integers(0, 256, shape).astype(np.uint8)
                kwargs = dict(spec, mode=mode, align_corners=align_corners,
                              antialias=antialias)
                try:
                    want = TF.interpolate(torch.tensor(x), **kwargs).numpy()
                except RuntimeError:
                    continue
                got = F.interpolate(ta.tensor(x), **kwargs)
                assert got.dtype == np.uint8
                np.testing.assert_array_equal(got.numpy(), want)


def test_uint8_negative_control_one_rounding_is_not_torch():
    """rounding the float64 result once (no integer passes) differs from torch's uint8"""
    x = np.random.default_rng(0).integers(0, 256, (1, 3, 30, 40)).astype(np.uint8)
    want = TF.interpolate(torch.tensor(x), size=(13, 17), mode="bicubic").numpy()
    once = np.clip(np.floor(F.interpolate(ta.tensor(x.astype(np.float64)), size=(13, 17),
                                          mode="bicubic").numpy() + 0.5), 0, 255)
    assert (once != want).any()


def test_other_integer_inputs_refused_as_torch():
    for dtype, mode in [(np.int64, "bilinear"), (np.uint8, "area"), (np.int8, "bicubic")]:
        x = np.zeros((1, 1, 4, 4), dtype=dtype)
        with pytest.raises(NotImplementedError):
            TF.interpolate(torch.tensor(x), size=2, mode=mode)
        with pytest.raises(NotImplementedError, match="only uint8"):
            F.interpolate(ta.tensor(x), size=2, mode=mode)
