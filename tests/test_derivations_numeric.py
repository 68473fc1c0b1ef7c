"""Every worked number and every identity the docs derive beyond the per-op sections,
recomputed with NumPy (and with tinyattn where it applies), each with a negative control that
shows the check can fail. Docs: derivations.md (softmax Jacobian, masking, cross-entropy),
attention_backward.md, tiled_attention.md section 2. Optimizers: test_derivations_optim.py."""
import pathlib
import re
import warnings

import numpy as np
import pytest

import tinyattn as ta
import tinyattn.functional as F
import tinyattn.nn as nn

DOCS = pathlib.Path(__file__).resolve().parent.parent / "docs"
FOUR_DECIMALS = re.compile(r"-?\d+\.\d{4}(?!\d)")


def _grad(t) -> np.ndarray:
    g = t.grad
    return np.asarray(g.numpy() if hasattr(g, "numpy") else g)


def _leaf(a: np.ndarray):
    return ta.tensor(a, dtype="float64", requires_grad=True)


def _section(doc: str, start: str, end: str) -> str:
    text = (DOCS / doc).read_text()
    return text[text.index(start):text.index(end, text.index(start))]


def _prose(section: str) -> str:
    """The section with every run of whitespace made one space (lines wrap anywhere)."""
    return " ".join(section.split())


def _text_blocks_numbers(section: str) -> list:
    """Every number written with four decimals in the section's ```text blocks, in order."""
    blocks = re.findall(r"```text\n(.*?)\n```", section, re.S)
    return [float(n) for block in blocks for n in FOUR_DECIMALS.findall(block)]


def _same_to_4_decimals(written: list, computed: list) -> bool:
    return len(written) == len(computed) and all(
        f"{w:.4f}" == f"{c:.4f}".replace("-0.0000", "0.0000") for w, c in zip(written, computed))


def _softmax(x: np.ndarray) -> np.ndarray:
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


# ----------------------------------------------------------------- softmax and cross-entropy
CE_SECTION = ("derivations.md", "### Worked example: three logits by hand",
              "### The mean under gradient accumulation")


def _ce_by_hand(z: np.ndarray, target: int, dz_of=lambda p, onehot: p - onehot) -> list:
    """The numbers of the worked example, in the order the doc writes them."""
    shifted = z - z.max()
    e = np.exp(shifted)
    logp = shifted - np.log(e.sum())
    p = np.exp(logp)
    onehot = np.eye(len(z))[target]
    dp = -onehot / p[target]
    jac = np.diag(p) - np.outer(p, p)
    return [*shifted, *e, e.sum(), np.log(e.sum()), *logp, *p, -logp[target],
            *dz_of(p, onehot), *dp, *jac.ravel(), *(jac @ dp)]


def test_three_logit_cross_entropy_numbers_are_the_docs():
    z = np.array([2.0, 1.0, 0.1])
    written = _text_blocks_numbers(_section(*CE_SECTION))
    assert _same_to_4_decimals(written, _ce_by_hand(z, 0))
    # tinyattn agrees with the hand computation
    zt = ta.tensor(z[None], dtype="float64", requires_grad=True)
    loss = F.cross_entropy(zt, ta.tensor(np.array([0])))
    loss.backward()
    assert f"{loss.item():.4f}" == "0.4170"
    np.testing.assert_allclose(_grad(zt)[0], _softmax(z) - [1, 0, 0], atol=1e-15)
    # the prose: central difference, label smoothing
    section = _prose(_section(*CE_SECTION))
    lossf = lambda z: -(z - z.max() - np.log(np.exp(z - z.max()).sum()))[0]
    fd = (lossf(z + [1e-3, 0, 0]) - lossf(z - [1e-3, 0, 0])) / 2e-3
    assert f"= {fd:.4f}$ as well" in section
    zs = ta.tensor(z[None], dtype="float64", requires_grad=True)
    smoothed = F.cross_entropy(zs, ta.tensor(np.array([0])), label_smoothing=0.1)
    smoothed.backward()
    assert f"= {smoothed.item():.4f}$" in section
    assert "p - q = [" + ", ".join(f"{v:.4f}" for v in _grad(zs)[0]) + "]" in section


def test_negative_control_a_wrong_gradient_does_not_match_the_docs():
    z = np.array([2.0, 1.0, 0.1])
    written = _text_blocks_numbers(_section(*CE_SECTION))
    assert not _same_to_4_decimals(written, _ce_by_hand(z, 0, lambda p, onehot: onehot - p))
    assert not _same_to_4_decimals(written, _ce_by_hand(z, 1))


def test_softmax_jacobian_is_diag_minus_outer_and_tinyattn_applies_it():
    rng = np.random.default_rng(0)
    x = rng.standard_normal(5)
    y = _softmax(x)
    jac = np.diag(y) - np.outer(y, y)                                   # (5, 5)
    rows = []
    for i in range(5):                                                  # J^T e_i, backward
        xt = ta.tensor(x, dtype="float64", requires_grad=True)
        F.softmax(xt, -1).backward(np.eye(5)[i])
        rows.append(_grad(xt))
    np.testing.assert_allclose(np.array(rows), jac.T, atol=1e-15)
    eps = 1e-6                                                          # columns, numerically
    numeric = np.stack([(_softmax(x + eps * e) - _softmax(x - eps * e)) / (2 * eps)
                        for e in np.eye(5)], axis=1)
    np.testing.assert_allclose(numeric, jac, atol=1e-9)
    assert np.array_equal(jac, jac.T)                                   # symmetric
    np.testing.assert_allclose(jac @ np.ones(5), 0, atol=1e-16)         # shift invariance
    assert np.linalg.eigvalsh(jac).min() > -1e-15                       # semidefinite
    assert np.linalg.matrix_rank(jac) == 4                              # rank n - 1
    u = rng.standard_normal(5)
    assert np.isclose(u @ jac @ u, (y * u * u).sum() - (y * u).sum() ** 2)  # a variance
    # negative control: without the outer product the backward's rows do not match
    assert not np.allclose(np.array(rows), np.diag(y), atol=1e-3)


def test_attention_row_sum_is_the_softmax_scalar_per_row():
    rng = np.random.default_rng(1)
    q, k, v = (rng.standard_normal(s) for s in [(2, 3, 4, 5), (2, 3, 6, 5), (2, 3, 6, 2)])
    mask = rng.random((2, 1, 4, 6)) > 0.3
    mask[..., 0] = True
    g = rng.standard_normal((2, 3, 4, 2))
    scale = 1 / np.sqrt(5)
    p = _softmax(np.where(mask, scale * q @ k.swapaxes(-1, -2), -np.inf))   # (B, h, S_q, S_k)
    out = p @ v
    dp = g @ v.swapaxes(-1, -2)                                            # (B, h, S_q, S_k)
    rowwise = np.empty_like(dp)
    for idx in np.ndindex(*p.shape[:-1]):                                  # J_i dP_i per row
        rowwise[idx] = (np.diag(p[idx]) - np.outer(p[idx], p[idx])) @ dp[idx]
    d = (p * dp).sum(-1, keepdims=True)                                    # (B, h, S_q, 1)
    np.testing.assert_allclose(rowwise, p * (dp - d), atol=1e-14)
    np.testing.assert_allclose(d, (g * out).sum(-1, keepdims=True), atol=1e-14)
    qt = ta.tensor(q, dtype="float64", requires_grad=True)
    F.scaled_dot_product_attention(qt, ta.tensor(k), ta.tensor(v),
                                   attn_mask=ta.tensor(mask)).backward(g)
    np.testing.assert_allclose(_grad(qt), scale * rowwise @ k, atol=1e-13)
    # negative control: dS without the row sum D gives another dq
    assert not np.allclose(_grad(qt), scale * (p * dp) @ k, atol=1e-3)


# ----------------------------------------------------------------- online softmax by hand
def _online_by_hand(scores, values, block=2, rescale=True) -> list:
    """The numbers of tiled_attention.md's two blocks, in the order the doc writes them:
    per block m', P, a, then l = a * l + rowsum(P), acc = a * acc + P v; then out and L."""
    m, l, acc, numbers = -np.inf, 0.0, 0.0, []
    for c0 in range(0, len(scores), block):
        s_blk, v_blk = scores[c0:c0 + block], values[c0:c0 + block]
        m_new = max(m, s_blk.max())
        p = np.exp(s_blk - m_new)                       # (B_k,)
        a = np.exp(m - m_new) if rescale else 1.0
        numbers += [m_new, *p, a]
        numbers += [a, l, p.sum(), a * l + p.sum()]
        numbers += [a, acc, *p, a * acc + p @ v_blk]
        l, acc, m = a * l + p.sum(), a * acc + p @ v_blk, m_new
    return numbers + [acc, l, acc / l, m, np.log(l), m + np.log(l)]


def test_two_blocks_of_online_softmax_are_the_docs_numbers():
    scores, values = np.array([1.0, 2.0, 3.0, 0.5]), np.array([1.0, 2.0, 3.0, 4.0])
    section = _section("tiled_attention.md", "**Two blocks by hand.**", "## 3.")
    written = _text_blocks_numbers(section)
    assert _same_to_4_decimals(written, _online_by_hand(scores, values))
    direct, prose = _softmax(scores), _prose(section)
    assert "P = [" + ", ".join(f"{x:.4f}" for x in direct) + "]" in prose
    assert f"P v = {direct @ values:.4f}, log sum exp(S) = {np.log(np.exp(scores).sum()):.4f}" \
        in prose
    # tinyattn's tiled op, two keys per block: with q = 1 (d_k = 1) and scale 1 the scores
    # are the keys themselves
    q = ta.tensor(np.ones((1, 1, 1)), dtype="float64")                  # (1, S_q, d_k)
    k = ta.tensor(scores.reshape(1, 4, 1), dtype="float64")             # (1, S_k, d_k)
    v = ta.tensor(values.reshape(1, 4, 1), dtype="float64")             # (1, S_k, d_v)
    out = F.scaled_dot_product_attention(q, k, v, scale=1.0, impl="tiled", block_size=2)
    assert f"{out.numpy().item():.4f}" == "2.6490"
    # negative control: without the rescale factor the doc's numbers are not reproduced,
    # and the wrong answer the doc quotes is what that mistake gives
    wrong = _online_by_hand(scores, values, rescale=False)
    assert not _same_to_4_decimals(written, wrong)
    assert f"the result is {wrong[-4]:.4f}" in _prose(section)


# ----------------------------------------------------------------- masking (derivations.md)
ROW = np.array([0.5, 0.1, 0.2])
MASKING = ("derivations.md", "### Why `where` with -inf", "## Layer norm")


def test_additive_minus_1e9_in_numpy_float16_makes_the_kept_scores_nan():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        assert np.float16(-1e9) == -np.inf
        keep = np.array([1, 1, 0], dtype=np.float16)
        term = (1 - keep) * -1e9                                          # float16
        assert term.dtype == np.float16
        assert np.isnan(term[:2]).all() and term[2] == -np.inf          # 0 * -inf = NaN
        assert np.isnan(_softmax(ROW.astype(np.float16) + term)).all()
    # negative control: float32 has room for -1e9, and the kept scores survive
    assert np.isfinite((1 - keep.astype(np.float32)) * -1e9).all()


def test_additive_minus_1e9_in_torch_float16_keeps_partial_rows():
    torch = pytest.importorskip("torch")
    keep = torch.tensor([[1.0, 1.0, 0.0], [0.0, 0.0, 0.0]], dtype=torch.float16)
    term = (1 - keep) * -1e9
    assert term[0, 0].item() == 0 and torch.signbit(term[0, 0])          # -0, not NaN
    assert torch.isinf(term[0, 2]) and torch.isinf(term[1]).all()
    probs = torch.softmax(torch.tensor(ROW, dtype=torch.float16) + term, -1)
    assert torch.isfinite(probs[0]).all() and probs[0, 2] == 0
    assert torch.isnan(probs[1]).all()                                   # fully masked row


def test_additive_minus_1e9_in_float32_loses_the_digits_not_float64():
    masked32 = ROW.astype(np.float32) - np.float32(1e9)
    assert (masked32 == np.float32(-1e9)).all()                          # digits gone
    assert np.array_equal(_softmax(masked32), np.full(3, 1 / 3, dtype=np.float32))
    assert np.float32(-32.0) - np.float32(1e9) == np.float32(-1e9)       # |s| <= 32 rounds
    assert np.float32(-33.0) - np.float32(1e9) != np.float32(-1e9)       # 64 apart
    # float64 keeps them, and shift invariance gives the unmasked softmax
    np.testing.assert_allclose(_softmax(ROW - 1e9), _softmax(ROW), rtol=1e-6)
    prose = _prose(_section(*MASKING))
    assert "[" + ", ".join(f"{x:.3f}" for x in _softmax(ROW)) + "]" in prose
    # negative control: the attention ops' where(-inf) gives zeros for the same row, not
    # uniform (F.softmax gives torch's NaN for it)
    from tinyattn.ops.softmax import softmax_empty_rows_zero
    scores = ta.tensor(ROW[None], dtype="float32")
    masked = F.masked_fill(scores, np.ones((1, 3), dtype=bool), float("-inf"))
    assert (softmax_empty_rows_zero(masked, -1).numpy() == 0).all()
    assert np.isnan(F.softmax(masked, -1).numpy()).all()


def test_finfo_min_masks_float16_overflow_and_float32_uniform_rows():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        m16, m32 = np.finfo(np.float16).min, np.finfo(np.float32).min
        assert m16 == -65504
        assert np.float16(-15.9) + m16 == m16                             # rounds to the min
        assert np.float16(-16.0) + m16 == -np.inf                         # overflows
        assert np.float16(16.0) + m16 == np.float16(-65472)
        assert m16 + m16 == -np.inf and m32 + m32 == -np.inf              # two masks added
        all_low = np.array([-20.0, -17.0, -16.0], dtype=np.float16) + m16
        assert np.isneginf(all_low).all() and np.isnan(_softmax(all_low)).all()
        # negative control: a float16 row with a score above -16 is not all -inf
        mixed = np.array([-20.0, 3.0, -17.0], dtype=np.float16) + m16
        assert np.isfinite(mixed).sum() == 1
    row32 = ROW.astype(np.float32)
    assert np.array_equal(_softmax(row32 + m32), np.full(3, 1 / 3, dtype=np.float32))
    partial = row32 + np.array([0, 0, m32], dtype=np.float32)
    probs = _softmax(partial)
    assert probs[2] == 0 and np.allclose(probs[:2], _softmax(row32[:2]))


def test_finfo_min_masks_in_bfloat16_and_hugging_face_builds_them():
    torch = pytest.importorskip("torch")
    low = torch.finfo(torch.bfloat16).min
    row = torch.tensor(ROW, dtype=torch.bfloat16)
    assert torch.equal(row + low, torch.full((3,), low, dtype=torch.bfloat16))
    assert torch.allclose(torch.softmax((row + low).float(), -1), torch.full((3,), 1 / 3))
    assert (torch.tensor(-1e35, dtype=torch.bfloat16) + low).item() == low   # no overflow
    masking_utils = pytest.importorskip("transformers.masking_utils")
    mask = masking_utils.eager_mask(batch_size=1, q_length=3, kv_length=3,
                                    attention_mask=torch.tensor([[True, True, False]]),
                                    dtype=torch.float16)
    assert set(mask.unique().tolist()) == {0.0, torch.finfo(torch.float16).min}
    assert (mask[0, 0, :, 2] == torch.finfo(torch.float16).min).all()    # padded key


def test_fully_masked_row_gives_zeros_in_torch_sdpa_as_in_tinyattn():
    """derivations.md#attention: torch 2.13's F.scaled_dot_product_attention returns zeros
    and a zero dq for a query that may attend to nothing, as tinyattn does."""
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(6)
    q, k, v = (rng.standard_normal(s) for s in [(1, 3, 4), (1, 5, 4), (1, 5, 2)])
    mask = np.ones((3, 5), dtype=bool)
    mask[1] = False                                       # query 1 may attend to nothing
    qt = torch.tensor(q, requires_grad=True)
    out = torch.nn.functional.scaled_dot_product_attention(qt, torch.tensor(k), torch.tensor(v),
                                                           attn_mask=torch.tensor(mask))
    out.sum().backward()
    assert (out[0, 1] == 0).all() and (qt.grad[0, 1] == 0).all()
    assert (out[0, 0] != 0).any()                         # negative control: a normal row
    ours = _leaf(q)
    F.scaled_dot_product_attention(ours, ta.tensor(k), ta.tensor(v),
                                   attn_mask=ta.tensor(mask)).sum().backward()
    np.testing.assert_allclose(_grad(ours), qt.grad.numpy(), atol=1e-14)


def test_torch_multihead_attention_nan_depends_on_the_path():
    """docs/nn.md#masks: NaN with need_weights=True and on the inference fast path, zeros
    with need_weights=False otherwise (torch 2.13)."""
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    mha = torch.nn.MultiheadAttention(8, 2, batch_first=True).double()
    x = torch.randn(2, 3, 8, dtype=torch.float64)
    masked_out = torch.zeros(3, 3, dtype=torch.bool)
    masked_out[1] = True                                  # torch: True = may NOT attend
    for training in (True, False):                        # eval mode with gradients on
        mha.train(training)
        for need_weights in (True, False):
            mha.zero_grad()
            xx = x.clone().requires_grad_()
            out, _ = mha(xx, xx, xx, attn_mask=masked_out, need_weights=need_weights)
            out[:, [0, 2]].sum().backward()               # a loss without the masked row
            assert torch.isnan(out[:, 1]).all() == need_weights
            assert torch.isnan(xx.grad).all() == need_weights
            assert torch.isnan(mha.in_proj_weight.grad).all() == need_weights
            if not need_weights:                          # zeros, plus out_proj's zero bias
                assert torch.equal(out[:, 1], mha.out_proj.bias.expand(2, 8))
    with torch.no_grad():                                 # eval, no gradients: fast path
        out, _ = mha(x, x, x, attn_mask=masked_out, need_weights=False)
    assert torch.isnan(out[:, 1]).all()
    # tinyattn: zeros on every path (negative control for the torch NaN)
    ours = nn.MultiHeadAttention(8, 2).double()
    y, w = ours(ta.tensor(x.numpy()), attn_mask=masked_out.numpy())   # PyTorch's polarity
    assert np.isfinite(y.numpy()).all() and np.isfinite(w.numpy()).all()


# ----------------------------------------------------------------- residual stream
def test_residual_gradient_is_g_plus_the_branch_vjp():
    rng = np.random.default_rng(2)
    ta.manual_seed(0)
    f = nn.FeedForward(6, 12).double()
    x, g = rng.standard_normal((2, 3, 6)), rng.standard_normal((2, 3, 6))
    xt = _leaf(x)
    (xt + f(xt)).backward(g)                                  # y = x + f(x)
    branch = _leaf(x)
    f(branch).backward(g)                                     # J_f^T g alone
    np.testing.assert_allclose(_grad(xt), g + _grad(branch), atol=1e-14)
    assert not np.allclose(_grad(xt), _grad(branch), atol=1e-3)   # negative control


def _layer_with_silent_branches(norm_first: bool, rng) -> "nn.TransformerEncoderLayer":
    """An encoder layer whose attention and feed-forward outputs are 0 (out_proj, linear2
    zeroed), with random layer-norm weights so their Jacobians are not trivial."""
    ta.manual_seed(0)
    layer = nn.TransformerEncoderLayer(6, 2, 12, dropout=0.0, norm_first=norm_first).double()
    state = layer.state_dict()
    for name in ("self_attn.out_proj.weight", "self_attn.out_proj.bias", "linear2.weight",
                 "linear2.bias"):
        state[name] = np.zeros_like(state[name])
    for name in ("norm1.weight", "norm2.weight"):
        state[name] = 1 + 0.5 * rng.standard_normal(state[name].shape)
    layer.load_state_dict(state)
    return layer


def _layer_norm_vjp(x: np.ndarray, w: np.ndarray, g: np.ndarray, eps: float = 1e-5):
    """J_LN^T g = r Pi (w * g), Pi = I - 1 1^T / D - xhat xhat^T / D, per position."""
    d = x.shape[-1]
    mu = x.mean(-1, keepdims=True)
    r = 1 / np.sqrt(((x - mu) ** 2).mean(-1, keepdims=True) + eps)      # (B, S, 1)
    xhat = (x - mu) * r                                                  # (B, S, D)
    pi = np.eye(d) - 1 / d - xhat[..., :, None] * xhat[..., None, :] / d  # (B, S, D, D)
    return r * (pi @ (w * g)[..., None])[..., 0]


def test_pre_ln_keeps_the_identity_path_post_ln_puts_the_norms_on_it():
    rng = np.random.default_rng(3)
    x, g = rng.standard_normal((2, 4, 6)), rng.standard_normal((2, 4, 6))
    pre = _layer_with_silent_branches(True, rng)
    xt = _leaf(x)
    np.testing.assert_array_equal(pre(xt).numpy(), x)       # the branches add nothing
    pre(xt).backward(g)
    np.testing.assert_array_equal(_grad(xt), g)             # exactly g: a clean path
    post = _layer_with_silent_branches(False, rng)
    xt = _leaf(x)
    post(xt).backward(g)                                    # y = norm2(norm1(x))
    state = {k: v.numpy() for k, v in post.state_dict().items()}
    w1, w2 = state["norm1.weight"], state["norm2.weight"]
    y1 = F.layer_norm(ta.tensor(x), (6,), ta.tensor(w1), ta.tensor(state["norm1.bias"]))
    expected = _layer_norm_vjp(x, w1, _layer_norm_vjp(y1.numpy(), w2, g))
    np.testing.assert_allclose(_grad(xt), expected, atol=1e-12)
    np.testing.assert_allclose(_grad(xt).sum(-1), 0, atol=1e-12)  # the mean is projected out
    assert not np.allclose(_grad(xt), g, atol=1e-2)             # negative control


# ----------------------------------------------------------------- one attention layer
def _mha_by_hand(x, params, g, num_heads, drop_dk_term=False, scale_dq=True):
    """attention_backward.md's table, line by line: self-attention with a causal mask."""
    wq, bq, wk, bk, wv, bv, wo, bo = params
    batch, seq, d = x.shape
    d_k = d // num_heads
    s = 1 / np.sqrt(d_k)
    split = lambda t: t.reshape(batch, seq, num_heads, d_k).transpose(0, 2, 1, 3)
    merge = lambda t: t.transpose(0, 2, 1, 3).reshape(batch, seq, d)
    flat = lambda t: t.reshape(-1, t.shape[-1])
    q, k, v = split(x @ wq.T + bq), split(x @ wk.T + bk), split(x @ wv.T + bv)  # 1, 2
    causal = np.tri(seq, dtype=bool)
    p = _softmax(np.where(causal, s * q @ k.swapaxes(-1, -2), -np.inf))          # 3
    a = p @ v
    m = merge(a)                                                                 # 4
    out = m @ wo.T + bo                                                          # 5
    dm, dwo, dbo = g @ wo, flat(g).T @ flat(m), g.sum((0, 1))                    # 5'
    da = split(dm)                                                               # 4'
    dv = p.swapaxes(-1, -2) @ da                                                 # 3'
    dp = da @ v.swapaxes(-1, -2)
    ds = p * (dp - (da * a).sum(-1, keepdims=True))
    dq = (s if scale_dq else 1.0) * ds @ k
    dk = s * ds.swapaxes(-1, -2) @ q
    dq_, dk_, dv_ = merge(dq), merge(dk), merge(dv)                              # 2'
    dx = dq_ @ wq + dv_ @ wv + (0 if drop_dk_term else dk_ @ wk)                 # 1'
    grads = [flat(dq_).T @ flat(x), dq_.sum((0, 1)), flat(dk_).T @ flat(x), dk_.sum((0, 1)),
             flat(dv_).T @ flat(x), dv_.sum((0, 1)), dwo, dbo]
    return out, dx, grads


def test_multi_head_attention_backward_by_hand_equals_tinyattn():
    rng = np.random.default_rng(4)
    ta.manual_seed(0)
    mha = nn.MultiHeadAttention(8, 2).double()
    state = {k: v.numpy() for k, v in mha.state_dict().items()}
    for name in state:                       # biases start at 0: make them count
        state[name] = state[name] + 0.1 * rng.standard_normal(state[name].shape)
    mha.load_state_dict(state)
    names = list(state)                      # q_proj.weight, q_proj.bias, ..., out_proj.bias
    x, g = rng.standard_normal((2, 5, 8)), rng.standard_normal((2, 5, 8))
    xt = _leaf(x)
    out, _ = mha(xt, is_causal=True, need_weights=False)
    out.backward(g)
    params = dict(mha.named_parameters())
    ref_out, ref_dx, ref_grads = _mha_by_hand(x, [state[n] for n in names], g, 2)
    np.testing.assert_allclose(out.numpy(), ref_out, atol=1e-13)
    np.testing.assert_allclose(_grad(xt), ref_dx, atol=1e-13)
    for name, ref in zip(names, ref_grads):
        np.testing.assert_allclose(_grad(params[name]), ref, atol=1e-13, err_msg=name)
    # negative controls: forgetting the key path of dx, or the scale of dq
    _, no_dk, _ = _mha_by_hand(x, [state[n] for n in names], g, 2, drop_dk_term=True)
    assert not np.allclose(_grad(xt), no_dk, atol=1e-6)
    _, no_scale, _ = _mha_by_hand(x, [state[n] for n in names], g, 2, scale_dq=False)
    assert not np.allclose(_grad(xt), no_scale, atol=1e-6)


# ----------------------------------------------------------------- tied weights
def test_tied_weight_gradient_is_the_sum_of_the_two_paths():
    config = dict(vocab_size=11, block_size=8, n_layer=1, n_head=2, d_model=8, dropout=0.0)
    ta.manual_seed(0)
    tied = nn.GPT(nn.GPTConfig(**config, tie_weights=True)).double()
    untied = nn.GPT(nn.GPTConfig(**config, tie_weights=False)).double()
    state = tied.state_dict()
    untied.load_state_dict({**state, "lm_head.weight": state["tok_emb.weight"].clone()})
    idx = np.array([[1, 3, 1, 4, 1, 5], [3, 3, 0, 2, 7, 1]])       # repeats; ids 6, 8-10 absent
    targets = np.roll(idx, -1, axis=1)
    for model in (tied, untied):
        _, loss = model(idx, targets)
        loss.backward()
    both = _grad(tied.tok_emb.weight)                                 # (V, D)
    emb, head = _grad(untied.tok_emb.weight), _grad(untied.lm_head.weight)
    np.testing.assert_allclose(both, emb + head, atol=1e-14)
    absent = [6, 8, 9, 10]
    assert (emb[absent] == 0).all() and (np.abs(head[absent]).sum(1) > 0).all()
    # negative controls: either path alone is not the gradient
    assert not np.allclose(both, emb, atol=1e-6) and not np.allclose(both, head, atol=1e-6)


# ----------------------------------------------------------------- gradient accumulation
def _accumulated(logits, target, micro, weight):
    """.grad after one backward per micro-batch of weight(k) * its mean cross-entropy."""
    leaf = _leaf(logits)
    for k, rows in enumerate(micro):
        loss = F.cross_entropy(leaf[rows], ta.tensor(target[rows]))   # (N_k', C) -> ()
        (loss * weight(k)).backward()
    return _grad(leaf)


def test_cross_entropy_mean_under_accumulation_weights_by_counted_rows():
    rng = np.random.default_rng(5)
    logits = rng.standard_normal((8, 5))                      # (N', C)
    target = np.array([0, 3, -100, 1, 4, -100, -100, 2])      # micro-batches: 4 and 1 counted
    micro = [slice(0, 5), slice(5, 8)]
    counts = [int((target[rows] != -100).sum()) for rows in micro]
    assert counts == [4, 1]
    full = _leaf(logits)
    F.cross_entropy(full, ta.tensor(target)).backward()
    right = _accumulated(logits, target, micro, lambda k: counts[k] / sum(counts))
    np.testing.assert_allclose(right, _grad(full), atol=1e-15)
    shortcut = _accumulated(logits, target, micro, lambda k: 1 / len(micro))
    assert not np.allclose(shortcut, _grad(full), atol=1e-3)  # negative control
    # with equal counts (4 and 4) the shortcut is right
    even, halves = np.array([0, 3, 1, 4, 2, 3, 1, 0]), [slice(0, 4), slice(4, 8)]
    whole = _leaf(logits)
    F.cross_entropy(whole, ta.tensor(even)).backward()
    np.testing.assert_allclose(_accumulated(logits, even, halves, lambda k: 0.5),
                               _grad(whole), atol=1e-15)
    # the doc's worked numbers: losses [1, 2, 3] and [6]
    losses = [np.array([1.0, 2.0, 3.0]), np.array([6.0])]
    mean_of_all = np.concatenate(losses).mean()
    mean_of_means = np.mean([l.mean() for l in losses])
    prose = _prose(_section("derivations.md", "### The mean under gradient accumulation",
                            "## Attention"))
    assert f"$L = 12/4 = {mean_of_all:g}$" in prose
    assert f"$(2 + 6)/2 = {mean_of_means:g}$" in prose
