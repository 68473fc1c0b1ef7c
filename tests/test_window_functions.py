"""torch's top-level window functions (torch.hann_window, hamming_window, blackman_window,
bartlett_window, kaiser_window; STFT code calls them), against torch: values in every float
dtype, periodic and symmetric, the lengths 0 and 1, and torch's errors."""
from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="the windows are compared with torch's")

import tinyattn as ta  # noqa: E402

NAMES = ["hann_window", "hamming_window", "blackman_window", "bartlett_window",
         "kaiser_window"]


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32", "float64"])
@pytest.mark.parametrize("length", [0, 1, 2, 5, 64, 1000])
@pytest.mark.parametrize("periodic", [True, False])
def test_values_as_torch(name, dtype, length, periodic):
    theirs = getattr(torch, name)(length, periodic, dtype=getattr(torch, dtype))
    ours = getattr(ta, name)(length, periodic, dtype=getattr(ta, dtype))
    assert str(ours.dtype) == dtype and tuple(ours.shape) == tuple(theirs.shape)
    torch.testing.assert_close(torch.from_numpy(np.asarray(ours.float().numpy())).to(
        theirs.dtype), theirs)            # torch's tolerances for the dtype


def test_default_is_periodic_and_the_extra_parameters():
    torch.testing.assert_close(torch.from_numpy(ta.hann_window(8).numpy()),
                               torch.hann_window(8))
    assert not np.allclose(ta.hann_window(8).numpy(), ta.hann_window(8, False).numpy())
    torch.testing.assert_close(torch.from_numpy(ta.hamming_window(6, True, 0.5, 0.3).numpy()),
                               torch.hamming_window(6, True, 0.5, 0.3))
    torch.testing.assert_close(torch.from_numpy(ta.kaiser_window(7, False, 5.0).numpy()),
                               torch.kaiser_window(7, False, 5.0))
    w = ta.hann_window(4, requires_grad=True)
    assert w.requires_grad and w.is_leaf


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("args,kwargs", [((-1,), {}), ((3.0,), {}),
                                         ((4,), {"dtype": "int64"})])
def test_errors_as_torch(name, args, kwargs):
    errors = []
    for lib in (torch, ta):
        given = {k: getattr(lib, v) for k, v in kwargs.items()}
        with pytest.raises((RuntimeError, TypeError)) as caught:
            getattr(lib, name)(*args, **given)
        errors.append(caught.type)
    assert errors[0] == errors[1]
