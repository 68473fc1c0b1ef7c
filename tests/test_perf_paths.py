"""The fast paths added for speed compute exactly what the plain paths compute.

Each fast path (benchmarks/run.py, docs/benchmarks.md) is checked against the slower,
obviously-right computation it replaces, in float64 and with its gradients; and float32
models stay float32 through forward and backward (a silent float64 upcast would halve speed).
"""
import importlib

import numpy as np
import pytest

import tinyattn as ta
import tinyattn.functional as F
from tinyattn import nn, optim, strict_device
from tinyattn.ops.attention import causal_mask_array, packed_self_attention

RNG = np.random.default_rng(8)


def _t(shape, dtype="float64"):
    return ta.tensor(RNG.standard_normal(shape), dtype=dtype, requires_grad=True)


def _op_names(out):
    """Names of every op in the graph behind ``out`` (which path ran)."""
    names, stack, seen = set(), [out], set()
    while stack:
        node = stack.pop()
        if node._ctx is not None and id(node) not in seen:
            seen.add(id(node))
            names.add(type(node._ctx).__name__)
            stack.extend(node._ctx.inputs)
    return names


# ------------------------------------------------------------------ packed q/k/v
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("dropout_p", [0.0, 0.4])
def test_packed_self_attention_equals_attention_on_the_three_slices(causal, dropout_p):
    qkv = _t((3, 2, 3, 5, 4))
    mask = ta.tensor(RNG.random((2, 1, 5, 5)) > 0.3)
    mask.data[0, 0, 1] = False                   # one fully masked query row
    g = RNG.standard_normal((2, 3, 5, 4))
    ta.manual_seed(5)
    out = packed_self_attention(qkv, mask=mask, is_causal=causal, dropout_p=dropout_p)
    out.backward(g)
    sliced = ta.tensor(qkv.data, requires_grad=True)
    ta.manual_seed(5)
    # torch's SDPA refuses attn_mask with is_causal: the reference gets the two as one mask
    both = mask & ta.tensor(np.tril(np.ones((5, 5), dtype=bool))) if causal else mask
    ref = F.scaled_dot_product_attention(sliced[0], sliced[1], sliced[2], attn_mask=both,
                                         dropout_p=dropout_p)
    ref.backward(g)
    np.testing.assert_allclose(out.numpy(), ref.numpy(), rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(qkv.grad, sliced.grad, rtol=1e-12, atol=1e-14)
    assert np.isfinite(qkv.grad).all()


def test_packed_self_attention_gradcheck_and_weights():
    qkv = _t((3, 1, 2, 4, 3))
    assert ta.gradcheck(lambda t: packed_self_attention(t, is_causal=True), [qkv])
    out, weights = packed_self_attention(qkv, need_weights=True)
    _, ref = F.scaled_dot_product_attention(qkv[0], qkv[1], qkv[2], need_weights=True)
    np.testing.assert_allclose(weights.numpy(), ref.numpy(), rtol=1e-12)


def test_packed_self_attention_rejects_a_tensor_that_is_not_stacked_qkv():
    with pytest.raises(ValueError, match=r"qkv must be \(3, \.\.\., S, d_k\)"):
        packed_self_attention(_t((2, 1, 4, 3)))
    with pytest.raises(ValueError, match="dropout_p must be in"):
        packed_self_attention(_t((3, 1, 4, 3)), dropout_p=1.5)


# ------------------------------------------------------------------ causal query blocks
def _attention_and_grads(make, arrays, g):
    leaves = [ta.tensor(a, requires_grad=True) for a in arrays]
    out = make(*leaves)
    out.backward(g)
    return [out.numpy()] + [t.grad.numpy().copy() for t in leaves]


@pytest.mark.parametrize("seq", [8, 11])        # 11: a last block shorter than the others
@pytest.mark.parametrize("packed", [False, True])
def test_causal_attention_by_query_blocks_equals_the_plain_path(seq, packed, monkeypatch):
    """Blocks of 4 queries (the real size, 64, needs S >= 128) against the whole-matrix
    path, float64, output and every gradient; the block path must actually run."""
    import tinyattn.ops.attention as attention_ops
    calls = []
    blocked = attention_ops._forward_by_blocks
    monkeypatch.setattr(attention_ops, "_forward_by_blocks",
                        lambda *a: calls.append(1) or blocked(*a))
    if packed:
        arrays = [RNG.standard_normal((3, 2, 3, seq, 4))]
        make = lambda qkv: packed_self_attention(qkv, is_causal=True)      # noqa: E731
    else:
        arrays = [RNG.standard_normal((2, 3, seq, 4)) for _ in range(3)]
        make = lambda q, k, v: F.scaled_dot_product_attention(q, k, v,     # noqa: E731
                                                              is_causal=True)
    g = RNG.standard_normal((2, 3, seq, 4))
    monkeypatch.setattr(attention_ops, "_CAUSAL_BLOCK", 4)
    by_blocks = _attention_and_grads(make, arrays, g)
    assert calls, "the block path did not run"
    monkeypatch.setattr(attention_ops, "_CAUSAL_BLOCK", 10 ** 6)
    calls.clear()
    plain = _attention_and_grads(make, arrays, g)
    assert not calls
    for got, want in zip(by_blocks, plain):
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-13)
    monkeypatch.setattr(attention_ops, "_CAUSAL_BLOCK", 4)
    q, k, v = (_t((1, 2, 9, 3)) for _ in range(3))
    assert ta.gradcheck(lambda *t: F.scaled_dot_product_attention(*t, is_causal=True),
                        [q, k, v])


def test_causal_blocks_only_for_the_causal_mask_itself(monkeypatch):
    """A boolean mask that is not the cached causal one (another mask, or the causal mask's
    copy combined with padding) takes the whole-matrix path, and agrees with it; a broken
    block path would be caught (negative control)."""
    import tinyattn.ops.attention as attention_ops
    monkeypatch.setattr(attention_ops, "_CAUSAL_BLOCK", 4)
    q, k, v = (np.zeros((1, 1, 8, 2)) for _ in range(3))
    causal = causal_mask_array(np, 8, 8)
    assert attention_ops.causal_query_blocks(q, k, v, causal, None) == [(0, 4), (4, 8)]
    assert attention_ops.causal_query_blocks(q, k, v, causal.copy(), None) is None
    assert attention_ops.causal_query_blocks(q, k, v, causal, np.zeros((8, 8))) is None
    assert attention_ops.causal_query_blocks(q[..., :7, :], k, v, causal, None) is None
    arrays = [RNG.standard_normal((2, 2, 8, 3)) for _ in range(3)]
    g = RNG.standard_normal((2, 2, 8, 3))
    make = lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True)  # noqa
    good = _attention_and_grads(make, arrays, g)
    monkeypatch.setattr(attention_ops, "row_sums", lambda x: 0 * x[..., :1])  # broken
    bad = _attention_and_grads(make, arrays, g)
    assert not np.allclose(bad[1], good[1])


def test_causal_attention_by_query_blocks_matches_torch_at_the_real_block_size():
    torch = pytest.importorskip("torch", reason="torch is the reference here")
    arrays = [RNG.standard_normal((2, 2, 150, 8)).astype(np.float32) for _ in range(3)]
    g = RNG.standard_normal((2, 2, 150, 8)).astype(np.float32)
    ours = _attention_and_grads(
        lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True), arrays, g)
    leaves = [torch.tensor(a, requires_grad=True) for a in arrays]
    out = torch.nn.functional.scaled_dot_product_attention(*leaves, is_causal=True)
    out.backward(torch.tensor(g))
    theirs = [out.detach().numpy()] + [t.grad.numpy() for t in leaves]
    for got, want in zip(ours, theirs):
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=2e-5)


@pytest.mark.parametrize("options", [{}, {"is_causal": True}, {"padding": True}])
def test_mha_packed_projection_equals_three_projections(options):
    """MHA(x) takes the packed path; MHA(x, x2, x2) with x2 a copy of x takes three
    projections. Same output; x's gradient is the sum of the copies' gradients."""
    ta.manual_seed(1)
    mha = nn.MultiHeadAttention(8, 2).double()
    x = _t((2, 5, 8))
    pad = ta.tensor(np.array([[False] * 5, [False, False, False, True, True]]))
    kwargs = {"is_causal": options.get("is_causal", False), "need_weights": False,
              "key_padding_mask": pad if options.get("padding") else None}
    out, _ = mha(x, **kwargs)
    g = RNG.standard_normal(out.shape)
    out.backward(g)
    packed_grads = {n: p.grad.numpy().copy() for n, p in mha.named_parameters()}
    mha.zero_grad()
    x_query, x_kv = (ta.tensor(x.data, requires_grad=True) for _ in range(2))
    ref, _ = mha(x_query, x_kv, x_kv, **kwargs)
    ref.backward(g)
    assert "PackedSelfAttention" in _op_names(out)           # the two paths differ
    assert "PackedSelfAttention" not in _op_names(ref)
    np.testing.assert_allclose(out.numpy(), ref.numpy(), rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(x.grad.numpy(), (x_query.grad + x_kv.grad).numpy(),
                               rtol=1e-11, atol=1e-13)
    for name, p in mha.named_parameters():
        np.testing.assert_allclose(packed_grads[name], p.grad.numpy(), rtol=1e-11, atol=1e-13,
                                   err_msg=name)


def test_mha_without_biases_packs_and_matches():
    ta.manual_seed(2)
    mha = nn.MultiHeadAttention(4, 2, bias=False).double()
    x = _t((1, 3, 4))
    x2 = ta.tensor(x.data)
    np.testing.assert_allclose(mha(x)[0].numpy(), mha(x2, x2, x2)[0].numpy(), rtol=1e-12)


# ------------------------------------------------------------------ q/k/v rows in one array
def _graph_ops(out):
    names, stack, seen = [], [out._ctx], set()
    while stack:
        fn = stack.pop()
        if fn is not None and id(fn) not in seen:
            seen.add(id(fn))
            names.append(type(fn).__name__)
            stack.extend(fn.parents)
    return names


@pytest.mark.parametrize("make", ["mha", "gpt"])
def test_packed_qkv_weights_are_read_in_place_and_equal_the_copied_stack(make, monkeypatch):
    """W_q, W_k, W_v are row blocks of one array (MHA's __init__, and again after GPT's
    initialisation), so the packed projection reads that array (PackedRows, no cat). A
    training step gives bit for bit what stacking copies gives."""
    import tinyattn.ops.attention as attention_ops

    def step(pack):
        if not pack:
            monkeypatch.setattr(attention_ops, "rows_of_one_array", lambda arrays: False)
        ta.manual_seed(3)
        if make == "mha":
            model = nn.MultiHeadAttention(8, 2)
            x = ta.tensor(np.random.default_rng(0).standard_normal((2, 5, 8)), dtype="float32")
            run = lambda: model(x, is_causal=True, need_weights=False)[0].square().sum()  # noqa
        else:
            model = nn.GPT(nn.GPTConfig(vocab_size=11, block_size=6, n_layer=2, n_head=2,
                                        d_model=8))
            ids = np.random.default_rng(0).integers(0, 11, size=(2, 6))
            run = lambda: model(ids, ids)[1]                                      # noqa
        attn = next(m for m in model.modules() if isinstance(m, nn.MultiHeadAttention))
        opt = optim.AdamW(model.parameters(), lr=1e-2)
        losses = []
        for _ in range(3):
            loss = run()
            ops = _graph_ops(loss)
            loss.backward()
            opt.step()
            opt.zero_grad()
            losses.append(loss.item())
        monkeypatch.undo()
        return losses, [p.numpy().copy() for p in model.parameters()], ops, attn

    losses, params, ops, attn = step(True)
    assert "PackedRows" in ops and "Concat" not in ops
    assert attn.q_proj.weight.data.base is attn.v_proj.weight.data.base
    ref_losses, ref_params, ref_ops, _ = step(False)
    assert "Concat" in ref_ops and "PackedRows" not in ref_ops    # the control took cat
    assert losses == ref_losses
    for got, want in zip(params, ref_params):
        np.testing.assert_array_equal(got, want)


def test_packed_qkv_weight_changed_in_place_before_backward_raises():
    """The packed projection reads the weights' own memory: an in-place change between the
    forward and the backward must not give a silently wrong gradient."""
    ta.manual_seed(4)
    mha = nn.MultiHeadAttention(8, 2)
    x = ta.tensor(np.ones((1, 3, 8)), dtype="float32", requires_grad=True)
    out = mha(x, need_weights=False)[0].sum()
    with ta.no_grad():
        mha.k_proj.weight.mul_(2.0)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        out.backward()


def test_packed_qkv_falls_back_to_a_copy_when_the_weights_are_apart():
    """A reassigned weight, or a model converted with .double(), no longer shares one array:
    the stack is copied (cat) and the results are those of three separate projections."""
    ta.manual_seed(5)
    mha = nn.MultiHeadAttention(4, 2)
    mha.v_proj.weight = nn.Parameter(mha.v_proj.weight.data.copy())
    x = ta.tensor(np.random.default_rng(1).standard_normal((1, 3, 4)), dtype="float32")
    out = mha(x, need_weights=False)[0]
    assert "Concat" in _graph_ops(out.sum()) or not out.requires_grad
    x2 = ta.tensor(x.data)
    np.testing.assert_allclose(out.numpy(), mha(x2, x2, x2, need_weights=False)[0].numpy(),
                               rtol=1e-5, atol=1e-6)
    from tinyattn.ops.attention import rows_of_one_array
    whole = np.arange(12.0).reshape(6, 2).copy()          # an array that owns its memory
    assert rows_of_one_array([whole[0:2], whole[2:4], whole[4:6]])
    assert not rows_of_one_array([whole[0:2], whole[4:6], whole[2:4]])     # out of order
    assert not rows_of_one_array([whole[0:2], whole[2:4]])                 # not all rows
    assert not rows_of_one_array([whole[0:2], whole[2:4], whole[4:6].copy()])
    assert not rows_of_one_array([whole[:, :1], whole[:, 1:]])


def test_causal_mask_cache_is_shared_and_left_unchanged_on_the_strict_device():
    strict_device.enable()
    xp = strict_device.xp
    first = causal_mask_array(xp, 4, 4)
    assert causal_mask_array(xp, 4, 4) is first
    q = ta.tensor(RNG.standard_normal((1, 1, 4, 2)), device=strict_device.DEVICE)
    for _ in range(2):
        F.scaled_dot_product_attention(q, q, q, is_causal=True)
    np.testing.assert_array_equal(first._array, np.tri(4, 4, dtype=bool))


# ------------------------------------------------------------------ float32 stays float32
def test_float32_gpt_training_step_stays_float32():
    ta.manual_seed(0)
    model = nn.GPT(nn.GPTConfig(vocab_size=11, block_size=8, n_layer=2, n_head=2, d_model=8))
    opt = optim.AdamW(model.parameters(), lr=1e-3)
    ids = RNG.integers(0, 11, (2, 8))
    logits, loss = model(ids, ids)
    assert logits.dtype == np.float32 and loss.dtype == np.float32
    loss.backward()
    opt.step()
    for name, p in model.named_parameters():
        assert p.dtype == np.float32 and p.grad.dtype == np.float32, name


def test_float32_encoder_layer_stays_float32():
    ta.manual_seed(0)
    layer = nn.TransformerEncoderLayer(8, 2, dim_feedforward=16, dropout=0.1)
    x = ta.tensor(RNG.standard_normal((2, 5, 8)), dtype="float32", requires_grad=True)
    out = layer(x, is_causal=True)
    assert out.dtype == np.float32
    out.sum().backward()
    assert x.grad.dtype == np.float32
    assert all(p.grad.dtype == np.float32 for p in layer.parameters())


# ------------------------------------------------------------------ fast float32 GELU
def test_float32_normal_cdf_is_accurate_and_stays_float32():
    scipy_special = pytest.importorskip("scipy.special")
    from tinyattn.ops.normal_cdf import normal_cdf_and_pdf
    x = np.linspace(-12, 12, 200_001).astype(np.float32)
    cdf, pdf = normal_cdf_and_pdf(x)
    assert cdf.dtype == np.float32 and pdf.dtype == np.float32
    exact = scipy_special.ndtr(x.astype(np.float64))
    assert np.abs(cdf - exact).max() <= 3.7e-7    # 3.6e-7 over every float32 (derivations.md)
    tail = x < -2                      # small values keep their relative accuracy
    assert (np.abs(cdf - exact)[tail] / exact[tail]).max() < 0.05
    assert np.abs(cdf - exact).max() > 0.0  # negative control: not the exact erf path


def test_float32_gelu_matches_float64_gelu_and_its_gradient():
    x64 = RNG.standard_normal(1000) * 4
    g = RNG.standard_normal(1000)
    results = []
    for dtype in ("float32", "float64"):
        x = ta.tensor(x64, dtype=dtype, requires_grad=True)
        out = F.gelu(x)
        out.backward(g.astype(dtype))
        assert out.dtype == dtype and x.grad.dtype == dtype
        results.append((out.numpy(), x.grad))
    np.testing.assert_allclose(results[0][0], results[1][0], atol=2e-6)
    np.testing.assert_allclose(results[0][1], results[1][1], atol=2e-6)


def test_float32_gelu_output_is_accurate_at_every_scale():
    """x Phi(x) in float32 against the exact value (float64 ndtr): within 3.5e-7 (3.3e-7 over
    every float32, docs/derivations.md#gelu), and small outputs (x near 0, the left tail)
    keep their relative accuracy."""
    scipy_special = pytest.importorskip("scipy.special")
    x = np.concatenate([np.linspace(-16, 16, 400_001), -np.logspace(-30, 1.2, 2001),
                        np.logspace(-30, 1.2, 2001)]).astype(np.float32)
    x64 = x.astype(np.float64)
    exact = x64 * scipy_special.ndtr(x64)
    with ta.no_grad():
        out = F.gelu(ta.tensor(x)).numpy()
    error = np.abs(out - exact)
    assert error.max() <= 3.5e-7
    small = (np.abs(x64) < 1e-3) & (x != 0)
    assert (error[small] / np.abs(exact[small])).max() < 1e-6
    tail = (x64 > -5) & (x64 < -1)
    assert (error[tail] / np.abs(exact[tail])).max() < 4e-3


@pytest.mark.parametrize("shape", [(), (0,), (4, 0), (7,), (5, 3, 11), (70, 9)])
def test_float32_gelu_without_graph_equals_the_recorded_path_bit_for_bit(shape, monkeypatch):
    """Float32 GELU runs a block of elements at a time (30 here), with or without a graph:
    each element goes through the same operations, so the numbers are identical, specials
    included."""
    import tinyattn.ops.normal_cdf as normal_cdf
    monkeypatch.setattr(normal_cdf, "_GELU_BLOCK", 30)
    x = (RNG.standard_normal(shape) * 4).astype(np.float32)
    if x.size >= 6:
        x.reshape(-1)[:6] = [np.inf, -np.inf, np.nan, 0.0, -30.0, 30.0]
    with ta.no_grad():
        fast = F.gelu(ta.tensor(x)).numpy()
    recorded = F.gelu(ta.tensor(x, requires_grad=True))
    assert recorded.requires_grad and fast.shape == x.shape and fast.dtype == np.float32
    np.testing.assert_array_equal(fast, recorded.numpy())
    if x.size >= 6:                       # the limits: GELU(inf) = inf, GELU(-inf) -> 0
        np.testing.assert_array_equal(fast.reshape(-1)[:6], [np.inf, 0, np.nan, 0, 0, 30])


@pytest.mark.parametrize("shape", [(), (0,), (7,), (5, 3, 11), (70, 9)])
def test_float32_gelu_saves_the_slope_and_its_gradient_is_the_recomputed_slope(shape,
                                                                             monkeypatch):
    """A recorded float32 GELU computes its slope in the forward's block loop (30 elements a
    block here) and saves it instead of x: the gradient is g times the slope recomputed from
    x alone (``gelu_slope_by_blocks``), bit for bit, specials included, and the output is
    the unrecorded one."""
    import tinyattn.ops.normal_cdf as normal_cdf
    from tinyattn.ops.elementwise import _SLOPE_SAVED
    monkeypatch.setattr(normal_cdf, "_GELU_BLOCK", 30)
    x = (RNG.standard_normal(shape) * 4).astype(np.float32)
    if x.size >= 6:
        x.reshape(-1)[:6] = [np.inf, -np.inf, np.nan, 0.0, -30.0, 30.0]
    g = RNG.standard_normal(shape).astype(np.float32)
    t = ta.tensor(x, requires_grad=True)
    out = F.gelu(t)
    assert out.grad_fn.saved[1] == _SLOPE_SAVED     # the fast path ran (not vacuous)
    with np.errstate(invalid="ignore"):
        out.backward(ta.tensor(g))
        expected = g * normal_cdf.gelu_slope_by_blocks(x)
    assert t.grad.dtype == np.float32
    np.testing.assert_array_equal(t.grad, expected)
    np.testing.assert_array_equal(out.numpy(), normal_cdf.exact_gelu_by_blocks(x))


def test_float32_gelu_saves_x_while_its_backward_is_swapped(monkeypatch):
    """The exercises' payoff swaps a learner's GELU backward in, which is called with x: while
    Gelu.backward is not its own, a recorded float32 forward saves x; one recorded before
    the swap saved the slope, and the adapter says it is not covered (tinyattn's own
    backward then runs) instead of passing the slope as x."""
    from tinyattn.exercises.adapters import NotCovered, _gelu
    from tinyattn.ops.elementwise import _SLOPE_SAVED, Gelu
    x = ta.tensor(RNG.standard_normal(8).astype(np.float32), requires_grad=True)
    before = F.gelu(x)._ctx
    assert before.saved[1] == _SLOPE_SAVED
    with pytest.raises(NotCovered):
        _gelu(before, np.ones(8, np.float32), lambda grad, cache: 1 / 0)
    own = Gelu.backward
    monkeypatch.setattr(Gelu, "backward", lambda self, grad: own(self, grad))
    during = F.gelu(x)._ctx
    assert during.saved[1] == "none" and during.saved[0] is x._data
    np.testing.assert_array_equal(
        during.backward(np.ones(8, np.float32)), before.backward(np.ones(8, np.float32)))


def test_float32_gelu_backward_raises_when_its_input_changed_in_place():
    """torch's GELU saves x: changed in place, its backward raises. tinyattn's saves the
    slope instead, and still checks x's version."""
    leaf = ta.tensor(RNG.standard_normal(8).astype(np.float32), requires_grad=True)
    x = leaf * 1.0
    out = F.gelu(x)
    out.sum().backward()                  # negative control: unchanged, it runs
    x = leaf * 1.0
    out = F.gelu(x)
    x.mul_(2.0)
    with pytest.raises(RuntimeError, match="in ?place|inplace|modified"):
        out.sum().backward()


# ------------------------------------------------------------------ attention without graph
def _mask_cases(batch, heads, s):
    padded = np.ones((batch, 1, 1, s), bool)
    padded[0, ..., s - 2:] = False                           # trailing padding
    left = np.ones((batch, 1, 1, s), bool)
    left[-1, ..., :3] = False                                # leading padding
    holes = RNG.random((batch, 1, 1, s)) > 0.4
    holes[:, ..., 0] = True
    rows = RNG.random((batch, heads, s, s)) > 0.5            # per head and query
    rows[0, 1, 2] = False                                    # sees nothing in one head
    rows[1, :, 3] = False                                    # sees nothing in any head
    square = left & left.swapaxes(-1, -2)                    # (B, 1, S, S): padding queries
    gone = np.ones((batch, 1, 1, s), bool)
    gone[1] = False                                          # a sequence with no keys at all
    one_key = (np.arange(batch) != 1).reshape(batch, 1, 1, 1)  # a key axis of 1: broadcast
    one_key_rows = RNG.random((batch, 1, s, 1)) > 0.3         # per query, over every key
    return {"none": None, "trailing": padded, "leading": left, "holes": holes,
            "rows": rows, "no_keys": gone, "2-D": RNG.random((s, s)) > 0.3, "square": square,
            "one_key": one_key, "one_key_rows": one_key_rows}


@pytest.mark.parametrize("case", ["none", "trailing", "leading", "holes", "rows", "no_keys",
                                  "2-D", "square", "one_key", "one_key_rows"])
@pytest.mark.parametrize("dtype, tolerance", [("float64", 1e-12), ("float32", 2e-6)])
def test_attention_without_graph_equals_the_recorded_forward(case, dtype, tolerance):
    """The no-graph forward (per sequence, over the keys in use, normalised after the product
    with v) gives the recorded forward's numbers, for every kind of mask."""
    batch, heads, s, d = 3, 2, 7, 4
    mask = _mask_cases(batch, heads, s)[case]
    q, k, v = (_t((batch, heads, s, d), dtype) for _ in range(3))
    recorded = F.scaled_dot_product_attention(q, k, v, mask, is_causal=case == "none")
    with ta.no_grad():
        fast = F.scaled_dot_product_attention(q, k, v, mask, is_causal=case == "none")
    assert recorded.requires_grad and not fast.requires_grad
    np.testing.assert_allclose(fast.numpy(), recorded.numpy(), rtol=tolerance, atol=tolerance)
    assert fast.is_contiguous() and fast.view(batch, heads * s, d).shape == (batch, heads * s, d)
    if case == "no_keys":
        np.testing.assert_array_equal(fast.numpy()[1], 0.0)
    if case in ("rows", "square"):                # queries that see nothing: exactly 0
        dead = ~np.broadcast_to(mask, (batch, heads, s, s)).any(axis=-1)
        assert dead.any() and np.all(fast.numpy()[dead] == 0)
    qkv = ta.stack([q, k, v])
    with ta.no_grad():
        packed = packed_self_attention(qkv, mask=mask, is_causal=case == "none")
    np.testing.assert_allclose(packed.numpy(), recorded.numpy(), rtol=tolerance,
                               atol=tolerance)


@pytest.mark.parametrize("shape", [(2, 5, 3), (2, 2, 2, 5, 3)])
def test_attention_without_graph_other_ranks(shape):
    q, k, v = (_t(shape) for _ in range(3))
    mask = RNG.random(shape[:-1] + (shape[-2],)) > 0.3
    recorded = F.scaled_dot_product_attention(q, k, v, mask)
    with ta.no_grad():
        fast = F.scaled_dot_product_attention(q, k, v, mask)
    np.testing.assert_allclose(fast.numpy(), recorded.numpy(), rtol=1e-12, atol=1e-12)


def test_attention_without_graph_negative_control(monkeypatch):
    """The comparison above catches a key dropped that a query may see: let the no-graph path
    believe the last key is padding."""
    import tinyattn.ops.attention as attention
    q, k, v = (_t((2, 2, 6, 4)) for _ in range(3))
    recorded = F.scaled_dot_product_attention(q, k, v, np.ones((2, 1, 1, 6), bool))
    real = attention._attention_without_graph
    monkeypatch.setattr(attention, "_attention_without_graph", lambda q, k, v, mask, scale:
                        real(q, k, v, np.arange(6) < 5, scale))
    with ta.no_grad():
        fast = F.scaled_dot_product_attention(q, k, v, np.ones((2, 1, 1, 6), bool))
    assert np.abs(fast.numpy() - recorded.numpy()).max() > 1e-3


# ------------------------------------------------------------------ layer norm without graph
@pytest.mark.parametrize("normalized, affine", [((6,), True), ((6,), False), ((4, 6), True)])
@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("contiguous", [True, False])
def test_layer_norm_without_graph_equals_the_recorded_forward(normalized, affine, dtype,
                                                              contiguous, monkeypatch):
    """The no-graph forward gives the recorded numbers, and is as accurate against float64:
    ordinary rows, a constant row (variance 0), rows far from 0, a NaN row; a contiguous
    input (both take the blocks of tinyattn/ops/norm.py: layer_norm_by_blocks, here of about
    3 rows, so several run) and a non-contiguous one (both take the plain formulas;
    tests/test_layer_norm_blocks.py compares the two paths)."""
    row_blocks = importlib.import_module("tinyattn.ops.row_blocks")
    monkeypatch.setattr(row_blocks, "BLOCK_VALUES", 3 * int(np.prod(normalized)))
    monkeypatch.setattr(row_blocks, "MIN_VALUES", 0)
    x = RNG.standard_normal((5, 4) + normalized).astype(dtype)
    x[0, 0] = 2.5                                        # constant: var = 0
    x[1] += 1e4                                          # large mean, unit spread
    x[2, 1] = np.nan
    x = x.swapaxes(0, 1)                                 # (4, 5, ...), not contiguous
    x = ta.tensor(np.ascontiguousarray(x) if contiguous else x, requires_grad=True)
    weight = _t(normalized, dtype) if affine else None
    bias = _t(normalized, dtype) if affine else None
    recorded = F.layer_norm(x, normalized, weight, bias, eps=1e-5).numpy()
    with ta.no_grad():
        fast = F.layer_norm(x, normalized, weight, bias, eps=1e-5)
    assert not fast.requires_grad and fast.dtype == dtype
    fast = fast.numpy()
    assert np.isnan(fast[1, 2]).all() and not np.isnan(fast[1, 1]).any()
    near = np.ones(fast.shape, bool)
    near[:, 1] = False                                   # rows around 0
    tolerance = 1e-12 if dtype == "float64" else 2e-6
    np.testing.assert_allclose(fast[near], recorded[near], rtol=tolerance, atol=tolerance)
    x64 = x.numpy().astype(np.float64)                   # both against float64 everywhere
    axes = tuple(range(2, x64.ndim))
    exact = (x64 - x64.mean(axes, keepdims=True)) / np.sqrt(x64.var(axes, keepdims=True) + 1e-5)
    if affine:
        exact = exact * weight.numpy() + bias.numpy()
    error_fast, error_recorded = np.abs(fast - exact), np.abs(recorded - exact)
    assert np.nanmax(error_fast) <= 1.5 * np.nanmax(error_recorded) + tolerance
    with ta.no_grad():                                   # negative control: another eps
        other = F.layer_norm(x, normalized, weight, bias, eps=1e-3).numpy()
    assert np.nanmax(np.abs(other - recorded)) > 1e-3


# ------------------------------------------------------------------ embedding scatter
@pytest.mark.parametrize("target_shape", [(7, 3), (5,), (4, 2, 3)])
def test_row_scatter_add_equals_np_add_at_with_repeated_ids(target_shape):
    from tinyattn import backend
    ids = RNG.integers(0, target_shape[0], 40)
    ids[:5] = 2                                  # certainly repeated
    values = RNG.standard_normal((40,) + target_shape[1:])
    expected = RNG.standard_normal(target_shape)
    target = expected.copy()
    np.add.at(expected, ids, values)
    assert backend._are_rows(target, ids, values)   # the fast path, not the fallback
    backend.scatter_add(target, ids, values)
    np.testing.assert_allclose(target, expected, rtol=1e-12, atol=1e-12)


def test_scatter_add_falls_back_for_negative_or_tuple_indices():
    from tinyattn import backend
    target, expected = np.zeros((4, 2)), np.zeros((4, 2))
    ids = np.array([-1, 3, 0, -1])               # -1 and 3 are the same row
    values = np.ones((4, 2))
    assert not backend._are_rows(target, ids, values)
    backend.scatter_add(target, ids, values)
    np.add.at(expected, ids, values)
    np.testing.assert_array_equal(target, expected)
    assert target[3, 0] == 3.0


def test_embedding_gradient_sums_repeated_tokens():
    weight = ta.tensor(RNG.standard_normal((6, 4)), requires_grad=True)
    ids = np.array([[1, 1, 5], [1, 0, 5]])
    out = F.embedding(ta.tensor(ids), weight)
    g = RNG.standard_normal(out.shape)
    out.backward(g)
    expected = np.zeros((6, 4))
    np.add.at(expected, ids.reshape(-1), g.reshape(-1, 4))
    np.testing.assert_allclose(weight.grad, expected, rtol=1e-12, atol=1e-12)
    assert np.all(weight.grad.numpy()[[2, 3, 4]] == 0)


# ------------------------------------------------------------------ unmasked batch blocks
def _sdpa(q, k, v):
    return F.scaled_dot_product_attention(q, k, v)


@pytest.mark.parametrize("shape", [(2, 3, 5, 4), (3, 6, 4), (2, 2, 3, 7, 4)])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_unmasked_attention_by_batch_blocks_equals_the_plain_path(shape, dtype, monkeypatch):
    """No mask: the forward and backward by blocks of the batch (chunks forced small so
    that several blocks run) against the whole-matrix path, output and every gradient;
    the block path must run, the plain one must not."""
    import tinyattn.ops.attention as attention_ops
    calls = []
    blocked = attention_ops._forward_by_blocks
    monkeypatch.setattr(attention_ops, "_forward_by_blocks",
                        lambda *a: calls.append(len(a[-1])) or blocked(*a))
    monkeypatch.setattr(attention_ops, "_BLOCK_SCORES", 2 * shape[-2] * shape[-2])
    arrays = [RNG.standard_normal(shape).astype(dtype) for _ in range(3)]
    g = RNG.standard_normal(shape).astype(dtype)
    by_blocks = _attention_and_grads(_sdpa, arrays, g)
    assert calls and calls[0] > 1, "the block path did not run in several blocks"
    monkeypatch.setattr(attention_ops, "attention_blocks", lambda *a: None)
    calls.clear()
    plain = _attention_and_grads(_sdpa, arrays, g)
    assert not calls
    tol = dict(rtol=1e-12, atol=1e-13) if dtype == np.float64 else dict(rtol=2e-5, atol=2e-6)
    for got, want in zip(by_blocks, plain):
        assert got.dtype == dtype
        np.testing.assert_allclose(got, want, **tol)


def test_packed_mha_by_batch_blocks_matches_torch():
    """nn.MultiHeadAttention (packed q/k/v, no mask): the block path against torch, float32."""
    torch = pytest.importorskip("torch")
    from tinyattn import nn
    from tinyattn.nn.torch_compat import to_torch_state_dict
    rng = np.random.default_rng(3)
    x = rng.standard_normal((2, 9, 16)).astype(np.float32)
    g = rng.standard_normal((2, 9, 16)).astype(np.float32)
    ta.manual_seed(0)
    ours = nn.MultiHeadAttention(16, 4)
    theirs = torch.nn.MultiheadAttention(16, 4, batch_first=True)
    theirs.load_state_dict({k: torch.from_numpy(np.asarray(v)) for k, v in
                            to_torch_state_dict(ours.state_dict()).items()})
    xt = ta.tensor(x, requires_grad=True)
    out, _ = ours(xt, need_weights=False)
    out.backward(g)
    x_t = torch.tensor(x, requires_grad=True)
    out_t, _ = theirs(x_t, x_t, x_t, need_weights=False)
    out_t.backward(torch.from_numpy(g))
    np.testing.assert_allclose(out.numpy(), out_t.detach().numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(xt.grad.numpy(), x_t.grad.numpy(), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("scale", [1.0, 1e3])
def test_unshifted_exp_only_when_the_scores_are_bounded(scale, monkeypatch):
    """exp(S) without the row maximum runs only when |S| <= 60 is guaranteed; large scores
    (scale 1e3) take the shifted softmax and still give finite, correct results (against
    float64 with the plain path), and a NaN in k never takes the unshifted path."""
    import tinyattn.ops.attention as attention_ops
    q, k, v = (RNG.standard_normal((2, 2, 6, 4)).astype(np.float32) for _ in range(3))
    assert attention_ops._exp_stays_in_range(q, k, scale) == (scale == 1.0)
    bad = k.copy()
    bad[0, 0, 0, 0] = np.nan
    assert not attention_ops._exp_stays_in_range(q, bad, 1.0)
    calls = []
    blocked = attention_ops._forward_by_blocks
    monkeypatch.setattr(attention_ops, "_forward_by_blocks",
                        lambda *a: calls.append(1) or blocked(*a))
    got = F.scaled_dot_product_attention(
        *(ta.tensor(a, requires_grad=True) for a in (q, k, v)), scale=scale).detach().numpy()
    assert calls, "the recorded block path did not run"
    s = np.einsum("...id,...jd->...ij", q.astype(np.float64), k.astype(np.float64)) * scale
    s -= s.max(axis=-1, keepdims=True)
    p = np.exp(s)
    p /= p.sum(axis=-1, keepdims=True)
    want = p @ v.astype(np.float64)
    assert np.isfinite(got).all()
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)


def test_block_forward_in_float16_keeps_the_shifted_softmax():
    """exp(S) up to exp(60) would overflow float16 (max 65504), so the unshifted block
    forward is float32/float64 only. (The op itself computes float16 in float32; this calls
    the block forward on float16 arrays directly.) Scores up to about 50 here, within the
    bound of 60: without the dtype guard exp overflows and the output is NaN."""
    import tinyattn.ops.attention as attention_ops
    rng = np.random.default_rng(5)
    q, k, v = ((rng.standard_normal((1, 2, 8, 4)) * 3).astype(np.float16) for _ in range(3))
    assert attention_ops._exp_stays_in_range(q, k, 0.5)
    blocks = attention_ops.attention_blocks(q, k, v, None, None)
    assert blocks is None                    # unmasked float16 takes the plain path ...
    mask = attention_ops.causal_mask_array(np, 8, 8)
    blocks = [((Ellipsis, slice(0, 8), slice(None)), (Ellipsis, slice(0, 8), slice(None)),
               mask, False)]                 # ... so build one causal block by hand
    out, lse = attention_ops._forward_by_blocks(q, k, v, 0.5, blocks)
    assert out.dtype == np.float16 and np.isfinite(out).all() and np.isfinite(lse).all()
    want = attention_ops._forward_by_blocks(*(a.astype(np.float32) for a in (q, k, v)), 0.5,
                                            blocks)[0]
    np.testing.assert_allclose(out.astype(np.float32), want, rtol=2e-2, atol=2e-2)
