"""The long-sequence attention variants (docs/long_sequences.md): local (band) attention
against the dense path with sliding_window_mask, Performer/linear attention against its own
S x S form and against softmax attention as the features grow, Linformer, the masks, T5's
buckets against Hugging Face's, and the variants inside MultiHeadAttention and GPT."""
import numpy as np
import pytest

import tinyattn as ta
import tinyattn.functional as F
import tinyattn.nn as nn
from tinyattn.nn.long_attention import relative_position_bucket
from tinyattn.ops.local_attention import LocalAttention
from tinyattn.ops.performer import orthogonal_random_features, performer_weights


def _qkv(rng, shape, d_v=None, requires_grad=True):
    d_v = shape[-1] if d_v is None else d_v
    return [ta.tensor(rng.standard_normal(s), requires_grad=requires_grad)
            for s in (shape, shape, shape[:-1] + (d_v,))]


def _grads(out, inputs, g):
    for t in inputs:
        t.grad = None
    out.backward(ta.tensor(g))
    return [t.grad.numpy().copy() for t in inputs]


@pytest.mark.parametrize("s,window,causal", [
    (1, 0, False), (1, 3, True), (7, 0, True), (7, 1, False), (9, 2, True), (10, 3, False),
    (16, 4, True), (13, 4, False), (5, 4, False), (5, 9, False), (5, 9, True), (6, 5, True)])
def test_local_attention_equals_dense_band_attention_float64(s, window, causal):
    """Outputs and all three gradients within 1e-12 of scaled_dot_product_attention with
    sliding_window_mask(S, window + 1): first and last positions, window 0, window >= S."""
    rng = np.random.default_rng(s * 10 + window)
    q, k, v = _qkv(rng, (2, 3, s, 4), d_v=5)
    out = F.local_attention(q, k, v, window, causal=causal)
    band = nn.sliding_window_mask(s, window + 1, causal=causal)
    ref = F.scaled_dot_product_attention(q, k, v, attn_mask=band)
    np.testing.assert_allclose(out.numpy(), ref.numpy(), rtol=0, atol=1e-12)
    g = rng.standard_normal(out.shape)
    for ours, theirs in zip(_grads(out, [q, k, v], g), _grads(ref, [q, k, v], g)):
        np.testing.assert_allclose(ours, theirs, rtol=0, atol=1e-12)


@pytest.mark.parametrize("causal", [False, True])
def test_local_attention_in_several_runs_of_blocks(monkeypatch, causal):
    """With runs of 2 blocks (CHUNK_ROWS lowered), the same numbers as the dense band."""
    from tinyattn.ops import local_attention as module
    monkeypatch.setattr(module, "CHUNK_ROWS", 6)
    rng = np.random.default_rng(11)
    q, k, v = _qkv(rng, (1, 2, 23, 4))
    out = F.local_attention(q, k, v, 3, causal=causal)
    ref = F.scaled_dot_product_attention(q, k, v, nn.sliding_window_mask(23, 4, causal))
    np.testing.assert_allclose(out.numpy(), ref.numpy(), atol=1e-12)
    g = rng.standard_normal(out.shape)
    for ours, theirs in zip(_grads(out, [q, k, v], g), _grads(ref, [q, k, v], g)):
        np.testing.assert_allclose(ours, theirs, atol=1e-12)


def test_local_attention_is_not_full_attention_negative_control():
    """The band matters: with window 1, the output differs from full attention's."""
    q, k, v = _qkv(np.random.default_rng(0), (1, 1, 8, 4), requires_grad=False)
    band = F.local_attention(q, k, v, 1).numpy()
    full = F.scaled_dot_product_attention(q, k, v).numpy()
    assert np.abs(band - full).max() > 1e-3


def test_local_attention_never_forms_s_by_s_arrays():
    """Every array the op keeps for its backward is O(S * window), not O(S^2)."""
    s, window = 512, 8
    q, k, v = _qkv(np.random.default_rng(0), (1, 2, s, 4))
    out = F.local_attention(q, k, v, window)
    assert isinstance(out.grad_fn, LocalAttention)
    sizes = [a.size for a in out.grad_fn.saved if hasattr(a, "size")]
    assert max(sizes) <= 2 * s * 3 * window * 4 < 2 * s * s     # the scores: (B h) S 3W


def test_local_attention_scale_and_errors():
    rng = np.random.default_rng(1)
    q, k, v = _qkv(rng, (1, 2, 6, 4), requires_grad=False)
    band = nn.sliding_window_mask(6, 3, causal=False)
    np.testing.assert_allclose(F.local_attention(q, k, v, 2, scale=0.3).numpy(),
                               F.scaled_dot_product_attention(q, k, v, band, scale=0.3).numpy(),
                               atol=1e-12)
    with pytest.raises(ValueError, match="window must be an int >= 0"):
        F.local_attention(q, k, v, -1)
    with pytest.raises(ValueError, match="must share every dim"):
        F.local_attention(q, k[:, :, :5], v[:, :, :5], 2)


def test_local_attention_float32_stays_float32():
    q, k, v = [t.float() for t in _qkv(np.random.default_rng(2), (1, 2, 9, 4),
                                       requires_grad=False)]
    assert F.local_attention(q, k, v, 2).dtype == np.float32


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("kind", ["positive", "elu"])
def test_performer_equals_its_explicit_s_by_s_form(causal, kind):
    """The prefix-sum / associativity form equals normalise(phi(Q) phi(K)^T) V (1e-12),
    over several causal chunks (S = 150 > 64 rows per chunk)."""
    rng = np.random.default_rng(3)
    q, k, v = _qkv(rng, (2, 150, 6), d_v=3, requires_grad=False)
    w = orthogonal_random_features(16, 6, np.random.default_rng(0))
    out = F.performer_attention(q, k, v, 16, causal=causal, feature_type=kind, projection=w)
    weights = performer_weights(q, k, w, causal, kind).numpy()
    np.testing.assert_allclose(out.numpy(), weights @ v.numpy(), rtol=0, atol=1e-12)


def test_performer_error_falls_as_features_grow():
    """Mean relative error against exact softmax attention, averaged over 3 draws: falls
    from 16 to 1024 features (the seeds' claim, measured)."""
    rng = np.random.default_rng(4)
    q, k, v = [ta.tensor(rng.standard_normal((2, 64, 16)) * 0.6) for _ in range(3)]
    exact = F.scaled_dot_product_attention(q, k, v).numpy()
    errors = []
    for m in (16, 64, 256, 1024):
        err = []
        for seed in range(3):
            out = F.performer_attention(q, k, v, m, generator=np.random.default_rng(seed))
            err.append(np.mean(np.linalg.norm(out.numpy() - exact, axis=-1)
                               / np.linalg.norm(exact, axis=-1)))
        errors.append(np.mean(err))
    assert errors == sorted(errors, reverse=True), errors
    assert errors[-1] < 0.5 * errors[0], errors


def test_performer_generator_gives_repeatable_features_and_fixed_projection_is_used():
    rng = np.random.default_rng(5)
    q, k, v = _qkv(rng, (1, 10, 4), requires_grad=False)
    a = F.performer_attention(q, k, v, 8, generator=np.random.default_rng(1)).numpy()
    b = F.performer_attention(q, k, v, 8, generator=np.random.default_rng(1)).numpy()
    c = F.performer_attention(q, k, v, 8, generator=np.random.default_rng(2)).numpy()
    np.testing.assert_array_equal(a, b)
    assert np.abs(a - c).max() > 1e-6                  # negative control: other features
    with pytest.raises(ValueError, match="projection must be"):
        F.performer_attention(q, k, v, 8, projection=np.zeros((7, 4)))
    with pytest.raises(ValueError, match="feature_type"):
        F.performer_attention(q, k, v, 8, feature_type="relu")


def test_orthogonal_features_are_orthogonal_within_a_block():
    w = orthogonal_random_features(10, 4, np.random.default_rng(0))
    block = w[:4] / np.linalg.norm(w[:4], axis=1, keepdims=True)
    np.testing.assert_allclose(block @ block.T, np.eye(4), atol=1e-12)


def test_performer_large_inputs_stay_finite():
    """The stabilising shifts keep exp() in range for scores far beyond float32's."""
    q, k, v = _qkv(np.random.default_rng(6), (1, 20, 8), requires_grad=True)
    big = [ta.tensor(t.numpy() * 30, requires_grad=True) for t in (q, k)]
    out = F.performer_attention(big[0], big[1], v, 32, causal=True,
                                generator=np.random.default_rng(0))
    out.sum().backward()
    assert np.isfinite(out.numpy()).all() and np.isfinite(big[0].grad.numpy()).all()


def test_linformer_module_matches_a_numpy_reference():
    ta.manual_seed(0)
    m = nn.LinformerSelfAttention(8, 2, seq_len=6, k=3).to(dtype="float64")
    x = ta.tensor(np.random.default_rng(7).standard_normal((2, 5, 8)))
    out = m(x).numpy()

    def lin(layer, a):
        return a @ layer.weight.numpy().T + layer.bias.numpy()
    xa = x.numpy()
    q, k, v = (lin(p, xa).reshape(2, 5, 2, 4).transpose(0, 2, 1, 3)
               for p in (m.q_proj, m.k_proj, m.v_proj))
    e, f = m.proj_k.numpy()[:, :5], m.proj_v.numpy()[:, :5]
    scores = q @ np.swapaxes(e @ k, -1, -2) / 2.0
    p = np.exp(scores - scores.max(-1, keepdims=True))
    ctx = (p / p.sum(-1, keepdims=True)) @ (f @ v)
    ref = lin(m.out_proj, ctx.transpose(0, 2, 1, 3).reshape(2, 5, 8))
    np.testing.assert_allclose(out, ref, atol=1e-12)
    shared = nn.LinformerSelfAttention(8, 2, seq_len=6, k=3, share_kv=True)
    assert shared.proj_v is None and len(list(shared.parameters())) == len(
        list(m.parameters())) - 1
    with pytest.raises(ValueError, match="seq_len >= 7"):
        m(ta.tensor(np.zeros((1, 7, 8))))


def test_random_block_and_global_token_masks():
    keep = nn.random_block_mask(10, 3, 2, generator=np.random.default_rng(0)).numpy()
    assert keep.shape == (10, 10)
    blocks = keep[::3, ::3]                            # one entry per (query, key) block
    assert (blocks.sum(axis=1) == 2).all()
    glob = nn.global_tokens_mask(6, [0, 5]).numpy()
    assert glob[0].all() and glob[:, 5].all() and not glob[2, 3]
    assert glob.sum() == 6 * 6 - 4 * 4
    with pytest.raises(ValueError, match="do not all lie"):
        nn.global_tokens_mask(6, [6])
    q, k, v = _qkv(np.random.default_rng(8), (1, 1, 10, 4), requires_grad=False)
    mask = ta.tensor(keep | nn.global_tokens_mask(10, [0]).numpy())
    plain = F.scaled_dot_product_attention(q, k, v, mask).numpy()
    tiled = F.scaled_dot_product_attention(q, k, v, mask, impl="tiled", block_size=4).numpy()
    np.testing.assert_allclose(plain, tiled, atol=1e-12)


def test_t5_buckets_match_hugging_face_for_every_distance():
    torch = pytest.importorskip("torch", reason="torch runs Hugging Face's T5 bucket function")
    t5 = pytest.importorskip("transformers.models.t5.modeling_t5",
                             reason="transformers' T5 is the reference")
    bucket = t5.T5Attention._relative_position_bucket
    rel = np.arange(-5000, 5001)
    for bidirectional in (True, False):
        for num_buckets, max_distance in ((32, 128), (8, 20), (64, 1000), (16, 9), (6, 5)):
            ours = relative_position_bucket(rel, bidirectional, num_buckets, max_distance)
            theirs = bucket(torch.tensor(rel), bidirectional=bidirectional,
                            num_buckets=num_buckets, max_distance=max_distance).numpy()
            np.testing.assert_array_equal(ours, theirs)


def test_t5_buckets_by_hand():
    """T5's defaults: distances 0..7 exact, then log-spaced to 128, keys after the query in
    the upper half (bidirectional); causal: every later key in bucket 0."""
    rel = np.array([0, -1, -7, -8, -12, -16, -127, -128, -10_000, 1, 3, 200])
    np.testing.assert_array_equal(relative_position_bucket(rel, True),
                                  [0, 1, 7, 8, 9, 10, 15, 15, 15, 17, 19, 31])
    np.testing.assert_array_equal(relative_position_bucket(np.array([3, 0, -5]), False),
                                  [0, 0, 5])


def test_relative_position_bias_module_shapes_gradient_and_errors():
    ta.manual_seed(0)
    bias = nn.RelativePositionBias(num_buckets=8, max_distance=20, num_heads=3)
    out = bias(4, 6)
    assert out.shape == (1, 3, 4, 6)
    buckets = relative_position_bucket(np.arange(6)[None] - np.arange(2, 6)[:, None], True,
                                       8, 20)
    np.testing.assert_array_equal(out.numpy()[0],
                                  bias.weight.numpy()[buckets].transpose(2, 0, 1))
    out.sum().backward()
    assert bias.weight.grad.numpy().sum() == pytest.approx(3 * 4 * 6)   # one per entry
    with pytest.raises(ValueError, match="num_heads must be a positive int"):
        nn.RelativePositionBias()
    with pytest.raises(ValueError, match="max_distance=4 must exceed"):
        nn.RelativePositionBias(num_buckets=32, max_distance=4, num_heads=2)


@pytest.mark.parametrize("impl", ["local", "performer", "linformer"])
def test_multi_head_attention_attn_impl_variants(impl):
    ta.manual_seed(0)
    mha = nn.MultiHeadAttention(8, 2, attn_impl=impl, window=2, num_features=16, seq_len=6,
                                linformer_k=3)
    x = ta.randn(2, 6, 8)
    out, weights = mha(x)
    fast, none = mha(x, need_weights=False)
    assert out.shape == (2, 6, 8) and none is None
    np.testing.assert_allclose(out.numpy(), fast.numpy(), atol=1e-5)
    assert weights.shape == ((2, 6, 3) if impl == "linformer" else (2, 6, 6))
    fast.sum().backward()
    assert mha.q_proj.weight.grad is not None
    with pytest.raises(ValueError, match="takes no key_padding_mask"):
        mha(x, key_padding_mask=np.zeros((2, 6), dtype=bool))


def test_multi_head_attention_local_equals_plain_with_the_band_mask():
    ta.manual_seed(0)
    local = nn.MultiHeadAttention(8, 2, attn_impl="local", window=2).to(dtype="float64")
    plain = nn.MultiHeadAttention(8, 2).to(dtype="float64")
    plain.load_state_dict(local.state_dict())
    x = ta.tensor(np.random.default_rng(0).standard_normal((2, 9, 8)))
    band = nn.sliding_window_mask(9, 3, causal=True)
    ours, _ = local(x, is_causal=True, need_weights=False)
    ref, _ = plain(x, mask=band, need_weights=False)
    np.testing.assert_allclose(ours.numpy(), ref.numpy(), atol=1e-12)


def test_linformer_refuses_causal_in_mha_and_gpt():
    mha = nn.MultiHeadAttention(8, 2, attn_impl="linformer", seq_len=6)
    with pytest.raises(ValueError, match="cannot be causal"):
        mha(ta.randn(1, 6, 8), is_causal=True)
    with pytest.raises(ValueError, match="cannot be causal"):
        nn.GPTConfig(attn_impl="linformer")
    with pytest.raises(ValueError, match="needs seq_len"):
        nn.MultiHeadAttention(8, 2, attn_impl="linformer")


@pytest.mark.parametrize("impl,pos", [("local", "learned"), ("performer", "rope"),
                                      ("plain", "t5")])
def test_gpt_with_variants_is_causal_trains_and_generates(impl, pos):
    ta.manual_seed(0)
    config = nn.GPTConfig(vocab_size=11, block_size=12, n_layer=1, n_head=2, d_model=16,
                          attn_impl=impl, pos_encoding=pos, attn_window=3,
                          performer_features=16)
    model = nn.GPT(config)
    ids = np.random.default_rng(0).integers(0, 11, (2, 12))
    changed = ids.copy()
    changed[:, -1] = (changed[:, -1] + 1) % 11
    before = model(ids).numpy()[:, :-1]
    # No peeking. The Performer's key features share one stabilising shift (the largest
    # over the sequence), which cancels exactly in the maths, so only round-off remains.
    atol = 1e-6 if impl == "performer" else 0
    np.testing.assert_allclose(before, model(changed).numpy()[:, :-1], rtol=0, atol=atol)
    _, loss = model(ids, ids)
    loss.backward()
    assert all(p.grad is not None for p in model.parameters())
    assert model.generate(ids[:, :3], 4).shape == (2, 7)
    with pytest.raises(ValueError, match="only attn_impl='plain'"):
        nn.GPTConfig(pos_encoding="t5", attn_impl="local")


def test_multi_head_attention_scale_reaches_every_path():
    """scale=1.0 (no 1/sqrt(d_k)) changes the output, and equals F.sdpa(scale=1.0)."""
    ta.manual_seed(0)
    x = ta.tensor(np.random.default_rng(1).standard_normal((1, 5, 8)))
    scaled = nn.MultiHeadAttention(8, 2).to(dtype="float64")
    raw = nn.MultiHeadAttention(8, 2, scale=1.0).to(dtype="float64")
    raw.load_state_dict(scaled.state_dict())
    a, b = scaled(x)[0].numpy(), raw(x)[0].numpy()
    assert np.abs(a - b).max() > 1e-6                     # negative control
    q, k, v = (p(x).reshape(1, 5, 2, 4).transpose(1, 2)
               for p in (raw.q_proj, raw.k_proj, raw.v_proj))
    ctx = F.scaled_dot_product_attention(q, k, v, scale=1.0).transpose(1, 2).reshape(1, 5, 8)
    np.testing.assert_allclose(b, raw.out_proj(ctx).numpy(), atol=1e-12)
    with pytest.raises(ValueError, match="scale must be a positive number"):
        nn.MultiHeadAttention(8, 2, scale=0)


@pytest.mark.parametrize("flags", [dict(pos_encoding="t5"), dict(attn_impl="local"),
                                   dict(attn_impl="performer")])
def test_toy_trainer_runs_with_t5_positions_and_the_variants(flags, tmp_path, monkeypatch):
    pytest.importorskip("matplotlib", reason="the trainer draws its plots")
    from tinyattn.train.config import TrainConfig
    from tinyattn.train.loop import train
    from tinyattn.train import attention_history, plots
    # The loss curve and the attention-evolution pictures (the slowest to draw) are not what
    # this test is about; the positional picture and the attention map of each variant are.
    monkeypatch.setattr(plots, "plot_loss", lambda *args, **kwargs: None)
    monkeypatch.setattr(attention_history.AttentionHistory, "write", lambda self, *a, **k: [])
    config = TrainConfig(task="copy", steps=2, eval_every=2, warmup=1, out=str(tmp_path),
                         d_model=16, heads=2, layers=1, batch_size=8, eval_size=16, quiet=True,
                         **flags)
    train(config)
    assert (tmp_path / "metrics.json").exists()
    assert (tmp_path / "positional.png").stat().st_size > 0
    assert (tmp_path / "attention.png").stat().st_size > 0
