"""Complex arithmetic with inf, NaN and signed zeros as torch's CPU kernels compute it, cat's
dtype with complex tensors, polar's signed zeros, and the out= cases of stream complex43
(nonzero's refusals, empty out= tensors), each against torch itself.

What torch does (measured, torch 2.13 CPU): ``add(a, b, alpha)`` is ``a + alpha * b`` with
alpha a complex number (1 + 0i by default) and the product computed plainly, so an inf part of
b turns the other part NaN; ``sub`` is add with -alpha; ``mul`` rounds each of ac, bd, ad, bc
(its vectorised loop: no fused multiply-add); ``x.__radd__(y)`` is ``x + 1 * y``."""
import itertools

import numpy as np
import pytest

import tinyattn as ta

torch = pytest.importorskip("torch", reason="these tests compare with torch")

INF, NAN = float("inf"), float("nan")
PARTS = [0.0, -0.0, 1.0, -1.5, INF, -INF, NAN]
GRID = [complex(r, i) for r in PARTS for i in PARTS]
# every pair of special numbers: 49 * 49 = 2401 elements, so torch runs its vectorised loop
LEFT = np.array([a for a, _ in itertools.product(GRID, GRID)])
RIGHT = np.array([b for _, b in itertools.product(GRID, GRID)])


def _same_bits(actual, expected):
    """Equal element by element with NaN equal to NaN and the sign of a zero counted."""
    actual, expected = np.asarray(actual), np.asarray(expected)
    assert actual.dtype == expected.dtype and actual.shape == expected.shape

    def equal(p, q):
        return (np.isnan(p) & np.isnan(q)) | ((p == q) & (np.signbit(p) == np.signbit(q)))
    same = equal(actual.real, expected.real) & equal(actual.imag, expected.imag)
    bad = np.flatnonzero(~same)
    assert bad.size == 0, (f"{bad.size} elements differ, first at {bad[0]}: "
                           f"{actual.ravel()[bad[0]]} vs torch {expected.ravel()[bad[0]]}")


def _pair(array):
    return ta.tensor(array), torch.from_numpy(array.copy())


@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
@pytest.mark.parametrize("name", ["add", "sub", "mul"])
def test_special_values_as_torch(name, dtype):
    (a, ta_), (b, tb) = _pair(LEFT.astype(dtype)), _pair(RIGHT.astype(dtype))
    _same_bits(getattr(ta, name)(a, b).numpy(), getattr(torch, name)(ta_, tb).numpy())


def test_the_difference_is_real():
    """Negative control: NumPy's own a + b and a * b differ from torch on this grid, so the
    test above is not passing on values where every rule agrees."""
    a, b = LEFT.astype(np.complex64), RIGHT.astype(np.complex64)
    with pytest.raises(AssertionError), np.errstate(invalid="ignore"):
        _same_bits(a + b, torch.add(torch.from_numpy(a), torch.from_numpy(b)).numpy())
    big = np.array([-501 - 501j] * 16, dtype=np.complex64)
    other = np.array([-1001.2 - 1001.2j] * 16, dtype=np.complex64)
    want = torch.mul(torch.from_numpy(big), torch.from_numpy(other)).numpy()
    assert want[0].real == 0        # torch's vectorised loop: ac and bd round alike
    _same_bits(ta.mul(ta.tensor(big), ta.tensor(other)).numpy(), want)


def test_add_inf_cases_spelled_out():
    x, y = ta.tensor([0j]), ta.tensor([complex(0, INF)])
    tx, ty = torch.tensor([0j]), torch.tensor([complex(0, INF)])
    for ours, theirs in [(x + y, tx + ty), (y + x, ty + tx), (x.__radd__(y), tx.__radd__(ty)),
                         (complex(0, INF) + x, complex(0, INF) + tx),
                         (ta.sub(x, y), torch.sub(tx, ty)), (x - y, tx - ty),
                         (ta.rsub(x, y), torch.rsub(tx, ty)),
                         (ta.add(x, y, alpha=2), torch.add(tx, ty, alpha=2)),
                         (ta.add(x, y, alpha=1j), torch.add(tx, ty, alpha=1j)),
                         (ta.sub(x, y, alpha=-2.5), torch.sub(tx, ty, alpha=-2.5))]:
        _same_bits(ours.numpy(), theirs.numpy())
        assert str(ours) == str(theirs)
    assert str(x + y) == "tensor([nan+infj])"


@pytest.mark.parametrize("alpha", [1, 2, -1, 0.5, 2j, 1 - 1j])
def test_alpha_with_specials_and_in_place(alpha):
    a = LEFT.astype(np.complex128)[::7]
    b = RIGHT.astype(np.complex128)[::7]
    (x, tx), (y, ty) = _pair(a), _pair(b)
    for name in ("add", "sub"):
        _same_bits(getattr(ta, name)(x, y, alpha=alpha).numpy(),
                   getattr(torch, name)(tx, ty, alpha=alpha).numpy())
        x2, tx2 = x.clone(), tx.clone()
        getattr(x2, name + "_")(y, alpha=alpha)
        getattr(tx2, name + "_")(ty, alpha=alpha)
        _same_bits(x2.numpy(), tx2.numpy())


def test_real_and_complex_operands_mixed():
    real = np.array([INF, -0.0, 1.0, NAN] * 4, dtype=np.float32)
    comp = np.array([1 + 1j, -0.0 - 0.0j, complex(INF, 1), 2j] * 4, dtype=np.complex64)
    (r, tr), (c, tc) = _pair(real), _pair(comp)
    for ours, theirs in [(c + r, tc + tr), (r + c, tr + tc), (c - r, tc - tr),
                         (r - c, tr - tc), (c * r, tc * tr), (r * c, tr * tc)]:
        assert ours.dtype == np.complex64
        _same_bits(ours.numpy(), theirs.numpy())


def test_complex_alpha_refused_for_real_tensors():
    with pytest.raises(RuntimeError):
        torch.add(torch.ones(2), torch.ones(2), alpha=2j)
    with pytest.raises(RuntimeError, match="alpha must not be a complex"):
        ta.add(ta.ones(2), ta.ones(2), alpha=2j)
    assert ta.add(ta.ones(2) * 1j, ta.ones(2), alpha=2j).tolist() == [3j, 3j]


def test_gradients_of_add_sub_mul_with_alpha_match_torch():
    rng = np.random.default_rng(43)
    a = rng.standard_normal(6) + 1j * rng.standard_normal(6)
    b = rng.standard_normal(6) + 1j * rng.standard_normal(6)
    g = rng.standard_normal(6) + 1j * rng.standard_normal(6)
    for name, alpha in [("add", 1), ("add", 2 - 1j), ("sub", 1), ("sub", 0.5j), ("mul", None)]:
        x, y = ta.tensor(a, requires_grad=True), ta.tensor(b, requires_grad=True)
        tx = torch.tensor(a, requires_grad=True)
        ty = torch.tensor(b, requires_grad=True)
        kw = {} if alpha is None else {"alpha": alpha}
        out, tout = getattr(ta, name)(x, y, **kw), getattr(torch, name)(tx, ty, **kw)
        assert out.grad_fn.name() == tout.grad_fn.name()
        (out * ta.tensor(g)).real.sum().backward()
        (tout * torch.tensor(g)).real.sum().backward()
        np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-12)
        np.testing.assert_allclose(y.grad.numpy(), ty.grad.numpy(), rtol=1e-12)


def _numeric_complex_grad(fn, inputs, g, which, eps=1e-6):
    """Central differences of L = Re(sum(fn(*inputs) * g)) along the real and imaginary part
    of each element of inputs[which]: torch's z.grad = dL/dx + i dL/dy."""
    base = [np.array(v, dtype=np.complex128) for v in inputs]
    grad = np.zeros_like(base[which])
    for k in range(base[which].size):
        for step in (1, 1j):
            moved = []
            for sign in (1, -1):
                values = [v.copy() for v in base]
                values[which].flat[k] += sign * eps * step
                out = fn(*[ta.tensor(v) for v in values]).numpy()
                moved.append(float(np.real(np.sum(out * g))))
            grad.flat[k] += step * (moved[0] - moved[1]) / (2 * eps)
    return grad


def test_complex_gradients_against_finite_differences():
    """tinyattn's gradcheck takes float64 inputs only; this is its complex128 counterpart."""
    rng = np.random.default_rng(7)
    a = rng.standard_normal(4) + 1j * rng.standard_normal(4)
    b = rng.standard_normal(4) + 1j * rng.standard_normal(4)
    g = rng.standard_normal(4) + 1j * rng.standard_normal(4)
    for fn in (lambda x, y: ta.sub(x, y, alpha=2 - 3j), lambda x, y: ta.add(x, y, alpha=0.5j) * x,
               lambda x, y: ta.add(x, y), lambda x, y: x * y - y):
        x, y = ta.tensor(a, requires_grad=True), ta.tensor(b, requires_grad=True)
        (fn(x, y) * ta.tensor(g)).real.sum().backward()
        for which, t in enumerate((x, y)):
            np.testing.assert_allclose(t.grad.numpy(), _numeric_complex_grad(fn, (a, b), g, which),
                                       rtol=1e-6, atol=1e-8)


def test_square_is_the_same_product():
    z = np.full(64, 1e20 + 1e20j, dtype=np.complex64)  # a multiple of torch's vector width
    _same_bits(ta.square(ta.tensor(z)).numpy(), torch.square(torch.from_numpy(z)).numpy())
    _same_bits(ta.square(ta.tensor(LEFT.astype(np.complex64))).numpy(),
               torch.square(torch.from_numpy(LEFT.astype(np.complex64))).numpy())


# ------------------------------------------------------------------ cat and stack
@pytest.mark.parametrize("dtypes", [("complex64", "float64"), ("float64", "complex64"),
                                    ("complex64", "float64", "float16"), ("complex64", "int64"),
                                    ("int64", "complex64", "float64"), ("complex64", "float16"),
                                    ("complex64", "complex128"), ("bool", "complex64")])
def test_cat_and_stack_promote_complex_as_torch(dtypes):
    ours, theirs = [], []
    for i, name in enumerate(dtypes):
        values = np.array([1.5 + 2j * (name.startswith("complex")), -2.0]) + i
        t = torch.tensor(values.real if not name.startswith("complex") else values)
        t = t.to(getattr(torch, name))
        theirs.append(t)
        ours.append(ta.tensor(t.numpy()))
    for fn in ("cat", "stack"):
        got, want = getattr(ta, fn)(ours), getattr(torch, fn)(theirs)
        assert str(got.dtype) == str(want.dtype).replace("torch.", "")
        _same_bits(got.numpy(), want.numpy())


def test_cat_keeps_the_imaginary_part_and_its_gradient():
    z = ta.tensor([1 + 2j], dtype=ta.complex64, requires_grad=True)
    r = ta.tensor([3.0], dtype=ta.float64, requires_grad=True)
    out = ta.cat([z, r])
    assert out.dtype == np.complex128 and out.tolist() == [1 + 2j, 3 + 0j]
    (out * ta.tensor([1 - 1j, 2 + 5j])).real.sum().backward()
    tz = torch.tensor([1 + 2j], dtype=torch.complex64, requires_grad=True)
    tr = torch.tensor([3.0], dtype=torch.float64, requires_grad=True)
    (torch.cat([tz, tr]) * torch.tensor([1 - 1j, 2 + 5j])).real.sum().backward()
    assert z.grad.dtype == np.complex64 and r.grad.dtype == np.float64
    np.testing.assert_array_equal(z.grad.numpy(), tz.grad.numpy())
    np.testing.assert_array_equal(r.grad.numpy(), tr.grad.numpy())


# ------------------------------------------------------------------ polar
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_polar_keeps_signed_zeros(dtype):
    r = np.array([0.0, 0.0, -0.0, 1.0, INF, 2.0], dtype=dtype)
    theta = np.array([-1.0, 4.0, 1.0, 0.0, 0.0, -np.pi], dtype=dtype)
    got = ta.polar(ta.tensor(r), ta.tensor(theta))
    want = torch.polar(torch.from_numpy(r), torch.from_numpy(theta))
    _same_bits(got.numpy(), want.numpy())
    assert str(got) == str(want).replace("torch.", "")
    assert np.signbit(want.numpy()[0].imag)           # the -0 that used to come out +0


# ------------------------------------------------------------------ out=
def test_nonzero_out_refusals_as_torch():
    x, tx = ta.tensor([1.0, 0.0, 2.0]), torch.tensor([1.0, 0.0, 2.0])
    cases = [({"out": (ta.empty(0, dtype=ta.int64),)},
              {"out": (torch.empty(0, dtype=torch.long),)}, TypeError),
             ({"out": ta.empty(0, dtype=ta.int64), "as_tuple": True},
              {"out": torch.empty(0, dtype=torch.long), "as_tuple": True}, RuntimeError),
             ({"out": ta.empty(0)}, {"out": torch.empty(0)}, RuntimeError)]
    for ours, theirs, error in cases:
        with pytest.raises(error):
            torch.nonzero(tx, **theirs)
        with pytest.raises(error):
            ta.nonzero(x, **ours)
    out, tout = ta.empty(0, dtype=ta.int64), torch.empty(0, dtype=torch.long)
    assert ta.nonzero(x, out=out) is out
    torch.nonzero(tx, out=tout)
    assert out.tolist() == tout.tolist() == [[0], [2]]


def test_empty_out_tensors_are_written():
    """A (5, 0, 5) out= has no element to write twice (NumPy's strides for it hold a 0)."""
    for m in (ta, torch):
        x = m.zeros((5, 0, 5))
        mantissa, exponent = m.empty((5, 0, 5)), m.empty((5, 0, 5), dtype=m.int32)
        assert m.frexp(x, out=(mantissa, exponent))[0] is mantissa
        low, high = m.empty((0, 5)), m.empty((0, 5))
        assert m.aminmax(x, dim=0, out=(low, high))[1] is high
        drawn = m.empty((5, 0, 5))
        assert m.bernoulli(x, out=drawn) is drawn and tuple(drawn.shape) == (5, 0, 5)


def test_gather_into_an_empty_out():
    index = ta.zeros((2, 0), dtype=ta.int64)
    out = ta.empty((2, 0))
    assert ta.gather(ta.ones(5), 0, index.reshape(-1), out=out.reshape(-1)).shape == (0,)
    tout = torch.empty((2, 0))
    torch.gather(torch.ones(5), 0, torch.zeros((2, 0), dtype=torch.long).reshape(-1),
                 out=tout.reshape(-1))
    out = ta.empty((2, 0))
    ta.gather(ta.ones((5, 3)), 0, index, out=out)
    assert out.shape == (2, 0)
    expanded = ta.empty(1).expand(3)                    # a non-empty expanded out: refused
    with pytest.raises(RuntimeError, match="single memory location"):
        ta.gather(ta.ones(5), 0, ta.zeros(3, dtype=ta.int64), out=expanded)
