"""Complex tensors against torch (docs/derivations.md#complex-numbers): values, dtypes,
printing, promotion, views, gradients in torch's convention, and the loud refusals of the ops
not checked for complex numbers."""
import numpy as np
import pytest

import tinyattn as ta

torch = pytest.importorskip("torch")

Z = [1 + 2j, 3 - 1j, -0.5 + 0.25j]
W = [0.5 - 1j, 2 + 0.25j, -1.5 - 2j]


def _np(t):
    if hasattr(t, "resolve_conj"):
        t = t.detach().resolve_conj()
    return np.asarray(t.detach().numpy())


def _pair(values, dtype="complex64", grad=False):
    return (ta.tensor(values, dtype=getattr(ta, dtype), requires_grad=grad),
            torch.tensor(values, dtype=getattr(torch, dtype), requires_grad=grad))


# ------------------------------------------------------------------ dtypes and printing
def test_complex_dtypes_creation_and_printing_match_torch():
    assert ta.tensor(Z).dtype == np.complex64                   # Python complex: complex64
    assert ta.tensor(np.array(Z)).dtype == np.complex128         # NumPy keeps its dtype
    assert ta.cfloat == ta.complex64 and ta.cdouble == ta.complex128
    for values in ([1 + 2j, 3 - 1j], [1.5 + 2j, -0.25 - 3.125j], 1e10 + 1j,
                   [[1 + 1j, 2.5 - 1e-5j], [0j, -3j]], np.arange(30) * (1 + 1.5j)):
        for dtype in ("complex64", "complex128"):
            a, b = _pair(values, dtype)
            assert repr(a) == repr(b).replace("torch.", "")
    a, b = _pair(Z, grad=True)
    assert repr(a) == repr(b)
    assert a.is_complex() and not ta.ones(2).is_complex()


def test_promotion_with_complex_matches_torch():
    cases = [(np.ones(2, np.float32), np.ones(2, np.complex64)),
             (np.ones(2, np.float64), np.ones(2, np.complex64)),
             (np.ones(2, np.int64), np.ones(2, np.complex128)),
             (np.ones(2, np.float32), np.array(1j, np.complex128)),
             (np.ones(2, np.float64), np.array(1j, np.complex64)),
             (np.ones(2, np.int64), np.array(1j, np.complex128))]
    for a, b in cases:
        mine = (ta.tensor(a) + ta.tensor(b)).dtype
        theirs = (torch.tensor(a) + torch.tensor(b)).dtype
        assert str(theirs) == f"torch.{mine}", (a.dtype, b.dtype)
    for dtype in ("float32", "float64", "int32"):
        mine = (ta.ones(2, dtype=dtype) * 1j).dtype
        theirs = (torch.ones(2, dtype=getattr(torch, dtype)) * 1j).dtype
        assert str(theirs) == f"torch.{mine}"


def test_real_and_imag_are_views_and_writes_go_through():
    a, b = _pair(Z)
    for t in (a, b):
        t.real[0] = 7.0
        t.imag[1] = -5.0
    np.testing.assert_array_equal(a.numpy(), _np(b))
    assert ta.real(ta.ones(2)) is not None and ta.real(ta.ones(2)).dtype == np.float32
    with pytest.raises(RuntimeError, match="imag is not implemented"):
        ta.ones(2).imag
    v = ta.view_as_real(a)
    v[2, 1] = 9.0                                 # view_as_real is a view too
    assert a[2].item() == complex(a[2].real.item(), 9.0)


def test_conj_of_a_complex_tensor_refuses_writes():
    """torch's conj is a lazy view (writes reach the input conjugated); tinyattn's cannot be,
    so it is read-only: a write raises instead of changing only a copy."""
    a, _ = _pair(Z)
    c = ta.conj(a)
    np.testing.assert_allclose(c.numpy(), np.conj(a.numpy()))
    with pytest.raises((RuntimeError, ValueError)):
        c[0] = 1j
    p = ta.conj_physical(a)
    p[0] = 1j                                     # a copy of its own: writable
    assert a[0].item() == Z[0]


# ------------------------------------------------------------------ loud refusals
def test_ops_not_checked_for_complex_refuse_with_the_op_name():
    a, _ = _pair(Z, grad=True)
    with pytest.raises(TypeError, match="Sin: complex tensors"):
        ta.sin(a)
    with pytest.raises(TypeError, match="complex"):
        ta.sigmoid(a)
    for op in (lambda: a < a, lambda: ta.lt(a, a), lambda: ta.argmax(a), lambda: ta.sort(a),
               lambda: ta.argsort(a), lambda: ta.max(a, 0)):
        with pytest.raises(NotImplementedError, match="complex"):
            op()
    with pytest.raises(RuntimeError, match="same dtype"):
        ta.matmul(ta.ones(2, 3, dtype=ta.complex64), ta.ones(3, 2))
    with pytest.raises(RuntimeError, match="complex"):
        float(ta.tensor(1 + 1j))
    # negative control: the same ops on a real tensor run
    r = ta.tensor([1.0, 2.0, 3.0])
    assert ta.sin(r).shape == (3,) and ta.argmax(r).item() == 2


# ------------------------------------------------------------------ gradients
GRAD_CASES = {
    "mul": lambda z, w, m: m.abs(z * w).sum(),
    "div": lambda z, w, m: m.abs(z / w).sum(),
    "exp": lambda z, w, m: m.abs(m.exp(z) * w).sum(),
    "add_sub_neg": lambda z, w, m: m.abs(z + w - (-z) * 2).sum(),
    "matmul": lambda z, w, m: m.abs(m.matmul(z.reshape(3, 1), w.reshape(1, 3))).sum(),
    "real_imag": lambda z, w, m: (m.real(z * w) * m.imag(z)).sum(),
    "angle": lambda z, w, m: m.angle(z * w).sum(),
    "view_as_real_conj": lambda z, w, m: (m.view_as_real(z) ** 2).sum() + m.conj(w).imag.sum(),
    "numbers": lambda z, w, m: m.abs(z * (2 - 1j) + 1j - w * 3 + 1 / w).sum(),
    "shape_ops": lambda z, w, m: m.abs(m.cat([z, w]).mean() + m.stack([z, w]).flip(0)[0, 1]),
    "polar_complex": lambda z, w, m: m.abs(m.polar(z.abs(), w.angle())
                                           * m.complex(z.real, w.imag)).sum(),
    "view_as_complex": lambda z, w, m: m.abs(m.view_as_complex(m.view_as_real(z) * 2) * w).sum(),
    "real_meets_complex": lambda z, w, m: m.abs(z.real * w + z.imag.to(m.complex64)).sum(),
}


@pytest.mark.parametrize("name", sorted(GRAD_CASES))
def test_gradients_of_complex_ops_follow_torchs_convention(name):
    results = []
    for m in (ta, torch):
        z = m.tensor(Z, dtype=m.complex128, requires_grad=True)
        w = m.tensor(W, dtype=m.complex128, requires_grad=True)
        out = GRAD_CASES[name](z, w, m)
        out.backward()
        results.append((_np(out), _np(z.grad), _np(w.grad)))
    for mine, theirs in zip(*results):
        np.testing.assert_allclose(mine, theirs, rtol=1e-10, atol=1e-12)


def test_abs_and_angle_at_zero_give_torchs_zero_gradient():
    for op in ("abs", "angle"):
        grads = []
        for m in (ta, torch):
            z = m.tensor([0j, 1 + 1j], requires_grad=True)
            getattr(m, op)(z).sum().backward()
            grads.append(_np(z.grad))
        np.testing.assert_allclose(grads[0], grads[1], atol=1e-7)
    np.testing.assert_array_equal(ta.angle(ta.tensor([-1.0, 0.0, 2.0, np.nan])).numpy(),
                                  _np(torch.angle(torch.tensor([-1.0, 0.0, 2.0, np.nan]))))


def test_ops_whose_real_paths_would_be_wrong_on_complex_match_torch_or_refuse():
    """The paths found by calling every public function on a complex tensor: vdot, H/mH,
    isreal and is_signed agree with torch; pow (whose integer path would drop the graph),
    abs_, nansum, median, cov refuse."""
    a, b = _pair([[1 + 2j, 3 - 1j], [-1j, 2 + 0.5j]], "complex128")
    np.testing.assert_allclose(ta.vdot(a[0], a[1]).numpy(), _np(torch.vdot(b[0], b[1])))
    np.testing.assert_allclose(a.mH.numpy(), _np(b.mH))
    np.testing.assert_allclose(a.H.numpy(), _np(b.H))
    np.testing.assert_allclose(a.adjoint().numpy(), _np(b.adjoint()))
    c, d = _pair([1 + 0j, 2j, 0j])
    np.testing.assert_array_equal(ta.isreal(c).numpy(), _np(torch.isreal(d)))
    assert c.is_signed() == d.is_signed()
    z = ta.tensor(Z, requires_grad=True)
    for op, error in ((lambda: z ** 2, TypeError), (lambda: 2 ** z, TypeError),
                      (lambda: ta.pow(z, 2.0), TypeError), (lambda: z.detach().abs_(), RuntimeError),
                      (lambda: ta.nansum(z), RuntimeError), (lambda: ta.median(z), NotImplementedError),
                      (lambda: ta.cov(z.reshape(1, 3)), TypeError)):
        with pytest.raises(error):
            op()
    assert (ta.tensor([1.0, 2.0]) ** 2).tolist() == [1.0, 4.0]        # negative control


def test_a_write_through_a_dtype_changing_view_under_autograd_is_refused():
    """view_as_complex/view_as_real/.real/.imag reinterpret the dtype; tinyattn cannot give
    such a view a history after an in-place write, so the write raises (torch supports it)
    instead of the gradient coming out wrong. Without gradients the write goes through."""
    x = ta.tensor([[1.0, 2.0], [3.0, 4.0]], dtype=ta.float64, requires_grad=True)
    y = x * 1
    z = ta.view_as_complex(y)
    with pytest.raises(RuntimeError, match="reinterprets|view_as_real, view_as_complex"):
        z.mul_(2)
    with ta.no_grad():
        w = ta.view_as_complex(ta.tensor([[1.0, 2.0]]))
        w.mul_(1j)
        assert w.item() == (1 + 2j) * 1j
