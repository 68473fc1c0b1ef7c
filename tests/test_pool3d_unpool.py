"""3-d pooling (max, average, adaptive, LP) and max unpooling (1d/2d/3d) against torch: values,
indices, float64 gradients, dtypes torch's kernels take or refuse, half-precision rounding,
output_size rules, errors and module printouts. Negative controls show the checks can fail."""
import numpy as np
import pytest

import tinyattn as ta
import tinyattn.functional as F
from tinyattn import nn

torch = pytest.importorskip("torch", reason="torch is the reference for these tests")
TF = torch.nn.functional
TOL = dict(rtol=1e-10, atol=1e-12)


def _x(shape, ties=False, seed=1):
    rng = np.random.default_rng(seed)
    return rng.integers(-2, 3, shape).astype(float) if ties else rng.standard_normal(shape)


def _compare(ours_fn, theirs_fn, x, *extra, seed=0, **kwargs):
    """Output (and indices, when returned) and the input's gradient, both libraries."""
    xt, xo = torch.tensor(x, requires_grad=True), ta.tensor(x, requires_grad=True)
    want = theirs_fn(xt, *[torch.tensor(e) for e in extra], **kwargs)
    got = ours_fn(xo, *[ta.tensor(e) for e in extra], **kwargs)
    if isinstance(want, tuple):
        (want, want_index), (got, got_index) = want, got
        assert got_index.dtype == np.int64
        np.testing.assert_array_equal(got_index.numpy(), want_index.numpy())
    assert tuple(got.shape) == tuple(want.shape)
    np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), **TOL)
    g = np.random.default_rng(seed).standard_normal(tuple(want.shape))
    want.backward(torch.tensor(g))
    got.backward(ta.tensor(g))
    np.testing.assert_allclose(xo.grad.numpy(), xt.grad.numpy(), **TOL)


MAX3D = [dict(kernel_size=2), dict(kernel_size=3, stride=2, padding=1),
         dict(kernel_size=(2, 3, 2), stride=(1, 2, 1), padding=(1, 0, 1), dilation=(2, 1, 1)),
         dict(kernel_size=2, stride=2, ceil_mode=True)]


@pytest.mark.parametrize("kwargs", MAX3D, ids=str)
@pytest.mark.parametrize("ties", [False, True])
def test_max_pool3d_matches_torch(kwargs, ties):
    _compare(F.max_pool3d, TF.max_pool3d, _x((2, 2, 5, 6, 5), ties), return_indices=True,
             **kwargs)
    _compare(F.max_pool3d, TF.max_pool3d, _x((2, 5, 6, 5), ties), **kwargs)     # unbatched


@pytest.mark.parametrize("kwargs", [
    dict(kernel_size=2), dict(kernel_size=3, stride=2, padding=1),
    dict(kernel_size=3, stride=2, padding=1, count_include_pad=False, ceil_mode=True),
    dict(kernel_size=(2, 3, 2), padding=(1, 1, 0), divisor_override=5)], ids=str)
def test_avg_pool3d_matches_torch(kwargs):
    _compare(F.avg_pool3d, TF.avg_pool3d, _x((2, 3, 5, 6, 5)), **kwargs)


@pytest.mark.parametrize("size", [1, 2, (3, None, 2), (5, 6, 5), (4, 1, 3)], ids=str)
def test_adaptive_pools_3d_match_torch(size):
    _compare(F.adaptive_avg_pool3d, TF.adaptive_avg_pool3d, _x((2, 3, 5, 6, 5)),
             output_size=size)
    _compare(F.adaptive_max_pool3d, TF.adaptive_max_pool3d, _x((2, 3, 5, 6, 5), True),
             output_size=size, return_indices=True)


def test_lp_pool3d_matches_torch():
    x = np.abs(_x((2, 3, 4, 5, 4))) + 0.1
    for p in (1.0, 2.0, 3.5):
        _compare(F.lp_pool3d, TF.lp_pool3d, x, norm_type=p, kernel_size=2)
    _compare(F.lp_pool3d, TF.lp_pool3d, x, norm_type=2.0, kernel_size=(2, 3, 2), stride=1,
             ceil_mode=True)


def test_avg_pool3d_int64_truncates_as_torch_even_with_a_negative_divisor():
    x = np.random.default_rng(0).integers(-20, 20, (1, 2, 4, 5, 4))
    for divisor in (None, 3, -2):
        want = TF.avg_pool3d(torch.tensor(x), 2, divisor_override=divisor)
        got = F.avg_pool3d(ta.tensor(x), 2, divisor_override=divisor)
        assert got.dtype == np.int64
        np.testing.assert_array_equal(got.numpy(), want.numpy())


@pytest.mark.parametrize("name,dtype", [("avg_pool3d", "float16"), ("avg_pool3d", "bfloat16"),
                                        ("avg_pool3d", "int32"), ("avg_pool2d", "int32"),
                                        ("avg_pool2d", "uint8"), ("adaptive_max_pool3d", "int64"),
                                        ("adaptive_max_pool2d", "int32"),
                                        ("max_pool3d", "bool")])
def test_dtypes_torch_refuses_are_refused(name, dtype):
    shape = (1, 2, 4, 4, 4) if "3d" in name else (1, 2, 4, 4)
    with pytest.raises(RuntimeError):
        getattr(TF, name)(torch.zeros(shape, dtype=getattr(torch, dtype)), 2)
    with pytest.raises(RuntimeError, match="not implemented for"):
        getattr(F, name)(ta.zeros(shape, dtype=getattr(ta, dtype)), 2)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("size", [(5, 3, 2), (None, 3, 2), (4, 4, 3), 1])
def test_adaptive_avg_pool3d_half_rounds_as_torch(dtype, size):
    """torch's 3-d half kernel sums in the half dtype and divides per dim: the same bits."""
    x = torch.randn(2, 3, 8, 8, 6, generator=torch.Generator().manual_seed(0)).to(
        getattr(torch, dtype))
    want = TF.adaptive_avg_pool3d(x, size)
    got = F.adaptive_avg_pool3d(ta.tensor(x.float().numpy()).to(getattr(ta, dtype)), size)
    assert got.dtype == getattr(ta, dtype)
    np.testing.assert_array_equal(got.float().numpy(), want.float().numpy())


def test_negative_control_half_rounding_once_differs():
    """Rounding once (float32 compute) would differ from torch here: the test above can fail."""
    x = torch.randn(2, 3, 8, 8, 6, generator=torch.Generator().manual_seed(0)).half()
    want = TF.adaptive_avg_pool3d(x, (5, 3, 2))
    once = TF.adaptive_avg_pool3d(x.float(), (5, 3, 2)).half()
    assert (once != want).any()


# --- max unpooling ------------------------------------------------------------------------

@pytest.mark.parametrize("dims,kwargs,shape", [
    (1, dict(kernel_size=3, stride=2, padding=1), (2, 3, 9)),
    (2, dict(kernel_size=2), (2, 3, 6, 5)),
    (2, dict(kernel_size=2), (2, 3, 6, 4)),
    (2, dict(kernel_size=3, stride=2, padding=1), (3, 7, 6)),
    (3, dict(kernel_size=2, stride=(1, 2, 2)), (1, 2, 4, 5, 6))], ids=str)
def test_max_unpool_inverts_max_pool_as_torch(dims, kwargs, shape):
    pool, unpool = getattr(TF, f"max_pool{dims}d"), f"max_unpool{dims}d"
    pooled, index = pool(torch.tensor(_x(shape)), return_indices=True, **kwargs)
    _compare(getattr(F, unpool), getattr(TF, unpool), pooled.numpy(), index.numpy(),
             output_size=shape[-dims:], **kwargs)
    try:        # the default size: torch's when the indices fit in it, else both raise
        expected = getattr(TF, unpool)(pooled, index, **kwargs)
    except RuntimeError:
        with pytest.raises(RuntimeError, match="invalid max index"):
            getattr(F, unpool)(ta.tensor(pooled.numpy()), ta.tensor(index.numpy()), **kwargs)
    else:
        got = getattr(F, unpool)(ta.tensor(pooled.numpy()), ta.tensor(index.numpy()), **kwargs)
        np.testing.assert_array_equal(got.numpy(), expected.numpy())


def test_max_unpool_repeated_index_gives_every_input_its_gradient():
    x, index = np.array([[[1.0, 2.0, 3.0]]]), np.array([[[1, 1, 4]]])
    xo = ta.tensor(x, requires_grad=True)
    out = F.max_unpool1d(xo, ta.tensor(index), 2)
    out.backward(ta.arange(6.0, dtype=ta.float64).reshape(1, 1, 6))
    np.testing.assert_array_equal(xo.grad.numpy(), [[[1.0, 1.0, 4.0]]])       # as torch's


@pytest.mark.parametrize("call,error", [
    (lambda F_, t, x, i: F_.max_unpool2d(x, i.int(), 2), RuntimeError),            # int32
    (lambda F_, t, x, i: F_.max_unpool2d(x, i + 100, 2), RuntimeError),           # outside
    (lambda F_, t, x, i: F_.max_unpool2d(x, -i - 1, 2), RuntimeError),            # negative
    (lambda F_, t, x, i: F_.max_unpool2d(x, i[..., :1], 2), RuntimeError),        # shape
    (lambda F_, t, x, i: F_.max_unpool2d(x, i, 2, output_size=(9, 9)), ValueError),
    (lambda F_, t, x, i: F_.max_unpool2d(x, i, 2, output_size=(4,)), ValueError),
    (lambda F_, t, x, i: F_.max_unpool2d(x[0, 0], i[0, 0], 2), RuntimeError),     # 2-D
    (lambda F_, t, x, i: F_.max_unpool2d(x.long(), i, 2), RuntimeError),          # ints
    (lambda F_, t, x, i: F_.max_unpool3d(x[None], i[None], 2, stride=0), RuntimeError),
], ids=["int32", "outside", "negative", "shape", "size", "size_len", "dims", "long",
        "stride0"])
def test_max_unpool_errors_as_torch(call, error):
    x = np.random.default_rng(0).standard_normal((1, 2, 4, 4))
    for lib, functional in ((torch, TF), (ta, F)):
        pooled, index = functional.max_pool2d(lib.tensor(x), 2, return_indices=True)
        with pytest.raises(error):
            call(functional, lib, pooled, index)


def test_max_unpool_output_size_may_name_batch_and_channels():
    x = _x((1, 2, 5, 5))
    for lib, functional in ((torch, TF), (ta, F)):
        pooled, index = functional.max_pool2d(lib.tensor(x), 2, return_indices=True)
        out = functional.max_unpool2d(pooled, index, 2, output_size=(1, 2, 5, 5))
        assert tuple(out.shape) == (1, 2, 5, 5)


def test_pool3d_and_unpool_modules_as_torch():
    pairs = [(nn.MaxPool3d(2), torch.nn.MaxPool3d(2)),
             (nn.MaxPool3d(3, 2, 1, ceil_mode=True), torch.nn.MaxPool3d(3, 2, 1, ceil_mode=True)),
             (nn.AvgPool3d(2, 1), torch.nn.AvgPool3d(2, 1)),
             (nn.AdaptiveAvgPool3d((1, 2, 3)), torch.nn.AdaptiveAvgPool3d((1, 2, 3))),
             (nn.AdaptiveMaxPool3d(2), torch.nn.AdaptiveMaxPool3d(2)),
             (nn.LPPool3d(2, 2), torch.nn.LPPool3d(2, 2))]
    x = np.abs(_x((2, 3, 6, 6, 6))) + 0.1
    for ours, theirs in pairs:
        assert repr(ours) == repr(theirs)
        np.testing.assert_allclose(ours(ta.tensor(x)).numpy(), theirs(torch.tensor(x)).numpy(),
                                   **TOL)
    for dims, shape in ((1, (2, 3, 8)), (2, (2, 3, 6, 6)), (3, (2, 3, 4, 4, 4))):
        ours, theirs = getattr(nn, f"MaxUnpool{dims}d")(2), getattr(torch.nn,
                                                                    f"MaxUnpool{dims}d")(2)
        assert repr(ours) == repr(theirs)
        pooled, index = getattr(TF, f"max_pool{dims}d")(torch.tensor(_x(shape)), 2,
                                                         return_indices=True)
        np.testing.assert_array_equal(
            ours(ta.tensor(pooled.numpy()), ta.tensor(index.numpy()), shape).numpy(),
            theirs(pooled, index, shape).numpy())


def test_negative_control_wrong_unpool_index_is_caught():
    pooled, index = TF.max_pool2d(torch.tensor(_x((1, 2, 4, 4))), 2, return_indices=True)
    shifted = (index.numpy() + 1) % 16
    with pytest.raises(AssertionError):
        np.testing.assert_array_equal(
            F.max_unpool2d(ta.tensor(pooled.numpy()), ta.tensor(shifted), 2).numpy(),
            TF.max_unpool2d(pooled, index, 2).numpy())


@pytest.mark.parametrize("name,shape", [
    ("max_pool1d", (0, 1, 4)), ("max_pool2d", (0, 1, 2, 2)), ("max_pool3d", (0, 1, 2, 2, 2)),
    ("adaptive_max_pool1d", (0, 1, 4)), ("adaptive_max_pool2d", (0, 1, 2, 2)),
    ("adaptive_max_pool3d", (0, 1, 2, 2, 2))])
def test_max_pools_take_an_empty_batch_as_torch(name, shape):
    """torch takes a batch of 0 samples ("optional 0 dim batch size"): an empty output of
    the pooled shape, int64 indices, an empty gradient; the window search's reshape(-1) used
    to fail on it with NumPy's "cannot reshape array of size 0" (a raw traceback)."""
    torch = pytest.importorskip("torch", reason="torch is the oracle")
    want, want_index = getattr(torch.nn.functional, name)(torch.ones(shape), 2,
                                                          return_indices=True)
    x = ta.ones(*shape, requires_grad=True)
    got, got_index = getattr(ta.nn.functional, name)(x, 2, return_indices=True)
    got.sum().backward()
    assert tuple(got.shape) == tuple(want.shape) and str(got_index.dtype) == "int64"
    assert tuple(x.grad.shape) == shape
