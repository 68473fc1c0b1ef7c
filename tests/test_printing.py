"""Tensors, shapes and 0-d values print as PyTorch prints them (tutorials show torch's output
and learners compare): ``tensor([1.5000, 2.0000])``, ``dtype=`` only for non-default dtypes,
``grad_fn=<MulBackward0>``, ``torch.Size([2, 3])`` under run-torch, ``f"{tensor(50)} x"`` is
``"50 x"``. Each repr is compared with torch's own, with the print options torch_names on."""
from __future__ import annotations

import numpy as np
import pytest

import tinyattn as ta
from tinyattn import printing

INF, NAN = float("inf"), float("nan")


def _torch():
    return pytest.importorskip("torch")


@pytest.fixture
def torch_names():
    printing.options.torch_names = True
    yield
    printing.options.torch_names = False


VALUES = [
    ([1.5, 2.0], "float32"), ([1.0, 2.0], "float32"), ([1e-5, 1e3], "float32"),
    ([INF, 1.0, NAN], "float32"), ([[1, 22], [333, 4]], "int32"), ([True, False], "bool"),
    ([1.0, 2.0], "float16"), ([0.25, -3.0], "float64"), ([100000.5, 1.0], "float32"),
    ([1e9, 1.0], "float32"), ([0.0, 0.0], "float32"), (NAN, "float32"), (50, "int64"),
    (2.5, "float32"), ([[-1, 2]], "int64"), ([-INF, INF], "float64"), ([[]], "float32"),
    ([], "int32"), ([], "float32"),
    # empty: no values to infer int64 or bool from, so torch names them (harness39)
    ([], "int64"), ([], "bool"), ([[], []], "int64"), ([[]], "bool"), ([], "float64"),
]


@pytest.mark.parametrize("values, dtype", VALUES, ids=lambda v: repr(v)[:30])
def test_repr_as_torch(values, dtype, torch_names):
    torch = _torch()
    expected = repr(torch.tensor(values, dtype=getattr(torch, dtype)))
    assert repr(ta.tensor(values, dtype=dtype)) == expected


@pytest.mark.parametrize("shape", [(2000,), (2, 20), (2, 3, 4), (40, 40), (3, 1, 5)])
def test_long_and_nested_repr_as_torch(shape, torch_names):
    torch = _torch()
    values = (np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape) - 7) / 3
    assert repr(ta.tensor(values)) == repr(torch.tensor(values))


def test_grad_suffixes_and_parameter_as_torch(torch_names):
    torch = _torch()
    for lib in (torch, ta):
        x = lib.ones(2, requires_grad=True)
        lib.shown = [repr(x), repr(x * 2), repr((x * 2).sum()),
                     repr(lib.nn.Parameter(lib.ones(2)))]
    assert ta.shown == torch.shown


def test_shape_prints_as_torch_size_and_is_a_tuple(torch_names):
    torch = _torch()
    shape = ta.zeros(2, 3).shape
    assert repr(shape) == repr(torch.zeros(2, 3).shape) == "torch.Size([2, 3])"
    assert str(shape) == str(torch.zeros(2, 3).shape)
    assert shape == (2, 3) and isinstance(shape, tuple) and shape[1:] == (3,)
    assert ta.zeros(2, 3).size() == (2, 3)


def test_plain_tinyattn_prints_numpy_dtype_names_and_tuple_shapes():
    assert repr(ta.zeros(2, 3).shape) == "(2, 3)"
    assert repr(ta.tensor([1, 2], dtype=ta.int32)) == "tensor([1, 2], dtype=int32)"


@pytest.mark.parametrize("value, spec", [(50, ""), (0.5, ""), (0.123456, ".4f"), (3, ">5"),
                                         (True, ""), (2.0, "e")])
def test_format_of_zero_dim_as_torch(value, spec):
    torch = _torch()
    assert format(ta.tensor(value), spec) == format(torch.tensor(value), spec)
    assert f"{ta.tensor(value)} x" == f"{torch.tensor(value)} x"


def test_format_of_a_vector_as_torch():
    torch = _torch()
    assert f"{ta.tensor([0.5])}" == f"{torch.tensor([0.5])}"
    with pytest.raises(TypeError):
        format(torch.tensor([0.5]), ".4f")
    with pytest.raises(TypeError, match="item"):
        format(ta.tensor([0.5]), ".4f")


def test_print_options_reach_the_repr():
    try:
        printing.set_printoptions(precision=2)
        assert repr(ta.tensor([1.5, 2.25])) == "tensor([1.50, 2.25])"
        printing.set_printoptions(sci_mode=True)
        assert repr(ta.tensor([1.5])) == "tensor([1.50e+00])"
    finally:
        printing.set_printoptions(profile="default")
    assert repr(ta.tensor([1.5, 2.25])) == "tensor([1.5000, 2.2500])"
