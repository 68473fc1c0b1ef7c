"""torch.compile as tinyattn has it (nn/compiled.py): the eager values, with the structure
torch gives the result (OptimizedModule, ``_orig_mod.`` state_dict keys) and torch's argument
errors. Compared with torch where torch is installed."""
import numpy as np
import pytest

import tinyattn
import tinyattn.nn as nn


def _model():
    tinyattn.manual_seed(0)
    return nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2))


def test_compiled_module_computes_the_same_and_shares_parameters():
    model = _model()
    compiled = tinyattn.compile(model)
    x = tinyattn.randn(5, 3)
    np.testing.assert_array_equal(compiled(x).numpy(), model(x).numpy())
    assert compiled._orig_mod is model
    assert [p is q for p, q in zip(compiled.parameters(), model.parameters())] == [True] * 4
    compiled(x).sum().backward()
    assert model[0].weight.grad is not None


def test_compiled_module_state_dict_and_printout_are_torchs():
    model = _model()
    compiled = tinyattn.compile(model)
    keys = list(compiled.state_dict())
    assert keys == ["_orig_mod." + k for k in model.state_dict()]
    assert repr(compiled).startswith("OptimizedModule(\n  (_orig_mod): Sequential(")
    compiled.load_state_dict(compiled.state_dict())
    with pytest.raises(RuntimeError, match="Missing key\\(s\\)"):
        compiled.load_state_dict(model.state_dict())     # torch: the prefix is needed
    # nanoGPT's habit: strip the prefix, load into the plain model
    model.load_state_dict({k[len("_orig_mod."):]: v for k, v in compiled.state_dict().items()})


def test_attributes_are_read_from_the_module_and_modes_propagate():
    model = _model()
    model.config = {"n_layer": 2}
    compiled = tinyattn.compile(model)
    assert compiled.config == {"n_layer": 2}
    with pytest.raises(AttributeError):
        compiled.no_such_attribute
    compiled.eval()
    assert not model.training and not model[0].training


def test_functions_decorators_disable_and_module_compile():
    def f(x):
        return x * 2

    g = tinyattn.compile(f)
    assert g.__name__ == "f" and g(tinyattn.ones(2)).tolist() == [2.0, 2.0]

    @tinyattn.compile(mode="max-autotune")
    def h(x):
        return x + 1
    assert h(tinyattn.ones(1)).tolist() == [2.0]
    model = _model()
    assert tinyattn.compile(model, disable=True) is model
    keys = list(model.state_dict())
    assert model.compile() is None and list(model.state_dict()) == keys


# torch.compile's first call patches torch for good in the process that calls it (dynamo turns
# off torch.distributions' argument validation, which other tests compare with): torch's side
# runs in a subprocess of its own
_TORCH_SIDE = """
import json, torch
out = {"errors": {}}
for key, kwargs in {"mode": {"mode": "fast"}, "both": {"mode": "default", "options": {}},
                    "backend": {"backend": "nope"}}.items():
    try:
        torch.compile(torch.nn.Linear(2, 2), **kwargs)
        out["errors"][key] = None
    except RuntimeError as error:
        out["errors"][key] = str(error)
c = torch.compile(torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.ReLU(),
                                      torch.nn.Linear(4, 2)))
out.update(keys=list(c.state_dict()), name=type(c).__name__, repr=repr(c))
print(json.dumps(out))
"""


@pytest.fixture(scope="module")
def torchs():
    pytest.importorskip("torch", reason="compared with torch.compile")
    import json
    import subprocess
    import sys
    done = subprocess.run([sys.executable, "-c", _TORCH_SIDE], capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.splitlines()[-1])


@pytest.mark.parametrize("key, kwargs, message", [
    ("mode", {"mode": "fast"}, "Unrecognized mode=fast"),
    ("both", {"mode": "default", "options": {}}, "Either mode or options"),
    ("backend", {"backend": "nope"}, "Invalid backend: 'nope'"),
])
def test_argument_errors_are_torchs(torchs, key, kwargs, message):
    with pytest.raises(RuntimeError, match=message) as ours:
        tinyattn.compile(_model(), **kwargs)
    assert torchs["errors"][key] is not None and message in torchs["errors"][key]
    if key != "mode":       # torch 2.13's list of modes is longer than the message it quotes
        assert str(ours.value) == torchs["errors"][key]


def test_same_structure_as_torch(torchs):
    ours = tinyattn.compile(_model())
    assert list(ours.state_dict()) == torchs["keys"]
    assert type(ours).__name__ == torchs["name"] == "OptimizedModule"
    assert repr(ours) == torchs["repr"]


def test_load_state_dict_errors_read_as_torchs():
    """The message learners search for, line for line: missing, unexpected, size mismatch."""
    torch = pytest.importorskip("torch", reason="compared with torch's message")
    ours, theirs = nn.Linear(2, 2), torch.nn.Linear(2, 2)
    for bad in ({"weight": np.zeros((3, 2), np.float32), "x": np.zeros(1, np.float32)},
                {"weight": np.zeros((3, 2), np.float32)},
                {"weight": np.zeros((2, 2), np.float32)}):
        with pytest.raises(RuntimeError) as theirs_error:
            theirs.load_state_dict({k: torch.from_numpy(v) for k, v in bad.items()})
        with pytest.raises(RuntimeError) as ours_error:
            ours.load_state_dict({k: tinyattn.from_numpy(v) for k, v in bad.items()})
        expected = str(theirs_error.value).replace("torch.Size([3, 2])", "(3, 2)") \
            .replace("torch.Size([2, 2])", "(2, 2)")
        assert str(ours_error.value).split("\n(strict=False")[0] == expected
