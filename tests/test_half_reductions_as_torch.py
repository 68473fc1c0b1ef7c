"""float16/bfloat16 reductions that torch's CPU kernels round step by step, against torch."""
import numpy as np
import pytest

import tinyattn as ta

torch = pytest.importorskip("torch")


def _det(lib, *shape):
    """values in (0, 1) without drawing from either library's global generator (tests that
    compare seeded initialisations must not see their stream moved)"""
    n = int(np.prod(shape))
    return ((lib.arange(n) % 7) * 0.1 + 0.15).reshape(*shape)


def _ta(t):
    return ta.tensor(t.float().numpy()).to(dtype=str(t.dtype).split(".")[1])


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("include_self", [True, False])
def test_index_reduce_mean_half_bit_for_bit(dtype, include_self):
    gen = torch.Generator().manual_seed(0)
    td = getattr(torch, dtype)
    for shape, dim in (((5, 5), 1), ((5, 5, 5), 1), ((4, 3), 0)):
        n = 10
        x = (torch.randn(shape, generator=gen) * 5).to(td)
        src_shape = list(shape)
        src_shape[dim] = n
        src = (torch.randn(src_shape, generator=gen) * 5).to(td)
        index = torch.randint(0, shape[dim], (n,), generator=gen)
        expected = x.index_reduce(dim, index, src, "mean", include_self=include_self)
        got = ta.index_reduce(_ta(x), dim, ta.tensor(index.numpy()), _ta(src), "mean",
                              include_self=include_self)
        np.testing.assert_array_equal(got.float().numpy(), expected.float().numpy())


def test_index_reduce_mean_half_gradient_is_still_grad_over_count():
    x = ta.zeros(3, dtype="float16", requires_grad=True)
    src = ta.tensor([1.0, 2.0, 4.0], dtype="float16", requires_grad=True)
    ta.index_reduce(x, 0, ta.tensor([0, 0, 2]), src, "mean").sum().backward()
    tx = torch.zeros(3, dtype=torch.float16, requires_grad=True)
    tsrc = torch.tensor([1.0, 2.0, 4.0], dtype=torch.float16, requires_grad=True)
    tx.index_reduce(0, torch.tensor([0, 0, 2]), tsrc, "mean").sum().backward()
    assert x.grad.tolist() == tx.grad.tolist() and src.grad.tolist() == tsrc.grad.tolist()


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32", "float64"])
def test_histc_bins_bit_for_bit(dtype):
    gen = torch.Generator().manual_seed(0)
    td = getattr(torch, dtype)
    for trial in range(60):
        x = (torch.randn(40, generator=gen) * (1, 5, 20)[trial % 3]).to(td)
        low, high = ((0, 0), (-10, 10), (0, 10), (-10, 0), (-3.3, 2.7))[trial % 5]
        bins = (1, 3, 10, 100)[trial % 4]
        expected = torch.histc(x, bins, low, high)
        got = ta.histc(_ta(x), bins, low, high)
        np.testing.assert_array_equal(got.float().numpy(), expected.float().numpy())


def test_histc_bfloat16_is_not_placed_by_its_edges():
    """negative control: torch's bfloat16 histc puts -0.703125 into bin 93 of
    histc(bins=100, min=-10, max=0), though its linspace edge 93 is -0.69921875 (the
    formula's rounding, not the edges, decides)."""
    x = torch.tensor([-0.703125], dtype=torch.bfloat16)
    assert torch.histc(x, 100, -10, 0).argmax().item() == 93
    assert ta.histc(_ta(x), 100, -10, 0).argmax().item() == 93


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_addbmm_half_rounds_after_each_batch_as_torch(dtype):
    gen = torch.Generator().manual_seed(0)
    td = getattr(torch, dtype)
    for b, n, m, p in ((2, 5, 5, 5), (10, 5, 5, 5), (5, 5, 5, 10), (1, 3, 4, 2)):
        for beta, alpha in ((1, 1), (0.2, 0.6), (0.5, 2)):
            x = (torch.randn(n, p, generator=gen) * 9).to(td)
            b1 = (torch.randn(b, n, m, generator=gen) * 9).to(td)
            b2 = (torch.randn(b, m, p, generator=gen) * 9).to(td)
            expected = torch.addbmm(x, b1, b2, beta=beta, alpha=alpha)
            got = ta.addbmm(_ta(x), _ta(b1), _ta(b2), beta=beta, alpha=alpha)
            np.testing.assert_array_equal(got.float().numpy(), expected.float().numpy())


def test_addbmm_half_gradients_as_torch():
    gen = torch.Generator().manual_seed(1)
    x, b1, b2 = (torch.randn(s, generator=gen).half().requires_grad_()
                 for s in ((3, 2), (4, 3, 5), (4, 5, 2)))
    torch.addbmm(x, b1, b2, alpha=0.5).sum().backward()
    mine = [_ta(t.detach()).requires_grad_() for t in (x, b1, b2)]
    ta.addbmm(*mine, alpha=0.5).sum().backward()
    for t, m in zip((x, b1, b2), mine):
        np.testing.assert_allclose(m.grad.float().numpy(), t.grad.float().numpy(), rtol=2e-3,
                                   atol=2e-3)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("case", ["plain", "causal", "bool_mask", "float_mask", "three_d"])
def test_sdpa_half_values_as_torch(dtype, case):
    """torch's CPU flash kernel (4-D inputs) rounds exp(s - max) to the half dtype before
    the product with v; its math path (3-D here) computes in float32 and rounds once."""
    gen = torch.Generator().manual_seed(0)
    td = getattr(torch, dtype)
    lead = (3,) if case == "three_d" else (2, 3)
    for _ in range(5):
        q, k, v = ((torch.rand(lead + (n, 8), generator=gen) * 18 - 9).to(td)
                   for n in (5, 7, 7))
        mask = None
        if case == "bool_mask":
            mask = torch.rand(5, 7, generator=gen) > 0.3
        elif case == "float_mask":
            mask = torch.randn(5, 7, generator=gen).to(td)
        causal = case == "causal"
        F = torch.nn.functional
        expected = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, is_causal=causal)
        got = ta.nn.functional.scaled_dot_product_attention(
            _ta(q), _ta(k), _ta(v), attn_mask=None if mask is None else (
                ta.tensor(mask.numpy()) if mask.dtype == torch.bool else _ta(mask)),
            is_causal=causal)
        got, expected = got.float().numpy(), expected.float().numpy()
        # equal bit for bit but for a rare element where exp's last float32 bit (torch's
        # vectorised exp against NumPy's) moves the half rounding: one unit of the last place
        assert (got != expected).mean() < 0.01
        ulp = 2.0 ** (-10 if dtype == "float16" else -7)
        np.testing.assert_allclose(got, expected, rtol=ulp, atol=ulp * 1e-2)


def test_sdpa_half_rounding_matters():
    """negative control: the float32 result rounded once is not torch's 4-D float16 output."""
    gen = torch.Generator().manual_seed(0)
    q, k, v = ((torch.rand(4, 4, n, 8, generator=gen) * 18 - 9).half() for n in (3, 6, 6))
    F = torch.nn.functional
    once = F.scaled_dot_product_attention(q.float(), k.float(), v.float()).half()
    assert not torch.equal(once, F.scaled_dot_product_attention(q, k, v))


def test_sdpa_half_gradients_still_flow():
    gen = torch.Generator().manual_seed(2)
    q, k, v = (torch.randn(1, 2, 4, 8, generator=gen).half().requires_grad_() for _ in range(3))
    torch.nn.functional.scaled_dot_product_attention(q, k, v).sum().backward()
    mine = [_ta(t.detach()).requires_grad_() for t in (q, k, v)]
    ta.nn.functional.scaled_dot_product_attention(*mine).sum().backward()
    for t, m in zip((q, k, v), mine):
        np.testing.assert_allclose(m.grad.float().numpy(), t.grad.float().numpy(), atol=1e-2,
                                   rtol=1e-2)


def test_gcd_of_the_dtype_minimum_as_torch():
    """torch's |-128| wraps to -128 in int8 and its remainder keeps the dividend's sign:
    gcd(6, -128) is -2 (NumPy's gcd: 2, the negative control)."""
    a = torch.tensor([-128, -128, -128, 6, -128, 0, 12, 9], dtype=torch.int8)
    b = torch.tensor([2, 0, -128, -128, 96, -128, -8, 6], dtype=torch.int8)
    expected = torch.gcd(a, b)
    assert expected[3].item() == -2 and np.gcd(np.int8(6), np.int8(-128)) == 2
    assert ta.gcd(ta.tensor(a.numpy()), ta.tensor(b.numpy())).tolist() == expected.tolist()
    for dtype in (torch.int16, torch.int32, torch.int64):
        low = torch.iinfo(dtype).min
        a = torch.tensor([low, 6, low, 10], dtype=dtype)
        b = torch.tensor([4, low, 0, 15], dtype=dtype)
        got = ta.gcd(ta.tensor(a.numpy()), ta.tensor(b.numpy()))
        assert got.tolist() == torch.gcd(a, b).tolist()


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_poisson_nll_loss_full_half_as_torch(dtype):
    """Stirling's log(2 pi y) / 2: torch multiplies by 2 pi as a float32 number (tinyattn
    rounded 2 pi to the half dtype: 932 of 2000 products differed, the negative control)."""
    gen = torch.Generator().manual_seed(0)
    td = getattr(torch, dtype)
    x = (torch.rand(2000, generator=gen) * 9 + 0.1).to(td)
    y = (torch.rand(2000, generator=gen) * 9).to(td)
    F = torch.nn.functional
    expected = F.poisson_nll_loss(x, y, log_input=False, full=True, reduction="none")
    got = ta.nn.functional.poisson_nll_loss(_ta(x), _ta(y), log_input=False, full=True,
                                            reduction="none")
    np.testing.assert_array_equal(got.float().numpy(), expected.float().numpy())


@pytest.mark.parametrize("with_logits", [False, True])
@pytest.mark.parametrize("keyword", ["weight", "pos_weight"])
def test_bce_weight_written_after_the_op_makes_backward_raise(with_logits, keyword):
    if keyword == "pos_weight" and not with_logits:
        pytest.skip("binary_cross_entropy has no pos_weight")
    name = "binary_cross_entropy_with_logits" if with_logits else "binary_cross_entropy"
    for lib in (torch, ta):
        x = (_det(lib, 3, 4) * 0.8 + 0.1).requires_grad_()
        y = _det(lib, 3, 4)
        w = _det(lib, 4) + 0.5
        loss = getattr(lib.nn.functional, name)(x, y, **{keyword: w})
        w.add_(1.0)
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            loss.backward()
    x = _det(ta, 3, 4).requires_grad_()                # negative control: no write, no error
    ta.nn.functional.binary_cross_entropy(x * 0.5 + 0.2, _det(ta, 3, 4),
                                          weight=_det(ta, 4)).backward()


@pytest.mark.parametrize("shapes", [((10,), (5, 10, 5)), ((5, 10), (5, 10, 5)),
                                    ((10,), (2, 5, 10, 5))])
def test_matmul_vector_or_matrix_times_batch_keeps_a_copy_as_torch(shapes):
    """torch folds the batch operand into one matrix and keeps that copy: writing to it after
    the op leaves the backward valid (writing to the other operand still raises)."""
    for lib in (torch, ta):
        a = _det(lib, *shapes[0]).requires_grad_()
        b = _det(lib, *shapes[1]).requires_grad_()
        out = lib.matmul(a, b)
        with lib.no_grad():
            b.add_(1.0)
        out.sum().backward()                      # no error
        a2 = _det(lib, *shapes[0]).requires_grad_()
        b2 = _det(lib, *shapes[1]).requires_grad_()
        out = lib.matmul(a2, b2)
        with lib.no_grad():
            a2.add_(1.0)
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            out.sum().backward()                  # the control: a is kept itself


def test_conv_same_with_odd_padding_keeps_a_padded_copy_as_torch():
    """padding="same" with an odd total: torch pads first and keeps the padded copy, so a
    write to the input after the op leaves the backward valid; an even total keeps the input
    itself (the control: the write makes the backward raise)."""
    for lib in (torch, ta):
        for kernel, raises in (((1, 2, 5), False), ((1, 3, 5), True)):
            x = _det(lib, 1, 1, 6, 7, 8).requires_grad_()
            w = _det(lib, 1, 1, *kernel)
            out = lib.nn.functional.conv3d(x, w, padding="same")
            with lib.no_grad():
                x.add_(1.0)
            if raises:
                with pytest.raises(RuntimeError, match="modified by an inplace operation"):
                    out.sum().backward()
            else:
                out.sum().backward()
    gen = torch.Generator().manual_seed(0)
    x, w = torch.randn(1, 2, 5, 6, 7, generator=gen), torch.randn(3, 2, 2, 3, 4, generator=gen)
    expected = torch.nn.functional.conv3d(x, w, padding="same", dilation=2)
    got = ta.nn.functional.conv3d(ta.tensor(x.numpy()), ta.tensor(w.numpy()), padding="same",
                                  dilation=2)
    np.testing.assert_allclose(got.numpy(), expected.numpy(), rtol=1e-5, atol=1e-5)
