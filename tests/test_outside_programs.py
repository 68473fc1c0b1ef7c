"""What outside learner programs (LLMs-from-scratch, d2l, PyTorch's examples, nanoGPT) call,
found by running them under ``python -m tinyattn run-torch`` next to real torch.

Each test reproduces one observed failure or difference, with torch as the oracle; the
programs themselves stay outside the repository.
"""
from __future__ import annotations

import numpy as np
import pytest

import tinyattn as ta


def _torch():
    return pytest.importorskip("torch", reason="torch is the reference for these behaviours")


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bfloat16", "int64",
                                   "int32", "int8", "uint8", "bool"])
def test_element_size_itemsize_nbytes_follow_torch(dtype):
    # LLMs-from-scratch's memory estimate: torch.tensor(0, dtype=d).element_size()
    torch = _torch()
    ours = ta.zeros(2, 3, dtype=getattr(ta, dtype))[:, 1:]          # a view: 4 elements
    theirs = torch.zeros(2, 3, dtype=getattr(torch, dtype))[:, 1:]
    assert ours.element_size() == theirs.element_size()
    assert ours.itemsize == theirs.itemsize
    assert ours.nbytes == theirs.nbytes == 4 * theirs.element_size()
    assert ta.tensor(0, dtype=getattr(ta, dtype)).element_size() != 0


def test_element_size_negative_control():
    assert ta.zeros(3, dtype=ta.bfloat16).element_size() == 2
    assert ta.zeros(3, dtype=ta.float64).element_size() == 8


# d2l's helpers call x.argmax(axis=2) and reductions with axis=/keepdims=; torch's argument
# parser takes NumPy's names for dim/keepdim on every op and method that has them.
AXIS_CALLS = [
    ("argmax", lambda t, x: x.argmax(axis=1)),
    ("sum keepdims", lambda t, x: t.sum(x, axis=0, keepdims=True)),
    ("mean", lambda t, x: x.mean(axis=1)),
    ("max values", lambda t, x: t.max(x, axis=1)[0]),
    ("max indices", lambda t, x: t.max(x, axis=1)[1]),
    ("cat", lambda t, x: t.cat([x, x], axis=0)),
    ("stack", lambda t, x: t.stack([x, x], axis=1)),
    ("softmax", lambda t, x: x.softmax(axis=1)),
    ("log_softmax", lambda t, x: t.log_softmax(x, axis=0)),
    ("squeeze", lambda t, x: x[None].squeeze(axis=0)),
    ("unsqueeze", lambda t, x: x.unsqueeze(axis=0)),
    ("cumsum", lambda t, x: x.cumsum(axis=1)),
    ("std keepdims", lambda t, x: x.std(axis=1, keepdims=True)),
    ("topk", lambda t, x: x.topk(2, axis=0)[0]),
    ("argsort", lambda t, x: x.argsort(axis=1, descending=True)),
    ("unbind", lambda t, x: t.unbind(x, axis=1)[2]),
    ("logsumexp", lambda t, x: t.logsumexp(x, axis=1, keepdims=True)),
    ("any", lambda t, x: (x > 3).any(axis=0)),
    ("size", lambda t, x: t.tensor(x.size(axis=1))),
]


@pytest.mark.parametrize("name,call", AXIS_CALLS, ids=[c[0] for c in AXIS_CALLS])
def test_numpy_spellings_axis_keepdims_follow_torch(name, call):
    torch = _torch()
    values = np.array([[0.5, -1.0, 2.0], [3.0, 0.25, -2.5]])
    ours = call(ta, ta.tensor(values))
    theirs = call(torch, torch.tensor(values))
    assert tuple(ours.shape) == tuple(theirs.shape)
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-12)


def test_numpy_spelling_and_torch_name_together_are_refused_as_torch_does():
    torch = _torch()
    with pytest.raises(TypeError):
        torch.ones(2, 3).sum(dim=0, axis=0)
    with pytest.raises(TypeError, match="axis= and dim="):
        ta.ones(2, 3).sum(dim=0, axis=0)


def test_numpy_spelling_negative_control():
    # the alias must reach dim: axis=1 and axis=0 give different answers
    x = ta.tensor([[1.0, 5.0], [4.0, 2.0]])
    assert x.argmax(axis=1).tolist() == [1, 0]
    assert x.argmax(axis=0).tolist() == [1, 0] and x.sum(axis=0).tolist() == [5.0, 7.0]
    assert x.sum(axis=1).tolist() == [6.0, 6.0]


def test_module_own_member_dicts_follow_torch():
    # d2l's init_seq2seq: for name in gru._flat_weights_names: xavier_uniform_(
    # gru._parameters[name]); other code walks model._modules and _buffers
    torch = _torch()
    ours, theirs = ta.nn.GRU(3, 4, 2), torch.nn.GRU(3, 4, 2)
    assert list(ours._parameters) == list(theirs._parameters)
    for name in ours._flat_weights_names:
        assert ours._parameters[name] is getattr(ours, name)
    seq_ours = ta.nn.Sequential(ta.nn.Linear(2, 3), ta.nn.ReLU())
    seq_theirs = torch.nn.Sequential(torch.nn.Linear(2, 3), torch.nn.ReLU())
    assert list(seq_ours._modules) == list(seq_theirs._modules) == ["0", "1"]
    bn_ours, bn_theirs = ta.nn.BatchNorm1d(3), torch.nn.BatchNorm1d(3)
    assert sorted(bn_ours._buffers) == sorted(bn_theirs._buffers)


def test_module_parameters_dict_writes_reach_the_module():
    layer = ta.nn.Linear(2, 2)
    ta.nn.init.zeros_(layer._parameters["weight"])          # in place through the view
    assert layer.weight.abs().sum().item() == 0.0
    replacement = ta.nn.Parameter(ta.ones(2, 2))
    layer._parameters["weight"] = replacement
    assert layer.weight is replacement and any(p is replacement for p in layer.parameters())
    with pytest.raises(TypeError):                          # a plain tensor would not train
        layer._parameters["weight"] = ta.ones(2, 2)
    with pytest.raises(KeyError):
        layer._parameters["missing"]                        # negative control


def test_whole_model_with_functional_activation_saves_and_loads(tmp_path):
    # word_language_model's main.py: torch.save(model, f) of a model whose
    # TransformerEncoderLayer keeps F.relu as its activation, then torch.load(f)
    torch = _torch()
    for framework in (torch, ta):
        layer = framework.nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0)
        path = tmp_path / f"{framework.__name__}.pt"
        framework.save(layer, str(path))
        loaded = framework.load(str(path), weights_only=False)
        assert loaded.activation is layer.activation is framework.nn.functional.relu


def test_every_public_function_pickles_by_reference():
    import pickle
    import types
    import tinyattn.functional as F
    for module in (ta, F):
        for name in dir(module):
            value = getattr(module, name)
            if isinstance(value, types.FunctionType) and not name.startswith("_"):
                assert pickle.loads(pickle.dumps(value)) is value, f"{module.__name__}.{name}"
    with pytest.raises(Exception):                   # negative control: a lambda cannot
        pickle.dumps(lambda x: x)
