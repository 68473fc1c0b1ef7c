"""Findings of the probeD41 outside-program probe (PyTorch examples' word_language_model,
mnist, d2l's RNN and CNN chapters run unchanged under run-torch), each checked against torch.
"""
import pickle

import numpy as np
import pytest

import tinyattn as ta
from tinyattn.io import torch_file

torch = pytest.importorskip("torch", reason="torch is the oracle for these tests")


# word_language_model's generate.py loads the whole model main.py saved (torch.save(model)).
# A file PyTorch wrote that way holds torch's module objects (their _parameters/_modules
# dicts), which tinyattn's classes cannot take: before, weights_only=False gave a module
# without its layers (AttributeError far away), and weights_only=True with the classes
# allow-listed asked to allow-list the very class the script had listed.
def test_whole_torch_module_file_is_refused_with_what_to_do(tmp_path):
    path = tmp_path / "model.pt"
    torch.save(torch.nn.Sequential(torch.nn.Linear(3, 2), torch.nn.Dropout(0.1)), path)
    assert isinstance(torch.load(path, weights_only=False), torch.nn.Sequential)  # torch can
    with torch_file.safe_globals([ta.nn.Sequential, ta.nn.Linear, ta.nn.Dropout]):
        with pytest.raises(pickle.UnpicklingError, match=r"state_dict\(\)"):
            ta.load(path, weights_only=True)


def test_torch_module_state_is_refused_by_a_tinyattn_module():
    # weights_only=False under run-torch resolves torch.nn.modules.linear.Linear to
    # tinyattn's class, which then receives torch's pickled state: this is that step.
    state = torch.nn.Linear(3, 2).__dict__
    module = ta.nn.Linear.__new__(ta.nn.Linear)
    with pytest.raises(pickle.UnpicklingError, match=r"state_dict\(\)"):
        module.__setstate__(state)


def test_state_dict_and_own_whole_module_still_load(tmp_path):   # the negative control
    src = torch.nn.Linear(3, 2)
    torch.save(src.state_dict(), tmp_path / "sd.pt")
    model = ta.nn.Linear(3, 2)
    model.load_state_dict(ta.load(tmp_path / "sd.pt"))
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    np.testing.assert_allclose(model(ta.tensor(x)).detach().numpy(),
                               src(torch.from_numpy(x)).detach().numpy(), rtol=1e-6)
    ta.save(ta.nn.Sequential(model), tmp_path / "whole.pt")
    back = ta.load(tmp_path / "whole.pt", weights_only=False)
    np.testing.assert_array_equal(back[0].weight.detach().numpy(),
                                  model.weight.detach().numpy())
