"""Optimizer state dicts, parameter groups and repr as torch 2.13's (issue 30, stream optim39).

For every optimizer tinyattn has: after a few steps ``state_dict()`` has torch's structure
(each group's keys in torch's order with torch's types and values, integer defaults as ints;
each parameter's state entries in torch's order, ``step`` and the other scalars as float32
0-d tensors, arrays as tensors of the parameter's dtype), ``repr(optimizer)`` is torch's
text, a state dict crosses between the frameworks in both directions and the run continues as
the other framework's, and an older tinyattn checkpoint (int steps, no kernel keys) still
loads. Named parameters, duplicate parameters and the kernel switches behave as torch's.
Negative controls show the comparisons can fail."""
import warnings

import numpy as np
import pytest

import tinyattn as ta
from tinyattn import optim

torch = pytest.importorskip("torch", reason="torch is the reference for these tests")

RNG = np.random.default_rng(11)
DATA = {"w": RNG.standard_normal((3, 4)), "b": RNG.standard_normal((1, 3)),
        "x": RNG.standard_normal((8, 4)), "y": RNG.standard_normal((8, 3)) * 0.5}

NAMES = ["SGD", "Adam", "AdamW", "NAdam", "RAdam", "Adamax", "RMSprop", "Adagrad", "Adadelta",
         "Rprop", "ASGD", "Adafactor", "LBFGS", "Muon"]
# options that make each optimizer keep state (SGD keeps none without momentum)
KWARGS = {"SGD": dict(momentum=0.9), "Muon": dict(lr=0.02)}


def _model(lib, dtype="float64"):
    make = (lambda a, grad: torch.tensor(a, dtype=getattr(torch, dtype), requires_grad=grad)) \
        if lib is torch else (lambda a, grad: ta.tensor(a, dtype=dtype, requires_grad=grad))
    return [make(DATA[k], k in "wb") for k in ("w", "b", "x", "y")]


def _make(lib, name, params, **kwargs):
    return getattr(torch.optim if lib is torch else optim, name)(params, **kwargs)


def _steps(opt, w, b, x, y, steps):
    def closure():
        opt.zero_grad()
        loss = (((x @ w.transpose(0, 1) + b).tanh() - y) ** 2).mean()
        loss.backward()
        return loss
    for _ in range(steps):
        if isinstance(opt, (optim.LBFGS, torch.optim.LBFGS)):
            opt.step(closure)
        else:
            closure()
            opt.step()
    return [np.array(p.detach().numpy()) for p in (w, b)]


def _describe(value, with_value):
    if isinstance(value, (torch.Tensor, ta.Tensor)):
        return ("tensor", str(value.dtype).replace("torch.", ""), tuple(value.shape))
    if isinstance(value, (list, tuple)):
        return (type(value).__name__, tuple(_describe(v, with_value) for v in value))
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return (type(value).__name__, value) if with_value else type(value).__name__
    return value


def _structure(saved):
    return {"param_groups": [[(k, _describe(v, True)) for k, v in g.items()]
                             for g in saved["param_groups"]],
            "state": {i: [(k, _describe(v, False)) for k, v in entries.items()]
                      for i, entries in saved["state"].items()}}


def _to_torch(value):
    if isinstance(value, ta.Tensor):
        return torch.from_numpy(np.array(value.numpy()))
    if isinstance(value, dict):
        return {k: _to_torch(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_to_torch(v) for v in value)
    return value


def _to_tinyattn(value):
    if isinstance(value, torch.Tensor):
        return ta.tensor(value.detach().numpy().copy())
    if isinstance(value, dict):
        return {k: _to_tinyattn(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_to_tinyattn(v) for v in value)
    return value


@pytest.mark.parametrize("name", NAMES)
def test_state_dict_structure_and_repr_are_torch_s(name):
    kwargs = KWARGS.get(name, {})
    tw, tb, *txy = _model(torch)
    w, b, *xy = _model(ta)
    t_opt, opt = _make(torch, name, [tw, tb], **kwargs), _make(ta, name, [w, b], **kwargs)
    assert repr(opt) == repr(t_opt)
    _steps(t_opt, tw, tb, *txy, 3)
    _steps(opt, w, b, *xy, 3)
    ours, theirs = opt.state_dict(), t_opt.state_dict()
    assert _structure(ours) == _structure(theirs)
    assert repr(opt) == repr(t_opt)
    if name not in ("SGD", "Muon", "LBFGS"):
        step = ours["state"][0]["step"]
        assert isinstance(step, ta.Tensor) and step.dtype == np.float32 and step.item() == 3.0


def test_repr_of_two_groups_is_torch_s_text():
    tw, tb, *_ = _model(torch)
    w, b, *_ = _model(ta)
    t_opt = torch.optim.SGD([{"params": [tw]}, {"params": [tb], "lr": 0.5}], lr=0.1)
    opt = optim.SGD([{"params": [w]}, {"params": [b], "lr": 0.5}], lr=0.1)
    assert repr(opt) == repr(t_opt)
    assert "\n\nParameter Group 1\n" in repr(opt) and "    weight_decay: 0\n" in repr(opt)


def test_negative_control_structure_sees_a_float_default():
    """The structure comparison tells 0 from 0.0 (the old format differed exactly so)."""
    w, b, *_ = _model(ta)
    tw, tb, *_ = _model(torch)
    ours = optim.SGD([w, b], weight_decay=0.0).state_dict()
    assert _structure(ours) != _structure(torch.optim.SGD([tw, tb]).state_dict())


@pytest.mark.parametrize("name", ["Adam", "NAdam", "ASGD", "Adagrad", "RMSprop", "Rprop",
                                  "SGD", "Adadelta", "Adamax", "RAdam", "AdamW", "Adafactor"])
@pytest.mark.parametrize("direction", ["torch_to_tinyattn", "tinyattn_to_torch"])
def test_a_state_dict_crosses_frameworks_and_the_run_continues_as_the_other(name, direction):
    """Three steps in one framework, its state dict loaded into the other, three more steps
    there: the parameters agree with an uninterrupted six-step run of the first framework."""
    kwargs = KWARGS.get(name, {})
    dtype = "float32"
    first, second = (torch, ta) if direction == "torch_to_tinyattn" else (ta, torch)
    straight = _model(first, dtype)
    expected = _steps(_make(first, name, straight[:2], **kwargs), *straight, 6)
    a = _model(first, dtype)
    opt_a = _make(first, name, a[:2], **kwargs)
    _steps(opt_a, *a, 3)
    saved = opt_a.state_dict()
    converted = _to_tinyattn(saved) if second is ta else _to_torch(saved)
    b = _model(second, dtype)
    for p, q in zip(b[:2], a[:2]):
        with (torch.no_grad() if second is torch else ta.no_grad()):
            p.copy_(ta.tensor(q.detach().numpy()) if second is ta else
                    torch.from_numpy(q.detach().numpy().copy()))
    opt_b = _make(second, name, b[:2], **kwargs)
    opt_b.load_state_dict(converted)
    got = _steps(opt_b, *b, 3)
    for g, e in zip(got, expected):
        np.testing.assert_allclose(g, e, rtol=2e-6, atol=2e-6)
    if second is ta and name not in ("SGD",):        # torch's float32 0-d tensor, live too
        step = opt_b.state[b[0]]["step"]
        assert isinstance(step, ta.Tensor) and step.dtype == np.float32 and step.shape == ()


def test_resume_from_own_state_dict_is_bit_identical_for_nadam_in_float32():
    """NAdam's mu_product is a float32 product as in torch, so saving it as a float32 tensor
    loses nothing: a resumed run equals an uninterrupted one bit for bit."""
    straight = _model(ta, "float32")
    expected = _steps(optim.NAdam(straight[:2]), *straight, 6)
    a = _model(ta, "float32")
    opt = optim.NAdam(a[:2])
    _steps(opt, *a, 3)
    saved = opt.state_dict()
    opt2 = optim.NAdam(a[:2])
    opt2.load_state_dict(saved)
    got = _steps(opt2, *a, 3)
    for g, e in zip(got, expected):
        np.testing.assert_array_equal(g, e)


def test_an_older_tinyattn_checkpoint_still_loads():
    """Int steps, float mu_product, groups without foreach/capturable/... (the old format)."""
    w, b, *xy = _model(ta, "float32")
    opt = optim.NAdam([w, b])
    _steps(opt, w, b, *xy, 2)
    new = opt.state_dict()
    old = {"state": {i: {k: (int(v.item()) if k == "step" else float(v.item())
                             if k == "mu_product" else v) for k, v in entries.items()}
                     for i, entries in new["state"].items()},
           "param_groups": [{k: v for k, v in g.items()
                             if k not in ("foreach", "capturable", "differentiable")}
                            for g in new["param_groups"]]}
    fresh = optim.NAdam([w, b])
    fresh.load_state_dict(old)
    assert fresh.state[w]["step"].item() == 2 and fresh.state[w]["step"].dtype == np.float32
    assert fresh.param_groups[0]["foreach"] is None
    # the missing keys are added after the saved ones (as torch's __setstate__ adds them)
    ours, expected = _structure(fresh.state_dict()), _structure(new)
    assert ours["state"] == expected["state"]
    assert [dict(g) for g in ours["param_groups"]] == [dict(g) for g in expected["param_groups"]]


def test_named_parameters_are_accepted_and_saved_as_torch_s_param_names():
    model = ta.nn.Linear(4, 3)
    t_model = torch.nn.Linear(4, 3)
    opt = optim.SGD(model.named_parameters(), lr=0.1, momentum=0.9)
    t_opt = torch.optim.SGD(t_model.named_parameters(), lr=0.1, momentum=0.9)
    assert opt.param_groups[0]["params"][0] is model.weight
    assert _structure(opt.state_dict()) == _structure(t_opt.state_dict())
    assert opt.state_dict()["param_groups"][0]["param_names"] == ["weight", "bias"]
    assert repr(opt) == repr(t_opt)
    # named groups too, and the same refusals as torch's
    opt = optim.Adam([{"params": [("w", model.weight)]}, {"params": [("b", model.bias)],
                                                          "lr": 0.1}])
    assert [g["param_names"] for g in opt.param_groups] == [["w"], ["b"]]
    with pytest.raises(ValueError, match="with/without names"):
        optim.SGD([("w", model.weight), model.bias])
    with pytest.raises(ValueError, match="with/without names"):
        optim.SGD([{"params": [("w", model.weight)]}, {"params": [model.bias]}])
    with pytest.raises(ValueError, match="with/without names"):
        torch.optim.SGD([{"params": [("w", t_model.weight)]}, {"params": [t_model.bias]}])


def test_a_duplicate_parameter_in_a_group_warns_and_continues_as_torch():
    w, b, *_ = _model(ta)
    tw, tb, *_ = _model(torch)
    with pytest.warns(UserWarning, match="duplicate parameters; in future, this will cause"):
        opt = optim.SGD([w, b, w], lr=0.1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t_opt = torch.optim.SGD([tw, tb, tw], lr=0.1)
    assert opt.state_dict()["param_groups"][0]["params"] == \
        t_opt.state_dict()["param_groups"][0]["params"] == [2, 1, 2]
    # in two groups it is an error in both
    with pytest.raises(ValueError, match="more than one parameter group"):
        optim.SGD([{"params": [w]}, {"params": [w]}])
    with pytest.raises(ValueError, match="more than one parameter group"):
        torch.optim.SGD([{"params": [tw]}, {"params": [tw]}])


KERNEL_OPTIONS = [dict(fused=True), dict(foreach=True), dict(foreach=False), dict(fused=False),
                  dict(capturable=True), dict(differentiable=True)]


@pytest.mark.parametrize("name", [n for n in NAMES if n not in ("LBFGS", "Muon")])
@pytest.mark.parametrize("options", KERNEL_OPTIONS, ids=lambda o: "-".join(map(str, o.items())))
def test_kernel_switches_as_torch_on_cpu(name, options):
    """Each switch is accepted (and stored in the groups) or refused where torch's is: at
    construction (TypeError for a keyword the optimizer lacks) or at step() (capturable and
    differentiable on CPU leaf parameters)."""
    tw, tb, *txy = _model(torch)
    w, b, *xy = _model(ta)

    def outcome(lib, params, data):
        try:
            opt = _make(lib, name, params, **options)
        except Exception as exc:   # noqa: BLE001
            return ("init", type(exc))
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                _steps(opt, *params, *data, 1)
        except Exception as exc:   # noqa: BLE001
            return ("step", type(exc))
        return ("ok", [(k, v) for k, v in opt.state_dict()["param_groups"][0].items()
                       if k in options])
    assert outcome(ta, [w, b], xy) == outcome(torch, [tw, tb], txy)


def test_a_saved_checkpoint_keeps_scalar_tensors_0_d_for_torch_load(tmp_path):
    """tinyattn's torch-format writer kept 0-d tensors 1-d (np.ascontiguousarray makes them
    so): torch.load read an optimizer's step as tensor([3.]). It is tensor(3.) now."""
    from tinyattn.io.torch_file import load_torch, save_torch
    w, b, *xy = _model(ta, "float32")
    opt = optim.Adam([w, b])
    _steps(opt, w, b, *xy, 3)
    path = tmp_path / "opt.pt"
    save_torch(opt.state_dict(), str(path))
    theirs = torch.load(str(path), weights_only=True)
    assert theirs["state"][0]["step"].shape == () and theirs["state"][0]["step"].item() == 3.0
    with open(path, "rb") as f:
        ours = load_torch(f, weights_only=True)
    assert ours["state"][0]["step"].shape == ()
    tw, tb, *_ = _model(torch, "float32")
    t_opt = torch.optim.Adam([tw, tb])
    t_opt.load_state_dict(theirs)      # torch reads tinyattn's checkpoint as its own
    assert t_opt.state[tw]["step"].item() == 3.0


@pytest.mark.parametrize("make", [
    lambda lib, o: lib.optim.lr_scheduler.StepLR(o, 2, gamma=0.5),
    lambda lib, o: lib.optim.lr_scheduler.LambdaLR(o, lambda e: 0.9 ** e),
    lambda lib, o: lib.optim.lr_scheduler.CosineAnnealingLR(o, T_max=10)], ids=["StepLR",
                                                                            "LambdaLR",
                                                                            "Cosine"])
def test_scheduler_state_dicts_have_torch_s_keys_and_cross_frameworks(make):
    w, b, *_ = _model(ta)
    tw, tb, *_ = _model(torch)
    opt, t_opt = optim.SGD([w, b], lr=0.1), torch.optim.SGD([tw, tb], lr=0.1)
    sched, t_sched = make(ta, opt), make(torch, t_opt)
    for _ in range(3):
        opt.step(), t_opt.step(), sched.step(), t_sched.step()
    assert list(sched.state_dict()) == list(t_sched.state_dict())
    assert sched.state_dict()["_step_count"] == t_sched.state_dict()["_step_count"] == 4
    ours = make(ta, optim.SGD([w, b], lr=0.1))
    ours.load_state_dict(t_sched.state_dict())
    t_opt2 = torch.optim.SGD([tw, tb], lr=0.1)
    theirs = make(torch, t_opt2)
    t_opt2.load_state_dict(t_opt.state_dict())   # torch's scheduler reads the optimizer's lr
    theirs.load_state_dict(sched.state_dict())
    for _ in range(4):
        ours.step(), theirs.step(), t_sched.step()
        assert ours.get_last_lr() == pytest.approx(t_sched.get_last_lr(), rel=1e-12)
        assert theirs.get_last_lr() == pytest.approx(t_sched.get_last_lr(), rel=1e-12)
    # a state dict saved by older tinyattn (no torch bookkeeping keys) still loads
    old = {k: v for k, v in sched.state_dict().items()
           if k not in ("_step_count", "_is_initial", "_get_lr_called_within_step",
                        "lr_lambdas")}
    make(ta, optim.SGD([w, b], lr=0.1)).load_state_dict(old)
