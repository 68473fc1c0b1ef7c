"""linspace / logspace give torch's numbers to the bit (tinyattn/spaced_values.py says how
torch's CPU kernels round), and linspace / logspace / arange / multinomial take out= as torch."""
import random
import warnings

import numpy as np
import pytest

import tinyattn as ta

torch = pytest.importorskip("torch")

_DTYPES = ("float32", "float64", "float16", "bfloat16", "int8", "uint8", "int16", "int32",
           "int64")


def _cases(op, count=60, seed=0):
    rng = random.Random(seed)
    for _ in range(count):
        if op == "linspace":
            a = rng.choice([rng.uniform(-60, 60), rng.randint(-60, 60), 4.3, -2.0, 50])
            b = rng.choice([rng.uniform(-60, 60), rng.randint(-60, 60), -3, 0, 1, 50])
            yield a, b, rng.choice([0, 1, 2, 3, 5, 17, 50, 65, 129, 300]), {}
        else:
            a = rng.choice([rng.uniform(-3, 3), rng.randint(-3, 3), 1.3, -2.0, 2])
            b = rng.choice([rng.uniform(-3, 3), rng.randint(-3, 3), -3, 0, 1, 3])
            base = rng.choice([10.0, 2.0, 2.5, 0.7, 3.0])
            yield a, b, rng.choice([0, 1, 2, 3, 5, 17, 50, 65]), {"base": base}


def _both(op, a, b, n, kw, dtype):
    try:
        expected = getattr(torch, op)(a, b, n, dtype=getattr(torch, dtype), **kw)
    except RuntimeError:
        with pytest.raises(RuntimeError, match="without overflow"):
            getattr(ta, op)(a, b, n, dtype=dtype, **kw)
        return None, None
    got = getattr(ta, op)(a, b, n, dtype=dtype, **kw)
    return expected.double().numpy(), np.asarray(got.double().numpy())


@pytest.mark.parametrize("dtype", _DTYPES)
@pytest.mark.parametrize("op", ["linspace", "logspace"])
def test_spaced_values_are_torchs_bit_for_bit(op, dtype):
    compared = 0
    for a, b, n, kw in _cases(op):
        expected, got = _both(op, a, b, n, kw, dtype)
        if expected is None:
            continue
        compared += 1
        if op == "logspace" and dtype == "float64":   # torch's std::pow and NumPy's power
            np.testing.assert_allclose(got, expected, rtol=4e-16, atol=0)   # differ by an ulp
        else:
            np.testing.assert_array_equal(got, expected, err_msg=f"{op}({a}, {b}, {n}, {kw})")
    assert compared > 20


def test_the_rounding_matters():
    """negative control: the float64 value rounded once is not torch's float16 linspace."""
    expected = torch.linspace(4.3, -3, 50, dtype=torch.float16).double().numpy()
    once = np.linspace(np.float16(4.3), np.float16(-3), 50).astype(np.float16).astype(float)
    assert (once != expected).any()
    got = ta.linspace(4.3, -3, 50, dtype="float16").double().numpy()
    np.testing.assert_array_equal(got, expected)


def test_integer_results_wrap_as_torch():
    for dtype in ("uint8", "int8", "int16", "int32", "int64"):
        got = ta.logspace(0, 12, 13, dtype=dtype).tolist()
        assert got == torch.logspace(0, 12, 13, dtype=getattr(torch, dtype)).tolist()
    assert ta.linspace(-2, 5, 3, dtype="uint8").tolist() == [254, 129, 5]
    assert ta.linspace(-3.8, 5, 3, dtype="int64").tolist() == [-3, 1, 5]
    with pytest.raises(RuntimeError, match="without overflow"):
        ta.linspace(300, 5, 3, dtype="int8")
    with pytest.raises(RuntimeError, match="without overflow"):
        ta.linspace(1e5, 5, 3, dtype="float16")
    with pytest.raises(NotImplementedError):
        ta.linspace(0, 1, 3, dtype="bool")


@pytest.mark.parametrize("op", ["linspace", "logspace"])
def test_spaced_out(op):
    out = ta.empty(3, dtype="float16")
    got = getattr(ta, op)(0, 1, 5, out=out)
    assert got is out and out.shape == (5,)
    assert out.tolist() == getattr(torch, op)(0, 1, 5, out=torch.empty(3, dtype=torch.float16)
                                              ).tolist()
    out = ta.empty(5, 1)                      # as many elements: the shape is kept
    assert getattr(ta, op)(0, 1, 5, out=out).shape == (5, 1)
    base = ta.zeros(10)                       # a view: written through to its base
    getattr(ta, op)(0, 1, 5, out=base[::2])
    expected = torch.zeros(10)
    getattr(torch, op)(0, 1, 5, out=expected[::2])
    assert base.tolist() == expected.tolist()
    with pytest.raises(RuntimeError, match="does not match dtype of out"):
        getattr(ta, op)(0, 1, 5, dtype="float32", out=ta.empty(5, dtype="float64"))
    with pytest.raises(RuntimeError, match="automatic differentiation"):
        getattr(ta, op)(0, 1, 5, out=ta.empty(5, requires_grad=True))


def test_arange_out():
    out = ta.empty(3, dtype="int32")           # computed in out's dtype: 6 whole numbers
    with pytest.warns(UserWarning, match="does not match the computed number"):
        ta.arange(0, 5.5, out=out)
    assert out.dtype == np.int32 and out.tolist() == [0, 1, 2, 3, 4, 5]
    out = ta.empty(0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")         # an empty out is resized without a warning
        ta.arange(5, out=out)
    assert out.tolist() == [0.0, 1.0, 2.0, 3.0, 4.0]
    with pytest.raises(RuntimeError, match="does not match dtype of out"):
        ta.arange(0, 5, dtype="float32", out=ta.empty(3, dtype="int32"))
    with pytest.raises(ValueError, match="step must be nonzero"):
        ta.arange(0, 64, 0.5, out=ta.empty(0, dtype="int64"))


def test_multinomial_out():
    with pytest.raises(RuntimeError, match="expects Long tensor out"):
        ta.multinomial(ta.ones(1, 2), 2, out=ta.empty(1, 2, dtype="float64"))
    out = ta.empty(3, dtype="int64")
    got = ta.multinomial(ta.ones(4), 2, out=out, generator=np.random.default_rng(0))
    assert got is out and out.shape == (2,) and len(set(out.tolist())) == 2
