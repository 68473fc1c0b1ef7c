"""docs/optim.md's derivations, recomputed against tinyattn's optimizers: the momentum buffer
under a constant gradient (with dampening and Nesterov), and what clipping does under SGD and
under Adam. Each check has a negative control."""
import numpy as np
import pytest

import tinyattn as ta
import tinyattn.optim as optim

BETA1, BETA2, LR = 0.9, 0.999, 1e-3


def _param(n: int = 1):
    return ta.tensor(np.zeros(n), dtype="float64", requires_grad=True)


def _backward_gradient(p, g) -> None:
    """Leave exactly g in p.grad, through the engine: d(sum(p * g))/dp = g."""
    p.grad = None
    (p * ta.tensor(np.asarray(g, dtype=np.float64))).sum().backward()


def _steps(opt, p, grads, clip=None) -> list:
    """The update p_t - p_{t-1} of every step, with optional global-norm clipping."""
    updates = []
    for g in grads:
        before = p.numpy().copy()
        _backward_gradient(p, g)
        if clip is not None:
            optim.clip_grad_norm_([p], clip)
        opt.step()
        updates.append(p.numpy() - before)
    return updates


# ----------------------------------------------------------------- momentum
@pytest.mark.parametrize("nesterov", [False, True])
def test_momentum_buffer_under_a_constant_gradient(nesterov):
    mu, tau, g = 0.9, 0.0 if nesterov else 0.5, np.array([2.0, -1.0])
    p = _param(2)
    updates = _steps(optim.SGD([p], lr=0.1, momentum=mu, dampening=tau, nesterov=nesterov),
                     p, [g] * 300)
    for t in (1, 2, 5, 20):                                # b_t, closed form
        b = mu ** (t - 1) * g + (1 - tau) * (1 - mu ** (t - 1)) / (1 - mu) * g
        d = g + mu * b if nesterov else b
        np.testing.assert_allclose(updates[t - 1], -0.1 * d, rtol=1e-12)
    limit = g * (1 + mu * (1 - tau) / (1 - mu)) if nesterov else (1 - tau) * g / (1 - mu)
    np.testing.assert_allclose(updates[-1], -0.1 * limit, rtol=1e-10)
    if not nesterov:   # negative control: eta g / (1 - mu) is the limit only for dampening 0
        assert not np.allclose(updates[-1], -0.1 * g / (1 - mu), rtol=1e-2)


# ----------------------------------------------------------------- clipping
def test_clipping_scales_the_sgd_step_but_not_adams_first_step():
    g = np.array([3.0, -4.0, 0.5])                          # norm 5.02; clipped to 1
    c = 1.0 / (np.linalg.norm(g) + 1e-6)
    sgd = [_steps(optim.SGD([p], lr=0.1), p, [g], clip=clip)[0]
           for p, clip in ((_param(3), None), (_param(3), 1.0))]
    np.testing.assert_allclose(sgd[1], c * sgd[0], rtol=1e-12)      # SGD: c times the step
    adam = [_steps(optim.Adam([p], lr=LR), p, [g], clip=clip)[0]
            for p, clip in ((_param(3), None), (_param(3), 1.0))]
    np.testing.assert_allclose(adam[1], adam[0], rtol=1e-6)         # Adam: unchanged
    np.testing.assert_allclose(adam[0], -LR * np.sign(g), rtol=1e-6)
    assert not np.allclose(adam[1], c * adam[0], rtol=1e-2)        # negative control


def _adam_spike_step(spike: float, history: int = 200, clip=None) -> float:
    """The Adam update of a spike after ``history`` steps of gradient 1 (one coordinate)."""
    p = _param()
    return _steps(optim.Adam([p], lr=LR), p, [[1.0]] * history + [[spike]], clip=clip)[-1][0]


def test_adam_step_is_not_monotone_in_the_spike_and_peaks_where_derived():
    history = 200
    m, v = 1 - BETA1 ** history, 1 - BETA2 ** history          # m_{t-1}, v_{t-1} for g0 = 1
    turning = (1 - BETA1) * BETA2 * v / (BETA1 * (1 - BETA2) * m)
    t = history + 1
    f = lambda x: (BETA1 * m + (1 - BETA1) * x) / np.sqrt(BETA2 * v + (1 - BETA2) * x * x)
    for spike in (0.5 * turning, turning, 3 * turning, 1e4):   # the closed form, ignoring eps
        expected = -LR * np.sqrt(1 - BETA2 ** t) / (1 - BETA1 ** t) * f(spike)
        assert _adam_spike_step(spike) == pytest.approx(expected, rel=1e-6)
    steps = {s: abs(_adam_spike_step(s)) for s in (0.5 * turning, turning, 2 * turning)}
    assert steps[turning] > steps[0.5 * turning] and steps[turning] > steps[2 * turning]
    # a spike far above the turning point: clipping it down makes the step LARGER
    unclipped, clipped = _adam_spike_step(1e4), _adam_spike_step(1e4, clip=turning)
    assert abs(clipped) > abs(unclipped)
    # the steady-state turning point and bounds quoted in the doc
    assert round((1 - BETA1) * BETA2 / (BETA1 * (1 - BETA2))) == 111
    assert f"{(1 - BETA1) / np.sqrt(1 - BETA2):.2f}" == "3.16"
    assert f"{np.sqrt(BETA1 ** 2 / BETA2 + (1 - BETA1) ** 2 / (1 - BETA2)):.2f}" == "3.29"
    # negative control: below the turning point, clipping shrinks the step as under SGD
    assert abs(_adam_spike_step(turning, clip=turning / 4)) < abs(_adam_spike_step(turning))


def test_an_unclipped_spike_suppresses_adams_later_steps():
    grads = [[1.0]] * 200 + [[1e4]] + [[1.0]] * 500
    updates = {clip: _steps(optim.Adam([p], lr=LR), p, grads, clip=clip)
               for clip, p in ((None, _param()), (100.0, _param()))}
    later = {clip: abs(u[-1][0]) / LR for clip, u in updates.items()}   # 500 steps after
    assert f"{later[None]:.1%}" == "0.3%" and f"{later[100.0]:.0%}" == "28%"   # docs/optim.md
    assert later[100.0] > 50 * later[None]
    # negative control: without a spike the step stays near eta
    p = _param()
    calm = _steps(optim.Adam([p], lr=LR), p, [[1.0]] * 701)[-1][0]
    assert abs(calm) / LR > 0.9
