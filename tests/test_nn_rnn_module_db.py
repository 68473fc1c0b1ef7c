"""The recurrent modules against torch's own ModuleInfo database (common_modules.module_db):
every sample that torch's module tests build for nn.RNN, nn.LSTM, nn.GRU, nn.RNNCell,
nn.LSTMCell and nn.GRUCell (constructor arguments, forward inputs, unbatched ones included)
runs on tinyattn's module with torch's weights, and the outputs and every gradient (input,
h0/c0, parameters) agree to 1e-10 in float64; torch's error samples fail here too, with the
same exception type. This reads the database, it does not copy it."""
from __future__ import annotations

import numpy as np
import pytest

import tinyattn as ta
from tinyattn import nn

torch = pytest.importorskip("torch", reason="the module database is torch's")
common_modules = pytest.importorskip("torch.testing._internal.common_modules",
                                     reason="torch's test internals are not installed")
NAMES = ("RNN", "LSTM", "GRU", "RNNCell", "LSTMCell", "GRUCell")
INFOS = {info.module_cls.__name__: info for info in common_modules.module_db
         if info.module_cls.__name__ in NAMES and info.module_cls.__module__.startswith(
             "torch.nn")}
RNG = np.random.default_rng(30)


def _samples():
    out = []
    for name in NAMES:
        info = INFOS.get(name)
        if info is None:
            continue
        torch.manual_seed(0)
        inputs = info.module_inputs_func(info, device="cpu", dtype=torch.float64,
                                         requires_grad=True, training=True)
        out += [pytest.param(name, sample, id=f"{name}-{k}") for k, sample in enumerate(inputs)]
    return out


def _to_ours(value):
    if isinstance(value, torch.Tensor):
        return ta.tensor(value.detach().numpy(), requires_grad=value.requires_grad)
    if isinstance(value, (tuple, list)):
        return type(value)(_to_ours(v) for v in value)
    if isinstance(value, torch.dtype):                     # dtype=torch.float64 -> "float64"
        return str(value).split(".")[-1]
    return value


def _leaves(value):
    if isinstance(value, (tuple, list)):
        return [leaf for v in value for leaf in _leaves(v)]
    return [value] if isinstance(value, (torch.Tensor, ta.Tensor)) else []


@pytest.mark.parametrize("name, sample", _samples())
def test_module_db_sample_matches_torch(name, sample):
    ctor = sample.constructor_input
    theirs = INFOS[name].module_cls(*ctor.args, **ctor.kwargs).double()
    ours = getattr(nn, name)(*ctor.args, **ctor.kwargs).double()
    ours.load_state_dict({k: ta.tensor(v.detach().numpy())
                          for k, v in theirs.state_dict().items()})
    t_args, t_kwargs = sample.forward_input.args, sample.forward_input.kwargs
    o_args, o_kwargs = _to_ours(t_args), {k: _to_ours(v) for k, v in t_kwargs.items()}
    t_out, o_out = theirs(*t_args, **t_kwargs), ours(*o_args, **o_kwargs)
    t_leaves, o_leaves = _leaves(t_out), _leaves(o_out)
    assert len(t_leaves) == len(o_leaves)
    for a, b in zip(t_leaves, o_leaves):
        assert tuple(a.shape) == b.shape and b.dtype == ta.float64
        np.testing.assert_allclose(b.numpy(), a.detach().numpy(), atol=1e-10)
    weights = [RNG.standard_normal(tuple(a.shape)) for a in t_leaves]
    sum((a * torch.tensor(w)).sum() for a, w in zip(t_leaves, weights)).backward()
    ta.stack([(b * ta.tensor(w)).sum() for b, w in zip(o_leaves, weights)]).sum().backward()
    for a, b in zip(_leaves((t_args, t_kwargs)), _leaves((o_args, o_kwargs))):
        if a.requires_grad:
            np.testing.assert_allclose(b.grad.numpy(), a.grad.numpy(), atol=1e-10)
    for (n, p), (_, q) in zip(theirs.named_parameters(), ours.named_parameters()):
        np.testing.assert_allclose(q.grad.numpy(), p.grad.numpy(), atol=1e-10, err_msg=n)


def _error_samples():
    out = []
    for name in NAMES:
        info = INFOS.get(name)
        if info is None or info.module_error_inputs_func is None:
            continue
        samples = info.module_error_inputs_func(info, device="cpu", dtype=torch.float64,
                                                requires_grad=False, training=True)
        out += [pytest.param(name, s, id=f"{name}-error-{k}") for k, s in enumerate(samples)]
    return out


@pytest.mark.parametrize("name, sample", _error_samples())
def test_module_db_error_sample_fails_here_too(name, sample):
    """The same exception type, and a message that matches torch's expected regex."""
    inputs = sample.module_error_input
    ctor, fwd = inputs.constructor_input, inputs.forward_input
    with pytest.raises(sample.error_type, match=sample.error_regex):
        module = getattr(nn, name)(*_to_ours(ctor.args),
                                   **{k: _to_ours(v) for k, v in ctor.kwargs.items()})
        if fwd is not None:
            module(*_to_ours(fwd.args), **{k: _to_ours(v) for k, v in fwd.kwargs.items()})


def test_the_database_has_the_recurrent_modules():
    """A negative control for the parametrisation: an empty selection would test nothing."""
    assert set(INFOS) == set(NAMES)
    assert len(_samples()) >= 80
