"""torch.cov and torch.corrcoef (ops/statistics.py) against torch: values, dtypes, float64
gradients (input and importance weights), errors and the degrees-of-freedom warning."""
import warnings

import numpy as np
import pytest

import tinyattn as ta

torch = pytest.importorskip("torch", reason="torch is the oracle for cov and corrcoef")

RNG = np.random.default_rng(5)


def _compare(fn_ta, fn_torch, x, **weights):
    ours_x, theirs_x = ta.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    ours_w = {k: ta.tensor(v, requires_grad=v.dtype.kind == "f") for k, v in weights.items()}
    theirs_w = {k: torch.tensor(v, requires_grad=v.dtype.kind == "f")
                for k, v in weights.items()}
    ours, theirs = fn_ta(ours_x, **ours_w), fn_torch(theirs_x, **theirs_w)
    assert ours.shape == tuple(theirs.shape) and str(ours.dtype) in str(theirs.dtype)
    np.testing.assert_allclose(ours.detach().numpy(), theirs.detach().numpy(), rtol=1e-10,
                               atol=1e-12)
    g = RNG.standard_normal(tuple(theirs.shape))
    (ours * ta.tensor(g)).sum().backward()
    (theirs * torch.tensor(g)).sum().backward()
    np.testing.assert_allclose(ours_x.grad.numpy(), theirs_x.grad.numpy(), atol=1e-10)
    for k, v in ours_w.items():
        if v.requires_grad:
            np.testing.assert_allclose(v.grad.numpy(), theirs_w[k].grad.numpy(), atol=1e-10)


@pytest.mark.parametrize("correction", [0, 1, 2])
@pytest.mark.parametrize("weights", ["none", "f", "a", "fa"])
@pytest.mark.parametrize("shape", [(3, 6), (6,), (1, 6)])
def test_cov_matches_torch(shape, weights, correction):
    x = RNG.standard_normal(shape)
    n = shape[-1]
    kw = {}
    if "f" in weights:
        kw["fweights"] = RNG.integers(0, 4, size=n).astype(np.int64)
    if "a" in weights:
        kw["aweights"] = RNG.uniform(0.1, 2.0, size=n)
    _compare(lambda t, **w: ta.cov(t, correction=correction, **w),
             lambda t, **w: torch.cov(t, correction=correction, **w), x, **kw)


@pytest.mark.parametrize("shape", [(3, 6), (6,)])
def test_corrcoef_matches_torch(shape):
    _compare(ta.corrcoef, torch.corrcoef, RNG.standard_normal(shape))


def test_integer_input_gives_float32_as_torch():
    x = [[1, 2, 4], [3, 1, 0]]
    ours, theirs = ta.cov(ta.tensor(x)), torch.cov(torch.tensor(x))
    assert ours.dtype == np.float32
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-6)
    np.testing.assert_allclose(ta.corrcoef(ta.tensor(x)).numpy(),
                               torch.corrcoef(torch.tensor(x)).numpy(), rtol=1e-6)


def test_errors_and_warning_as_torch():
    x = ta.ones(2, 3)
    for kwargs, message in (({"fweights": ta.tensor([1.0, 2.0, 3.0])}, "integral dtype"),
                            ({"fweights": ta.tensor([1, 2])}, "same numel"),
                            ({"fweights": ta.tensor([1, -2, 3])}, "cannot be negative"),
                            ({"aweights": ta.tensor([1, 2, 3])}, "floating point dtype"),
                            ({"aweights": ta.tensor([1.0, -2.0, 3.0])}, "cannot be negative")):
        with pytest.raises(RuntimeError, match=message):
            ta.cov(x, **kwargs)
    with pytest.raises(RuntimeError, match="two or fewer dimensions"):
        ta.cov(ta.ones(2, 3, 4))
    with pytest.warns(UserWarning, match="degrees of freedom is <= 0"):
        single = ta.cov(ta.tensor([1.0]))
    assert np.isnan(single.item()) and np.isnan(torch.cov(torch.tensor([1.0])).item())
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ta.cov(ta.tensor([1.0, 2.0]))          # one degree of freedom: no warning


def test_negative_control_a_population_cov_differs_from_the_sample_cov():
    x = RNG.standard_normal((2, 5))
    with pytest.raises(AssertionError):
        _compare(lambda t: ta.cov(t, correction=0), torch.cov, x)
