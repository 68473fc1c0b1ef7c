"""GradScaler against torch.amp.GradScaler("cpu"), driven by the same gradients: the same
scale after every update, the same skipped steps, the same state dicts, torch's errors."""
from __future__ import annotations

import numpy as np
import pytest

import tinyattn as ta
from tinyattn.amp import GradScaler

torch = pytest.importorskip("torch", reason="torch's GradScaler is the oracle")

# a gradient pattern per step: "ok", "inf" or "nan" in one element
PATTERN = ["ok", "ok", "inf", "ok", "ok", "ok", "ok", "nan", "nan", "ok", "ok", "ok", "ok",
           "ok", "ok", "ok", "inf", "ok"]


def _gradients(step: int, kind: str, scale: float) -> np.ndarray:
    grad = (np.random.default_rng(step).standard_normal(5) * 1e-3 * scale).astype(np.float32)
    if kind != "ok":
        grad[step % 5] = np.inf if kind == "inf" else np.nan
    return grad


def _run_tinyattn(settings, pattern):
    w = ta.zeros(5, requires_grad=True)
    opt = ta.optim.SGD([w], lr=0.1)
    scaler = GradScaler("cpu", **settings)
    trace = []
    for step, kind in enumerate(pattern):
        opt.zero_grad()
        loss = scaler.scale((w * 1.0).sum())           # scale() is called, as in a loop
        assert loss.dtype == np.float32
        w.grad = ta.tensor(_gradients(step, kind, scaler.get_scale()))
        before = w.detach().numpy().copy()
        scaler.unscale_(opt)
        unscaled = w.grad.numpy().copy()
        result = scaler.step(opt)
        scaler.update()
        stepped = not np.array_equal(before, w.detach().numpy())
        trace.append((scaler.get_scale(), stepped, result is None, unscaled.tobytes()))
    return trace, scaler.state_dict(), w.detach().numpy()


def _run_torch(settings, pattern):
    w = torch.zeros(5, requires_grad=True)
    opt = torch.optim.SGD([w], lr=0.1)
    scaler = torch.amp.GradScaler("cpu", **settings)
    trace = []
    for step, kind in enumerate(pattern):
        opt.zero_grad()
        scaler.scale((w * 1.0).sum())
        w.grad = torch.tensor(_gradients(step, kind, scaler.get_scale()))
        before = w.detach().numpy().copy()
        scaler.unscale_(opt)
        unscaled = w.grad.numpy().copy()
        result = scaler.step(opt)
        scaler.update()
        stepped = not np.array_equal(before, w.detach().numpy())
        trace.append((scaler.get_scale(), stepped, result is None, unscaled.tobytes()))
    return trace, scaler.state_dict(), w.detach().numpy()


@pytest.mark.parametrize("settings", [
    {"init_scale": 2.0 ** 16, "growth_interval": 3},
    {"init_scale": 1024.0, "growth_factor": 4.0, "backoff_factor": 0.25, "growth_interval": 2},
    {},                                            # torch's defaults: no growth in 18 steps
])
def test_scale_sequence_and_skipped_steps_match_torch(settings):
    ours, our_state, our_w = _run_tinyattn(settings, PATTERN)
    theirs, their_state, their_w = _run_torch(settings, PATTERN)
    assert ours == theirs
    assert our_state == their_state
    np.testing.assert_allclose(our_w, their_w, rtol=1e-6)   # unscaled grads: bit for bit
    assert any(not step[1] for step in ours)                # some steps were skipped


def test_the_scale_comparison_can_fail():
    """Negative control: another overflow pattern gives another scale sequence."""
    settings = {"growth_interval": 3}
    moved = ["ok"] + PATTERN[:-1]
    assert _run_tinyattn(settings, moved)[0] != _run_torch(settings, PATTERN)[0]


def test_unscale_once_per_step_and_torchs_errors():
    w = ta.zeros(3, requires_grad=True)
    opt = ta.optim.SGD([w], lr=0.1)
    scaler = GradScaler()
    with pytest.raises(AssertionError, match="_scale is None"):
        scaler.step(opt)
    scaler.scale(w.sum()).backward()
    scaler.unscale_(opt)
    np.testing.assert_array_equal(w.grad.numpy(), np.ones(3, np.float32))
    with pytest.raises(RuntimeError, match="unscale_\\(\\) has already been called on this "
                                           "optimizer since the last update\\(\\)"):
        scaler.unscale_(opt)
    scaler.step(opt)                                     # no second unscale inside step
    with pytest.raises(RuntimeError, match="unscale_\\(\\) is being called after step\\(\\)"):
        scaler.unscale_(opt)
    with pytest.raises(RuntimeError, match="step\\(\\) has already been called since the "
                                           "last update\\(\\)"):
        scaler.step(opt)
    with pytest.raises(RuntimeError, match="Closure use is not currently supported"):
        scaler.step(opt, closure=lambda: 0)
    scaler.update()
    scaler.scale(w.sum()).backward()
    scaler.step(opt)                                     # a fresh step after update


def test_float16_gradients_cannot_be_unscaled_as_in_torch():
    w = ta.zeros(3, dtype="float16", requires_grad=True)
    opt = ta.optim.SGD([w], lr=0.1)
    scaler = GradScaler()
    scaler.scale(w.float().sum()).backward()
    with pytest.raises(ValueError, match="Attempting to unscale FP16 gradients."):
        scaler.unscale_(opt)


def test_update_with_new_scale_state_dict_and_disabled():
    w = ta.zeros(3, requires_grad=True)
    opt = ta.optim.SGD([w], lr=0.1)
    scaler = GradScaler(init_scale=8.0)
    assert scaler.get_scale() == 8.0 and scaler.is_enabled()
    scaler.scale(w.sum()).backward()
    scaler.step(opt)
    scaler.update(new_scale=3.0)
    assert scaler.get_scale() == 3.0
    with pytest.raises(ValueError, match="new_scale should be a float or a 1-element"):
        scaler.update(new_scale=ta.ones(2))
    restored = GradScaler()
    restored.load_state_dict(scaler.state_dict())
    assert restored.state_dict() == scaler.state_dict()
    reference = torch.amp.GradScaler("cpu", init_scale=8.0)
    assert set(reference.state_dict()) == set(scaler.state_dict())
    off = GradScaler(enabled=False)
    loss = w.sum()
    assert off.scale(loss) is loss and off.get_scale() == 1.0 and off.state_dict() == {}
    with pytest.raises(RuntimeError, match="The source state dict is empty"):
        GradScaler().load_state_dict({})
    with pytest.warns(UserWarning, match="CUDA is not available"):
        assert not GradScaler("cuda").is_enabled()       # as torch on a machine without one


def test_scale_takes_lists_and_keeps_the_dtype():
    scaler = GradScaler(init_scale=4.0)
    a, b = ta.ones(2, dtype="float16"), ta.ones(2)
    out = scaler.scale([a, (b,)])
    assert out[0].dtype == np.float16 and out[0].tolist() == [4.0, 4.0]
    assert out[1][0].tolist() == [4.0, 4.0]
