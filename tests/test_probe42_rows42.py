"""Stream rows42 (issue 30): the conformance table's "to fix" rows made to agree with torch.

Each case runs the same call in torch and in tinyattn and compares what a program sees.
"""
from __future__ import annotations

import numpy as np
import pytest
import torch

import tinyattn as ta


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
