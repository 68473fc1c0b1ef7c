"""More behaviour that outside learner programs rely on (nanoGPT's train.py, LLMs-from-scratch,
minGPT, makemore, PyTorch's examples, d2l), found by running them under
``python -m tinyattn run-torch`` next to real torch (docs/pytorch.md, "Outside programs
probed").

Each test reproduces one observed failure or difference from public behaviour, with torch as
the oracle where it is installed; the programs themselves stay outside the repository.
"""
from __future__ import annotations

import numpy as np
import pytest

import tinyattn as ta
from tinyattn import nn, optim
from tinyattn.io.torch_file import load_torch, save_torch
from tinyattn.tensor import Tensor


def _trained_adamw(seed: int = 0):
    ta.manual_seed(seed)
    model = nn.Linear(3, 2)
    opt = optim.AdamW(model.parameters(), lr=1e-2, weight_decay=0.1)
    for _ in range(2):
        opt.zero_grad()
        model(ta.ones(4, 3)).square().sum().backward()
        opt.step()
    return model, opt


# nanoGPT's train.py saves {"model": ..., "optimizer": optimizer.state_dict(), ...} and, with
# init_from="resume", reads it back with torch.load(path) (weights_only=True by default):
# torch's optimizer state holds tensors, which that load accepts.
def test_optimizer_state_dict_holds_tensors_as_torch():
    _, opt = _trained_adamw()
    state = opt.state_dict()["state"]
    for entries in state.values():
        for name in ("exp_avg", "exp_avg_sq"):
            assert type(entries[name]) is Tensor
            assert entries[name].device == "cpu" and not entries[name].requires_grad


def test_checkpoint_with_optimizer_state_loads_weights_only_and_resumes(tmp_path):
    model, opt = _trained_adamw()
    path = tmp_path / "ckpt.pt"
    save_torch({"model": model.state_dict(), "optimizer": opt.state_dict(), "iter_num": 2},
               str(path))
    with open(path, "rb") as f:
        ckpt = load_torch(f, weights_only=True)
    resumed_model, resumed_opt = _trained_adamw(seed=1)     # other weights, other moments
    resumed_model.load_state_dict(ckpt["model"])
    resumed_opt.load_state_dict(ckpt["optimizer"])
    for m, o in ((model, opt), (resumed_model, resumed_opt)):
        o.zero_grad()
        m(ta.ones(4, 3)).square().sum().backward()
        o.step()
    np.testing.assert_array_equal(resumed_model.weight.numpy(), model.weight.numpy())


def test_resume_negative_control_without_optimizer_state_differs(tmp_path):
    model, opt = _trained_adamw()
    other, other_opt = _trained_adamw(seed=1)
    other.load_state_dict(model.state_dict())                # weights only: moments differ
    for m, o in ((model, opt), (other, other_opt)):
        o.zero_grad()
        m(ta.ones(4, 3)).square().sum().backward()
        o.step()
    assert not np.array_equal(other.weight.numpy(), model.weight.numpy())


def test_optimizer_state_dict_is_a_copy():
    _, opt = _trained_adamw()
    saved = opt.state_dict()["state"][0]["exp_avg"]
    before = saved.numpy().copy()
    opt.step()
    np.testing.assert_array_equal(saved.numpy(), before)


def test_lbfgs_state_dict_lists_hold_tensors_and_load_back():
    ta.manual_seed(0)
    w = nn.Parameter(ta.randn(3))
    opt = optim.LBFGS([w], max_iter=3)

    def closure():
        opt.zero_grad()
        loss = (w - 1.0).pow(4).sum()
        loss.backward()
        return loss
    opt.step(closure)
    saved = opt.state_dict()
    assert all(type(d) is Tensor for d in saved["state"][0]["old_dirs"])
    other = optim.LBFGS([w], max_iter=3)
    other.load_state_dict(saved)
    # the live state holds Tensors too, as torch's (the step reads their arrays)
    assert all(type(d) is Tensor for d in other.state[w]["old_dirs"])
    other.step(closure)


def test_torch_reads_our_optimizer_checkpoint_weights_only(tmp_path):
    torch = pytest.importorskip("torch", reason="torch reads the file tinyattn wrote")
    model, opt = _trained_adamw()
    path = tmp_path / "ckpt.pt"
    save_torch({"model": model.state_dict(), "optimizer": opt.state_dict()}, str(path))
    ckpt = torch.load(path, weights_only=True)
    theirs = ckpt["optimizer"]["state"][0]["exp_avg"]
    assert isinstance(theirs, torch.Tensor)
    np.testing.assert_array_equal(theirs.numpy(), opt.state_dict()["state"][0]["exp_avg"].numpy())


# PyTorch's time_sequence_prediction example: torch.save(numpy_array, f), then
# torch.load(f, weights_only=False) and torch.from_numpy(data[3:, :-1]). torch returns the
# pickled array as an array; the runner turned it into a Tensor, so from_numpy stopped.
NUMPY_IN_TORCH_FILE = """
import numpy as np, torch
data = np.sin(np.arange(12.0)).reshape(3, 4)
torch.save(data, open({path!r}, "wb"))
back = torch.load({path!r}, weights_only=False)
print(type(back).__name__, back.dtype, torch.from_numpy(back[1:, :-1]).shape)
mixed = {{"array": data, "tensor": torch.ones(2)}}
torch.save(mixed, {path!r})
back = torch.load({path!r}, weights_only=False)
print(type(back["array"]).__name__, type(back["tensor"]).__name__)
"""


def _run_torch_script(tmp_path, source: str) -> str:
    import os
    import subprocess
    import sys
    script = tmp_path / "prog.py"
    script.write_text(source)
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = dict(os.environ, PYTHONPATH=root)
    result = subprocess.run([sys.executable, "-m", "tinyattn", "run-torch", str(script)],
                            capture_output=True, text=True, env=env, timeout=120)
    assert result.returncode == 0, result.stderr
    return result.stdout


def test_numpy_array_in_a_torch_file_loads_as_an_array_under_run_torch(tmp_path):
    out = _run_torch_script(tmp_path, NUMPY_IN_TORCH_FILE.format(path=str(tmp_path / "d.pt")))
    assert out.splitlines() == ["ndarray float64 torch.Size([2, 3])", "ndarray Tensor"]


def test_numpy_array_in_a_torch_file_agrees_with_torch(tmp_path):
    torch = pytest.importorskip("torch", reason="torch is the reference for torch.load")
    path = str(tmp_path / "d.pt")
    save_torch({"array": np.arange(3.0)}, path)
    theirs = torch.load(path, weights_only=False)
    assert type(theirs["array"]) is np.ndarray


def test_tinyattn_archive_arrays_still_load_as_tensors_under_run_torch(tmp_path):
    # the negative control: tinyattn's own NumPy archive stores tensors as arrays, and
    # torch.load under the runner gives them back as Tensors
    path = str(tmp_path / "own.npz")
    ta.save({"w": ta.ones(2)}, path)
    out = _run_torch_script(tmp_path, f"import torch\nprint(type(torch.load({path!r})['w'])"
                                      f".__name__)\n")
    assert out.strip() == "Tensor"


# d2l's LeNet is built of nn.LazyConv2d and nn.LazyLinear: torch's lazy constructors draw no
# random numbers (the weights are drawn at the first forward), so what follows a lazy layer's
# construction draws what it would have drawn without it. The conv's settings template drew
# a full weight and bias here.
@pytest.mark.parametrize("make", [lambda m: m.LazyConv2d(4, kernel_size=3),
                                  lambda m: m.LazyConv1d(2, 3, groups=2, bias=False),
                                  lambda m: m.LazyConvTranspose2d(3, 2),
                                  lambda m: m.LazyLinear(5)])
def test_lazy_constructors_draw_no_random_numbers(make):
    ta.manual_seed(0)
    expected = ta.rand(4).tolist()
    ta.manual_seed(0)
    make(nn)
    assert ta.rand(4).tolist() == expected


def test_lazy_constructors_draw_nothing_in_torch_either():
    torch = pytest.importorskip("torch", reason="torch is the reference")
    torch.manual_seed(0)
    expected = torch.rand(4).tolist()
    torch.manual_seed(0)
    torch.nn.LazyConv2d(4, kernel_size=3)
    assert torch.rand(4).tolist() == expected


def test_lazy_constructors_negative_control_a_plain_conv_draws():
    ta.manual_seed(0)
    expected = ta.rand(4).tolist()
    ta.manual_seed(0)
    nn.Conv2d(1, 4, kernel_size=3)
    assert ta.rand(4).tolist() != expected
