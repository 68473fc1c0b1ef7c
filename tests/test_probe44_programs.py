"""Outside probes from tutorial material no earlier probe used (stream probe44): the UvA deep
learning course notebooks (phlippe/uvadlc_notebooks), Raschka's machine-learning-book, the
PyTorch tutorials. Each program ran unchanged (data shrunk to small synthetic tensors) under
torch 2.13 and under run-torch; each case here is one difference found, in tinyattn's own
words, compared with torch.

What was wrong before:
- ``a / b`` gave the divisor the gradient ``-g * a / (b * b)``: ``b * b`` overflows (float32,
  |b| > 1.8e19) or underflows (|b| < 1e-23) where torch's ``-g * ((a / b) / b)`` is finite,
  so the gradient came out 0 or inf silently (UvA tutorial 3's ``Tanh`` written as
  ``(e^x - e^-x) / (e^x + e^-x)`` had gradient 1 at x = 50, torch 0).
- BatchNorm's update of its running estimates in training bumped their versions, so a second
  forward before backward (Raschka ch. 17's GAN discriminator on the real, then the generated
  batch) made the backward raise; torch's kernel bumps none (a user's ``add_`` still raises).
- ``optim.lr_scheduler._LRScheduler`` (torch's old name of the base class, which UvA tutorial
  6's warmup-cosine schedule subclasses) was missing under run-torch.
- ``randint(low=0, high=2, size=...)`` and ``randint_like(x, high=5)`` (UvA tutorial 2's XOR
  data) were TypeErrors: the bounds were positional only.
- A module holding one child under two names (UvA tutorial 3's ``BaseNetwork`` puts the same
  activation object after every Linear of an ``nn.Sequential``) printed the child once; torch
  prints every entry of ``_modules``.
- ``x.uniform_(a=0, b=1)`` (``nn.init.uniform_``'s names) was accepted and ``from=``/``to=``
  (torch's) refused.
"""
from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="these probes compare with torch")

import tinyattn as ta  # noqa: E402
import tinyattn.nn as tnn  # noqa: E402


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_div_gradient_of_divisor_where_b_squared_overflows_or_underflows(dtype):
    a_values = [1e30, 1e-30, 3.0, -2.0]
    b_values = [1e20, 1e-25, 7.0, 1e-3]
    grads = []
    for lib in (torch, ta):
        a = lib.tensor(a_values, dtype=getattr(lib, dtype), requires_grad=True)
        b = lib.tensor(b_values, dtype=getattr(lib, dtype), requires_grad=True)
        (a / b).sum().backward()
        grads.append((a.grad.detach().numpy(), b.grad.detach().numpy()))
    (ta_, tb), (aa, ab) = grads
    np.testing.assert_allclose(aa, ta_, rtol=1e-6)
    np.testing.assert_allclose(ab, tb, rtol=1e-6)
    assert np.all(np.isfinite(ab)) and np.all(ab != 0)       # not vacuous: torch's are finite


def test_div_gradient_broadcast_divisor_matches_torch():
    rng = np.random.default_rng(0)
    scale = np.float32([1e25, 1e25, 1e-20, 1.0])       # b * b overflows, underflows, neither
    a_np = rng.standard_normal((3, 4)).astype(np.float32) * scale
    b_np = np.float32([2e19, -3e19, 1e-22, 5.0])
    out = []
    for lib in (torch, ta):
        a = lib.tensor(a_np, requires_grad=True)
        b = lib.tensor(b_np, requires_grad=True)
        (a / b).sum().backward()
        out.append(b.grad.numpy())
    np.testing.assert_allclose(out[1], out[0], rtol=1e-5)
    assert np.all(np.isfinite(out[0])) and np.all(out[0] != 0)


def test_tanh_written_with_exp_has_torch_gradient_at_large_inputs():
    """UvA tutorial 3's Tanh: at x = 50 the exact derivative 1 - tanh^2 is 0."""
    values = [-50.0, -5.0, 0.5, 5.0, 30.0, 50.0]
    grads = []
    for lib in (torch, ta):
        x = lib.tensor(values, requires_grad=True)
        e, ne = lib.exp(x), lib.exp(-x)
        ((e - ne) / (e + ne)).sum().backward()
        grads.append(x.grad.numpy())
    np.testing.assert_allclose(grads[1], grads[0], rtol=1e-5, atol=1e-30)
    assert abs(grads[1][-1]) < 1e-30


def _net(lib, nn):
    act = nn.ReLU()
    class Holder(nn.Module):
        def __init__(self):
            super().__init__()
            self.layers = nn.Sequential(nn.Linear(4, 3), act, nn.Linear(3, 2), act)
            self.head = nn.Linear(2, 1)
            self.same_head = self.head
    return Holder()


def test_module_printout_lists_a_child_held_twice_as_torch():
    torch_net, ta_net = _net(torch, torch.nn), _net(ta, tnn)
    assert repr(ta_net) == repr(torch_net)
    assert repr(ta_net).count("ReLU()") == 2                     # not vacuous
    # parameters and named_children still list each module once, as torch's
    assert [n for n, _ in ta_net.named_children()] == [n for n, _ in torch_net.named_children()]
    assert len(list(ta_net.parameters())) == len(list(torch_net.parameters()))


def test_old_lr_scheduler_base_name_subclasses_as_torch():
    """UvA tutorial 6 subclasses ``optim.lr_scheduler._LRScheduler`` (torch: a plain subclass
    of LRScheduler) with a ``get_lr`` that returns NumPy floats."""
    from tinyattn.torch_shim.names import MODULES
    old = MODULES["torch.optim.lr_scheduler"].shim_names["_LRScheduler"]
    from tinyattn.optim.lr_scheduler import LRScheduler as TaBase
    assert issubclass(old, TaBase) and old.__name__ == torch.optim.lr_scheduler._LRScheduler.__name__

    def run(base, optim, lib):
        class Warm(base):
            def __init__(self, optimizer, warmup):
                self.warmup = warmup
                super().__init__(optimizer)

            def get_lr(self):
                factor = 0.5 * (1 + np.cos(np.pi * self.last_epoch / 20))
                factor *= min(1.0, self.last_epoch / self.warmup)
                return [lr * factor for lr in self.base_lrs]

        p = lib.zeros(2, requires_grad=True)
        opt = optim.Adam([p], lr=1e-2)
        sched = Warm(opt, 4)
        lrs = []
        for _ in range(8):
            opt.step()
            sched.step()
            lrs.append(sched.get_last_lr()[0])
        return lrs, sorted(sched.state_dict()), type(opt.param_groups[0]["lr"])

    import tinyattn.optim as ta_optim
    theirs = run(torch.optim.lr_scheduler._LRScheduler, torch.optim, torch)
    ours = run(old, ta_optim, ta)
    np.testing.assert_allclose(ours[0], theirs[0], rtol=1e-12)
    assert ours[1:] == theirs[1:]


def _bn_two_calls(lib, nn):
    """Raschka ch. 17's GAN step: the discriminator (with BatchNorm) sees the real batch, then
    the generated one, and one backward runs through both calls."""
    disc = nn.Sequential(nn.Linear(4, 3), nn.BatchNorm1d(3), nn.LeakyReLU(0.2), nn.Linear(3, 1))
    with lib.no_grad():                                  # the same weights on both sides
        for i, p in enumerate(disc.parameters()):
            p.copy_(lib.tensor(np.sin(np.arange(p.numel()) + 3.0 * i).astype(np.float32)
                               .reshape(tuple(p.shape))))
    real = lib.tensor(np.linspace(-1, 1, 24, dtype=np.float32).reshape(6, 4))
    fake = lib.tensor(np.cos(np.arange(24, dtype=np.float32)).reshape(6, 4))
    loss = disc(real).mean() - disc(fake).mean()
    loss.backward()
    bn = disc[1]
    return (loss.item(), disc[0].weight.grad.numpy().copy(), bn.running_mean.numpy().copy(),
            bn.running_var.numpy().copy(), int(bn.num_batches_tracked))


def test_batch_norm_called_twice_before_one_backward_as_torch():
    theirs, ours = _bn_two_calls(torch, torch.nn), _bn_two_calls(ta, tnn)
    assert ours[4] == theirs[4] == 2
    np.testing.assert_allclose(ours[0], theirs[0], rtol=1e-5)
    for a, b in zip(ours[1:4], theirs[1:4]):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("training", [True, False])
def test_batch_norm_user_write_to_running_stats_still_raises(training):
    """torch's kernel does not bump the running estimates' versions; a user's add_ does."""
    for lib, nn in ((torch, torch.nn), (ta, tnn)):
        bn = nn.BatchNorm1d(3)
        bn.train(training)
        x = lib.tensor(np.arange(12, dtype=np.float32).reshape(4, 3), requires_grad=True)
        y = bn(x)
        bn.running_mean.add_(1)
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            y.sum().backward()


@pytest.mark.parametrize("args, kwargs", [
    ((), dict(low=0, high=2, size=(50, 2), dtype="float32")),   # UvA tutorial 2's XOR data
    ((), dict(high=5, size=(40,))),
    ((3,), dict(high=9, size=(40,))),
    ((7,), dict(size=(40,))),
    ((-2, 4), dict(size=(4, 10))),
])
def test_randint_takes_its_arguments_by_keyword_as_torch(args, kwargs):
    outs = []
    for lib in (torch, ta):
        kw = dict(kwargs)
        if "dtype" in kw:
            kw["dtype"] = getattr(lib, kw["dtype"])
        outs.append(lib.randint(*args, **kw))
    theirs, ours = outs
    assert tuple(ours.shape) == tuple(theirs.shape)
    assert str(ours.dtype).replace("torch.", "") == str(theirs.dtype).replace("torch.", "")
    low = kwargs.get("low", args[0] if len(args) == 2 or "high" in kwargs and args else 0)
    high = kwargs.get("high", args[-1] if args else None)
    values = ours.numpy()
    assert values.min() >= low and values.max() < high and len(np.unique(values)) > 1


@pytest.mark.parametrize("args, kwargs", [((), dict(low=2, size=(3,))), ((5, (3,)), dict(low=1))])
def test_randint_refuses_low_without_high_as_torch(args, kwargs):
    with pytest.raises(TypeError):
        torch.randint(*args, **kwargs)
    with pytest.raises(TypeError):
        ta.randint(*args, **kwargs)


@pytest.mark.parametrize("args, kwargs", [((), dict(high=5)), ((), dict(low=1, high=5)),
                                          ((1,), dict(high=5)), ((1, 5), {})])
def test_randint_like_takes_low_and_high_by_keyword_as_torch(args, kwargs):
    theirs = torch.randint_like(torch.zeros(30, 4), *args, **kwargs)
    ours = ta.randint_like(ta.zeros(30, 4), *args, **kwargs)
    assert tuple(ours.shape) == tuple(theirs.shape) and ours.dtype == np.float32
    low = kwargs.get("low", args[0] if len(args) == 2 or args and "high" in kwargs else 0)
    values = ours.numpy()
    assert values.min() >= low and values.max() < 5 and len(np.unique(values)) > 1
    with pytest.raises(TypeError):
        torch.randint_like(torch.zeros(3), low=1)
    with pytest.raises(TypeError):
        ta.randint_like(ta.zeros(3), low=1)


@pytest.mark.parametrize("call", [
    lambda x: x.uniform_(**{"from": 5, "to": 6}),
    lambda x: x.uniform_(5, to=6),
    lambda x: x.uniform_(5, 6),
    lambda x: x.uniform_(a=5, b=6),
    lambda x: x.uniform_(5, **{"from": 5}),
], ids=["from-to", "positional-to", "positional", "a-b", "from-twice"])
def test_uniform_bounds_are_from_and_to_as_torchs(call):
    outcomes = []
    for lib in (torch, ta):
        try:
            values = np.asarray(call(lib.empty(50)).tolist())
            outcomes.append(("ok", bool(((values >= 5) & (values <= 6)).all())))
        except TypeError:
            outcomes.append(("TypeError", None))
    assert outcomes[0] == outcomes[1], outcomes
