"""torch.cdist, torch.pdist, torch.quantile/nanquantile, torch.mode and torch.frexp
(ops/distances.py, ops/order_stats.py, ops/float_parts.py) against torch: values, dtypes,
shapes, float64 gradients (with torch's subgradients at zero distances, NaN and ties),
errors, Tensor methods, and negative controls showing the comparisons can fail."""
import math

import numpy as np
import pytest

import tinyattn as ta
import tinyattn.functional as F

torch = pytest.importorskip("torch", reason="torch is the oracle for these ops")

RNG = np.random.default_rng(38)
MODES = ("use_mm_for_euclid_dist_if_necessary", "use_mm_for_euclid_dist",
         "donot_use_mm_for_euclid_dist")
PS = (0.0, 0.5, 1.0, 1.5, 2.0, 3.0, math.inf)


def _compare(fn_ta, fn_torch, *arrays, atol=1e-10, grads=True):
    """Run both on the same float64 arrays (requiring grad); compare the outputs (all of a
    tuple) and, for the first output, the gradients of sum(out * g) for a random g."""
    ours_in = [ta.tensor(a, requires_grad=grads and a.dtype.kind == "f") for a in arrays]
    theirs_in = [torch.tensor(a, requires_grad=grads and a.dtype.kind == "f") for a in arrays]
    ours, theirs = fn_ta(*ours_in), fn_torch(*theirs_in)
    ours_all = ours if isinstance(ours, tuple) else (ours,)
    theirs_all = theirs if isinstance(theirs, tuple) else (theirs,)
    assert len(ours_all) == len(theirs_all)
    for o, t in zip(ours_all, theirs_all):
        assert o.shape == tuple(t.shape), (o.shape, t.shape)
        assert str(o.dtype).replace("torch.", "") == str(t.dtype).replace("torch.", "")
        np.testing.assert_allclose(o.detach().numpy(), t.detach().numpy(), rtol=1e-10,
                                   atol=atol)
    if not grads or not theirs_all[0].requires_grad:
        return
    g = RNG.standard_normal(tuple(theirs_all[0].shape))
    (ours_all[0] * ta.tensor(g)).sum().backward()
    (theirs_all[0] * torch.tensor(g)).sum().backward()
    for o, t in zip(ours_in, theirs_in):
        if t.requires_grad:
            want = t.grad if t.grad is not None else torch.zeros_like(t)
            got = o.grad.numpy() if o.grad is not None else np.zeros(o.shape)
            np.testing.assert_allclose(got, want.numpy(), atol=atol)


# ------------------------------------------------------------------ cdist and pdist
@pytest.mark.parametrize("p", PS)
@pytest.mark.parametrize("compute_mode", MODES)
@pytest.mark.parametrize("shapes", [((4, 3), (5, 3)), ((2, 1, 3, 4), (1, 2, 5, 4)),
                                    ((30, 2), (3, 2)), ((1, 1), (5, 1))])
def test_cdist_matches_torch_with_zero_distances_and_ties(shapes, compute_mode, p):
    a, b = RNG.integers(-2, 3, shapes[0]).astype(float), RNG.integers(-2, 3, shapes[1]) * 1.0
    b[..., 0, :] = a[..., 0, :] if a.shape[-2:] == b.shape[-2:] or a.ndim == 2 else b[..., 0, :]
    _compare(lambda x, y: ta.cdist(x, y, p, compute_mode),
             lambda x, y: torch.cdist(x, y, p, compute_mode), a, b, atol=1e-9)


def test_cdist_matrix_product_is_taken_when_torch_takes_it():
    """p = 2 with more than 25 rows goes through the matrix product by default; its node is
    EuclideanDist (torch: _euclidean_dist), and fewer rows stay direct."""
    big, small = ta.randn(26, 3, requires_grad=True), ta.randn(4, 3, requires_grad=True)
    assert type(ta.cdist(big, small).grad_fn).__name__ == "EuclideanDist"
    assert type(ta.cdist(small, small).grad_fn).__name__ == "Cdist"
    assert type(ta.cdist(big, small, p=1).grad_fn).__name__ == "Cdist"
    assert type(ta.cdist(big, small, compute_mode="donot_use_mm_for_euclid_dist")
                .grad_fn).__name__ == "Cdist"


@pytest.mark.parametrize("shapes", [((0, 5), (4, 5)), ((4, 5), (0, 5)), ((0, 4, 5), (3, 5)),
                                    ((2, 0), (3, 0))])
def test_cdist_empty_inputs(shapes):
    a, b = np.ones(shapes[0]), np.ones(shapes[1])
    _compare(ta.cdist, torch.cdist, a, b)


def test_cdist_float32_matches_torch_and_keeps_its_dtype():
    a = RNG.standard_normal((3, 4)).astype(np.float32)
    b = RNG.standard_normal((30, 4)).astype(np.float32)
    for mode in MODES:
        ours = ta.cdist(ta.tensor(a), ta.tensor(b), compute_mode=mode)
        theirs = torch.cdist(torch.tensor(a), torch.tensor(b), compute_mode=mode)
        assert ours.dtype == np.float32
        np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("call, error", [
    (lambda m: m.cdist(m.zeros(3), m.zeros(2, 3)), RuntimeError),
    (lambda m: m.cdist(m.zeros(2, 3), m.zeros(2, 4)), RuntimeError),
    (lambda m: m.cdist(m.zeros(2, 3, dtype=m.int64), m.zeros(2, 3, dtype=m.int64)),
     RuntimeError),
    (lambda m: m.cdist(m.zeros(2, 3), m.zeros(2, 3), p=-1.0), RuntimeError),
    (lambda m: m.cdist(m.zeros(2, 3), m.zeros(2, 3), compute_mode="fast"), ValueError),
    (lambda m: m.cdist(m.zeros(2, 3), m.zeros(2, 3, dtype=m.float64)), RuntimeError),
    (lambda m: m.cdist(m.zeros(2, 3, dtype=m.float16), m.zeros(2, 3, dtype=m.float16)),
     NotImplementedError),
    (lambda m: m.cdist(m.zeros(2, 2, 3), m.zeros(3, 2, 3)), RuntimeError),
    (lambda m: m.pdist(m.zeros(3)), RuntimeError),
    (lambda m: m.pdist(m.zeros(2, 3, 3)), RuntimeError),
    (lambda m: m.pdist(m.zeros(3, 2, dtype=m.int64)), RuntimeError),
    (lambda m: m.pdist(m.zeros(3, 2), -1.0), RuntimeError),
])
def test_distance_errors_as_torch(call, error):
    with pytest.raises(error):
        call(torch)
    with pytest.raises(error):
        call(ta)


@pytest.mark.parametrize("p", PS)
@pytest.mark.parametrize("shape", [(5, 3), (1, 4), (2, 1), (0, 3), (3, 0)])
def test_pdist_matches_torch_with_repeated_rows(shape, p):
    x = RNG.integers(-2, 3, shape).astype(float)
    if shape[0] > 2:
        x[2] = x[0]                                   # a zero distance
    grads = shape[0] > 0      # torch 2.13's pdist backward of a (0, M) input crashes
    _compare(lambda t: ta.pdist(t, p), lambda t: torch.pdist(t, p), x, grads=grads)
    _compare(lambda t: F.pdist(t, p), lambda t: torch.nn.functional.pdist(t, p), x,
             grads=grads)


def test_distance_comparison_can_fail():
    """Negative control: a gradient off by a factor of two is caught."""
    a, b = RNG.standard_normal((3, 2)), RNG.standard_normal((4, 2))
    with pytest.raises(AssertionError):
        _compare(lambda x, y: ta.cdist(x, y) * 2, torch.cdist, a, b)


# ------------------------------------------------------------------ quantile
INTERPOLATIONS = ("linear", "lower", "higher", "midpoint", "nearest")


@pytest.mark.parametrize("interpolation", INTERPOLATIONS)
@pytest.mark.parametrize("dim, keepdim", [(None, False), (None, True), (0, False), (1, True),
                                          (-1, False)])
@pytest.mark.parametrize("q", [0.5, 0.0, 1.0, 0.37, "tensor", "tensor0d"])
@pytest.mark.parametrize("which", ["quantile", "nanquantile"])
def test_quantile_matches_torch_with_ties(which, q, dim, keepdim, interpolation):
    x = RNG.integers(0, 4, (4, 6)).astype(float)       # many ties
    arrays = [x]
    if q == "tensor":
        arrays.append(np.array([0.0, 0.1, 0.5, 5 / 6, 1.0]))
    elif q == "tensor0d":
        arrays.append(np.array(0.3))

    def call(module):
        def run(t, *qs):
            value = qs[0] if qs else q
            return getattr(module, which)(t, value, dim=dim, keepdim=keepdim,
                                          interpolation=interpolation)
        return run
    _compare(call(ta), call(torch), *arrays)


@pytest.mark.parametrize("which", ["quantile", "nanquantile"])
@pytest.mark.parametrize("interpolation", INTERPOLATIONS)
def test_quantile_with_nans_matches_torch(which, interpolation):
    x = RNG.standard_normal((4, 5))
    x[0, 1] = x[1, 0] = x[1, 3] = np.nan
    x[2] = np.nan                                      # a slice of NaN only
    q = np.array([0.0, 0.25, 0.5, 0.9])
    _compare(lambda t, s: getattr(ta, which)(t, s, 1, interpolation=interpolation),
             lambda t, s: getattr(torch, which)(t, s, 1, interpolation=interpolation), x, q)


def test_quantile_methods_zero_dim_and_float32():
    x = RNG.standard_normal((3, 5))
    _compare(lambda t: t.quantile(0.2, 1), lambda t: t.quantile(0.2, 1), x)
    _compare(lambda t: t.nanquantile(0.7), lambda t: t.nanquantile(0.7), x)
    _compare(lambda t: ta.quantile(t, 0.3, 0, True), lambda t: torch.quantile(t, 0.3, 0, True),
             np.array(2.5))
    _compare(lambda t, s: ta.quantile(t, s), lambda t, s: torch.quantile(t, s),
             np.array(2.5), np.array([0.2, 0.4]))
    x32 = RNG.standard_normal((7, 9)).astype(np.float32)
    ours = ta.quantile(ta.tensor(x32), 0.3, 1)
    theirs = torch.quantile(torch.tensor(x32), 0.3, 1)
    assert ours.dtype == np.float32
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())     # same float32 steps


@pytest.mark.parametrize("call, error", [
    (lambda m: m.quantile(m.tensor([1.0, 2.0]), 1.5), RuntimeError),
    (lambda m: m.quantile(m.tensor([1.0, 2.0]), float("nan")), RuntimeError),
    (lambda m: m.quantile(m.tensor([1.0, 2.0]), m.tensor([0.5, 1.2])), RuntimeError),
    (lambda m: m.quantile(m.tensor([1.0, 2.0]), m.tensor([[0.5]])), RuntimeError),
    (lambda m: m.quantile(m.tensor([1, 2]), 0.5), RuntimeError),
    (lambda m: m.quantile(m.tensor([1.0, 2.0], dtype=m.float16), 0.5), RuntimeError),
    (lambda m: m.quantile(m.tensor([1.0, 2.0]), m.tensor([0.5], dtype=m.float64)),
     RuntimeError),
    (lambda m: m.quantile(m.tensor([1.0, 2.0]), 0.5, interpolation="cubic"), RuntimeError),
    (lambda m: m.quantile(m.zeros(0, 3), 0.5, 0), RuntimeError),
    (lambda m: m.quantile(m.zeros(2, 3), 0.5, 2), IndexError),
    (lambda m: m.nanquantile(m.tensor([]), 0.5), RuntimeError),
])
def test_quantile_errors_as_torch(call, error):
    with pytest.raises(error):
        call(torch)
    with pytest.raises(error):
        call(ta)


def test_quantile_of_an_empty_q_and_a_bool_q():
    x = ta.tensor([1.0, 2.0, 4.0])
    assert ta.quantile(x, ta.tensor([])).shape == tuple(torch.quantile(
        torch.tensor([1.0, 2.0, 4.0]), torch.tensor([])).shape)
    assert ta.quantile(x, True).item() == torch.quantile(torch.tensor([1.0, 2.0, 4.0]),
                                                         True).item()


def test_quantile_comparison_can_fail():
    """Negative control: 'lower' against torch's 'higher' differs."""
    x = RNG.standard_normal(6)
    with pytest.raises(AssertionError):
        _compare(lambda t: ta.quantile(t, 0.3, interpolation="lower"),
                 lambda t: torch.quantile(t, 0.3, interpolation="higher"), x)


# ------------------------------------------------------------------ mode
@pytest.mark.parametrize("dtype", ["float64", "float32", "int64", "int8", "bool", "float16"])
@pytest.mark.parametrize("dim, keepdim", [(-1, False), (0, True), (1, False)])
def test_mode_matches_torch_values_indices_and_gradient(dtype, dim, keepdim):
    x = RNG.integers(0, 3, (6, 5, 4))
    x = x.astype(np.bool_) if dtype == "bool" else x.astype(dtype)
    grads = dtype in ("float64",)
    _compare(lambda t: ta.mode(t, dim, keepdim), lambda t: torch.mode(t, dim, keepdim), x,
             grads=grads)
    _compare(lambda t: t.mode(dim, keepdim=keepdim), lambda t: t.mode(dim, keepdim=keepdim),
             x, grads=grads)


def test_mode_zero_dim_empty_and_nan():
    _compare(ta.mode, torch.mode, np.array(3.0))
    _compare(lambda t: ta.mode(t, 1), lambda t: torch.mode(t, 1), np.zeros((0, 3)))
    _compare(ta.mode, torch.mode, np.array([1.0, 2.0, 2.0, 1.0, 3.0]))
    for module in (torch, ta):
        with pytest.raises(IndexError):
            module.mode(module.zeros(0, 3), 0)
    x = np.array([2.0, 1.0, 1.0, 2.0])
    values, indices = ta.mode(ta.tensor(x))
    assert values.item() == 1.0 and indices.item() == 2          # smallest value, last place


def test_mode_comparison_can_fail():
    """Negative control: the first occurrence is not torch's index."""
    x = np.array([1.0, 2.0, 1.0])
    with pytest.raises(AssertionError):
        _compare(lambda t: (ta.mode(t).values, ta.tensor(0)), torch.mode, x)


# ------------------------------------------------------------------ frexp
@pytest.mark.parametrize("dtype", ["float64", "float32", "float16", "bfloat16"])
def test_frexp_matches_torch(dtype):
    values = [1.5, -3.0, 0.0, -0.0, math.inf, -math.inf, math.nan, 1e-40, 6e-8, 0.3, 1e30,
              65504.0, 2.0 ** -20]
    ours = ta.frexp(ta.tensor(values).to(getattr(ta, dtype)))
    theirs = torch.frexp(torch.tensor(values).to(getattr(torch, dtype)))
    assert ours.exponent.dtype == np.int32 and str(ours.mantissa.dtype) == dtype
    np.testing.assert_array_equal(ours.exponent.numpy(), theirs.exponent.numpy())
    np.testing.assert_array_equal(ours.mantissa.float().numpy(),
                                  theirs.mantissa.float().numpy())


@pytest.mark.parametrize("dtype", ["float64", "float32", "float16"])
def test_frexp_gradient_as_torch_including_the_float32_power(dtype):
    values = [1.5, -3.0, 0.0, 1e-40, 1e-50, 1e300, 6e-8, math.inf, math.nan]
    x_ta = ta.tensor(values).to(getattr(ta, dtype)).requires_grad_()
    x_torch = torch.tensor(values).to(getattr(torch, dtype)).requires_grad_()
    m_ta, e_ta = x_ta.frexp()
    m_torch, e_torch = x_torch.frexp()
    assert not e_ta.requires_grad and not e_torch.requires_grad
    m_ta.sum().backward()
    m_torch.sum().backward()
    np.testing.assert_array_equal(x_ta.grad.float().numpy(), x_torch.grad.float().numpy())


def test_frexp_errors_and_saved_exponent():
    for module in (torch, ta):
        with pytest.raises(RuntimeError):
            module.frexp(module.tensor([1, 2]))
    # torch keeps the exponent for the backward: writing into it makes the backward raise
    x = ta.tensor([1.5, 3.0], requires_grad=True)
    mantissa, exponent = ta.frexp(x)
    exponent.add_(1)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        mantissa.sum().backward()


def test_frexp_comparison_can_fail():
    """Negative control: the exponent of 2 * x differs by one."""
    x = np.array([1.5, 3.0])
    with pytest.raises(AssertionError):
        np.testing.assert_array_equal(ta.frexp(ta.tensor(2 * x)).exponent.numpy(),
                                      torch.frexp(torch.tensor(x)).exponent.numpy())


# ------------------------------------------------------------------ triplet losses
@pytest.mark.parametrize("kwargs", [{}, {"margin": 10.0}, {"swap": True}, {"reduction": "none"},
                                    {"p": 1, "eps": 0.1, "reduction": "sum"}])
def test_triplet_margin_loss_matches_torch(kwargs):
    arrays = [RNG.standard_normal((5, 4)) for _ in range(3)]
    arrays[2][0] = arrays[1][0]                        # a tie for swap's minimum
    _compare(lambda *t: F.triplet_margin_loss(*t, **kwargs),
             lambda *t: torch.nn.functional.triplet_margin_loss(*t, **kwargs), *arrays)
    _compare(lambda *t: ta.nn.TripletMarginLoss(**kwargs)(*t),
             lambda *t: torch.nn.TripletMarginLoss(**kwargs)(*t), *arrays)


@pytest.mark.parametrize("swap", [False, True])
def test_triplet_margin_with_distance_loss_matches_torch(swap):
    arrays = [RNG.standard_normal((6, 3)) for _ in range(3)]
    l1 = lambda x, y: (x - y).abs().sum(-1)          # noqa: E731 - a distance of either library
    for ours, theirs in [(None, None), (ta.nn.CosineSimilarity(), torch.nn.CosineSimilarity()),
                         (l1, l1)]:
        _compare(lambda *t: ta.nn.TripletMarginWithDistanceLoss(distance_function=ours,
                                                                swap=swap, margin=0.5)(*t),
                 lambda *t: torch.nn.TripletMarginWithDistanceLoss(distance_function=theirs,
                                                                   swap=swap, margin=0.5)(*t),
                 *arrays)
    assert repr(ta.nn.TripletMarginWithDistanceLoss()) == \
        repr(torch.nn.TripletMarginWithDistanceLoss())


@pytest.mark.parametrize("call, error", [
    (lambda m: m.nn.functional.triplet_margin_loss(m.zeros(2, 3), m.zeros(2, 3), m.zeros(3)),
     RuntimeError),
    (lambda m: m.nn.functional.triplet_margin_loss(m.zeros(2, 3), m.zeros(2, 3), m.zeros(2, 3),
                                                   margin=-1.0), ValueError),
    (lambda m: m.nn.functional.triplet_margin_loss(m.zeros(2, 3), m.zeros(2, 3), m.zeros(2, 3),
                                                   reduction="abc"), ValueError),
    (lambda m: m.nn.functional.triplet_margin_with_distance_loss(
        m.zeros(2, 3), m.zeros(2, 3), m.zeros(2, 3), reduction="abc"), ValueError),
    (lambda m: m.nn.functional.triplet_margin_loss(m.zeros(2, 3), m.zeros(2, 4), m.zeros(2, 3)),
     RuntimeError),
    (lambda m: m.nn.TripletMarginLoss(margin=0.0), ValueError),
    (lambda m: m.nn.TripletMarginWithDistanceLoss(margin=0.0), ValueError),
])
def test_triplet_errors_as_torch(call, error):
    with pytest.raises(error):
        call(torch)
    with pytest.raises(error):
        call(ta)


# ------------------------------------------------------------------ polygamma, mvlgamma
@pytest.mark.parametrize("n", [0, 1, 2, 3, 4])
def test_polygamma_matches_torch_values_poles_and_gradient(n):
    x = np.array([0.5, 1.0, 2.5, -0.5, 0.0, -1.0, -2.5, 1e-8, 30.0, -3.7, 1e5])
    ours, theirs = ta.polygamma(n, ta.tensor(x)), torch.polygamma(n, torch.tensor(x))
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-8)   # NaN equal to NaN
    _compare(lambda t: ta.polygamma(n, t), lambda t: torch.polygamma(n, t),
             RNG.uniform(0.3, 6.0, (3, 4)), atol=1e-8)
    _compare(lambda t: t.polygamma(n), lambda t: t.polygamma(n), np.array(1.7), atol=1e-8)
    for dtype in ("int64", "float16", "bfloat16"):
        values = np.array([-2, -1, 0, 1, 3])
        a = ta.polygamma(n, ta.tensor(values).to(getattr(ta, dtype)))
        b = torch.polygamma(n, torch.tensor(values).to(getattr(torch, dtype)))
        assert str(a.dtype) in str(b.dtype)
        np.testing.assert_allclose(a.float().numpy(), b.float().numpy(), rtol=1e-2)


@pytest.mark.parametrize("p", [1, 2, 3, 5])
def test_mvlgamma_matches_torch(p):
    _compare(lambda t: ta.mvlgamma(t, p), lambda t: torch.mvlgamma(t, p),
             RNG.uniform(2.2, 6.0, (3, 4)))
    _compare(lambda t: ta.special.multigammaln(t, p), lambda t: torch.special.multigammaln(t, p),
             RNG.uniform(2.2, 6.0, (5,)))
    x = ta.tensor([2.0, 3.5])
    x.mvlgamma_(p)
    np.testing.assert_allclose(x.numpy(), torch.tensor([2.0, 3.5]).mvlgamma(p).numpy())


@pytest.mark.parametrize("call, error", [
    (lambda m: m.polygamma(-1, m.tensor([1.0])), RuntimeError),
    (lambda m: m.polygamma(1.5, m.tensor([1.0])), TypeError),
    (lambda m: m.mvlgamma(m.tensor([2.0]), 0), RuntimeError),
])
def test_polygamma_errors_as_torch(call, error):
    with pytest.raises(error):
        call(torch)
    with pytest.raises(error):
        call(ta)
