"""Padding modules, Softmax2d, HuberLoss/SmoothL1Loss, the multi-class margin losses and
Bilinear against torch (issue 30, stream mods30): values and gradients in float64, printouts,
constructor arguments and errors. Negative controls show the comparisons can fail."""
import numpy as np
import pytest

import tinyattn as ta
import tinyattn.functional as F
from tinyattn import nn

torch = pytest.importorskip("torch", reason="torch is the reference for these tests")
TF = torch.nn.functional
TOL = dict(rtol=1e-10, atol=1e-12)


def _both(name, *args, **kwargs):
    return getattr(nn, name)(*args, **kwargs), getattr(torch.nn, name)(*args, **kwargs)


def _check_module(ours, theirs, *arrays, integer=()):
    """Forward and every floating input's gradient agree; returns the output."""
    t_in = [torch.tensor(a) if i in integer else torch.tensor(a, requires_grad=True)
            for i, a in enumerate(arrays)]
    o_in = [ta.tensor(a) if i in integer else ta.tensor(a, requires_grad=True)
            for i, a in enumerate(arrays)]
    want, got = theirs(*t_in), ours(*o_in)
    assert tuple(got.shape) == tuple(want.shape)
    np.testing.assert_allclose(got.numpy(), want.detach().numpy(), **TOL)
    g = np.random.default_rng(1).standard_normal(tuple(want.shape))
    want.backward(torch.tensor(g))
    got.backward(ta.tensor(g))
    for i, (a, b) in enumerate(zip(o_in, t_in)):
        if i not in integer:
            np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), **TOL)
    return got


PADS = [("ZeroPad1d", (2, 1), (2, 3, 5)), ("ZeroPad2d", 1, (2, 3, 4, 5)),
        ("ZeroPad3d", (1, 0, 2, 1, 0, 1), (1, 2, 3, 4, 2)),
        ("ReflectionPad1d", (2, 3), (2, 3, 5)), ("ReflectionPad2d", (1, 2, 2, 0), (3, 4, 5)),
        ("ReflectionPad3d", 1, (1, 2, 3, 4, 3)), ("ReplicationPad1d", 3, (3, 4)),
        ("ReplicationPad2d", (0, 3, 1, 2), (2, 2, 3, 4)), ("ReplicationPad3d", (2, 1, 0, 1, 1, 0),
                                                           (2, 3, 2, 3)),
        ("CircularPad1d", (1, 2), (2, 3, 5)), ("CircularPad2d", (2, 1, 1, -1), (1, 2, 3, 4)),
        ("CircularPad3d", 1, (2, 3, 3, 3))]


@pytest.mark.parametrize("name,padding,shape", PADS)
def test_padding_modules_agree_with_torch(name, padding, shape):
    ours, theirs = _both(name, padding)
    assert repr(ours) == repr(theirs) and ours.padding == theirs.padding
    _check_module(ours, theirs, np.random.default_rng(0).standard_normal(shape))


@pytest.mark.parametrize("dims", [1, 2, 3])
def test_constant_pad_keeps_its_value_and_prints_it(dims):
    ours, theirs = _both(f"ConstantPad{dims}d", 2, -1.5)
    assert repr(ours) == repr(theirs) == f"ConstantPad{dims}d(padding={(2,) * 2 * dims}, " \
                                         f"value=-1.5)"
    _check_module(ours, theirs, np.random.default_rng(0).standard_normal((2,) * (dims + 1)))
    assert isinstance(nn.ZeroPad2d(1), nn.ConstantPad2d) and nn.ZeroPad2d(1).value == 0.0


def test_circular_pad_refuses_the_dims_torch_refuses():
    with pytest.raises(ValueError, match="expected 3D or 4D input"):
        nn.CircularPad2d(1)(ta.zeros(2, 3))
    with pytest.raises(ValueError, match="too large"):
        nn.ReflectionPad1d(3)(ta.zeros(1, 3))          # amount must be < size, as torch


def test_padding_negative_control():
    ours, theirs = nn.ReflectionPad1d(2), torch.nn.ReplicationPad1d(2)
    with pytest.raises(AssertionError):
        _check_module(ours, theirs, np.random.default_rng(0).standard_normal((2, 5)))


def test_softmax2d():
    ours, theirs = nn.Softmax2d(), torch.nn.Softmax2d()
    assert repr(ours) == repr(theirs)
    _check_module(ours, theirs, np.random.default_rng(0).standard_normal((2, 3, 4, 5)))
    _check_module(ours, theirs, np.random.default_rng(0).standard_normal((3, 4, 5)))
    with pytest.raises(ValueError, match="expected input to be 3D or 4D, got 2D"):
        ours(ta.zeros(3, 4))


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_huber_and_smooth_l1_modules(reduction):
    rng = np.random.default_rng(0)
    x, y = rng.standard_normal((4, 5)) * 2, rng.standard_normal((4, 5))
    for ours, theirs in (_both("HuberLoss", reduction=reduction, delta=0.7),
                         _both("SmoothL1Loss", reduction=reduction, beta=0.4)):
        assert repr(ours) == repr(theirs)
        _check_module(ours, theirs, x, y)
    with pytest.raises(TypeError, match="delta must be a float or int"):
        nn.HuberLoss(delta="1")


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_huber_loss_weight_as_torch(reduction):
    rng = np.random.default_rng(2)
    x, y, w = rng.standard_normal((3, 4)) * 2, rng.standard_normal((3, 4)), rng.random((3, 4))
    ours = lambda a, b: F.huber_loss(a, b, reduction=reduction, delta=0.5, weight=ta.tensor(w))
    theirs = lambda a, b: TF.huber_loss(a, b, reduction=reduction, delta=0.5,
                                        weight=torch.tensor(w))
    _check_module(ours, theirs, x, y)
    with pytest.raises(ValueError, match="same size"):
        F.huber_loss(ta.tensor(x), ta.tensor(y), weight=ta.ones(4))


@pytest.mark.parametrize("p", [1, 2])
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("shape", [(5, 4), (4,)])
def test_multi_margin_loss(p, reduction, shape):
    rng = np.random.default_rng(3)
    x = rng.standard_normal(shape)
    y = rng.integers(0, shape[-1], shape[:-1]) if len(shape) == 2 else np.array(2)
    w = rng.random(shape[-1])
    ours = nn.MultiMarginLoss(p=p, margin=0.8, weight=ta.tensor(w), reduction=reduction)
    theirs = torch.nn.MultiMarginLoss(p=p, margin=0.8, weight=torch.tensor(w),
                                      reduction=reduction)
    assert repr(ours) == repr(theirs)
    _check_module(ours, theirs, x, y, integer=(1,))


def test_multi_margin_loss_errors_as_torch():
    with pytest.raises(ValueError, match="only p == 1 and p == 2 supported"):
        nn.MultiMarginLoss(p=3)
    with pytest.raises(RuntimeError, match="target out of range"):
        F.multi_margin_loss(ta.zeros(2, 3), ta.tensor([0, 3]))
    with pytest.raises(RuntimeError, match="inconsistent weight size"):
        F.multi_margin_loss(ta.zeros(2, 3), ta.tensor([0, 1]), weight=ta.ones(2))
    with pytest.raises(RuntimeError, match="inconsistent target size"):
        F.multi_margin_loss(ta.zeros(2, 3), ta.tensor([0, 1, 1]))
    empty = F.multi_margin_loss(ta.zeros(0, 3), ta.zeros(0, dtype="int64"))
    assert np.isnan(empty.item())     # torch's kernel returns uninitialised memory here


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_multilabel_margin_loss(reduction):
    rng = np.random.default_rng(4)
    x = rng.standard_normal((5, 4))
    target = np.array([[3, 0, -1, 1], [1, 1, 2, -1], [0, 1, 2, 3], [-1, 0, 0, 0],
                       [2, -1, 3, 3]])
    ours, theirs = _both("MultiLabelMarginLoss", reduction=reduction)
    assert repr(ours) == repr(theirs)
    _check_module(ours, theirs, x, target, integer=(1,))
    _check_module(ours, theirs, x[0], target[0], integer=(1,))
    # the docs' example: 0.25 * (1.1 + 1.3 + 0.4 + 0.6)
    got = F.multilabel_margin_loss(ta.tensor([[0.1, 0.2, 0.4, 0.8]]), ta.tensor([[3, 0, -1, 1]]))
    assert abs(got.item() - 0.85) < 1e-6


def test_multilabel_margin_loss_errors_and_negative_control():
    with pytest.raises(RuntimeError, match="out of range"):
        F.multilabel_margin_loss(ta.zeros(2, 3), ta.tensor([[0, 3, -1], [0, -1, 0]]))
    with pytest.raises(RuntimeError, match="inconsistent target size"):
        F.multilabel_margin_loss(ta.zeros(2, 3), ta.tensor([0, 1, -1]))
    x, t = np.random.default_rng(0).standard_normal((3, 4)), np.array([[1, -1, 0, 0]] * 3)
    with pytest.raises(AssertionError):      # a different stop marker: must disagree
        _check_module(lambda a, b: nn.MultiLabelMarginLoss()(a, ta.tensor(t)),
                      torch.nn.MultiLabelMarginLoss(), x, np.where(t == -1, 2, t), integer=(1,))


@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("lead", [(4,), (2, 3), ()])
def test_bilinear_module(bias, lead):
    ta.manual_seed(0)
    ours = nn.Bilinear(3, 2, 5, bias=bias).double()
    theirs = torch.nn.Bilinear(3, 2, 5, bias=bias).double()
    assert repr(ours) == repr(theirs)
    assert tuple(ours.weight.shape) == tuple(theirs.weight.shape) == (5, 3, 2)
    bound = 1 / np.sqrt(3)
    assert np.abs(ours.weight.numpy()).max() <= bound
    ours.load_state_dict({k: ta.tensor(v.detach().numpy()) for k, v in theirs.state_dict().items()})
    rng = np.random.default_rng(5)
    _check_module(ours, theirs, rng.standard_normal(lead + (3,)), rng.standard_normal(lead + (2,)))
    np.testing.assert_allclose(ours.weight.grad.numpy(), theirs.weight.grad.numpy(), **TOL)
    if bias:
        np.testing.assert_allclose(ours.bias.grad.numpy(), theirs.bias.grad.numpy(), **TOL)


def test_bilinear_errors():
    with pytest.raises(ValueError, match="in1_features must be > 0"):
        nn.Bilinear(0, 2, 3)
    with pytest.raises(RuntimeError, match="input1 size does not match"):
        F.bilinear(ta.zeros(2, 4), ta.zeros(2, 2), ta.zeros(5, 3, 2))
    with pytest.raises(RuntimeError, match="batch dimensions do not match"):
        F.bilinear(ta.zeros(2, 3), ta.zeros(3, 2), ta.zeros(5, 3, 2))


@pytest.mark.parametrize("dims", [1, 2, 3])
@pytest.mark.parametrize("affine,track", [(False, False), (True, True), (True, False)])
def test_instance_norm_modules(dims, affine, track):
    name = f"InstanceNorm{dims}d"
    ours = getattr(nn, name)(3, momentum=0.3, affine=affine, track_running_stats=track).double()
    theirs = getattr(torch.nn, name)(3, momentum=0.3, affine=affine,
                                     track_running_stats=track).double()
    assert repr(ours) == repr(theirs)
    x = np.random.default_rng(dims).standard_normal((2, 3) + (4,) * dims)
    for training in (True, False):
        ours.train(training), theirs.train(training)
        _check_module(ours, theirs, x)
        if track:
            np.testing.assert_allclose(ours.running_mean.numpy(),
                                       theirs.running_mean.numpy(), **TOL)
            np.testing.assert_allclose(ours.running_var.numpy(), theirs.running_var.numpy(),
                                       **TOL)
    with pytest.raises(ValueError, match=f"expected {dims + 1}D or {dims + 2}D input"):
        ours(ta.zeros(*(2,) * (dims + 3)))


def test_batch_norm_3d():
    ours, theirs = nn.BatchNorm3d(3).double(), torch.nn.BatchNorm3d(3).double()
    assert repr(ours) == repr(theirs)
    _check_module(ours, theirs, np.random.default_rng(0).standard_normal((2, 3, 2, 3, 2)))
    np.testing.assert_allclose(ours.running_var.numpy(), theirs.running_var.numpy(), **TOL)
    with pytest.raises(ValueError):
        ours(ta.zeros(2, 3, 4, 4))


@pytest.mark.parametrize("name,shape", [("LazyConv1d", (2, 3, 9)), ("LazyConv2d", (2, 3, 6, 7)),
                                        ("LazyConv3d", (3, 5, 5, 4)),
                                        ("LazyConvTranspose2d", (2, 3, 4, 5))])
def test_lazy_convolutions(name, shape):
    ours = getattr(nn, name)(4, 3, stride=2)
    theirs = getattr(torch.nn, name)(4, 3, stride=2)
    assert repr(ours) == repr(theirs)               # in_channels 0 until the first input
    assert len(list(ours.parameters())) == 2        # an optimizer can be made now
    x = np.random.default_rng(0).standard_normal(shape)
    with torch.no_grad():
        theirs.double()(torch.tensor(x))
    ours.double()(ta.tensor(x))
    assert repr(ours) == repr(theirs) and type(ours).__name__ == type(theirs).__name__
    ours.load_state_dict({k: ta.tensor(v.numpy()) for k, v in theirs.state_dict().items()})
    _check_module(ours, theirs, x)
