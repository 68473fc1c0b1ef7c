"""Module API and containers against torch.nn: names, traversal order, buffers, attribute
rules, state dicts, .to(), and Sequential / ModuleList / ModuleDict / ParameterList /
ParameterDict. Each check that compares with torch builds the same structure in both."""
from collections import OrderedDict

import numpy as np
import pytest

import tinyattn as ta
import tinyattn.nn as nn

torch = pytest.importorskip("torch")
tnn = torch.nn


def _net(lib):
    class Net(lib.Module):
        def __init__(self):
            super().__init__()
            self.embed = lib.Embedding(5, 4)
            self.body = lib.Sequential(lib.Linear(4, 6), lib.ReLU(), lib.Linear(6, 4))
            self.heads = lib.ModuleDict({"a": lib.Linear(4, 2), "b": lib.Linear(4, 3)})
            self.blocks = lib.ModuleList([lib.LayerNorm(4), lib.LayerNorm(4)])
            self.scale = lib.Parameter(ta.ones(4) if lib is nn else torch.ones(4))
            self.register_buffer("steps", ta.zeros(1) if lib is nn else torch.zeros(1))
            self.register_buffer("cache", ta.zeros(2) if lib is nn else torch.zeros(2),
                                 persistent=False)
    return Net()


def test_names_and_traversal_orders_match_torch():
    ours, theirs = _net(nn), _net(tnn)
    assert [n for n, _ in ours.named_parameters()] == [n for n, _ in theirs.named_parameters()]
    assert [n for n, _ in ours.named_modules()] == [n for n, _ in theirs.named_modules()]
    assert [n for n, _ in ours.named_children()] == [n for n, _ in theirs.named_children()]
    assert [n for n, _ in ours.named_buffers()] == [n for n, _ in theirs.named_buffers()]
    assert list(ours.state_dict()) == list(theirs.state_dict())
    assert "cache" not in ours.state_dict() and "steps" in ours.state_dict()
    assert [type(m).__name__ for m in ours.children()] == \
        [type(m).__name__ for m in theirs.children()]
    calls, tcalls = [], []
    ours.apply(lambda m: calls.append(type(m).__name__))
    theirs.apply(lambda m: tcalls.append(type(m).__name__))
    assert calls == tcalls                                       # children first, then self
    assert ours.get_submodule("body.2") is ours.body[2]


def test_parameters_is_a_generator_like_torch():
    m = nn.Linear(3, 2)
    params = m.parameters()
    assert next(params) is m.weight
    assert list(params) == [m.bias]          # used up by one pass, as torch's generator
    assert list(m.parameters()) == [m.weight, m.bias]
    assert list(m.parameters(recurse=False)) == [m.weight, m.bias]
    seq = nn.Sequential(m)
    assert list(seq.parameters(recurse=False)) == []


def test_state_dict_with_buffers_round_trips_and_reports_keys():
    a, b = _net(nn), _net(nn)
    with ta.no_grad():
        a.steps.fill_(7.0)
        a.scale.mul_(3.0)
    result = b.load_state_dict(a.state_dict())
    assert result.missing_keys == [] and result.unexpected_keys == []
    assert b.steps.tolist() == [7.0] and b.scale.tolist() == [3.0] * 4
    partial = {k: v for k, v in a.state_dict().items() if k != "steps"}
    result = b.load_state_dict({**partial, "extra": np.zeros(1)}, strict=False)
    assert result == (["steps"], ["extra"])
    with pytest.raises(RuntimeError, match=r"Missing key\(s\) in state_dict: \"steps\""):   # torch's type too
        b.load_state_dict(partial)
    with pytest.raises(KeyError):
        b.load_state_dict(partial)
    bad = dict(a.state_dict(), steps=np.zeros(3))
    with pytest.raises(RuntimeError, match=r"size mismatch for steps: copying a param with shape \(3,\)"):
        b.load_state_dict(bad)
    kept = a.state_dict(keep_vars=True)
    assert kept["scale"] is a.scale and kept["steps"] is a.steps


def test_torch_state_dict_loads_into_the_same_structure():
    ours, theirs = _net(nn), _net(tnn)
    ours.load_state_dict({k: v.numpy() for k, v in theirs.state_dict().items()})
    for (name, p), (_, tp) in zip(ours.named_parameters(), theirs.named_parameters()):
        np.testing.assert_array_equal(p.numpy(), tp.detach().numpy(), err_msg=name)


def test_buffers_move_and_cast_with_to_but_are_not_parameters():
    m = _net(nn)
    ids = ta.tensor([1, 2])
    m.register_buffer("ids", ids)
    assert all(b is not m.scale for b in m.buffers())
    assert not any(p is m.steps for p in m.parameters())
    m.embed(ta.tensor([[0, 1]])).sum().backward()
    m.to(dtype=ta.float64)
    assert m.steps.dtype == np.float64 and m.scale.dtype == np.float64
    assert m.ids.dtype == np.int64                       # integer buffers keep their dtype
    assert m.embed.weight.grad.dtype == np.float64       # gradients are cast along
    m.to(ta.float32)
    m.to("cpu", "float64")
    assert m.cache.dtype == np.float64
    m.to(ta.zeros(1, dtype="float32"))
    assert m.steps.dtype == np.float32
    with pytest.raises(TypeError, match="floating-point dtypes"):
        m.to(ta.int64)


def test_setattr_follows_torchs_rules():
    m = nn.Linear(2, 2)
    with pytest.raises(TypeError, match="cannot assign Tensor as parameter 'weight'"):
        m.weight = ta.zeros(2, 2)
    m.weight = nn.Parameter(ta.zeros(2, 2))              # a Parameter replaces it
    m.bias = None
    assert [n for n, _ in m.named_parameters()] == ["weight"]
    m.register_buffer("running", ta.zeros(2))
    with pytest.raises(TypeError, match="as buffer 'running'"):
        m.running = [1.0, 2.0]
    m.running = ta.ones(2)                               # a Tensor replaces a buffer
    assert [n for n, _ in m.named_buffers()] == ["running"]
    m.running = nn.Parameter(ta.ones(2))                 # a Parameter takes a buffer's place
    assert [n for n, _ in m.named_buffers()] == []
    assert "running" in dict(m.named_parameters())
    del m.running
    assert "running" not in dict(m.named_parameters())


def test_register_functions_check_names_and_types():
    m = nn.Linear(2, 2)
    with pytest.raises(KeyError, match="can't be empty or contain"):
        m.register_buffer("a.b", ta.zeros(1))
    with pytest.raises(KeyError, match="already exists"):
        m.register_buffer("in_features", ta.zeros(1))
    with pytest.raises(KeyError, match="method or class attribute"):
        m.register_buffer("forward", ta.zeros(1))
    with pytest.raises(TypeError, match="Tensor or None required"):
        m.register_buffer("x", np.zeros(1))
    with pytest.raises(TypeError, match="Parameter or None required"):
        m.register_parameter("p", ta.zeros(1))
    m.register_parameter("p", nn.Parameter(ta.zeros(1)))
    assert "p" in dict(m.named_parameters())
    with pytest.raises(TypeError, match="not a Module"):
        m.add_module("child", ta.zeros(1))
    m.add_module("child", nn.ReLU())
    assert [n for n, _ in m.named_children()] == ["child"]
    m.register_buffer("empty", None)
    assert "empty" not in m.state_dict()


def test_requires_grad_zero_grad_train_eval():
    m = _net(nn)
    m.requires_grad_(False)
    assert not any(p.requires_grad for p in m.parameters())
    m.requires_grad_()
    m.embed(ta.tensor([[1, 2]])).sum().backward()
    m.zero_grad(set_to_none=False)
    assert m.embed.weight.grad is not None and not m.embed.weight.grad.numpy().any()
    m.zero_grad()
    assert m.embed.weight.grad is None
    m.eval()
    assert not any(x.training for x in m.modules())
    with pytest.raises(ValueError, match="bool"):
        m.train("no")


def test_shared_module_is_visited_once_like_torch():
    lin, tlin = nn.Linear(2, 2), tnn.Linear(2, 2)
    ours, theirs = nn.Sequential(lin, lin), tnn.Sequential(tlin, tlin)
    assert [n for n, _ in ours.named_modules()] == [n for n, _ in theirs.named_modules()]
    assert [n for n, _ in ours.named_parameters()] == [n for n, _ in theirs.named_parameters()]
    assert list(ours.state_dict()) == list(theirs.state_dict())      # ... but saved twice


def _tied(lib_nn):
    class Tied(lib_nn.Module):
        def __init__(self):
            super().__init__()
            self.emb = lib_nn.Embedding(5, 3)
            self.head = lib_nn.Linear(3, 5, bias=False)
            self.head.weight = self.emb.weight
    return Tied()


def test_tied_weight_is_in_the_state_dict_under_every_name_as_torch():
    ours, theirs = _tied(nn), _tied(tnn)
    assert list(ours.state_dict()) == list(theirs.state_dict()) == ["emb.weight", "head.weight"]
    sd = ours.state_dict()
    assert np.shares_memory(sd["emb.weight"].numpy(), sd["head.weight"].numpy())
    # torch's state dict loads as is, strict (both names), and so does one with one name
    ours.load_state_dict({k: ta.tensor(v.detach().numpy())
                          for k, v in theirs.state_dict().items()})
    np.testing.assert_array_equal(ours.head.weight.numpy(), theirs.emb.weight.detach().numpy())
    result = _tied(nn).load_state_dict({"emb.weight": ta.ones(5, 3)})
    assert result.missing_keys == [] and result.unexpected_keys == []   # a strict extension
    # non-strict, the other name is reported missing as torch reports it (and still loaded)
    model = _tied(nn)
    result = model.load_state_dict({"emb.weight": ta.ones(5, 3)}, strict=False)
    theirs_result = _tied(tnn).load_state_dict({"emb.weight": torch.ones(5, 3)}, strict=False)
    assert result.missing_keys == theirs_result.missing_keys == ["head.weight"]
    assert float(model.head.weight.sum()) == 15.0
    with pytest.raises(RuntimeError, match='Missing key.*"head.weight"'):     # torch refuses
        _tied(tnn).load_state_dict({"emb.weight": torch.ones(5, 3)})
    with pytest.raises(KeyError, match="Missing key"):                 # negative control
        _tied(nn).load_state_dict({"other": ta.ones(5, 3)})


# ------------------------------------------------------------------ containers
def test_sequential_matches_torch_forward_indexing_and_keys():
    ta.manual_seed(0)
    ours = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 3))
    theirs = tnn.Sequential(tnn.Linear(4, 8), tnn.ReLU(), tnn.Linear(8, 3))
    theirs.load_state_dict({k: torch.from_numpy(v.numpy()) for k, v in ours.state_dict().items()})
    x = np.random.default_rng(0).standard_normal((5, 4)).astype(np.float32)
    np.testing.assert_allclose(ours(ta.tensor(x)).numpy(),
                               theirs(torch.from_numpy(x)).detach().numpy(), rtol=1e-5)
    assert len(ours) == 3 and isinstance(ours[1], nn.ReLU) and ours[-1] is ours[2]
    head = ours[:2]
    assert isinstance(head, nn.Sequential) and list(head.state_dict()) == ["0.weight", "0.bias"]
    named = nn.Sequential(OrderedDict([("fc", nn.Linear(2, 2)), ("act", nn.Tanh())]))
    tnamed = tnn.Sequential(OrderedDict([("fc", tnn.Linear(2, 2)), ("act", tnn.Tanh())]))
    assert list(named.state_dict()) == list(tnamed.state_dict()) == ["fc.weight", "fc.bias"]
    assert named[0] is named.fc


def test_sequential_and_modulelist_edits_renumber_as_torch():
    for lib in (nn, tnn):
        seq = lib.Sequential(lib.ReLU(), lib.Tanh())
        seq.append(lib.Linear(2, 2))
        seq.insert(0, lib.Linear(2, 2))
        del seq[1]
        seq.extend([lib.Identity()])
        names = [n for n, _ in seq.named_children()]
        kinds = [type(m).__name__ for m in seq]
        if lib is nn:
            ours = (names, kinds, list(seq.state_dict()))
        else:
            assert ours == (names, kinds, list(seq.state_dict()))
        ml = lib.ModuleList([lib.Linear(1, 1), lib.Linear(1, 2)])
        ml.insert(1, lib.Linear(1, 3))
        ml.extend([lib.Linear(1, 4)])
        ml += [lib.Linear(1, 5)]
        del ml[0]
        ml[0] = lib.Linear(1, 6)
        state = [(k, tuple(v.shape)) for k, v in ml.state_dict().items()]
        sliced = [m.out_features for m in ml[1:3]]
        if lib is nn:
            ours_ml = (state, sliced, len(ml))
        else:
            assert ours_ml == (state, sliced, len(ml))
    with pytest.raises(IndexError, match="out of range"):
        nn.ModuleList([nn.ReLU()])[3]
    with pytest.raises(TypeError, match="holds Modules"):
        nn.ModuleList([nn.ReLU()]).append(3)
    with pytest.raises(NotImplementedError, match="no forward"):
        nn.ModuleList([nn.ReLU()])(ta.ones(1))


def test_module_dict_and_parameter_containers():
    md = nn.ModuleDict({"enc": nn.Linear(2, 3)})
    md["dec"] = nn.Linear(3, 2)
    assert list(md) == ["enc", "dec"] and "enc" in md and len(md) == 2
    assert [k for k, _ in md.items()] == ["enc", "dec"]
    assert list(md.state_dict()) == ["enc.weight", "enc.bias", "dec.weight", "dec.bias"]
    popped = md.pop("enc")
    assert isinstance(popped, nn.Linear) and list(md.keys()) == ["dec"]
    with pytest.raises(KeyError, match="no key 'missing'"):
        md["missing"]
    with pytest.raises(KeyError, match="already exists"):
        nn.ModuleDict({"train": nn.ReLU()})           # would hide Module.train; torch refuses
    pl = nn.ParameterList([ta.zeros(2), nn.Parameter(ta.ones(3))])
    assert all(isinstance(p, nn.Parameter) for p in pl) and pl[0].requires_grad
    assert list(pl.state_dict()) == ["0", "1"]
    pd = nn.ParameterDict({"w": ta.ones(2)})
    assert isinstance(pd["w"], nn.Parameter) and list(pd.state_dict()) == ["w"]
    tpl = tnn.ParameterList([tnn.Parameter(torch.zeros(2)), tnn.Parameter(torch.ones(3))])
    assert list(tpl.state_dict()) == list(pl.state_dict())


def test_negative_control_a_renamed_parameter_is_noticed():
    """The name comparisons above can fail: one module's name changed is a mismatch."""
    ours, theirs = _net(nn), _net(tnn)
    ours.blocks[0].renamed = ours.blocks[0].weight
    del ours.blocks[0].weight
    assert [n for n, _ in ours.named_parameters()] != [n for n, _ in theirs.named_parameters()]


# ------------------------------------------------------------------ torch's import paths
def test_nn_functional_is_tinyattn_functional_under_torchs_path():
    import tinyattn.functional
    import tinyattn.nn.functional as NF
    from tinyattn.nn.functional import softmax
    assert NF is tinyattn.functional and nn.functional is tinyattn.functional
    assert softmax is tinyattn.functional.softmax


def test_nn_utils_clipping_and_vectors_match_torch():
    rng = np.random.default_rng(0)
    grads = [rng.standard_normal((3, 2)) * 3, rng.standard_normal(4) * 3]
    ours = [nn.Parameter(ta.zeros(*g.shape, dtype="float64")) for g in grads]
    theirs = [torch.zeros(g.shape, dtype=torch.float64, requires_grad=True) for g in grads]
    for p, tp, g in zip(ours, theirs, grads):
        p.grad, tp.grad = ta.tensor(g), torch.tensor(g)
    nn.utils.clip_grad_value_(ours, 1.5)
    torch.nn.utils.clip_grad_value_(theirs, 1.5)
    for p, tp in zip(ours, theirs):
        np.testing.assert_array_equal(p.grad.numpy(), tp.grad.numpy())
    assert nn.utils.clip_grad_norm_ is ta.optim.clip_grad_norm_
    total = nn.utils.clip_grad_norm_(ours, 1.0)
    t_total = torch.nn.utils.clip_grad_norm_(theirs, 1.0)
    assert total.item() == pytest.approx(float(t_total), rel=1e-12)
    vec = nn.utils.parameters_to_vector(ours)
    assert vec.shape == (10,) and vec.requires_grad
    nn.utils.vector_to_parameters(ta.arange(10, dtype="float64"), ours)
    assert ours[1].tolist() == [6.0, 7.0, 8.0, 9.0]
    with pytest.raises(ValueError, match="hold 10 numbers"):
        nn.utils.vector_to_parameters(ta.zeros(9, dtype="float64"), ours)
    with pytest.raises(ValueError, match="clip_value must be >= 0"):
        nn.utils.clip_grad_value_(ours, -1.0)
