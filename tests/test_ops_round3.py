"""The third round of PyTorch ops (issue 12: makemore parts 1-4, backprop ninja, nanoGPT)
against torch in float64: batch_norm / BatchNorm1d, and (below) randperm, unique, meshgrid,
diag, scatter, scatter_add, index_add_, detach_. Each comparison has a negative control."""
import numpy as np
import pytest

import tinyattn as ta
import tinyattn.functional as F
from tinyattn import nn

torch = pytest.importorskip("torch", reason="torch is the reference for these tests")

TOL = dict(rtol=1e-10, atol=1e-12)


def _close(ours, theirs, **tol):
    ours = ours.numpy() if isinstance(ours, ta.Tensor) else np.asarray(ours)
    np.testing.assert_allclose(ours, theirs.detach().numpy(), **(tol or TOL))


def _pair_bn(**kwargs):
    """A torch BatchNorm1d with random affine parameters and a tinyattn copy of it."""
    theirs = torch.nn.BatchNorm1d(4, **kwargs).double()
    if theirs.affine:
        with torch.no_grad():
            theirs.weight.normal_()
            theirs.bias.normal_()
    ours = nn.BatchNorm1d(4, **kwargs).double()
    ours.load_state_dict(theirs.state_dict())
    return ours, theirs


def _step(ours, theirs, x, rng):
    """One forward and backward through both; compare output and every gradient."""
    xo, xt = ta.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    yo, yt = ours(xo), theirs(xt)
    _close(yo, yt)
    g = rng.standard_normal(x.shape)
    yo.backward(ta.tensor(g))
    yt.backward(torch.tensor(g))
    _close(xo.grad, xt.grad)
    if theirs.affine:
        _close(ours.weight.grad, theirs.weight.grad)
        _close(ours.bias.grad, theirs.bias.grad)
        ours.zero_grad()
        theirs.zero_grad()


@pytest.mark.parametrize("shape", [(6, 4), (3, 4, 5)])
@pytest.mark.parametrize("momentum", [0.1, None, 0.5])
def test_batchnorm1d_matches_torch_in_training_then_eval(shape, momentum):
    rng = np.random.default_rng(0)
    ours, theirs = _pair_bn(momentum=momentum)
    for _ in range(3):                                   # three batches update the stats
        _step(ours, theirs, rng.standard_normal(shape) * 3 + 1, rng)
    for name, buffer in theirs.named_buffers():
        np.testing.assert_allclose(getattr(ours, name).numpy(), buffer.numpy(), **TOL)
    assert int(ours.num_batches_tracked.item()) == 3
    ours.eval()
    theirs.eval()
    _step(ours, theirs, rng.standard_normal(shape), rng)
    assert int(ours.num_batches_tracked.item()) == 3     # eval counts nothing


@pytest.mark.parametrize("kwargs", [dict(affine=False), dict(track_running_stats=False)])
def test_batchnorm1d_options_match_torch(kwargs):
    rng = np.random.default_rng(1)
    ours, theirs = _pair_bn(**kwargs)
    assert list(ours.state_dict()) == list(theirs.state_dict())
    _step(ours, theirs, rng.standard_normal((5, 4)), rng)
    ours.eval()
    theirs.eval()
    _step(ours, theirs, rng.standard_normal((5, 4, 2)), rng)


def test_state_dict_goes_both_ways():
    rng = np.random.default_rng(2)
    ours, theirs = _pair_bn()
    _step(ours, theirs, rng.standard_normal((8, 4)), rng)
    back = torch.nn.BatchNorm1d(4).double()
    back.load_state_dict({k: torch.tensor(v) for k, v in ours.state_dict().items()})
    assert int(back.num_batches_tracked) == 1
    for key, value in theirs.state_dict().items():
        np.testing.assert_allclose(back.state_dict()[key].numpy(), value.numpy(), **TOL)
    assert ours.num_batches_tracked.dtype == np.int64


def test_running_var_is_updated_with_the_unbiased_variance():
    """Negative control for the running-stat check: the biased update would differ."""
    x = np.arange(6.0).reshape(3, 2)
    bn = nn.BatchNorm1d(2, momentum=1.0).double()
    bn(ta.tensor(x))
    np.testing.assert_allclose(bn.running_var.numpy(), x.var(axis=0, ddof=1))
    assert not np.allclose(bn.running_var.numpy(), x.var(axis=0))


def test_functional_batch_norm_matches_torch():
    rng = np.random.default_rng(3)
    x = rng.standard_normal((5, 3, 4))
    w, b = rng.standard_normal(3), rng.standard_normal(3)
    for training in (True, False):
        rm, rv = rng.standard_normal(3), rng.random(3) + 0.5
        ro, rt = ta.tensor(rm.copy()), torch.tensor(rm.copy())
        vo, vt = ta.tensor(rv.copy()), torch.tensor(rv.copy())
        args = [ta.tensor(a, requires_grad=True) for a in (x, w, b)]
        targs = [torch.tensor(a, requires_grad=True) for a in (x, w, b)]
        out = F.batch_norm(args[0], ro, vo, args[1], args[2], training, 0.3, 1e-3)
        ref = torch.nn.functional.batch_norm(targs[0], rt, vt, targs[1], targs[2], training,
                                             0.3, 1e-3)
        _close(out, ref)
        g = rng.standard_normal(x.shape)
        out.backward(ta.tensor(g))
        ref.backward(torch.tensor(g))
        for a, t in zip(args, targs):
            _close(a.grad, t.grad)
        _close(ro, rt)
        _close(vo, vt)


def test_training_backward_is_not_the_eval_backward():
    """Negative control: the eval formula (dx = g * w * rstd) is wrong in training, and the
    comparison with torch sees it."""
    rng = np.random.default_rng(4)
    x = rng.standard_normal((6, 3))
    xt = torch.tensor(x, requires_grad=True)
    torch.nn.functional.batch_norm(xt, None, None, training=True).sum().backward()
    rstd = 1 / np.sqrt(x.var(axis=0) + 1e-5)
    wrong = np.ones_like(x) * rstd
    assert not np.allclose(wrong, xt.grad.numpy(), atol=1e-6)
    xo = ta.tensor(x, requires_grad=True)
    F.batch_norm(xo, None, None, training=True).sum().backward()
    np.testing.assert_allclose(xo.grad.numpy(), xt.grad.numpy(), atol=1e-12)


def test_float32_stays_float32_and_buffers_count_versions():
    bn = nn.BatchNorm1d(3)
    before = bn.running_mean._version
    out = bn(ta.randn(4, 3))
    assert out.dtype == np.float32 and bn.running_mean.dtype == np.float32
    assert bn.running_mean._version == before + 1


@pytest.mark.parametrize("shape", [(1, 4), (1, 4, 1)])
def test_one_value_per_channel_in_training_is_refused_as_torch(shape):
    with pytest.raises(ValueError, match="Expected more than 1 value per channel when train"):
        torch.nn.BatchNorm1d(4)(torch.zeros(shape))
    bn = nn.BatchNorm1d(4)
    with pytest.raises(ValueError, match="Expected more than 1 value per channel when train"):
        bn(ta.zeros(*shape))
    assert int(bn.num_batches_tracked.item()) == 0       # a refused batch changes nothing
    with pytest.raises(ValueError, match="more than 1 value per channel"):
        F.batch_norm(ta.zeros(*shape), None, None, training=True)
    bn.eval()
    assert bn(ta.ones(*shape)).shape == shape             # eval mode is fine with one


def test_batchnorm1d_errors_name_the_values():
    bn = nn.BatchNorm1d(4)
    with pytest.raises(ValueError, match=r"2D or 3D input.*4D"):
        bn(ta.zeros(2, 4, 3, 3))
    with pytest.raises(ValueError, match="3 channels.*num_features=4"):
        bn(ta.zeros(2, 3))
    with pytest.raises(ValueError, match="num_features"):
        nn.BatchNorm1d(0)
    with pytest.raises(TypeError, match="floating-point"):
        F.batch_norm(ta.zeros(2, 4, dtype="int64"), None, None, training=True)
    with pytest.raises(RuntimeError, match="running_mean and running_var"):
        F.batch_norm(ta.zeros(2, 4), None, None, training=False)
    with pytest.raises(RuntimeError, match="weight should contain 4 elements.*not 3"):
        F.batch_norm(ta.zeros(2, 4), None, None, ta.ones(3), training=True)
    with pytest.raises(ValueError, match=r"\(N, C\)"):
        F.batch_norm(ta.zeros(4), None, None, training=True)
