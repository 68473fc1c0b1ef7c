"""GPT.generate and its sampler on degenerate settings (tiny and NaN temperatures, NaN logits,
top-k ties), option checks, top-k/top-p against Hugging Face's warpers, the sampled
distribution, reproducibility with a generator, and the preallocated KV cache."""
import math

import numpy as np
import pytest

import tinyattn as ta
import tinyattn.nn as nn
from tinyattn.nn.generation import NonFiniteLogitsError, filtered_logits, sample_next

V = 13


def make_gpt(dtype="float32", **overrides):
    ta.manual_seed(0)
    cfg = dict(vocab_size=V, block_size=16, n_layer=2, n_head=2, d_model=8)
    cfg.update(overrides)
    model = nn.GPT(nn.GPTConfig(**cfg))
    rng = np.random.default_rng(1)
    for p in model.parameters():                  # larger weights: peaked, varied logits
        p.data = (rng.standard_normal(p.shape) * 0.8).astype(p.dtype)
    return model.double() if dtype == "float64" else model


PROMPT = np.array([[3, 7, 1], [5, 5, 2]])


# ------------------------------------------------------------------ degenerate settings
def test_tiny_temperature_is_greedy_not_token_zero():
    model = make_gpt()
    greedy = model.generate(PROMPT, 6, temperature=0).numpy()
    assert (greedy[:, 3:] != 0).any()             # token 0 everywhere would be the old bug
    for t in (1e-40, 1e-30, 5e-324, 1e-8):
        assert np.array_equal(model.generate(PROMPT, 6, temperature=t).numpy(), greedy), t


def test_tiny_temperature_on_logits_directly():
    logits = np.array([[0.0, 3.0, 1.0, 2.5]], dtype=np.float32)
    for t in (1e-40, 1e-38, 1e-20):
        assert sample_next(logits, t).tolist() == [1]
    for t in (1e-20, 1e-38):                       # 1/t fits in float32: scaled, no overflow
        z = filtered_logits(logits, t)
        assert z[0, 1] == 0 and (np.delete(z[0], 1) < -1e18).all()
        assert np.exp(z).tolist() == [[0.0, 1.0, 0.0, 0.0]]


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf, -1.0, -1e-30, True, "0.7", None])
def test_invalid_temperatures_are_refused(bad):
    with pytest.raises(ValueError, match="temperature must be a finite number >= 0"):
        make_gpt().generate(PROMPT, 1, temperature=bad)


@pytest.mark.parametrize("bad", [0, 0.0, -0.1, 1.5, math.nan, math.inf, True])
def test_top_p_outside_zero_one_is_refused(bad):
    with pytest.raises(ValueError, match=r"top_p must be a probability in \(0, 1\]"):
        make_gpt().generate(PROMPT, 1, top_p=bad)


@pytest.mark.parametrize("bad", [-1, 1.5, "3", True])
def test_max_new_tokens_is_checked(bad):
    with pytest.raises(ValueError, match="max_new_tokens must be a whole number >= 0"):
        make_gpt().generate(PROMPT, bad)


def test_zero_new_tokens_returns_the_prompt():
    assert np.array_equal(make_gpt().generate(PROMPT, 0).numpy(), PROMPT)


@pytest.mark.parametrize("use_cache", [True, False])
def test_a_nan_weight_raises_naming_step_zero(use_cache):
    model = make_gpt()
    model.blocks[0].mlp.linear1.weight.data[0, 0] = np.nan
    with pytest.raises(NonFiniteLogitsError, match="logits at step 0 .*NaN or inf") as info:
        model.generate(PROMPT, 4, temperature=0, use_cache=use_cache)
    assert isinstance(info.value, (FloatingPointError, RuntimeError, ValueError))
    with pytest.raises(FloatingPointError, match="step 0"):
        model.generate(PROMPT, 4, temperature=1.0, top_k=3, top_p=0.9, use_cache=use_cache)


@pytest.mark.parametrize("use_cache", [True, False])
def test_non_finite_logits_later_name_their_step(use_cache):
    model = make_gpt()
    model.pos_emb.weight.data[5] = np.inf          # position 5's logits: step 3 (3 + 3 = 6)
    with pytest.raises(FloatingPointError, match="step 3 \\(predicting position 6"):
        model.generate(PROMPT, 5, temperature=0, use_cache=use_cache)
    model.generate(PROMPT, 3, temperature=0, use_cache=use_cache)      # steps 0-2: fine


def test_top_k_keeps_exactly_k_tokens_on_ties():
    logits = np.array([[1.0, 0.0, 1.0, 1.0, 1.0, -2.0]] * 2000, dtype=np.float32)
    z = filtered_logits(logits[:1], 1.0, top_k=2)
    assert np.isfinite(z).sum() == 2 and np.isfinite(z[0, [0, 2]]).all()   # lowest ids
    picks = sample_next(logits, 1.0, top_k=2, generator=np.random.default_rng(0))
    assert set(picks.tolist()) == {0, 2}
    assert abs((picks == 0).mean() - 0.5) < 0.05


def test_top_k_larger_than_the_vocabulary_keeps_everything():
    logits = np.random.default_rng(0).standard_normal((3, 5)).astype(np.float32)
    assert np.isfinite(filtered_logits(logits, 1.0, top_k=50)).all()


# ------------------------------------------------------------------ against Hugging Face
def test_top_k_and_top_p_keep_what_hugging_faces_warpers_keep():
    torch = pytest.importorskip("torch")
    gen = pytest.importorskip("transformers.generation.logits_process")
    rng = np.random.default_rng(0)
    logits = (rng.standard_normal((64, 50)) * rng.uniform(0.2, 4, (64, 1))).astype(np.float32)
    for temperature, top_k, top_p in [(1.0, 5, None), (0.7, None, 0.9), (1.3, 10, 0.5),
                                      (1.0, None, 0.01), (2.0, 1, None), (0.5, None, 0.999)]:
        scores = torch.from_numpy(logits) / temperature
        if top_k is not None:
            scores = gen.TopKLogitsWarper(top_k)(None, scores)
        if top_p is not None:
            scores = gen.TopPLogitsWarper(top_p)(None, scores)
        expected = torch.isfinite(scores).numpy()
        ours = np.isfinite(filtered_logits(logits, temperature, top_k, top_p))
        assert np.array_equal(ours, expected), (temperature, top_k, top_p)


def test_negative_control_the_hugging_face_comparison_sees_one_token_more():
    """Keeping the token that crosses top_p out would differ from HF: the test above bites."""
    logits = np.log(np.array([[0.5, 0.3, 0.2]], dtype=np.float32))
    kept = np.isfinite(filtered_logits(logits, 1.0, top_p=0.6))
    assert kept.tolist() == [[True, True, False]]     # 0.5 < 0.6, so 0.3 is needed as well


def test_samples_follow_the_renormalised_distribution():
    logits = np.log(np.array([0.4, 0.25, 0.2, 0.1, 0.05], dtype=np.float32))
    rows = np.tile(logits, (20000, 1))
    picks = sample_next(rows, 1.0, top_p=0.8, generator=np.random.default_rng(3))
    freq = np.bincount(picks, minlength=5) / len(picks)
    expected = np.array([0.4, 0.25, 0.2, 0, 0]) / 0.85        # mass before 0.2 is 0.65 < 0.8
    assert np.abs(freq - expected).max() < 0.015
    hot = sample_next(rows, 2.0, generator=np.random.default_rng(4))
    p = np.exp(logits / 2.0)
    p /= p.sum()
    assert np.abs(np.bincount(hot, minlength=5) / len(hot) - p).max() < 0.015


# ------------------------------------------------------------------ reproducibility and cache
def test_generation_is_reproducible_with_a_generator_and_the_cache_changes_nothing():
    model = make_gpt(block_size=8)                   # 3 + 12 tokens: the cache is rebuilt
    options = dict(temperature=0.9, top_k=6, top_p=0.95)
    runs = [model.generate(PROMPT, 12, generator=np.random.default_rng(7), use_cache=cache,
                           **options).numpy() for cache in (True, True, False)]
    assert np.array_equal(runs[0], runs[1]) and np.array_equal(runs[0], runs[2])
    other = model.generate(PROMPT, 12, generator=np.random.default_rng(8), **options).numpy()
    assert not np.array_equal(other, runs[0])


@pytest.mark.parametrize("kind", ["learned", "rope", "alibi", "sinusoidal"])
def test_preallocated_cache_equals_recomputing_in_float64(kind):
    model = make_gpt("float64", pos_encoding=kind)
    model.eval()
    x = np.random.default_rng(2).integers(0, V, (2, 10))
    full = model(x).numpy()
    cache_lists = ([nn.KVCache(capacity=3) for _ in model.blocks],     # grows twice
                   [nn.KVCache(capacity=10) for _ in model.blocks])
    for caches in cache_lists:
        with ta.no_grad():
            pieces = [model(x[:, :3], kv_caches=caches).numpy()]
            pieces += [model(x[:, t:t + 1], kv_caches=caches).numpy() for t in range(3, 10)]
        np.testing.assert_allclose(np.concatenate(pieces, 1), full, atol=1e-12, rtol=0)
        assert caches[0].length == 10


def test_cache_writes_in_place_without_gradients_and_concatenates_with_them():
    cache = nn.KVCache(capacity=4)
    k = ta.randn(1, 2, 1, 3)
    with ta.no_grad():
        first, _ = cache.append(k, k)
        second, _ = cache.append(k * 2, k * 2)
    assert np.shares_memory(first.data, second.data)             # one buffer, no copy
    np.testing.assert_array_equal(second.numpy()[:, :, 1], 2 * k.numpy()[:, :, 0])
    leaf = ta.randn(1, 2, 1, 3, requires_grad=True)
    grad_cache = nn.KVCache()
    grad_cache.append(leaf, leaf)
    keys, _ = grad_cache.append(leaf * 3, leaf * 3)
    keys.sum().backward()                                        # reaches both steps
    np.testing.assert_allclose(leaf.grad.numpy(), 4.0)
    with pytest.raises(ValueError, match="capacity must be a positive int"):
        nn.KVCache(capacity=0)
    with pytest.raises(ValueError, match="do not match the cached"):
        with ta.no_grad():
            cache.append(ta.randn(3, 2, 1, 3), ta.randn(3, 2, 1, 3))


def test_sampling_on_the_strict_device_matches_cpu_without_host_syncs():
    """The GPU stand-in: top-k, top-p and the finiteness check run on the device (no NumPy
    call on device data, no host sync per step) and draw the same tokens as the CPU."""
    from tinyattn import strict_device
    strict_device.enable()
    model = make_gpt()
    options = dict(temperature=0.8, top_k=5, top_p=0.9)
    cpu = model.generate(PROMPT, 6, generator=np.random.default_rng(5), **options).numpy()
    model.to(strict_device.DEVICE)
    prompt = ta.tensor(PROMPT, device=strict_device.DEVICE)
    strict_device.SYNCS.clear()
    out = model.generate(prompt, 6, generator=np.random.default_rng(5), **options)
    leaks = [k for k in strict_device.SYNCS if "embedding" not in k]
    assert not leaks, leaks
    assert out.device == strict_device.DEVICE
    assert np.array_equal(out.numpy(), cpu)


def test_llama_style_gpt_generates_the_same_with_and_without_the_cache():
    """RMSNorm, SwiGLU, RoPE and grouped key/value heads (2 for 4 query heads): the cache
    holds the grouped keys, and the preallocated path gives the uncached tokens."""
    model = make_gpt("float64", norm="rmsnorm", mlp="swiglu", pos_encoding="rope", n_head=4,
                     n_kv_head=2, block_size=8)
    for options in (dict(temperature=0), dict(temperature=1.0, top_p=0.9)):
        runs = [model.generate(PROMPT, 9, use_cache=cache, generator=np.random.default_rng(2),
                               **options).numpy() for cache in (True, False)]
        assert np.array_equal(runs[0], runs[1]), options
