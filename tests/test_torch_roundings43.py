"""Stream onpurpose43: ops whose values used to differ from torch's by more than torch's
tolerance because tinyattn rounded less (the skip table's old "on purpose" rows). tinyattn now
follows torch's CPU algorithm and its roundings, so the values agree within
torch.testing's tolerance; each test compares with torch at the sizes that used to differ, and
a negative control shows the test would catch the old, more accurate values.
"""
from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="torch is the oracle these tests compare with")
scipy_special = pytest.importorskip("scipy.special", reason="the negative controls use SciPy")

import tinyattn as ta


def _close(got, want, **kw) -> bool:
    try:
        torch.testing.assert_close(got, want, equal_nan=True, **kw)
    except AssertionError:
        return False
    return True


def _torch_of(t) -> "torch.Tensor":
    name = np.dtype(t.dtype).name
    if name == "bfloat16":
        return torch.from_numpy(t.float().numpy()).to(torch.bfloat16)
    return torch.from_numpy(np.array(t.numpy()))


def _all_numbers(dtype) -> "torch.Tensor":
    """Every finite number of a 16-bit dtype."""
    x = torch.arange(-2 ** 15, 2 ** 15, dtype=torch.int32).to(torch.int16).view(dtype)
    return x[torch.isfinite(x)]


# ------------------------------------------------------------------ special.erfcx float32
def _erfcx_inputs() -> np.ndarray:
    rng = np.random.default_rng(43)
    return np.concatenate([rng.uniform(-9, 1000, 100_000), rng.uniform(-27, 60, 100_000),
                           10 ** rng.uniform(-8, 30, 20_000), -(10 ** rng.uniform(-8, 1.4, 20_000)),
                           [0.0, -0.0, 50.0, 50.000004, 5e7, 6e7, -6.1, -26.7, -27.0,
                            np.inf, -np.inf, np.nan]]).astype(np.float32)


def test_erfcx_float32_agrees_with_torch():
    x = _erfcx_inputs()
    got = ta.special.erfcx(ta.tensor(x))
    assert np.dtype(got.dtype) == np.float32
    want = torch.special.erfcx(torch.from_numpy(x))
    torch.testing.assert_close(torch.from_numpy(got.numpy()), want, equal_nan=True)


def test_erfcx_float32_control_scipy_differs():
    """Negative control: SciPy's correctly rounded float32 erfcx (tinyattn's old value) is
    outside torch's float32 tolerance on these inputs, so the test above can fail."""
    x = _erfcx_inputs()
    old = torch.from_numpy(scipy_special.erfcx(x))
    assert not _close(old, torch.special.erfcx(torch.from_numpy(x)))


def test_erfcx_float64_is_scipys():
    x = _erfcx_inputs().astype(np.float64)
    got = ta.special.erfcx(ta.tensor(x)).numpy()
    np.testing.assert_array_equal(got, scipy_special.erfcx(x))
    torch.testing.assert_close(torch.from_numpy(got), torch.special.erfcx(torch.from_numpy(x)),
                               equal_nan=True)


# ------------------------------------------------------------------ special.ndtr half
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_ndtr_half_bit_for_bit_on_every_number(dtype):
    x = _all_numbers(getattr(torch, dtype))
    want = torch.special.ndtr(x)
    got = ta.special.ndtr(ta.tensor(x.float().numpy()).to(dtype))
    assert np.dtype(got.dtype).name == dtype
    np.testing.assert_array_equal(got.float().numpy(), want.float().numpy())


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_ndtr_half_control_rounded_once_differs(dtype):
    """Negative control: Phi(x) in float32 rounded once (tinyattn's old value) is outside the
    half tolerance of torch's for some numbers."""
    x = _all_numbers(getattr(torch, dtype))
    old = torch.from_numpy(scipy_special.ndtr(x.float().numpy())).to(x.dtype)
    assert not _close(old, torch.special.ndtr(x))


def test_ndtr_half_on_op_db_sized_draws():
    gen = torch.Generator().manual_seed(43)
    for dtype in ("float16", "bfloat16"):
        for _ in range(50):
            x = (torch.rand(5, 5, generator=gen) * 18 - 9).to(getattr(torch, dtype))
            got = ta.special.ndtr(ta.tensor(x.float().numpy()).to(dtype))
            torch.testing.assert_close(_torch_of(got), torch.special.ndtr(x))


# ------------------------------------------------------------------ polygamma n >= 2 float32
def _near_poles() -> np.ndarray:
    rng = np.random.default_rng(43)
    return np.concatenate([rng.uniform(-9, 9, 200_000),
                           -0.5 + rng.standard_normal(50_000) * 1e-3,
                           -3.5 + rng.standard_normal(20_000) * 1e-3,
                           [0.0, -0.0, -1.0, -2.0, 1e-20, -1e-20, np.inf, -np.inf, np.nan]]
                          ).astype(np.float32)


@pytest.mark.parametrize("n", [2, 3, 4, 6])
def test_polygamma_float32_bit_for_bit(n):
    x = _near_poles()
    got = ta.polygamma(n, ta.tensor(x)).numpy()
    want = torch.polygamma(n, torch.from_numpy(x)).numpy()
    assert got.dtype == np.float32
    np.testing.assert_array_equal(got, want)


def test_polygamma_float32_control_rounded_once_differs():
    """Negative control: SciPy's float64 polygamma rounded once (tinyattn's old value) is
    outside float32's tolerance of torch's near x = -0.5 for n = 4."""
    x = _near_poles()
    with np.errstate(over="ignore"):
        old = scipy_special.polygamma(4, x.astype(np.float64)).astype(np.float32)
    old = torch.from_numpy(old)
    assert not _close(old, torch.polygamma(4, torch.from_numpy(x)))


def test_polygamma_float64_and_its_gradient_as_torch():
    x = np.array([-2.7, -0.4995, 0.3, 1.5, 7.25], dtype=np.float64)
    t = torch.tensor(x, requires_grad=True)
    torch.polygamma(3, t).sum().backward()
    a = ta.tensor(x, requires_grad=True)
    out = ta.polygamma(3, a)
    out.sum().backward()
    torch.testing.assert_close(torch.from_numpy(out.detach().numpy()),
                               torch.polygamma(3, torch.from_numpy(x)))
    torch.testing.assert_close(torch.from_numpy(a.grad.numpy()), t.grad)


# ------------------------------------------------------------------ addbmm float32
def _addbmm_cases():
    gen = torch.Generator().manual_seed(43)
    for _ in range(40):
        for input_shape in [(5, 10), (1,), ()]:
            for beta, alpha in [(1, 1), (0.6, 0.2), (0, 1.5)]:
                b1 = torch.rand(5, 5, 5, generator=gen) * 18 - 9
                b2 = torch.rand(5, 5, 10, generator=gen) * 18 - 9
                x = torch.rand(input_shape, generator=gen) * 18 - 9
                yield x, b1, b2, beta, alpha


def test_addbmm_float32_bit_for_bit_at_op_db_sizes():
    for x, b1, b2, beta, alpha in _addbmm_cases():
        want = torch.addbmm(x, b1, b2, beta=beta, alpha=alpha)
        got = ta.addbmm(ta.tensor(x.numpy()), ta.tensor(b1.numpy()), ta.tensor(b2.numpy()),
                        beta=beta, alpha=alpha)
        np.testing.assert_array_equal(got.numpy(), want.numpy())


def test_addbmm_float32_control_summed_products_differ():
    """Negative control: beta * input + alpha * sum_b b1[b] @ b2[b] (tinyattn's old value)
    is outside float32's tolerance of torch's for some of these cases."""
    outside = 0
    for x, b1, b2, beta, alpha in _addbmm_cases():
        old = np.float32(beta) * x.numpy() + np.float32(alpha) * (b1.numpy() @ b2.numpy()).sum(0)
        outside += not _close(torch.from_numpy(old.astype(np.float32)),
                              torch.addbmm(x, b1, b2, beta=beta, alpha=alpha))
    assert outside > 0


def test_addbmm_float32_out_and_gradients():
    x, b1, b2 = (torch.randn(s, generator=torch.Generator().manual_seed(7))
                 for s in [(3, 4), (6, 3, 2), (6, 2, 4)])
    out = ta.empty((3, 4))
    ta.addbmm(ta.tensor(x.numpy()), ta.tensor(b1.numpy()), ta.tensor(b2.numpy()), beta=0.5,
              alpha=2.0, out=out)
    np.testing.assert_array_equal(out.numpy(),
                                  torch.addbmm(x, b1, b2, beta=0.5, alpha=2.0).numpy())
    tx, t1, t2 = (t.clone().requires_grad_() for t in (x, b1, b2))
    torch.addbmm(tx, t1, t2, beta=0.5, alpha=2.0).pow(2).sum().backward()
    ax, a1, a2 = (ta.tensor(t.numpy(), requires_grad=True) for t in (x, b1, b2))
    ta.addbmm(ax, a1, a2, beta=0.5, alpha=2.0).pow(2).sum().backward()
    for got, want in [(ax, tx), (a1, t1), (a2, t2)]:
        torch.testing.assert_close(torch.from_numpy(got.grad.numpy()), want.grad)


# ------------------------------------------------------------------ matrix_exp float32
def _matrices():
    rng = np.random.default_rng(43)
    for n in (2, 3, 5, 8):
        for scale in (1e-9, 1e-4, 0.03, 0.3, 1.0, 3.0, 10.0, 40.0):   # every degree, squaring
            yield (rng.standard_normal((3, n, n)) * scale / n).astype(np.float32)


def test_matrix_exp_float32_as_torch():
    for a in _matrices():
        got = ta.matrix_exp(ta.tensor(a))
        assert np.dtype(got.dtype) == np.float32
        torch.testing.assert_close(torch.from_numpy(got.numpy()),
                                   torch.matrix_exp(torch.from_numpy(a)))


def test_matrix_exp_float32_bit_for_bit_on_op_db_like_samples():
    gen = torch.Generator().manual_seed(43)
    for _ in range(20):
        a = torch.rand(5, 5, generator=gen) * 18 - 9          # norms of about 20: squaring
        np.testing.assert_array_equal(ta.matrix_exp(ta.tensor(a.numpy())).numpy(),
                                      torch.matrix_exp(a).numpy())


def test_matrix_exp_float32_control_float64_rounded_differs():
    """Negative control: SciPy's float64 expm rounded once (tinyattn's old value) is outside
    float32's tolerance of torch's on such samples."""
    scipy_linalg = pytest.importorskip("scipy.linalg", reason="the control uses SciPy")
    gen = torch.Generator().manual_seed(43)
    outside = 0
    for _ in range(20):
        a = torch.rand(5, 5, generator=gen) * 18 - 9
        old = scipy_linalg.expm(a.double().numpy()).astype(np.float32)
        outside += not _close(torch.from_numpy(old), torch.matrix_exp(a))
    assert outside > 0


def test_matrix_exp_float64_gradient_as_torch():
    a = np.random.default_rng(1).standard_normal((4, 4)) * 0.7
    t = torch.tensor(a, requires_grad=True)
    torch.matrix_exp(t).pow(2).sum().backward()
    x = ta.tensor(a, requires_grad=True)
    ta.matrix_exp(x).pow(2).sum().backward()
    torch.testing.assert_close(torch.from_numpy(x.grad.numpy()), t.grad)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_matrix_exp_half_is_float64_rounded_not_torchs_bug(dtype):
    """torch's CPU half matrix_exp is far off (the skip table's "torch bug not copied" row);
    tinyattn's is the float64 answer rounded."""
    scipy_linalg = pytest.importorskip("scipy.linalg", reason="the reference is SciPy's")
    a = (0.3 * np.random.default_rng(0).standard_normal((3, 3))).astype(np.float32)
    got = ta.matrix_exp(ta.tensor(a).to(dtype)).float().numpy()
    exact = scipy_linalg.expm(ta.tensor(a).to(dtype).float().numpy().astype(np.float64))
    np.testing.assert_allclose(got, exact, rtol=1e-2, atol=1e-2)
    assert np.all(np.abs(got) < 10)


# ------------------------------------------------------------------ conv_transpose half
_CONV_T_CASES = [
    # (input shape, weight shape, options)
    ((2, 4, 7), (4, 3, 3), dict(stride=2, padding=1, output_padding=1)),
    ((1, 4, 6), (4, 2, 4), dict(groups=2, dilation=2)),
    ((2, 3, 5, 6), (3, 4, 3, 2), dict(stride=(2, 1), padding=(1, 0))),
    ((1, 4, 4, 4), (4, 2, 3, 3), dict(groups=2, dilation=(1, 2), output_padding=(0, 1),
                                      stride=(1, 2))),
    ((1, 3, 4, 4, 4), (3, 2, 3, 3, 3), dict(stride=2, padding=1)),
    ((2, 4, 3, 3), (4, 5, 3, 3), dict()),
]


def _conv_t_inputs(dtype, seed):
    gen = torch.Generator().manual_seed(seed)
    for shape, wshape, options in _CONV_T_CASES:
        x = (torch.rand(shape, generator=gen) * 18 - 9).to(dtype)
        w = (torch.rand(wshape, generator=gen) * 18 - 9).to(dtype)
        b = (torch.rand(wshape[1] * options.get("groups", 1), generator=gen) * 18 - 9
             ).to(dtype)
        yield x, w, b, options


def _ta_of(t, dtype):
    return ta.tensor(t.float().numpy()).to(dtype)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_conv_transpose_half_bit_for_bit(dtype):
    fn = {3: "conv_transpose1d", 4: "conv_transpose2d", 5: "conv_transpose3d"}
    for seed in range(3):
        for x, w, b, options in _conv_t_inputs(getattr(torch, dtype), seed):
            name = fn[x.ndim]
            want = getattr(torch.nn.functional, name)(x, w, b, **options)
            got = getattr(ta.nn.functional, name)(_ta_of(x, dtype), _ta_of(w, dtype),
                                                  _ta_of(b, dtype), **options)
            assert np.dtype(got.dtype).name == dtype
            np.testing.assert_array_equal(got.float().numpy(), want.float().numpy())


def test_conv_transpose_half_control_rounded_once_differs():
    """Negative control: the float32 result rounded once (tinyattn's old value) is outside
    the float16 tolerance of torch's for some of these cases."""
    outside = 0
    fn = {3: "conv_transpose1d", 4: "conv_transpose2d", 5: "conv_transpose3d"}
    for seed in range(3):
        for x, w, b, options in _conv_t_inputs(torch.float16, seed):
            f = getattr(torch.nn.functional, fn[x.ndim])
            old = f(x.float(), w.float(), b.float(), **options).half()
            outside += not _close(old, f(x, w, b, **options))
    assert outside > 0
