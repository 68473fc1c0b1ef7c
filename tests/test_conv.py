"""Convolution (ops/conv.py, nn/conv.py) against torch in float64: values and every gradient
over the options torch has (stride, padding ints/tuples/"same"/"valid", dilation, groups incl.
depthwise, padding_mode, output_padding, output_size), unbatched inputs, half dtypes, errors
for bad shapes, parameter names/shapes/init and the printout. Negative controls show the
comparison can fail (a flipped kernel, a stride the backward forgets)."""
import math

import numpy as np
import pytest

import tinyattn as ta
import tinyattn.functional as F
from tinyattn import nn

torch = pytest.importorskip("torch", reason="torch is the reference for these tests")
TF = torch.nn.functional
TOL = dict(rtol=1e-10, atol=1e-11)


def _compare(ours_fn, theirs_fn, arrays, seed=0, **kwargs):
    """Run both on float64 copies of ``arrays``; compare the output and each input's
    gradient for a random upstream gradient. Returns the max error (for controls)."""
    rng = np.random.default_rng(seed)
    ts = [torch.tensor(a, requires_grad=True) for a in arrays]
    os_ = [ta.tensor(a, requires_grad=True) for a in arrays]
    want = theirs_fn(*ts, **kwargs)
    got = ours_fn(*os_, **kwargs)
    assert tuple(got.shape) == tuple(want.shape)
    g = rng.standard_normal(tuple(want.shape))
    want.backward(torch.tensor(g))
    got.backward(ta.tensor(g))
    np.testing.assert_allclose(got.numpy(), want.detach().numpy(), **TOL)
    for o, t in zip(os_, ts):
        np.testing.assert_allclose(o.grad.numpy(), t.grad.numpy(), **TOL)


def _arrays(*shapes, seed=1):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(s) for s in shapes]


CONV2D_CASES = [
    dict(),
    dict(stride=2),
    dict(stride=(2, 1), padding=(1, 2)),
    dict(padding="same"),
    dict(padding="same", dilation=(2, 1)),
    dict(padding="valid", stride=(1, 3)),
    dict(dilation=2, padding=2),
    dict(groups=2, stride=(1, 2), padding=1),
]


@pytest.mark.parametrize("kwargs", CONV2D_CASES, ids=str)
@pytest.mark.parametrize("bias", [True, False])
def test_conv2d_matches_torch(kwargs, bias):
    groups = kwargs.get("groups", 1)
    shapes = [(2, 4, 7, 8), (6, 4 // groups, 3, 2)] + ([(6,)] if bias else [])
    _compare(F.conv2d, TF.conv2d, _arrays(*shapes), **kwargs)


def test_conv2d_depthwise_and_unbatched():
    _compare(F.conv2d, TF.conv2d, _arrays((4, 6, 5), (8, 1, 3, 3), (8,)), groups=4,
             padding=1)


def test_conv1d_conv3d_match_torch():
    _compare(F.conv1d, TF.conv1d, _arrays((2, 4, 11), (6, 2, 3), (6,)), stride=2, padding=1,
             dilation=2, groups=2)
    _compare(F.conv1d, TF.conv1d, _arrays((3, 10), (5, 3, 4)), padding="same")
    _compare(F.conv3d, TF.conv3d, _arrays((1, 2, 4, 5, 4), (3, 2, 2, 3, 2), (3,)),
             stride=(1, 2, 1), padding=1)


@pytest.mark.parametrize("kwargs", [dict(), dict(stride=2, padding=1, output_padding=1),
                                    dict(stride=(2, 3), output_padding=(1, 2), groups=2),
                                    dict(stride=2, dilation=2, padding=(0, 2))], ids=str)
def test_conv_transpose2d_matches_torch(kwargs):
    _compare(F.conv_transpose2d, TF.conv_transpose2d, _arrays((2, 4, 5, 4), (4, 3, 3, 2),
                                                              (3 * kwargs.get("groups", 1),)),
             **kwargs)


def test_conv_transpose1d_matches_torch():
    _compare(F.conv_transpose1d, TF.conv_transpose1d, _arrays((2, 4, 6), (4, 3, 3)),
             stride=3, padding=1, output_padding=2)
    _compare(F.conv_transpose1d, TF.conv_transpose1d, _arrays((4, 6), (4, 3, 3), (3,)))


def test_unfold_fold_match_torch():
    _compare(F.unfold, TF.unfold, _arrays((2, 3, 6, 7)), kernel_size=(2, 3), dilation=(2, 1),
             padding=1, stride=(1, 2))
    _compare(F.fold, TF.fold, _arrays((2, 12, 12)), output_size=(5, 6), kernel_size=2,
             stride=(1, 2))


def test_conv_transpose_is_the_adjoint_of_conv():
    """<conv(x), y> == <x, conv_transpose(y)> for the same weight: the derivation's claim."""
    x, w, y = _arrays((2, 3, 7, 7), (4, 3, 3, 3), (2, 4, 4, 4))
    kw = dict(stride=2, padding=1)
    left = (F.conv2d(ta.tensor(x), ta.tensor(w), **kw).numpy() * y).sum()
    right = (x * F.conv_transpose2d(ta.tensor(y), ta.tensor(w), **kw).numpy()).sum()
    assert math.isclose(left, right, rel_tol=1e-12)


def test_negative_control_flipped_kernel_and_forgotten_stride():
    """The comparison catches a flipped kernel (convolution vs correlation) and a backward
    that ignores the stride."""
    x, w = _arrays((1, 2, 6, 6), (3, 2, 3, 3))
    with pytest.raises(AssertionError):
        _compare(lambda a, b: F.conv2d(a, b.flip(-1, -2)), TF.conv2d, [x, w])
    with pytest.raises(AssertionError):        # right values, gradient of the stride-1 conv
        _compare(lambda a, b: F.conv2d(a, b)[..., ::2, ::2] * 1.0 + 0 * a.sum(),
                 lambda a, b: TF.conv2d(a, b, stride=2) + 1e-3, [x, w])


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
def test_conv2d_low_precision_keeps_dtype(dtype):
    x, w, b = _arrays((1, 3, 6, 6), (4, 3, 3, 3), (4,))
    tdt = getattr(torch, dtype)
    want = TF.conv2d(*(torch.tensor(a).to(tdt) for a in (x, w, b)), padding=1)
    got = F.conv2d(*(ta.tensor(a).to(getattr(ta, dtype)) for a in (x, w, b)), padding=1)
    assert str(got.dtype) == dtype
    tol = 1e-5 if dtype == "float32" else 3e-2
    np.testing.assert_allclose(got.float().numpy(), want.float().numpy(), rtol=tol, atol=tol)


@pytest.mark.parametrize("call", [
    lambda m: m.conv2d(m.zeros(1, 3, 2, 2), m.zeros(4, 3, 3, 3)),             # kernel too big
    lambda m: m.conv2d(m.zeros(1, 4, 5, 5), m.zeros(6, 3, 3, 3)),             # channels
    lambda m: m.conv2d(m.zeros(1, 4, 5, 5), m.zeros(5, 2, 3, 3), groups=2),   # O % groups
    lambda m: m.conv2d(m.zeros(1, 4, 5, 5), m.zeros(4, 2, 3, 3), groups=3),   # C % groups
    lambda m: m.conv2d(m.zeros(4, 5), m.zeros(4, 4, 3, 3)),                   # 2-D input
    lambda m: m.conv2d(m.zeros(1, 3, 5, 5), m.zeros(4, 3, 3, 3), m.zeros(3)),  # bias size
    lambda m: m.conv2d(m.zeros(1, 3, 5, 5), m.zeros(4, 3, 3, 3), stride=0),
    lambda m: m.conv2d(m.zeros(1, 3, 5, 5), m.zeros(4, 3, 3, 3), padding=-1),
    lambda m: m.conv2d(m.zeros(1, 3, 5, 5), m.zeros(4, 3, 3, 3), stride=2, padding="same"),
    lambda m: m.conv2d(m.zeros(1, 3, 5, 5), m.zeros(4, 3, 3, 3), padding="full"),
    lambda m: m.conv2d(m.zeros(1, 3, 5, 5), m.zeros(4, 3, 3, 3).double()),   # dtypes differ
    lambda m: m.conv_transpose2d(m.zeros(1, 3, 5, 5), m.zeros(3, 2, 3, 3), stride=2,
                                 output_padding=2),
    lambda m: m.fold(m.zeros(1, 12, 7), output_size=(4, 5), kernel_size=2),
], ids=["kernel-too-big", "channels", "out-groups", "in-groups", "2d-input", "bias",
        "stride0", "negative-padding", "same-strided", "bad-string", "dtype", "output-padding",
        "fold-blocks"])
def test_bad_arguments_fail_loudly_as_in_torch(call):
    class Torch:
        conv2d, conv_transpose2d, fold = TF.conv2d, TF.conv_transpose2d, TF.fold
        zeros = staticmethod(torch.zeros)

    class Ours:
        conv2d, conv_transpose2d, fold = F.conv2d, F.conv_transpose2d, F.fold
        zeros = staticmethod(ta.zeros)

    with pytest.raises((RuntimeError, ValueError)) as theirs:
        call(Torch)
    with pytest.raises(type(theirs.value)):
        call(Ours)


def test_kernel_too_large_message_names_the_sizes():
    with pytest.raises(RuntimeError, match=r"padded input size per channel: \(2 x 2\)"):
        F.conv2d(ta.zeros(1, 3, 2, 2), ta.zeros(4, 3, 3, 3))


# --- modules ----------------------------------------------------------------------------------

def _module_pair(ours_cls, theirs_cls, *args, **kwargs):
    theirs = theirs_cls(*args, **kwargs).double()
    ours = ours_cls(*args, **kwargs).double()
    ours.load_state_dict({k: ta.tensor(v.detach().numpy()) for k, v in
                          theirs.state_dict().items()})
    return ours, theirs


@pytest.mark.parametrize("mode", ["zeros", "reflect", "replicate", "circular"])
@pytest.mark.parametrize("padding", [1, (2, 1), "same"])
def test_conv2d_module_padding_modes(mode, padding):
    ours, theirs = _module_pair(nn.Conv2d, torch.nn.Conv2d, 4, 6, (3, 4), padding=padding,
                                padding_mode=mode, groups=2)
    _compare(ours, theirs, _arrays((2, 4, 7, 8)))
    rng = np.random.default_rng(3)
    x = rng.standard_normal((2, 4, 7, 8))
    xo, xt = ta.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    ours(xo).sum().backward()
    theirs(xt).sum().backward()
    for name, p in theirs.named_parameters():
        np.testing.assert_allclose(dict(ours.named_parameters())[name].grad.numpy(),
                                   p.grad.numpy(), **TOL)


def test_conv_modules_parameters_init_and_printout():
    for ours_cls, theirs_cls, args, kwargs in [
            (nn.Conv2d, torch.nn.Conv2d, (3, 16, 5), {}),
            (nn.Conv2d, torch.nn.Conv2d, (4, 8, (3, 2)),
             dict(stride=2, padding=1, dilation=2, groups=2, bias=False,
                  padding_mode="reflect")),
            (nn.Conv2d, torch.nn.Conv2d, (4, 8, 3), dict(padding="same")),
            (nn.Conv1d, torch.nn.Conv1d, (3, 5, 4), dict(padding="valid")),
            (nn.ConvTranspose2d, torch.nn.ConvTranspose2d, (6, 4, 3),
             dict(stride=2, output_padding=1, groups=2)),
            (nn.ConvTranspose1d, torch.nn.ConvTranspose1d, (6, 4, 3), {})]:
        ours, theirs = ours_cls(*args, **kwargs), theirs_cls(*args, **kwargs)
        assert repr(ours).split("  #")[0] == repr(theirs)   # tinyattn adds a param count
        shapes = {k: tuple(v.shape) for k, v in theirs.state_dict().items()}
        assert {k: tuple(v.shape) for k, v in ours.state_dict().items()} == shapes
        assert ours.weight.dtype == np.float32
        fan_in = theirs.weight.shape[1] * math.prod(theirs.weight.shape[2:])
        bound = 1 / math.sqrt(fan_in)
        for p in ours.parameters():      # U(-bound, bound), spread over most of it
            data = p.numpy()
            assert np.abs(data).max() <= bound
            assert np.abs(data).max() > 0.5 * bound


def test_conv_module_errors_as_torch():
    for kwargs in [dict(groups=3), dict(padding="same", stride=2), dict(padding="full"),
                   dict(padding_mode="zero")]:
        with pytest.raises(ValueError):
            torch.nn.Conv2d(4, 6, 3, **kwargs)
        with pytest.raises(ValueError):
            nn.Conv2d(4, 6, 3, **kwargs)
    with pytest.raises(ValueError):
        nn.ConvTranspose2d(4, 6, 3, padding_mode="reflect")


def test_conv_transpose_output_size():
    ours, theirs = _module_pair(nn.ConvTranspose2d, torch.nn.ConvTranspose2d, 3, 2, 3,
                                stride=2, padding=1)
    x = _arrays((1, 3, 4, 4))[0]
    want = theirs(torch.tensor(x), output_size=[8, 8])
    got = ours(ta.tensor(x), output_size=[8, 8])
    assert tuple(got.shape) == (1, 2, 8, 8)
    np.testing.assert_allclose(got.numpy(), want.detach().numpy(), **TOL)
    with pytest.raises(ValueError):
        ours(ta.tensor(x), output_size=[10, 10])


def test_unfold_fold_modules():
    assert repr(nn.Unfold(2, padding=1)) == repr(torch.nn.Unfold(2, padding=1))
    x = _arrays((1, 2, 4, 5))[0]
    got = nn.Fold((4, 5), 2, padding=1)(nn.Unfold(2, padding=1)(ta.tensor(x)))
    want = torch.nn.Fold((4, 5), 2, padding=1)(torch.nn.Unfold(2, padding=1)(torch.tensor(x)))
    np.testing.assert_allclose(got.numpy(), want.numpy(), **TOL)
