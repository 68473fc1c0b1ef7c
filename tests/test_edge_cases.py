"""Numerical edge cases the issue names: extreme logits, fully masked rows, repeated ids,
float16 masking, ties in max."""
import numpy as np
import pytest

import tinyattn as ta
import tinyattn.functional as F
from tinyattn.ops.softmax import softmax_empty_rows_zero


def test_softmax_of_huge_logits_is_finite_with_finite_gradients():
    x = ta.tensor([[1e4, -1e4, 0.0], [-1e4, -1e4, -1e4]], requires_grad=True)
    y = F.softmax(x, dim=-1)
    assert np.isfinite(y.numpy()).all()
    np.testing.assert_allclose(y.numpy()[0], [1.0, 0.0, 0.0])
    np.testing.assert_allclose(y.numpy()[1], [1 / 3] * 3, rtol=1e-6)
    (y * ta.tensor([[1.0, 2.0, 3.0]] * 2)).sum().backward()
    assert np.isfinite(x.grad).all()


def test_log_softmax_of_huge_logits_is_finite():
    x = ta.tensor([[1e4, -1e4, 0.0]], requires_grad=True)
    y = F.log_softmax(x)
    assert np.isfinite(y.numpy()).all()
    y.sum().backward()
    assert np.isfinite(x.grad).all()


def test_attention_softmax_row_of_all_minus_inf_gives_zeros_not_nan():
    x = ta.tensor([[-np.inf, -np.inf], [0.0, 1.0]], requires_grad=True)
    y = softmax_empty_rows_zero(x)                 # the attention ops' softmax
    np.testing.assert_array_equal(y.numpy()[0], [0.0, 0.0])
    y.sum().backward()
    np.testing.assert_array_equal(x.grad[0], [0.0, 0.0])
    assert np.isnan(F.softmax(x).numpy()[0]).all()  # F.softmax: torch's NaN


@pytest.mark.parametrize("is_causal", [False, True])
def test_fully_masked_attention_row_gives_zero_output_and_zero_grads(is_causal):
    rng = np.random.default_rng(0)
    q, k, v = (ta.tensor(rng.standard_normal(s), dtype="float64", requires_grad=True)
               for s in [(2, 4, 3), (2, 4, 3), (2, 4, 5)])
    mask = np.ones((4, 4), dtype=bool)
    mask[2] = False                                  # query 2 sees nothing
    if is_causal:                # torch refuses attn_mask with is_causal: one mask instead
        mask &= np.tri(4, dtype=bool)
    out = F.scaled_dot_product_attention(q, k, v, ta.tensor(mask))
    assert np.isfinite(out.numpy()).all()
    np.testing.assert_array_equal(out.numpy()[:, 2], 0.0)
    upstream = rng.standard_normal(out.shape)
    out.backward(upstream)
    for t in (q, k, v):
        assert np.isfinite(t.grad).all()
    np.testing.assert_array_equal(q.grad[:, 2], 0.0)


def test_float16_masked_attention_stays_finite():
    rng = np.random.default_rng(0)
    q, k, v = (ta.tensor(rng.standard_normal((1, 2, 4, 8)), dtype="float16")
               for _ in range(3))
    mask = np.tri(4, dtype=bool)
    mask[0] = False
    out = F.scaled_dot_product_attention(q, k, v, ta.tensor(mask))
    assert out.dtype == np.float16
    assert np.isfinite(out.numpy()).all()
    filled = F.masked_fill(q, ta.tensor(~np.tri(4, 8, dtype=bool)), float("-inf"))
    assert filled.dtype == np.float16
    assert np.isfinite(F.softmax(filled, dim=-1).numpy()).all()


def test_where_masking_keeps_float16_finite_where_an_additive_mask_would_not():
    # The design decision, shown with tinyattn's own ops: -1e9 is -inf in float16, so an
    # additive mask turns a fully masked row into -inf - (-inf) = NaN in a naive softmax,
    # while masked_fill/where + the guarded softmax give zeros.
    scores = ta.tensor(np.zeros((2, 3)), dtype="float16")
    keep = ta.tensor(np.array([[True, True, False], [False, False, False]]))
    with np.errstate(all="ignore"):
        additive = (scores + ta.tensor(np.where(keep.numpy(), 0.0, -1e9), dtype="float16"))
        naive = np.exp(additive.numpy() - additive.numpy().max(-1, keepdims=True))
    assert np.isnan(naive[1]).all()                              # the pitfall is real
    ours = softmax_empty_rows_zero(F.masked_fill(scores, ~keep, float("-inf")), dim=-1).numpy()
    assert np.isfinite(ours).all()
    np.testing.assert_array_equal(ours[1], 0.0)
    np.testing.assert_allclose(ours[0], [0.5, 0.5, 0.0])


def test_embedding_with_repeated_ids_accumulates_rows():
    weight = ta.tensor(np.arange(12.0).reshape(4, 3), requires_grad=True)
    ids = ta.tensor([[1, 1, 3], [1, 0, 3]])
    out = F.embedding(ids, weight)
    np.testing.assert_array_equal(out.numpy()[0, 0], [3.0, 4.0, 5.0])
    out.backward(np.ones(out.shape, dtype=np.float32))
    np.testing.assert_array_equal(weight.grad[:, 0], [1.0, 3.0, 0.0, 2.0])


def test_getitem_with_repeated_indices_scatter_adds():
    x = ta.tensor([1.0, 2.0, 3.0], requires_grad=True)
    x[[0, 0, 2, 0]].sum().backward()
    np.testing.assert_array_equal(x.grad, [3.0, 0.0, 1.0])


def test_max_splits_the_gradient_evenly_among_ties():
    x = ta.tensor([[1.0, 5.0, 5.0, 2.0], [7.0, 7.0, 7.0, 7.0]], requires_grad=True)
    x.amax(dim=1).sum().backward()
    np.testing.assert_allclose(x.grad, [[0, 0.5, 0.5, 0], [0.25] * 4])


def test_max_with_dim_returns_values_and_indices_like_torch():
    x = ta.tensor([[1.0, 5.0, 2.0], [7.0, 0.0, 3.0]])
    values, indices = x.max(dim=1)
    np.testing.assert_array_equal(values.numpy(), [5.0, 7.0])
    np.testing.assert_array_equal(indices.numpy(), [1, 0])


def test_cross_entropy_with_every_row_ignored_is_nan_with_zero_grads_as_torch():
    logits = ta.tensor(np.zeros((2, 3)), requires_grad=True)
    loss = F.cross_entropy(logits, ta.tensor([-100, -100]))
    assert np.isnan(loss.item())                                    # torch: 0/0 = NaN
    loss.backward()
    np.testing.assert_array_equal(logits.grad, 0.0)                 # torch: zeros
    assert F.cross_entropy(logits, ta.tensor([-100, -100]), reduction="sum").item() == 0.0
    assert F.cross_entropy(logits, ta.tensor([-100, 0])).item() == pytest.approx(np.log(3))


def test_dropout_is_reproducible_and_identity_in_eval():
    x = ta.ones(1000)
    ta.manual_seed(3)
    a = F.dropout(x, 0.25)
    ta.manual_seed(3)
    b = F.dropout(x, 0.25)
    np.testing.assert_array_equal(a.numpy(), b.numpy())
    kept = a.numpy() != 0
    assert 0.65 < kept.mean() < 0.85
    np.testing.assert_allclose(a.numpy()[kept], 1 / 0.75)
    assert F.dropout(x, 0.25, training=False) is x
    np.testing.assert_array_equal(F.dropout(x, 1.0).numpy(), 0.0)


def test_cross_entropy_ignored_row_with_infinite_logits_does_not_poison_the_loss():
    logits = ta.tensor([[-np.inf, -np.inf], [0.0, 1.0]], dtype="float64", requires_grad=True)
    with np.errstate(divide="ignore", invalid="ignore"):
        loss = F.cross_entropy(logits, ta.tensor([-100, 1]))
        loss.backward()
    assert loss.item() == pytest.approx(np.log1p(np.exp(-1.0)))   # torch: 0.3133
    np.testing.assert_array_equal(logits.grad[0], 0.0)
    assert np.isfinite(logits.grad).all()
