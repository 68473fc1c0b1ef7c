"""solve_triangular / triangular_solve, pinv / pinverse, matrix_rank, lstsq, cond, matrix_exp
and vander (ops/linalg_solvers.py) against torch: values, output structure, float64
gradients, errors; with a negative control."""
import numpy as np
import pytest

import tinyattn as ta

torch = pytest.importorskip("torch", reason="torch is the oracle for the linear algebra ops")

RNG = np.random.default_rng(11)


def _both(fn_ta, fn_torch, *arrays, grad=True, atol=1e-10):
    """Run both on the same float64 arrays; compare outputs and, with grad, the gradients of
    sum(out * w) for a fixed random w."""
    ours = [ta.tensor(a, requires_grad=grad) for a in arrays]
    theirs = [torch.tensor(a, requires_grad=grad) for a in arrays]
    out_ta, out_torch = fn_ta(*ours), fn_torch(*theirs)
    assert out_ta.shape == tuple(out_torch.shape) and str(out_ta.dtype) in str(out_torch.dtype)
    np.testing.assert_allclose(out_ta.detach().numpy(), out_torch.detach().numpy(),
                               rtol=1e-9, atol=atol)
    if grad:
        w = RNG.standard_normal(tuple(out_torch.shape))
        (out_ta * ta.tensor(w)).sum().backward()
        (out_torch * torch.tensor(w)).sum().backward()
        for a, t in zip(ours, theirs):
            np.testing.assert_allclose(a.grad.numpy(), t.grad.numpy(), rtol=1e-8, atol=atol)


@pytest.mark.parametrize("upper", [True, False])
@pytest.mark.parametrize("left", [True, False])
@pytest.mark.parametrize("unit", [True, False])
def test_solve_triangular_matches_torch(upper, left, unit):
    a = RNG.standard_normal((2, 3, 3)) + 3 * np.eye(3)     # not triangular: one side is read
    b = RNG.standard_normal((3, 4) if left else (4, 3))     # broadcast over A's batch
    _both(lambda x, y: ta.linalg.solve_triangular(x, y, upper=upper, left=left,
                                                  unitriangular=unit),
          lambda x, y: torch.linalg.solve_triangular(x, y, upper=upper, left=left,
                                                     unitriangular=unit), a, b)


def test_solve_triangular_singular_gives_inf_and_nan_as_torch():
    ours = ta.linalg.solve_triangular(ta.zeros(2, 2), ta.ones(2, 1), upper=True)
    theirs = torch.linalg.solve_triangular(torch.zeros(2, 2), torch.ones(2, 1), upper=True)
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


@pytest.mark.parametrize("transpose", [False, True])
@pytest.mark.parametrize("upper", [False, True])
def test_triangular_solve_matches_torch(upper, transpose):
    a = RNG.standard_normal((3, 3)) + 3 * np.eye(3)
    b = RNG.standard_normal((2, 3, 2))
    for part in (0, 1):
        _both(lambda y, x: ta.triangular_solve(y, x, upper, transpose)[part],
              lambda y, x: torch.triangular_solve(y, x, upper, transpose)[part], b, a)


@pytest.mark.parametrize("kwargs", [{}, {"rtol": 0.5}, {"atol": 0.5}, {"hermitian": True},
                                    {"atol": 0.1, "rtol": 0.2}])
@pytest.mark.parametrize("shape", [(4, 3), (3, 5), (2, 3, 3)])
def test_pinv_and_matrix_rank_match_torch(shape, kwargs):
    a = RNG.standard_normal(shape)
    if kwargs.get("hermitian"):
        if shape[-1] != shape[-2]:
            return
        a = a + np.swapaxes(a, -1, -2)
    _both(lambda x: ta.linalg.pinv(x, **kwargs), lambda x: torch.linalg.pinv(x, **kwargs), a,
          grad=not kwargs or kwargs == {"hermitian": True})
    ours = ta.linalg.matrix_rank(ta.tensor(a), **kwargs)
    theirs = torch.linalg.matrix_rank(torch.tensor(a), **kwargs)
    assert ours.dtype == np.int64 and ours.tolist() == theirs.tolist()


def test_pinverse_and_rank_deficient_pinv():
    a = RNG.standard_normal((5, 2)) @ RNG.standard_normal((2, 4))      # rank 2
    _both(ta.pinverse, torch.pinverse, a, grad=False)
    _both(lambda x: ta.linalg.pinv(x), lambda x: torch.linalg.pinv(x), a, atol=1e-8)
    assert ta.linalg.matrix_rank(ta.tensor(a)).item() == 2


@pytest.mark.parametrize("driver", [None, "gels", "gelsy", "gelsd", "gelss"])
@pytest.mark.parametrize("shapes", [((5, 3), (5, 2)), ((3, 3), (3, 1)), ((2, 3, 4), (2, 3, 2)),
                                    ((5, 3), (5,))])
def test_lstsq_matches_torch_output_by_output(shapes, driver):
    a, b = RNG.standard_normal(shapes[0]), RNG.standard_normal(shapes[1])
    ours = ta.linalg.lstsq(ta.tensor(a), ta.tensor(b), driver=driver)
    theirs = torch.linalg.lstsq(torch.tensor(a), torch.tensor(b), driver=driver)
    assert type(ours).__name__ == "linalg_lstsq"
    for name in ("solution", "residuals", "rank", "singular_values"):
        got, want = getattr(ours, name), getattr(theirs, name)
        assert got.shape == tuple(want.shape), (name, got.shape, want.shape)
        assert str(got.dtype) in str(want.dtype), name
        np.testing.assert_allclose(got.numpy(), want.numpy(), atol=1e-10, err_msg=name)
    _both(lambda x, y: ta.linalg.lstsq(x, y, driver=driver).solution,
          lambda x, y: torch.linalg.lstsq(x, y, driver=driver).solution, a, b)


def test_lstsq_residuals_have_torch_gradient():
    a, b = RNG.standard_normal((6, 3)), RNG.standard_normal((6, 2))
    _both(lambda x, y: ta.linalg.lstsq(x, y, driver="gelsd").residuals,
          lambda x, y: torch.linalg.lstsq(x, y, driver="gelsd").residuals, a, b)
    with pytest.raises(RuntimeError, match="driver"):
        ta.linalg.lstsq(ta.ones(3, 2), ta.ones(3, 1), driver="lapack")


@pytest.mark.parametrize("p", [None, 2, -2, "fro", "nuc", float("inf"), float("-inf"), 1, -1])
def test_cond_matches_torch(p):
    a = RNG.standard_normal((2, 3, 3))
    # torch 2.13's backward of cond for the norms through inv raises (it writes in place into
    # inv_ex's output); its gradient is compared where it has one
    _both(lambda x: ta.linalg.cond(x, p), lambda x: torch.linalg.cond(x, p), a, atol=1e-8,
          grad=p in (None, 2, -2, "nuc"))
    singular = np.array([[1.0, 2.0], [2.0, 4.0]])
    ours = ta.linalg.cond(ta.tensor(singular), p).item()
    theirs = torch.linalg.cond(torch.tensor(singular), p).item()
    if p in (None, 2, "nuc"):          # roundoff: a huge ratio, finite or not, in both
        assert min(ours, theirs) > 1e15
    else:
        assert ours == pytest.approx(theirs, rel=1e-6) or (np.isinf(ours) and np.isinf(theirs))


@pytest.mark.parametrize("shape", [(3, 3), (2, 4, 4), (0, 0)])
def test_matrix_exp_matches_torch(shape):
    a = 0.7 * RNG.standard_normal(shape)
    _both(ta.matrix_exp, torch.matrix_exp, a, grad=0 not in shape)
    _both(ta.linalg.matrix_exp, torch.linalg.matrix_exp, a, grad=False)


def test_matrix_exp_keeps_half_dtypes_as_torch_with_float32_accuracy():
    """torch keeps the half dtype (its CPU kernel's values are far off: see the skip table);
    tinyattn keeps it too: the float64 result rounded once."""
    a = 0.3 * RNG.standard_normal((3, 3))
    exact = torch.linalg.matrix_exp(torch.tensor(a)).numpy()
    for dtype in ("float16", "bfloat16"):
        ours = ta.linalg.matrix_exp(ta.tensor(a).to(dtype))
        assert str(ours.dtype) == dtype
        assert torch.linalg.matrix_exp(torch.tensor(a).to(getattr(torch, dtype))).dtype == \
            getattr(torch, dtype)
        np.testing.assert_allclose(ours.float().numpy(), exact, atol=0.03)


@pytest.mark.parametrize("n", [None, 2, 5])
def test_vander_matches_torch(n):
    x = np.array([[1.5, -2.0, 0.0], [0.5, 3.0, 1.0]])
    _both(lambda t: ta.linalg.vander(t, N=n), lambda t: torch.linalg.vander(t, N=n), x)
    ints = ta.linalg.vander(ta.tensor([1, 2, 3], dtype="int32"), N=n)
    assert ints.dtype == np.int64
    assert ints.tolist() == torch.linalg.vander(torch.tensor([1, 2, 3], dtype=torch.int32),
                                                N=n).tolist()
    for bad in (ta.tensor([True]), ta.ones(3, dtype="float16")):
        with pytest.raises(RuntimeError, match="linalg.vander supports"):
            ta.linalg.vander(bad)


def test_errors_as_torch():
    with pytest.raises(RuntimeError, match="square matrices"):
        ta.linalg.solve_triangular(ta.ones(2, 3), ta.ones(2, 1), upper=True)
    with pytest.raises(RuntimeError, match="Expected a floating point"):
        ta.linalg.matrix_exp(ta.ones(2, 2, dtype="int64"))
    with pytest.raises(RuntimeError, match="float, double"):
        ta.linalg.pinv(ta.eye(2, dtype="int64"))
    with pytest.raises(RuntimeError, match="float and double"):
        ta.linalg.lstsq(ta.eye(2, dtype="float16"), ta.eye(2, dtype="float16"))


def test_negative_control_a_dropped_triangle_cut_is_caught():
    """The gradient comparison is not vacuous: a full (uncut) dA differs from torch's."""
    a = RNG.standard_normal((3, 3)) + 3 * np.eye(3)
    b = RNG.standard_normal((3, 2))
    with pytest.raises(AssertionError):
        _both(lambda x, y: ta.linalg.solve(x.triu(), y),       # reads the whole of x.triu()
              lambda x, y: torch.linalg.solve_triangular(x, y, upper=False), a, b)
