"""Findings of the probeD41 outside-program probe (PyTorch examples' word_language_model,
mnist, d2l's RNN and CNN chapters run unchanged under run-torch), each checked against torch.
"""
import pickle
import warnings

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


# word_language_model's TransformerModel builds its causal mask as
# torch.log(torch.tril(torch.ones(n, n))): torch prints nothing; tinyattn printed NumPy's
# "RuntimeWarning: divide by zero encountered in log" on every new sequence length.
QUIET_CASES = {
    "log_of_tril_mask": lambda lib: lib.log(lib.tril(lib.ones(3, 3))),
    "log_negative": lambda lib: lib.log(lib.tensor([-1.0, 2.0])),
    "sqrt_negative": lambda lib: lib.sqrt(lib.tensor([-1.0, 4.0])),
    "exp_overflow": lambda lib: lib.exp(lib.tensor([1000.0, 0.0])),
    "divide_by_zero": lambda lib: lib.tensor([1.0, 0.0]) / lib.zeros(2),
    "log_backward_at_zero": lambda lib: _backward(lib, lambda x: lib.log(x), [0.0, 1.0]),
    "sqrt_backward_at_zero": lambda lib: _backward(lib, lambda x: lib.sqrt(x), [0.0, 1.0]),
}


def _backward(lib, f, values):
    x = lib.tensor(values, requires_grad=True)
    f(x).sum().backward()
    return x.grad


QUIET_SCRIPT = """
import sys
import torch
cases = sys.argv[1].split(",")
for name in cases:
    out = CASES[name](torch)
    print(name, out.tolist())
"""


def _quiet_case_lines(framework_cmd, tmp_path):
    import inspect
    import subprocess
    import sys
    source = inspect.getsource(_backward) + "\nCASES = {\n" + "".join(
        f"    {name!r}: {inspect.getsource(f).split(': ', 1)[1].rstrip().rstrip(',')},\n"
        for name, f in QUIET_CASES.items()) + "}\n"
    script = tmp_path / "quiet.py"
    script.write_text(QUIET_SCRIPT.replace("cases = ", source + "cases = ", 1))
    cmd = [sys.executable, *framework_cmd, str(script), ",".join(QUIET_CASES)]
    run = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    return run.stdout, run.stderr


def test_inf_and_nan_results_print_no_warning(tmp_path):
    """The script runs as a user runs it (pytest's own warning capture would lose the filter
    tinyattn installs at import): under run-torch, stdout as torch's, stderr empty."""
    torch_out, torch_err = _quiet_case_lines([], tmp_path)
    out, err = _quiet_case_lines(["-m", "tinyattn", "run-torch"], tmp_path)
    assert out == torch_out
    assert torch_err == ""
    assert [line for line in err.splitlines() if "running" not in line] == []


def _printed_warnings(f):
    with warnings.catch_warnings(record=True) as caught:
        f()
    return [str(w.message) for w in caught]


def test_numpy_in_the_callers_own_code_still_warns():   # the negative control
    assert _printed_warnings(lambda: np.log(np.zeros(1))) == \
        ["divide by zero encountered in log"]


# d2l's Module.plot stand-in calls float(loss) on a tensor that requires grad: torch prints
# "UserWarning: Converting a tensor with requires_grad=True to a scalar ..." once per process.
FLOAT_SCRIPT = """
import math
import torch
x = torch.tensor(2.0, requires_grad=True) * 3
print(float(x), float(x), math.exp(x) > 403, int(x), x.item(), f"{x:.2f}",
      float(x.detach()))
"""


def _run(cmd, tmp_path, text):
    import subprocess
    import sys
    script = tmp_path / "script.py"
    script.write_text(text)
    run = subprocess.run([sys.executable, *cmd, str(script)], capture_output=True, text=True,
                         timeout=120)
    assert run.returncode == 0, run.stderr
    return run.stdout, [line for line in run.stderr.splitlines()
                        if "Warning" in line or "Consider" in line]


def test_float_of_a_tensor_that_requires_grad_warns_once_as_torch(tmp_path):
    torch_out, torch_warnings = _run([], tmp_path, FLOAT_SCRIPT)
    out, printed = _run(["-m", "tinyattn", "run-torch"], tmp_path, FLOAT_SCRIPT)
    assert out == torch_out
    assert len(torch_warnings) == 2 and torch_warnings[0].endswith(
        "UserWarning: Converting a tensor with requires_grad=True to a scalar may lead to "
        "unexpected behavior.")
    assert printed[0] == torch_warnings[0]
    assert printed[1] == "Consider using tensor.detach() first."
    assert len(printed) == 2                       # once, as torch's TORCH_WARN_ONCE
    # the negative control: no tensor that requires grad, no warning
    quiet = FLOAT_SCRIPT.replace("requires_grad=True", "requires_grad=False")
    assert _run(["-m", "tinyattn", "run-torch"], tmp_path, quiet)[1] == []
    assert _run([], tmp_path, quiet)[1] == []


# d2l's BiRNNScratch runs self.b_rnn(reversed(inputs)) and the RNN reads inputs.shape:
# torch's reversed(t) is t.flip(0), a tensor; tinyattn gave Python's reversed iterator.
@pytest.mark.parametrize("shape", [(3, 2), (4,), (0, 2), (2, 3, 2)])
def test_reversed_is_flip_along_dim0(shape):
    values = np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape)
    weight = np.linspace(-1, 1, values.size, dtype=np.float32).reshape(shape)
    results = []
    for lib in (torch, ta):
        x = lib.tensor(values, requires_grad=True)
        r = reversed(x)
        assert isinstance(r, lib.Tensor)
        (r * lib.tensor(weight)).sum().backward()
        results.append((tuple(r.shape), r.detach().numpy().copy(), x.grad.numpy().copy(),
                        type(r.grad_fn).__name__.replace("Backward0", "")))
    (t_shape, t_val, t_grad, t_fn), (shape_, val, grad, fn) = results
    assert shape_ == t_shape and fn.startswith(t_fn[:4])
    np.testing.assert_array_equal(val, t_val)
    np.testing.assert_array_equal(grad, t_grad)


def test_reversed_of_a_0d_tensor_is_itself():
    for lib in (torch, ta):
        s = lib.tensor(3.0)
        assert reversed(s) is s


# d2l's batch-norm, ResNet, DenseNet, GoogLeNet and AnyNet chapters build nn.LazyBatchNorm2d:
# tinyattn had only LazyBatchNorm1d, so run-torch stopped on the name.
@pytest.mark.parametrize("name,shape", [("LazyBatchNorm1d", (6, 3)), ("LazyBatchNorm1d", (6, 3, 4)),
                                        ("LazyBatchNorm2d", (4, 3, 5, 5)),
                                        ("LazyBatchNorm3d", (2, 3, 2, 3, 4))])
def test_lazy_batch_norm_as_torch(name, shape):
    x = np.random.default_rng(0).standard_normal(shape).astype(np.float32) * 2 + 1
    results = []
    for lib in (torch, ta):
        layer = getattr(lib.nn, name)()
        assert layer.has_uninitialized_params()
        t = lib.tensor(x, requires_grad=True)
        y = layer(t)
        (y * y).sum().backward()
        assert type(layer).__name__ == name.replace("Lazy", "")
        layer.eval()
        z = layer(lib.tensor(x))
        results.append((y.detach().numpy(), t.grad.numpy(), z.detach().numpy(),
                        list(layer.state_dict()), layer.running_var.numpy(), repr(layer)))
    (ty, tg, tz, tkeys, tvar, trepr), (y, g, z, keys, var, rep) = results
    np.testing.assert_allclose(y, ty, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(g, tg, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(z, tz, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(var, tvar, rtol=1e-6)
    assert keys == tkeys


@pytest.mark.parametrize("name,shape", [("LazyBatchNorm2d", (4, 3, 5)),
                                        ("LazyBatchNorm3d", (4, 3, 5, 5))])
def test_lazy_batch_norm_wrong_rank_raises_as_torch(name, shape):
    for lib in (torch, ta):
        with pytest.raises(ValueError):
            getattr(lib.nn, name)()(lib.zeros(*shape))


# d2l's NiN block: nn.LazyConv2d(out_channels, kernel_size, strides, padding) positionally;
# tinyattn's lazy convolutions took stride, padding, ... as keywords only (TypeError).
@pytest.mark.parametrize("name,args,shape", [
    ("LazyConv2d", (4, 3, 2, 1), (1, 2, 9, 9)),
    ("LazyConv1d", (4, 3, 2, 1, 2), (2, 3, 11)),
    ("LazyConvTranspose2d", (4, 3, 2, 1, 1), (1, 2, 5, 5)),
])
def test_lazy_conv_positional_arguments_as_torch(name, args, shape):
    got = []
    for lib in (torch, ta):
        layer = getattr(lib.nn, name)(*args)
        out = layer(lib.ones(*shape))
        got.append((tuple(out.shape), repr(layer)))
    assert got[1] == got[0]


def test_lazy_conv_argument_given_twice_raises_as_torch():
    for lib in (torch, ta):
        with pytest.raises(TypeError):
            lib.nn.LazyConv2d(4, 3, 2, stride=2)
