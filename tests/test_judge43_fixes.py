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


Z = np.array([1 + 2j, 3 - 1j, 0.5 + 0.5j])
W = np.array([2 - 1j, 1 + 1j, -1 + 0.25j])


def _agree_or_refuse(program):
    """torch's result, or a loud refusal: never another value or dtype."""
    expected = program(torch)
    try:
        got = program(ta)
    except (TypeError, RuntimeError, NotImplementedError):
        return None
    _same(got, expected)
    return got


# linalg.vecdot summed x * y without conjugating x: a complex x gave a wrong inner product.
def test_vecdot_conjugates_its_first_argument():
    got = _agree_or_refuse(lambda m: m.linalg.vecdot(m.tensor(Z), m.tensor(W)))
    assert got is not None                           # it computes, so it must be torch's value
    _same(ta.linalg.vecdot(ta.tensor(Z.real), ta.tensor(W.real)),          # control: real
          torch.linalg.vecdot(torch.tensor(Z.real), torch.tensor(W.real)))


def test_vecdot_complex_gradient_matches_torch():
    xt = torch.tensor(Z, requires_grad=True)
    yt = torch.tensor(W, requires_grad=True)
    (torch.linalg.vecdot(xt, yt) * (0.5 - 2j)).real.backward()
    xa = ta.tensor(Z, requires_grad=True)
    ya = ta.tensor(W, requires_grad=True)
    try:
        (ta.linalg.vecdot(xa, ya) * ta.tensor(0.5 - 2j)).real.backward()
    except (TypeError, RuntimeError, NotImplementedError):
        return
    _same(xa.grad, xt.grad)
    _same(ya.grad, yt.grad)


# linalg.vander cast a complex x to int64 (as for integer x) and returned an int64 matrix.
def test_vander_of_complex_is_never_an_integer_matrix():
    _agree_or_refuse(lambda m: m.linalg.vander(m.tensor(Z)))
    _same(ta.linalg.vander(ta.tensor([1, 2, 3])), torch.linalg.vander(torch.tensor([1, 2, 3])))


# float_power cast complex operands to float64 (dropping the imaginary part); torch computes
# in complex128 when either operand is complex.
@pytest.mark.parametrize("program", [
    lambda m: m.float_power(m.tensor(Z), m.tensor(W)),
    lambda m: m.float_power(m.tensor(Z), 2),
    lambda m: m.float_power(m.tensor(Z.real), 2j),
    lambda m: m.float_power(m.tensor(Z.real), m.tensor(W)),
])
def test_float_power_with_a_complex_operand_stays_complex(program):
    _agree_or_refuse(program)


def test_float_power_real_still_float64():            # control
    _same(ta.float_power(ta.tensor([1, 2, 3]), 2), torch.float_power(torch.tensor([1, 2, 3]), 2))
    _same(ta.float_power(ta.tensor([1., 2.], dtype=ta.float32), 0.5),
          torch.float_power(torch.tensor([1., 2.]), 0.5))


# logical_and/or/xor refused complex tensors saying "as in torch: complex numbers have no
# order"; torch computes them (a complex number is true when non-zero). Ordering stays refused.
@pytest.mark.parametrize("op", ["logical_and", "logical_or", "logical_xor"])
def test_logical_ops_of_complex_test_nonzero(op):
    a = np.array([0j, 1 + 0j, 0 + 2j, 0j, float("nan") + 0j])
    b = np.array([0j, 0j, 1 - 1j, 3 + 0j, 0j])
    _same(getattr(ta, op)(ta.tensor(a), ta.tensor(b)),
          getattr(torch, op)(torch.tensor(a), torch.tensor(b)))
    _same(getattr(ta, op)(ta.tensor(a), ta.tensor(b.real > 0)),
          getattr(torch, op)(torch.tensor(a), torch.tensor(b.real > 0)))


def test_complex_order_still_refused():                # control: torch refuses these
    with pytest.raises(RuntimeError):
        torch.lt(torch.tensor([1j]), torch.tensor([2j]))
    with pytest.raises((RuntimeError, TypeError, NotImplementedError)):
        ta.lt(ta.tensor(np.array([1j])), ta.tensor(np.array([2j])))


# linspace/logspace with a complex dtype went through the float16/bfloat16 emulation (float32
# arithmetic) for complex128: values off by ~1e-6 relative, 10^6 times torch's float64 error.
@pytest.mark.parametrize("args", [(4.3, -3, 50), (0, 1, 7), (0.1, 0.7, 11), (0, 1.2, 2),
                                  (-2.5, 2.5, 1), (1, 5, 0)])
@pytest.mark.parametrize("name", ["complex128", "complex64"])
@pytest.mark.parametrize("fn", ["linspace", "logspace"])
def test_spaced_values_in_complex_dtypes(fn, name, args):
    expected = getattr(torch, fn)(*args, dtype=getattr(torch, name))
    got = getattr(ta, fn)(*args, dtype=getattr(ta, name))
    assert str(got.dtype) == name and tuple(got.shape) == tuple(expected.shape)
    tol = 1e-13 if name == "complex128" else 1.3e-6          # assert_close's defaults, tighter
    np.testing.assert_allclose(got.numpy(), expected.numpy(), rtol=tol, atol=1e-12)


# cat/stack of a complex tensor with real ones cast the complex one to the real dtype (the
# imaginary part dropped, float64 returned); torch promotes to complex.
@pytest.mark.parametrize("fn", ["cat", "stack"])
@pytest.mark.parametrize("others", [("float64",), ("float32", "float16"), ("int64",),
                                    ("bool",), ("complex64",)])
@pytest.mark.parametrize("first", ["complex64", "complex128"])
def test_join_with_a_complex_tensor_stays_complex(fn, others, first):
    z = (np.arange(4.) + 1j * np.arange(4., 8.)).reshape(2, 2)
    arrays = [z.astype(first)] + [np.arange(4).reshape(2, 2).astype(o) for o in others]
    arrays = arrays[::-1] if len(others) == 2 else arrays       # complex last, too
    _same(getattr(ta, fn)([ta.tensor(a) for a in arrays]),
          getattr(torch, fn)([torch.tensor(a) for a in arrays]))


def test_join_complex_gradient_reaches_the_real_tensor():
    x = torch.tensor([1., 2.], dtype=torch.float64, requires_grad=True)
    z = torch.tensor([1j, 2 + 1j])
    (torch.cat([x, z]) * torch.tensor([1 - 1j, 2j, 3., 4.])).real.sum().backward()
    xa = ta.tensor([1., 2.], dtype=ta.float64, requires_grad=True)
    za = ta.tensor(np.array([1j, 2 + 1j]))
    (ta.cat([xa, za]) * ta.tensor(np.array([1 - 1j, 2j, 3., 4.]))).real.sum().backward()
    _same(xa.grad, x.grad)


# eq/ne refused a Python complex number ("expected a Tensor or a number, got complex") where
# torch compares; the ordering comparisons must keep refusing it (torch raises), also for a
# real tensor, where NumPy would compare only the real part.
@pytest.mark.parametrize("name", ["eq", "ne", "lt", "le", "gt", "ge"])
@pytest.mark.parametrize("dtype", ["complex128", "complex64", "float64", "float32", "int64"])
@pytest.mark.parametrize("number", [1 + 2j, 3 + 0j, 1.0000001 + 0j, 3, 1.0])
def test_comparisons_with_a_python_complex_number(name, dtype, number):
    values = np.array([1 + 2j, 3 + 0j]) if dtype.startswith("complex") else np.array([1, 3])
    try:
        expected = getattr(torch, name)(torch.tensor(values.astype(dtype)), number)
    except RuntimeError:
        with pytest.raises((RuntimeError, NotImplementedError, TypeError)):
            getattr(ta, name)(ta.tensor(values.astype(dtype)), number)
        return
    _same(getattr(ta, name)(ta.tensor(values.astype(dtype)), number), expected)
