"""Ops whose float results follow torch's order of rounding, where a cancelling sum makes the
order visible beyond assert_close's tolerance (op_db's all-samples run, accuracy43)."""
import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="these tests compare with torch")

import tinyattn  # noqa: E402


def _tiny(t):
    return tinyattn.tensor(t.detach().numpy())


def _np(t):
    return t.detach().numpy() if isinstance(t, torch.Tensor) else t.numpy()


# --- matmul: torch's CPU bmm adds small products (K*M*N < 400) in k order -----------------
@pytest.mark.parametrize("sa,sb", [((10,), (5, 5, 10, 5)), ((3, 10), (4, 10, 5)),
                                   ((2, 3, 4), (2, 4, 5)), ((2, 1, 3, 4), (5, 4, 2)),
                                   ((20,), (3, 20, 19))])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16])
def test_small_batched_matmul_is_torch_bitwise(sa, sb, dtype):
    gen = torch.Generator().manual_seed(0)
    a = (torch.randn(sa, generator=gen) * 5).to(dtype)
    b = (torch.randn(sb, generator=gen) * 5).to(dtype)
    expected = torch.matmul(a, b)
    np.testing.assert_array_equal(_np(_tiny(a) @ _tiny(b)), _np(expected))


def test_op_db_matmul_sample_that_cancels():
    """op_db's (10,) @ (5, 5, 10, 5) float32 sample: BLAS's order of the same ten products
    differed from torch's by 1.5e-5 (over float32's 1e-5 + 1.3e-6 |x|)."""
    gen = torch.Generator().manual_seed(0)
    worst = 0.0
    for _ in range(20):
        a = torch.empty(10).uniform_(-9, 9, generator=gen)
        b = torch.empty(5, 5, 10, 5).uniform_(-9, 9, generator=gen)
        worst = max(worst, float(np.abs(_np(_tiny(a) @ _tiny(b)) - _np(a @ b)).max()))
        # the rmatmul spelling and the out= form go the same way
        np.testing.assert_array_equal(_np(_tiny(b).__rmatmul__(_tiny(a))), _np(a @ b))
    assert worst == 0.0


def test_small_batched_matmul_negative_control():
    """The k-order loop is what makes them agree: NumPy's BLAS order differs on these."""
    gen = torch.Generator().manual_seed(0)
    differs = 0
    for _ in range(20):
        a = torch.empty(10).uniform_(-9, 9, generator=gen)
        b = torch.empty(5, 5, 10, 5).uniform_(-9, 9, generator=gen)
        differs += int((a.numpy() @ b.numpy() != (a @ b).numpy()).any())
    assert differs > 0


# --- index_reduce "prod" in float16/bfloat16: each product rounded to the half dtype ------
_HALF = {torch.float16: "float16", torch.bfloat16: "bfloat16"}


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
@pytest.mark.parametrize("include_self", [True, False])
@pytest.mark.parametrize("dim", [0, 1, 2])
def test_half_index_reduce_prod_is_torch_bitwise(dtype, include_self, dim):
    gen = torch.Generator().manual_seed(dim)
    for _ in range(10):
        x = torch.empty(5, 5, 5).uniform_(-3, 3, generator=gen).to(dtype)
        shape = [5, 5, 5]
        shape[dim] = 10
        src = torch.empty(shape).uniform_(-3, 3, generator=gen).to(dtype)
        idx = torch.randint(0, 5, (10,), generator=gen)
        expected = x.index_reduce(dim, idx, src, "prod", include_self=include_self)
        half = _HALF[dtype]
        got = tinyattn.tensor(x.float().numpy()).to(half).index_reduce(
            dim, tinyattn.tensor(idx.numpy()), tinyattn.tensor(src.float().numpy()).to(half),
            "prod", include_self=include_self)
        np.testing.assert_array_equal(got.float().numpy(), expected.float().numpy())


def test_half_index_reduce_prod_negative_control():
    """A float32 product rounded once (what it did before) differs from torch's on these."""
    gen = torch.Generator().manual_seed(1)
    differs = 0
    for _ in range(10):
        x = torch.empty(5, 5, 5).uniform_(-3, 3, generator=gen).half()
        src = torch.empty(5, 10, 5).uniform_(-3, 3, generator=gen).half()
        idx = torch.randint(0, 5, (10,), generator=gen)
        once = x.float().index_reduce(1, idx, src.float(), "prod").half()
        differs += int((once != x.index_reduce(1, idx, src, "prod")).any())
    assert differs > 0


# --- addmm and multi_dot in float16/bfloat16 ----------------------------------------------
def _to(t, dtype):
    return tinyattn.tensor(t.float().numpy()).to(_HALF[dtype])


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
@pytest.mark.parametrize("alpha,beta", [(1, 1), (0.5, 2.0), (1.3, 0.7), (1, 0)])
def test_half_addmm_rounds_once_as_torch(dtype, alpha, beta):
    gen = torch.Generator().manual_seed(2)
    for m, k, n in [(3, 3, 3), (2, 5, 4), (5, 1, 2), (4, 7, 1)]:
        for _ in range(5):
            i = torch.empty(m, n).uniform_(-5, 5, generator=gen).to(dtype)
            a = torch.empty(m, k).uniform_(-5, 5, generator=gen).to(dtype)
            b = torch.empty(k, n).uniform_(-5, 5, generator=gen).to(dtype)
            expected = torch.addmm(i, a, b, alpha=alpha, beta=beta)
            got = tinyattn.addmm(_to(i, dtype), _to(a, dtype), _to(b, dtype), alpha=alpha,
                                 beta=beta)
            np.testing.assert_array_equal(got.float().numpy(), expected.float().numpy())


def test_half_addmm_gradient_still_flows():
    a = tinyattn.ones(2, 3, dtype="float16", requires_grad=True)
    b = tinyattn.ones(3, 2, dtype="float16")
    i = tinyattn.ones(2, 2, dtype="float16", requires_grad=True)
    out = tinyattn.addmm(i, a, b, alpha=2.0)
    assert out.dtype == np.float16 and out.grad_fn.name() == "AddmmBackward0"
    out.sum().backward()
    assert a.grad.dtype == np.float16 and float(a.grad.sum()) == 24.0
    assert float(i.grad.sum()) == 4.0


def test_multi_dot_chain_order_is_torchs():
    """torch multiplies the chain in the order with the fewest multiplications; each
    intermediate is rounded to float16, so the order shows in the values."""
    from tinyattn.ops.blas import _chain_order
    # (10x100) (100x5) (5x50): (A B) C costs 7500, A (B C) 75000: split after B (k = 1)
    assert _chain_order([(10, 100), (100, 5), (5, 50)])[0][2] == 1
    # (50x5) (5x100) (100x10): A (B C) (k = 0)
    assert _chain_order([(50, 5), (5, 100), (100, 10)])[0][2] == 0
    gen = torch.Generator().manual_seed(3)
    left_to_right_differs = 0
    for _ in range(30):
        dims = torch.randint(1, 7, (6,), generator=gen).tolist()
        ts = [torch.empty(dims[i], dims[i + 1]).uniform_(-5, 5, generator=gen).half()
              for i in range(5)]
        expected = torch.linalg.multi_dot(ts)
        got = tinyattn.linalg.multi_dot([_to(t, torch.float16) for t in ts])
        np.testing.assert_allclose(got.float().numpy(), expected.float().numpy(),
                                   rtol=1e-3, atol=1e-5)
        plain = ts[0]
        for t in ts[1:]:
            plain = plain @ t
        left_to_right_differs += int((plain != expected).any())
    assert left_to_right_differs > 0         # negative control: the order matters here


def test_op_db_multi_dot_float16_sample():
    gen = torch.Generator().manual_seed(4)
    ts = [torch.empty(s).uniform_(-9, 9, generator=gen).half()
          for s in [(2, 4), (4, 3), (3, 5), (5, 3), (3, 2)]]
    expected = torch.linalg.multi_dot(ts)
    got = tinyattn.linalg.multi_dot([_to(t, torch.float16) for t in ts])
    torch.testing.assert_close(torch.from_numpy(got.float().numpy()), expected.float())


# --- polygamma: torch's trigamma series in float32; half n >= 2 rounds zeta first ---------
def test_float32_trigamma_near_the_poles_is_torchs():
    """At -1, -2, ... sin(pi x) is float32 round-off, not 0: torch's huge finite values,
    which depend on pi and pi * pi rounded to float32 (op_db's samples at -1, -2, -0.5)."""
    x = torch.tensor([-1.0, -2.0, -3.0, -0.5, -1.5, -0.9999999, -2.0000002, 0.0, 2.0])
    expected = torch.polygamma(1, x)
    got = tinyattn.polygamma(1, _tiny(x))
    np.testing.assert_array_equal(_np(got), _np(expected))


def test_float32_trigamma_agrees_everywhere():
    x = torch.linspace(-30, 30, 20001)
    expected = torch.polygamma(1, x)
    got = torch.from_numpy(_np(tinyattn.polygamma(1, _tiny(x))))
    torch.testing.assert_close(got, expected, equal_nan=True)
    assert float((got == expected).float().mean()) > 0.98    # nearly all bit for bit


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
@pytest.mark.parametrize("n", [2, 3, 5])
def test_half_polygamma_rounds_zeta_first_as_torch(dtype, n):
    x = torch.linspace(-10, 10, 4001).to(dtype)
    expected = torch.polygamma(n, x).float().numpy()
    got = tinyattn.polygamma(n, _to(x, dtype)).float().numpy()
    same = (got == expected) | (np.isnan(got) & np.isnan(expected))
    assert same.mean() > 0.999
    if n == 2:      # n! = 2: the second rounding is exact, nothing to tell apart
        return
    # negative control: rounded once from the exact value, a quarter or more differ
    once = torch.polygamma(n, x.double()).to(dtype).float().numpy()
    assert ((once == expected) | (np.isnan(once) & np.isnan(expected))).mean() < 0.9


def test_half_polygamma_op_db_point():
    x = torch.tensor([-0.5], dtype=torch.float16)
    assert float(tinyattn.polygamma(3, _to(x, torch.float16))) == \
        float(torch.polygamma(3, x)) == 193.5


# --- float32 convolution: small ones in float64, rounded once -----------------------------
def _conv_errors(monkeypatch=None):
    """(torch's, tinyattn's) largest error against float64 over a few dilated 3-d samples,
    each relative to the sample's largest value."""
    import tinyattn.nn.functional as F
    gen = torch.Generator().manual_seed(5)
    worst_t = worst_o = 0.0
    for dilation, kernel in [(3, (4, 4, 4)), (2, (1, 2, 5)), (1, (3, 3, 3))]:
        for _ in range(3):
            x = torch.empty(1, 2, 10, 11, 12).uniform_(-9, 9, generator=gen)
            w = torch.empty((3, 2) + kernel).uniform_(-9, 9, generator=gen)
            t = torch.nn.functional.conv3d(x, w, padding="same", dilation=dilation)
            e = torch.nn.functional.conv3d(x.double(), w.double(), padding="same",
                                           dilation=dilation)
            o = torch.from_numpy(_np(F.conv3d(_tiny(x), _tiny(w), padding="same",
                                              dilation=dilation)))
            scale = float(e.abs().max())
            worst_t = max(worst_t, float((t.double() - e).abs().max()) / scale)
            worst_o = max(worst_o, float((o.double() - e).abs().max()) / scale)
    return worst_t, worst_o


def test_small_float32_conv_is_rounded_once():
    worst_torch, worst_ours = _conv_errors()
    assert worst_ours <= 6e-8 < worst_torch      # half a unit in the last place, or under


def test_small_float32_conv_negative_control(monkeypatch):
    """In float32 (BLAS's order) the error is torch's size: the float64 path is what helps."""
    from tinyattn.ops import conv
    monkeypatch.setattr(conv, "WIDE_CONV_PRODUCTS", 0)
    _, worst_float32 = _conv_errors()
    assert worst_float32 > 6e-8


def test_float32_conv_keeps_float32_and_gradients():
    import tinyattn.nn.functional as F
    x = tinyattn.randn(2, 3, 8, 8, requires_grad=True)
    w = tinyattn.randn(4, 3, 3, 3, requires_grad=True)
    out = F.conv2d(x, w, padding=1)
    assert out.dtype == np.float32
    out.sum().backward()
    assert x.grad.dtype == np.float32 and w.grad.dtype == np.float32
    xt = torch.from_numpy(x.detach().numpy()).requires_grad_()
    wt = torch.from_numpy(w.detach().numpy()).requires_grad_()
    torch.nn.functional.conv2d(xt, wt, padding=1).sum().backward()
    torch.testing.assert_close(torch.from_numpy(w.grad.numpy()), wt.grad)


# --- rows "on purpose" (skips.py ROUNDING_ORDER43): tinyattn's side of them ---------------
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_half_i0e_is_torchs_vectorized_result(dtype):
    """On a contiguous run torch's half i0e is float32's rounded once, as tinyattn's; its
    scalar path (a strided input) is further from float64 (the skip row's reason)."""
    import scipy.special
    x = torch.linspace(-20, 20, 32 * 600).to(dtype)           # whole vectors: no tail
    got = tinyattn.special.i0e(_to(x, dtype)).float().numpy()
    np.testing.assert_array_equal(got, torch.special.i0e(x).float().numpy())
    strided = x[::2]
    exact = scipy.special.i0e(strided.double().numpy())
    err_torch = np.abs(torch.special.i0e(strided).double().numpy() - exact).max()
    err_ours = np.abs(tinyattn.special.i0e(_to(strided, dtype)).float().numpy()
                      .astype(np.float64) - exact).max()
    assert err_ours < err_torch


def test_uint8_poisson_nll_losses_are_torchs_and_the_sum_closer():
    gen = torch.Generator().manual_seed(6)
    closer = worse = 0
    for _ in range(30):
        x = torch.randint(0, 20, (5, 5, 5), generator=gen, dtype=torch.uint8)
        y = torch.randint(0, 20, (5, 5, 5), generator=gen, dtype=torch.uint8)
        kw = dict(log_input=False, full=False)
        none = torch.nn.functional.poisson_nll_loss(x, y, reduction="none", **kw)
        ours = tinyattn.nn.functional.poisson_nll_loss(_tiny(x), _tiny(y), reduction="none", **kw)
        np.testing.assert_array_equal(_np(ours), _np(none))
        exact = none.double().sum().item()
        t = torch.nn.functional.poisson_nll_loss(x, y, reduction="sum", **kw).item()
        o = float(tinyattn.nn.functional.poisson_nll_loss(_tiny(x), _tiny(y), reduction="sum",
                                                          **kw))
        closer += abs(o - exact) < abs(t - exact)
        worse += abs(o - exact) > abs(t - exact)
    assert worse <= closer
