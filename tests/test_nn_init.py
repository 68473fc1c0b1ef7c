"""nn.init: every initialiser draws from the distribution torch.nn.init draws from (the same
parameters, checked against torch's own bounds and stds, and a Kolmogorov-Smirnov test of the
whole sample at a fixed seed), works in place on a Parameter, and returns the tensor."""
import math

import numpy as np
import pytest
from scipy import stats

import tinyattn as ta
import tinyattn.nn as nn
from tinyattn.nn import init

SHAPE = (300, 200, 2)           # fan_in = 400, fan_out = 600: 120,000 draws


def _param(shape=SHAPE):
    ta.manual_seed(0)
    return nn.Parameter(ta.zeros(*shape))


def _ks(values, dist):
    """p-value of a KS test of the sample against a frozen scipy distribution."""
    return stats.kstest(np.asarray(values, np.float64).ravel(), dist.cdf).pvalue


CASES = {
    "uniform_": (lambda t: init.uniform_(t, -0.3, 0.7), stats.uniform(-0.3, 1.0)),
    "normal_": (lambda t: init.normal_(t, 0.5, 2.0), stats.norm(0.5, 2.0)),
    "xavier_uniform_": (lambda t: init.xavier_uniform_(t, gain=2.0),
                        stats.uniform(-2 * math.sqrt(6 / 1000), 4 * math.sqrt(6 / 1000))),
    "xavier_normal_": (lambda t: init.xavier_normal_(t), stats.norm(0, math.sqrt(2 / 1000))),
    "kaiming_uniform_": (lambda t: init.kaiming_uniform_(t, a=math.sqrt(5)),
                         stats.uniform(-1 / math.sqrt(400), 2 / math.sqrt(400))),
    "kaiming_normal_fan_out_relu": (
        lambda t: init.kaiming_normal_(t, mode="fan_out", nonlinearity="relu"),
        stats.norm(0, math.sqrt(2 / 600))),
    "trunc_normal_": (lambda t: init.trunc_normal_(t, mean=0.1, std=0.5, a=-0.2, b=0.9),
                      stats.truncnorm((-0.2 - 0.1) / 0.5, (0.9 - 0.1) / 0.5, 0.1, 0.5)),
}


@pytest.mark.parametrize("name", list(CASES))
def test_initialisers_draw_the_documented_distribution(name):
    fill, dist = CASES[name]
    p = _param()
    out = fill(p)
    assert out is p and p.requires_grad and p.dtype == np.float32
    assert _ks(p.numpy(), dist) > 1e-3
    np.testing.assert_allclose(p.numpy().std(), dist.std(), rtol=0.02)


@pytest.mark.parametrize("name", ["xavier_uniform_", "xavier_normal_", "kaiming_uniform_",
                                  "kaiming_normal_fan_out_relu"])
def test_negative_control_the_ks_test_rejects_a_wrong_scale(name):
    fill, dist = CASES[name]
    p = _param()
    fill(p)
    assert _ks(p.numpy() * 1.05, dist) < 1e-6     # 5% off in scale is caught


def test_scales_match_torch_nn_init():
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    for fill, tfill in [
            (lambda t: init.xavier_uniform_(t, gain=init.calculate_gain("tanh")),
             lambda t: torch.nn.init.xavier_uniform_(t, gain=torch.nn.init.calculate_gain(
                 "tanh"))),
            (lambda t: init.kaiming_uniform_(t, a=0.1, nonlinearity="leaky_relu"),
             lambda t: torch.nn.init.kaiming_uniform_(t, a=0.1, nonlinearity="leaky_relu")),
            (lambda t: init.kaiming_normal_(t, mode="fan_out"),
             lambda t: torch.nn.init.kaiming_normal_(t, mode="fan_out"))]:
        ours = fill(_param()).numpy()
        theirs = tfill(torch.empty(SHAPE)).numpy()
        np.testing.assert_allclose(ours.std(), theirs.std(), rtol=0.02)
        np.testing.assert_allclose(np.abs(ours).max(), np.abs(theirs).max(), rtol=0.2)
    for name, param in [("linear", None), ("sigmoid", None), ("tanh", None), ("relu", None),
                        ("leaky_relu", None), ("leaky_relu", 0.3), ("selu", None),
                        ("conv2d", None)]:
        assert init.calculate_gain(name, param) == pytest.approx(
            torch.nn.init.calculate_gain(name, param))


def test_orthogonal_eye_constants_and_seeding():
    for shape in [(6, 4), (4, 6), (3, 2, 4)]:
        w = init.orthogonal_(_param(shape), gain=2.0).numpy().reshape(shape[0], -1)
        small = min(w.shape)
        gram = w @ w.T if w.shape[0] == small else w.T @ w
        np.testing.assert_allclose(gram, 4.0 * np.eye(small), atol=1e-5)
    assert np.array_equal(init.eye_(_param((2, 3))).numpy(), np.eye(2, 3))
    assert np.array_equal(init.zeros_(_param((2,))).numpy(), [0, 0])
    assert np.array_equal(init.ones_(_param((2,))).numpy(), [1, 1])
    assert np.array_equal(init.constant_(_param((2,)), 0.5).numpy(), [0.5, 0.5])
    a = init.normal_(_param((5,))).numpy().copy()
    b = init.normal_(_param((5,))).numpy()                 # _param reseeds with 0
    assert np.array_equal(a, b)
    g = init.normal_(_param((5,)), generator=np.random.default_rng(1)).numpy()
    assert not np.array_equal(a, g)


def test_init_inside_a_recorded_graph_bumps_the_version_so_backward_refuses():
    # the weight is saved only because the input needs a gradient (as torch's addmm); with an
    # input that needs none, nothing saved was changed and backward runs (torch: the same)
    layer = nn.Linear(3, 2)
    out = layer(ta.ones(1, 3, requires_grad=True)).sum()
    init.zeros_(layer.weight)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        out.backward()
    layer = nn.Linear(3, 2)
    out = layer(ta.ones(1, 3)).sum()
    init.zeros_(layer.weight)
    out.backward()
    assert layer.weight.grad is not None


def test_init_errors_are_clear():
    with pytest.raises(ValueError, match="fewer than 2 dimensions"):
        init.xavier_uniform_(_param((4,)))
    with pytest.raises(ValueError, match="mode 'fan_avg' not supported"):
        init.kaiming_uniform_(_param((3, 3)), mode="fan_avg")
    with pytest.raises(ValueError, match="unsupported nonlinearity 'swish'"):
        init.calculate_gain("swish")
    with pytest.raises(TypeError, match="floating-point"):
        init.normal_(ta.zeros(3, dtype="int64"))
    with pytest.raises(TypeError, match="got ndarray"):
        init.zeros_(np.zeros(3))
    with pytest.warns(UserWarning, match="zero-element"):
        init.kaiming_uniform_(_param((0, 3)))
    with pytest.raises(ValueError, match="a < b"):
        init.trunc_normal_(_param((3,)), a=1.0, b=0.0)


def test_model_apply_with_init_as_torch_users_write_it():
    def init_weights(m):
        if isinstance(m, nn.Linear):
            init.xavier_uniform_(m.weight)
            init.zeros_(m.bias)

    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2)).apply(init_weights)
    assert not model[0].bias.numpy().any() and not model[2].bias.numpy().any()
    assert np.abs(model[0].weight.numpy()).max() <= math.sqrt(6 / 12)
