"""The torch names learners' codebases call, each used as a caller uses it.

The caller scripts in tests/learner_names/ run twice, with real torch and through
``python -m tinyattn run-torch``; their printouts must agree number for number (float64
values, rtol 1e-9). The other tests check what a printout cannot: a Generator's streams,
assert_close's messages, refusals and the differences docs/pytorch.md documents.
"""
from __future__ import annotations

import io
import os
import subprocess
import sys

import numpy as np
import pytest

import tinyattn as ta
import tinyattn.functional as F
import tinyattn.nn as nn
from test_pytorch_programs import compare_outputs

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCRIPTS = os.path.join(ROOT, "tests", "learner_names")
ENV = dict(os.environ, PYTHONPATH=ROOT, OMP_NUM_THREADS="1")


def _run(*command: str) -> str:
    result = subprocess.run([sys.executable, *command], capture_output=True, text=True,
                            cwd=SCRIPTS, env=ENV, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    return result.stdout


@pytest.mark.parametrize("script", ["ops_script.py", "index_script.py", "layers_script.py",
                                    "runtime_script.py"])
def test_caller_script_prints_torchs_numbers(script):
    pytest.importorskip("torch", reason="torch is the reference for these scripts")
    on_torch = _run(script)
    on_tinyattn = _run("-m", "tinyattn", "run-torch", script)
    assert on_torch.strip()
    problems = compare_outputs(on_torch, on_tinyattn, 1e-9, 1e-12)
    assert not problems, "\n".join(problems[:5])


def test_the_comparison_fails_on_a_changed_number():
    """Negative control: one digit changed is caught."""
    assert compare_outputs("sinh [0.3045202934]", "sinh [0.3045212934]", 1e-9, 1e-12)


# ------------------------------------------------------------------ Generator
def test_generator_streams_are_reproducible_and_independent_of_the_global_seed():
    draws = []
    for global_seed in (0, 123):
        ta.manual_seed(global_seed)
        g = ta.Generator().manual_seed(7)
        draws.append((ta.randperm(6, generator=g).tolist(),
                      ta.randint(0, 10, (4,), generator=g).tolist(),
                      ta.rand(3, generator=g).tolist(), ta.randn(2, generator=g).tolist(),
                      ta.multinomial(ta.tensor([0.2, 0.3, 0.5]), 4, replacement=True,
                                     generator=g).tolist(),
                      ta.normal(0.0, 1.0, (2,), generator=g).tolist()))
    assert draws[0] == draws[1]
    other = ta.Generator().manual_seed(8)
    assert ta.randperm(6, generator=other).tolist() != draws[0][0] or \
        ta.rand(3, generator=other).tolist() != draws[0][2]     # negative control


def test_generator_drives_dataloader_and_random_split_without_touching_the_global_stream():
    from tinyattn.utils.data import DataLoader, TensorDataset, random_split
    data = TensorDataset(ta.arange(10.0))
    orders = []
    for _ in range(2):
        ta.manual_seed(5)
        before = ta.rand(1).item()
        ta.manual_seed(5)
        loader = DataLoader(data, batch_size=10, shuffle=True,
                            generator=ta.Generator().manual_seed(3))
        order = next(iter(loader))[0].tolist()
        left, right = random_split(data, [0.7, 0.3], generator=ta.Generator().manual_seed(3))
        orders.append((order, list(left.indices), list(right.indices)))
        assert ta.rand(1).item() == before        # the global stream was not consumed
    assert orders[0] == orders[1] and sorted(orders[0][0]) == list(range(10))


def test_generator_state_round_trips_and_defaults_to_torchs_seed():
    g = ta.Generator()
    assert g.initial_seed() == 67280421310721
    state = g.get_state()
    first = ta.rand(3, generator=g).tolist()
    g.set_state(state)
    assert ta.rand(3, generator=g).tolist() == first
    with pytest.raises(RuntimeError, match="get_state"):
        g.set_state(ta.tensor([1, 2, 3], dtype="uint8"))


# ------------------------------------------------------------------ testing.assert_close
def _message(actual, expected, **options):
    with pytest.raises((AssertionError, TypeError, ValueError)) as info:
        ta.testing.assert_close(actual, expected, **options)
    return type(info.value).__name__, " ".join(str(info.value).split())


CLOSE_CASES = [
    ([1.0, 2.0, 3.0], [1.0, 2.5, 3.0], {}),
    ([[1.0, 2.0], [3.0, 4.0]], [[1.0, 2.0], [3.0, 4.1]], {}),
    ([1, 2], [1, 3], {}),
    ([float("nan")], [float("nan")], {}),
    ([1.0, 2.0], [1.0, 2.0, 3.0], {}),
    ([0.0], [1.0], {"msg": "custom"}),
    ([1.0, 2.0], [1.0, 2.0], {"rtol": 0.1}),
]


@pytest.mark.parametrize("actual,expected,options", CLOSE_CASES)
def test_assert_close_messages_are_torchs(actual, expected, options):
    torch = pytest.importorskip("torch", reason="torch is the reference")
    with pytest.raises((AssertionError, ValueError)) as reference:
        torch.testing.assert_close(torch.tensor(actual), torch.tensor(expected), **options)
    assert _message(ta.tensor(actual), ta.tensor(expected), **options) == (
        type(reference.value).__name__, " ".join(str(reference.value).split()))


def test_assert_close_defaults_per_dtype_equal_nan_check_dtype_and_containers():
    torch = pytest.importorskip("torch", reason="torch is the reference")
    for dtype in ("float16", "float32", "float64"):
        for delta in (5e-6, 5e-4, 5e-2):
            a, e = [1.0, 2.0], [1.0, 2.0 + delta]
            try:
                torch.testing.assert_close(torch.tensor(a, dtype=getattr(torch, dtype)),
                                           torch.tensor(e, dtype=getattr(torch, dtype)))
                expected_pass = True
            except AssertionError:
                expected_pass = False
            try:
                ta.testing.assert_close(ta.tensor(a, dtype=dtype), ta.tensor(e, dtype=dtype))
                passed = True
            except AssertionError:
                passed = False
            assert passed == expected_pass, (dtype, delta)
    ta.testing.assert_close(ta.tensor([float("nan")]), ta.tensor([float("nan")]),
                            equal_nan=True)
    ta.testing.assert_close(ta.tensor([1.0]), ta.tensor([1.0], dtype="float64"),
                            check_dtype=False)
    assert "dtype" in _message(ta.tensor([1.0]), ta.tensor([1.0], dtype="float64"))[1]
    name, text = _message({"a": [ta.tensor(1.0)]}, {"a": [ta.tensor(2.0)]})
    assert name == "AssertionError" and text.endswith("item ['a'][0]")
    assert "Expected 1.5 but got 1.0" in _message(1.0, 1.5)[1]
    assert _message(ta.tensor([1.0]), 1.0)[0] == "TypeError"


# ------------------------------------------------------------------ refusals and differences
def test_scatter_reduce_with_a_tensor_src_names_the_way_that_works():
    with pytest.raises(NotImplementedError, match="scatter_reduce"):
        ta.zeros(3).scatter(0, ta.tensor([0]), ta.ones(1), reduce="add")
    with pytest.raises(ValueError, match="'add' or 'multiply'"):
        ta.zeros(3).scatter(0, ta.tensor([0]), 1.0, reduce="mean")
    with pytest.raises(ValueError, match="sum, prod, mean, amax, amin"):
        ta.zeros(3).scatter_reduce(0, ta.tensor([0]), ta.ones(1), "max")


def test_scatter_reduce_prod_with_zero_factors_has_the_product_of_the_others():
    """Division would give NaN where a factor is 0: the gradient is the other factors'."""
    x = ta.tensor([2.0, 3.0], dtype="float64", requires_grad=True)
    src = ta.tensor([0.0, 5.0, 0.0, 4.0], dtype="float64", requires_grad=True)
    out = x.scatter_reduce(0, ta.tensor([0, 0, 1, 1]), src, "prod")
    out.sum().backward()
    assert out.tolist() == [0.0, 0.0]
    assert x.grad.tolist() == [0.0, 0.0]
    assert src.grad.tolist() == [10.0, 0.0, 12.0, 0.0]
    assert ta.gradcheck(lambda s: x.detach().scatter_reduce(0, ta.tensor([0, 0, 1, 1]), s,
                                                            "prod"), [src])


def test_scatter_reduce_amin_without_self_splits_with_an_equal_self_as_torch():
    """torch counts self among the ties when it equals the result, even with
    include_self=False (the src gradient then sums to 0.5); tinyattn follows torch. Where
    self differs from the result, the gradcheck holds."""
    src = ta.tensor([1.0, 4.0], dtype="float64", requires_grad=True)
    x = ta.tensor([1.0], dtype="float64")
    out = x.scatter_reduce(0, ta.tensor([0, 0]), src, "amin", include_self=False)
    out.sum().backward()
    assert src.grad.tolist() == [0.5, 0.0]
    away = ta.tensor([7.0], dtype="float64")
    assert ta.gradcheck(lambda s: away.scatter_reduce(0, ta.tensor([0, 0]), s, "amin",
                                                      include_self=False), [src])


def test_pad_modes_refuse_what_torch_refuses():
    with pytest.raises(ValueError, match="2-D or 3-D"):
        F.pad(ta.randn(2, 3, 4, 5), (1, 1), mode="reflect")
    with pytest.raises(ValueError, match="at most 3"):
        F.pad(ta.randn(1, 4), (4, 0), mode="reflect")
    with pytest.raises(ValueError, match="only to mode 'constant'"):
        F.pad(ta.randn(1, 4), (1, 1), mode="replicate", value=2.0)


def test_lazy_parameters_refuse_reads_and_save_as_torch_before_the_first_forward(tmp_path):
    layer = nn.LazyLinear(3)
    with pytest.raises(RuntimeError, match="uninitialized parameter"):
        layer.weight.numel()
    ta.save(layer.state_dict(), str(tmp_path / "lazy.pt"))   # pickled as torch pickles it
    layer(ta.ones(2, 4))
    assert type(layer) is nn.Linear and layer.weight.shape == (3, 4)


def test_bincount_weights_are_differentiable_and_inputs_checked():
    """torch gives bincount no derivative; tinyattn's weighted bincount is an index_add."""
    w = ta.tensor([0.5, 1.0, 2.0], dtype="float64", requires_grad=True)
    (ta.bincount(ta.tensor([0, 2, 2]), weights=w) * ta.tensor([1.0, 2.0, 3.0],
                                                               dtype="float64")).sum().backward()
    assert w.grad.tolist() == [1.0, 3.0, 3.0]
    with pytest.raises(ValueError, match="non-negative"):
        ta.bincount(ta.tensor([-1, 2]))
    with pytest.raises(TypeError, match="1-d non-negative integral"):
        ta.bincount(ta.tensor([1.0]))


def test_save_and_load_with_file_objects():
    buffer = io.BytesIO()
    ta.save({"w": np.arange(3.0)}, buffer)
    buffer.seek(0)
    assert ta.load(buffer)["w"].tolist() == [0.0, 1.0, 2.0]
    with pytest.raises(ta.CheckpointError, match="cannot read"):
        ta.load(io.BytesIO(b"PK\x03\x04 not a zip"))


def test_print_options_change_the_repr_and_profiles_restore_it():
    x = ta.tensor([1.23456, 2.0])
    before = repr(x)
    try:
        ta.set_printoptions(precision=2)
        assert "1.23" in repr(x) and "1.2346" not in repr(x)
        ta.set_printoptions(sci_mode=True)
        assert "e+00" in repr(x)
        with pytest.raises(ValueError, match="profile"):
            ta.set_printoptions(profile="long")
    finally:
        ta.set_printoptions(profile="default")     # torch's defaults, which tinyattn starts with
    assert repr(x) == before


def test_default_device_context_restores_the_previous_device():
    from tinyattn.torch_shim import device
    with device("cpu"):
        assert ta.get_default_device() == "cpu" and ta.zeros(1).device == "cpu"
    assert ta.get_default_device() == "cpu"
    with pytest.raises(ValueError, match="unknown device"):
        ta.set_default_device("tpu")
