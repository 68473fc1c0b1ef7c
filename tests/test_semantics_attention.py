"""Attention with PyTorch's names and semantics: nn.MultiheadAttention (PyTorch's module,
parameter for parameter), F.scaled_dot_product_attention's keywords (float masks,
enable_gqa), and tinyattn's MultiHeadAttention taking PyTorch's forward arguments with
PyTorch's meaning, plus grouped-query attention in the module and the KV cache."""
from __future__ import annotations

import numpy as np
import pytest

import tinyattn as ta
import tinyattn.functional as F
from tinyattn import nn

E, H, N, L, S = 8, 2, 2, 3, 5


def _torch():
    return pytest.importorskip("torch")


def _twin(torch, **kwargs):
    torch.manual_seed(0)
    tm = torch.nn.MultiheadAttention(E, H, dtype=torch.float64, **kwargs)
    with torch.no_grad():
        for p in tm.parameters():
            p.copy_(torch.randn_like(p) * 0.5)
    ours = nn.MultiheadAttention(E, H, **kwargs).double()
    ours.load_state_dict({k: v.detach().numpy() for k, v in tm.state_dict().items()})
    return ours, tm


def _masks(rng, kind):
    """(our kwargs, torch kwargs): the same PyTorch-convention masks for both."""
    if kind == "none":
        return {}
    if kind == "bool":
        attn = rng.random((L, S)) < 0.3
        attn[:, 0] = False                                # no fully masked row (torch: NaN)
        pad = np.zeros((N, S), bool)
        pad[1, 3:] = True
        return dict(attn_mask=attn, key_padding_mask=pad)
    if kind == "float":
        return dict(attn_mask=rng.standard_normal((L, S)),
                    key_padding_mask=np.where(rng.random((N, S)) < 0.3, -np.inf, 0.0))
    per_head = rng.random((N * H, L, S)) < 0.3
    per_head[..., 0] = False
    return dict(attn_mask=per_head)


@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("kind", ["none", "bool", "float", "per_head"])
def test_multihead_attention_is_pytorchs(batch_first, kind):
    torch = _torch()
    ours, tm = _twin(torch, batch_first=batch_first)
    assert [n for n, _ in ours.named_parameters()] == [n for n, _ in tm.named_parameters()]
    rng = np.random.default_rng(1)
    shape_q, shape_kv = ((N, L, E), (N, S, E)) if batch_first else ((L, N, E), (S, N, E))
    arrays = [rng.standard_normal(shape_q), rng.standard_normal(shape_kv),
              rng.standard_normal(shape_kv)]
    masks = _masks(rng, kind)
    t_in = [torch.tensor(a, requires_grad=True) for a in arrays]
    o_in = [ta.tensor(a, requires_grad=True) for a in arrays]
    t_out, t_w = tm(*t_in, **{k: torch.tensor(v) for k, v in masks.items()})
    o_out, o_w = ours(*o_in, **masks)
    np.testing.assert_allclose(o_out.numpy(), t_out.detach().numpy(), atol=1e-10)
    np.testing.assert_allclose(o_w.numpy(), t_w.detach().numpy(), atol=1e-10)
    g = rng.standard_normal(t_out.shape)
    (t_out * torch.tensor(g)).sum().backward()
    (o_out * ta.tensor(g)).sum().backward()
    for o, t in zip(o_in, t_in):
        np.testing.assert_allclose(o.grad.numpy(), t.grad.numpy(), atol=1e-10)
    for (name, p), (_, tp) in zip(ours.named_parameters(), tm.named_parameters()):
        np.testing.assert_allclose(p.grad.numpy(), tp.grad.numpy(), atol=1e-10, err_msg=name)


def test_multihead_attention_unbatched_kdim_vdim_and_weights_options():
    torch = _torch()
    ours, tm = _twin(torch, kdim=3, vdim=6)
    assert ours.in_proj_weight is None and ours.k_proj_weight.shape == (E, 3)
    rng = np.random.default_rng(2)
    q, k, v = rng.standard_normal((L, E)), rng.standard_normal((S, 3)), rng.standard_normal((S, 6))
    t_out, t_w = tm(*(torch.tensor(a) for a in (q, k, v)), average_attn_weights=False)
    o_out, o_w = ours(ta.tensor(q), ta.tensor(k), ta.tensor(v), average_attn_weights=False)
    assert o_w.shape == tuple(t_w.shape) == (H, L, S)
    np.testing.assert_allclose(o_out.numpy(), t_out.detach().numpy(), atol=1e-10)
    np.testing.assert_allclose(o_w.numpy(), t_w.detach().numpy(), atol=1e-10)
    out, w = ours(ta.tensor(q), ta.tensor(k), ta.tensor(v), need_weights=False)
    assert w is None


def test_out_and_weights_unpack_as_in_pytorch_for_both_modules():
    """The habit `out, w = mha(x, x, x)` (a batch of 2 would unpack silently otherwise)."""
    x = ta.randn(2, 3, E)
    for mha in (nn.MultiHeadAttention(E, H), nn.MultiheadAttention(E, H, batch_first=True)):
        out, w = mha(x, x, x)
        assert out.shape == (2, 3, E) and w.shape == (2, 3, 3)   # averaged over heads


def test_tinyattn_mha_takes_pytorchs_masks_with_pytorchs_meaning():
    torch = _torch()
    torch.manual_seed(0)
    tm = torch.nn.MultiheadAttention(E, H, batch_first=True, dtype=torch.float64)
    ours = nn.MultiHeadAttention(E, H).double()
    ours.load_state_dict(nn.torch_compat.convert_torch_mha_state_dict(tm.state_dict()))
    rng = np.random.default_rng(3)
    x = rng.standard_normal((N, L, E))
    pad = np.array([[False, False, True], [False, False, False]])       # True = padding
    banned = np.triu(np.ones((L, L), bool), k=1)                        # True = not allowed
    t_out, _ = tm(*(torch.tensor(x),) * 3, key_padding_mask=torch.tensor(pad),
                  attn_mask=torch.tensor(banned))
    o_out, _ = ours(ta.tensor(x), key_padding_mask=pad, attn_mask=banned)
    np.testing.assert_allclose(o_out.numpy(), t_out.detach().numpy(), atol=1e-10)
    # tinyattn's own mask= is "may attend": the same result with the opposite polarity.
    o_mask, _ = ours(ta.tensor(x), mask=~banned, key_padding_mask=pad)
    np.testing.assert_allclose(o_mask.numpy(), o_out.numpy(), atol=1e-12)
    # A PyTorch padding mask given with the inverted (old tinyattn) polarity differs: the
    # test above really depends on the polarity.
    inverted, _ = ours(ta.tensor(x), key_padding_mask=~pad, attn_mask=banned)
    assert np.abs(inverted.numpy() - o_out.numpy()).max() > 1e-3


# ---------------------------------------------------------------- F.sdpa keywords
def test_sdpa_float_mask_and_keywords_match_torch():
    torch = _torch()
    rng = np.random.default_rng(4)
    q, k, v = (rng.standard_normal((N, H, L if i == 0 else S, 4)) for i in range(3))
    bias = rng.standard_normal((L, S))
    theirs = torch.nn.functional.scaled_dot_product_attention(
        *(torch.tensor(a) for a in (q, k, v)), attn_mask=torch.tensor(bias), scale=0.3)
    ours = F.scaled_dot_product_attention(query=ta.tensor(q), key=ta.tensor(k),
                                          value=ta.tensor(v), attn_mask=ta.tensor(bias),
                                          scale=0.3)
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), atol=1e-12)


@pytest.mark.parametrize("h_kv", [1, 2])
def test_sdpa_grouped_query_attention_matches_torch(h_kv):
    torch = _torch()
    rng = np.random.default_rng(5)
    h = 4
    q, k, v = rng.standard_normal((N, h, L, 4)), rng.standard_normal((N, h_kv, S, 4)), \
        rng.standard_normal((N, h_kv, S, 3))
    mask = rng.random((N, h, L, S)) < 0.7
    mask[..., 0] = True
    t_in = [torch.tensor(a, requires_grad=True) for a in (q, k, v)]
    theirs = torch.nn.functional.scaled_dot_product_attention(
        *t_in, attn_mask=torch.tensor(mask), enable_gqa=True)
    o_in = [ta.tensor(a, requires_grad=True) for a in (q, k, v)]
    ours = F.scaled_dot_product_attention(*o_in, attn_mask=mask, enable_gqa=True)
    np.testing.assert_allclose(ours.numpy(), theirs.detach().numpy(), atol=1e-12)
    g = rng.standard_normal(ours.shape)
    (theirs * torch.tensor(g)).sum().backward()
    (ours * ta.tensor(g)).sum().backward()
    for o, t in zip(o_in, t_in):
        np.testing.assert_allclose(o.grad.numpy(), t.grad.numpy(), atol=1e-12)


def test_gqa_gradcheck_and_clear_errors():
    rng = np.random.default_rng(6)
    q, k, v = (ta.tensor(rng.standard_normal(s), requires_grad=True)
               for s in ((1, 4, 3, 2), (1, 2, 3, 2), (1, 2, 3, 2)))
    assert ta.gradcheck(lambda *t: F.scaled_dot_product_attention(*t, is_causal=True,
                                                                   enable_gqa=True), [q, k, v])
    with pytest.raises(ValueError, match="enable_gqa=True"):
        F.scaled_dot_product_attention(q, k, v)
    with pytest.raises(ValueError, match="multiple of the key/value heads"):
        F.scaled_dot_product_attention(q, ta.randn(1, 3, 3, 2, dtype="float64"),
                                       ta.randn(1, 3, 3, 2, dtype="float64"), enable_gqa=True)


def test_grouped_query_module_with_kv_cache_equals_full_recompute():
    ta.manual_seed(0)
    mha = nn.MultiHeadAttention(8, 4, num_kv_heads=2, rope=True).double()
    assert mha.k_proj.weight.shape == (4, 8)              # 2 heads of d_k = 2
    x = ta.tensor(np.random.default_rng(7).standard_normal((2, 5, 8)))
    full, _ = mha(x, is_causal=True, need_weights=False)
    cache = nn.KVCache()
    steps = [mha(x[:, :3], is_causal=True, kv_cache=cache, need_weights=False)[0]]
    for t in (3, 4):
        steps.append(mha(x[:, t:t + 1], is_causal=True, kv_cache=cache,
                         need_weights=False)[0])
    assert cache.k.shape == (2, 2, 5, 2)                  # the cache holds h_kv heads
    np.testing.assert_allclose(ta.cat(steps, dim=1).numpy(), full.numpy(), atol=1e-12)
    assert ta.gradcheck(lambda t: mha(t, is_causal=True, need_weights=False)[0],
                        [ta.tensor(x.numpy()[:1, :3], requires_grad=True)])


def test_multi_query_attention_equals_repeated_key_value_heads():
    ta.manual_seed(1)
    mqa = nn.MultiHeadAttention(8, 4, num_kv_heads=1, bias=False).double()
    full = nn.MultiHeadAttention(8, 4, bias=False).double()
    full.q_proj.weight.data = mqa.q_proj.weight.numpy()
    full.out_proj.weight.data = mqa.out_proj.weight.numpy()
    full.k_proj.weight.data = np.tile(mqa.k_proj.weight.numpy(), (4, 1))   # one head, 4 times
    full.v_proj.weight.data = np.tile(mqa.v_proj.weight.numpy(), (4, 1))
    x = ta.tensor(np.random.default_rng(8).standard_normal((1, 4, 8)))
    np.testing.assert_allclose(mqa(x, need_weights=False)[0].numpy(),
                               full(x, need_weights=False)[0].numpy(), atol=1e-12)


# ------------------------------------------------------------------ float16 attention
def _large_half_inputs(seed=0, spread=300.0):
    """(B, h, S, d_k) float16 q, k, v whose scores q k^T reach ~1e6: past float16's 65504."""
    rng = np.random.default_rng(seed)
    q, k = ((rng.standard_normal((2, 2, 5, 16)) * spread).astype(np.float16) for _ in "qk")
    v = rng.standard_normal((2, 2, 5, 16)).astype(np.float16)
    g = rng.standard_normal((2, 2, 5, 16)).astype(np.float16)
    return q, k, v, g


def test_float16_scores_past_65504_are_not_nan_controls_first():
    """Negative control: the same attention in float16 from separate ops overflows to NaN,
    so the inputs below really leave float16's range."""
    q, k, v, _ = _large_half_inputs()
    with np.errstate(all="ignore"):
        scores = ta.tensor(q) @ ta.tensor(k).transpose(-2, -1) * 0.25
        assert np.isinf(scores.numpy()).any()
        assert np.isnan(F.softmax(scores, dim=-1).numpy()).any()


@pytest.mark.parametrize("record", [False, True])
@pytest.mark.parametrize("is_causal", [False, True])
def test_float16_attention_is_computed_in_float32_like_pytorch(record, is_causal):
    """A float16 q, k, v is attended in float32 and rounded back (forward and gradients),
    so scores past 65504 neither overflow nor turn the row into NaN; the numbers equal
    the float64 computation rounded to float16 (and torch's float16 kernel where present)."""
    q, k, v, g = _large_half_inputs()
    half = [ta.tensor(a, requires_grad=record) for a in (q, k, v)]
    wide = [ta.tensor(a.astype(np.float64), requires_grad=True) for a in (q, k, v)]
    out = F.scaled_dot_product_attention(*half, is_causal=is_causal)
    ref = F.scaled_dot_product_attention(*wide, is_causal=is_causal)
    assert out.dtype == ta.float16
    assert np.isfinite(out.numpy()).all()
    np.testing.assert_allclose(out.numpy(), ref.detach().numpy(), rtol=2e-3, atol=2e-3)
    if record:
        out.backward(ta.tensor(g))
        ref.backward(ta.tensor(g.astype(np.float64)))
        for mine, exact in zip(half, wide):
            assert mine.grad.dtype == ta.float16 and np.isfinite(mine.grad.numpy()).all()
            scale = np.abs(exact.grad.numpy()).max()
            np.testing.assert_allclose(mine.grad.numpy(), exact.grad.numpy(),
                                       atol=2e-3 * max(scale, 1.0))
    try:
        import torch  # noqa: PLC0415
    except ImportError:
        return                      # torch is an optional oracle; float64 was the reference
    theirs = torch.nn.functional.scaled_dot_product_attention(
        *(torch.tensor(a) for a in (q, k, v)), is_causal=is_causal)
    assert np.isfinite(theirs.numpy()).all()
    np.testing.assert_allclose(out.numpy(), theirs.numpy(), rtol=2e-3, atol=2e-3)


def test_float16_self_attention_module_stays_finite():
    """tinyattn's MultiHeadAttention (packed q, k, v) in float16, with and without a graph."""
    ta.manual_seed(0)
    mha = nn.MultiHeadAttention(16, 2).to(dtype="float16")
    x = ta.tensor((np.random.default_rng(1).standard_normal((2, 5, 16)) * 300)
                  .astype(np.float16), requires_grad=True)
    with ta.no_grad():
        fast, _ = mha(x, x, x, need_weights=False)
    out, weights = mha(x, x, x)
    out.sum().backward()
    assert out.dtype == weights.dtype == x.grad.dtype == ta.float16
    for array in (fast, out, weights, x.grad):
        assert np.isfinite(array.numpy()).all()
    np.testing.assert_allclose(fast.numpy(), out.detach().numpy(), rtol=1e-3, atol=1e-3)
