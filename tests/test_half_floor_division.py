"""Floor and trunc division of float16/bfloat16 tensors round as torch's CPU kernel does.

Two half tensors: torch's floor division is Python's (q = (a - fmod(a, b)) / b, one less
where the remainder's sign differs from b's, floor, rounded up past .5) with every step
rounded to the half dtype; trunc divides in the half dtype and truncates. A half tensor by a
Python number: computed in float32 with the number unrounded, rounded once. tinyattn computed
every case in float32 and rounded once, which silently differed from torch for about 1% of
bfloat16 quotients."""
import ml_dtypes
import numpy as np
import pytest

import tinyattn as ta


def _half(values, dtype=np.float16):
    return ta.tensor(np.array(values, dtype=np.float32).astype(dtype))


def test_two_half_tensors_round_at_each_step():
    a, b = _half([-57.625]), _half([0.02752685546875])
    # a / b = -2093.41 (float32); spacing of float16 there is 2
    assert ta.div(a, b, rounding_mode="trunc").tolist() == [-2094.0]     # torch's value
    assert ta.div(a, b, rounding_mode="floor").tolist() == [-2096.0]     # torch's value
    assert (a // b).tolist() == [-2096.0] and ta.floor_divide(a, b).tolist() == [-2096.0]
    # negative control: float32 then one rounding gives -2094 (floor) and -2092 (trunc)
    q = np.float32(-57.625) / np.float32(0.02752685546875)
    assert np.float16(np.floor(q)) == -2094 and np.float16(np.trunc(q)) == -2092


def test_dtype_and_specials_kept():
    a = _half([1.0, -1.0, 0.0, np.inf, np.nan, 5.0], ml_dtypes.bfloat16)
    b = _half([0.0, 0.0, 3.0, 2.0, 1.0, -0.0], ml_dtypes.bfloat16)
    out = ta.div(a, b, rounding_mode="floor")
    assert out.dtype == ml_dtypes.bfloat16
    values = out.float().tolist()
    assert values[0] == np.inf and values[1] == -np.inf and values[2] == 0.0
    assert np.isnan(values[3])                               # torch: inf // 2 is NaN
    assert np.isnan(values[4]) and values[5] == -np.inf


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("divisor", ["tensor", 2.7, -0.3, 3])
@pytest.mark.parametrize("mode", ["floor", "trunc"])
def test_against_torch(dtype, divisor, mode):
    torch = pytest.importorskip("torch", reason="compares with torch")
    generator = torch.Generator().manual_seed(0)
    tdtype = getattr(torch, dtype)
    a = (torch.randn(20000, generator=generator) * 50).to(tdtype)
    b = (torch.randn(20000, generator=generator) * 3).to(tdtype) if divisor == "tensor" \
        else divisor
    ndtype = ml_dtypes.bfloat16 if dtype == "bfloat16" else np.float16
    mine = ta.tensor(a.float().numpy().astype(ndtype))
    other = ta.tensor(b.float().numpy().astype(ndtype)) if divisor == "tensor" else b
    want = torch.div(a, b, rounding_mode=mode).float().numpy()
    got = ta.div(mine, other, rounding_mode=mode)
    assert got.dtype == ndtype
    np.testing.assert_array_equal(got.float().numpy(), want)
    if mode == "floor":
        np.testing.assert_array_equal((mine // other).float().numpy(), want)
        inplace = mine.clone()
        inplace //= other
        np.testing.assert_array_equal(inplace.float().numpy(), want)
