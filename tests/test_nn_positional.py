"""Positional encodings: the sinusoidal table's formula, learned positions, RoPE (op and in
attention), ALiBi; gradchecks, negative controls and too-long sequences."""
import math

import numpy as np
import pytest

import tinyattn as ta
import tinyattn.functional as F
import tinyattn.nn as nn
from tinyattn.ops.rope import Rope, rope_tables


def f64(*shape, seed=0, grad=True):
    rng = np.random.default_rng(seed)
    return ta.tensor(rng.standard_normal(shape), dtype="float64", requires_grad=grad)


# ------------------------------------------------------------------ sinusoidal
@pytest.mark.parametrize("d_model", [6, 7])
def test_sinusoidal_table_is_exactly_the_formula(d_model):
    table = nn.sinusoidal_table(12, d_model)
    for pos in range(12):
        for col in range(d_model):
            i = col // 2
            angle = pos / 10000 ** (2 * i / d_model)
            expected = math.sin(angle) if col % 2 == 0 else math.cos(angle)
            assert table[pos, col] == pytest.approx(expected, abs=1e-15)


def test_sinusoidal_encoding_adds_table_is_fixed_and_gradchecks():
    pe = nn.SinusoidalPositionalEncoding(5, max_len=10)
    assert list(pe.parameters()) == [] and pe.state_dict() == {}
    x = f64(2, 4, 5)
    out = pe(x, offset=3)
    expected = np.broadcast_to(nn.sinusoidal_table(10, 5)[3:7], x.shape)
    np.testing.assert_allclose(out.numpy() - x.numpy(), expected, atol=1e-7)  # float32 table
    assert out.dtype == np.float64
    assert pe(ta.randn(1, 2, 5)).dtype == np.float32
    assert ta.gradcheck(lambda x: pe(x), [x])


def test_learned_positions_gradcheck_and_offset():
    ta.manual_seed(0)
    pe = nn.LearnedPositionalEmbedding(6, 3).double()
    x = f64(2, 4, 3)
    np.testing.assert_allclose(pe(x, offset=2).numpy() - x.numpy(),
                               np.broadcast_to(pe.weight.numpy()[2:6], x.shape), atol=1e-15)
    assert ta.gradcheck(lambda *_: pe(x, offset=1), [x, pe.weight])


def test_sequence_longer_than_table_raises():
    with pytest.raises(ValueError, match=r"positions 0..10 do not fit .* max_len=8"):
        nn.SinusoidalPositionalEncoding(4, max_len=8)(ta.randn(1, 11, 4))
    with pytest.raises(ValueError, match=r"positions 6..8 do not fit .* max_len=8"):
        nn.LearnedPositionalEmbedding(8, 4)(ta.randn(1, 3, 4), offset=6)
    with pytest.raises(ValueError, match=r"expected input \(..., S, d_model=4\)"):
        nn.LearnedPositionalEmbedding(8, 4)(ta.randn(1, 3, 5))


# ------------------------------------------------------------------ RoPE
def test_rope_rotates_pairs_by_position_times_frequency():
    x = np.random.default_rng(0).standard_normal((3, 4))    # (S, d)
    out = F.rope(ta.tensor(x, dtype="float64"), offset=2).numpy()
    for p in range(3):
        for i in range(2):
            a = (p + 2) * 10000 ** (-2 * i / 4)
            x1, x2 = x[p, 2 * i], x[p, 2 * i + 1]
            assert out[p, 2 * i] == pytest.approx(x1 * math.cos(a) - x2 * math.sin(a))
            assert out[p, 2 * i + 1] == pytest.approx(x1 * math.sin(a) + x2 * math.cos(a))


def test_rope_scores_depend_only_on_relative_position():
    rng = np.random.default_rng(1)
    q = np.repeat(rng.standard_normal((1, 8)), 6, axis=0)   # the same q and k at every pos
    k = np.repeat(rng.standard_normal((1, 8)), 6, axis=0)
    rq = F.rope(ta.tensor(q, dtype="float64")).numpy()
    rk = F.rope(ta.tensor(k, dtype="float64")).numpy()
    scores = rq @ rk.T                                      # (S, S)
    for shift in range(-3, 4):
        diag = np.diagonal(scores, offset=shift)
        np.testing.assert_allclose(diag, diag[0], atol=1e-12)
    assert np.ptp(np.diagonal(scores)) < 1e-12 and abs(scores[0, 0] - scores[0, 3]) > 1e-3


def test_rope_gradcheck_full_jacobian_and_negative_control():
    x = f64(2, 3, 4)
    assert ta.gradcheck(lambda x: F.rope(x, offset=5), [x])

    class WrongRope(Rope):          # backward rotating the wrong way (R instead of R^T)
        def backward(self, grad):
            cos, sin = self.saved
            dx = np.empty_like(grad)
            dx[..., 0::2] = grad[..., 0::2] * cos - grad[..., 1::2] * sin
            dx[..., 1::2] = grad[..., 0::2] * sin + grad[..., 1::2] * cos
            return dx

    cos, sin = rope_tables(np, 3, 4, 5, 10000.0, np.float64)
    assert not ta.gradcheck(lambda x: WrongRope.apply(x, cos=cos, sin=sin), [x],
                            raise_exception=False)


def test_rope_float32_and_errors():
    assert F.rope(ta.randn(2, 3, 4)).dtype == np.float32
    with pytest.raises(ValueError, match=r"d_k = 5\) must be even"):
        F.rope(ta.randn(3, 5))
    with pytest.raises(ValueError, match="head_dim .* must be even"):
        nn.MultiHeadAttention(6, 2, rope=True)


def _mha(**kw):
    ta.manual_seed(2)
    mha = nn.MultiHeadAttention(4, 2, **kw).double()
    rng = np.random.default_rng(4)
    for p in mha.parameters():
        p.data = rng.standard_normal(p.shape) * 0.5
    return mha


def test_mha_with_rope_gradcheck():
    mha = _mha(rope=True)
    x = f64(2, 3, 4)
    assert ta.gradcheck(lambda *_: mha(x, is_causal=True)[0], [x, *mha.parameters()])


def test_rope_attention_is_shift_invariant():
    """With RoPE (and nothing else positional), shifting every position by the same offset
    leaves the attention weights unchanged; a negative control shows the shift is real."""
    mha = _mha(rope=True)
    x = f64(1, 4, 4, grad=False)
    cache = nn.KVCache()
    cache.k = ta.zeros(1, 2, 3, 2, dtype="float64")     # 3 fake cached positions ...
    cache.v = ta.zeros(1, 2, 3, 2, dtype="float64")
    _, w0 = mha(x, need_weights=True, average_attn_weights=False, is_causal=True)
    mask = np.zeros((1, 1, 4, 7), bool)
    mask[..., 3:] = np.tril(np.ones((4, 4), bool))      # ... that no query may see
    _, w3 = mha(x, need_weights=True, average_attn_weights=False, mask=mask, kv_cache=cache)
    np.testing.assert_allclose(w3.numpy()[..., 3:], w0.numpy(), atol=1e-12)
    q = mha.q_proj(x).reshape(1, 4, 2, 2).transpose(1, 2)
    assert not np.allclose(F.rope(q, offset=3).numpy(), F.rope(q).numpy())


# ------------------------------------------------------------------ ALiBi
def test_alibi_slopes_follow_the_paper():
    assert nn.alibi_slopes(8) == [2.0 ** -(i + 1) for i in range(8)]
    assert nn.alibi_slopes(4) == [2.0 ** -(2 * (i + 1)) for i in range(4)]
    six = nn.alibi_slopes(6)                  # 4 slopes of h=4, then 2 from h=8 (every other)
    assert six == nn.alibi_slopes(4) + nn.alibi_slopes(8)[0::2][:2]


def test_alibi_bias_values_and_cache_alignment():
    bias = nn.ALiBi(2)(3, 3, dtype=np.float64).numpy()
    i, j = np.indices((3, 3))
    np.testing.assert_allclose(bias[0], -(2.0 ** -4) * np.abs(i - j))   # h=2: 2^-4, 2^-8
    np.testing.assert_allclose(bias[1], -(2.0 ** -8) * np.abs(i - j))
    tail = nn.ALiBi(2)(1, 3, dtype=np.float64).numpy()             # one new query at pos 2
    np.testing.assert_allclose(tail, bias[:, 2:3])
    assert nn.ALiBi(2)(2, 2).dtype == np.float32


def test_mha_with_alibi_gradcheck_and_matches_explicit_formula():
    mha = _mha()
    x = f64(2, 3, 4)
    bias = nn.ALiBi(2)(3, 3, dtype=np.float64)
    assert ta.gradcheck(lambda *_: mha(x, attn_bias=bias, is_causal=True)[0],
                        [x, *mha.parameters()])
    # A zero bias gives what no bias gives; ALiBi's does not.
    zero = ta.zeros(2, 3, 3, dtype="float64")
    np.testing.assert_allclose(mha(x, attn_bias=zero, is_causal=True)[0].numpy(),
                               mha(x, is_causal=True)[0].numpy(), atol=1e-13)
    assert not np.allclose(mha(x, attn_bias=bias)[0].numpy(), mha(x)[0].numpy())
    # A bias that itself needs a gradient takes the explicit-ops path: same numbers.
    learned = ta.tensor(bias.numpy(), requires_grad=True)
    np.testing.assert_allclose(mha(x, attn_bias=learned, is_causal=True)[0].numpy(),
                               mha(x, attn_bias=bias, is_causal=True)[0].numpy(), atol=1e-13)
    assert ta.gradcheck(lambda b: mha(x, attn_bias=b, is_causal=True)[0], [learned])
