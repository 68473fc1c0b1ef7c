"""Pooling, group norm, BatchNorm2d and channel dropout against torch in float64: values,
indices (return_indices), gradients incl. ties routed as torch routes them, ceil_mode,
count_include_pad, divisor_override, adaptive bins, module printouts, and errors. Negative
controls show the comparisons can fail."""
import numpy as np
import pytest

import tinyattn as ta
import tinyattn.functional as F
from tinyattn import nn

torch = pytest.importorskip("torch", reason="torch is the reference for these tests")
TF = torch.nn.functional
TOL = dict(rtol=1e-10, atol=1e-12)


def _compare(ours_fn, theirs_fn, x, seed=0, **kwargs):
    """Output (and indices, when returned) and the input's gradient, both libraries."""
    rng = np.random.default_rng(seed)
    xt, xo = torch.tensor(x, requires_grad=True), ta.tensor(x, requires_grad=True)
    want, got = theirs_fn(xt, **kwargs), ours_fn(xo, **kwargs)
    if isinstance(want, tuple):
        (want, want_index), (got, got_index) = want, got
        assert got_index.dtype == np.int64
        np.testing.assert_array_equal(got_index.numpy(), want_index.numpy())
    assert tuple(got.shape) == tuple(want.shape)
    np.testing.assert_allclose(got.numpy(), want.detach().numpy(), **TOL)
    g = rng.standard_normal(tuple(want.shape))
    want.backward(torch.tensor(g))
    got.backward(ta.tensor(g))
    np.testing.assert_allclose(xo.grad.numpy(), xt.grad.numpy(), **TOL)


def _x(shape, ties=False, seed=1):
    rng = np.random.default_rng(seed)
    return rng.integers(-2, 3, shape).astype(float) if ties else rng.standard_normal(shape)


MAX_CASES = [dict(kernel_size=2), dict(kernel_size=3, stride=2, padding=1),
             dict(kernel_size=(3, 2), stride=(2, 1), padding=(1, 0), dilation=(1, 2)),
             dict(kernel_size=3, stride=2, ceil_mode=True),
             dict(kernel_size=2, stride=1, padding=1, ceil_mode=True)]


@pytest.mark.parametrize("kwargs", MAX_CASES, ids=str)
@pytest.mark.parametrize("ties", [False, True])
def test_max_pool2d_matches_torch(kwargs, ties):
    _compare(F.max_pool2d, TF.max_pool2d, _x((2, 3, 7, 6), ties), return_indices=True,
             **kwargs)


def test_max_pool1d_and_unbatched():
    _compare(F.max_pool1d, TF.max_pool1d, _x((2, 3, 9), True), kernel_size=3, stride=2,
             padding=1, ceil_mode=True, return_indices=True)
    _compare(F.max_pool2d, TF.max_pool2d, _x((3, 6, 6), True), kernel_size=2,
             return_indices=True)
    _compare(F.max_pool2d, TF.max_pool2d, _x((3, 6, 6)), kernel_size=2)


def test_max_pool_nan_and_inf_as_torch():
    x = np.array([[[[1.0, np.nan, 2.0, np.nan], [np.inf, -np.inf, 0.0, 5.0]]]])
    want, want_i = TF.max_pool2d(torch.tensor(x), (2, 2), return_indices=True)
    got, got_i = F.max_pool2d(ta.tensor(x), (2, 2), return_indices=True)
    np.testing.assert_array_equal(got.numpy(), want.numpy())
    np.testing.assert_array_equal(got_i.numpy(), want_i.numpy())


def test_negative_control_ties_routed_elsewhere():
    """A max pool whose gradient goes to the LAST maximum of a tie is caught."""
    x = np.ones((1, 1, 4, 4))

    def last_max(t, **kw):
        return F.max_pool2d(t.flip(-1, -2), 2).flip(-1, -2)
    with pytest.raises(AssertionError):
        _compare(last_max, TF.max_pool2d, x, kernel_size=2)


@pytest.mark.parametrize("kwargs", [
    dict(kernel_size=2), dict(kernel_size=3, stride=2, padding=1),
    dict(kernel_size=3, stride=2, padding=1, count_include_pad=False),
    dict(kernel_size=3, stride=2, padding=1, ceil_mode=True),
    dict(kernel_size=3, stride=2, padding=1, ceil_mode=True, count_include_pad=False),
    dict(kernel_size=(2, 3), padding=(1, 1), divisor_override=5)], ids=str)
def test_avg_pool2d_matches_torch(kwargs):
    _compare(F.avg_pool2d, TF.avg_pool2d, _x((2, 3, 7, 6)), **kwargs)


def test_avg_pool1d_matches_torch():
    for cip in (True, False):
        _compare(F.avg_pool1d, TF.avg_pool1d, _x((2, 3, 8)), kernel_size=3, stride=2,
                 padding=1, ceil_mode=True, count_include_pad=cip)


@pytest.mark.parametrize("size", [1, 3, (3, 4), (None, 9), (7, 6), (2, 1)], ids=str)
def test_adaptive_pools_match_torch(size):
    _compare(F.adaptive_avg_pool2d, TF.adaptive_avg_pool2d, _x((2, 3, 7, 6)), output_size=size)
    _compare(F.adaptive_max_pool2d, TF.adaptive_max_pool2d, _x((2, 3, 7, 6), True),
             output_size=size, return_indices=True)


def test_adaptive_1d_match_torch():
    _compare(F.adaptive_avg_pool1d, TF.adaptive_avg_pool1d, _x((2, 3, 7)), output_size=5)
    _compare(F.adaptive_max_pool1d, TF.adaptive_max_pool1d, _x((2, 3, 7), True),
             output_size=4, return_indices=True)


@pytest.mark.parametrize("call", [
    lambda F_, x: F_.max_pool2d(x, 2, padding=2),          # padding over half the kernel
    lambda F_, x: F_.max_pool2d(x, 8),                     # kernel larger than the input
    lambda F_, x: F_.max_pool2d(x, 0),
    lambda F_, x: F_.avg_pool2d(x, 2, divisor_override=0),
], ids=["pad", "kernel", "kernel0", "divisor0"])
def test_pool_errors_as_torch(call):
    with pytest.raises(RuntimeError):
        call(TF, torch.zeros(1, 2, 5, 5))
    with pytest.raises(RuntimeError):
        call(F, ta.zeros(1, 2, 5, 5))


def test_pool_of_a_2d_input_fails_loudly():
    """torch raises IndexError (dimension out of range) here; tinyattn names the shapes."""
    with pytest.raises(IndexError):
        TF.avg_pool2d(torch.zeros(5, 5), 2)
    with pytest.raises(RuntimeError, match="3D or 4D"):
        F.avg_pool2d(ta.zeros(5, 5), 2)


def test_pool_modules_printout_and_values():
    pairs = [(nn.MaxPool2d(2), torch.nn.MaxPool2d(2)),
             (nn.MaxPool2d(3, 2, 1, ceil_mode=True), torch.nn.MaxPool2d(3, 2, 1, ceil_mode=True)),
             (nn.MaxPool1d(3), torch.nn.MaxPool1d(3)),
             (nn.AvgPool2d(2), torch.nn.AvgPool2d(2)),
             (nn.AvgPool1d(3, 2), torch.nn.AvgPool1d(3, 2)),
             (nn.AdaptiveAvgPool2d((1, 1)), torch.nn.AdaptiveAvgPool2d((1, 1))),
             (nn.AdaptiveMaxPool2d(2), torch.nn.AdaptiveMaxPool2d(2))]
    for ours, theirs in pairs:
        assert repr(ours) == repr(theirs)
        x = _x((2, 3, 6, 6)) if "1d" not in repr(theirs) else _x((2, 3, 9))
        np.testing.assert_allclose(ours(ta.tensor(x)).numpy(), theirs(torch.tensor(x)).numpy(),
                                   **TOL)


# --- group norm, BatchNorm2d, channel dropout -------------------------------------------------

@pytest.mark.parametrize("groups,shape", [(2, (3, 4, 5, 6)), (1, (2, 6, 4)), (6, (2, 6, 3, 3)),
                                          (3, (1, 6))])
def test_group_norm_matches_torch(groups, shape):
    rng = np.random.default_rng(2)
    c = shape[1]
    x, w, b = rng.standard_normal(shape) * 3 + 1, rng.standard_normal(c), rng.standard_normal(c)
    arrays = [x, w, b]
    ts = [torch.tensor(a, requires_grad=True) for a in arrays]
    os_ = [ta.tensor(a, requires_grad=True) for a in arrays]
    want = TF.group_norm(ts[0], groups, ts[1], ts[2])
    got = F.group_norm(os_[0], groups, os_[1], os_[2])
    np.testing.assert_allclose(got.numpy(), want.detach().numpy(), rtol=1e-9, atol=1e-10)
    g = rng.standard_normal(shape)
    want.backward(torch.tensor(g))
    got.backward(ta.tensor(g))
    for o, t in zip(os_, ts):
        np.testing.assert_allclose(o.grad.numpy(), t.grad.numpy(), rtol=1e-9, atol=1e-10)


def test_group_norm_module_and_errors():
    ours, theirs = nn.GroupNorm(2, 4), torch.nn.GroupNorm(2, 4)
    assert repr(ours).split("  #")[0] == repr(theirs)
    assert sorted(ours.state_dict()) == sorted(theirs.state_dict())
    with pytest.raises(ValueError):
        torch.nn.GroupNorm(3, 4)
    with pytest.raises(ValueError):
        nn.GroupNorm(3, 4)
    with pytest.raises(RuntimeError):
        TF.group_norm(torch.zeros(2, 4, 3), 3)
    with pytest.raises(RuntimeError):
        F.group_norm(ta.zeros(2, 4, 3), 3)
    x = _x((2, 4, 3, 3)).astype(np.float32)
    np.testing.assert_allclose(ours(ta.tensor(x)).detach().numpy(),
                               theirs(torch.tensor(x)).detach().numpy(), rtol=1e-5, atol=1e-5)


def test_batch_norm2d_matches_torch_train_and_eval():
    theirs = torch.nn.BatchNorm2d(3).double()
    with torch.no_grad():
        theirs.weight.normal_()
        theirs.bias.normal_()
    ours = nn.BatchNorm2d(3).double()
    ours.load_state_dict({k: ta.tensor(v.numpy()) for k, v in theirs.state_dict().items()})
    assert repr(ours).split("  #")[0] == repr(theirs)
    for training in (True, False):
        ours.train(training)
        theirs.train(training)
        _compare(ours, theirs, _x((4, 3, 5, 5)) * 2 + 1)
        for name, buf in theirs.state_dict().items():
            np.testing.assert_allclose(ours.state_dict()[name].numpy(), buf.numpy(), **TOL)
    with pytest.raises(ValueError):
        ours(ta.zeros(4, 3, 5))


def test_dropout2d_drops_whole_channels():
    ta.manual_seed(0)
    x = ta.ones(64, 8, 5, 5, requires_grad=True)
    y = nn.Dropout2d(0.25)(x)
    per_channel = y.numpy().reshape(64, 8, -1)
    assert np.all(per_channel.min(-1) == per_channel.max(-1))     # constant over a channel
    np.testing.assert_allclose(np.unique(per_channel), [0.0, 1 / 0.75], rtol=1e-6)
    assert 0.15 < (per_channel[..., 0] == 0).mean() < 0.35
    y.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), y.numpy())   # the same mask and scale
    model = nn.Dropout2d(0.5)
    model.eval()
    assert model(x) is x
    assert repr(nn.Dropout2d(0.3)) == repr(torch.nn.Dropout2d(0.3))
    with pytest.raises(ValueError):
        nn.Dropout2d(1.5)


def test_integer_avg_pool_with_a_negative_divisor_truncates_toward_zero():
    # torch's kernel divides integers as C does: 3 / -2 is -1 (not floor's -2)
    x = ta.tensor(np.array([[[[-8, 6, 9, 0], [0, 5, 5, 7], [6, 5, 1, -5], [2, -1, 8, -4]]]]))
    out = F.avg_pool2d(x, (2, 2), divisor_override=-2)
    assert out.tolist() == [[[[-1, -10], [-6, 0]]]]          # torch's values
    assert F.avg_pool2d(x, (2, 2)).tolist() == [[[[0, 5], [3, 0]]]]
