"""Named results print, pickle and unpack as torch's ``torch.return_types.<name>``."""
import pickle

import numpy as np
import pytest

import tinyattn as ta

X = ta.tensor(np.array([[3.0, 1.0, 2.0], [0.5, 4.0, 4.5]]))

CALLS = {
    "max": lambda: ta.max(X, 0), "min": lambda: ta.min(X, 1), "sort": lambda: ta.sort(X),
    "topk": lambda: ta.topk(X, 2), "kthvalue": lambda: ta.kthvalue(X, 1),
    "median": lambda: ta.median(X, 1), "nanmedian": lambda: ta.nanmedian(X, 1),
    "cummax": lambda: ta.cummax(X, 1), "cummin": lambda: ta.cummin(X, 1),
    "aminmax": lambda: ta.aminmax(X), "slogdet": lambda: ta.slogdet(X[:, :2]),
    "linalg_slogdet": lambda: ta.linalg.slogdet(X[:, :2]),
    "linalg_qr": lambda: ta.linalg.qr(X),
    "linalg_eigh": lambda: ta.linalg.eigh(X[:, :2] @ X[:, :2].mT),
}


@pytest.mark.parametrize("name", sorted(CALLS))
def test_prints_as_torch_return_type(name):
    result = CALLS[name]()
    text = repr(result)
    first, second = result._fields[:2]
    assert text.startswith(f"torch.return_types.{name}(\n{first}=tensor(")
    assert f",\n{second}=tensor(" in text and text.endswith(")")
    assert str(result) == text
    assert type(result).__name__ == name


def test_fields_unpack_and_pickle():
    values, indices = ta.max(X, 1)
    result = ta.max(X, 1)
    assert result.values is result[0] and result.indices is result[1]
    assert indices.tolist() == [0, 2]
    again = pickle.loads(pickle.dumps(result))
    assert type(again) is type(result) and again.indices.tolist() == [0, 2]


def test_same_text_as_torch():
    torch = pytest.importorskip("torch", reason="compares the printout with torch's")
    data = X.numpy()
    assert repr(ta.max(X, 0)) == repr(torch.max(torch.from_numpy(data), 0)).replace(
        ", dtype=torch.float64", ", dtype=float64")
    assert repr(ta.sort(X)) == repr(torch.sort(torch.from_numpy(data))).replace(
        ", dtype=torch.float64", ", dtype=float64")


def test_negative_control_plain_tuple_is_not_a_return_type():
    assert not repr(ta.var_mean(X)).startswith("torch.return_types")   # a plain tuple, as torch
