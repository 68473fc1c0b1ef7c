"""Adadelta, Rprop, ASGD, Adafactor and LBFGS against torch.optim (issue 30, stream mods30):
trajectories in float64 and float32, state keys, a torch state dict loaded mid-run, the
constructor checks, and LBFGS's closure and line search. Negative controls show the
comparison can fail."""
import numpy as np
import pytest

import tinyattn as ta
from tinyattn import optim

torch = pytest.importorskip("torch", reason="torch is the reference for these tests")

RNG = np.random.default_rng(7)
DATA = {"w": RNG.standard_normal((3, 4)), "b": RNG.standard_normal(3),
        "x": RNG.standard_normal((8, 4)), "y": RNG.standard_normal((8, 3)) * 0.5}


def _model(lib, dtype):
    make = (lambda a, grad: torch.tensor(a, dtype=getattr(torch, dtype), requires_grad=grad)) \
        if lib is torch else (lambda a, grad: ta.tensor(a, dtype=dtype, requires_grad=grad))
    return [make(DATA[k], k in "wb") for k in ("w", "b", "x", "y")]


def _closure(opt, w, b, x, y):
    def closure():
        opt.zero_grad()
        loss = (((x @ w.transpose(0, 1) + b).tanh() - y) ** 2).mean()
        loss.backward()
        return loss
    return closure


def _run(lib, name, kwargs, steps, dtype="float64", state=None):
    w, b, x, y = _model(lib, dtype)
    opt = getattr(lib.optim if lib is torch else optim, name)([w, b], **kwargs)
    closure = _closure(opt, w, b, x, y)
    path = []
    for _ in range(steps):
        if name == "LBFGS":
            opt.step(closure)
        else:
            closure()
            opt.step()
        path.append([w.detach().numpy().copy(), b.detach().numpy().copy()])
    return path, opt, (w, b, x, y)


CASES = [("Adadelta", {}), ("Adadelta", {"lr": 0.5, "rho": 0.8, "weight_decay": 0.1,
                                         "maximize": True}),
         ("Rprop", {}), ("Rprop", {"lr": 0.05, "etas": (0.3, 1.4), "step_sizes": (1e-3, 0.2)}),
         ("ASGD", {}), ("ASGD", {"lr": 0.05, "lambd": 0.01, "alpha": 0.5, "t0": 3,
                                 "weight_decay": 0.1}),
         ("Adafactor", {}), ("Adafactor", {"lr": 0.05, "beta2_decay": -0.5, "eps": (1e-20, 1e-3),
                                           "d": 1.2, "weight_decay": 0.1}),
         ("LBFGS", {"max_iter": 4}), ("LBFGS", {"max_iter": 4, "history_size": 2, "lr": 0.5}),
         ("LBFGS", {"max_iter": 5, "line_search_fn": "strong_wolfe"})]


@pytest.mark.parametrize("name,kwargs", CASES)
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_trajectory_and_state_keys_agree_with_torch(name, kwargs, dtype):
    # L-BFGS amplifies round-off (its y are differences of nearly equal gradients): float32
    # runs of the two frameworks part after one step of a few iterations, float64 after two
    steps = (2 if dtype == "float64" else 1) if name == "LBFGS" else 8
    want, t_opt, _ = _run(torch, name, kwargs, steps, dtype)
    got, o_opt, _ = _run(ta, name, kwargs, steps, dtype)
    tol = dict(rtol=1e-9, atol=1e-11) if dtype == "float64" else dict(rtol=2e-4, atol=1e-5)
    for step, (ours, theirs) in enumerate(zip(got, want)):
        for a, e in zip(ours, theirs):
            assert a.dtype == e.dtype
            np.testing.assert_allclose(a, e, err_msg=f"{name} step {step + 1}", **tol)
    t_state, o_state = t_opt.state_dict(), o_opt.state_dict()
    assert sorted(t_state["state"]) == sorted(o_state["state"])
    for index in t_state["state"]:
        assert set(t_state["state"][index]) == set(o_state["state"][index])
    for t_group, o_group in zip(t_state["param_groups"], o_state["param_groups"]):
        assert set(o_group) <= set(t_group)       # torch adds foreach, capturable, ...


def test_negative_control_a_different_rho_disagrees():
    want, _, _ = _run(torch, "Adadelta", {"rho": 0.9}, 3)
    got, _, _ = _run(ta, "Adadelta", {"rho": 0.8}, 3)
    assert not np.allclose(got[-1][0], want[-1][0], rtol=1e-9)


def _numpy_state(state_dict):
    def convert(value):
        if isinstance(value, torch.Tensor):
            return value.numpy().copy() if value.ndim else value.item()
        if isinstance(value, list):
            return [convert(v) for v in value]
        return value
    return {"state": {i: {k: convert(v) for k, v in entries.items()}
                      for i, entries in state_dict["state"].items()},
            "param_groups": [{k: v for k, v in g.items()
                              if k not in ("foreach", "capturable", "differentiable")}
                             for g in state_dict["param_groups"]]}


@pytest.mark.parametrize("name,kwargs", [case for case in CASES if case[0] != "LBFGS"]
                         + [("LBFGS", {"max_iter": 3})])
def test_a_torch_state_dict_loads_and_the_run_continues_as_torch(name, kwargs):
    """Run torch 3 steps, load its optimizer state (and weights) into tinyattn, and step
    both on: the parameters agree."""
    _, t_opt, (tw, tb, tx, ty) = _run(torch, name, kwargs, 3)
    w = ta.tensor(tw.detach().numpy(), requires_grad=True)
    b = ta.tensor(tb.detach().numpy(), requires_grad=True)
    x, y = ta.tensor(DATA["x"]), ta.tensor(DATA["y"])
    o_opt = getattr(optim, name)([w, b], **kwargs)
    o_opt.load_state_dict(_numpy_state(t_opt.state_dict()))
    closures = _closure(t_opt, tw, tb, tx, ty), _closure(o_opt, w, b, x, y)
    for _ in range(2):
        for opt, closure in zip((t_opt, o_opt), closures):
            if name == "LBFGS":
                opt.step(closure)
            else:
                closure()
                opt.step()
    np.testing.assert_allclose(w.numpy(), tw.detach().numpy(), rtol=1e-9, atol=1e-11)
    np.testing.assert_allclose(b.numpy(), tb.detach().numpy(), rtol=1e-9, atol=1e-11)


@pytest.mark.parametrize("name,kwargs,message", [
    ("Adadelta", {"rho": 1.5}, "rho"), ("Adadelta", {"lr": -1.0}, "lr"),
    ("Rprop", {"etas": (1.2, 0.5)}, "eta"), ("ASGD", {"weight_decay": -0.1}, "weight_decay"),
    ("Adafactor", {"beta2_decay": 0.5}, "beta2_decay"), ("Adafactor", {"d": 0.5}, "d"),
    ("Adafactor", {"eps": (-1.0, 1e-3)}, "epsilon1"),
    ("LBFGS", {"line_search_fn": "armijo"}, "strong_wolfe"),
])
def test_constructor_checks_refuse_what_torch_refuses(name, kwargs, message):
    w = ta.zeros(2, requires_grad=True)
    with pytest.raises(ValueError, match=message):
        getattr(optim, name)([w], **kwargs)
    if name != "LBFGS":       # torch's LBFGS fails only at the first step
        with pytest.raises(ValueError):
            getattr(torch.optim, name)([torch.zeros(2, requires_grad=True)], **kwargs)


def test_lbfgs_one_group_and_a_closure():
    w, b = ta.zeros(2, requires_grad=True), ta.zeros(1, requires_grad=True)
    with pytest.raises(ValueError, match="per-parameter options"):
        optim.LBFGS([{"params": [w]}, {"params": [b]}])
    opt = optim.LBFGS([w])
    with pytest.raises(RuntimeError, match="closure"):
        opt.step(None)


def test_tensor_lr_is_read_as_a_number_and_must_have_one_element():
    w = ta.zeros(2, requires_grad=True)
    assert optim.SGD([w], lr=ta.tensor(0.5)).param_groups[0]["lr"] == 0.5
    with pytest.raises(ValueError, match="one element"):
        optim.Rprop([w], lr=ta.tensor([0.1, 0.2]))
