"""Cases found by rerunning torch's op database on the final tree (stream conf44): each is
checked here directly against torch 2.13.

- addcmul/addcdiv with a complex operand among real ones (op_db's reference sample: a float
  input, a float64 tensor1 and a complex128 tensor2) raised NumPy's "Invalid integer data
  type 'c'" while converting ``value``: the complex result dtype fell into the integer
  branch. tinyattn does not compute these ops in complex; it now refuses them as it refuses
  every complex operand of theirs, naming the op (torch computes: a loud refusal, listed with
  the complex ops in docs/pytorch.md).
"""
from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="these cases compare with torch")

import tinyattn as ta  # noqa: E402


@pytest.mark.parametrize("name", ["addcmul", "addcdiv"])
@pytest.mark.parametrize("dtype", ["int64", "float32", "float64", "complex128"])
@pytest.mark.parametrize("value", [1, 3.14])
def test_addc_with_a_complex_operand_refused_naming_the_op(name, dtype, value):
    rng = np.random.default_rng(0)
    x = (rng.standard_normal((3, 3)) * 4).astype(dtype)
    t1 = rng.standard_normal((3, 3))
    t2 = rng.standard_normal((1, 3)) + 1j * rng.standard_normal((1, 3))
    expected = getattr(torch, name)(torch.from_numpy(x), torch.from_numpy(t1),
                                    torch.from_numpy(t2), value=value)
    assert expected.dtype == torch.complex128          # torch computes it, in complex128
    with pytest.raises(TypeError, match=r"Addc(Mul|Div): complex tensors"):
        getattr(ta, name)(ta.tensor(x), ta.tensor(t1), ta.tensor(t2), value=value)


@pytest.mark.parametrize("name", ["addcmul", "addcdiv"])
def test_addc_real_operands_still_compute(name):   # negative control: the refusal is only
    rng = np.random.default_rng(1)                 # for complex operands
    x, t1, t2 = (rng.standard_normal((3, 3)) + 2 for _ in range(3))
    got = getattr(ta, name)(ta.tensor(x), ta.tensor(t1), ta.tensor(t2), value=0.5).numpy()
    want = getattr(torch, name)(torch.from_numpy(x), torch.from_numpy(t1),
                                torch.from_numpy(t2), value=0.5).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-12)
