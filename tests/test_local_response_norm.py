"""F.local_response_norm / nn.LocalResponseNorm against torch: values and float64 gradients
for odd and even windows and 3-d to 5-d inputs, the half dtypes' step-by-step rounding, int64,
what backward saves, errors and the printout. Negative controls show the checks can fail."""
import numpy as np
import pytest

import tinyattn as ta
import tinyattn.functional as F
from tinyattn import nn

torch = pytest.importorskip("torch", reason="torch is the reference for these tests")
TF = torch.nn.functional
TOL = dict(rtol=1e-10, atol=1e-12)


def _both(x, **kwargs):
    xt, xo = torch.tensor(x, requires_grad=True), ta.tensor(x, requires_grad=True)
    want, got = TF.local_response_norm(xt, **kwargs), F.local_response_norm(xo, **kwargs)
    g = np.random.default_rng(2).standard_normal(x.shape)
    want.backward(torch.tensor(g))
    got.backward(ta.tensor(g))
    return (want.detach().numpy(), xt.grad.numpy()), (got.detach().numpy(), xo.grad.numpy())


@pytest.mark.parametrize("shape", [(2, 6, 5), (2, 7, 3, 4), (1, 5, 2, 3, 2), (3, 1, 4)])
@pytest.mark.parametrize("kwargs", [dict(size=3), dict(size=4, alpha=0.5, beta=0.6, k=2.0),
                                    dict(size=1, alpha=2.0), dict(size=9, alpha=1.0, k=0.5)],
                         ids=str)
def test_values_and_gradients_match_torch(shape, kwargs):
    x = np.random.default_rng(0).standard_normal(shape) * 3
    (want, want_grad), (got, got_grad) = _both(x, **kwargs)
    np.testing.assert_allclose(got, want, **TOL)
    np.testing.assert_allclose(got_grad, want_grad, **TOL)


def test_negative_control_window_off_by_one_is_caught():
    """A window shifted by one channel (size // 2 and (size - 1) // 2 swapped) differs."""
    x = np.random.default_rng(0).standard_normal((2, 6, 5)) * 3
    want = TF.local_response_norm(torch.tensor(x), 4, alpha=1.0).numpy()
    shifted = F.local_response_norm(ta.tensor(x).flip(1), 4, alpha=1.0).flip(1).numpy()
    assert not np.allclose(shifted, want, **TOL)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_half_precision_rounds_each_step_as_torch(dtype):
    x = torch.randn(4, 9, 7, generator=torch.Generator().manual_seed(1)).to(
        getattr(torch, dtype)) * 4
    for kwargs in (dict(size=2), dict(size=5, alpha=0.3, beta=0.9, k=1.5)):
        want = TF.local_response_norm(x, **kwargs)
        got = F.local_response_norm(ta.tensor(x.float().numpy()).to(getattr(ta, dtype)),
                                    **kwargs)
        assert got.dtype == getattr(ta, dtype)
        np.testing.assert_array_equal(got.float().numpy(), want.float().numpy())


def test_int64_as_torch_and_other_dtypes_refused():
    x = np.random.default_rng(0).integers(-30, 30, (2, 5, 4, 3))
    want = TF.local_response_norm(torch.tensor(x), 3, alpha=0.1)
    got = F.local_response_norm(ta.tensor(x), 3, alpha=0.1)
    assert got.dtype == np.float32 and want.dtype == torch.float32
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-6)
    for dtype in ("int32", "uint8"):
        with pytest.raises(RuntimeError):
            TF.local_response_norm(torch.tensor(x).to(getattr(torch, dtype)), 3)
        with pytest.raises(RuntimeError, match="not implemented"):
            F.local_response_norm(ta.tensor(x).to(getattr(ta, dtype)), 3)
    with pytest.raises(RuntimeError):           # torch's 4-d half path pools with avg_pool3d
        TF.local_response_norm(torch.zeros(2, 3, 4, 4, dtype=torch.float16), 3)
    with pytest.raises(RuntimeError, match="Half"):
        F.local_response_norm(ta.zeros(2, 3, 4, 4, dtype=ta.float16), 3)


def test_errors_and_empty_input_as_torch():
    for lib, functional in ((torch, TF), (ta, F)):
        with pytest.raises(ValueError, match="3D or higher"):
            functional.local_response_norm(lib.zeros(3, 4), 2)
        empty = lib.zeros(0, 3, 4)
        assert functional.local_response_norm(empty, 2) is empty       # the input itself
    with pytest.raises(RuntimeError, match="size"):
        F.local_response_norm(ta.zeros(2, 3, 4), 0)


def test_backward_saves_the_input_not_the_output():
    """As torch's composition: writing to the output after the op leaves backward working;
    writing to the input makes it raise."""
    for lib, functional in ((torch, TF), (ta, F)):
        x = lib.ones(1, 3, 2, requires_grad=True)
        out = functional.local_response_norm(x * 1.0, 2)
        out.mul_(2)
        out.sum().backward()
        y = x * 1.0
        out = functional.local_response_norm(y, 2)
        y.mul_(2)
        with pytest.raises(RuntimeError):
            out.sum().backward()


def test_module_matches_torch():
    ours, theirs = nn.LocalResponseNorm(3, alpha=0.5, beta=0.8, k=1.5), \
        torch.nn.LocalResponseNorm(3, alpha=0.5, beta=0.8, k=1.5)
    assert repr(ours) == repr(theirs)
    x = np.random.default_rng(0).standard_normal((2, 5, 3, 3))
    np.testing.assert_allclose(ours(ta.tensor(x)).numpy(), theirs(torch.tensor(x)).numpy(),
                               **TOL)
