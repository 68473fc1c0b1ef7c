"""tinyattn.optim: parity with torch.optim, dtype and device discipline, convergence, exact
resumption from state dicts, gradient clipping, schedules, and clear errors."""
import math
import pickle

import numpy as np
import pytest

import tinyattn as ta
from tinyattn import backend, optim, strict_device
from tinyattn.nn import Parameter
from tinyattn.tensor import Tensor

strict_device.enable()
STRICT = strict_device.DEVICE

SHAPES = [(3, 4), (5,)]
# (name, tinyattn constructor, torch constructor name, keyword arguments shared by both)
CONFIGS = [
    ("sgd", optim.SGD, "SGD", dict(lr=0.1)),
    ("sgd_momentum", optim.SGD, "SGD", dict(lr=0.1, momentum=0.9)),
    ("sgd_dampening", optim.SGD, "SGD", dict(lr=0.05, momentum=0.8, dampening=0.3)),
    ("sgd_nesterov", optim.SGD, "SGD", dict(lr=0.1, momentum=0.9, nesterov=True)),
    ("sgd_weight_decay", optim.SGD, "SGD", dict(lr=0.1, momentum=0.9, weight_decay=0.05)),
    ("adam", optim.Adam, "Adam", dict(lr=0.01)),
    ("adam_l2", optim.Adam, "Adam", dict(lr=0.02, betas=(0.8, 0.99), weight_decay=0.1)),
    ("adamw", optim.AdamW, "AdamW", dict(lr=0.01)),
    ("adamw_strong", optim.AdamW, "AdamW", dict(lr=0.05, eps=1e-6, weight_decay=0.3)),
    ("adam_amsgrad", optim.Adam, "Adam", dict(lr=0.02, weight_decay=0.1, amsgrad=True)),
    ("adamw_amsgrad_maximize", optim.AdamW, "AdamW", dict(lr=0.01, amsgrad=True,
                                                          maximize=True)),
    ("rmsprop", optim.RMSprop, "RMSprop", dict(lr=0.01)),
    ("rmsprop_all", optim.RMSprop, "RMSprop", dict(lr=0.01, alpha=0.9, eps=1e-6,
                                                    weight_decay=0.1, momentum=0.8,
                                                    centered=True)),
    ("sgd_maximize", optim.SGD, "SGD", dict(lr=0.1, momentum=0.9, weight_decay=0.05,
                                            maximize=True)),
    ("nadam", optim.NAdam, "NAdam", dict(lr=0.01)),
    ("nadam_all", optim.NAdam, "NAdam", dict(lr=0.02, betas=(0.8, 0.99), eps=1e-6,
                                              weight_decay=0.1, momentum_decay=0.05,
                                              maximize=True)),
    ("nadamw", optim.NAdam, "NAdam", dict(lr=0.02, weight_decay=0.2,
                                          decoupled_weight_decay=True)),
    ("radam", optim.RAdam, "RAdam", dict(lr=0.01)),
    ("radam_fast_rectified", optim.RAdam, "RAdam", dict(lr=0.02, betas=(0.9, 0.9),
                                                        weight_decay=0.1, maximize=True)),
    ("radamw", optim.RAdam, "RAdam", dict(lr=0.02, weight_decay=0.2,
                                          decoupled_weight_decay=True)),
    ("adamax", optim.Adamax, "Adamax", dict(lr=0.02)),
    ("adamax_all", optim.Adamax, "Adamax", dict(lr=0.05, betas=(0.7, 0.9), eps=1e-4,
                                                weight_decay=0.1, maximize=True)),
    ("adagrad", optim.Adagrad, "Adagrad", dict(lr=0.1)),
    ("adagrad_all", optim.Adagrad, "Adagrad", dict(lr=0.1, lr_decay=0.05, weight_decay=0.1,
                                                   initial_accumulator_value=0.2, eps=1e-8)),
]
CONFIG_IDS = [c[0] for c in CONFIGS]


def initial_arrays(seed=0, dtype=np.float64):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(shape).astype(dtype) for shape in SHAPES]


def gradient_sequence(steps, seed=1, dtype=np.float64):
    """Per step, one gradient per parameter; the second parameter has none at step 3."""
    rng = np.random.default_rng(seed)
    seq = [[rng.standard_normal(shape).astype(dtype) for shape in SHAPES] for _ in range(steps)]
    if steps > 3:
        seq[3][1] = None
    return seq


def run_ours(make, params, grads, opt=None):
    opt = make(params) if opt is None else opt
    for step_grads in grads:
        for p, g in zip(params, step_grads):
            p.grad = None if g is None else ta.tensor(g, device=p.device)
        opt.step()
    return opt


def run_torch(torch, name, kwargs, arrays, grads):
    """torch's run under its default dtype float32 (tinyattn's only one), so its scalar state
    (step, NAdam's product of mu's, ASGD's eta and mu) is float32 0-d tensors, as tinyattn
    rounds them."""
    params = [torch.tensor(a.copy(), requires_grad=True) for a in arrays]
    opt = getattr(torch.optim, name)(params, foreach=False, **kwargs)
    for step_grads in grads:
        for p, g in zip(params, step_grads):
            p.grad = None if g is None else torch.tensor(g.copy())
        opt.step()
    return [p.detach().numpy() for p in params]


# ---------------------------------------------------------------- parity with torch.optim
@pytest.mark.parametrize("name,cls,torch_name,kwargs", CONFIGS, ids=CONFIG_IDS)
def test_ten_steps_match_torch_in_float64(name, cls, torch_name, kwargs):
    torch = pytest.importorskip("torch")
    arrays, grads = initial_arrays(), gradient_sequence(10)
    params = [Parameter(a.copy()) for a in arrays]
    run_ours(lambda ps: cls(ps, **kwargs), params, grads)
    expected = run_torch(torch, torch_name, kwargs, arrays, grads)
    for p, e, a in zip(params, expected, arrays):
        assert p.dtype == np.float64
        np.testing.assert_allclose(p.data, e, rtol=0, atol=1e-12)
        assert np.abs(p.data - a).max() > 1e-3  # the parameters really moved


def test_param_groups_match_torch():
    torch = pytest.importorskip("torch")
    arrays, grads = initial_arrays(), gradient_sequence(10)
    params = [Parameter(a.copy()) for a in arrays]
    groups = [{"params": [params[0]]}, {"params": [params[1]], "lr": 0.1, "weight_decay": 0.0}]
    run_ours(lambda ps: optim.AdamW(groups, lr=0.01, weight_decay=0.2), params, grads)
    t_params = [torch.tensor(a.copy(), requires_grad=True) for a in arrays]
    t_opt = torch.optim.AdamW([{"params": [t_params[0]]},
                               {"params": [t_params[1]], "lr": 0.1, "weight_decay": 0.0}],
                              lr=0.01, weight_decay=0.2, foreach=False)
    for step_grads in grads:
        for p, g in zip(t_params, step_grads):
            p.grad = None if g is None else torch.tensor(g)
        t_opt.step()
    for p, t in zip(params, t_params):
        np.testing.assert_allclose(p.data, t.detach().numpy(), rtol=0, atol=1e-12)


def test_negative_control_adam_l2_is_not_adamw():
    """The parity check can fail: Adam's L2 and AdamW's decoupled decay differ."""
    torch = pytest.importorskip("torch")
    arrays, grads = initial_arrays(), gradient_sequence(10)
    params = [Parameter(a.copy()) for a in arrays]
    run_ours(lambda ps: optim.Adam(ps, lr=0.05, weight_decay=0.3), params, grads)
    expected = run_torch(torch, "AdamW", dict(lr=0.05, weight_decay=0.3), arrays, grads)
    assert np.abs(params[0].data - expected[0]).max() > 1e-4


def test_step_leaves_grad_untouched_and_skips_params_without_grad():
    p, q = Parameter(np.ones(3)), Parameter(np.ones(2))
    opt = optim.SGD([p, q], lr=0.5, momentum=0.9, weight_decay=0.1)
    p.grad = ta.tensor(np.full(3, 2.0))
    opt.step()
    np.testing.assert_array_equal(p.grad, np.full(3, 2.0))  # weight decay made a new array
    np.testing.assert_array_equal(q.data, np.ones(2))
    assert q not in opt.state


def test_closure_is_evaluated_and_its_loss_returned():
    x = Parameter(np.array([3.0]))
    opt = optim.SGD([x], lr=0.25)

    def closure():
        opt.zero_grad()
        loss = (x * x).sum()
        loss.backward()
        return loss

    loss = opt.step(closure)
    assert loss.item() == 9.0
    np.testing.assert_allclose(x.data, [3.0 - 0.25 * 6.0])


def test_zero_grad_sets_none_or_zeros():
    p = Parameter(np.ones(3))
    opt = optim.SGD([p], lr=0.1)
    p.grad = ta.tensor(np.ones(3))
    grad = p.grad
    opt.zero_grad(set_to_none=False)
    assert p.grad is grad and not p.grad.any()
    opt.zero_grad()
    assert p.grad is None


# ---------------------------------------------------------------- dtype and device
@pytest.mark.parametrize("name,cls,torch_name,kwargs", CONFIGS, ids=CONFIG_IDS)
def test_float32_stays_float32(name, cls, torch_name, kwargs):
    """In-place updates keep the dtype even with a float64 intermediate, so the test also
    demands the same bits as a run whose hyperparameters are Python floats."""
    arrays, grads = initial_arrays(dtype=np.float32), gradient_sequence(4, dtype=np.float32)
    params = [Parameter(a.copy()) for a in arrays]
    numpy_kwargs = dict(kwargs, lr=np.float64(kwargs["lr"]))  # a NumPy scalar must not upcast
    opt = run_ours(lambda ps: cls(ps, **numpy_kwargs), params, grads)
    assert type(opt.param_groups[0]["lr"]) is float
    for p in params:
        assert p.data.dtype == np.float32
        for value in opt.state.get(p, {}).values():
            if hasattr(value, "dtype"):
                assert value.dtype == np.float32
    same = [Parameter(a.copy()) for a in arrays]
    run_ours(lambda ps: cls(ps, **kwargs), same, grads)
    for p, q in zip(params, same):
        assert np.array_equal(p.data, q.data)
    ref = [Parameter(a.astype(np.float64)) for a in arrays]  # float32 precision is kept
    run_ours(lambda ps: cls(ps, **kwargs), ref, gradient_sequence(4))
    for p, r in zip(params, ref):
        np.testing.assert_allclose(p.data, r.data, rtol=1e-4, atol=1e-5)


def test_negative_control_a_float64_intermediate_changes_float32_bits():
    """What the bit-for-bit check above guards against: the dtype survives, the bits do not."""
    theta, grad = initial_arrays(dtype=np.float32)[0], gradient_sequence(1, dtype=np.float32)[0]
    weak, strong = theta.copy(), theta.copy()
    weak -= 0.1 * grad[0]
    strong -= np.float64(0.1) * grad[0]
    assert strong.dtype == np.float32 and not np.array_equal(weak, strong)


@pytest.mark.parametrize("name,cls,torch_name,kwargs", CONFIGS, ids=CONFIG_IDS)
def test_step_on_strict_device_has_no_host_syncs_and_matches_cpu(name, cls, torch_name,
                                                                   kwargs):
    arrays, grads = initial_arrays(), gradient_sequence(6)
    cpu = [Parameter(a.copy()) for a in arrays]
    dev = [Parameter(backend.to_device(a.copy(), STRICT)) for a in arrays]
    run_ours(lambda ps: cls(ps, **kwargs), cpu, grads)
    strict_device.SYNCS.clear()
    opt = run_ours(lambda ps: cls(ps, **kwargs), dev, grads)
    assert not strict_device.SYNCS, dict(strict_device.SYNCS)
    for c, d in zip(cpu, dev):
        assert d.device == STRICT
        np.testing.assert_allclose(backend.to_host(d.data), c.data, rtol=0, atol=1e-12)
        for name, value in opt.state.get(d, {}).items():
            if name in opt._tensor_scalar_state:    # torch's step: a 0-d tensor on the host
                assert value.device == "cpu" and value.shape == ()
            else:       # a Tensor between steps, as torch's, on the parameter's device
                assert isinstance(value, Tensor) and value.device == STRICT


def test_state_dict_moves_between_devices():
    arrays, grads = initial_arrays(), gradient_sequence(6)
    dev = [Parameter(backend.to_device(a.copy(), STRICT)) for a in arrays]
    saved = run_ours(lambda ps: optim.Adam(ps, lr=0.01), dev, grads).state_dict()
    for entries in saved["state"].values():     # host copies, as Tensors (torch's)
        assert type(entries["exp_avg"]) is Tensor and entries["exp_avg"].device == "cpu"
        assert type(entries["exp_avg"]._data) is np.ndarray
    cpu = [Parameter(backend.to_host(p.data)) for p in dev]
    opt = optim.Adam(cpu, lr=0.01)
    opt.load_state_dict(saved)
    # Tensors in the live state, as torch's, holding arrays on the parameter's device
    assert all(type(v["exp_avg"]) is Tensor and type(v["exp_avg"]._data) is np.ndarray
               for v in opt.state.values())
    back = [Parameter(backend.to_device(backend.to_host(p.data), STRICT)) for p in dev]
    opt_dev = optim.Adam(back, lr=0.01)
    opt_dev.load_state_dict(opt.state_dict())
    assert all(v["exp_avg"].device == STRICT for v in opt_dev.state.values())


# ---------------------------------------------------------------- convergence
QUADRATIC_CASES = [
    (optim.SGD, dict(lr=0.05), 300),
    (optim.SGD, dict(lr=0.02, momentum=0.9), 300),
    (optim.SGD, dict(lr=0.02, momentum=0.9, nesterov=True), 300),
    (optim.Adam, dict(lr=0.1), 500),
    (optim.AdamW, dict(lr=0.1, weight_decay=1e-4), 500),
    (optim.NAdam, dict(lr=0.1), 500),
    (optim.RAdam, dict(lr=0.1), 500),
    (optim.Adamax, dict(lr=0.1), 500),
]


@pytest.mark.parametrize("cls,kwargs,steps", QUADRATIC_CASES,
                         ids=[f"{c.__name__}-{sorted(k)}" for c, k, _ in QUADRATIC_CASES])
def test_small_quadratic_converges(cls, kwargs, steps):
    """f(x) = 1/2 sum_i a_i (x_i - c_i)^2 with curvatures from 1 to 20; minimum at c."""
    a = ta.tensor(np.array([1.0, 4.0, 20.0]), dtype="float64")
    c = ta.tensor(np.array([1.0, -2.0, 0.5]), dtype="float64")
    x = Parameter(np.array([5.0, 5.0, 5.0]))
    opt = cls([x], **kwargs)
    for _ in range(steps):
        opt.zero_grad()
        loss = (((x - c) ** 2) * a).sum() * 0.5
        loss.backward()
        opt.step()
    np.testing.assert_allclose(x.data, c.data, atol=1e-3)


# ---------------------------------------------------------------- state dicts and resuming
RESUME_CASES = [
    (optim.SGD, dict(lr=0.1, momentum=0.9, nesterov=True, weight_decay=0.01)),
    (optim.Adam, dict(lr=0.01, weight_decay=0.01)),
    (optim.AdamW, dict(lr=0.01)),
    (optim.RMSprop, dict(lr=0.01, momentum=0.5, centered=True)),
    (optim.Adagrad, dict(lr=0.1, lr_decay=0.01)),
    (optim.NAdam, dict(lr=0.01, weight_decay=0.01, momentum_decay=0.1)),
    (optim.RAdam, dict(lr=0.01, betas=(0.9, 0.9), decoupled_weight_decay=True,
                       weight_decay=0.1)),
    (optim.Adamax, dict(lr=0.01, weight_decay=0.01)),
]


def pickle_round_trip(obj, tmp_path):
    return pickle.loads(pickle.dumps(obj))


def checkpoint_round_trip(obj, tmp_path):
    from tinyattn import serialization
    serialization.save(obj, str(tmp_path / "ckpt.npz"))
    return serialization.load(str(tmp_path / "ckpt.npz"))


@pytest.mark.parametrize("round_trip", [pickle_round_trip, checkpoint_round_trip],
                         ids=["pickle", "tinyattn.save"])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("cls,kwargs", RESUME_CASES, ids=[c.__name__ for c, _ in RESUME_CASES])
def test_resume_after_five_steps_is_bit_identical(cls, kwargs, dtype, round_trip, tmp_path):
    arrays, grads = initial_arrays(dtype=dtype), gradient_sequence(10, dtype=dtype)

    def make(ps):
        opt = cls(ps, **kwargs)
        return opt, optim.WarmupCosineLR(opt, warmup_steps=3, total_steps=10, eta_min=1e-4)

    def run(params, opt, sched, step_grads_list):
        for step_grads in step_grads_list:
            run_ours(None, params, [step_grads], opt=opt)
            sched.step()

    straight = [Parameter(a.copy()) for a in arrays]
    opt, sched = make(straight)
    run(straight, opt, sched, grads)

    first = [Parameter(a.copy()) for a in arrays]
    opt, sched = make(first)
    run(first, opt, sched, grads[:5])
    saved = round_trip({"params": [p.data.copy() for p in first],
                        "opt": opt.state_dict(), "sched": sched.state_dict()}, tmp_path)
    resumed = [Parameter(a) for a in saved["params"]]
    opt, sched = make(resumed)  # a fresh schedule sets step-0 learning rates...
    opt.load_state_dict(saved["opt"])
    sched.load_state_dict(saved["sched"])  # ...which loading replaces
    run(resumed, opt, sched, grads[5:])
    for s, r in zip(straight, resumed):
        assert r.dtype == dtype
        assert np.array_equal(s.data, r.data)


def test_negative_control_resume_without_optimizer_state_differs():
    arrays, grads = initial_arrays(), gradient_sequence(10)
    straight = [Parameter(a.copy()) for a in arrays]
    run_ours(lambda ps: optim.Adam(ps, lr=0.01), straight, grads)
    first = [Parameter(a.copy()) for a in arrays]
    run_ours(lambda ps: optim.Adam(ps, lr=0.01), first, grads[:5])
    run_ours(lambda ps: optim.Adam(ps, lr=0.01), first, grads[5:])  # moments lost
    assert not np.array_equal(straight[0].data, first[0].data)


def test_state_dict_is_a_host_copy_with_hyperparameters():
    params = [Parameter(a) for a in initial_arrays()]
    opt = run_ours(lambda ps: optim.SGD(ps, lr=0.1, momentum=0.9), params,
                   gradient_sequence(2))
    saved = opt.state_dict()
    # torch's keys in torch's order, torch's integer defaults (dampening 0, not 0.0)
    assert list(saved["param_groups"][0].items()) == list(dict(
        lr=0.1, momentum=0.9, dampening=0, weight_decay=0, nesterov=False, maximize=False,
        foreach=None, differentiable=False, fused=None, params=[0, 1]).items())
    assert type(saved["param_groups"][0]["dampening"]) is int
    before = saved["state"][0]["momentum_buffer"].numpy().copy()
    run_ours(None, params, gradient_sequence(2, seed=5), opt=opt)
    np.testing.assert_array_equal(saved["state"][0]["momentum_buffer"], before)


def test_load_accepts_numpy_scalars_and_stores_torch_s_scalars():
    """A checkpoint written with np.savez turns ints and floats into 0-d arrays."""
    params = [Parameter(a) for a in initial_arrays(dtype=np.float32)]
    opt = run_ours(lambda ps: optim.Adam(ps), params, gradient_sequence(2, dtype=np.float32))
    saved = opt.state_dict()
    saved["state"][0]["step"] = np.array(saved["state"][0]["step"])
    saved["param_groups"][0]["lr"] = np.float64(0.001)
    opt.load_state_dict(saved)
    step = opt.state[params[0]]["step"]                 # torch's float32 0-d tensor
    assert isinstance(step, ta.Tensor) and step.dtype == np.float32 and step.item() == 2
    assert type(opt.param_groups[0]["lr"]) is float


def test_load_restores_hyperparameters():
    p = Parameter(np.ones(2))
    saved = optim.SGD([p], lr=0.5, momentum=0.7).state_dict()
    opt = optim.SGD([p], lr=0.1)
    opt.load_state_dict(saved)
    assert opt.param_groups[0]["lr"] == 0.5 and opt.param_groups[0]["momentum"] == 0.7
    assert opt.param_groups[0]["params"][0] is p


# ---------------------------------------------------------------- clip_grad_norm_
@pytest.mark.parametrize("norm_type", [2.0, 1.0, 3.0, math.inf])
@pytest.mark.parametrize("max_norm", [0.5, 1e3])
def test_clip_grad_norm_matches_torch(norm_type, max_norm):
    torch = pytest.importorskip("torch")
    grads = gradient_sequence(1)[0]
    params = [Parameter(a) for a in initial_arrays()] + [Parameter(np.ones(2))]  # no grad
    for p, g in zip(params, grads):
        p.grad = ta.tensor(g)
    t_params = [torch.tensor(a, requires_grad=True) for a in initial_arrays()]
    for p, g in zip(t_params, grads):
        p.grad = torch.tensor(g.copy())
    total = optim.clip_grad_norm_(params, max_norm, norm_type=norm_type)
    t_total = torch.nn.utils.clip_grad_norm_(t_params, max_norm, norm_type=norm_type)
    assert isinstance(total, ta.Tensor) and total.shape == ()    # a 0-d tensor, as torch
    assert abs(total.item() - t_total.item()) <= 1e-12 * t_total.item()
    for p, t in zip(params, t_params):
        np.testing.assert_allclose(p.grad, t.grad.numpy(), rtol=0, atol=1e-12)
    if max_norm > total.item():
        for p, g in zip(params, grads):
            np.testing.assert_array_equal(p.grad, g)  # nothing clipped: exactly unchanged
    else:
        flat = np.concatenate([p.grad.numpy().ravel() for p in params if p.grad is not None])
        assert np.linalg.norm(flat, ord=norm_type) == pytest.approx(max_norm, rel=1e-5)


def test_clip_grad_norm_float32_single_tensor_and_no_grads():
    p = Parameter(np.ones(4, dtype=np.float32))
    p.grad = ta.tensor(np.full(4, 3.0, dtype=np.float32))
    assert optim.clip_grad_norm_(p, 1.0).item() == pytest.approx(6.0)
    assert p.grad.dtype == np.float32
    np.testing.assert_allclose(p.grad, np.full(4, 0.5), rtol=1e-5)
    assert optim.clip_grad_norm_([Parameter(np.ones(2))], 1.0).item() == 0.0


def test_clip_grad_norm_on_strict_device_has_no_implicit_syncs():
    p = Parameter(backend.to_device(np.full(4, 3.0), STRICT))
    p.grad = ta.tensor(np.full(4, 3.0), device=STRICT)
    strict_device.SYNCS.clear()
    norm = optim.clip_grad_norm_([p], 1.0)
    assert not strict_device.SYNCS, dict(strict_device.SYNCS)     # the norm stays there
    assert norm.device == STRICT and norm.item() == pytest.approx(6.0)
    assert p.grad.device == STRICT
    np.testing.assert_allclose(p.grad.numpy(), np.full(4, 3.0 / (6.0 + 1e-6)))


def test_clip_grad_norm_error_if_nonfinite():
    p = Parameter(np.ones(2))
    p.grad = ta.tensor([1.0, np.inf], dtype="float64")
    with pytest.raises(RuntimeError, match="non-finite"):
        optim.clip_grad_norm_([p], 1.0, error_if_nonfinite=True)


# ---------------------------------------------------------------- schedules
def sgd(lr=1.0, groups=1):
    return optim.SGD([{"params": [Parameter(np.zeros(1))]} for _ in range(groups)], lr=lr)


def lrs_over(sched, steps):
    out = []
    for _ in range(steps):
        out.append(sched.get_last_lr()[0])
        sched.optimizer.step()
        sched.step()
    return out


def test_warmup_cosine_matches_torch_linear_then_cosine():
    torch = pytest.importorskip("torch")
    from torch.optim import lr_scheduler as tls
    warmup, total, base, eta_min = 5, 20, 0.3, 0.01
    t_opt = torch.optim.SGD([torch.zeros(1, requires_grad=True)], lr=base)
    t_sched = tls.SequentialLR(t_opt, [
        tls.LinearLR(t_opt, start_factor=1 / warmup, end_factor=1.0, total_iters=warmup - 1),
        tls.CosineAnnealingLR(t_opt, T_max=total - warmup, eta_min=eta_min)],
        milestones=[warmup])
    expected = []
    for _ in range(total + 1):
        expected.append(t_sched.get_last_lr()[0])
        t_opt.step()
        t_sched.step()
    ours = lrs_over(optim.WarmupCosineLR(sgd(base), warmup, total, eta_min), total + 1)
    np.testing.assert_allclose(ours, expected, rtol=1e-12, atol=0)


def test_warmup_cosine_hand_values_and_torch_lambda():
    torch = pytest.importorskip("torch")
    ours = lrs_over(optim.WarmupCosineLR(sgd(2.0), warmup_steps=4, total_steps=12), 16)
    hand = {0: 0.5, 1: 1.0, 3: 2.0, 4: 2.0, 8: 1.0, 12: 0.0, 15: 0.0}
    for t, lr in hand.items():
        assert ours[t] == pytest.approx(lr, abs=1e-15), t

    def factor(t):  # written independently of the implementation
        if t < 4:
            return (t + 1) / 4
        return 0.5 * (1 + math.cos(math.pi * min(t - 4, 8) / 8))

    t_opt = torch.optim.SGD([torch.zeros(1, requires_grad=True)], lr=2.0)
    t_sched = torch.optim.lr_scheduler.LambdaLR(t_opt, factor)
    expected = []
    for _ in range(16):
        expected.append(t_sched.get_last_lr()[0])
        t_opt.step()
        t_sched.step()
    np.testing.assert_allclose(ours, expected, rtol=1e-15, atol=1e-15)


def test_no_warmup_is_torch_cosine_annealing():
    torch = pytest.importorskip("torch")
    t_opt = torch.optim.SGD([torch.zeros(1, requires_grad=True)], lr=0.1)
    t_sched = torch.optim.lr_scheduler.CosineAnnealingLR(t_opt, T_max=10, eta_min=1e-3)
    expected = []
    for _ in range(11):
        expected.append(t_sched.get_last_lr()[0])
        t_opt.step()
        t_sched.step()
    ours = lrs_over(optim.WarmupCosineLR(sgd(0.1), 0, 10, eta_min=1e-3), 11)
    np.testing.assert_allclose(ours, expected, rtol=1e-12)


def test_noam_hand_values_and_torch_lambda():
    torch = pytest.importorskip("torch")
    sched = optim.NoamLR(sgd(1.0), d_model=512, warmup_steps=4000)
    ours = lrs_over(sched, 16000)
    assert ours[0] == pytest.approx(512 ** -0.5 * 4000 ** -1.5, rel=1e-15)
    assert ours[3999] == pytest.approx(1 / math.sqrt(512 * 4000), rel=1e-15)  # the peak
    assert max(ours) == ours[3999]
    assert ours[15999] == pytest.approx(1 / math.sqrt(512 * 16000), rel=1e-15)
    t_opt = torch.optim.SGD([torch.zeros(1, requires_grad=True)], lr=1.0)
    t_sched = torch.optim.lr_scheduler.LambdaLR(
        t_opt, lambda t: 512 ** -0.5 * min((t + 1) ** -0.5, (t + 1) * 4000 ** -1.5))
    for t in range(200):
        assert t_sched.get_last_lr()[0] == pytest.approx(ours[t], rel=1e-14)
        t_opt.step()
        t_sched.step()


def test_lambda_lr_per_group_matches_torch():
    torch = pytest.importorskip("torch")
    fns = [lambda t: 0.9 ** t, lambda t: 1.0 / (t + 1)]
    opt = optim.SGD([{"params": [Parameter(np.zeros(1))]},
                     {"params": [Parameter(np.zeros(1))], "lr": 0.5}], lr=0.1)
    sched = optim.LambdaLR(opt, fns)
    t_opt = torch.optim.SGD([{"params": [torch.zeros(1, requires_grad=True)]},
                             {"params": [torch.zeros(1, requires_grad=True)], "lr": 0.5}],
                            lr=0.1)
    t_sched = torch.optim.lr_scheduler.LambdaLR(t_opt, fns)
    for _ in range(6):
        assert sched.get_last_lr() == t_sched.get_last_lr()
        assert [g["lr"] for g in opt.param_groups] == sched.get_last_lr()
        assert sched.last_epoch == t_sched.last_epoch
        opt.step(), sched.step(), t_opt.step(), t_sched.step()


@pytest.mark.parametrize("make", [
    lambda o: optim.WarmupCosineLR(o, 3, 12, eta_min=0.01),
    lambda o: optim.NoamLR(o, d_model=64, warmup_steps=4),
    lambda o: optim.LambdaLR(o, lambda t: 0.95 ** t),
], ids=["warmup_cosine", "noam", "lambda"])
@pytest.mark.parametrize("optimizer_first", [True, False])
def test_scheduler_resumes_exactly(make, optimizer_first):
    opt = sgd(0.7, groups=2)
    sched = make(opt)
    straight = lrs_over(sched, 14)
    opt = sgd(0.7, groups=2)
    sched = make(opt)
    first = lrs_over(sched, 6)
    saved = pickle.loads(pickle.dumps((opt.state_dict(), sched.state_dict())))
    opt = sgd(0.7, groups=2)
    sched = make(opt)
    if optimizer_first:
        opt.load_state_dict(saved[0])
        sched.load_state_dict(saved[1])
    else:
        sched.load_state_dict(saved[1])
        opt.load_state_dict(saved[0])
    assert sched.last_epoch == 6
    assert first + lrs_over(sched, 8) == straight


# ---------------------------------------------------------------- errors
def test_infinite_hyperparameters_are_accepted_as_torch():
    torch = pytest.importorskip("torch")
    for lib in (optim, torch.optim):
        lib.AdamW([_param(lib)], lr=float("inf"))
        lib.SGD([_param(lib)], lr=1.0, momentum=float("inf"))


def _param(lib):
    import torch
    return torch.nn.Parameter(torch.ones(2)) if lib is torch.optim else ta.nn.Parameter(
        np.ones(2, dtype=np.float32))


@pytest.mark.parametrize("make,match", [
    (lambda ps: optim.SGD(ps, lr=-0.1), "lr"),
    (lambda ps: optim.Adam(ps, lr=-1e-3), "lr"),
    (lambda ps: optim.AdamW(ps, lr=float("nan")), "lr"),
    (lambda ps: optim.AdamW(ps, lr=-float("inf")), "lr"),
    (lambda ps: optim.SGD(ps, lr="0.1"), "real number"),
    (lambda ps: optim.SGD(ps, momentum=-0.5), "momentum"),
    (lambda ps: optim.SGD(ps, weight_decay=-1.0), "weight_decay"),
    (lambda ps: optim.SGD(ps, nesterov=True), "Nesterov"),
    (lambda ps: optim.SGD(ps, momentum=0.9, dampening=0.1, nesterov=True), "Nesterov"),
    (lambda ps: optim.Adam(ps, betas=(1.0, 0.999)), r"betas\[0\]"),
    (lambda ps: optim.Adam(ps, betas=(0.9, -0.1)), r"betas\[1\]"),
    (lambda ps: optim.AdamW(ps, betas=(0.9,)), "pair"),
    (lambda ps: optim.Adam(ps, eps=-1e-8), "eps"),
    (lambda ps: optim.AdamW(ps, weight_decay=-0.01), "weight_decay"),
    (lambda ps: optim.NAdam(ps, momentum_decay=-0.1), "momentum_decay"),
    (lambda ps: optim.NAdam(ps, betas=(0.9, 1.0)), r"betas\[1\]"),
    (lambda ps: optim.RAdam(ps, lr=float("nan")), "lr"),
    (lambda ps: optim.RAdam(ps, eps=-1.0), "eps"),
    (lambda ps: optim.Adamax(ps, betas=(-0.1, 0.9)), r"betas\[0\]"),
    (lambda ps: optim.Adamax(ps, weight_decay=-0.5), "weight_decay"),
    (lambda ps: optim.Adamax(ps, betas=0.9), "pair"),
    (lambda ps: optim.SGD([{"params": ps, "lr": -1.0}]), "lr"),
    (lambda ps: optim.SGD([{"params": ps, "betas": (0.9, 0.9)}]), "unknown hyperparameter"),
    (lambda ps: optim.SGD([]), "empty parameter list"),
    (lambda ps: optim.SGD(ps[0]), "single Parameter"),
    (lambda ps: optim.SGD([ps[0], np.zeros(2)]), "ndarray"),
    (lambda ps: optim.SGD([{"params": [ps[0]]}, {"params": [ps[0]]}]), "more than one"),
    (lambda ps: optim.SGD([ps[0] * 2.0]), "leaf"),
    (lambda ps: optim.SGD([{"params": set(ps)}]), "set"),
])
def test_bad_optimizer_arguments_raise_clear_errors(make, match):
    params = [Parameter(np.zeros(2)), Parameter(np.zeros(3))]
    with pytest.raises((ValueError, TypeError), match=match):
        make(params)


# max_norm 0, inf and "1" are torch's (float(max_norm)): tests/test_outside_programs_39.py
@pytest.mark.parametrize("kwargs,match", [
    (dict(max_norm=-1.0), "max_norm"),
    (dict(max_norm=1.0, norm_type=0.0), "norm_type"),
    (dict(max_norm="one"), "max_norm"),
])
def test_bad_clip_arguments_raise_clear_errors(kwargs, match):
    p = Parameter(np.ones(2))
    p.grad = ta.tensor(np.ones(2))
    with pytest.raises((ValueError, TypeError), match=match):
        optim.clip_grad_norm_([p], **kwargs)
    np.testing.assert_array_equal(p.grad, np.ones(2))


def trained_adam(shapes):
    params = [Parameter(np.ones(s)) for s in shapes]
    opt = optim.Adam(params)
    for p in params:
        p.grad = ta.tensor(np.ones(p.shape))
    opt.step()
    return opt


@pytest.mark.parametrize("mutate,match", [
    (lambda sd: sd["param_groups"][0]["params"].pop(), r"holds 1 parameter\(s\)"),
    (lambda sd: sd["param_groups"].append({"params": []}), r"2 parameter group\(s\)"),
    (lambda sd: sd["state"][1].update(exp_avg=np.ones((4, 4))), r"shape \(4, 4\)"),
    (lambda sd: sd["state"].update({7: {}}), "parameter 7"),
    (lambda sd: sd.pop("state"), "exactly the keys"),
    (lambda sd: sd["param_groups"][0].update(lr=-1.0), "lr"),
])
def test_mismatched_optimizer_state_dict_raises_and_changes_nothing(mutate, match):
    saved = trained_adam([(2,), (3,)]).state_dict()
    mutate(saved)
    opt = trained_adam([(2,), (3,)])
    before = opt.state_dict()
    with pytest.raises(ValueError, match=match):
        opt.load_state_dict(saved)
    after = opt.state_dict()
    assert after["param_groups"] == before["param_groups"]
    for index, entries in before["state"].items():
        for key, value in entries.items():
            np.testing.assert_array_equal(after["state"][index][key], value)


def test_state_dict_of_another_optimizer_is_refused():
    p = Parameter(np.ones(2))
    with pytest.raises(ValueError, match="different optimizer"):
        optim.Adam([p]).load_state_dict(optim.SGD([p], lr=0.1).state_dict())


@pytest.mark.parametrize("make,error,match", [
    (lambda o: optim.WarmupCosineLR(o, warmup_steps=10, total_steps=10), ValueError,
     "larger than warmup_steps"),
    (lambda o: optim.WarmupCosineLR(o, warmup_steps=-1, total_steps=10), ValueError,
     "warmup_steps"),
    (lambda o: optim.WarmupCosineLR(o, 2, 10, eta_min=-0.1), ValueError, "eta_min"),
    (lambda o: optim.WarmupCosineLR(o, 2.5, 10), TypeError, "integer"),
    (lambda o: optim.NoamLR(o, d_model=0), ValueError, "d_model"),
    (lambda o: optim.NoamLR(o, d_model=64, warmup_steps=0), ValueError, "warmup_steps"),
    (lambda o: optim.LambdaLR(o, [lambda t: 1.0] * 2), ValueError, "one per parameter group"),
    (lambda o: optim.LambdaLR(o, lambda t: 1.0, last_epoch=3), KeyError, "initial_lr"),
    (lambda o: optim.NoamLR("not an optimizer", d_model=8), TypeError, "optimizer"),
])
def test_bad_scheduler_arguments_raise_clear_errors(make, error, match):
    with pytest.raises(error, match=match):
        make(sgd())


def test_scheduler_state_dict_of_another_schedule_is_refused():
    saved = optim.NoamLR(sgd(), d_model=8).state_dict()
    with pytest.raises(ValueError, match="different scheduler"):
        optim.WarmupCosineLR(sgd(), 2, 10).load_state_dict(saved)
    saved = optim.NoamLR(sgd(groups=2), d_model=8).state_dict()
    with pytest.raises(ValueError, match=r"2 base learning rate\(s\)"):
        optim.NoamLR(sgd(), d_model=8).load_state_dict(saved)


def test_amsgrad_and_maximize_parity_can_fail():
    """Negative control for the two options: without them torch ends elsewhere."""
    torch = pytest.importorskip("torch")
    arrays, grads = initial_arrays(), gradient_sequence(10)
    params = [ta.tensor(a.copy(), requires_grad=True) for a in arrays]
    run_ours(lambda ps: optim.Adam(ps, lr=0.02, weight_decay=0.1, amsgrad=True), params, grads)
    plain = run_torch(torch, "Adam", dict(lr=0.02, weight_decay=0.1), arrays, grads)
    # the max rarely binds on stationary gradients: 1e-5 apart, far above the 1e-12 parity
    assert max(np.abs(p.detach().numpy() - q).max() for p, q in zip(params, plain)) > 1e-7
    params = [ta.tensor(a.copy(), requires_grad=True) for a in arrays]
    run_ours(lambda ps: optim.AdamW(ps, lr=0.01, maximize=True), params, grads)
    descending = run_torch(torch, "AdamW", dict(lr=0.01), arrays, grads)
    assert max(np.abs(p.detach().numpy() - q).max() for p, q in zip(params, descending)) > 1e-2


def test_negative_controls_for_nadam_radam_adamax_and_sgd_maximize():
    """Each parity row can fail: a neighbouring rule ends elsewhere than torch's."""
    torch = pytest.importorskip("torch")
    arrays, grads = initial_arrays(), gradient_sequence(10)
    for ours, theirs, kwargs in [
            (optim.NAdam, "NAdam", dict(momentum_decay=0.0)),      # psi ignored
            (optim.NAdam, "Adam", {}),                             # Nesterov's look-ahead
            (optim.RAdam, "Adam", dict(betas=(0.9, 0.9))),         # the rectification
            (optim.RAdam, "RAdam", dict(weight_decay=0.3, decoupled_weight_decay=True)),
            (optim.Adamax, "Adam", {}),                            # the infinity norm
            (optim.SGD, "SGD", dict(momentum=0.9, maximize=True))]:
        params = [Parameter(a.copy()) for a in arrays]
        run_ours(lambda ps: ours(ps, lr=0.02, **kwargs), params, grads)
        other = {k: v for k, v in kwargs.items() if k != "momentum_decay"}
        if ours is optim.RAdam and theirs == "RAdam":
            other = dict(weight_decay=0.3)                          # L2 instead
        if ours is optim.SGD:
            other = dict(momentum=0.9)                              # descending
        expected = run_torch(torch, theirs, dict(lr=0.02, **other), arrays, grads)
        assert max(np.abs(p.data - e).max() for p, e in zip(params, expected)) > 1e-6, \
            (ours.__name__, theirs, kwargs)


def test_old_checkpoints_without_maximize_still_load():
    """SGD gained maximize (Adam amsgrad and maximize) after checkpoints were written."""
    params = [Parameter(a) for a in initial_arrays()]
    for make in [lambda ps: optim.SGD(ps, lr=0.1, momentum=0.9), lambda ps: optim.Adam(ps)]:
        saved = run_ours(make, params, gradient_sequence(2)).state_dict()
        for group in saved["param_groups"]:
            group.pop("maximize"), group.pop("amsgrad", None)
        opt = make(params)
        opt.load_state_dict(saved)
        assert opt.param_groups[0]["maximize"] is False
    saved["param_groups"][0].pop("eps")
    with pytest.raises(ValueError, match=r"lacks hyperparameter\(s\) \['eps'\]"):
        optim.Adam(params).load_state_dict(saved)


def test_nadam_mu_product_is_saved_as_torch_s_float32_scalar_tensor():
    params = [Parameter(a) for a in initial_arrays(dtype=np.float32)]
    opt = run_ours(lambda ps: optim.NAdam(ps), params, gradient_sequence(3, dtype=np.float32))
    saved = opt.state_dict()
    assert sorted(saved["state"][0]) == ["exp_avg", "exp_avg_sq", "mu_product", "step"]
    for name in ("mu_product", "step"):
        value = saved["state"][0][name]
        assert isinstance(value, ta.Tensor) and value.shape == () and value.dtype == np.float32
    assert saved["state"][0]["step"].item() == 3.0
    # between steps the state holds them as torch does: float32 0-d tensors
    for name in ("mu_product", "step"):
        value = opt.state[params[0]][name]
        assert isinstance(value, ta.Tensor) and value.shape == () and value.dtype == np.float32
