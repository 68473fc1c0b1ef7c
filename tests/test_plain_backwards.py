"""The plain backwards (tinyattn/ops/plain.py), which docs/derivations.md quotes beside the
optimised code the ops run, give what the ops give: on random inputs and on the edges that
the optimisations handle specially (a batched weight, a fully masked row, repeated ids,
ignored targets, label smoothing, float32)."""
import numpy as np
import pytest

import tinyattn as ta
import tinyattn.functional as F
from tinyattn.ops import plain
from tinyattn.ops.normal_cdf import normal_cdf_and_pdf
from tinyattn.ops.softmax import softmax_empty_rows_zero, stable_softmax

RNG = np.random.default_rng(35)


def _t(array):
    return ta.tensor(array, dtype="float64", requires_grad=True)


@pytest.mark.parametrize("a_shape, b_shape", [((3, 4), (4, 5)), ((2, 3, 4), (4, 5)),
                                              ((2, 1, 3, 4), (5, 4, 2)), ((1, 3, 4), (2, 4, 6))])
def test_matmul(a_shape, b_shape):
    a, b = RNG.standard_normal(a_shape), RNG.standard_normal(b_shape)
    A, B = _t(a), _t(b)
    out = A @ B
    g = RNG.standard_normal(out.shape)
    (out * ta.tensor(g)).sum().backward()
    da, db = plain.matmul_backward(g, a, b)
    np.testing.assert_allclose(da, A.grad.numpy(), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(db, B.grad.numpy(), rtol=1e-12, atol=1e-12)


def test_softmax_with_a_fully_masked_row():
    x = RNG.standard_normal((3, 5)) * 10
    x[1] = -np.inf
    x[2, :2] = -np.inf
    np.testing.assert_allclose(plain.softmax(x), stable_softmax(x.copy(), axis=-1),
                               rtol=1e-14, atol=0)
    np.testing.assert_array_equal(plain.softmax(x)[1], 0.0)


def _softmax_grads(x, g, axis):
    X = ta.tensor(x, requires_grad=True)
    out = softmax_empty_rows_zero(X, axis)
    out.backward(ta.tensor(g))
    return out.detach().numpy(), X.grad.numpy()


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("axis", [-1, 1])
def test_softmax_backward_bit_for_bit(dtype, axis):
    """The one-buffer backward computes the plain formula's products and sums in the same
    order. It runs for any axis but the last, and for the last when g is not C-contiguous
    (the block-wise backward takes the contiguous last-axis rows: next test)."""
    x = RNG.standard_normal((3, 4, 5)) * 4
    x[0, 0] = -np.inf                          # fully masked rows give y = 0 and dx = 0
    g = RNG.standard_normal((5, 4, 3)).astype(dtype).T     # (3, 4, 5), not C-contiguous
    y, dx = _softmax_grads(x.astype(dtype), g, axis)
    np.testing.assert_array_equal(plain.softmax_backward(g, y, axis), dx)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_softmax_backward_by_blocks_within_round_off(dtype):
    """The block-wise backward (last axis, contiguous g) sums g * y by BLAS dot products,
    in another order than NumPy's sum: equal to the plain formula within a few roundings
    of its terms, y * (|g| + sum |g y|) eps, over several blocks and a fully masked row."""
    x = RNG.standard_normal((300, 7, 40)) * 4
    x[0, 0] = -np.inf
    g = RNG.standard_normal(x.shape).astype(dtype)
    y, dx = _softmax_grads(x.astype(dtype), g, -1)
    expected = plain.softmax_backward(g, y, -1)
    bound = 4 * np.finfo(dtype).eps * y * (np.abs(g) + (np.abs(g) * y).sum(-1, keepdims=True))
    assert (np.abs(dx - expected) <= bound).all()
    np.testing.assert_array_equal(dx[0, 0], 0.0)
    wrong = dx.copy()                          # negative control: one term a little off
    wrong[5, 3, 7] += 1e-4 * abs(wrong[5, 3, 7]) + 1e-6
    assert not (np.abs(wrong - expected) <= bound).all()


@pytest.mark.parametrize("affine", [True, False])
def test_layer_norm(affine):
    x = RNG.standard_normal((2, 3, 6)) * 3 + 1
    w, b = RNG.standard_normal(6), RNG.standard_normal(6)
    X = _t(x)
    W, Bias = (_t(w), _t(b)) if affine else (None, None)
    out = F.layer_norm(X, (6,), W, Bias, eps=1e-5)
    g = RNG.standard_normal(out.shape)
    (out * ta.tensor(g)).sum().backward()
    mean, var = x.mean(-1, keepdims=True), x.var(-1, keepdims=True)
    rstd = 1 / np.sqrt(var + 1e-5)
    dx, dw, db = plain.layer_norm_backward(g, (x - mean) * rstd, rstd, w if affine else None)
    np.testing.assert_allclose(dx, X.grad.numpy(), rtol=1e-10, atol=1e-12)
    if affine:
        np.testing.assert_allclose(dw, W.grad.numpy(), rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(db, Bias.grad.numpy(), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("masked", ["none", "causal", "a fully masked row"])
def test_attention(masked):
    q, k, v = (RNG.standard_normal((2, 2, 4, 3)) for _ in range(3))
    allowed = np.ones((4, 4), dtype=bool)
    if masked == "causal":
        allowed = np.tril(allowed)
    elif masked == "a fully masked row":
        allowed[1] = False
    Q, K, V = _t(q), _t(k), _t(v)
    out = F.scaled_dot_product_attention(Q, K, V, attn_mask=ta.tensor(allowed))
    g = RNG.standard_normal(out.shape)
    (out * ta.tensor(g)).sum().backward()
    scale = 1 / np.sqrt(3)
    p = plain.softmax(np.where(allowed, q @ np.swapaxes(k, -1, -2) * scale, -np.inf))
    for mine, theirs in zip(plain.attention_backward(g, q, k, v, p, scale), (Q, K, V)):
        np.testing.assert_allclose(mine, theirs.grad.numpy(), rtol=1e-10, atol=1e-12)


def test_embedding_with_repeated_ids():
    ids = np.array([[1, 3, 1], [1, 0, 3]])
    w = RNG.standard_normal((5, 4))
    W = _t(w)
    out = F.embedding(ta.tensor(ids), W)
    g = RNG.standard_normal(out.shape)
    (out * ta.tensor(g)).sum().backward()
    np.testing.assert_allclose(plain.embedding_backward(g, ids, 5), W.grad.numpy(),
                               rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("smoothing", [0.0, 0.1])
def test_cross_entropy_with_ignored_rows(smoothing):
    logits = RNG.standard_normal((5, 4)) * 3
    target = np.array([0, 3, -100, 2, -100])
    L = _t(logits)
    loss = F.cross_entropy(L, ta.tensor(target), label_smoothing=smoothing)
    (loss * 1.7).backward()
    np.testing.assert_allclose(plain.cross_entropy_backward(1.7, logits, target,
                                                            label_smoothing=smoothing),
                               L.grad.numpy(), rtol=1e-10, atol=1e-14)


def test_normal_cdf_float64_exact_float32_within_its_precision():
    x = np.concatenate([np.linspace(-8, 8, 41), [-14.0, 0.0, 30.0]])
    np.testing.assert_allclose(normal_cdf_and_pdf(x.copy())[0], plain.normal_cdf(x),
                               rtol=1e-12, atol=1e-300)
    got32 = normal_cdf_and_pdf(x.astype(np.float32))[0]
    np.testing.assert_allclose(got32, plain.normal_cdf(x), rtol=3e-6, atol=3e-7)


def test_negative_control_a_wrong_plain_formula_is_caught():
    q, k, v = (RNG.standard_normal((1, 3, 2)) for _ in range(3))
    p = plain.softmax(q @ np.swapaxes(k, -1, -2))
    g = RNG.standard_normal((1, 3, 2))
    right = plain.attention_backward(g, q, k, v, p, 1.0)
    dp = g @ np.swapaxes(v, -1, -2)
    wrong_dq = (p * dp) @ k                      # the row term forgotten
    assert not np.allclose(wrong_dq, right[0])
