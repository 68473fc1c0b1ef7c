"""Containers keep one record of their children: a layer added with ``add_module``,
``register_module`` or ``seq.name = layer`` is counted by ``len``, met by iteration and run by
``forward``, as in torch (a Sequential built that way used to run with no layers at all).

Each scenario runs the same operations on torch.nn and on tinyattn.nn and compares what a
learner observes: len, the kinds met by iteration, the parameter names and the keys."""
from __future__ import annotations

import numpy as np
import pytest

import tinyattn as ta
from tinyattn import nn as tnn


def _torch():
    return pytest.importorskip("torch")


def _observe(container, nn) -> dict:
    seen = {"len": len(container),
            "names": [n for n, _ in container.named_parameters()]}
    if isinstance(container, (nn.ModuleDict, nn.ParameterDict)):
        seen["keys"] = list(container.keys())
    else:
        seen["iter"] = [type(v).__name__ if isinstance(v, nn.Module) else tuple(v.shape)
                        for v in container]
    return seen


def _seq_add_module(nn, lib):
    s = nn.Sequential()
    s.add_module("fc", nn.Linear(2, 3))
    s.register_module("act", nn.ReLU())
    s.out = nn.Linear(3, 1)
    return s


def _seq_delete_after_setattr(nn, lib):
    s = nn.Sequential(nn.ReLU(), nn.Tanh())
    s.extra = nn.Linear(2, 2)
    del s[0]
    s.insert(0, nn.Sigmoid())
    s[1] = nn.Linear(2, 4)
    return s


def _seq_slice(nn, lib):
    s = nn.Sequential(nn.ReLU())
    s.add_module("fc", nn.Linear(2, 2))
    s.append(nn.Tanh())
    return s[1:]


def _seq_pop(nn, lib):
    s = nn.Sequential(nn.ReLU(), nn.Linear(2, 2))
    s.add_module("x", nn.Tanh())
    s.pop(0)
    return s


def _list_setattr(nn, lib):
    m = nn.ModuleList([nn.ReLU()])
    m.foo = nn.Linear(2, 2)
    m.append(nn.Tanh())
    m.extend([nn.GELU()])
    return m


def _list_insert_delete(nn, lib):
    m = nn.ModuleList([nn.ReLU(), nn.Tanh()])
    m.insert(1, nn.Sigmoid())
    m.add_module("lin", nn.Linear(2, 2))        # torch's insert fails after a named key
    del m[0]
    return m


def _list_slice_setitem(nn, lib):
    m = nn.ModuleList([nn.ReLU(), nn.Tanh(), nn.GELU()])
    m[1] = nn.Linear(2, 2)
    return m[1:]


def _dict_setattr(nn, lib):
    d = nn.ModuleDict({"a": nn.ReLU()})
    d.foo = nn.Linear(2, 2)
    d.add_module("b", nn.Tanh())
    d["c"] = nn.GELU()
    del d["a"]
    return d


def _dict_delattr(nn, lib):
    d = nn.ModuleDict({"a": nn.ReLU(), "b": nn.Linear(2, 2)})
    d.c = nn.Tanh()
    del d.a
    d.pop("b")
    return d


def _plist(nn, lib):
    p = nn.ParameterList([nn.Parameter(lib.zeros(1))])
    p.foo = nn.Parameter(lib.ones(2))
    p.append(lib.ones(3))
    p.extend([nn.Parameter(lib.ones(4))])
    p[0] = nn.Parameter(lib.ones(5))
    return p


def _plist_slice(nn, lib):
    p = nn.ParameterList([nn.Parameter(lib.zeros(1)), nn.Parameter(lib.zeros(2)),
                          nn.Parameter(lib.zeros(3))])
    return p[1:]


def _pdict(nn, lib):
    d = nn.ParameterDict({"a": nn.Parameter(lib.zeros(1))})
    d.foo = nn.Parameter(lib.ones(2))
    d["b"] = nn.Parameter(lib.ones(3))
    d.update({"c": nn.Parameter(lib.ones(4))})
    del d["a"]
    return d


SCENARIOS = [_seq_add_module, _seq_delete_after_setattr, _seq_slice, _seq_pop, _list_setattr,
             _list_insert_delete, _list_slice_setitem, _dict_setattr, _dict_delattr, _plist,
             _plist_slice, _pdict]


@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda f: f.__name__.strip("_"))
def test_container_sees_what_torch_sees(scenario):
    torch = _torch()
    expected = _observe(scenario(torch.nn, torch), torch.nn)
    assert _observe(scenario(tnn, ta), tnn) == expected


def test_sequential_built_with_add_module_runs_its_layers():
    s = tnn.Sequential()
    s.add_module("fc", tnn.Linear(2, 2))
    s.relu = tnn.ReLU()
    x = ta.tensor([[1.0, -2.0]])
    expected = np.maximum(x.numpy() @ s.fc.weight.numpy().T + s.fc.bias.numpy(), 0)
    np.testing.assert_allclose(s(x).numpy(), expected, rtol=1e-6)
    assert len(s) == 2 and s[0] is s.fc and s[-1] is s.relu


def test_sequential_forward_matches_torch_with_copied_weights():
    torch = _torch()
    built = {}
    for name, lib in (("torch", torch), ("ta", ta)):
        s = lib.nn.Sequential()
        s.add_module("fc", lib.nn.Linear(3, 2))
        s.register_module("act", lib.nn.Tanh())
        built[name] = s
    built["ta"].load_state_dict({k: v.detach().numpy()
                                 for k, v in built["torch"].state_dict().items()})
    x = np.arange(6, dtype=np.float32).reshape(2, 3) / 5
    out_torch = built["torch"](torch.tensor(x)).detach().numpy()
    np.testing.assert_allclose(built["ta"](ta.tensor(x)).numpy(), out_torch, rtol=1e-5)


def test_observe_negative_control():
    """The comparison can fail: a container missing a layer is told apart."""
    a = tnn.Sequential(tnn.ReLU(), tnn.Tanh())
    b = tnn.Sequential(tnn.ReLU())
    assert _observe(a, tnn) != _observe(b, tnn)


# ------------------------------------------------------------------ printouts (harness39)
def _module_lists(nn):
    blocks = [nn.Linear(2, 2) for _ in range(3)] + [nn.ReLU()] + \
        [nn.Linear(2, 3), nn.Linear(2, 3)] + [nn.ModuleList([nn.Tanh(), nn.Tanh()])]
    return [nn.ModuleList(), nn.ModuleList([nn.ReLU()]), nn.ModuleList(blocks),
            nn.Sequential(nn.Linear(2, 2), nn.Linear(2, 2)),      # Sequential: no collapse
            nn.TransformerEncoder(nn.TransformerEncoderLayer(4, 2, 8), 2,
                                  enable_nested_tensor=False)
            if nn is not tnn else nn.TransformerEncoder(nn.TransformerEncoderLayer(4, 2, 8), 2),
            nn.Softplus(beta=2, threshold=-1), nn.Softplus()]


def test_module_list_printout_is_torchs():
    """torch prints a run of equal items of a ModuleList once, ``(0-2): 3 x Linear(...)``
    (every GPT's ``print(model)``); Softplus keeps ``beta`` as given (``beta=2``)."""
    torch = pytest.importorskip("torch")
    from tinyattn import printing
    printing.options.torch_names = True
    try:
        for ours, theirs in zip(_module_lists(tnn), _module_lists(torch.nn)):
            assert repr(ours) == repr(theirs)
    finally:
        printing.options.torch_names = False
    assert "(0-2): 3 x Linear" in repr(_module_lists(tnn)[2])     # not vacuous


def test_module_list_summary_keeps_the_counts():
    text = tnn.ModuleList([tnn.Linear(2, 2) for _ in range(3)]).summary()
    assert text.splitlines()[0] == "ModuleList(  # 18 params"
    assert "(0-2): 3 x Linear(in_features=2, out_features=2, bias=True)  # 6 params" in text
