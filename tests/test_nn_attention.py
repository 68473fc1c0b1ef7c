"""MultiHeadAttention and masks: torch parity in float64, gradchecks per mask kind, fully
masked rows, the torch state-dict converter, and bad input."""
import numpy as np
import pytest

import tinyattn as ta
import tinyattn.nn as nn
from tinyattn.nn.torch_compat import (convert_torch_mha_state_dict, convert_torch_state_dict,
                                      to_torch_state_dict)

B, S, D, H = 2, 4, 8, 2


def f64(*shape, grad=True, seed=0):
    rng = np.random.default_rng(seed)
    return ta.tensor(rng.standard_normal(shape), dtype="float64", requires_grad=grad)


def run(mha, *args, **kwargs):
    """The output alone (the module returns (output, weights), as PyTorch's)."""
    out, weights = mha(*args, need_weights=False, **kwargs)
    assert weights is None
    return out


def small_mha(d_model=4, heads=2, **kw):
    ta.manual_seed(1)
    mha = nn.MultiHeadAttention(d_model, heads, **kw).double()
    rng = np.random.default_rng(5)
    for p in mha.parameters():          # non-zero biases, so their gradients are exercised
        p.data = rng.standard_normal(p.shape) * 0.5
    return mha


# ------------------------------------------------------------------ masks helpers
def test_causal_mask_and_cache_alignment():
    assert (nn.causal_mask(3).numpy() == np.tril(np.ones((3, 3), bool))).all()
    bottom_right = nn.causal_mask(2, 4).numpy()
    assert bottom_right.tolist() == [[True, True, True, False], [True, True, True, True]]


def test_sliding_window_mask():
    m = nn.sliding_window_mask(5, 2).numpy()
    i, j = np.indices((5, 5))
    assert (m == ((i - j >= 0) & (i - j < 2))).all()
    both = nn.sliding_window_mask(5, 2, causal=False).numpy()
    assert (both == (np.abs(i - j) < 2)).all()
    assert (nn.sliding_window_mask(4, 10).numpy() == nn.causal_mask(4).numpy()).all()


def test_key_padding_mask_from_lengths_and_ids_is_true_for_padding():
    m = nn.key_padding_mask(np.array([1, 3]), 4).numpy()
    assert m.tolist() == [[False, True, True, True], [False, False, False, True]]
    ids = np.array([[5, 0, 0], [1, 2, 0]])
    assert nn.key_padding_mask(ids, pad_id=0).numpy().tolist() == [[False, True, True],
                                                                    [False, False, True]]
    with pytest.raises(ValueError, match="does not fit in seq_len=2"):
        nn.key_padding_mask(np.array([3]), 2)
    with pytest.raises(ValueError, match="pad_id"):
        nn.key_padding_mask(ids)
    with pytest.raises(AttributeError, match="True = padding"):
        nn.padding_mask(np.array([1]))          # the old name, True = real token, is gone


def test_combine_masks():
    pad = ~nn.key_padding_mask(np.array([2, 3]), 3).numpy()[:, None, None, :]
    both = nn.combine_masks(nn.causal_mask(3), None, pad)
    assert both.shape == (2, 1, 3, 3)
    assert (both.numpy() == (np.tril(np.ones((3, 3), bool)) & pad)).all()
    with pytest.raises(TypeError, match="boolean"):
        nn.combine_masks(np.ones((3, 3)))
    with pytest.raises(ValueError, match="does not broadcast"):
        nn.combine_masks(nn.causal_mask(3), nn.causal_mask(4))


# ------------------------------------------------------------------ torch parity
torch_cases = ["self", "cross", "causal", "padding", "combined", "window", "per_head", "kvdim"]


def _case_inputs(case, rng):
    """(query, key, value, our kwargs, torch kwargs, kdim, vdim) for one mask case."""
    s_k = 5 if case in ("cross", "kvdim") else S
    kdim, vdim = (6, 3) if case == "kvdim" else (None, None)
    q = rng.standard_normal((B, S, D))
    k = q if case not in ("cross", "kvdim") else rng.standard_normal((B, s_k, kdim or D))
    v = k if case not in ("cross", "kvdim") else rng.standard_normal((B, s_k, vdim or D))
    ours, theirs = {}, {}
    causal = np.tril(np.ones((S, S), bool))
    pad = np.arange(s_k)[None, :] < np.array([s_k, 2])[:, None]        # (B, S_k)
    if case == "causal":
        ours["mask"], theirs["attn_mask"] = causal, ~causal
    if case == "padding":
        ours["key_padding_mask"], theirs["key_padding_mask"] = ~pad, ~pad
    if case == "combined":
        ours.update(is_causal=True, key_padding_mask=~pad)
        theirs.update(attn_mask=~causal, key_padding_mask=~pad)
    if case == "window":
        window = nn.sliding_window_mask(S, 2, causal=False).numpy()
        ours["mask"], theirs["attn_mask"] = window, ~window
    if case == "per_head":
        per_head = rng.random((B, H, S, S)) < 0.7
        per_head[..., 0] = True                          # no fully masked rows (torch: NaN)
        ours["mask"] = per_head
        theirs["attn_mask"] = ~per_head.reshape(B * H, S, S)
    return q, k, v, ours, theirs, kdim, vdim


@pytest.mark.parametrize("case", torch_cases)
def test_mha_matches_torch_outputs_weights_and_all_gradients(case):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(0)
    q, k, v, ours_kw, torch_kw, kdim, vdim = _case_inputs(case, rng)
    torch.manual_seed(0)
    tm = torch.nn.MultiheadAttention(D, H, kdim=kdim, vdim=vdim, batch_first=True,
                                     dtype=torch.float64)
    with torch.no_grad():
        for p in tm.parameters():
            p.copy_(torch.randn_like(p) * 0.5)
    mha = nn.MultiHeadAttention(D, H, kdim=kdim, vdim=vdim).double()
    mha.load_state_dict(convert_torch_mha_state_dict(tm.state_dict()))

    tq, tk, tv = (torch.tensor(a, requires_grad=True) for a in (q, k, v))
    tk = tq if k is q else tk                           # self-attention: one shared input
    tv = tk if v is k else tv
    t_masks = {name: torch.tensor(m) for name, m in torch_kw.items()}
    t_out, t_w = tm(tq, tk, tv, need_weights=True, average_attn_weights=False, **t_masks)
    g = rng.standard_normal(t_out.shape)
    (t_out * torch.tensor(g)).sum().backward()

    xq = ta.tensor(q, requires_grad=True)
    xk = xq if k is q else ta.tensor(k, requires_grad=True)
    xv = xk if v is k else ta.tensor(v, requires_grad=True)
    key_args = () if k is q else (xk, xv)
    out, w = mha(xq, *key_args, need_weights=True, average_attn_weights=False, **ours_kw)
    (out * ta.tensor(g)).sum().backward()

    np.testing.assert_allclose(out.numpy(), t_out.detach().numpy(), atol=1e-10, rtol=0)
    assert w.shape == (B, H, S, k.shape[1])
    np.testing.assert_allclose(w.numpy(), t_w.detach().numpy(), atol=1e-10, rtol=0)
    for ours_x, theirs_x in ((xq, tq), (xk, tk), (xv, tv)):
        np.testing.assert_allclose(ours_x.grad.numpy(), theirs_x.grad.numpy(), atol=1e-10,
                                   rtol=0)
    torch_grads = convert_torch_state_dict({n: p.grad for n, p in tm.named_parameters()})
    our_grads = {n: p.grad.numpy() for n, p in mha.named_parameters()}
    assert set(torch_grads) == set(our_grads)
    for name, grad in our_grads.items():
        np.testing.assert_allclose(grad, torch_grads[name], atol=1e-10, rtol=0, err_msg=name)


def test_parity_negative_control_a_wrong_head_split_is_detected():
    """The parity test could pass vacuously if, say, all heads saw the same features.
    Swap two rows of W_q between heads: the outputs must then differ from torch's."""
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    tm = torch.nn.MultiheadAttention(D, H, batch_first=True, dtype=torch.float64)
    sd = convert_torch_mha_state_dict(tm.state_dict())
    sd["q_proj.weight"][[0, D // H]] = sd["q_proj.weight"][[D // H, 0]]
    mha = nn.MultiHeadAttention(D, H).double()
    mha.load_state_dict(sd)
    x = np.random.default_rng(1).standard_normal((B, S, D))
    t_out, _ = tm(*(torch.tensor(x),) * 3)
    assert np.abs(run(mha, ta.tensor(x)).numpy() - t_out.detach().numpy()).max() > 1e-3


def test_state_dict_round_trip_to_torch_layout():
    torch = pytest.importorskip("torch")
    mha = nn.MultiHeadAttention(D, H)
    packed = to_torch_state_dict(mha.state_dict())
    assert set(packed) == {"in_proj_weight", "in_proj_bias", "out_proj.weight", "out_proj.bias"}
    tm = torch.nn.MultiheadAttention(D, H, batch_first=True)
    tm.load_state_dict({k: torch.from_numpy(v) for k, v in packed.items()})
    back = convert_torch_mha_state_dict(tm.state_dict())
    for key, value in mha.state_dict().items():
        assert np.array_equal(back[key], value)


def test_converter_rejects_bias_kv_and_incomplete_dicts():
    with pytest.raises(ValueError, match="add_bias_kv"):
        convert_torch_state_dict({"bias_k": np.zeros((1, 1, 4))})
    with pytest.raises(ValueError, match="expected the keys"):
        convert_torch_mha_state_dict({"out_proj.weight": np.zeros((4, 4))})


# ------------------------------------------------------------------ fully masked rows
def test_fully_masked_query_row_gives_zeros_and_zero_gradients():
    mha = small_mha()
    x = f64(1, 3, 4)
    mask = np.ones((3, 3), bool)
    mask[1] = False                                    # query 1 may attend to nothing
    out, w = mha(x, mask=mask, need_weights=True, average_attn_weights=False)
    assert np.all(w.numpy()[0, :, 1] == 0)
    # The attention output of that row is 0, so the layer returns out_proj's bias there.
    np.testing.assert_allclose(out.numpy()[0, 1], mha.out_proj.bias.numpy(), atol=1e-15)
    g = np.zeros(out.shape)
    g[0, 1] = 1.0                                      # gradient only through the masked row
    out.backward(g)
    assert np.all(np.isfinite(x.grad.numpy())) and np.all(x.grad.numpy() == 0)
    for p in (mha.q_proj.weight, mha.k_proj.weight, mha.v_proj.weight):
        assert np.all(p.grad.numpy() == 0)


def test_fully_masked_row_on_the_bias_path_is_also_finite():
    mha = small_mha()
    x = f64(1, 3, 4)
    mask = np.ones((3, 3), bool)
    mask[2] = False
    out = run(mha, x, mask=mask, attn_bias=nn.ALiBi(2)(3, 3, dtype=np.float64))
    out.sum().backward()
    assert np.all(np.isfinite(x.grad.numpy()))
    assert all(np.all(np.isfinite(p.grad.numpy())) for p in mha.parameters())


# ------------------------------------------------------------------ gradchecks
gradcheck_cases = {
    "none": {},
    "causal": {"is_causal": True},
    "padding": {"key_padding_mask": np.array([[False, False, True], [False, False, False]])},
    "combined": {"is_causal": True, "key_padding_mask": np.array([[False, False, True]] * 2)},
    "torch_attn_mask": {"attn_mask": np.array([[False, True, True], [False, False, True],
                                               [False, False, False]])},
    "float_masks": {"attn_mask": np.array([[0.0, -1.0, 0.5], [0.2, 0.0, -np.inf],
                                           [0.0, 0.3, 0.0]]),
                    "key_padding_mask": np.array([[0.0, 0.0, -2.0], [0.0, 0.0, 0.0]])},
    "window": {"mask": nn.sliding_window_mask(3, 2).numpy()},
    "fully_masked_row": {"mask": np.array([[True, False, False], [False, False, False],
                                           [True, True, True]])},
}


@pytest.mark.parametrize("case", list(gradcheck_cases))
def test_mha_gradcheck_every_parameter(case):
    mha = small_mha()
    x = f64(2, 3, 4)
    kwargs = gradcheck_cases[case]
    assert ta.gradcheck(lambda *_: run(mha, x, **kwargs), [x, *mha.parameters()])


def test_mha_cross_attention_gradcheck_with_kdim_vdim():
    mha = small_mha(kdim=3, vdim=5)
    q, k, v = f64(1, 2, 4), f64(1, 3, 3, seed=1), f64(1, 3, 5, seed=2)
    assert ta.gradcheck(lambda *_: run(mha, q, k, v), [q, k, v, *mha.parameters()])


def test_mha_gradcheck_negative_control():
    """A module whose forward hides a constant from autograd must fail the check."""
    mha = small_mha()
    x = f64(1, 3, 4)

    def broken(*_):
        out = run(mha, x)
        return out + ta.tensor(mha.q_proj.weight.data.sum(), dtype="float64")  # no grad path

    assert not ta.gradcheck(broken, [x, mha.q_proj.weight], raise_exception=False)


# ------------------------------------------------------------------ behaviour
def test_self_attention_is_the_default_and_key_defaults_value():
    mha = small_mha()
    x, m = f64(1, 3, 4, grad=False), f64(1, 5, 4, grad=False, seed=3)
    assert np.array_equal(run(mha, x).numpy(), run(mha, x, x, x).numpy())
    assert np.array_equal(run(mha, x, m).numpy(), run(mha, x, m, m).numpy())


def test_dropout_only_in_training_and_seeded():
    mha = small_mha(dropout=0.5)
    x = f64(1, 4, 4, grad=False)
    ta.manual_seed(3)
    a = run(mha, x).numpy()
    ta.manual_seed(3)
    assert np.array_equal(a, run(mha, x).numpy())
    mha.eval()
    assert not np.allclose(a, run(mha, x).numpy())
    assert np.array_equal(run(mha, x).numpy(), run(mha, x).numpy())


def test_tiled_impl_matches_plain():
    plain = small_mha()
    tiled = small_mha(attn_impl="tiled", block_size=2)
    x = f64(2, 5, 4, grad=False)
    pad = np.arange(5)[None, :] >= np.array([[5], [3]])
    for kw in ({}, {"is_causal": True}, {"is_causal": True, "key_padding_mask": pad}):
        np.testing.assert_allclose(run(tiled, x, **kw).numpy(), run(plain, x, **kw).numpy(),
                                   atol=1e-12)


def test_float32_stays_float32():
    ta.manual_seed(0)
    mha = nn.MultiHeadAttention(4, 2, rope=True)
    x = ta.randn(2, 3, 4, requires_grad=True)
    out = run(mha, x, is_causal=True, attn_bias=nn.ALiBi(2)(3, 3))
    assert out.dtype == np.float32
    out.sum().backward()
    assert x.grad.dtype == np.float32
    assert all(p.grad.dtype == np.float32 for p in mha.parameters())


# ------------------------------------------------------------------ bad input
def test_d_model_not_divisible_by_heads():
    with pytest.raises(ValueError, match="d_model=10 is not divisible by num_heads=4"):
        nn.MultiHeadAttention(10, 4)


def test_key_feature_size_must_match_kdim():
    mha = nn.MultiHeadAttention(4, 2, kdim=3)
    with pytest.raises(ValueError, match="key has 5 features .* kdim=3"):
        mha(ta.randn(1, 2, 4), ta.randn(1, 3, 5), ta.randn(1, 3, 4))


def test_mask_that_does_not_broadcast_shows_expected_shape():
    mha = nn.MultiHeadAttention(4, 2)
    with pytest.raises(ValueError, match=r"\(3, 4\) does not broadcast .*"
                                         r"\(B, num_heads, S_q, S_k\) = \(1, 2, 3, 3\)"):
        mha(ta.randn(1, 3, 4), mask=np.ones((3, 4), bool))
    with pytest.raises(ValueError, match=r"key_padding_mask of shape \(1, 4\) does not match"):
        mha(ta.randn(1, 3, 4), key_padding_mask=np.ones((1, 4), bool))
    with pytest.raises(TypeError, match="padding_mask= was removed"):
        mha(ta.randn(1, 3, 4), padding_mask=np.ones((1, 3), bool))
    with pytest.raises(TypeError, match="boolean"):
        mha(ta.randn(1, 3, 4), mask=np.ones((3, 3)))


def test_other_bad_inputs():
    mha = nn.MultiHeadAttention(4, 2)
    with pytest.raises(ValueError, match=r"query must be \(B, S, features\)"):
        mha(ta.randn(3, 4))
    with pytest.raises(ValueError, match="value was given without key"):
        mha(ta.randn(1, 3, 4), value=ta.randn(1, 3, 4))
    with pytest.raises(ValueError, match="attn_impl must be one of"):
        nn.MultiHeadAttention(4, 2, attn_impl="flash")
    with pytest.raises(ValueError, match="attn_bias .* needs attn_impl='plain'"):
        nn.MultiHeadAttention(4, 2, attn_impl="tiled")(ta.randn(1, 3, 4),
                                                       attn_bias=nn.ALiBi(2)(3, 3))
    with pytest.raises(ValueError, match=r"attn_bias of shape \(3, 3, 3\)"):
        mha(ta.randn(1, 3, 4), attn_bias=nn.ALiBi(3)(3, 3))


def test_returned_weights_are_a_copy_that_cannot_change_gradients():
    rng = np.random.default_rng(0)
    q, k, v = (ta.tensor(rng.standard_normal((1, 2, 3, 4)), requires_grad=True)
               for _ in range(3))
    out, weights = ta.functional.scaled_dot_product_attention(q, k, v, need_weights=True)
    weights.data[...] = 0.0                        # a user scribbling on the plot data
    out.sum().backward()
    expected = q.grad.numpy().copy()
    q.grad = None
    out2 = ta.functional.scaled_dot_product_attention(q, k, v)
    out2.sum().backward()
    np.testing.assert_allclose(expected, q.grad.numpy())


def test_init_bound_matches_torch_packed_xavier():
    ta.manual_seed(0)
    same = ta.nn.MultiHeadAttention(64, 4)
    cross = ta.nn.MultiHeadAttention(64, 4, kdim=32, vdim=16)
    assert np.abs(same.q_proj.weight.numpy()).max() <= np.sqrt(6 / (64 + 3 * 64))
    assert np.abs(same.q_proj.weight.numpy()).max() > 0.9 * np.sqrt(6 / (64 + 3 * 64))
    assert np.abs(cross.k_proj.weight.numpy()).max() <= np.sqrt(6 / (32 + 64))
    assert np.abs(cross.k_proj.weight.numpy()).max() > 0.9 * np.sqrt(6 / (32 + 64))


def test_num_heads_of_the_wrong_type_is_a_clear_error():
    with pytest.raises(ValueError, match="num_heads must be a positive int, got '2'"):
        ta.nn.MultiHeadAttention(8, "2")


def test_causal_alignment_top_left_in_the_function_bottom_right_in_the_module():
    q, k = ta.randn(1, 1, 2, 4), ta.randn(1, 1, 4, 4)
    sdpa = ta.functional.scaled_dot_product_attention
    top_left = ta.tensor(np.tri(2, 4, dtype=bool))
    bottom_right = nn.causal_mask(2, 4)
    np.testing.assert_array_equal(bottom_right.numpy(), np.tri(2, 4, k=2, dtype=bool))
    np.testing.assert_allclose(sdpa(q, k, k, is_causal=True).numpy(),
                               sdpa(q, k, k, attn_mask=top_left).numpy())
    square = ta.randn(1, 1, 4, 4)
    np.testing.assert_allclose(sdpa(square, square, square, is_causal=True).numpy(),
                               sdpa(square, square, square, attn_mask=nn.causal_mask(4)).numpy())
