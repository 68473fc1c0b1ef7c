"""optim.Muon against torch.optim.Muon: trajectories (every option: nesterov, momentum,
weight_decay, adjust_lr_fn, ns_steps, ns_coefficients, tensor lr) in float64 and float32, the
bfloat16 Newton-Schulz iteration bit for bit on small matrices and to bfloat16 precision on
larger ones, state_dict round trips, and torch's errors. Negative controls show the
comparisons can fail."""
import numpy as np
import pytest

import tinyattn as ta
import tinyattn.optim as optim
from tinyattn.optim.muon import zeropower_via_newtonschulz

torch = pytest.importorskip("torch", reason="torch is the reference for these tests")
from torch.optim._muon import _zeropower_via_newtonschulz as torch_newton_schulz  # noqa: E402

COEFFICIENTS = (3.4445, -4.7750, 2.0315)


def _trajectory(lib, shapes, kwargs, dtype="float64", steps=5, seed=0):
    rng = np.random.default_rng(seed)
    values = [rng.standard_normal(s) for s in shapes]
    targets = [rng.standard_normal(s) for s in shapes]
    params = [lib.tensor(v, dtype=getattr(lib, dtype), requires_grad=True) for v in values]
    if lib is torch and isinstance(kwargs.get("lr"), ta.Tensor):
        kwargs = dict(kwargs, lr=torch.tensor(kwargs["lr"].item()))
    opt = (torch.optim.Muon if lib is torch else optim.Muon)(params, **kwargs)
    out = []
    for _ in range(steps):
        opt.zero_grad()
        loss = sum(((p.tanh() - lib.tensor(t, dtype=getattr(lib, dtype))) ** 2).sum()
                   for p, t in zip(params, targets))
        loss.backward()
        opt.step()
        out.append([p.detach().numpy().astype(np.float64).copy() for p in params])
    return out, opt


CASES = [dict(), dict(lr=0.02), dict(nesterov=False), dict(momentum=0.0), dict(momentum=0.6),
         dict(weight_decay=0.0), dict(weight_decay=0.3, lr=0.05),
         dict(adjust_lr_fn="original"), dict(adjust_lr_fn="match_rms_adamw", lr=0.01),
         dict(ns_steps=2), dict(ns_steps=0), dict(ns_coefficients=(3.0, -3.2, 1.2)),
         dict(eps=0.5)]


@pytest.mark.parametrize("kwargs", CASES, ids=str)
@pytest.mark.parametrize("shapes", [[(3, 4)], [(5, 2), (2, 2)]], ids=str)
def test_float64_trajectory_matches_torch(kwargs, shapes):
    ours, _ = _trajectory(ta, shapes, kwargs)
    theirs, _ = _trajectory(torch, shapes, kwargs)
    for step_ours, step_theirs in zip(ours, theirs):
        for a, b in zip(step_ours, step_theirs):
            np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-14)


def test_float32_trajectory_and_tensor_lr_match_torch():
    for kwargs in (dict(lr=0.01), dict(lr=ta.tensor(0.01))):
        ours, _ = _trajectory(ta, [(4, 3)], kwargs, dtype="float32")
        theirs, _ = _trajectory(torch, [(4, 3)], kwargs, dtype="float32")
        np.testing.assert_allclose(ours[-1][0], theirs[-1][0], rtol=1e-6, atol=1e-7)


def test_negative_control_plain_momentum_differs():
    """Torch's buffer is lerp(M, G, 1 - mu) (M = mu M + (1 - mu) G), not mu M + G: the
    trajectories of the two differ, so the comparison above can fail."""
    theirs, _ = _trajectory(torch, [(3, 4)], dict(nesterov=False))
    ours, _ = _trajectory(ta, [(3, 4)], dict(nesterov=False, momentum=0.0))
    assert not np.allclose(ours[-1][0], theirs[-1][0], rtol=1e-9)


@pytest.mark.parametrize("shape", [(3, 4), (4, 3), (2, 7), (6, 6)])
def test_newton_schulz_is_torchs_bfloat16_iteration_bit_for_bit(shape):
    rng = np.random.default_rng(3)
    for scale in (1e-3, 1.0, 50.0):
        g = rng.standard_normal(shape) * scale
        want = torch_newton_schulz(torch.tensor(g), COEFFICIENTS, 5, 1e-7).float().numpy()
        np.testing.assert_array_equal(zeropower_via_newtonschulz(g, COEFFICIENTS, 5, 1e-7),
                                      want)


def test_newton_schulz_of_larger_matrices_within_bfloat16_precision():
    """BLAS's order of float32 sums can move an element by one bfloat16 unit; what comes
    out is still close to torch's and about orthogonal."""
    g = np.random.default_rng(4).standard_normal((64, 32))
    want = torch_newton_schulz(torch.tensor(g), COEFFICIENTS, 5, 1e-7).float().numpy()
    got = zeropower_via_newtonschulz(g, COEFFICIENTS, 5, 1e-7)
    np.testing.assert_allclose(got, want, atol=0.05)
    singular = np.linalg.svd(got.astype(np.float64), compute_uv=False)
    assert 0.5 < singular.min() and singular.max() < 1.5
    rounded_once = np.linalg.svd(g, full_matrices=False)
    assert not np.allclose(got, rounded_once[0] @ rounded_once[2], atol=1e-3)  # not exact UV^T


def test_state_dict_keys_and_round_trip_as_torch():
    ours, opt = _trajectory(ta, [(3, 4)], dict(lr=0.02), steps=2)
    _, torch_opt = _trajectory(torch, [(3, 4)], dict(lr=0.02), steps=2)
    state, torch_state = opt.state_dict(), torch_opt.state_dict()
    assert set(state["state"][0]) == set(torch_state["state"][0]) == {"momentum_buffer"}
    assert set(state["param_groups"][0]) == set(torch_state["param_groups"][0])
    np.testing.assert_allclose(np.asarray(state["state"][0]["momentum_buffer"]),
                               torch_state["state"][0]["momentum_buffer"].numpy(), rtol=1e-12)


@pytest.mark.parametrize("params,kwargs,error,match", [
    ([(3,)], {}, ValueError, "only supports 2D parameters"),
    ([(2, 3, 4)], {}, ValueError, "only supports 2D parameters"),
    ([(2, 3)], dict(adjust_lr_fn="arbitrary"), ValueError, "arbitrary is not supported"),
    ([(2, 3)], dict(lr=-1.0), ValueError, None),
    ([(2, 3)], dict(momentum=-0.1), ValueError, None),
    ([(2, 3)], dict(weight_decay=-0.1), ValueError, None),
], ids=["vector", "3d", "adjust", "lr", "momentum", "weight_decay"])
def test_constructor_errors_as_torch(params, kwargs, error, match):
    with pytest.raises(error, match=match):
        torch.optim.Muon([torch.zeros(s, requires_grad=True) for s in params], **kwargs)
    with pytest.raises(error, match=match):
        optim.Muon([ta.zeros(s, requires_grad=True) for s in params], **kwargs)


@pytest.mark.parametrize("kwargs,match", [(dict(ns_steps=100), "less than 100"),
                                          (dict(ns_coefficients=(1.0, 2.0)), "exactly 3")])
def test_step_errors_as_torch(kwargs, match):
    for lib, cls in ((torch, torch.optim.Muon), (ta, optim.Muon)):
        p = lib.ones(2, 3, requires_grad=True)
        opt = cls([p], **kwargs)
        (p * 2).sum().backward()
        with pytest.raises(ValueError, match=match):
            opt.step()
