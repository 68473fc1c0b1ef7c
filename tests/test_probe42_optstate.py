"""optstate42: an optimizer's live state holds Tensors, as torch's (issue 30).

``print(opt.state[p]["exp_avg"])`` prints ``tensor([...])`` and
``opt.state[p]["momentum_buffer"].norm()`` works in torch; tinyattn's state held NumPy arrays
between steps. Each case runs the same program with torch and with tinyattn and compares the
type, the printout and the values of every state entry.
"""
import numpy as np
import pytest

import tinyattn as ta

torch = pytest.importorskip("torch", reason="torch is the oracle for these tests")

CASES = [
    ("SGD", dict(lr=0.1, momentum=0.9)),
    ("Adam", dict(lr=0.1)),
    ("Adam", dict(lr=0.1, amsgrad=True)),
    ("AdamW", dict(lr=0.1)),
    ("NAdam", dict(lr=0.1)),
    ("RAdam", dict(lr=0.1)),
    ("Adamax", dict(lr=0.1)),
    ("RMSprop", dict(lr=0.01, momentum=0.9, centered=True)),
    ("Adagrad", dict(lr=0.1)),
    ("Adadelta", dict(lr=1.0)),
    ("Rprop", dict(lr=0.01)),
    ("ASGD", dict(lr=0.01)),
    ("Adafactor", dict(lr=0.01)),
    ("LBFGS", dict(lr=1, max_iter=2)),
    ("Muon", dict(lr=0.02)),
]
IDS = [f"{name}-{'-'.join(kw)}" for name, kw in CASES]


def _two_steps(m, name, kwargs, shape=(2, 3)):
    # values exact in binary, so that both frameworks start from the same bits
    p = m.nn.Parameter(m.tensor(np.arange(6, dtype=np.float32).reshape(shape) / 8))
    opt = getattr(m.optim, name)([p], **kwargs)

    def closure():
        opt.zero_grad()
        loss = (p * p).sum() + p.sum()
        loss.backward()
        return loss
    for _ in range(2):
        opt.step(closure)
    return p, opt


def _entries(state):
    """name -> value, a list's items as name[i]."""
    out = {}
    for name, value in state.items():
        if isinstance(value, list):
            out.update({f"{name}[{i}]": v for i, v in enumerate(value)})
        out[name] = value
    return out


def _agree(ours, theirs, where):
    if isinstance(theirs, torch.Tensor):
        assert isinstance(ours, ta.Tensor), (where, type(ours))
        assert ours.shape == tuple(theirs.shape), where
        assert str(ours.dtype) == str(theirs.dtype).replace("torch.", ""), where
        np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-5, atol=1e-7,
                                   err_msg=where)
        # the printout is torch's for these values (the frameworks' last bits may differ)
        assert repr(ours) == repr(torch.tensor(ours.numpy())), where
    elif isinstance(theirs, list):
        assert type(ours) is list and len(ours) == len(theirs), where
    else:
        assert type(ours) is type(theirs), (where, type(ours), type(theirs))


@pytest.mark.parametrize("name, kwargs", CASES, ids=IDS)
def test_state_entries_are_tensors_that_print_as_torch_s(name, kwargs):
    pt, theirs = _two_steps(torch, name, kwargs)
    pa, ours = _two_steps(ta, name, kwargs)
    their_state, our_state = _entries(theirs.state[pt]), _entries(ours.state[pa])
    assert our_state.keys() == their_state.keys()
    for key, value in their_state.items():
        _agree(our_state[key], value, f"{name} state[{key!r}]")
    # negative control: there are tensors to compare
    assert any(isinstance(v, torch.Tensor) and v.dim() > 0 for v in their_state.values())


@pytest.mark.parametrize("name, kwargs", [CASES[0], CASES[1], CASES[7]],
                         ids=[IDS[0], IDS[1], IDS[7]])
def test_state_tensors_stay_the_same_objects_and_track_the_step(name, kwargs):
    """A reference taken after one step sees the next one's update (torch updates its state
    tensors in place), and Tensor methods work on it."""
    for m in (torch, ta):
        p, opt = _two_steps(m, name, kwargs)
        key = next(k for k, v in opt.state[p].items() if isinstance(v, m.Tensor) and v.dim())
        held = opt.state[p][key]
        before = held.clone()

        def closure():
            opt.zero_grad()
            loss = (p * p).sum() + p.sum()
            loss.backward()
            return loss
        opt.step(closure)
        assert opt.state[p][key] is held
        assert not bool(m.equal(held, before))
        assert float(held.norm()) >= 0


def test_mutating_a_state_tensor_changes_the_next_step_as_torch():
    """Zeroing Adam's exp_avg in place (a learner resetting momentum) is what the next step
    reads, in torch and here."""
    results = []
    for m in (torch, ta):
        p, opt = _two_steps(m, "Adam", dict(lr=0.1))
        opt.state[p]["exp_avg"].zero_()
        opt.state[p]["exp_avg_sq"].mul_(2.0)
        opt.zero_grad()
        ((p * p).sum() + p.sum()).backward()
        opt.step()
        results.append(p.detach().numpy().copy())
    np.testing.assert_allclose(results[1], results[0], rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("name, kwargs", [CASES[1], CASES[-2]], ids=[IDS[1], IDS[-2]])
def test_loaded_state_holds_tensors_and_resumes(name, kwargs):
    p, opt = _two_steps(ta, name, kwargs)
    other = getattr(ta.optim, name)([p], **kwargs)
    other.load_state_dict(opt.state_dict())
    for key, value in _entries(other.state[p]).items():
        assert not isinstance(value, np.ndarray), key      # Tensors, as torch's
    tensors = [k for k, v in other.state[p].items() if isinstance(v, ta.Tensor) and v.dim()]
    assert tensors                                          # negative control

    def closure():
        other.zero_grad()
        loss = (p * p).sum()
        loss.backward()
        return loss
    other.step(closure)
    for key, value in _entries(other.state[p]).items():
        assert not isinstance(value, np.ndarray), key


def test_a_user_optimizer_storing_tensors_works_as_in_torch():
    """A subclass written by a user stores torch Tensors and updates them with Tensor ops;
    a subclass of SGD reads the momentum buffer after ``super().step()``."""
    finals = []
    for m in (torch, ta):
        class HeavyBall(m.optim.Optimizer):
            def __init__(self, params, lr=0.1, beta=0.9):
                super().__init__(params, dict(lr=lr, beta=beta))

            @m.no_grad()
            def step(self, closure=None):
                for group in self.param_groups:
                    for p in group["params"]:
                        state = self.state[p]
                        if "buf" not in state:
                            state["buf"] = m.zeros_like(p)
                        state["buf"].mul_(group["beta"]).add_(p.grad)
                        p.sub_(group["lr"] * state["buf"])

        class NormSGD(m.optim.SGD):
            def step(self, closure=None):
                super().step(closure)
                self.norms = [float(self.state[p]["momentum_buffer"].norm())
                              for g in self.param_groups for p in g["params"]]

        w = m.nn.Parameter(m.tensor([1.0, -2.0, 0.5]))
        v = m.nn.Parameter(m.tensor([0.25, 3.0]))
        a, b = HeavyBall([w]), NormSGD([v], lr=0.1, momentum=0.9)
        for _ in range(3):
            a.zero_grad(), b.zero_grad()
            ((w * w).sum() + (v ** 3).sum()).backward()
            a.step(), b.step()
        assert isinstance(a.state[w]["buf"], m.Tensor)
        finals.append((w.detach().numpy().copy(), v.detach().numpy().copy(), b.norms))
    np.testing.assert_allclose(finals[1][0], finals[0][0], rtol=1e-6)
    np.testing.assert_allclose(finals[1][1], finals[0][1], rtol=1e-6)
    np.testing.assert_allclose(finals[1][2], finals[0][2], rtol=1e-6)


def test_adagrad_state_is_filled_when_built_as_torch():
    """torch's Adagrad holds step 0 and the accumulator before any step (state_dict() too)."""
    pt, pa = torch.nn.Parameter(torch.ones(3)), ta.nn.Parameter(ta.ones(3))
    theirs = torch.optim.Adagrad([pt], lr=0.1, initial_accumulator_value=0.5)
    ours = ta.optim.Adagrad([pa], lr=0.1, initial_accumulator_value=0.5)
    assert ours.state[pa].keys() == theirs.state[pt].keys() == {"step", "sum"}
    for key in ("step", "sum"):
        _agree(ours.state[pa][key], theirs.state[pt][key], key)
        assert repr(ours.state[pa][key]) == repr(theirs.state[pt][key])
    assert ours.state_dict()["state"].keys() == theirs.state_dict()["state"].keys() == {0}
    pt.grad, pa.grad = torch.ones(3), ta.ones(3)
    theirs.step(), ours.step()
    np.testing.assert_allclose(pa.detach().numpy(), pt.detach().numpy(), rtol=1e-6)
    assert float(ours.state[pa]["step"]) == 1.0
