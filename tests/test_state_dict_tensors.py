"""``Module.state_dict()`` holds tensors, as torch's: detached, sharing the parameters' memory
(writing into one writes the parameter), usable with torch's tensor methods
(``sd["bias"].clone()``, ``equal``); saving, loading and ``load_state_dict`` of NumPy arrays
keep working."""
from __future__ import annotations

import numpy as np
import pytest

import tinyattn as ta
from tinyattn import nn


def _torch():
    return pytest.importorskip("torch")


def test_values_are_detached_tensors_sharing_memory_as_torch():
    torch = _torch()
    for lib in (torch, ta):
        layer = lib.nn.Linear(2, 2)
        sd = layer.state_dict()
        with lib.no_grad():
            layer.bias.zero_()
        assert isinstance(sd["bias"], lib.Tensor) and not sd["bias"].requires_grad
        assert lib.equal(sd["bias"], lib.zeros(2))
        copy = sd["weight"].clone()
        sd["weight"].fill_(3.0)                  # writes the parameter
        assert float(layer.weight.sum()) == 12.0 and float(copy.sum()) != 12.0


def test_saved_tensors_round_trip(tmp_path):
    layer = nn.Linear(3, 2)
    path = str(tmp_path / "model.npz")
    ta.save(layer.state_dict(), path)
    other = nn.Linear(3, 2)
    other.load_state_dict(ta.load(path))
    np.testing.assert_array_equal(other.weight.numpy(), layer.weight.detach().numpy())


def test_load_state_dict_takes_arrays_and_tensors():
    layer, other = nn.Linear(3, 2), nn.Linear(3, 2)
    other.load_state_dict({k: v.numpy() for k, v in layer.state_dict().items()})
    np.testing.assert_array_equal(other.bias.numpy(), layer.bias.detach().numpy())
    other.load_state_dict(nn.Linear(3, 2).state_dict())
    assert not np.array_equal(other.bias.numpy(), layer.bias.detach().numpy())


def test_torch_loads_a_tinyattn_state_dict_and_back():
    torch = _torch()
    mine, ref = nn.Linear(3, 2), torch.nn.Linear(3, 2)
    ref.load_state_dict({k: torch.from_numpy(v.numpy()) for k, v in mine.state_dict().items()})
    mine.load_state_dict(ref.state_dict())
    np.testing.assert_allclose(mine.weight.detach().numpy(), ref.weight.detach().numpy())
