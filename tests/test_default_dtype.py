"""``set_default_dtype`` / ``get_default_dtype`` as torch's: one process-wide default float
dtype (tinyattn/precision.py) that every place deciding "the default float" asks: Python
floats and complex numbers in ``tensor``, the float factories without dtype=, integer
tensors meeting Python floats or float ops, nn parameters and buffers made at construction,
optimizer 0-d state, ``finfo()`` and the repr (which leaves out the default dtype).

Each test sets the same default in torch and in tinyattn and compares dtypes (and values
where they are deterministic), and puts both back to float32 in a ``finally`` (the suite runs
in parallel workers; a test that leaked a float64 default would change the next test's
dtypes). A negative control checks that the comparison can fail: after the reset the two
defaults differ from float64 again.
"""
from __future__ import annotations

import contextlib
import os
import subprocess
import sys

import numpy as np
import pytest

import tinyattn
from tinyattn import precision, printing

torch = pytest.importorskip("torch", reason="the default dtype is compared with torch's")

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@contextlib.contextmanager
def default(name):
    """torch's and tinyattn's default float dtype set to ``name`` inside the block."""
    try:
        torch.set_default_dtype(getattr(torch, name))
        tinyattn.set_default_dtype(name)
        yield
    finally:
        torch.set_default_dtype(torch.float32)
        tinyattn.set_default_dtype("float32")


@pytest.fixture(autouse=True)
def _reset():
    """Each test starts and ends at float32 (also if it failed half-way)."""
    assert precision.get_default_dtype() == np.float32
    yield
    torch.set_default_dtype(torch.float32)
    tinyattn.set_default_dtype("float32")


def _name(dtype):
    return str(dtype).replace("torch.", "")


def _same_dtype(program, name):
    with default(name):
        ours, theirs = program(tinyattn), program(torch)
    assert _name(ours.dtype) == _name(theirs.dtype), (ours.dtype, theirs.dtype)
    return ours, theirs


# ------------------------------------------------------------------ which dtypes are taken
@pytest.mark.parametrize("name", ["float16", "bfloat16", "float32", "float64"])
def test_floating_dtypes_are_accepted_and_read_back(name):
    with default(name):
        assert _name(tinyattn.get_default_dtype()) == _name(torch.get_default_dtype()) == name
    assert tinyattn.get_default_dtype() == np.float32


@pytest.mark.parametrize("name", ["int64", "int32", "bool", "complex64", "complex128", "uint8"])
def test_other_dtypes_are_refused_with_torchs_error_and_change_nothing(name):
    with pytest.raises(TypeError) as theirs:
        torch.set_default_dtype(getattr(torch, name))
    with pytest.raises(TypeError) as ours:
        tinyattn.set_default_dtype(name)
    assert str(ours.value) == str(theirs.value)
    assert tinyattn.get_default_dtype() == np.float32


@pytest.mark.parametrize("value", [None, float, 3])
def test_non_dtypes_are_refused_as_torch(value):
    with pytest.raises(TypeError) as theirs:
        torch.set_default_dtype(value)
    with pytest.raises(TypeError) as ours:
        tinyattn.set_default_dtype(value)
    assert str(ours.value) == str(theirs.value)


# ------------------------------------------------------------------ what the default decides
LITERALS = {
    "list of floats": lambda m: m.tensor([1.5, -0.1]),
    "float number": lambda m: m.tensor(2.5),
    "ints and floats": lambda m: m.tensor([1, 2.5]),
    "nested": lambda m: m.tensor([[1.0], [2.5]]),
    "0-d tensor and a float": lambda m: m.tensor([m.tensor(1), 2.5]),
    "as_tensor": lambda m: m.as_tensor([0.1]),
    "legacy Tensor(data)": lambda m: m.Tensor([1.5]),
    "legacy Tensor(size)": lambda m: m.Tensor(2).zero_(),
    "ints stay int64": lambda m: m.tensor([1, 2]),
    "bools stay bool": lambda m: m.tensor([True]),
    "NumPy float32 keeps its dtype": lambda m: m.tensor(np.float32(1.5)),
    "NumPy float64 in a list": lambda m: m.tensor([np.float64(0.1)]),
}

FACTORIES = {
    "zeros": lambda m: m.zeros(2), "ones": lambda m: m.ones(2, 3),
    "empty": lambda m: m.empty(2).zero_(),
    "full float": lambda m: m.full((2,), 0.1), "full int": lambda m: m.full((2,), 3),
    "full bool": lambda m: m.full((2,), True), "eye": lambda m: m.eye(2),
    "arange float bounds": lambda m: m.arange(0, 1, 0.25), "arange ints": lambda m: m.arange(3),
    "linspace": lambda m: m.linspace(0, 1, 7), "logspace": lambda m: m.logspace(0, 1, 5),
    "scalar_tensor": lambda m: m.scalar_tensor(3), "empty_strided": lambda m:
        m.empty_strided((2,), (1,)).zero_(), "fftfreq": lambda m: m.fft.fftfreq(5),
    "zeros_like keeps float32": lambda m: m.zeros_like(m.zeros(2, dtype=m.float32)),
    "full_like keeps int64": lambda m: m.full_like(m.tensor([1, 2]), 2.5),
    "rand dtype": lambda m: m.rand(2).zero_(), "randn dtype": lambda m: m.randn(2).zero_(),
    "randint stays int64": lambda m: m.randint(0, 3, (2,)).zero_(),
    "rand_like keeps float32": lambda m: m.rand_like(m.zeros(2, dtype=m.float32)).zero_(),
}

INTEGER_OPS = {
    "int * float": lambda m: m.tensor([1, 2, 3]) * 0.1,
    "float * int": lambda m: 2.5 * m.tensor([1, 2, 3]),
    "int / int": lambda m: m.tensor([1, 2, 3]) / 3,
    "int / int tensor": lambda m: m.tensor([1, 2, 3]) / m.tensor([3, 3, 3]),
    "true_divide": lambda m: m.true_divide(m.tensor([1, 2]), 3),
    "int ** 0.5": lambda m: m.tensor([1, 2, 3]) ** 0.5,
    "bool * float": lambda m: m.tensor([True, False]) * 2.5,
    "sqrt": lambda m: m.sqrt(m.tensor([1, 2, 3])), "exp": lambda m: m.exp(m.tensor([1, 2])),
    "log": lambda m: m.log(m.tensor([1, 2])), "sin": lambda m: m.sin(m.tensor([1, 2])),
    "sigmoid": lambda m: m.sigmoid(m.tensor([1, 2])), "erf": lambda m: m.erf(m.tensor([1, 2])),
    "reciprocal": lambda m: m.reciprocal(m.tensor([3, 7])),
    "atan2": lambda m: m.atan2(m.tensor([1, 2]), m.tensor([3, 3])),
    "xlogy": lambda m: m.xlogy(m.tensor([1, 2]), m.tensor([3, 3])),
    "angle": lambda m: m.angle(m.tensor([-1, 2])),
    "where with a float": lambda m: m.where(m.tensor([True, False]), 1.5, 0),
    "clamp by a float": lambda m: m.clamp(m.tensor([1, 2]), 1.5),
    "int meets a 0-d float32": lambda m: m.tensor([1, 2]) * m.tensor(2.5, dtype=m.float32),
    "float32 tensor * float stays": lambda m: m.zeros(2, dtype=m.float32) + 0.1,
    "fft of ints": lambda m: m.fft.fft(m.tensor([1, 2, 3, 4])),
    "float32 tensor + complex": lambda m: m.ones(2, dtype=m.float32) * 1j,
    "int tensor * complex": lambda m: m.tensor([1, 2]) * (1 + 2j),
    "complex literal": lambda m: m.tensor([1 + 2j]),
    "full complex": lambda m: m.full((2,), 1j),
    "ints and complex": lambda m: m.tensor([1, 2j]),
}


@pytest.mark.parametrize("name", ["float64", "float16", "bfloat16"])
@pytest.mark.parametrize("case", list(LITERALS) + list(FACTORIES))
def test_literals_and_factories_as_torch(case, name):
    program = {**LITERALS, **FACTORIES}[case]
    ours, theirs = _same_dtype(program, name)
    if "rand" not in case:
        np.testing.assert_array_equal(ours.float().numpy(), theirs.float().numpy())


@pytest.mark.parametrize("name", ["float64", "float16", "float32"])
@pytest.mark.parametrize("case", list(INTEGER_OPS))
def test_integer_operands_take_the_default_as_torch(case, name):
    if name == "float16" and ("complex" in case or "fft" in case or "1j" in case):
        pytest.skip("complex32 (torch's complex of a float16 default): see the next test")
    ours, theirs = _same_dtype(INTEGER_OPS[case], name)
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-3 if name == "float16"
                               else 1e-6)


def test_complex_under_a_half_default_is_refused_loudly():
    """torch makes complex32 under a float16 default, which tinyattn does not have; under a
    bfloat16 default torch itself refuses. Both raise here, never a silent complex64."""
    with default("float16"):
        with pytest.raises(NotImplementedError, match="complex32"):
            tinyattn.tensor([1 + 2j])
        assert tinyattn.tensor([1 + 2j], dtype=tinyattn.complex64).dtype == np.complex64
    with default("bfloat16"):
        with pytest.raises(RuntimeError) as theirs:
            torch.tensor([1j])
        with pytest.raises(RuntimeError) as ours:
            tinyattn.tensor([1j])
        assert str(ours.value) == str(theirs.value)


COMPLEX_NUMBERS = {
    "int tensor * complex": lambda m: m.tensor([1, 2]) * 1j,
    "bool 0-d * complex": lambda m: m.tensor(True) * 1j,
    "float32 tensor * complex": lambda m: m.ones(2, dtype=m.float32) * 1j,
    "float64 tensor + complex": lambda m: m.ones(2, dtype=m.float64) + 2j,
    "bfloat16 tensor * complex": lambda m: m.ones(2, dtype=m.bfloat16) * 1j,
    "where of two numbers": lambda m: m.where(m.tensor([True, False]), 1j, 0),
    "full complex": lambda m: m.full((2,), 1j),
    "complex64 tensor * complex": lambda m: m.tensor([1j], dtype=m.complex64) * 1j,
}


@pytest.mark.parametrize("name", ["bfloat16", "float64", "float16"])
@pytest.mark.parametrize("case", list(COMPLEX_NUMBERS))
def test_complex_numbers_promote_as_torch(case, name):
    """A Python complex number in promotion is torch's default complex dtype: complex128
    under float64, complex64 under float32 and bfloat16 (where tensor([1j]) itself is
    refused), complex32 under float16: refused here (tinyattn has no complex32), and only
    where torch's result really is complex32."""
    program = COMPLEX_NUMBERS[case]
    with default(name):
        theirs = program(torch)
        if name == "float16" and theirs.dtype == torch.complex32:
            with pytest.raises(NotImplementedError, match="complex32"):
                program(tinyattn)
            return
        ours = program(tinyattn)
    assert _name(ours.dtype) == _name(theirs.dtype)
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


def test_python_float_and_complex_types_as_dtype_are_double_as_torch():
    """dtype=float is torch.float64 and dtype=complex complex128, whatever the default."""
    for name in ("float32", "float64"):
        with default(name):
            for kind in (float, complex):
                assert _name(tinyattn.zeros(2, dtype=kind).dtype) == \
                    _name(torch.zeros(2, dtype=kind).dtype)


def test_finfo_without_a_dtype_is_the_default():
    with default("float64"):
        assert tinyattn.finfo().eps == torch.finfo().eps
    assert tinyattn.finfo().eps == torch.finfo().eps == np.finfo(np.float32).eps


def test_integer_mean_takes_the_default():
    """torch refuses the mean of an integer tensor; tinyattn's documented extension gives the
    default float dtype (float32, float64 under a float64 default)."""
    with default("float64"):
        assert tinyattn.tensor([1, 2]).mean().dtype == np.float64
    assert tinyattn.tensor([1, 2]).mean().dtype == np.float32


# ------------------------------------------------------------------ nn and optim
MODULES = {
    "Linear": lambda nn: nn.Linear(3, 2), "Embedding": lambda nn: nn.Embedding(4, 3),
    "LayerNorm": lambda nn: nn.LayerNorm(3), "Conv1d": lambda nn: nn.Conv1d(2, 2, 3),
    "Conv2d": lambda nn: nn.Conv2d(1, 2, 2), "RNN": lambda nn: nn.RNN(3, 2),
    "LSTM": lambda nn: nn.LSTM(3, 2), "GRU": lambda nn: nn.GRU(3, 2),
    "BatchNorm1d": lambda nn: nn.BatchNorm1d(3), "GroupNorm": lambda nn: nn.GroupNorm(1, 2),
    "PReLU": lambda nn: nn.PReLU(), "Bilinear": lambda nn: nn.Bilinear(2, 2, 2),
    "MultiheadAttention": lambda nn: nn.MultiheadAttention(4, 2, add_bias_kv=True),
    "MultiheadAttention kdim": lambda nn: nn.MultiheadAttention(4, 2, kdim=3, vdim=3),
    "TransformerEncoderLayer": lambda nn: nn.TransformerEncoderLayer(4, 2, 8),
    "Parameter()": lambda nn: nn.ModuleDict(),
}


@pytest.mark.parametrize("name", ["float64", "float16"])
@pytest.mark.parametrize("case", list(MODULES))
def test_module_parameters_and_buffers_take_the_default(case, name):
    with default(name):
        ours, theirs = MODULES[case](tinyattn.nn), MODULES[case](torch.nn)
        if case == "Parameter()":
            ours, theirs = {"p": tinyattn.nn.Parameter()}, {"p": torch.nn.Parameter()}
        else:
            ours, theirs = ours.state_dict(), theirs.state_dict()
    assert sorted(ours) == sorted(theirs)
    for key in theirs:
        assert _name(ours[key].dtype) == _name(theirs[key].dtype), key


def test_causal_mask_and_clip_grad_norm_of_nothing_take_the_default():
    with default("float64"):
        assert _name(tinyattn.nn.Transformer.generate_square_subsequent_mask(3).dtype) == \
            _name(torch.nn.Transformer.generate_square_subsequent_mask(3).dtype)
        ours = tinyattn.nn.utils.clip_grad_norm_(tinyattn.nn.Linear(2, 2).parameters(), 1.0)
        theirs = torch.nn.utils.clip_grad_norm_(torch.nn.Linear(2, 2).parameters(), 1.0)
        assert _name(ours.dtype) == _name(theirs.dtype) == "float64"


@pytest.mark.parametrize("optimizer", ["Adam", "AdamW", "SGD", "ASGD", "NAdam", "RMSprop",
                                       "Adagrad", "RAdam", "Adamax"])
def test_optimizer_state_follows_the_default_with_torchs_values(optimizer):
    """The 0-d state (step, ASGD's eta and mu, NAdam's mu_product) is float64 under a float64
    default, as torch's _get_scalar_dtype; the tensors follow the parameters. Same starting
    weights, same gradients: the state dicts agree in dtype and value."""
    with default("float64"):
        results = []
        for m in (tinyattn, torch):
            layer = m.nn.Linear(2, 2)
            with m.no_grad():
                layer.weight.copy_(m.tensor([[0.5, -1.0], [2.0, 0.25]]))
                layer.bias.copy_(m.tensor([0.1, -0.2]))
            kwargs = {"momentum": 0.9} if optimizer == "SGD" else {}
            opt = getattr(m.optim, optimizer)(layer.parameters(), lr=0.01, **kwargs)
            for _ in range(3):
                opt.zero_grad()
                (layer(m.tensor([[1.0, 2.0]])) ** 2).sum().backward()
                opt.step()
            results.append((opt.state_dict()["state"][0], layer.weight.detach()))
    (ours, our_weight), (theirs, their_weight) = results
    assert _name(our_weight.dtype) == _name(their_weight.dtype) == "float64"
    np.testing.assert_allclose(our_weight.numpy(), their_weight.numpy(), rtol=1e-12)
    for key, value in theirs.items():
        if hasattr(value, "dtype"):
            assert _name(ours[key].dtype) == _name(value.dtype), key
            np.testing.assert_allclose(np.asarray(ours[key].numpy(), dtype=np.float64),
                                       value.numpy(), rtol=1e-12)


# ------------------------------------------------------------------ printing
PRINTED = {
    "default float": lambda m: m.tensor([1.5, 2.0]),
    "float32 under float64": lambda m: m.tensor([1.5], dtype=m.float32),
    "float64": lambda m: m.tensor([0.1], dtype=m.float64),
    "complex128": lambda m: m.tensor([1 + 2j], dtype=m.complex128),
    "complex64": lambda m: m.tensor([1 + 2j], dtype=m.complex64),
    "empty default": lambda m: m.tensor([]), "empty float32": lambda m: m.zeros(0, dtype=m.float32),
    "empty 2-d": lambda m: m.zeros(2, 0), "int64": lambda m: m.tensor([1, 2]),
    "float16": lambda m: m.tensor([1.5], dtype=m.float16),
    "requires_grad": lambda m: m.tensor([1.5], requires_grad=True),
    "0-d": lambda m: m.tensor(2.5),
}


@pytest.fixture
def torch_names():
    printing.options.torch_names = True
    yield
    printing.options.torch_names = False


@pytest.mark.parametrize("name", ["float64", "float16", "float32"])
@pytest.mark.parametrize("case", list(PRINTED))
def test_repr_leaves_out_the_default_dtype_as_torch(case, name, torch_names):
    with default(name):
        assert repr(PRINTED[case](tinyattn)) == repr(PRINTED[case](torch))


def test_reset_to_float32_restores_everything():
    with default("float64"):
        assert repr(tinyattn.tensor([0.5])) == "tensor([0.5000])"
        assert tinyattn.nn.Linear(2, 2).weight.dtype == np.float64
    # negative control: the same calls see float32 again, and float64 is named again
    assert tinyattn.tensor([0.5]).dtype == np.float32
    assert repr(tinyattn.tensor([0.5], dtype=tinyattn.float64)) == \
        "tensor([0.5000], dtype=float64)"
    assert tinyattn.nn.Linear(2, 2).weight.dtype == np.float32
    assert (tinyattn.tensor([1, 2]) * 2.5).dtype == np.float32
    assert tinyattn.zeros(2).dtype == np.float32 and tinyattn.tensor([1j]).dtype == np.complex64


# ------------------------------------------------------------------ strict promotion
def test_strict_promotion_still_refuses_a_float_mix_under_a_float64_default():
    with default("float64"), tinyattn.strict_promotion():
        x = tinyattn.tensor([1.0, 2.0])                       # float64 now
        assert (x * 2.5).dtype == np.float64                  # numbers never mix dtypes
        assert (tinyattn.tensor([1, 2]) / 2).dtype == np.float64
        with pytest.raises(TypeError, match="strict promotion"):
            x + tinyattn.ones(2, dtype=tinyattn.float32)
    assert not tinyattn.is_strict_promotion()


# ------------------------------------------------------------------ run-torch
SCRIPT = """\
import torch
torch.set_default_dtype(torch.float64)
print(torch.get_default_dtype())
x = torch.tensor([0.1, 0.2], requires_grad=True)
w = torch.nn.Linear(2, 1)
print(x, torch.zeros(2).dtype, w.weight.dtype, (torch.arange(3) / 3).dtype)
y = (x * x).sum()
y.backward()
print(x.grad)
print(torch.tensor([1.5], dtype=torch.float32), torch.tensor([1 + 2j]))
print(torch.result_type(torch.arange(3), 2.5), torch.promote_types(torch.int64, torch.float16))
try:
    torch.set_default_dtype(torch.int64)
except TypeError as e:
    print("TypeError", e)
try:
    torch.set_default_dtype("float64")
except TypeError as e:
    print("TypeError", e)
torch.set_default_dtype(torch.float32)
print(torch.get_default_dtype(), torch.tensor([0.5]), torch.tensor([0.5], dtype=torch.float64))
"""


def _outputs_under_torch_and_run_torch(tmp_path, name, script):
    """(torch's stdout, run-torch's stdout) of ``script``; each must exit 0."""
    path = tmp_path / name
    path.write_text(script)
    env = dict(os.environ, PYTHONPATH=ROOT)
    outputs = []
    for command in ([sys.executable], [sys.executable, "-m", "tinyattn", "run-torch"]):
        done = subprocess.run(command + [str(path)], capture_output=True, text=True, env=env,
                              timeout=300)
        assert done.returncode == 0, (command, done.stderr)
        outputs.append(done.stdout)
    return outputs


def test_a_script_that_sets_float64_runs_under_run_torch_with_torchs_output(tmp_path):
    theirs, ours = _outputs_under_torch_and_run_torch(tmp_path, "double.py", SCRIPT)
    assert ours == theirs


TENSOR_TYPE_SCRIPT = """\
import warnings
import torch
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    torch.set_default_tensor_type(torch.DoubleTensor)
    print([str(w.message)[:48] for w in caught])
print(torch.get_default_dtype(), torch.zeros(1).dtype, torch.tensor([0.5]))
torch.set_default_tensor_type("torch.FloatTensor")
print(torch.get_default_dtype())
for bad in [torch.LongTensor, "torch.LongTensor", torch.float64, "torch.NoSuchTensor"]:
    try:
        torch.set_default_tensor_type(bad)
    except (TypeError, AttributeError) as e:
        print(type(e).__name__, e)
print(torch.get_default_dtype())
"""


def test_set_default_tensor_type_as_torch_under_run_torch(tmp_path):
    """The deprecated spelling of older gradcheck code (torch warns once, then sets the
    default dtype of the legacy type); a non-floating type is torch's TypeError."""
    theirs, ours = _outputs_under_torch_and_run_torch(tmp_path, "tensor_type.py",
                                                      TENSOR_TYPE_SCRIPT)
    assert ours == theirs
    assert "float64" in theirs          # the comparison sees the change it checks


def test_lazy_modules_keep_the_default_of_their_construction():
    """torch's uninitialized parameter takes the default dtype when the module is made, not
    when the first input materializes it."""
    with default("float64"):
        ours, theirs = tinyattn.nn.LazyLinear(2), torch.nn.LazyLinear(2)
    ours(tinyattn.ones(1, 3, dtype=tinyattn.float64))
    theirs(torch.ones(1, 3, dtype=torch.float64))
    assert _name(ours.weight.dtype) == _name(theirs.weight.dtype) == "float64"


def test_cov_of_integers_takes_the_default():
    with default("float64"):
        data = [[1, 2, 3], [2, 3, 5]]
        ours, theirs = tinyattn.cov(tinyattn.tensor(data)), torch.cov(torch.tensor(data))
    assert _name(ours.dtype) == _name(theirs.dtype) == "float64"
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-12)
