"""PyTorch's schedulers in tinyattn.optim.lr_scheduler, step for step against torch 2.13 over
hundreds of steps (past CosineAnnealingLR's T_max, through every milestone), with two
parameter groups, momentum cycling, chaining two schedulers, exact resume from state dicts,
and their argument errors."""
import pickle

import numpy as np
import pytest

import tinyattn as ta
from tinyattn import optim
from tinyattn.optim import lr_scheduler as L

torch = pytest.importorskip("torch")
TL = torch.optim.lr_scheduler


def _optimizers(kind="sgd"):
    groups = [([2], 0.5), ([1], 0.1)]
    ours = [{"params": [ta.nn.Parameter(ta.zeros(*s))], "lr": lr} for s, lr in groups]
    theirs = [{"params": [torch.nn.Parameter(torch.zeros(*s))], "lr": lr} for s, lr in groups]
    if kind == "adam":
        return optim.Adam(ours, lr=0.1), torch.optim.Adam(theirs, lr=0.1)
    return (optim.SGD(ours, lr=0.1, momentum=0.9),
            torch.optim.SGD(theirs, lr=0.1, momentum=0.9))


CASES = {
    "StepLR": (lambda o: L.StepLR(o, 7, gamma=0.5), lambda o: TL.StepLR(o, 7, gamma=0.5)),
    "MultiStepLR": (lambda o: L.MultiStepLR(o, [3, 10, 10, 50], 0.3),
                    lambda o: TL.MultiStepLR(o, [3, 10, 10, 50], 0.3)),
    "ExponentialLR": (lambda o: L.ExponentialLR(o, 0.98), lambda o: TL.ExponentialLR(o, 0.98)),
    "CosineAnnealingLR": (lambda o: L.CosineAnnealingLR(o, T_max=40, eta_min=0.01),
                          lambda o: TL.CosineAnnealingLR(o, T_max=40, eta_min=0.01)),
    "CosineAnnealingLR_T1": (lambda o: L.CosineAnnealingLR(o, T_max=1),
                             lambda o: TL.CosineAnnealingLR(o, T_max=1)),
    "LinearLR": (lambda o: L.LinearLR(o, 0.1, 0.9, total_iters=17),
                 lambda o: TL.LinearLR(o, 0.1, 0.9, total_iters=17)),
    "LinearLR_decay": (lambda o: L.LinearLR(o, 1.0, 0.0, total_iters=30),
                       lambda o: TL.LinearLR(o, 1.0, 0.0, total_iters=30)),
    "OneCycleLR": (lambda o: L.OneCycleLR(o, [1.0, 0.3], total_steps=300),
                   lambda o: TL.OneCycleLR(o, [1.0, 0.3], total_steps=300)),
    "OneCycleLR_three_phase": (
        lambda o: L.OneCycleLR(o, 2.0, epochs=10, steps_per_epoch=30, pct_start=0.25,
                               anneal_strategy="linear", three_phase=True),
        lambda o: TL.OneCycleLR(o, 2.0, epochs=10, steps_per_epoch=30, pct_start=0.25,
                                anneal_strategy="linear", three_phase=True)),
}


def _run(ours, theirs, steps, metric=None):
    """Learning rates (and momenta) after construction and after each step, both sides."""
    (opt, sched), (t_opt, t_sched) = ours, theirs
    key = "betas" if "betas" in opt.defaults else "momentum"
    seen = [(sched.get_last_lr(), [g[key] for g in opt.param_groups])]
    t_seen = [(t_sched.get_last_lr(), [g[key] for g in t_opt.param_groups])]
    for i in range(steps):
        opt.step(), t_opt.step()
        args = () if metric is None else (metric(i),)
        sched.step(*args), t_sched.step(*args)
        seen.append((sched.get_last_lr(), [g[key] for g in opt.param_groups]))
        t_seen.append((t_sched.get_last_lr(), [g[key] for g in t_opt.param_groups]))
    return seen, t_seen


@pytest.mark.parametrize("name", list(CASES))
@pytest.mark.parametrize("kind", ["sgd", "adam"])
def test_every_step_matches_torch_exactly(name, kind):
    make, t_make = CASES[name]
    opt, t_opt = _optimizers(kind)
    seen, t_seen = _run((opt, make(opt)), (t_opt, t_make(t_opt)), steps=300)
    assert seen == t_seen                       # the same float arithmetic, bit for bit


@pytest.mark.parametrize("name", [n for n in CASES if not n.startswith("OneCycle")])
def test_closed_form_equals_the_chained_recursion(name):
    opt, _ = _optimizers()
    sched = CASES[name][0](opt)
    for _ in range(200):
        opt.step()
        sched.step()
        np.testing.assert_allclose(sched.get_last_lr(), sched._get_closed_form_lr(),
                                   rtol=1e-12, atol=1e-15)


def test_cosine_annealing_reaches_eta_min_at_t_max_and_continues_as_torch():
    opt, _ = _optimizers()
    sched = L.CosineAnnealingLR(opt, T_max=10, eta_min=0.05)
    lrs = [sched.get_last_lr()[0]]
    for _ in range(20):
        opt.step()
        sched.step()
        lrs.append(sched.get_last_lr()[0])
    assert lrs[0] == 0.5 and lrs[10] == pytest.approx(0.05, abs=1e-15)
    assert lrs[20] == pytest.approx(0.5)        # periodic past T_max, as PyTorch's


def test_two_chained_schedulers_compose_as_torch():
    opt, t_opt = _optimizers()
    a, b = L.ExponentialLR(opt, 0.9), L.StepLR(opt, 3, 0.5)
    ta_, tb = TL.ExponentialLR(t_opt, 0.9), TL.StepLR(t_opt, 3, 0.5)
    for _ in range(12):
        opt.step(), t_opt.step()
        a.step(), b.step(), ta_.step(), tb.step()
        assert [g["lr"] for g in opt.param_groups] == [g["lr"] for g in t_opt.param_groups]


def test_reduce_lr_on_plateau_matches_torch():
    for kwargs, metric in [
            (dict(patience=3, cooldown=2, factor=0.5, min_lr=[0.01, 0.02]),
             lambda i: 1.0 / (1 + i % 17)),
            (dict(mode="max", threshold_mode="abs", threshold=0.1, patience=0),
             lambda i: float(np.sin(i / 5))),
            (dict(patience=1), lambda i: float("nan") if i % 4 == 0 else 1.0)]:
        opt, t_opt = _optimizers()
        seen, t_seen = _run((opt, L.ReduceLROnPlateau(opt, **kwargs)),
                            (t_opt, TL.ReduceLROnPlateau(t_opt, **kwargs)), 120, metric)
        assert seen == t_seen
    opt, _ = _optimizers()
    sched = L.ReduceLROnPlateau(opt)
    sched.step(ta.tensor(0.5))                  # a one-element tensor is a metric too
    with pytest.raises(TypeError, match=r"step\(metrics\) needs the monitored value"):
        sched.step()


@pytest.mark.parametrize("name", list(CASES) + ["plateau"])
def test_resume_from_state_dicts_continues_exactly(name):
    def build():
        opt, _ = _optimizers()
        if name == "plateau":
            return opt, L.ReduceLROnPlateau(opt, patience=2, factor=0.5)
        return opt, CASES[name][0](opt)

    def advance(opt, sched, steps, start):
        lrs = []
        for i in range(start, start + steps):
            opt.step()
            sched.step(*(() if name != "plateau" else (1.0 + (i % 5 == 0),)))
            lrs.append(sched.get_last_lr())
        return lrs

    opt, sched = build()
    straight = advance(opt, sched, 120, 0)
    opt, sched = build()
    first = advance(opt, sched, 50, 0)
    saved = pickle.loads(pickle.dumps((opt.state_dict(), sched.state_dict())))
    opt, sched = build()
    opt.load_state_dict(saved[0])
    sched.load_state_dict(saved[1])
    assert first + advance(opt, sched, 70, 50) == straight


def test_one_cycle_refuses_steps_past_total_and_needs_momentum():
    opt, _ = _optimizers()
    sched = L.OneCycleLR(opt, 1.0, total_steps=3)
    for _ in range(3):
        sched.step()
    with pytest.raises(ValueError, match="tried to step 4 times"):
        sched.step()
    with pytest.raises(ValueError, match="total_steps OR"):
        L.OneCycleLR(opt, 1.0)
    with pytest.raises(ValueError, match="same length as optimizer.param_groups"):
        L.OneCycleLR(opt, [1.0], total_steps=5)


@pytest.mark.parametrize("make,error,match", [
    (lambda o: L.StepLR(o, 0), ValueError, "step_size must be >= 1"),
    (lambda o: L.StepLR(o, 2.5), TypeError, "step_size must be an integer"),
    (lambda o: L.MultiStepLR(o, [5, 2]), ValueError, "increasing"),
    (lambda o: L.ExponentialLR(o, "0.9"), TypeError, "gamma must be a real number"),
    (lambda o: L.CosineAnnealingLR(o, T_max=0), ValueError, "T_max must be >= 1"),
    (lambda o: L.CosineAnnealingLR(o, 10, eta_min=-1.0), ValueError, "eta_min"),
    (lambda o: L.LinearLR(o, start_factor=0.0), ValueError, r"start_factor must be in \(0, 1\]"),
    (lambda o: L.LinearLR(o, end_factor=1.5), ValueError, "end_factor"),
    (lambda o: L.ReduceLROnPlateau(o, factor=1.0), ValueError, "factor should be < 1.0"),
    (lambda o: L.ReduceLROnPlateau(o, mode="down"), ValueError, "mode must be 'min' or 'max'"),
    (lambda o: L.StepLR(torch.optim.SGD([torch.zeros(1, requires_grad=True)]), 2), TypeError,
     "tinyattn.optim optimizer"),
])
def test_bad_arguments_are_named(make, error, match):
    opt, _ = _optimizers()
    with pytest.raises(error, match=match):
        make(opt)


def test_a_whole_number_float_counts_as_the_int_as_in_torch():
    """PyTorch's transformer tutorial writes StepLR(optimizer, 1.0, gamma=0.95)."""
    opt, t_opt = _optimizers()
    seen, t_seen = _run((opt, L.StepLR(opt, 1.0, gamma=0.95)),
                        (t_opt, TL.StepLR(t_opt, 1.0, gamma=0.95)), steps=5)
    assert seen == t_seen
    opt, _ = _optimizers()
    with pytest.raises(TypeError, match="T_max must be an integer"):
        L.CosineAnnealingLR(opt, T_max=float("inf"))


def test_negative_control_a_wrong_gamma_is_noticed():
    """The exact comparison above can fail: gamma 0.5 against torch's 0.51 differs."""
    opt, t_opt = _optimizers()
    seen, t_seen = _run((opt, L.StepLR(opt, 7, gamma=0.5)),
                        (t_opt, TL.StepLR(t_opt, 7, gamma=0.51)), steps=20)
    assert seen != t_seen
