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
# torch warns when its scheduler steps before its optimizer has; the tests do so on purpose
pytestmark = pytest.mark.filterwarnings("ignore:Detected call of")


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
    "ConstantLR": (lambda o: L.ConstantLR(o, 0.25, total_iters=13),
                   lambda o: TL.ConstantLR(o, 0.25, total_iters=13)),
    "PolynomialLR": (lambda o: L.PolynomialLR(o), lambda o: TL.PolynomialLR(o)),
    "PolynomialLR_power2": (lambda o: L.PolynomialLR(o, total_iters=40, power=2.0),
                            lambda o: TL.PolynomialLR(o, total_iters=40, power=2.0)),
    "CosineAnnealingWarmRestarts": (
        lambda o: L.CosineAnnealingWarmRestarts(o, T_0=7, T_mult=2, eta_min=0.01),
        lambda o: TL.CosineAnnealingWarmRestarts(o, T_0=7, T_mult=2, eta_min=0.01)),
    "CosineAnnealingWarmRestarts_T1": (lambda o: L.CosineAnnealingWarmRestarts(o, 9),
                                       lambda o: TL.CosineAnnealingWarmRestarts(o, 9)),
    "CyclicLR": (lambda o: L.CyclicLR(o, 0.01, [1.0, 0.3], step_size_up=10, step_size_down=7),
                 lambda o: TL.CyclicLR(o, 0.01, [1.0, 0.3], step_size_up=10,
                                       step_size_down=7)),
    "CyclicLR_triangular2": (
        lambda o: L.CyclicLR(o, [0.1, 0.01], 1.0, 13, mode="triangular2",
                             base_momentum=0.7, max_momentum=[0.95, 0.9]),
        lambda o: TL.CyclicLR(o, [0.1, 0.01], 1.0, 13, mode="triangular2",
                              base_momentum=0.7, max_momentum=[0.95, 0.9])),
    "CyclicLR_exp_range": (
        lambda o: L.CyclicLR(o, 0.01, 0.5, 20, mode="exp_range", gamma=0.995),
        lambda o: TL.CyclicLR(o, 0.01, 0.5, 20, mode="exp_range", gamma=0.995)),
    "CyclicLR_scale_fn": (
        lambda o: L.CyclicLR(o, 0.01, 0.5, 6, scale_fn=lambda x: 0.8 ** x,
                             scale_mode="iterations", cycle_momentum=False),
        lambda o: TL.CyclicLR(o, 0.01, 0.5, 6, scale_fn=lambda x: 0.8 ** x,
                              scale_mode="iterations", cycle_momentum=False)),
    "SequentialLR": (
        lambda o: L.SequentialLR(o, [L.LinearLR(o, 0.1, 1.0, 5), L.CosineAnnealingLR(o, 40),
                                     L.ExponentialLR(o, 0.99)], milestones=[5, 45]),
        lambda o: TL.SequentialLR(o, [TL.LinearLR(o, 0.1, 1.0, 5),
                                      TL.CosineAnnealingLR(o, 40), TL.ExponentialLR(o, 0.99)],
                                  milestones=[5, 45])),
    "SequentialLR_restarts": (       # schedules without a closed form restart by get_lr
        lambda o: L.SequentialLR(o, [L.ConstantLR(o, 0.5, 4),
                                     L.CosineAnnealingWarmRestarts(o, 6, 2),
                                     L.LambdaLR(o, lambda t: 0.97 ** t)], [10, 60]),
        lambda o: TL.SequentialLR(o, [TL.ConstantLR(o, 0.5, 4),
                                      TL.CosineAnnealingWarmRestarts(o, 6, 2),
                                      TL.LambdaLR(o, lambda t: 0.97 ** t)], [10, 60])),
    "ChainedScheduler": (
        lambda o: L.ChainedScheduler([L.ConstantLR(o, 0.1, 20), L.ExponentialLR(o, 0.99),
                                      L.StepLR(o, 30, 0.5)]),
        lambda o: TL.ChainedScheduler([TL.ConstantLR(o, 0.1, 20), TL.ExponentialLR(o, 0.99),
                                       TL.StepLR(o, 30, 0.5)])),
    "Sequential_of_chained": (
        lambda o: L.SequentialLR(o, [L.ChainedScheduler([L.ConstantLR(o, 0.1, 8),
                                                         L.ExponentialLR(o, 0.9)]),
                                     L.PolynomialLR(o, 50, 0.5)], [20]),
        lambda o: TL.SequentialLR(o, [TL.ChainedScheduler([TL.ConstantLR(o, 0.1, 8),
                                                           TL.ExponentialLR(o, 0.9)]),
                                      TL.PolynomialLR(o, 50, 0.5)], [20])),
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


def _has_closed_form(name):
    return hasattr(CASES[name][0](_optimizers()[0]), "_get_closed_form_lr")


@pytest.mark.parametrize("name", [n for n in CASES if _has_closed_form(n)])
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


def test_warm_restarts_fractional_epochs_match_torch():
    """The batch-loop form scheduler.step(epoch + i / iters), interleaved with plain steps
    and a jump back, as in PyTorch's docstring."""
    for t_0, t_mult in [(3, 2), (5, 1), (2, 3)]:
        opt, t_opt = _optimizers()
        sched = L.CosineAnnealingWarmRestarts(opt, t_0, t_mult, eta_min=0.02)
        t_sched = TL.CosineAnnealingWarmRestarts(t_opt, t_0, t_mult, eta_min=0.02)
        calls = [(e + i / 7,) for e in range(40) for i in range(7)] + [()] * 5 + [(26,), ()]
        for args in calls:
            sched.step(*args), t_sched.step(*args)
            assert sched.get_last_lr() == t_sched.get_last_lr(), args
            assert (sched.T_cur, sched.T_i, sched.last_epoch) == \
                (t_sched.T_cur, t_sched.T_i, t_sched.last_epoch)
    with pytest.raises(ValueError, match="epoch must be a finite number >= 0"):
        sched.step(-1)


def test_warm_restarts_jump_to_an_exact_restart_equals_stepping_there():
    """A deliberate difference: torch's log-based restart count rounds down at epoch 121
    for T_0=1, T_mult=3 and gives eta_min; stepping there (both libraries) gives base_lr."""
    opt, t_opt = _optimizers()
    stepped = L.CosineAnnealingWarmRestarts(opt, 1, 3, eta_min=0.01)
    for _ in range(121):
        stepped.step()
    assert stepped.get_last_lr() == [0.5, 0.1]                  # a restart: base_lr
    opt, t_opt = _optimizers()
    jumped = L.CosineAnnealingWarmRestarts(opt, 1, 3, eta_min=0.01)
    t_jumped = TL.CosineAnnealingWarmRestarts(t_opt, 1, 3, eta_min=0.01)
    jumped.step(121), t_jumped.step(121)
    assert jumped.get_last_lr() == stepped.get_last_lr()
    assert t_jumped.get_last_lr() == pytest.approx([0.01, 0.01])  # torch's rounding
    for epoch in [4, 13, 40, 120.5, 121.25, 363.9]:             # elsewhere: torch's values
        jumped.step(epoch), t_jumped.step(epoch)
        assert jumped.get_last_lr() == t_jumped.get_last_lr()


@pytest.mark.filterwarnings("ignore:The epoch parameter")
def test_deprecated_step_epoch_form_matches_torch():
    for name in ["StepLR", "CosineAnnealingLR", "PolynomialLR", "CyclicLR"]:
        opt, t_opt = _optimizers()
        sched, t_sched = CASES[name][0](opt), CASES[name][1](t_opt)
        for epoch in [3, 17, 9, 40]:
            with pytest.warns(UserWarning, match="deprecated"):
                sched.step(epoch)
            t_sched.step(epoch)
            assert sched.get_last_lr() == t_sched.get_last_lr()
            assert sched.last_epoch == epoch


@pytest.mark.parametrize("name", sorted(CASES))
def test_state_dict_keys_are_torchs(name):
    """torch's keys (its bookkeeping _step_count, _is_initial, _get_lr_called_within_step
    included) with torch's step count, after construction and after three steps."""
    opt, t_opt = _optimizers()
    sched, t_sched = CASES[name][0](opt), CASES[name][1](t_opt)
    for _ in range(2):
        ours, theirs = sched.state_dict(), t_sched.state_dict()
        assert set(ours) == set(theirs)
        if "_step_count" in theirs:
            assert ours["_step_count"] == theirs["_step_count"]
            assert ours["_is_initial"] is theirs["_is_initial"] is False
        if "_schedulers" in ours:
            assert [set(s) for s in ours["_schedulers"]] == [set(s) for s in theirs["_schedulers"]]
        for _ in range(3):
            opt.step(), t_opt.step()
            sched.step(), t_sched.step()


def test_sequential_resume_restores_the_active_rate_before_its_milestone():
    """Loaded without the optimizer's state dict, the learning rate is the active inner
    scheduler's, not that of whichever inner scheduler was loaded last."""
    make = CASES["SequentialLR"][0]
    opt, _ = _optimizers()
    sched = make(opt)
    for _ in range(3):
        sched.step()
    opt2, _ = _optimizers()
    sched2 = make(opt2)
    sched2.load_state_dict(pickle.loads(pickle.dumps(sched.state_dict())))
    assert [g["lr"] for g in opt2.param_groups] == sched.get_last_lr()
    for _ in range(50):
        sched.step(), sched2.step()
        assert sched2.get_last_lr() == sched.get_last_lr()


@pytest.mark.parametrize("make,error,match", [
    (lambda o: L.ConstantLR(o, factor=0.0), ValueError, r"factor must be in \(0, 1\]"),
    (lambda o: L.ConstantLR(o, factor=1.5), ValueError, "factor"),
    (lambda o: L.ConstantLR(o, total_iters=0), ValueError, "total_iters must be >= 1"),
    (lambda o: L.PolynomialLR(o, power=-1.0), ValueError, "power"),
    (lambda o: L.PolynomialLR(o, total_iters=0), ValueError, "total_iters must be >= 1"),
    (lambda o: L.CosineAnnealingWarmRestarts(o, 0), ValueError, "T_0 must be >= 1"),
    (lambda o: L.CosineAnnealingWarmRestarts(o, 5, T_mult=0), ValueError, "T_mult"),
    (lambda o: L.CosineAnnealingWarmRestarts(o, 5, T_mult=1.5), TypeError, "T_mult"),
    (lambda o: L.CyclicLR(o, 0.1, 1.0, mode="sine"), ValueError, "mode must be"),
    (lambda o: L.CyclicLR(o, 0.1, 1.0, step_size_up=0), ValueError, "step_size_up > 0"),
    (lambda o: L.CyclicLR(o, 0.1, [1.0]), ValueError, "same length"),
    (lambda o: L.CyclicLR(o, 0.1, 1.0, scale_fn=lambda x: 1.0, scale_mode="epochs"),
     ValueError, "scale_mode"),
    (lambda o: L.CyclicLR(optim.Adagrad(o.param_groups[0]["params"]), 0.1, 1.0), ValueError,
     "no momentum or betas to cycle"),
    (lambda o: L.SequentialLR(o, [], []), ValueError, "at least one scheduler"),
    (lambda o: L.SequentialLR(o, [L.StepLR(o, 2), L.StepLR(o, 3)], []), ValueError,
     "one milestone fewer"),
    (lambda o: L.SequentialLR(o, [L.StepLR(o, 2)] * 3, [5, 3]), ValueError,
     "strictly increasing"),
    (lambda o: L.SequentialLR(o, [L.StepLR(o, 2), L.ReduceLROnPlateau(o)], [3]), ValueError,
     "ReduceLROnPlateau"),
    (lambda o: L.SequentialLR(o, [L.StepLR(_optimizers()[0], 2)], []), ValueError,
     "same optimizer"),
    (lambda o: L.ChainedScheduler([L.StepLR(o, 2), "StepLR"]), TypeError, r"schedulers\[1\]"),
    (lambda o: L.ChainedScheduler([L.StepLR(o, 2), L.StepLR(_optimizers()[0], 2)]),
     ValueError, "same optimizer"),
])
def test_bad_arguments_of_the_new_schedulers_are_named(make, error, match):
    opt, _ = _optimizers()
    with pytest.raises(error, match=match):
        make(opt)


def test_cyclic_lr_without_momentum_cycling_works_on_adagrad_as_torch():
    params = [ta.nn.Parameter(ta.zeros(2))]
    t_params = [torch.nn.Parameter(torch.zeros(2))]
    opt, t_opt = optim.Adagrad(params), torch.optim.Adagrad(t_params)
    sched = L.CyclicLR(opt, 0.01, 0.1, 4, cycle_momentum=False)
    t_sched = TL.CyclicLR(t_opt, 0.01, 0.1, 4, cycle_momentum=False)
    seen, t_seen = [], []
    for _ in range(20):
        opt.step(), t_opt.step(), sched.step(), t_sched.step()
        seen.append(sched.get_last_lr()), t_seen.append(t_sched.get_last_lr())
    assert seen == t_seen and len(set(map(tuple, seen))) == 5     # the 5 rungs of a cycle


def test_negative_control_sequence_is_not_chain_and_triangular2_is_not_triangular():
    """The exact comparison catches a composite or a cycle mode built the wrong way."""
    opt, t_opt = _optimizers()
    seq = L.SequentialLR(opt, [L.ConstantLR(opt, 0.1, 20), L.ExponentialLR(opt, 0.9)], [20])
    chain = TL.ChainedScheduler([TL.ConstantLR(t_opt, 0.1, 20), TL.ExponentialLR(t_opt, 0.9)])
    seen, t_seen = _run((opt, seq), (t_opt, chain), steps=30)
    assert seen[:1] == t_seen[:1] and seen != t_seen
    opt, t_opt = _optimizers()
    seen, t_seen = _run((opt, L.CyclicLR(opt, 0.01, 1.0, 5)),
                        (t_opt, TL.CyclicLR(t_opt, 0.01, 1.0, 5, mode="triangular2")), 30)
    assert seen[:10] == t_seen[:10] and seen != t_seen      # the same first cycle only


@pytest.mark.parametrize("options", [dict(patience=1, threshold=0.1),
                                     dict(mode="max", min_lr=[0.05], cooldown=1),
                                     dict(min_lr=0.001, factor=0.5, threshold_mode="abs")])
def test_reduce_lr_on_plateau_state_dict_is_torchs_both_ways(options):
    """The same keys, order and values as torch's (default_min_lr, mode_worse included), and
    a state dict saved by torch loads here (and continues identically)."""
    metrics = [1.0, 2.0, 3.0, 0.5, 0.6, 0.7, 0.8]

    def run(m, steps):
        p = m.nn.Parameter(m.zeros(2))
        opt = m.optim.SGD([p], lr=0.1)
        sched = m.optim.lr_scheduler.ReduceLROnPlateau(opt, **options)
        for value in metrics[:steps]:
            sched.step(value)
        return opt, sched
    _, theirs = run(torch, 4)
    _, ours = run(ta, 4)
    assert list(ours.state_dict().items()) == list(theirs.state_dict().items())
    opt, loaded = run(ta, 0)
    loaded.load_state_dict(theirs.state_dict())
    # the learning rate itself travels in the optimizer's state dict (as in torch)
    opt.param_groups[0]["lr"] = theirs.optimizer.param_groups[0]["lr"]
    for value in metrics[4:]:
        loaded.step(value), theirs.step(value)
    assert loaded.state_dict() == theirs.state_dict()
    assert opt.param_groups[0]["lr"] == theirs.optimizer.param_groups[0]["lr"]
