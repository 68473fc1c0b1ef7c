"""Cases found by rerunning torch's op database on the final tree (stream conf44): each is
checked here directly against torch 2.13.

- addcmul/addcdiv with a complex operand among real ones (op_db's reference sample: a float
  input, a float64 tensor1 and a complex128 tensor2) raised NumPy's "Invalid integer data
  type 'c'" while converting ``value``: the complex result dtype fell into the integer
  branch. tinyattn does not compute these ops in complex; it now refuses them as it refuses
  every complex operand of theirs, naming the op (torch computes: a loud refusal, listed with
  the complex ops in docs/pytorch.md).
- The regression losses (l1_loss, mse_loss, smooth_l1_loss, huber_loss, kl_div) with a real
  input and a complex target cast the target to the input's dtype, dropping its imaginary
  part: l1_loss(float64 x, complex128 t) returned a real number far from torch's (op_db's
  l1_loss reference sample); torch computes l1_loss and refuses the others. The pair's dtype
  matching (elementwise._match_dtypes) now converts only integer and bool operands; a complex
  target reaches the loss, which refuses it naming itself.
- ``Tensor(t)`` of a tensor made a float32 copy: a float64 tensor lost precision, a complex
  one its imaginary part, an int64 one became float, and a write to the result did not reach
  t. torch's legacy constructor returns ``t.alias()``: t's dtype and memory, AliasBackward0.
  Found by a probe of every public function with complex arguments next to op_db.
- ``searchsorted`` and ``nanmedian`` of complex tensors computed in NumPy's lexicographic
  order, where torch refuses (complex numbers have no order); they now refuse as ``median``
  and ``sort`` already did.
- ``tensor([1 + 2j], dtype=float64)`` (also ``as_tensor``, ``x.new_tensor`` and the legacy
  ``Tensor([1 + 2j])``) dropped the imaginary part: torch refuses a Python complex number for a
  real dtype (TypeError "must be real number, not complex", even for 1 + 0j). A NumPy complex
  array is still converted, as torch does.
- ``x.index_fill(dim, index, value)`` with a complex 0-d value tensor and a real x kept the
  value's real part; torch refuses ("Converting complex Scalar to non-complex type").
- ``x.fill_(1 + 0j)`` and ``x[i] = 1 + 0j`` on a real tensor raised NumPy's TypeError; torch
  converts a complex Scalar whose imaginary part is 0 and refuses any other (RuntimeError).
"""
from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="these cases compare with torch")

import tinyattn as ta  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore:.*batchmean:UserWarning")   # kl_div mean


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


_LOSSES = ["l1_loss", "mse_loss", "smooth_l1_loss", "huber_loss", "kl_div"]


@pytest.mark.parametrize("name", _LOSSES)
def test_loss_of_a_real_input_and_a_complex_target_keeps_the_imaginary_part(name):
    x = np.array([0.3, 0.6, -1.5])
    t = np.array([0.2 + 0.5j, 0.4 - 0.1j, 2j])
    try:
        expected = getattr(torch.nn.functional, name)(torch.from_numpy(x), torch.from_numpy(t))
    except (RuntimeError, NotImplementedError):
        expected = None                                 # torch refuses: so must tinyattn
    with pytest.raises(TypeError, match="complex"):     # no real answer from t.real alone
        getattr(ta.nn.functional, name)(ta.tensor(x), ta.tensor(t))
    if expected is not None:       # torch's answer depends on the imaginary parts: a loss of
        real_only = getattr(torch.nn.functional, name)(     # t.real alone differs from it
            torch.from_numpy(x), torch.from_numpy(t.real))
        assert not torch.allclose(expected.real.double(), real_only.double())


@pytest.mark.parametrize("name,tdtype", [(n, d) for n in _LOSSES for d in ("int64", "float32")
                                         if (n, d) != ("kl_div", "int64")])   # torch refuses
def test_loss_of_a_float_input_and_a_real_target_still_computes_as_torch(name, tdtype):
    x = np.array([0.3, 0.6, -1.5])        # negative control: integer and float targets are
    t = np.array([1, 0, 2]).astype(tdtype)     # converted as before
    expected = getattr(torch.nn.functional, name)(torch.from_numpy(x), torch.from_numpy(t))
    got = getattr(ta.nn.functional, name)(ta.tensor(x), ta.tensor(t))
    assert str(got.dtype) == str(expected.dtype)[6:]
    np.testing.assert_allclose(got.numpy(), expected.numpy(), rtol=1e-7)


@pytest.mark.parametrize("dtype", ["float64", "float32", "int64", "bool", "complex128"])
def test_legacy_constructor_of_a_tensor_is_an_alias(dtype):
    data = np.array([1.5 + 2j, -3 + 0.5j]) if dtype == "complex128" else \
        np.array([1.25, 0.0]).astype(dtype)
    t, a = torch.from_numpy(data.copy()), ta.tensor(data.copy())
    tt, at = torch.Tensor(t), ta.Tensor(a)
    assert str(at.dtype) == str(tt.dtype)[6:]
    np.testing.assert_array_equal(at.numpy(), tt.numpy())
    tt[0] = 1
    at[0] = 1                       # the write reaches the original, as torch's alias
    np.testing.assert_array_equal(a.numpy(), t.numpy())
    assert a.numpy()[0] == 1


def test_legacy_constructor_alias_carries_the_gradient():
    x = np.array([0.5, -2.0, 3.0])
    t = torch.tensor(x, requires_grad=True)
    a = ta.tensor(x, requires_grad=True)
    tt, at = torch.Tensor(t), ta.Tensor(a)
    assert type(tt.grad_fn).__name__ == at.grad_fn.name() == "AliasBackward0"
    (tt * tt).sum().backward()
    (at * at).sum().backward()
    np.testing.assert_allclose(a.grad.numpy(), t.grad.numpy())


def test_legacy_constructor_of_other_data_is_still_a_float32_copy():   # negative control
    for data in ([1, 2], np.array([1, 2], dtype=np.int64), np.array([1.5, 2.5])):
        expected = torch.Tensor(data)
        got = ta.Tensor(data)
        assert str(got.dtype) == str(expected.dtype)[6:] == "float32"
        np.testing.assert_array_equal(got.numpy(), expected.numpy())
    assert ta.Tensor(2, 3).shape == tuple(torch.Tensor(2, 3).shape)


@pytest.mark.parametrize("call", [
    lambda lib, r, c: lib.searchsorted(r, c), lambda lib, r, c: lib.searchsorted(c, r),
    lambda lib, r, c: lib.nanmedian(c), lambda lib, r, c: lib.nanmedian(c, 0)])
def test_complex_order_refused_as_torch(call):
    r, c = np.array([0.5, 2.0]), np.array([1 + 2j, 3 - 1j])
    with pytest.raises(NotImplementedError):
        call(torch, torch.from_numpy(r), torch.from_numpy(c))
    with pytest.raises(NotImplementedError, match="complex"):
        call(ta, ta.tensor(r), ta.tensor(c))


def test_real_order_ops_still_compute():            # negative control
    r, v = np.array([0.5, 2.0, float("nan"), 1.0]), np.array([1.0, 3.0])
    np.testing.assert_array_equal(ta.searchsorted(ta.tensor(np.sort(r[:2])), ta.tensor(v)).numpy(),
                                  torch.searchsorted(torch.from_numpy(np.sort(r[:2])),
                                                     torch.from_numpy(v)).numpy())
    assert ta.nanmedian(ta.tensor(r)).item() == torch.nanmedian(torch.from_numpy(r)).item()


_COMPLEX_DATA = [
    ("tensor", lambda L: L.tensor([1 + 2j, 3], dtype=L.float64)),
    ("tensor 0-d", lambda L: L.tensor(1 + 2j, dtype=L.float32)),
    ("tensor 1+0j", lambda L: L.tensor([1 + 0j], dtype=L.float64)),
    ("tensor int64", lambda L: L.tensor([1 + 2j], dtype=L.int64)),
    ("as_tensor", lambda L: L.as_tensor([[1 + 2j]], dtype=L.float64)),
    ("new_tensor", lambda L: L.zeros(2, dtype=L.float64).new_tensor([1 + 2j])),
    ("legacy Tensor", lambda L: L.Tensor([1 + 2j])),
]


@pytest.mark.parametrize("name,make", _COMPLEX_DATA, ids=[n for n, _ in _COMPLEX_DATA])
def test_python_complex_numbers_for_a_real_dtype_refused_as_torch(name, make):
    with pytest.raises(TypeError):
        make(torch)
    with pytest.raises(TypeError, match="not complex"):
        make(ta)


@pytest.mark.parametrize("make", [
    lambda L: L.tensor([1 + 2j, 3]), lambda L: L.tensor([1 + 2j], dtype=L.complex128),
    lambda L: L.tensor(np.array([1 + 2j, 3]), dtype=L.float32),      # NumPy data: converted
    lambda L: L.Tensor(np.array([1 + 2j])), lambda L: L.tensor([1.5, 2], dtype=L.float64)])
def test_complex_data_still_made_as_torch(make):                   # negative control
    expected, got = make(torch), make(ta)
    assert str(got.dtype) == str(expected.dtype)[6:]
    np.testing.assert_array_equal(got.numpy(), expected.numpy())


def test_index_fill_of_a_real_tensor_with_a_complex_value_tensor_refused_as_torch():
    x = np.array([0.5, -1.5, 2.0])
    with pytest.raises(RuntimeError, match="complex Scalar"):
        torch.from_numpy(x).index_fill(0, torch.tensor([0]), torch.tensor(1 + 2j))
    with pytest.raises(RuntimeError, match="complex Scalar"):
        ta.tensor(x).index_fill(0, ta.tensor([0]), ta.tensor(1 + 2j))


@pytest.mark.parametrize("value", [np.array(3.5), np.array(2, dtype=np.int64),
                                   np.array(1 + 2j)])
def test_index_fill_with_a_value_tensor_still_as_torch(value):    # negative control
    x = np.array([0.5, -1.5, 2.0]) + (1j if value.dtype.kind == "c" else 0)
    expected = torch.from_numpy(x).index_fill(0, torch.tensor([0, 2]), torch.from_numpy(value))
    got = ta.tensor(x).index_fill(0, ta.tensor([0, 2]), ta.tensor(value))
    assert str(got.dtype) == str(expected.dtype)[6:]
    np.testing.assert_array_equal(got.numpy(), expected.numpy())


_FILLS = [lambda x: x.fill_(1 + 0j), lambda x: x.fill_(1 + 2j),
          lambda x: x.__setitem__(0, 3 + 0j), lambda x: x.__setitem__(0, 1 + 2j),
          lambda x: x.__setitem__(slice(0, 2), -2 + 0j)]


@pytest.mark.parametrize("fill", _FILLS)
@pytest.mark.parametrize("dtype", ["float64", "float32", "int64"])
def test_complex_number_written_into_a_real_tensor_as_torch(fill, dtype):
    t, a = torch.zeros(3, dtype=getattr(torch, dtype)), ta.zeros(3, dtype=getattr(ta, dtype))
    try:
        fill(t)
    except RuntimeError:
        with pytest.raises(RuntimeError, match="cannot be converted"):
            fill(a)
        return
    fill(a)
    assert str(a.dtype) == str(t.dtype)[6:]
    np.testing.assert_array_equal(a.numpy(), t.numpy())
