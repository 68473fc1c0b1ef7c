"""GPT: logits and loss, float32 end to end, gradcheck of a 2-layer model, the KV cache (same
logits as recomputing, for every positional encoding), generate, attention maps, checkpoints,
the strict (GPU stand-in) device, and bad input."""
import numpy as np
import pytest

import tinyattn as ta
import tinyattn.nn as nn
from tinyattn import strict_device
from tinyattn.serialization import load, save

V = 11
KINDS = ["learned", "sinusoidal", "rope", "alibi", "none"]


def make_gpt(dtype="float64", **overrides):
    ta.manual_seed(0)
    cfg = dict(vocab_size=V, block_size=8, n_layer=2, n_head=2, d_model=8, dropout=0.0)
    cfg.update(overrides)
    model = nn.GPT(nn.GPTConfig(**cfg))
    return model.double() if dtype == "float64" else model


def ids(b=2, s=6, seed=0):
    return np.random.default_rng(seed).integers(0, V, (b, s))


def test_forward_shapes_and_loss_is_mean_cross_entropy():
    model = make_gpt()
    x, y = ids(), ids(seed=1)
    logits = model(x)
    assert logits.shape == (2, 6, V)
    logits2, loss = model(x, y)
    z = logits2.numpy().reshape(-1, V)
    logp = z - z.max(1, keepdims=True)
    logp -= np.log(np.exp(logp).sum(1, keepdims=True))
    expected = -logp[np.arange(12), y.reshape(-1)].mean()
    assert loss.item() == pytest.approx(expected, abs=1e-12)
    assert abs(loss.item() - np.log(V)) < 0.5              # small init: near uniform


def test_float32_forward_backward_keeps_every_gradient_float32():
    for kind in KINDS:
        model = make_gpt("float32", pos_encoding=kind, dropout=0.1)
        logits, loss = model(ids(), ids(seed=1))
        assert logits.dtype == np.float32 and loss.dtype == np.float32
        loss.backward()
        for name, p in model.named_parameters():
            assert p.dtype == np.float32 and p.grad.dtype == np.float32, (kind, name)


@pytest.mark.parametrize("kind", KINDS)
def test_two_layer_gpt_gradcheck(kind):
    model = make_gpt(pos_encoding=kind, d_model=4, vocab_size=5, block_size=4)
    rng = np.random.default_rng(3)
    for p in model.parameters():                # larger weights: every path carries signal
        p.data = rng.standard_normal(p.shape) * 0.5
    x, y = rng.integers(0, 5, (2, 4)), rng.integers(0, 5, (2, 4))
    params = list(model.parameters())
    assert ta.gradcheck(lambda *_: model(x, y)[1], params)          # loss: full Jacobian
    assert ta.gradcheck(lambda *_: model(x), params, fast=True)     # logits: projection


@pytest.mark.parametrize("kind", ["learned", "sinusoidal", "rope", "alibi"])
def test_without_positions_one_layer_cannot_tell_the_order_of_earlier_tokens(kind):
    """pos_encoding="none": one causal attention layer sees the tokens before the last as a
    set, so shuffling them leaves the last position's logits unchanged; every positional
    encoding (the negative control) makes them change."""
    x = ids(b=1, s=6, seed=7)
    shuffled = x.copy()
    shuffled[0, :5] = x[0, [3, 0, 4, 1, 2]]
    assert not np.array_equal(shuffled, x)
    for pos, should_change in (("none", False), (kind, True)):
        model = make_gpt(pos_encoding=pos, n_layer=1)
        rng = np.random.default_rng(3)
        for p in model.parameters():                # larger weights: every path carries signal
            p.data = rng.standard_normal(p.shape) * 0.5
        last, last_shuffled = model(x).numpy()[0, -1], model(shuffled).numpy()[0, -1]
        assert (np.abs(last - last_shuffled).max() > 1e-6) == should_change, pos
    bare = make_gpt(pos_encoding="none")
    assert bare.pos_emb is None and bare.alibi is None


def test_tied_weights_share_one_parameter():
    tied, untied = make_gpt(), make_gpt(tie_weights=False)
    assert tied.lm_head.weight is tied.tok_emb.weight
    sd, untied_sd = tied.state_dict(), untied.state_dict()   # both names, as torch lists
    assert np.shares_memory(sd["lm_head.weight"].numpy(), sd["tok_emb.weight"].numpy())
    assert not np.shares_memory(untied_sd["lm_head.weight"].numpy(),
                                untied_sd["tok_emb.weight"].numpy())
    assert untied.num_parameters() == tied.num_parameters() + V * 8
    _, loss = tied(ids(), ids(seed=1))
    loss.backward()
    assert tied.tok_emb.weight.grad is not None


@pytest.mark.parametrize("kind", KINDS)
def test_kv_cache_gives_the_same_logits_as_recomputing(kind):
    model = make_gpt(pos_encoding=kind)
    model.eval()
    x = ids(s=8, seed=4)
    full = model(x).numpy()                                     # (B, 8, V) in one pass
    caches = [nn.KVCache() for _ in model.blocks]
    pieces = [model(x[:, :3], kv_caches=caches).numpy()]        # a 3-token prompt, then ...
    for t in range(3, 8):                                       # ... one token at a time
        pieces.append(model(x[:, t:t + 1], kv_caches=caches).numpy())
    assert caches[0].length == 8
    np.testing.assert_allclose(np.concatenate(pieces, axis=1), full, atol=1e-12, rtol=0)


def test_kv_cache_negative_control_wrong_positions_are_detected():
    """If cached steps restarted positions at 0, the logits would differ: the check bites."""
    model = make_gpt(pos_encoding="learned")
    x = ids(s=4, seed=5)
    full = model(x).numpy()
    fresh = model(x[:, 3:4]).numpy()                            # position 0 instead of 3
    assert np.abs(fresh[:, 0] - full[:, 3]).max() > 1e-4


@pytest.mark.parametrize("kind", ["learned", "rope"])
def test_generate_with_cache_equals_without_even_past_block_size(kind):
    model = make_gpt(pos_encoding=kind)
    prompt = ids(s=3, seed=6)
    greedy_cached = model.generate(prompt, 12, temperature=0)   # 15 tokens > block_size 8
    greedy_plain = model.generate(prompt, 12, temperature=0, use_cache=False)
    assert greedy_cached.shape == (2, 15)
    assert np.array_equal(greedy_cached.numpy(), greedy_plain.numpy())
    assert np.array_equal(greedy_cached.numpy()[:, :3], prompt)
    ta.manual_seed(11)
    sampled_cached = model.generate(prompt, 12, temperature=1.0, top_k=4).numpy()
    ta.manual_seed(11)
    sampled_plain = model.generate(prompt, 12, temperature=1.0, top_k=4,
                                   use_cache=False).numpy()
    assert np.array_equal(sampled_cached, sampled_plain)


def test_generate_samples_from_the_top_k_distribution_and_restores_mode():
    model = make_gpt("float32")
    model.train()
    prompt = np.zeros((400, 1), dtype=np.int64)
    ta.manual_seed(1)
    out = model.generate(prompt, 1, temperature=1.0, top_k=3).numpy()[:, 1]
    assert model.training                                       # mode restored
    model.eval()
    logits = model(prompt).numpy()[0, -1]
    top3 = set(np.argsort(logits)[-3:].tolist())
    assert set(out.tolist()) <= top3 and len(set(out.tolist())) == 3
    p = np.exp(logits[sorted(top3)] - logits.max())
    p /= p.sum()
    freq = np.array([(out == t).mean() for t in sorted(top3)])
    assert np.abs(freq - p).max() < 0.1                         # 400 draws: loose bound


def test_return_attention_gives_one_map_per_layer():
    model = make_gpt("float32")
    logits, loss, maps = model(ids(), ids(seed=1), return_attention=True)
    assert len(maps) == 2 and all(m.shape == (2, 2, 6, 6) for m in maps)
    for m in maps:
        w = m.numpy()
        np.testing.assert_allclose(w.sum(-1), 1.0, atol=1e-6)
        assert np.all(np.triu(w[0, 0], k=1) == 0)               # causal
    logits_only, maps_only = model(ids(), return_attention=True)
    assert np.array_equal(logits_only.numpy(), logits.numpy())


def test_tiled_attention_gpt_matches_plain():
    plain = make_gpt()
    tiled = make_gpt(attn_impl="tiled", attn_block_size=2)
    tiled.load_state_dict(plain.state_dict())
    x = ids(s=7)
    np.testing.assert_allclose(tiled(x).numpy(), plain(x).numpy(), atol=1e-12)
    _, maps = tiled(x, return_attention=True)                   # falls back to plain
    assert maps[0].shape == (2, 2, 7, 7)


def test_checkpoint_round_trip_restores_the_same_model(tmp_path):
    model = make_gpt("float32", pos_encoding="rope")
    path = str(tmp_path / "gpt.npz")
    save({"model": model.state_dict(), "step": 3, "config": {"pos_encoding": "rope"}}, path)
    ta.manual_seed(9)
    other = nn.GPT(nn.GPTConfig(vocab_size=V, block_size=8, n_layer=2, n_head=2, d_model=8,
                                pos_encoding="rope"))
    assert not np.array_equal(other(ids()).numpy(), model(ids()).numpy())
    other.load_state_dict(load(path)["model"])
    assert np.array_equal(other(ids()).numpy(), model(ids()).numpy())


def test_gpt_on_the_strict_device_matches_cpu_with_no_host_syncs_in_nn():
    strict_device.enable()
    for kind in ("rope", "alibi"):
        model = make_gpt("float32", pos_encoding=kind)
        x, y = ids(), ids(seed=1)
        cpu_logits, cpu_loss = model(x, y)
        model.to(strict_device.DEVICE)
        sx, sy = (ta.tensor(a, device=strict_device.DEVICE) for a in (x, y))
        strict_device.SYNCS.clear()
        logits, loss = model(sx, sy)
        loss.backward()
        gen = model.generate(sx[:, :2], 3)
        leaks = [k for k in strict_device.SYNCS if "embedding" not in k and "loss" not in k]
        assert not leaks, leaks                                 # only the ops' id checks
        assert gen.device == strict_device.DEVICE
        np.testing.assert_allclose(logits.numpy(), cpu_logits.numpy(), atol=1e-5)


# ------------------------------------------------------------------ bad input
def test_bad_config_and_input():
    with pytest.raises(ValueError, match="d_model=10 is not divisible by n_head=4"):
        nn.GPTConfig(d_model=10, n_head=4)
    with pytest.raises(ValueError, match="pos_encoding must be one of"):
        nn.GPTConfig(pos_encoding="relative")
    with pytest.raises(ValueError, match="alibi.*attn_impl='plain'"):
        nn.GPTConfig(pos_encoding="alibi", attn_impl="tiled")
    model = make_gpt("float32")
    with pytest.raises(ValueError, match="9 tokens .* exceed block_size=8"):
        model(ids(s=9))
    with pytest.raises(IndexError, match="token id 11 is out of range; valid values are 0 to "
                                         "10"):
        model(np.array([[1, 11]]))
    with pytest.raises(TypeError, match="integer token ids"):
        model(np.ones((1, 2)))
    with pytest.raises(ValueError, match="targets must have the shape of idx"):
        model(ids(), ids(s=5))
    with pytest.raises(ValueError, match="temperature must be a finite number >= 0"):
        model.generate(ids(), 1, temperature=-1)


def test_remaining_error_messages():
    """Every other check in tinyattn.nn raises with the values it saw."""
    mha = nn.MultiHeadAttention(4, 2)
    x = ta.randn(1, 3, 4)
    with pytest.raises(ValueError, match="kv_cache works for self-attention only"):
        mha(x, x, kv_cache=nn.KVCache())
    with pytest.raises(TypeError, match="attn_bias is float64 but the queries are float32"):
        mha(x, attn_bias=nn.ALiBi(2)(3, 3, dtype=np.float64))
    model = make_gpt("float32")
    with pytest.raises(ValueError, match="top_k must be a whole number >= 1"):
        model.generate(ids(), 1, top_k=0)
    with pytest.raises(ValueError, match="got 1 KV caches for 2 layers"):
        model(ids(), kv_caches=[nn.KVCache()])
    with pytest.raises(ValueError, match="offset must be >= 0, got -1"):
        ta.functional.rope(x, offset=-1)
    with pytest.raises(ValueError, match="seq_len must be a positive int, got 0"):
        nn.causal_mask(0)
    with pytest.raises(ValueError, match="window must be a positive int, got 0"):
        nn.sliding_window_mask(4, 0)
    with pytest.raises(TypeError, match="integer lengths"):
        nn.key_padding_mask(np.array([1.5]))
    with pytest.raises(RuntimeError, match="approximate must be 'none' or 'tanh'"):
        nn.GELU("fast")
    with pytest.raises(ValueError, match="num_heads must be a positive int, got 0"):
        nn.ALiBi(0)
