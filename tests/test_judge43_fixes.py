"""harness43: silent wrong results an independent run of torch's op_db found, each fixed and
checked here against torch (values, dtype, shape) or against torch's exception.

Each test runs one small program with ``torch`` and with ``tinyattn``."""
from __future__ import annotations

import numpy as np
import pytest

import tinyattn as ta

torch = pytest.importorskip("torch", reason="the reference is torch itself")


def _same(ours, theirs):
    assert str(ours.dtype) == str(theirs.dtype).replace("torch.", "")
    assert tuple(ours.shape) == tuple(theirs.shape)
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-6, atol=1e-7)


# einsum cast complex operands to int64 (or to the other operand's float dtype) before
# contracting: einsum("i", z) of a complex z returned its real part as int64. torch computes in
# complex; tinyattn's Einsum has no complex backward yet, so it must refuse loudly.
@pytest.mark.parametrize("eq,n_ops,other", [("i", 1, None), ("i->", 1, None),
                                             ("i,i->", 2, "float64"), ("i,i->i", 2, "int64")])
def test_einsum_never_drops_the_imaginary_part(eq, n_ops, other):
    z = np.array([1 + 2j, 3 - 1j])
    ops_t = [torch.tensor(z)]
    ops_a = [ta.tensor(z)]
    if n_ops == 2:
        ops_t.append(torch.tensor([1, 2], dtype=getattr(torch, other)))
        ops_a.append(ta.tensor([1, 2], dtype=getattr(ta, other)))
    try:
        expected = torch.einsum(eq, *ops_t)
    except RuntimeError:                              # torch refuses mixed dtypes: so must we
        with pytest.raises((TypeError, RuntimeError)):
            ta.einsum(eq, *ops_a)
        return
    assert expected.is_complex()
    try:
        got = ta.einsum(eq, *ops_a)
    except TypeError:
        return                                        # loud: allowed
    _same(got, expected)                              # computed: must be the complex result


def test_einsum_real_operands_still_agree():               # negative control for the guard
    a, b = np.arange(6.).reshape(2, 3), np.arange(3.)
    _same(ta.einsum("ij,j->i", ta.tensor(a), ta.tensor(b)),
          torch.einsum("ij,j->i", torch.tensor(a), torch.tensor(b)))
    _same(ta.einsum("i->", ta.tensor(b)), torch.einsum("i->", torch.tensor(b)))
