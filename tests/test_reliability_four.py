"""Reliability, round four (issue 31): each defect the issue lists, with torch as the oracle,
and the probes of each surface tried afterwards (special values, empty and 0-d, half precision
at its limits, every output structure, rarely passed options, hostile files)."""
from __future__ import annotations

import math

import numpy as np
import pytest

import tinyattn as ta
from tinyattn import nn
from tinyattn.testing import assert_close

torch = pytest.importorskip("torch", reason="torch is the oracle of these tests")


def _t(x):
    """A torch tensor holding what tinyattn tensor x holds."""
    return torch.from_numpy(np.array(x.float().numpy() if x.dtype == ta.bfloat16 else x.numpy()))


# ---- F.rms_norm / nn.RMSNorm with eps=None on half inputs ------------------------------------

@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32", "float64"])
@pytest.mark.parametrize("value", [0.01, 1e-5, 3.0])
def test_rms_norm_default_eps_is_torchs(dtype, value):
    ours = ta.nn.functional.rms_norm(ta.full((4,), value, dtype=getattr(ta, dtype)), (4,))
    theirs = torch.nn.functional.rms_norm(
        torch.full((4,), value, dtype=getattr(torch, dtype)), (4,))
    assert str(ours.dtype) == str(theirs.dtype).replace("torch.", "")
    np.testing.assert_allclose(ours.float().numpy(), theirs.float().numpy(), rtol=1e-2)
    module = nn.RMSNorm(4).to(getattr(ta, dtype))
    np.testing.assert_allclose(module(ta.full((4,), value, dtype=getattr(ta, dtype)))
                               .float().numpy(), theirs.float().numpy(), rtol=1e-2)


# ---- GradScaler.scale: torch's promotion with its 0-d float32 scale ---------------------------

@pytest.mark.parametrize("make", [
    lambda m: m.tensor(2.0, dtype=m.float16), lambda m: m.tensor([2.0], dtype=m.float16),
    lambda m: m.tensor(2.0, dtype=m.bfloat16), lambda m: m.tensor(2.0, dtype=m.float64),
    lambda m: m.tensor(2), lambda m: m.tensor([[1.0, 2.0]]), lambda m: m.tensor([], dtype=m.float16),
])
def test_grad_scaler_scale_dtype_and_value(make):
    ours = ta.amp.GradScaler().scale(make(ta))
    theirs = torch.amp.GradScaler("cpu").scale(make(torch))
    assert str(ours.dtype) == str(theirs.dtype).replace("torch.", "")
    np.testing.assert_array_equal(ours.float().numpy(), theirs.float().numpy())


# ---- torch.testing.assert_close with non-finite values --------------------------------------

_NOT_CLOSE = [([5.0], [math.inf]), (math.inf, -math.inf), ([1e30], [math.inf]),
              ([math.inf], [5.0]), ([65504.0], [math.inf]), ([math.nan], [1.0])]


@pytest.mark.parametrize("actual,expected", _NOT_CLOSE)
def test_assert_close_infinities_are_exact(actual, expected):
    with pytest.raises(AssertionError):
        torch.testing.assert_close(torch.tensor(actual), torch.tensor(expected))
    with pytest.raises(AssertionError):
        assert_close(ta.tensor(actual), ta.tensor(expected))
    if not isinstance(actual, list):
        with pytest.raises(AssertionError):
            assert_close(actual, expected)
    with pytest.raises(AssertionError):
        assert_close(ta.tensor(actual), ta.tensor(expected), rtol=1.0, atol=1.0)


def test_assert_close_equal_infinities_and_negative_control():
    assert_close(ta.tensor([math.inf, -math.inf, 1.0]), ta.tensor([math.inf, -math.inf, 1.0]))
    assert_close(math.inf, math.inf)
    assert_close(ta.tensor([math.nan]), ta.tensor([math.nan]), equal_nan=True)
    with pytest.raises(AssertionError):
        assert_close(ta.tensor([1.0]), ta.tensor([1.1]))


def test_assert_close_none_numpy_and_scalar_types_as_torch():
    assert_close(None, None)
    with pytest.raises(AssertionError):
        assert_close(None, ta.tensor(1.0))
    assert_close(np.ones(2), np.ones(2))
    with pytest.raises(AssertionError, match="dtype"):
        assert_close(np.ones(2), np.ones(2, np.float32))
    with pytest.raises(AssertionError, match=r"\(d\)types do not match"):
        assert_close(1, 1.0)
    assert_close(1, 1.0, check_dtype=False)


# ---- scatter(value=..., reduce=...) leaves untouched elements alone ------------------------

@pytest.mark.parametrize("value", [math.inf, -math.inf, math.nan, 0.1, 1e30, -0.0])
@pytest.mark.parametrize("reduce", ["add", "multiply"])
@pytest.mark.parametrize("dtype", ["float32", "float16", "float64"])
def test_scatter_number_reduce_matches_torch(value, reduce, dtype):
    rng = np.random.default_rng(3)
    base = rng.standard_normal((4, 30)).astype(dtype)
    base[0, :3] = [-0.0, math.inf, math.nan]
    index = rng.integers(0, 30, (4, 20))
    try:
        theirs = torch.from_numpy(base).scatter(1, torch.from_numpy(index), value=value,
                                                reduce=reduce)
    except RuntimeError as error:         # 1e30 into float16: torch's overflow error
        with pytest.raises(RuntimeError, match=str(error)):
            ta.from_numpy(base).scatter(1, ta.from_numpy(index), value=value, reduce=reduce)
        with pytest.raises(RuntimeError, match=str(error)):
            ta.from_numpy(base).scatter(1, ta.from_numpy(index), value=value)
        return
    with np.errstate(all="ignore"):
        ours = ta.from_numpy(base).scatter(1, ta.from_numpy(index), value=value, reduce=reduce)
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
    np.testing.assert_array_equal(np.signbit(ours.numpy()), np.signbit(theirs.numpy()))


def test_scatter_number_reduce_integer_and_gradient():
    ours = ta.tensor([1, 2]).scatter(0, ta.tensor([0, 0]), value=2.5, reduce="add")
    theirs = torch.tensor([1, 2]).scatter(0, torch.tensor([0, 0]), value=2.5, reduce="add")
    assert ours.tolist() == theirs.tolist() and str(ours.dtype) == "int64"
    x = ta.tensor([[1.0, 2.0, 3.0]], requires_grad=True)
    x.scatter(1, ta.tensor([[1, 1]]), value=3.0, reduce="multiply").sum().backward()
    assert x.grad.tolist() == [[1.0, 9.0, 1.0]] and x.grad.dtype == ta.float32


# ---- profiler table(row_limit=-1) --------------------------------------------------------------

def test_profiler_row_limit_minus_one_keeps_every_row():
    from tinyattn.profiler import profile
    with profile() as prof:
        x = ta.randn(3, 3)
        ((x @ x).relu() + 1).sum()
    events = prof.key_averages()
    rows = lambda text: text.splitlines()[3:-2]  # noqa: E731 - the rows between the rules
    assert len(rows(events.table(row_limit=-1))) == len(events) >= 3
    assert len(rows(events.table(row_limit=2))) == 2
    assert len(rows(events.table(row_limit=0))) == 0


# ---- checkpoint: gradients equal the plain ones for every output structure -------------------

def _structures(m):
    """Segment functions of x and w (m: torch or tinyattn), each a different output structure;
    the loss reads what a learner would read from it."""
    def tanh_sum(r):
        return (r.tanh() * 2).sum()
    return {
        "argmax first": (lambda x, w: ((x @ w).argmax(-1), (x @ w).tanh()),
                         lambda out: out[1].sum() + 0 * out[0].sum()),
        "detached first": (lambda x, w: ((x @ w).detach(), (x @ w).sin()),
                           lambda out: (out[0] * out[1]).sum()),
        "list": (lambda x, w: [x @ w, (x * 3).exp()], lambda out: out[0].sum() + out[1].sum()),
        "second only": (lambda x, w: (x @ w, x.cos()), lambda out: out[1].sum()),
        "nested": (lambda x, w: (x @ w, (x.sin(), 3, None)), lambda out: tanh_sum(out[1][0])),
        "single": (lambda x, w: (x @ w).relu(), tanh_sum),
        "input returned": (lambda x, w: (x, x @ w), lambda out: (out[0] ** 2).sum() + out[1].sum()),
        "ints between": (lambda x, w: ((x > 0).sum(), x @ w, (x @ w).max(-1)),
                         lambda out: out[1].sum() + out[2][0].sum()),
    }


@pytest.mark.parametrize("reentrant", [True, False])
@pytest.mark.parametrize("name", list(_structures(np)))
def test_checkpoint_gradients_equal_plain_for_every_structure(name, reentrant):
    rng = np.random.default_rng(5)
    xs, ws = rng.standard_normal((3, 4)), rng.standard_normal((4, 2))
    results = []
    for m, ckpt in ((ta, ta.utils.checkpoint.checkpoint),
                    (torch, torch.utils.checkpoint.checkpoint)):
        fn, loss_of = _structures(m)[name]
        grads = []
        for wrapped in (False, True) if m is ta else (False,):   # torch's reentrant checkpoint
            x = m.tensor(xs, requires_grad=True)                  # refuses lists and nests
            w = m.tensor(ws, requires_grad=True)
            out = ckpt(fn, x, w, use_reentrant=reentrant) if wrapped else fn(x, w)
            loss_of(out).backward()
            flags = [t.requires_grad for t in ta.utils.checkpoint._tensors_of(out)] \
                if m is ta else None
            grads.append((None if x.grad is None else x.grad.numpy(),
                          None if w.grad is None else w.grad.numpy(), flags))
        results.append(grads)
    (plain, ours), (torch_plain,) = results
    for a, b in zip(plain[:2], torch_plain[:2]):
        assert (a is None) == (b is None)
    for a, b in zip(ours[:2], plain[:2]):
        if reentrant and b is None and a is not None:
            assert not a.any()   # torch's reentrant variant gives zeros where nothing reached
            continue
        assert (a is None) == (b is None)
        if a is not None:
            np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-12)
    assert ours[2] == plain[2]       # requires_grad of each output as without checkpoint


def test_checkpoint_dict_output_non_reentrant():
    x = ta.randn(3, requires_grad=True)
    out = ta.utils.checkpoint.checkpoint(lambda v: {"a": v.sin(), "i": v.argmax()}, x,
                                         use_reentrant=False)
    assert set(out) == {"a", "i"} and not out["i"].requires_grad
    out["a"].sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), np.cos(x.detach().numpy()), rtol=1e-6)


# ---- quantize_dynamic: small activations, non-finite inputs ---------------------------------

def _quantized_pair(in_features=16, out_features=5):
    import warnings
    ta.manual_seed(0)
    ours_float = nn.Sequential(nn.Linear(in_features, out_features))
    theirs_float = torch.nn.Sequential(torch.nn.Linear(in_features, out_features))
    with torch.no_grad():
        theirs_float[0].weight.copy_(_t(ours_float[0].weight.detach()))
        theirs_float[0].bias.copy_(_t(ours_float[0].bias.detach()))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        theirs = torch.ao.quantization.quantize_dynamic(theirs_float, {torch.nn.Linear})
    return ta.quantization.quantize_dynamic(ours_float), theirs


@pytest.mark.parametrize("magnitude", [1e-4, 3e-5, 1e-6, 1e-9, 0.0])
@pytest.mark.parametrize("sign", ["mixed", "positive", "negative"])
def test_quantize_dynamic_small_activations_match_torch(magnitude, sign):
    if torch.backends.quantized.engine not in ("x86", "fbgemm"):
        pytest.skip(f"torch's quantized engine here is {torch.backends.quantized.engine}")
    rng = np.random.default_rng(1)
    x = rng.standard_normal((4, 16)).astype(np.float32) * np.float32(magnitude)
    x = {"mixed": x, "positive": np.abs(x), "negative": -np.abs(x)}[sign]
    ours, theirs = _quantized_pair()
    np.testing.assert_allclose(ours(ta.from_numpy(x)).numpy(),
                               theirs(torch.from_numpy(x)).numpy(), rtol=0, atol=2e-6)
    for reduce_range in (True, False):
        scale, zero = torch._choose_qparams_per_tensor(torch.from_numpy(x), reduce_range)
        mine = ta.quantization.choose_qparams(float(x.min()), float(x.max()), reduce_range)
        assert mine[1] == zero and mine[0] == pytest.approx(scale, rel=1e-6)


@pytest.mark.parametrize("bad", [math.inf, -math.inf, math.nan])
def test_quantize_dynamic_non_finite_input_does_not_raise(bad):
    ours, _ = _quantized_pair()
    x = np.random.default_rng(2).standard_normal((3, 16)).astype(np.float32)
    x[1, 4] = bad
    out = ours(ta.from_numpy(x)).numpy()
    assert not np.isfinite(out[1]).any()          # the row holding it: inf / NaN
    if math.isinf(bad):
        assert np.isinf(out[1]).any()
    assert np.isfinite(out[[0, 2]]).all()         # the other rows keep their values
    clean = x.copy()
    clean[1] = 0
    np.testing.assert_allclose(out[[0, 2]], ours(ta.from_numpy(clean)).numpy()[[0, 2]],
                               atol=0.05)


# ---- tools that run a sub-step say why it failed --------------------------------------------

def test_doctor_without_xdist_runs_the_suite_and_says_why_it_failed(monkeypatch):
    import importlib.util
    import subprocess
    from tinyattn import doctor
    seen = {}
    real_find_spec = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "xdist" else real_find_spec(name, *a))

    def fake_run(command, **kwargs):
        seen["command"] = command
        return subprocess.CompletedProcess(command, 1, stdout="FAILED tests/test_x.py::t - "
                                           "AssertionError: boom\n1 failed in 0.1s\n", stderr="")
    monkeypatch.setattr(subprocess, "run", fake_run)
    report = []
    assert doctor._run_tests("strict", report) == 1
    assert "addopts=-q" in seen["command"]            # no "-n auto" without the plugin
    text = "\n".join(report)
    assert "pytest-xdist is not installed" in text
    assert "1 failed" in text and "AssertionError: boom" in text and "(no output)" not in text


def test_doctor_reports_a_usage_error_from_stderr(monkeypatch):
    import subprocess
    from tinyattn import doctor
    monkeypatch.setattr(subprocess, "run", lambda command, **kw: subprocess.CompletedProcess(
        command, 4, stdout="", stderr="ERROR: usage: pytest\npytest: error: unrecognized "
                                      "arguments: -n\n"))
    report = []
    assert doctor._run_tests("strict", report) == 1
    assert any("unrecognized arguments: -n" in line for line in report)


def test_explore_writes_through_no_fixed_temporary(tmp_path):
    from tinyattn.viz import explore
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me")
    page = tmp_path / "g.html"
    (tmp_path / "g.html.partial").symlink_to(victim)   # a link planted at the old name
    x = ta.randn(3, requires_grad=True)
    explore((x * 2).sum(), str(page))
    assert victim.read_text() == "keep me"
    assert page.read_text(encoding="utf-8").lstrip().lower().startswith("<!doctype html")
    explore((x * 3).sum(), str(page))                  # a second run replaces it whole
    leftovers = [p.name for p in tmp_path.iterdir() if p.name.startswith(".tmp")]
    assert leftovers == []


def test_profiler_exports_go_through_the_atomic_writer(tmp_path):
    from tinyattn.profiler import profile
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me")
    with profile(with_stack=True) as prof:
        (ta.randn(2, 2) @ ta.randn(2, 2)).sum()
    prof.export_chrome_trace(str(tmp_path / "trace.json"))
    prof.export_stacks(str(tmp_path / "stacks.txt"))
    import json
    assert json.loads((tmp_path / "trace.json").read_text())["traceEvents"]
    assert victim.read_text() == "keep me"


# ---- torch.save / torch.load as torch users do ------------------------------------------------

import dataclasses  # noqa: E402
import io  # noqa: E402
import os  # noqa: E402
import pickle  # noqa: E402
import zipfile  # noqa: E402

from tinyattn.io import torch_file  # noqa: E402


@dataclasses.dataclass
class RunConfig:
    """A config a build-nanogpt-style script saves beside the weights."""
    n_layer: int = 2
    name: str = "tiny"


def test_whole_module_and_dataclass_round_trip(tmp_path):
    model = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2))
    path = str(tmp_path / "ckpt.pt")
    torch_file.save_torch({"model": model, "config": RunConfig(), "step": 7}, path)
    with pytest.raises(pickle.UnpicklingError, match="add_safe_globals") as refused:
        ta.load(path)                                   # weights_only=True is the default
    assert "Sequential" in str(refused.value) and "safe_globals" in str(refused.value)
    loaded = ta.load(path, weights_only=False)
    x = ta.randn(2, 3)
    np.testing.assert_array_equal(loaded["model"](x).detach().numpy(),
                                  model(x).detach().numpy())
    assert loaded["config"] == RunConfig() and loaded["step"] == 7
    with torch_file.safe_globals([RunConfig]):
        with pytest.raises(pickle.UnpicklingError):    # the module classes are not allowed
            ta.load(path)
    torch_file.save_torch({"state": model.state_dict(), "config": RunConfig()}, path)
    with torch_file.safe_globals([RunConfig]):
        assert ta.load(path)["config"] == RunConfig()
    with pytest.raises(pickle.UnpicklingError):      # the context ended: refused again
        ta.load(path)


def test_tinyattn_save_pickles_what_is_not_data(tmp_path):
    path = str(tmp_path / "c.pt")
    ta.save({"config": RunConfig(), "w": ta.ones(2)}, path)       # refused before round four
    assert ta.load(path, weights_only=False)["config"] == RunConfig()
    ta.save({"w": ta.ones(2)}, path)                              # plain data: NumPy archive
    assert isinstance(ta.load(path)["w"], np.ndarray)


def test_files_interchange_with_torch_both_ways(tmp_path):
    ours = {"weight": nn.Parameter(ta.randn(3, 2)), "ids": ta.arange(4),
            "half": ta.ones(2, dtype=ta.float16), "bf": ta.ones(2, dtype=ta.bfloat16),
            "flags": ta.tensor([True, False]), "empty": ta.zeros(0, 3), "scalar": ta.tensor(2.5),
            "meta": {"lr": 0.1, "names": ["a", "b"], "t": (1, None)}}
    path = str(tmp_path / "ours.pt")
    torch_file.save_torch(ours, path)
    theirs = torch.load(path)                       # real torch, weights_only=True
    assert isinstance(theirs["weight"], torch.nn.Parameter)
    for key in ("weight", "ids", "half", "flags", "empty", "scalar"):
        np.testing.assert_array_equal(theirs[key].detach().numpy(), ours[key].detach().numpy())
        assert str(theirs[key].dtype) == f"torch.{ours[key].dtype}"
    assert theirs["bf"].dtype == torch.bfloat16 and theirs["meta"] == ours["meta"]

    source = {"sd": torch.nn.Linear(3, 2).state_dict(), "p": torch.nn.Parameter(torch.ones(2)),
              "view": torch.arange(10)[2:9:3], "t": torch.arange(6).reshape(2, 3).t(),
              "bf": torch.ones(2, dtype=torch.bfloat16), "dtype": torch.float16,
              "size": torch.Size([2, 3]), "bytes": b"\x00\xff", "set": {1, 2}}
    path = str(tmp_path / "theirs.pt")
    torch.save(source, path)
    back = ta.load(path)
    np.testing.assert_array_equal(back["sd"]["weight"].numpy(), source["sd"]["weight"].numpy())
    assert back["p"].requires_grad and isinstance(back["p"], nn.Parameter)
    assert back["view"].tolist() == [2, 5, 8] and back["t"].tolist() == [[0, 3], [1, 4], [2, 5]]
    assert back["bf"].dtype == ta.bfloat16 and back["dtype"] == "float16"
    assert tuple(back["size"]) == (2, 3) and back["bytes"] == b"\x00\xff"
    assert back["set"] == {1, 2}
    buffer = io.BytesIO()
    torch_file.save_torch({"w": ta.ones(2)}, buffer)            # file objects, as torch
    buffer.seek(0)
    assert torch.load(buffer)["w"].tolist() == [1.0, 1.0]


def _hostile_file(path, payload_module="os", payload_name="system", argument="touch PWNED"):
    """A torch-format file whose pickle calls ``payload_module.payload_name(argument)``."""
    body = (b"\x80\x02c" + f"{payload_module}\n{payload_name}\n".encode() + b"X"
            + len(argument).to_bytes(4, "little") + argument.encode() + b"\x85R.")
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("archive/data.pkl", body)
        archive.writestr("archive/version", "3\n")


def test_a_hostile_file_never_runs_code_under_the_default(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    path = str(tmp_path / "evil.pt")
    _hostile_file(path, argument=f"touch {tmp_path / 'PWNED'}")
    with pytest.raises(pickle.UnpicklingError, match="os.system"):
        ta.load(path)
    with pytest.raises(pickle.UnpicklingError, match="weights_only"):
        torch_file.load_torch(path)
    assert not (tmp_path / "PWNED").exists()
    for module, name in (("builtins", "eval"), ("subprocess", "call"), ("posix", "system"),
                         ("numpy", "load"), ("tinyattn.nn", "Linear")):
        _hostile_file(path, module, name)
        with pytest.raises(pickle.UnpicklingError):
            ta.load(path)
    assert not (tmp_path / "PWNED").exists()
    _hostile_file(path, "builtins", "len", "abc")          # negative control: it does run
    assert ta.load(path, weights_only=False) == 3


def test_damaged_torch_files_are_refused_clearly(tmp_path):
    path = str(tmp_path / "bad.pt")
    torch.save({"w": torch.ones(4)}, path)
    with zipfile.ZipFile(path) as archive:
        members = {n: archive.read(n) for n in archive.namelist()}
    key = next(n for n in members if "/data/" in n)
    broken = str(tmp_path / "short.pt")
    with zipfile.ZipFile(broken, "w") as archive:
        for name, data in members.items():
            archive.writestr(name, data[:8] if name == key else data)
    with pytest.raises(pickle.UnpicklingError, match="declares 4 elements"):
        ta.load(broken)
    stride = pickle.dumps  # a tensor whose stride reaches past its storage
    with pytest.raises(pickle.UnpicklingError, match="reaches past"):
        torch_file._rebuild_tensor_v2(np.zeros(4, np.float32), 0, (3,), (2,), False, None)
    with pytest.raises(pickle.UnpicklingError, match="non-negative"):
        torch_file._rebuild_tensor_v2(np.zeros(4, np.float32), 0, (2,), (-1,), False, None)
    legacy = str(tmp_path / "legacy.pt")
    with open(legacy, "wb") as f:
        pickle.dump({"a": 1}, f, protocol=2)
    with pytest.raises(ta.CheckpointError, match="legacy"):
        ta.load(legacy)
    del stride


def test_torch_runner_saves_and_loads_as_torch(tmp_path):
    import subprocess
    import sys
    script = tmp_path / "prog.py"
    script.write_text(
        "import dataclasses, torch, torch.nn as nn\n"
        "@dataclasses.dataclass\n"
        "class Config:\n    n: int = 2\n"
        "model = nn.Linear(3, 2)\n"
        f"path = {str(tmp_path / 'c.pt')!r}\n"
        "torch.save({'model': model.state_dict(), 'config': Config()}, path)\n"
        "try:\n    torch.load(path)\nexcept Exception as e:\n    print('refused', type(e).__name__)\n"
        "torch.serialization.add_safe_globals([Config])\n"
        "ck = torch.load(path, map_location='cpu')\n"
        "print(ck['config'].n, sorted(ck['model']))\n"
        "torch.save(model, path)\n"
        "print(type(torch.load(path, weights_only=False)).__name__)\n")
    env = dict(os.environ, PYTHONPATH=os.getcwd())
    result = subprocess.run([sys.executable, "-m", "tinyattn", "run-torch", str(script)],
                            capture_output=True, text=True, env=env, timeout=120)
    assert result.returncode == 0, result.stderr
    assert "refused UnpicklingError" in result.stdout
    assert "2 ['bias', 'weight']" in result.stdout and "Linear" in result.stdout
    assert torch.load(str(tmp_path / "c.pt"), weights_only=False).__class__.__name__ == "Linear"


# ---- lazy modules moved before the first forward; torch's printout -----------------------------

@pytest.mark.parametrize("move,dtype", [("to('cpu')", "float32"), ("double()", "float64"),
                                        ("float()", "float32"), ("half()", "float16")])
def test_lazy_linear_moves_and_casts_before_the_first_forward(move, dtype):
    model = nn.Sequential(nn.LazyLinear(3), nn.ReLU())
    assert eval(f"model.{move}") is model
    out = model(ta.randn(2, 5, dtype=dtype))
    assert model[0].weight.shape == (3, 5) and str(model[0].weight.dtype) == dtype
    assert str(out.dtype) == dtype


def test_printout_is_torchs_and_counts_are_in_summary():
    ours = nn.TransformerEncoderLayer(8, 2, 16, batch_first=False)
    theirs = torch.nn.TransformerEncoderLayer(8, 2, 16)
    assert repr(ours) == repr(theirs)
    ours = nn.Sequential(nn.Linear(2, 3), nn.Dropout(0.2), nn.LayerNorm(3, bias=False))
    theirs = torch.nn.Sequential(torch.nn.Linear(2, 3), torch.nn.Dropout(0.2),
                                 torch.nn.LayerNorm(3, bias=False))
    assert repr(ours) == repr(theirs) and "params" not in repr(ours)
    assert ours.summary().splitlines()[0] == "Sequential(  # 12 params"


# ---- names programs import ------------------------------------------------------------------

def test_manual_seed_returns_the_default_generator():
    g = ta.manual_seed(0)
    assert isinstance(g, ta.Generator) and g.initial_seed() == 0
    first = ta.randn(3)
    ta.manual_seed(0)
    assert ta.randn(3, generator=g).tolist() == first.tolist()   # g is the default stream
    assert isinstance(torch.manual_seed(0), torch.Generator)      # the oracle's habit


@pytest.mark.parametrize("name", ["exp_", "sigmoid_", "relu_", "tanh_", "abs_", "sqrt_",
                                  "rsqrt_", "log_", "ceil_", "floor_", "trunc_", "reciprocal_",
                                  "square_", "sin_", "cos_", "log1p_", "expm1_"])
def test_in_place_pointwise_ops_match_torch_with_gradients(name):
    values = np.array([0.3, 1.7, 2.2, 0.9])
    ours_leaf = ta.tensor(values, requires_grad=True)
    theirs_leaf = torch.tensor(values, requires_grad=True)
    ours, theirs = ours_leaf * 1, theirs_leaf * 1
    assert getattr(ours, name)() is ours
    getattr(theirs, name)()
    np.testing.assert_allclose(ours.detach().numpy(), theirs.detach().numpy(), rtol=1e-12)
    ours.sum().backward()
    theirs.sum().backward()
    np.testing.assert_allclose(ours_leaf.grad.numpy(), theirs_leaf.grad.numpy(), rtol=1e-12)
    with pytest.raises(RuntimeError):                   # a leaf that requires grad: refused
        getattr(ta.tensor(values, requires_grad=True), name)()
    if hasattr(torch, name):
        assert getattr(ta, name)(ta.tensor(values)).tolist() == \
            getattr(torch, name)(torch.tensor(values)).tolist()


def test_lerp_in_place_and_signbit():
    a = ta.tensor([1.0, 2.0])
    a.lerp_(ta.tensor([3.0, 6.0]), 0.5)
    assert a.tolist() == [2.0, 4.0]
    values = [-0.0, 0.0, -1.0, math.nan, -math.inf, 3.0]
    for dtype in ("float32", "float64", "float16"):
        assert ta.signbit(ta.tensor(values, dtype=dtype)).tolist() == \
            torch.signbit(torch.tensor(values, dtype=getattr(torch, dtype))).tolist()
    assert ta.tensor([-2, 3]).signbit().tolist() == [True, False]


@pytest.mark.parametrize("kwargs", [{"bins": 4}, {"bins": 3, "range": (0.0, 3.0)},
                                    {"bins": 5, "density": True},
                                    {"bins": "edges", "weight": True, "density": True}])
def test_histogram_matches_torch(kwargs):
    values = np.array([1.0, 2.0, 1.0, 4.0, 2.5, 0.5], np.float32)
    mine, theirs = dict(kwargs), dict(kwargs)
    if kwargs["bins"] == "edges":
        mine["bins"], theirs["bins"] = ta.tensor([0.0, 1.0, 2.0, 5.0]), \
            torch.tensor([0.0, 1.0, 2.0, 5.0])
    if kwargs.get("weight"):
        w = np.arange(6, dtype=np.float32)
        mine["weight"], theirs["weight"] = ta.from_numpy(w), torch.from_numpy(w)
    ours = ta.histogram(ta.from_numpy(values), **mine)
    ref = torch.histogram(torch.from_numpy(values), **theirs)
    np.testing.assert_allclose(ours.hist.numpy(), ref.hist.numpy(), rtol=1e-6)
    np.testing.assert_allclose(ours.bin_edges.numpy(), ref.bin_edges.numpy(), rtol=1e-6)
    with pytest.raises(RuntimeError, match="not finite"):
        ta.histogram(ta.tensor([1.0, math.inf]), bins=2)


def test_legacy_initialisers_warn_as_torch_and_initialise():
    weight = ta.zeros(4, 4)
    with pytest.warns(FutureWarning, match="kaiming_uniform_"):
        nn.init.kaiming_uniform(weight)
    assert weight.abs().sum().item() > 0


def test_runner_reaches_the_names_programs_import(tmp_path):
    import subprocess
    import sys
    script = tmp_path / "prog.py"
    script.write_text(
        "from torch.nn.modules.linear import NonDynamicallyQuantizableLinear, Linear\n"
        "from torch.nn.modules.activation import MultiheadAttention, ReLU\n"
        "from torch.nn.modules.container import Sequential, ModuleList\n"
        "from torch.nn.modules.dropout import Dropout\n"
        "from torch.nn.modules.normalization import LayerNorm\n"
        "from torch.nn.modules.sparse import Embedding\n"
        "from torch.nn.modules.transformer import TransformerEncoder\n"
        "from torch.utils.data.dataset import Dataset, TensorDataset\n"
        "from torch.utils.data.sampler import RandomSampler, Sampler\n"
        "from torch.utils.data.dataloader import DataLoader\n"
        "import torch\n"
        "print(torch.ByteTensor([1, 2]).dtype, torch.LongTensor([1]).dtype)\n"
        "print(type(torch.manual_seed(0)).__name__)\n")
    result = subprocess.run([sys.executable, "-m", "tinyattn", "run-torch", str(script)],
                            capture_output=True, text=True, timeout=120,
                            env=dict(os.environ, PYTHONPATH=os.getcwd()))
    assert result.returncode == 0, result.stderr
    assert "torch.uint8 torch.int64" in result.stdout and "Generator" in result.stdout


# ---- grad_fn prints torch's node names ---------------------------------------------------------

def _grad_fn_cases(m):
    F = m.nn.functional
    rng = np.random.default_rng(0)
    x = m.tensor(rng.standard_normal((2, 3)), requires_grad=True)
    x3 = m.tensor(rng.standard_normal((5, 2, 3)), requires_grad=True)
    w = m.tensor(rng.standard_normal((4, 3)), requires_grad=True)
    b = m.tensor(rng.standard_normal(4), requires_grad=True)
    return {
        "add": x + 1, "linear": F.linear(x, w, b), "linear no bias": F.linear(x, w),
        "linear 3-d": F.linear(x3, w, b), "cross_entropy": F.cross_entropy(x, m.tensor([0, 1])),
        "layer_norm": F.layer_norm(x, (3,)), "select": x[0], "slice": x[:, 1:],
        "index": x[[0, 1]], "mask": x[x > 0], "column": x[:, 0], "unsqueeze": x[..., None],
        "mm": x @ w.T, "cat": m.cat([x, x]), "view": x.reshape(6), "sum": x.sum(),
        "softmax": F.softmax(x, -1), "batch_norm": m.nn.BatchNorm1d(3).double()(x),
    }


def test_grad_fn_names_are_torchs():
    ours, theirs = _grad_fn_cases(ta), _grad_fn_cases(torch)
    for key in theirs:
        assert ours[key].grad_fn.name() == theirs[key].grad_fn.name(), key
        assert repr(ours[key].grad_fn).startswith(f"<{theirs[key].grad_fn.name()} object at ")
        assert f"grad_fn=<{theirs[key].grad_fn.name()}>" in repr(ours[key])
    assert type(ours["linear"].grad_fn).__name__ == "Linear"   # tinyattn's own Function


# ---- torch.utils.benchmark, torch.onnx, pad crops -------------------------------------------

def test_benchmark_timer_measures_and_prints_as_torch():
    from tinyattn.utils.benchmark import Timer
    timer = Timer(stmt="x @ x", setup="x = ta.randn(8, 8)", globals={"ta": ta})
    once = timer.timeit(20)
    assert once.number_per_run == 20 and len(once.times) == 1 and once.mean > 0
    text = str(once).splitlines()
    assert text[0].startswith("<torch.utils.benchmark.utils.common.Measurement object at")
    assert text[1:3] == ["x @ x", "setup: x = ta.randn(8, 8)"]
    assert text[-1] == "  1 measurement, 20 runs , 1 thread"
    blocks = timer.blocked_autorange(min_run_time=0.02)
    assert len(blocks.times) >= 1 and blocks.median > 0 and blocks.iqr >= 0
    import torch.utils.benchmark  # noqa: F401 - torch loads it on import only
    theirs = torch.utils.benchmark.Timer(stmt="x @ x", setup="x = torch.randn(8, 8)",
                                         globals={"torch": torch}).timeit(20)
    assert str(theirs).splitlines()[-1] == text[-1]


def test_onnx_is_importable_and_export_says_what_is_missing(tmp_path):
    import subprocess
    import sys
    script = tmp_path / "prog.py"
    script.write_text("import torch, torch.onnx\nprint(torch.onnx.is_in_onnx_export())\n"
                      "torch.onnx.export(torch.nn.Linear(2, 2), torch.randn(1, 2), 'm.onnx')\n")
    result = subprocess.run([sys.executable, "-m", "tinyattn", "run-torch", str(script)],
                            capture_output=True, text=True, timeout=120, cwd=tmp_path,
                            env=dict(os.environ, PYTHONPATH=os.getcwd()))
    assert "False" in result.stdout and result.returncode != 0
    assert "torch.onnx.export" in result.stderr and "ONNX" in result.stderr
    assert not (tmp_path / "m.onnx").exists()


@pytest.mark.parametrize("mode", ["constant", "reflect", "replicate", "circular"])
@pytest.mark.parametrize("amounts", [(0, -5), (-1, 2), (-2, -2), (2, -1)])
def test_pad_with_negative_amounts_crops_as_torch(mode, amounts):
    x = np.arange(12.0).reshape(2, 6)
    ours = ta.nn.functional.pad(ta.from_numpy(x), amounts, mode=mode)
    theirs = torch.nn.functional.pad(torch.from_numpy(x), amounts, mode=mode)
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


# ---- printing with set_printoptions(sci_mode=...) ---------------------------------------------

_PRINT_CASES = [[[1.5, 2.0, 300.0], [0.001, 1e5, -7.25]], [1.0, 2.0, 3.0] * 10, 3.5,
                [1e-10, 1.0, 1e10], [0.0, 0.0], [math.inf, 1.0, -math.nan],
                [[1e-3, 123456.0], [-2.5, 0.0]], [-1e-5, 3e8], [7.0]]


@pytest.mark.parametrize("sci_mode", [True, False, None])
def test_printing_with_sci_mode_is_torchs(sci_mode):
    try:
        for data in _PRINT_CASES:
            ta.set_printoptions(sci_mode=sci_mode)
            torch.set_printoptions(sci_mode=sci_mode)
            assert repr(ta.tensor(data)) == repr(torch.tensor(data)), data
        assert repr(ta.arange(2000.0) / 7) == repr(torch.arange(2000.0) / 7)
    finally:
        ta.set_printoptions(profile="default")
        torch.set_printoptions(profile="default")


# ---- a custom autograd.Function with several outputs ---------------------------------------------

def _split_function(m):
    class Split(m.autograd.Function):
        @staticmethod
        def forward(ctx, x, scale):
            ctx.save_for_backward(x)
            ctx.scale = scale
            index = x.argmax()
            ctx.mark_non_differentiable(index)
            return x * scale, x.exp(), index, "label"

        @staticmethod
        def backward(ctx, g_scaled, g_exp, g_index, g_label=None):
            (x,) = ctx.saved_tensors
            return g_scaled * ctx.scale + g_exp * x.exp(), None
    return Split


@pytest.mark.parametrize("use", ["both", "first", "second"])
def test_custom_function_with_several_outputs_matches_torch(use):
    grads = []
    for m in (ta, torch):
        x = m.tensor([1.0, 2.0, 0.5], requires_grad=True)
        scaled, exp, index, label = _split_function(m).apply(x, 3.0)
        assert label == "label" and not index.requires_grad and scaled.requires_grad
        loss = {"both": scaled.sum() + (exp * 2).sum(), "first": scaled.sum(),
                "second": exp.sum()}[use]
        loss.backward()
        grads.append(x.grad.numpy().copy())
    np.testing.assert_allclose(grads[0], grads[1], rtol=1e-6)


# ---- no backward gives -0.0 where torch gives 0.0 ------------------------------------------------

_ZERO_SIGN_OPS = {
    "max": lambda m, x: x.max(), "min": lambda m, x: x.min(), "amax": lambda m, x: x.amax(0),
    "relu": lambda m, x: x.relu(), "abs": lambda m, x: x.abs(),
    "clamp": lambda m, x: x.clamp(-1, 1), "where": lambda m, x: m.where(x > 0, x, 0 * x),
    "masked_fill": lambda m, x: x.masked_fill(x < 0, 0.0), "getitem": lambda m, x: x[1:3],
    "pad": lambda m, x: m.nn.functional.pad(x, (1, 1)), "mul0": lambda m, x: x * 0,
    "hardtanh": lambda m, x: m.nn.functional.hardtanh(x), "std": lambda m, x: x.std(),
}


@pytest.mark.parametrize("name", list(_ZERO_SIGN_OPS))
def test_backward_zero_signs_are_torchs(name):
    signs = []
    for m in (ta, torch):
        x = m.tensor([-2.0, -0.5, 0.0, 0.5, 2.0], requires_grad=True)
        y = _ZERO_SIGN_OPS[name](m, x)
        y.backward(m.tensor(np.full(tuple(y.shape), -1.0)))
        grad = x.grad.numpy()
        signs.append(np.signbit(grad) & (grad == 0))
    np.testing.assert_array_equal(signs[0], signs[1])


# ---- nn.TransformerEncoder: torch's fast path gives zeros at padded positions -----------------

@pytest.mark.parametrize("batch_first,grad,training", [(True, False, False), (False, False, False),
                                                       (True, True, False), (True, False, True)])
def test_transformer_encoder_padded_positions_as_torch(batch_first, grad, training):
    import warnings
    rng = np.random.default_rng(4)
    x = rng.standard_normal((2, 4, 8)).astype(np.float32)
    pad = np.array([[False, False, True, True], [False, False, False, False]])
    outputs = []
    for m in (ta, torch):
        m.manual_seed(0)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            layer = m.nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, batch_first=batch_first)
            encoder = m.nn.TransformerEncoder(layer, 2)
        encoder.train(training)
        outputs.append((m, encoder))
    ours, theirs = outputs[0][1], outputs[1][1]
    with torch.no_grad():
        for (name, p), (_, q) in zip(theirs.named_parameters(), ours.named_parameters()):
            p.copy_(torch.from_numpy(q.detach().numpy()))
    src = x if batch_first else x.transpose(1, 0, 2)
    context = (lambda m: m.enable_grad()) if grad else (lambda m: m.no_grad())
    with context(ta):
        mine = ours(ta.from_numpy(src), src_key_padding_mask=ta.from_numpy(pad)).detach()
    with context(torch), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ref = theirs(torch.from_numpy(src), src_key_padding_mask=torch.from_numpy(pad)).detach()
    np.testing.assert_allclose(mine.numpy(), ref.numpy(), rtol=1e-4, atol=1e-5)


# ---- nn.MultiheadAttention(add_bias_kv=True, add_zero_attn=True) ---------------------------------

@pytest.mark.parametrize("bias_kv,zero_attn", [(True, False), (False, True), (True, True)])
@pytest.mark.parametrize("masks", [False, True])
def test_multihead_attention_bias_kv_and_zero_attn_match_torch(bias_kv, zero_attn, masks):
    ours = nn.MultiheadAttention(8, 2, add_bias_kv=bias_kv, add_zero_attn=zero_attn,
                                 batch_first=True)
    theirs = torch.nn.MultiheadAttention(8, 2, add_bias_kv=bias_kv, add_zero_attn=zero_attn,
                                         batch_first=True)
    assert [n for n, _ in ours.named_parameters()] == [n for n, _ in theirs.named_parameters()]
    with torch.no_grad():
        for (_, p), (_, q) in zip(theirs.named_parameters(), ours.named_parameters()):
            p.copy_(torch.from_numpy(q.detach().numpy()))
    x = np.random.default_rng(6).standard_normal((2, 3, 8)).astype(np.float32)
    kwargs_ours, kwargs_theirs = {}, {}
    if masks:
        pad = np.array([[False, False, True], [False, False, False]])
        causal = np.triu(np.ones((3, 3), bool), 1)
        kwargs_ours = {"key_padding_mask": ta.from_numpy(pad), "attn_mask": ta.from_numpy(causal)}
        kwargs_theirs = {"key_padding_mask": torch.from_numpy(pad),
                         "attn_mask": torch.from_numpy(causal)}
    out, weights = ours(ta.from_numpy(x), ta.from_numpy(x), ta.from_numpy(x), **kwargs_ours)
    ref, ref_weights = theirs(torch.from_numpy(x), torch.from_numpy(x), torch.from_numpy(x),
                              **kwargs_theirs)
    np.testing.assert_allclose(out.detach().numpy(), ref.detach().numpy(), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(weights.detach().numpy(), ref_weights.detach().numpy(),
                               rtol=1e-4, atol=1e-5)


def test_transformer_encoder_nested_tensor_notice_is_torchs():
    import warnings
    for kwargs in ({}, {"batch_first": True, "norm_first": True}, {"batch_first": True}):
        texts = []
        for m in (ta, torch):
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                m.nn.TransformerEncoder(m.nn.TransformerEncoderLayer(8, 2, **kwargs), 2)
            texts.append([str(w.message) for w in caught if "nested" in str(w.message)])
        assert texts[0] == texts[1]
