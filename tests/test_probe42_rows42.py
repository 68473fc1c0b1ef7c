"""Stream rows42 (issue 30): the conformance table's "to fix" rows made to agree with torch.

Each case runs the same call in torch and in tinyattn and compares what a program sees.
"""
from __future__ import annotations

import numpy as np
import pytest
import torch

import tinyattn as ta
from tinyattn.backend import cuda_is_available


def _raises(fn):
    try:
        fn()
    except Exception as exc:  # noqa: BLE001 - the type is what is compared
        return type(exc)
    return None


# ------------------------------------------------------------------ narrow_copy's dim errors
@pytest.mark.parametrize("shape, dim", [((10, 5, 20), 3), ((2, 3), 2), ((2, 3), 7),
                                        ((2, 3), -3), ((4,), -2), ((2, 3), 1)])
def test_narrow_copy_dim_error_type_as_torch(shape, dim):
    x = np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape)
    want = _raises(lambda: torch.narrow_copy(torch.from_numpy(x), dim, 0, 1))
    got = _raises(lambda: ta.narrow_copy(ta.tensor(x), dim, 0, 1))
    assert got is want
    got_method = _raises(lambda: ta.tensor(x).narrow_copy(dim, 0, 1))
    assert got_method is want
    if want is None:        # negative control: the valid dim gives torch's values
        np.testing.assert_array_equal(ta.narrow_copy(ta.tensor(x), dim, 0, 1).numpy(),
                                      torch.narrow_copy(torch.from_numpy(x), dim, 0, 1).numpy())


def test_narrow_keeps_index_error():
    x = np.zeros((2, 3), np.float32)
    assert _raises(lambda: torch.narrow(torch.from_numpy(x), 2, 0, 1)) is IndexError
    assert _raises(lambda: ta.narrow(ta.tensor(x), 2, 0, 1)) is IndexError


# ------------------------------------------------------------------ factories' layout=, pin_memory=
_X = np.ones((2, 3), np.float32)
_FACTORIES = {
    "zeros": lambda m, **k: m.zeros(2, 3, **k),
    "ones": lambda m, **k: m.ones(2, **k),
    "full": lambda m, **k: m.full((2,), 1.5, **k),
    "empty": lambda m, **k: m.empty(2, **k),
    "arange": lambda m, **k: m.arange(3.0, **k),
    "linspace": lambda m, **k: m.linspace(0, 1, 3, **k),
    "logspace": lambda m, **k: m.logspace(0, 1, 3, **k),
    "eye": lambda m, **k: m.eye(2, **k),
    "rand": lambda m, **k: m.rand(2, **k),
    "randn": lambda m, **k: m.randn(2, **k),
    "randint": lambda m, **k: m.randint(3, (2,), **k),
    "randperm": lambda m, **k: m.randperm(3, **k),
    "normal": lambda m, **k: m.normal(0.0, 1.0, (2,), **k),
    "zeros_like": lambda m, **k: m.zeros_like(m.tensor(_X), **k),
    "ones_like": lambda m, **k: m.ones_like(m.tensor(_X), **k),
    "empty_like": lambda m, **k: m.empty_like(m.tensor(_X), **k),
    "full_like": lambda m, **k: m.full_like(m.tensor(_X), 2.0, **k),
    "rand_like": lambda m, **k: m.rand_like(m.tensor(_X), **k),
    "randn_like": lambda m, **k: m.randn_like(m.tensor(_X), **k),
    "randint_like": lambda m, **k: m.randint_like(m.tensor(_X), 3, **k),
    "new_zeros": lambda m, **k: m.tensor(_X).new_zeros(2, **k),
    "new_ones": lambda m, **k: m.tensor(_X).new_ones(2, **k),
    "new_empty": lambda m, **k: m.tensor(_X).new_empty(2, **k),
    "new_full": lambda m, **k: m.tensor(_X).new_full((2,), 1.0, **k),
    "tril_indices": lambda m, **k: m.tril_indices(3, 3, **k),
}


@pytest.mark.parametrize("name", sorted(_FACTORIES))
def test_factories_take_layout_strided_as_torch(name):
    make = _FACTORIES[name]
    for kwargs in ({"layout": "strided"}, {"layout": None}):
        theirs = make(torch, layout=torch.strided if kwargs["layout"] else None)
        ours = make(ta, layout=ta.strided if kwargs["layout"] else None)
        assert tuple(ours.shape) == tuple(theirs.shape)
        assert str(ours.dtype).replace("torch.", "") == str(theirs.dtype).replace("torch.", "")
        assert ours.layout == ta.strided and repr(ours.layout) == repr(theirs.layout)
    # a value that is not a layout: torch's TypeError
    assert _raises(lambda: make(torch, layout=1)) is TypeError
    assert _raises(lambda: make(ta, layout=1)) is TypeError
    # a sparse layout: refused loudly, naming it (never a dense tensor in its place)
    with pytest.raises(NotImplementedError, match="sparse_coo"):
        make(ta, layout=ta.sparse_coo)


@pytest.mark.parametrize("name", sorted(set(_FACTORIES) - {"tril_indices"}))
def test_factories_take_pin_memory_as_torch(name):
    make = _FACTORIES[name]
    assert make(ta, pin_memory=False, device="cpu").layout == ta.strided
    make(torch, pin_memory=False, device="cpu")
    if not torch.cuda.is_available() and not cuda_is_available():
        assert _raises(lambda: make(torch, pin_memory=True)) is RuntimeError
        assert _raises(lambda: make(ta, pin_memory=True)) is RuntimeError


def test_layout_names_and_tensor_attributes_as_torch():
    for name in ("strided", "sparse_coo", "sparse_csr", "sparse_csc", "sparse_bsr",
                 "sparse_bsc", "jagged"):
        assert repr(getattr(ta, name)) == repr(getattr(torch, name)) == str(getattr(ta, name))
        assert isinstance(getattr(ta, name), ta.layout)
    assert ta.strided != ta.sparse_coo
    assert ta.ones(2).is_sparse is torch.ones(2).is_sparse is False
    # torch takes layout=/pin_memory= on normal only with two numbers
    assert _raises(lambda: torch.normal(torch.zeros(2), 1.0, layout=torch.strided)) is TypeError
    assert _raises(lambda: ta.normal(ta.zeros(2), 1.0, layout=ta.strided)) is TypeError
    assert _raises(lambda: torch.tensor([1.0], pin_memory=False)) is None
    assert _raises(lambda: ta.tensor([1.0], pin_memory=False)) is None
