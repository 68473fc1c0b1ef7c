"""F.grid_sample and F.affine_grid against torch (issue 30, stream interp39): every mode,
padding mode and align_corners, 4-D and 5-D, values and gradients to input and grid in
float64, values in float32; errors and warnings; negative controls."""
import warnings

import ml_dtypes
import numpy as np
import pytest

import tinyattn as ta
import tinyattn.functional as F

torch = pytest.importorskip("torch", reason="torch is the reference for these tests")
TF = torch.nn.functional

CASES = [(2, mode, padding, corners)
         for mode in ("bilinear", "nearest", "bicubic")
         for padding in ("zeros", "border", "reflection") for corners in (False, True)]
CASES += [(3, mode, padding, corners) for mode in ("bilinear", "nearest")
          for padding in ("zeros", "border", "reflection") for corners in (False, True)]


def _run(x, g, up, **kwargs):
    xt, gt = torch.tensor(x, requires_grad=True), torch.tensor(g, requires_grad=True)
    xo, go = ta.tensor(x, requires_grad=True), ta.tensor(g, requires_grad=True)
    want, got = TF.grid_sample(xt, gt, **kwargs), F.grid_sample(xo, go, **kwargs)
    want.backward(torch.tensor(up))
    got.backward(ta.tensor(up))
    return (want.detach().numpy(), xt.grad.numpy(), gt.grad.numpy()), \
        (got.numpy(), xo.grad.numpy(), go.grad.numpy())


@pytest.mark.parametrize("nd,mode,padding,corners", CASES)
def test_grid_sample_agrees_with_torch(nd, mode, padding, corners):
    rng = np.random.default_rng(nd)
    kwargs = dict(mode=mode, padding_mode=padding, align_corners=corners)
    shapes = ([[5, 4], [1, 3], [3, 1]] if nd == 2 else [[3, 4, 5], [1, 2, 3]])
    for spatial in shapes:
        x = rng.standard_normal([2, 3] + spatial)
        g = rng.uniform(-1.4, 1.4, [2] + ([4, 6] if nd == 2 else [2, 3, 4]) + [nd])
        up = rng.standard_normal([2, 3] + list(g.shape[1:-1]))
        want, got = _run(x, g, up, **kwargs)
        for a, b in zip(got, want):
            np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)
        x32, g32 = x.astype(np.float32), g.astype(np.float32)
        np.testing.assert_allclose(
            F.grid_sample(ta.tensor(x32), ta.tensor(g32), **kwargs).numpy(),
            TF.grid_sample(torch.tensor(x32), torch.tensor(g32), **kwargs).numpy(),
            rtol=1e-5, atol=1e-5)


def test_grid_points_on_pixels_and_edges():
    """grid values exactly on pixel centres, on the edges and outside (the clipping and
    reflection boundaries, where the slopes switch) agree with torch too"""
    x = np.random.default_rng(0).standard_normal((1, 2, 3, 4))
    values = np.array([-1.5, -1.0, -0.75, -0.5, 0.0, 0.25, 0.5, 1.0, 1.25, 2.0])
    g = np.stack(np.meshgrid(values, values, indexing="ij"), -1)[None]
    up = np.random.default_rng(1).standard_normal((1, 2) + g.shape[1:3])
    for padding in ("zeros", "border", "reflection"):
        for corners in (False, True):
            for mode in ("bilinear", "nearest", "bicubic"):
                want, got = _run(x, g, up, mode=mode, padding_mode=padding,
                                 align_corners=corners)
                for a, b in zip(got, want):
                    np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)


def test_negative_control_padding_matters():
    x = np.random.default_rng(0).standard_normal((1, 1, 4, 4))
    g = np.full((1, 2, 2, 2), 1.3)
    want = TF.grid_sample(torch.tensor(x), torch.tensor(g), padding_mode="border",
                          align_corners=False)
    got = F.grid_sample(ta.tensor(x), ta.tensor(g), padding_mode="zeros", align_corners=False)
    assert not np.allclose(got.numpy(), want.numpy())


@pytest.mark.parametrize("size", [(2, 3, 4, 5), (2, 1, 1, 3), (2, 3, 3, 4, 5), (2, 1, 2, 1, 3)])
@pytest.mark.parametrize("corners", [False, True])
def test_affine_grid_agrees_with_torch(size, corners):
    rng = np.random.default_rng(len(size))
    theta = rng.standard_normal((2, 2, 3) if len(size) == 4 else (2, 3, 4))
    tt, to = torch.tensor(theta, requires_grad=True), ta.tensor(theta, requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")                    # unit sizes with align_corners
        want, got = TF.affine_grid(tt, size, align_corners=corners), \
            F.affine_grid(to, size, align_corners=corners)
    up = rng.standard_normal(tuple(want.shape))
    want.backward(torch.tensor(up))
    got.backward(ta.tensor(up))
    np.testing.assert_allclose(got.numpy(), want.detach().numpy(), rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(to.grad.numpy(), tt.grad.numpy(), rtol=1e-12, atol=1e-13)
    t32 = theta.astype(np.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        np.testing.assert_allclose(
            F.affine_grid(ta.tensor(t32), size, align_corners=corners).numpy(),
            TF.affine_grid(torch.tensor(t32), size, align_corners=corners).numpy(),
            rtol=1e-6, atol=1e-6)


def test_warnings_as_torch():
    x, g = np.zeros((1, 1, 2, 2)), np.zeros((1, 1, 1, 2))
    for fn in (lambda m: m.grid_sample(m_tensor(m, x), m_tensor(m, g)),
               lambda m: m.affine_grid(m_tensor(m, np.zeros((1, 2, 3))), (1, 1, 2, 2))):
        for module in (F, TF):
            with pytest.warns(UserWarning, match="align_corners=False since 1.3.0"):
                fn(module)
    for module in (F, TF):
        with pytest.warns(UserWarning, match="unit-size grids"):
            module.affine_grid(m_tensor(module, np.zeros((1, 2, 3))), (1, 1, 1, 2),
                               align_corners=True)


def m_tensor(module, array):
    return ta.tensor(array) if module is F else torch.tensor(array)


@pytest.mark.parametrize("call,error,message", [
    (lambda m, t: m.grid_sample(t(np.zeros((1, 1, 2, 2))), t(np.zeros((1, 1, 1, 2))),
                                mode="cubic", align_corners=False), ValueError, "expected mode"),
    (lambda m, t: m.grid_sample(t(np.zeros((1, 1, 2, 2))), t(np.zeros((1, 1, 1, 2))),
                                padding_mode="wrap", align_corners=False), ValueError,
     "expected padding_mode"),
    (lambda m, t: m.grid_sample(t(np.zeros((1, 1, 2, 2, 2))), t(np.zeros((1, 1, 1, 1, 3))),
                                mode="bicubic", align_corners=False), RuntimeError,
     "bicubic interpolation only supports 4D"),
    (lambda m, t: m.grid_sample(t(np.zeros((1, 1, 2, 2))), t(np.zeros((1, 1, 1, 3))),
                                align_corners=False), RuntimeError, "size 2 in last dimension"),
    (lambda m, t: m.grid_sample(t(np.zeros((2, 1, 2, 2))), t(np.zeros((1, 1, 1, 2))),
                                align_corners=False), RuntimeError, "same batch size"),
    (lambda m, t: m.grid_sample(t(np.zeros((1, 1, 2, 2))), t(np.zeros((1, 1, 1, 2),
                                                                     np.float32)),
                                align_corners=False), RuntimeError, "same dtype"),
    (lambda m, t: m.affine_grid(t(np.zeros((1, 2, 3))), (1, 1, 2, 2, 2),
                                align_corners=False), ValueError, "Nx3x4"),
    (lambda m, t: m.affine_grid(t(np.zeros((1, 2, 3))), (1, 1, 2), align_corners=False),
     NotImplementedError, "only supports 4D and 5D"),
])
def test_errors_as_torch(call, error, message):
    with pytest.raises(error, match=message):
        call(F, ta.tensor)
    with pytest.raises(error):
        call(TF, torch.tensor)


@pytest.mark.parametrize("dtype,torch_dtype", [(np.float16, "float16"),
                                               (ml_dtypes.bfloat16, "bfloat16")])
def test_half_bit_for_bit_as_torch(dtype, torch_dtype):
    """float16/bfloat16: torch's CPU kernel rounds every step to the half dtype (the pixel
    coordinate, the weights, each added tap; bicubic row by row); tinyattn follows its
    order, and every element is equal"""
    rng = np.random.default_rng(0)
    half = getattr(torch, torch_dtype)
    for nd, mode, padding, corners in CASES:
        x = rng.standard_normal([2, 3] + [5] * nd).astype(np.float32).astype(dtype)
        g = rng.uniform(-1.3, 1.3, [2] + [4] * nd + [nd]).astype(np.float32).astype(dtype)
        kwargs = dict(mode=mode, padding_mode=padding, align_corners=corners)
        want = TF.grid_sample(torch.tensor(x.astype(np.float32)).to(half),
                              torch.tensor(g.astype(np.float32)).to(half), **kwargs)
        got = F.grid_sample(ta.tensor(x), ta.tensor(g), **kwargs)
        assert got.dtype == np.dtype(dtype)
        np.testing.assert_array_equal(got.float().numpy(), want.float().numpy(),
                                      err_msg=str(kwargs))
