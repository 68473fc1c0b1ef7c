"""softmax and log_softmax give torch's values at the infinities: a row that is entirely -inf
gives NaN, a row holding +inf (or NaN) gives NaN everywhere. The attention ops keep torch's
zeros for a fully masked row (F.scaled_dot_product_attention, nn.MultiheadAttention with
need_weights=False); nn.MultiheadAttention's need_weights=True path gives NaN, as torch's."""
from __future__ import annotations

import numpy as np
import pytest

import tinyattn as ta
import tinyattn.functional as F
from tinyattn import nn

INF = float("inf")
ROWS = [[-INF, -INF, -INF], [INF, 1.0, 2.0], [1.0, INF, INF], [float("nan"), 1.0, 2.0],
        [-INF, 1.0, 2.0], [0.5, -1.0, 2.0], [-INF, INF, 0.0]]


def _torch():
    return pytest.importorskip("torch")


@pytest.mark.parametrize("name", ["softmax", "log_softmax"])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_rows_with_infinities_as_torch(name, dtype):
    torch = _torch()
    x = np.array(ROWS, dtype=dtype)
    expected = getattr(torch.nn.functional, name)(torch.tensor(x), dim=-1).numpy()
    got = getattr(F, name)(ta.tensor(x), dim=-1).numpy()
    np.testing.assert_array_equal(np.isnan(got), np.isnan(expected))
    np.testing.assert_allclose(got, expected, rtol=1e-6)
    got0 = getattr(F, name)(ta.tensor(x.T), dim=0).numpy()      # the same along dim 0
    np.testing.assert_allclose(got0, expected.T, rtol=1e-6)


def test_all_masked_row_is_nan_in_softmax():
    out = F.softmax(ta.tensor([[-INF, -INF], [0.0, 0.0]]), dim=-1).numpy()
    assert np.isnan(out[0]).all() and np.allclose(out[1], 0.5)


def test_finite_rows_still_pass_gradcheck():
    x = ta.tensor(np.random.default_rng(0).standard_normal((3, 4)), requires_grad=True)
    assert ta.gradcheck(lambda t: F.softmax(t, dim=-1), [x])
    assert ta.gradcheck(lambda t: F.log_softmax(t, dim=0), [x])


def test_partly_masked_rows_pass_gradcheck():
    mask = ta.tensor([[True, False, False], [False, False, True]])
    x = ta.tensor(np.random.default_rng(1).standard_normal((2, 3)), requires_grad=True)
    assert ta.gradcheck(lambda t: F.softmax(t.masked_fill(mask, -INF), dim=-1), [x])


def test_sdpa_keeps_zeros_for_a_fully_masked_row():
    torch = _torch()
    q = np.random.default_rng(2).standard_normal((1, 2, 3, 4)).astype(np.float32)
    keep = np.array([[True, True, True], [False, False, False], [True, False, True]])
    bias = np.where(keep, 0.0, -INF).astype(np.float32)
    for mask in (keep, bias):
        expected = torch.nn.functional.scaled_dot_product_attention(
            *(torch.tensor(q),) * 3, attn_mask=torch.tensor(mask)).numpy()
        got = F.scaled_dot_product_attention(*(ta.tensor(q),) * 3, attn_mask=ta.tensor(mask))
        np.testing.assert_allclose(got.numpy(), expected, rtol=1e-5, atol=1e-6)
        assert (got.numpy()[:, :, 1] == 0).all()


def test_sdpa_with_a_float_mask_that_needs_grad_keeps_zeros():
    q = ta.randn(1, 1, 2, 4)
    bias = ta.tensor([[0.0, 0.0], [-INF, -INF]], requires_grad=True)
    out = F.scaled_dot_product_attention(q, q, q, attn_mask=bias)
    assert (out.numpy()[0, 0, 1] == 0).all()


def _mha_pair(torch):
    torch.manual_seed(0)
    ref = torch.nn.MultiheadAttention(4, 2, batch_first=True)
    mine = nn.MultiheadAttention(4, 2, batch_first=True)
    mine.load_state_dict({k: v.detach().numpy() for k, v in ref.state_dict().items()})
    x = np.random.default_rng(3).standard_normal((2, 3, 4)).astype(np.float32)
    pad = np.array([[True, True, True], [False, False, True]])
    return ref, mine, x, pad


@pytest.mark.parametrize("need_weights", [True, False])
def test_multihead_attention_fully_padded_row_as_torch(need_weights):
    torch = _torch()
    ref, mine, x, pad = _mha_pair(torch)
    t = torch.tensor(x)
    out_ref, w_ref = ref(t, t, t, key_padding_mask=torch.tensor(pad), need_weights=need_weights)
    out, w = mine(ta.tensor(x), ta.tensor(x), ta.tensor(x), key_padding_mask=ta.tensor(pad),
                  need_weights=need_weights)
    out_ref = out_ref.detach().numpy()
    np.testing.assert_array_equal(np.isnan(out.numpy()), np.isnan(out_ref))
    np.testing.assert_allclose(out.numpy(), out_ref, rtol=1e-5, atol=1e-6)
    if need_weights:
        w_ref = w_ref.detach().numpy()
        np.testing.assert_array_equal(np.isnan(w.numpy()), np.isnan(w_ref))
        np.testing.assert_allclose(w.numpy(), w_ref, rtol=1e-5, atol=1e-6)


def test_sdpa_output_has_torchs_layout_so_view_works():
    """torch returns (B, h, S, d) laid out as (B, S, h, d) when q is; PyTorch's SDPA tutorial
    then writes y.transpose(1, 2).view(B, S, h * d)."""
    torch = _torch()
    b, s, h, d = 2, 5, 3, 4
    x = np.random.default_rng(4).standard_normal((b, s, h * d)).astype(np.float32)
    results = {}
    for name, lib in (("torch", torch), ("ta", ta)):
        q = lib.tensor(x).view(b, s, h, d).transpose(1, 2)          # (B, h, S, d)
        y = lib.nn.functional.scaled_dot_product_attention(q, q, q, is_causal=True)
        results[name] = (y.transpose(1, 2).is_contiguous(),
                         y.transpose(1, 2).view(b, s, h * d).detach().numpy())
        contiguous = lib.nn.functional.scaled_dot_product_attention(*(q.contiguous(),) * 3)
        assert contiguous.is_contiguous()                    # follows q's layout, as torch
    assert results["ta"][0] and results["torch"][0]
    np.testing.assert_allclose(results["ta"][1], results["torch"][1], rtol=1e-5, atol=1e-6)


def test_sdpa_layout_keeps_gradients():
    q = ta.tensor(np.random.default_rng(5).standard_normal((1, 3, 2, 4)), requires_grad=True)
    x = q.transpose(1, 2).contiguous().transpose(1, 2)       # laid out as (B, S, h, d)
    assert ta.gradcheck(lambda t: F.scaled_dot_product_attention(
        t.transpose(1, 2).contiguous().transpose(1, 2), t, t).transpose(1, 2).reshape(1, 2, 12),
        [q])
    assert not x.is_contiguous()
