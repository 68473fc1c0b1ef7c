"""Core ops against PyTorch in float64: outputs and every input gradient to 1e-10.
Skipped when torch is not installed (it is a test oracle only; tinyattn never imports it)."""
import numpy as np
import pytest

import tinyattn as ta
import tinyattn.functional as F

torch = pytest.importorskip("torch")
TF = torch.nn.functional


def _pair(*arrays):
    ours = [ta.tensor(a, requires_grad=a.dtype.kind == "f") for a in arrays]
    theirs = [torch.tensor(a, requires_grad=a.dtype.kind == "f") for a in arrays]
    return ours, theirs


def _compare(our_fn, torch_fn, *arrays, upstream_seed=0):
    ours, theirs = _pair(*arrays)
    out, ref = our_fn(*ours), torch_fn(*theirs)
    np.testing.assert_allclose(out.numpy(), ref.detach().numpy(), rtol=1e-10, atol=1e-10)
    upstream = np.random.default_rng(upstream_seed).standard_normal(out.shape)
    out.backward(upstream)
    ref.backward(torch.tensor(upstream))
    for o, t in zip(ours, theirs):
        if t.requires_grad:
            np.testing.assert_allclose(o.grad, t.grad.numpy(), rtol=1e-10, atol=1e-10)


rng = np.random.default_rng(0)


def test_softmax_and_log_softmax():
    x = rng.standard_normal((3, 4, 5)) * 3
    _compare(lambda t: F.softmax(t, 1), lambda t: TF.softmax(t, 1), x)
    _compare(lambda t: F.log_softmax(t, -1), lambda t: TF.log_softmax(t, -1), x)


@pytest.mark.parametrize("approximate", ["none", "tanh"])
def test_gelu(approximate):
    x = rng.standard_normal((4, 5)) * 2
    _compare(lambda t: F.gelu(t, approximate), lambda t: TF.gelu(t, approximate=approximate), x)


def test_linear_with_batched_input():
    _compare(F.linear, TF.linear, rng.standard_normal((2, 3, 4)), rng.standard_normal((5, 4)),
             rng.standard_normal(5))


def test_layer_norm():
    x, w, b = rng.standard_normal((2, 3, 6)), rng.standard_normal(6), rng.standard_normal(6)
    _compare(lambda *a: F.layer_norm(a[0], 6, a[1], a[2]),
             lambda *a: TF.layer_norm(a[0], (6,), a[1], a[2]), x, w, b)


def test_embedding():
    ids = np.array([[0, 3, 3], [2, 0, 3]])
    _compare(lambda w, i: F.embedding(i, w), lambda w, i: TF.embedding(i, w),
             rng.standard_normal((5, 4)), ids)


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("label_smoothing", [0.0, 0.2])
def test_cross_entropy(reduction, label_smoothing):
    logits, target = rng.standard_normal((6, 5)), np.array([0, 4, -100, 2, 2, -100])
    _compare(lambda x, t: F.cross_entropy(x, t, reduction=reduction,
                                          label_smoothing=label_smoothing),
             lambda x, t: TF.cross_entropy(x, t, reduction=reduction,
                                           label_smoothing=label_smoothing),
             logits, target)


@pytest.mark.parametrize("is_causal", [False, True])
def test_scaled_dot_product_attention_with_mask(is_causal):
    q, k, v = (rng.standard_normal((2, 3, 5, 4)) for _ in range(3))
    mask = rng.random((2, 1, 5, 5)) > 0.3
    mask[..., 0] = True   # every row attends (fully masked: test_derivations_numeric)
    if is_causal:
        _compare(lambda *a: F.scaled_dot_product_attention(*a, is_causal=True),
                 lambda *a: TF.scaled_dot_product_attention(*a, is_causal=True), q, k, v)
    else:
        _compare(lambda *a: F.scaled_dot_product_attention(*a[:3], attn_mask=a[3]),
                 lambda *a: TF.scaled_dot_product_attention(*a[:3], attn_mask=a[3]),
                 q, k, v, mask)


def test_matmul_broadcast_batch():
    _compare(lambda a, b: a @ b, lambda a, b: a @ b, rng.standard_normal((2, 1, 3, 4)),
             rng.standard_normal((3, 4, 2)))


def test_reductions_and_indexing():
    x = rng.standard_normal((3, 4))
    _compare(lambda t: t.sum(1, keepdim=True) * t.mean(0), lambda t: t.sum(1, keepdim=True)
             * t.mean(0), x)
    _compare(lambda t: t[[0, 2, 0]][:, 1:3], lambda t: t[[0, 2, 0]][:, 1:3], x)
