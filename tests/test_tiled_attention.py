"""Tiled attention (impl="tiled") against the plain op, gradcheck, memory, errors.

Reference: the plain ``scaled_dot_product_attention`` (itself tested against NumPy and
PyTorch). In float64 the two must agree to 1e-12 for the output and all three gradients.
"""
from __future__ import annotations

import tracemalloc

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tinyattn.functional as F
from tinyattn import no_grad
from tinyattn.gradcheck import GradcheckError, gradcheck
from tinyattn.ops import tiled_attention
from tinyattn.tensor import Tensor, tensor

TOL = 1e-12


def _qkv(rng, s_q, s_k, batch=(2, 3), d_k=5, d_v=4, dtype=np.float64, k_batch=None):
    k_batch = batch if k_batch is None else k_batch
    return (rng.standard_normal(batch + (s_q, d_k)).astype(dtype),
            rng.standard_normal(k_batch + (s_k, d_k)).astype(dtype),
            rng.standard_normal(k_batch + (s_k, d_v)).astype(dtype))


def _run(arrays, impl, grad=None, **kwargs):
    """Output and (dq, dk, dv) for one implementation; ``grad`` is d loss / d out."""
    q, k, v = (tensor(a.copy(), requires_grad=True) for a in arrays)
    kwargs = _fold_causal(kwargs, q.shape[-2], k.shape[-2])
    out = F.scaled_dot_product_attention(q, k, v, impl=impl, **kwargs)
    if grad is None:
        grad = np.cos(np.arange(out.data.size)).reshape(out.shape).astype(out.dtype)
    out.backward(grad)
    return out.data, q.grad, k.grad, v.grad


def _fold_causal(kwargs, s_q, s_k):
    """attn_mask with is_causal=True as one mask: torch refuses both at once, and so does
    tinyattn (test_mask_with_is_causal_is_refused_as_torch)."""
    mask = kwargs.get("attn_mask")
    if mask is None or not kwargs.get("is_causal"):
        return kwargs
    causal = np.tril(np.ones((s_q, s_k), dtype=bool))        # top-left aligned, as torch's
    return dict(kwargs, attn_mask=np.asarray(mask) & causal, is_causal=False)


def _assert_same_as_plain(arrays, block_size, **kwargs):
    plain = _run(arrays, "plain", **kwargs)
    tiled = _run(arrays, "tiled", block_size=block_size, **kwargs)
    for name, a, b in zip(("out", "dq", "dk", "dv"), plain, tiled):
        assert a.shape == b.shape, name
        assert np.isfinite(b).all(), f"{name} has NaN/Inf"
        np.testing.assert_allclose(b, a, rtol=0, atol=TOL, err_msg=name)
    return tiled


def _sliding_window(s_q, s_k, window):
    """Causal sliding window built by hand: query i sees keys i-window+1 .. i."""
    i = np.arange(s_q)[:, None]
    j = np.arange(s_k)[None, :]
    return (j <= i) & (j > i - window)


def _masks(s_q, s_k, rng):
    """(label, mask, is_causal) for every mask kind, batch (2, 3)."""
    padding = np.ones((2, 1, 1, s_k), dtype=bool)
    padding[1, ..., s_k - 7:] = False                    # batch 1: last 7 keys are padding
    rows_masked = np.ones((s_q, s_k), dtype=bool)
    rows_masked[[0, 3, s_q - 1]] = False                 # three queries see nothing
    query_padding = np.ones((2, 1, s_q, 1), dtype=bool)
    query_padding[0, :, 5:9] = False
    return [
        ("none", None, False),
        ("causal", None, True),
        ("padding", padding, False),
        ("padding+causal", padding, True),
        ("sliding window", _sliding_window(s_q, s_k, 6), False),
        ("random dense (2,3,S_q,S_k)", rng.random((2, 3, s_q, s_k)) > 0.3, False),
        ("fully masked rows", rows_masked, False),
        ("fully masked rows+causal", rows_masked, True),
        ("query padding (2,1,S_q,1)", query_padding, False),
    ]


SIZES = [(37, 29), (29, 37), (33, 33), (13, 50)]
MASK_LABELS = [m[0] for m in _masks(9, 9, np.random.default_rng(0))]


@pytest.mark.parametrize("s_q,s_k", SIZES)
@pytest.mark.parametrize("kind", range(len(MASK_LABELS)), ids=MASK_LABELS)
def test_matches_plain_float64(s_q, s_k, kind):
    rng = np.random.default_rng(s_q * 100 + s_k)
    label, mask, is_causal = _masks(s_q, s_k, rng)[kind]
    arrays = _qkv(rng, s_q, s_k)
    _assert_same_as_plain(arrays, block_size=8, attn_mask=mask, is_causal=is_causal)


@pytest.mark.parametrize("block_size", [1, 3, 16, 64])
def test_block_sizes_including_one_tile_and_single_rows(block_size):
    rng = np.random.default_rng(block_size)
    padding = np.ones((2, 1, 1, 23), dtype=bool)
    padding[0, ..., :4] = False
    _assert_same_as_plain(_qkv(rng, 19, 23), block_size, attn_mask=padding, is_causal=True)


def test_fully_masked_rows_are_zero_with_zero_grads():
    rng = np.random.default_rng(1)
    mask = np.ones((21, 18), dtype=bool)
    mask[[2, 11]] = False
    out, dq, _, _ = _assert_same_as_plain(_qkv(rng, 21, 18), 4, attn_mask=mask)
    assert np.all(out[..., [2, 11], :] == 0)
    assert np.all(dq[..., [2, 11], :] == 0)
    # Every key masked for every query: all outputs and all gradients zero.
    out, dq, dk, dv = _run(_qkv(rng, 9, 7), "tiled", block_size=4,
                           attn_mask=np.zeros((9, 7), dtype=bool))
    for a in (out, dq, dk, dv):
        assert np.all(a == 0)


def test_broadcast_leading_dims():
    """k and v shared across the batch (leading dims (1, 3)); gradients summed back."""
    rng = np.random.default_rng(2)
    arrays = _qkv(rng, 17, 26, batch=(2, 3), k_batch=(1, 3))
    _, _, dk, dv = _assert_same_as_plain(arrays, 8, is_causal=True)
    assert dk.shape == (1, 3, 26, 5) and dv.shape == (1, 3, 26, 4)


def test_explicit_scale_and_large_logits_float32_stay_stable():
    rng = np.random.default_rng(3)
    q, k, v = _qkv(rng, 40, 40, dtype=np.float32)
    q *= np.float32(30.0)                                 # scores in the hundreds: exp overflows
    plain = _run((q, k, v), "plain", scale=0.5)           # without the max shift
    tiled = _run((q, k, v), "tiled", block_size=16, scale=0.5)
    for a, b in zip(plain, tiled):
        assert np.isfinite(b).all()
        np.testing.assert_allclose(b, a, rtol=1e-4, atol=1e-4)


@given(s_q=st.integers(1, 20), s_k=st.integers(1, 20), block_size=st.integers(1, 9),
       is_causal=st.booleans(), seed=st.integers(0, 2**16))
@settings(max_examples=40, deadline=None)
def test_property_matches_plain_random_sizes(s_q, s_k, block_size, is_causal, seed):
    rng = np.random.default_rng(seed)
    mask = rng.random((1, 1, s_q, s_k)) > 0.2
    _assert_same_as_plain(_qkv(rng, s_q, s_k, batch=(1, 2)), block_size, attn_mask=mask,
                          is_causal=is_causal)


def test_float32_in_float32_out_no_upcast():
    rng = np.random.default_rng(4)
    q, k, v = (tensor(a, requires_grad=True) for a in _qkv(rng, 19, 21, dtype=np.float32))
    mask = np.ones((19, 21), dtype=bool)
    mask[3] = False
    mask &= np.tril(np.ones((19, 21), dtype=bool))              # causal, folded in
    out = F.scaled_dot_product_attention(q, k, v, mask, impl="tiled", block_size=8)
    assert out.dtype == np.float32
    saved_out, saved_lse = out._ctx.saved[4], out._ctx.saved[5]
    assert saved_out.dtype == np.float32 and saved_lse.dtype == np.float32
    out.backward(np.ones(out.shape, dtype=np.float32))
    assert q.grad.dtype == k.grad.dtype == v.grad.dtype == np.float32
    assert all(np.isfinite(g).all() for g in (out.data, q.grad, k.grad, v.grad))


def test_saves_only_output_and_logsumexp():
    """Nothing of size (S_q, S_k) is kept for the backward (only q, k, v, out, L)."""
    rng = np.random.default_rng(5)
    q, k, v = (tensor(a, requires_grad=True) for a in _qkv(rng, 30, 30))
    out = F.scaled_dot_product_attention(q, k, v, is_causal=True, impl="tiled", block_size=8)
    arrays = [a for a in out._ctx.saved if isinstance(a, np.ndarray)]
    assert max(a.size for a in arrays) == 2 * 3 * 30 * 5
    lse = out._ctx.saved[5]
    assert lse.shape == (2, 3, 30, 1)


def test_causal_skips_tiles_above_the_diagonal():
    """Keys 16.. are above the diagonal for all 16 queries (top-left causal). Their tiles must
    never be touched, so NaN there cannot leak: a dense masked product would give 0 * NaN."""
    rng = np.random.default_rng(6)
    q, k, v = _qkv(rng, 16, 40)
    k[..., 16:, :] = np.nan
    v[..., 16:, :] = np.nan
    out, dq, dk, dv = _run((q, k, v), "tiled", block_size=8, is_causal=True)
    assert np.isfinite(out).all() and np.isfinite(dq).all()
    assert np.isfinite(dk[..., :16, :]).all() and np.all(dk[..., 16:, :] == 0)
    assert np.all(dv[..., 16:, :] == 0)
    # Negative control: the plain op multiplies through the masked NaNs.
    plain_out = _run((q, k, v), "plain", is_causal=True)[0]
    assert not np.isfinite(plain_out).all()


def _tiny_inputs(rng):
    q, k, v = _qkv(rng, 5, 4, batch=(1, 2), d_k=3, d_v=2)
    mask = np.ones((1, 1, 5, 4), dtype=bool)
    mask[..., 1, :] = False                               # a fully masked query row
    mask[..., 3, 0] = False
    return [tensor(a, requires_grad=True) for a in (q, k, v)], mask


@pytest.mark.parametrize("is_causal", [False, True])
def test_gradcheck_full_jacobian(is_causal):
    rng = np.random.default_rng(7)
    (q, k, v), mask = _tiny_inputs(rng)
    if is_causal:                     # torch refuses mask and is_causal together: fold it in
        mask = np.asarray(mask) & np.tril(np.ones(np.shape(mask)[-2:], dtype=bool))
    fn = lambda q, k, v: F.scaled_dot_product_attention(  # noqa: E731
        q, k, v, mask, impl="tiled", block_size=2)
    assert gradcheck(fn, [q, k, v], atol=1e-7, rtol=1e-6)


def test_gradcheck_fails_without_the_D_term(monkeypatch):
    """Negative control: with D = 0 (dS = P * dP, the softmax rule's second term dropped)
    both the gradcheck and the comparison with the plain op must fail."""
    rng = np.random.default_rng(8)
    (q, k, v), mask = _tiny_inputs(rng)
    monkeypatch.setattr(tiled_attention, "row_dot", lambda grad, out: 0.0 * out[..., :1])
    fn = lambda q, k, v: F.scaled_dot_product_attention(  # noqa: E731
        q, k, v, mask, impl="tiled", block_size=2)
    with pytest.raises(GradcheckError):
        gradcheck(fn, [q, k, v])
    with pytest.raises(AssertionError):
        _assert_same_as_plain(_qkv(rng, 11, 9), 4)


def test_only_some_inputs_require_grad_and_no_grad_mode():
    rng = np.random.default_rng(9)
    qa, ka, va = _qkv(rng, 10, 12)
    q, k, v = tensor(qa), tensor(ka, requires_grad=True), tensor(va)
    out = F.scaled_dot_product_attention(q, k, v, impl="tiled", block_size=4)
    out.sum().backward()
    assert q.grad is None and v.grad is None
    np.testing.assert_allclose(k.grad, _run((qa, ka, va), "plain",
                                            grad=np.ones(out.shape))[2], atol=TOL, rtol=0)
    with no_grad():
        out = F.scaled_dot_product_attention(q, k, v, impl="tiled", block_size=4)
    assert not out.requires_grad


def _peak_bytes(fn):
    tracemalloc.start()
    try:
        fn()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


@pytest.mark.parametrize("mask_kind", ["none", "causal", "key padding"])
def test_memory_grows_linearly_not_quadratically(mask_kind):
    rng = np.random.default_rng(10)
    s = 768
    arrays = _qkv(rng, s, s, batch=(1, 2), d_k=16, d_v=16)
    mask = np.ones((1, 1, 1, s), dtype=bool) if mask_kind == "key padding" else None
    kwargs = dict(attn_mask=mask, is_causal=mask_kind == "causal")
    score_bytes = 2 * s * s * 8                           # one (h, S, S) float64 array
    tiled = _peak_bytes(lambda: _run(arrays, "tiled", block_size=64, **kwargs))
    if mask_kind == "causal":
        # plain is_causal=True now runs by blocks of queries (ops/attention.py), whose peak is
        # not quadratic either; the same mask given as an array takes the whole-matrix path
        kwargs = dict(attn_mask=np.tril(np.ones((s, s), dtype=bool)))
    plain = _peak_bytes(lambda: _run(arrays, "plain", **kwargs))
    assert tiled < score_bytes / 4, (tiled, score_bytes)
    assert plain > score_bytes                            # negative control: the check bites


def test_matches_torch():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(11)
    arrays = _qkv(rng, 27, 27)
    ours = _run(arrays, "tiled", block_size=8, is_causal=True)
    q, k, v = (torch.tensor(a, requires_grad=True) for a in arrays)
    out = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
    out.backward(torch.tensor(np.cos(np.arange(out.numel())).reshape(out.shape)))
    for a, b in zip(ours, (out, q.grad, k.grad, v.grad)):
        np.testing.assert_allclose(a, b.detach().numpy(), rtol=0, atol=1e-12)


def _tensors(rng):
    return [tensor(a) for a in _qkv(rng, 6, 6)]


@pytest.mark.parametrize("kwargs,error,match", [
    (dict(impl="flash"), ValueError, "impl must be 'plain', 'tiled' or 'composed', got 'flash'"),
    (dict(impl="tiled", block_size=0), ValueError, "block_size must be a positive"),
    (dict(impl="tiled", block_size=2.5), TypeError, "block_size must be an int, got float"),
    (dict(impl="tiled", block_size=True), TypeError, "block_size must be an int, got bool"),
    (dict(impl="tiled", dropout_p=0.1), ValueError, "does not support dropout"),
    (dict(impl="tiled", need_weights=True), ValueError, "cannot return the attention weights"),
    (dict(impl="tiled", attn_mask=np.ones((6, 5), dtype=bool)), ValueError, "does not broadcast"),
    (dict(impl="tiled", attn_mask=np.ones((6, 6))), ValueError, "boolean masks only"),
    (dict(impl="tiled", attn_mask=np.ones((6, 6), dtype=np.int64)), TypeError, "must be boolean"),
])
def test_errors_name_the_problem(kwargs, error, match):
    q, k, v = _tensors(np.random.default_rng(12))
    with pytest.raises(error, match=match):
        F.scaled_dot_product_attention(q, k, v, **kwargs)


def test_benchmark_script_runs_and_writes_between_markers(tmp_path, capsys):
    import importlib.util
    import pathlib
    path = pathlib.Path(__file__).parent.parent / "benchmarks" / "tiled_attention.py"
    spec = importlib.util.spec_from_file_location("bench_tiled_attention", path)
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    doc = tmp_path / "doc.md"
    doc.write_text("intro\n<!-- bench:start -->\nold table\n<!-- bench:end -->\noutro\n")
    bench.main(["--sizes", "40", "--block-size", "16", "--reps", "1", "--write", str(doc)])
    text = doc.read_text()
    assert "old table" not in text and text.startswith("intro") and text.endswith("outro\n")
    assert "| 40 |" in text and "--sizes 40 --block-size 16" in text
    bad = tmp_path / "no_markers.md"
    bad.write_text("no markers")
    with pytest.raises(ValueError, match="no <!-- bench:start -->"):
        bench.main(["--sizes", "8", "--reps", "1", "--write", str(bad)])


def test_values_batched_wider_than_queries_and_keys_match_plain():
    rng = np.random.default_rng(0)
    q = tensor(rng.standard_normal((1, 2, 5, 4)), requires_grad=True)
    v = tensor(rng.standard_normal((3, 2, 5, 4)), requires_grad=True)
    results = []
    for impl in ("plain", "tiled"):
        q.grad = v.grad = None
        out = F.scaled_dot_product_attention(q, q, v, impl=impl, block_size=2)
        out.backward(np.ones(out.shape))
        results.append((out.numpy().copy(), q.grad.numpy().copy(), v.grad.numpy().copy()))
    for plain, tiled in zip(*results):
        np.testing.assert_allclose(tiled, plain, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("impl", ["plain", "tiled", "composed"])
def test_mask_with_is_causal_is_refused_as_torch(impl):
    """torch documents (and its math kernel raises) that attn_mask and is_causal=True are
    not given together; tinyattn raises on every path. Negative control: each alone runs."""
    q, k, v = (tensor(a) for a in _qkv(np.random.default_rng(0), 5, 5))
    mask = np.ones((5, 5), dtype=bool)
    with pytest.raises(RuntimeError, match="attn_mask should not be set when is_causal"):
        F.scaled_dot_product_attention(q, k, v, mask, is_causal=True, impl=impl)
    F.scaled_dot_product_attention(q, k, v, mask, impl=impl)
    F.scaled_dot_product_attention(q, k, v, is_causal=True, impl=impl)
