"""``python -m tinyattn run-torch``: the script runs as Python would run it, torch's names map
to tinyattn's with torch's meaning, and a name tinyattn lacks stops the script with an error
that names it and the line that used it (never a fallback, never exit status 0).

Scripts that need the mapping installed run in subprocesses (the pytest process may hold
real torch, which the runner refuses to shadow); tests/pytorch_parity.py runs several of them
in one process, through ``run_script``."""
import importlib
import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import tinyattn as ta
from tinyattn.torch_shim import MODULES, Size, device, exposed_names, run_script
from tinyattn.torch_shim.finder import TorchModule
from tinyattn.torch_shim import patches

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ENV = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""),
           OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1")


def _write(tmp_path, name, body):
    path = tmp_path / name
    path.write_text(textwrap.dedent(body).lstrip("\n"))
    return str(path)


@pytest.fixture(scope="module")
def scripts(tmp_path_factory):
    """Small scripts, each run once on tinyattn (one process for all): name -> result."""
    folder = tmp_path_factory.mktemp("scripts")
    bodies = {
        "missing_attribute.py": """
            import torch
            x = torch.ones(3)
            y = torch.stft(x, 2)
            """,
        "missing_module.py": """
            import torch

            import torch.sparse
            """,
        "missing_from_import.py": """
            import torch
            from torch import sparse
            """,
        "missing_method.py": """
            import torch
            x = torch.ones(3)
            print("before")
            y = x.geqrf()
            """,
        "refused.py": """
            import torch
            model = torch.nn.Linear(2, 2)
            model = torch.jit.script(model)
            """,
        "ecosystem.py": """
            import torch
            import torchvision
            """,
        "script_error.py": """
            import torch

            def helper(x):
                raise ValueError(f"bad value {x.sum().item()}")

            helper(torch.ones(2))
            """,
        "dtype_attribute.py": """
            import torch
            print(torch.float32.is_floating_point, torch.long.itemsize, repr(torch.float))
            x = torch.ones(2)
            if x.dtype.is_floating_point:
                print(x.dtype, x.dtype == torch.float32, x.dtype.itemsize)
            """,
        "syntax_error.py": """
            import torch
            x = torch.ones(2
            """,
        "optional_features.py": """
            import torch
            print(hasattr(torch, "not_a_torch_name"), hasattr(torch.nn, "Linear"))
            try:
                import torch.sparse
            except ImportError as exc:
                print("fallback:", "torch.sparse" in str(exc))
            print(torch.cuda.is_available() == __import__("tinyattn").cuda_is_available())
            """,
        "torch_habits.py": """
            import torch
            import torch.nn as nn
            device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
            x = torch.ones(2, 3, dtype=torch.float64).to(device)
            print(x.dtype == torch.float64, x.device.type == device.type)
            print(x.shape == torch.Size([2, 3]), torch.get_default_dtype() == torch.float32)
            lin = nn.Linear(3, 1).to(device)
            with torch.no_grad():
                lin.weight.data.fill_(0.5)         # .data is a Tensor, as in PyTorch
                lin.bias.data.zero_()
            print(lin(torch.ones(1, 3)).item())
            loss = (lin(torch.ones(4, 3)) ** 2).sum()
            loss.backward()
            print([p.grad.norm().item() for p in lin.parameters()])
            print(isinstance(torch.tensor([1]), torch.Tensor), torch.is_tensor(x))
            """,
        "save_load_tensors.py": """
            import os, tempfile
            import torch
            with tempfile.TemporaryDirectory() as folder:
                path = os.path.join(folder, "state.pt")
                torch.save({"w": torch.arange(3.0), "step": 7}, path)
                state = torch.load(path, map_location="cpu", weights_only=True)
            print(type(state["w"]).__name__, state["w"].tolist(), state["step"])
            """,
    }
    paths = {name: _write(folder, name, body) for name, body in bodies.items()}
    result = subprocess.run([sys.executable, os.path.join(ROOT, "tests", "pytorch_parity.py"),
                             "tinyattn", *paths.values()], capture_output=True, text=True,
                            cwd=ROOT, env=ENV, timeout=300)
    assert result.returncode == 0, result.stderr
    by_path = json.loads(result.stdout)
    return {name: dict(by_path[path], path=path) for name, path in paths.items()}


def _expect_missing(result, torch_name, line, reason=None):
    assert result["code"] == 1
    message = f"tinyattn does not implement {torch_name} ({result['path']} line {line})"
    assert message in result["stderr"], result["stderr"]
    assert "Traceback" not in result["stderr"]          # one clear line, not a traceback
    if reason:
        assert reason in result["stderr"]


def test_a_missing_attribute_names_it_and_the_script_line(scripts):
    _expect_missing(scripts["missing_attribute.py"], "torch.stft", 3)


def test_a_missing_module_names_it_and_the_script_line(scripts):
    _expect_missing(scripts["missing_module.py"], "torch.sparse", 3)
    _expect_missing(scripts["missing_from_import.py"], "torch.sparse", 2)


def test_a_missing_tensor_method_names_it_and_the_script_line(scripts):
    result = scripts["missing_method.py"]
    assert result["stdout"] == "before\n"
    _expect_missing(result, "torch.Tensor.geqrf", 4)


def test_refused_names_say_why(scripts):
    _expect_missing(scripts["refused.py"], "torch.jit", 3, "no TorchScript")
    _expect_missing(scripts["ecosystem.py"], "torchvision", 2, "built on real PyTorch")


def test_a_script_error_is_reported_from_the_scripts_frames_with_its_line(scripts):
    result = scripts["script_error.py"]
    assert result["code"] == 1
    err = result["stderr"]
    assert "Traceback" in err and "ValueError: bad value 2.0" in err
    assert "runpy" not in err and "torch_shim" not in err   # the script's frames only
    assert (f"run-torch: the script stopped with ValueError at {result['path']} line 4 while "
            f"running on tinyattn") in err


def test_torch_dtypes_have_torchs_attributes_also_as_tensor_dtypes(scripts):
    result = scripts["dtype_attribute.py"]
    assert result["code"] == 0, result["stderr"]
    assert result["stdout"] == "True 8 torch.float32\ntorch.float32 True 4\n"  # as torch


def test_a_syntax_error_names_the_file_and_line(scripts):
    result = scripts["syntax_error.py"]
    assert result["code"] == 1 and "SyntaxError" in result["stderr"]
    assert "runpy" not in result["stderr"]
    assert (f"run-torch: the script stopped with SyntaxError at {result['path']} line 2 "
            ) in result["stderr"]


def test_optional_features_can_be_probed_as_with_torch(scripts):
    result = scripts["optional_features.py"]
    assert result["code"] == 0, result["stderr"]
    assert result["stdout"].split("\n")[:3] == ["False True", "fallback: True", "True"]


def test_pytorch_habits_work(scripts):
    result = scripts["torch_habits.py"]
    assert result["code"] == 0, result["stderr"]
    lines = result["stdout"].splitlines()
    assert lines[0] == "True True" and lines[1] == "True True"
    assert float(lines[2]) == 1.5
    # out = 1.5 per row, d loss / d out = 3, so dW = 3 * 4 rows = 12 per weight, db = 12
    assert json.loads(lines[3]) == pytest.approx([12 * 3 ** 0.5, 12.0])
    assert lines[4] == "True True"


def test_torch_load_gives_tensors(scripts):
    result = scripts["save_load_tensors.py"]
    assert result["code"] == 0, result["stderr"]
    assert result["stdout"] == "Tensor [0.0, 1.0, 2.0] 7\n"


def test_the_command_line_runs_a_script_as_python_would(tmp_path):
    path = _write(tmp_path, "cli.py", """
        import sys
        import torch
        print(__name__, sys.argv[1:], sys.path[0] == __import__("os").path.dirname(__file__))
        print(torch.tensor([1.0, 2.0]).sum().item())
        sys.exit(3)
        """)
    result = subprocess.run([sys.executable, "-m", "tinyattn", "run-torch", path, "-h", "--lr",
                             "0.1"], capture_output=True, text=True, env=ENV, timeout=120)
    assert result.returncode == 3
    assert result.stdout == "__main__ ['-h', '--lr', '0.1'] True\n3.0\n"
    banner = result.stderr.strip().splitlines()
    assert len(banner) == 1 and "on tinyattn" in banner[0] and path in banner[0]


def test_help_and_a_missing_file(capsys):
    from tinyattn.cli import main
    assert main(["run-torch", "--help"]) == 0
    assert "usage: python -m tinyattn run-torch SCRIPT.py" in \
        " ".join(capsys.readouterr().out.split())               # at any terminal width
    assert main(["run-torch"]) == 2
    assert "usage" in capsys.readouterr().err
    assert run_script("no/such/script.py") == 2
    assert "no such file: no/such/script.py" in capsys.readouterr().err
    assert run_script(ROOT) == 2
    assert "a folder, not a script" in capsys.readouterr().err


# ------------------------------------------------------------------ the name map
@pytest.fixture(name="torch")
def real_torch():
    return pytest.importorskip("torch", reason="the name map is checked against real torch")


@pytest.mark.parametrize("module", sorted(MODULES))
def test_every_name_the_runner_exposes_exists_in_torch(module, torch):
    """A tinyattn-only name (GPT, MultiHeadAttention, ...) must not appear under torch's
    modules: a script that used it would not run on PyTorch."""
    real = importlib.import_module(module)

    def torch_has(name):         # a submodule torch loads on import only (torch.utils.benchmark)
        if hasattr(real, name):
            return True
        try:
            importlib.import_module(f"{module}.{name}")
        except ImportError:
            return False
        return hasattr(real, name)
    missing = [name for name in exposed_names(module) if not torch_has(name)]
    assert not missing, f"{module} exposes names torch does not have: {missing}; add them to " \
                        f"the module's hidden set in tinyattn/torch_shim/names.py"
    refused = [name for name in MODULES[module].refused if not hasattr(real, name)]
    assert not refused


def test_negative_control_a_tinyattn_only_name_is_not_exposed():
    assert "GPT" in ta.nn.__all__ and "GPT" not in exposed_names("torch.nn")
    with pytest.raises(AttributeError, match="does not implement torch.nn.GPT"):
        TorchModule("torch.nn", MODULES["torch.nn"]).GPT


@pytest.mark.parametrize("name", ["float32", "float", "float64", "double", "float16", "half",
                                  "int64", "long", "int32", "int", "int16", "short", "int8",
                                  "uint8", "bool"])
def test_torch_dtype_names_mean_torchs_dtypes(name, torch):
    shim = TorchModule("torch", MODULES["torch"])
    ours = ta.zeros(2, dtype=getattr(shim, name)).dtype
    theirs = torch.zeros(2, dtype=getattr(torch, name)).numpy().dtype
    assert ours == theirs
    assert ours == getattr(shim, name)          # x.dtype == torch.float32 compares as in torch
    for attribute in ("is_floating_point", "is_complex", "is_signed", "itemsize"):
        assert getattr(getattr(shim, name), attribute) == getattr(getattr(torch, name),
                                                                  attribute)
    assert repr(getattr(shim, name)) == repr(getattr(torch, name))


def test_torch_device_is_a_device_string_with_type_and_index(torch):
    for spec, args in [("cpu", ()), ("cuda:0", ()), ("cuda", (0,))]:
        ours, theirs = device(spec, *args), torch.device(spec, *args)
        assert (ours.type, ours.index, repr(ours)) == (theirs.type, theirs.index, repr(theirs))
        assert str(ours) == str(theirs)
    assert ta.ones(2).to(device("cpu")).device == "cpu"
    with pytest.raises(RuntimeError, match="Invalid device string"):
        device("cuda:x")


def test_torch_size_is_a_tuple(torch):
    assert Size([2, 3]) == (2, 3) == torch.Size([2, 3])
    patches.apply()                         # run-torch: shapes print as torch's
    try:
        assert repr(Size([2, 3])) == repr(torch.Size([2, 3])) and Size([2, 3]).numel() == 6
        assert repr(ta.zeros(2, 3).shape) == "torch.Size([2, 3])"
        assert str(ta.zeros(2).dtype) == "torch.float32" and ta.zeros(2).dtype.kind == "f"
    finally:
        patches.restore()
    assert repr(ta.zeros(2, 3).shape) == "(2, 3)" and str(ta.zeros(2).dtype) == "float32"


def test_data_is_a_tensor_while_installed_and_an_array_after():
    w = ta.tensor([1.0, 2.0], requires_grad=True)
    patches.apply()
    try:
        data = w.data
        assert isinstance(data, ta.Tensor) and not data.requires_grad
        data.mul_(3.0)                                   # writes through, as in PyTorch
        assert w.tolist() == [3.0, 6.0] and w.device.type == "cpu"
        y = (w * w).sum()                                # w is saved for this backward ...
        with ta.autograd.detect_anomaly(), pytest.raises(ta.SavedDataWriteError):
            w.data.fill_(0.0)                            # ... so anomaly mode refuses writing
        y.backward()
        assert isinstance(w.numpy(), np.ndarray)
    finally:
        patches.restore()
    assert isinstance(w.data, np.ndarray) and type(w.device) is str
    assert not hasattr(ta.Tensor, "__getattr__")


def test_the_runner_refuses_to_shadow_real_torch_already_imported(torch):
    from tinyattn.torch_shim import install, installed
    assert "torch" in sys.modules
    with pytest.raises(RuntimeError, match="real PyTorch is already imported"):
        install()
    assert not installed() and isinstance(ta.ones(1).data, np.ndarray)
