"""The core used with a PyTorch user's habits (0-d index tensors, in-place ops, autograd.grad,
unbatched layers, float16, integer dtypes, custom Functions), compared with torch where torch
is the reference.

Every test here failed before its fix; the comment on each says what tinyattn did."""
from __future__ import annotations

import numpy as np
import pytest

import tinyattn as ta


def _torch():
    return pytest.importorskip("torch")


# ---------------------------------------------------------------- indexing with 0-d tensors
def test_assigning_through_a_zero_dim_index_tensor_writes_into_the_tensor():
    x = ta.tensor(np.arange(24.0).reshape(2, 3, 4))
    x[ta.tensor(1), :, [0, 2]] = -1.0      # wrote into a temporary copy: x was unchanged
    expected = np.arange(24.0).reshape(2, 3, 4)
    expected[1, :, [0, 2]] = -1.0
    np.testing.assert_array_equal(x.numpy(), expected)


def test_assigning_through_a_zero_dim_index_tensor_while_recording():
    x = ta.tensor(np.arange(6.0).reshape(2, 3), dtype="float64", requires_grad=True)
    y = x * 1
    y[ta.tensor(1), [0, 2]] = 0.0
    y.sum().backward()
    np.testing.assert_array_equal(y.detach().numpy(), [[0, 1, 2], [0, 4, 0]])
    np.testing.assert_array_equal(x.grad.numpy(), [[1, 1, 1], [0, 1, 0]])  # was all ones


def test_a_zero_dim_index_tensor_selects_a_view_as_an_integer_does():
    x = ta.tensor(np.arange(6.0).reshape(2, 3))
    row = x[ta.tensor(1)]
    row[0] = 100.0                          # torch: x[tensor(1)] is a view, like x[1]
    assert x[1, 0].item() == 100.0


def test_zero_dim_index_matches_torch_for_get_and_set():
    torch = _torch()
    base = np.arange(24.0).reshape(2, 3, 4)
    for index in [(1,), (1, slice(None), [0, 2]), (0, [1, 2], 1), (slice(None), 2, [0, 3])]:
        as_ta = tuple(ta.tensor(i) if isinstance(i, int) else i for i in index)
        as_torch = tuple(torch.tensor(i) if isinstance(i, int) else i for i in index)
        np.testing.assert_array_equal(ta.tensor(base)[as_ta].numpy(),
                                      torch.tensor(base)[as_torch].numpy())
        a, t = ta.tensor(base), torch.tensor(base)
        a[as_ta] = 7.0
        t[as_torch] = 7.0
        np.testing.assert_array_equal(a.numpy(), t.numpy())


# ---------------------------------------------------------------- in-place ops
def test_in_place_ops_on_an_empty_tensor_are_not_refused_as_read_only():
    x = ta.zeros(0, 3)                      # NumPy gives it strides (0, 0)
    x.zero_()                               # was "this tensor's memory is read-only"
    x[:] = 1.0
    x += 1
    assert x.shape == (0, 3)


def _in_place_vs_torch(body):
    """x.grad and w.grad after y = x * 1; body(y, w); (y * c).sum().backward()."""
    torch = _torch()
    results = []
    for lib in (torch, ta):
        x = lib.tensor([0.5, 2.0, -3.0], dtype=lib.float64, requires_grad=True)
        w = lib.tensor([1.5, -2.0, 0.3], dtype=lib.float64, requires_grad=True)
        y = x * 1
        body(y, w)
        (y * lib.tensor([1.0, 2.0, 3.0], dtype=lib.float64)).sum().backward()
        results.append((x.grad.detach().numpy().copy(), w.grad))
    (tx, tw), (ax, aw) = results
    np.testing.assert_allclose(ax.numpy() if hasattr(ax, "numpy") else ax, tx)
    if tw is not None:
        np.testing.assert_allclose(aw.numpy(), tw.detach().numpy())


@pytest.mark.parametrize("body", [
    lambda y, w: y.pow_(2),                 # Pow saved the array it then overwrote
    lambda y, w: (y.pow_(3), y.add_(1)),
    lambda y, w: y.mul_(w),                 # gating, h *= gate: Mul saved y for dw
    lambda y, w: y.__imul__(w),
    lambda y, w: y.div_(w),
    lambda y, w: y.sub_(w, alpha=2.0),
], ids=["pow_", "pow_-add_", "mul_-tensor", "imul-tensor", "div_-tensor", "sub_-alpha"])
def test_in_place_op_whose_backward_needs_the_old_value_matches_torch(body):
    _in_place_vs_torch(body)                 # pow_ and mul_(w) raised "modified by an inplace
    #                                          operation" where torch computes the gradient


def test_in_place_op_reading_its_own_target_is_still_refused_as_in_torch():
    x = ta.tensor([0.5, 2.0, -3.0], requires_grad=True)
    y = x * 1
    y *= y                                   # the saved second operand IS the target
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()


def test_in_place_op_keeps_the_saved_copy_only_when_its_op_needs_it():
    x = ta.tensor([0.5, 2.0, -3.0], requires_grad=True)
    y = x * 1
    before = y._data
    y.pow_(2)
    assert y._data is before                # still in place: the same array holds the result
    np.testing.assert_allclose(y.detach().numpy(), [0.25, 4.0, 9.0])


# ---------------------------------------------------------------- autograd.grad, custom Functions
def _both(fn):
    torch = _torch()
    return fn(torch), fn(ta)


def _values(grads):
    return [g.detach().numpy() if hasattr(g, "detach") else g.numpy() for g in grads]


def test_autograd_grad_of_several_outputs_that_share_a_graph_matches_torch():
    def run(lib):
        x = lib.tensor([0.5, 2.0, -3.0], dtype=lib.float64, requires_grad=True)
        y = x * x                            # both outputs go back through the same Mul
        z = y * 3
        return _values(lib.autograd.grad([y.sum(), z.sum()], [y, x]))
    expected, got = _both(run)               # was "backward through the graph a second time"
    for e, g in zip(expected, got):
        np.testing.assert_allclose(g, e)


def test_autograd_grad_of_one_output_listed_twice_adds_both_grad_outputs():
    def run(lib):
        x = lib.tensor([0.5, 2.0, -3.0], dtype=lib.float64, requires_grad=True)
        y = x.exp()
        seeds = [lib.tensor([1.0, 2.0, 3.0], dtype=lib.float64), lib.ones(3, dtype=lib.float64)]
        return _values(lib.autograd.grad([y, y], [x], grad_outputs=seeds))
    expected, got = _both(run)
    np.testing.assert_allclose(got[0], expected[0])


def test_autograd_grad_frees_the_graph_unless_retained():
    x = ta.tensor([0.5, 2.0], requires_grad=True)
    y = x.exp()
    ta.autograd.grad([y.sum(), (y * 2).sum()], [x])
    with pytest.raises(RuntimeError, match="second time"):
        y.sum().backward()


def test_custom_function_gradient_takes_the_input_dtype_as_in_torch():
    class Double(ta.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, grad):
            return grad.double() * 2        # a float64 gradient for a float32 input

    x = ta.tensor([0.5, 2.0], requires_grad=True)
    Double.apply(x).sum().backward()
    assert x.grad.dtype == np.float32       # was float64: the optimizer then refused the mix
    np.testing.assert_allclose(x.grad.numpy(), [2.0, 2.0])


# ---------------------------------------------------------------- transformer layers, unbatched
def _load_from_torch(module, torch_module):
    module.load_state_dict({k: v.detach().numpy() for k, v in torch_module.state_dict().items()})


@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("length", [5, 8])      # 8 == d_model: the (S, E) input was read as (E, S)
def test_encoder_layer_on_an_unbatched_input_matches_torch(batch_first, length):
    torch = _torch()
    torch.manual_seed(0)
    reference = torch.nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, batch_first=batch_first,
                                                 dtype=torch.float64).eval()
    layer = ta.nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, batch_first=batch_first,
                                          dtype="float64").eval()
    _load_from_torch(layer, reference)
    x = np.random.default_rng(0).standard_normal((length, 8))
    pad = np.zeros(length, dtype=bool)
    pad[-2:] = True
    expected = reference(torch.tensor(x), src_key_padding_mask=torch.tensor(pad))
    got = layer(ta.tensor(x), src_key_padding_mask=ta.tensor(pad))
    np.testing.assert_allclose(got.detach().numpy(), expected.detach().numpy(), atol=1e-10)


@pytest.mark.parametrize("batch_first", [False, True])
def test_multihead_attention_on_an_unbatched_input_matches_torch(batch_first):
    # batch_first=True put the batch of one in dim 1, reading (L, E) as L batches of one
    # token: every output was wrong, and a 3-D attn_mask (h, L, S) was refused
    torch = _torch()
    torch.manual_seed(0)
    reference = torch.nn.MultiheadAttention(4, 2, batch_first=batch_first,
                                            dtype=torch.float64)
    attention = ta.nn.MultiheadAttention(4, 2, batch_first=batch_first, dtype="float64")
    _load_from_torch(attention, reference)
    x = np.random.default_rng(0).standard_normal((3, 4))
    mask = np.random.default_rng(1).standard_normal((2, 3, 3))
    expected, expected_weights = reference(*[torch.tensor(x)] * 3,
                                           attn_mask=torch.tensor(mask))
    got, weights = attention(*[ta.tensor(x)] * 3, attn_mask=ta.tensor(mask))
    np.testing.assert_allclose(got.detach().numpy(), expected.detach().numpy(), atol=1e-10)
    np.testing.assert_allclose(weights.detach().numpy(), expected_weights.detach().numpy(),
                               atol=1e-10)


@pytest.mark.parametrize("batch_first", [False, True])
def test_decoder_layer_and_transformer_on_unbatched_inputs_match_torch(batch_first):
    torch = _torch()
    torch.manual_seed(0)
    rng = np.random.default_rng(1)
    tgt, memory = rng.standard_normal((8, 8)), rng.standard_normal((5, 8))
    causal = torch.nn.Transformer.generate_square_subsequent_mask(8, dtype=torch.float64)
    reference = torch.nn.TransformerDecoderLayer(8, 2, 16, dropout=0.0, batch_first=batch_first,
                                                 dtype=torch.float64).eval()
    layer = ta.nn.TransformerDecoderLayer(8, 2, 16, dropout=0.0, batch_first=batch_first,
                                          dtype="float64").eval()
    _load_from_torch(layer, reference)
    expected = reference(torch.tensor(tgt), torch.tensor(memory), tgt_mask=causal)
    got = layer(ta.tensor(tgt), ta.tensor(memory), tgt_mask=ta.tensor(causal.numpy()))
    np.testing.assert_allclose(got.detach().numpy(), expected.detach().numpy(), atol=1e-10)

    reference = torch.nn.Transformer(8, 2, 1, 1, 16, dropout=0.0, batch_first=batch_first,
                                     dtype=torch.float64).eval()
    model = ta.nn.Transformer(8, 2, 1, 1, 16, dropout=0.0, batch_first=batch_first,
                              dtype="float64").eval()
    _load_from_torch(model, reference)
    expected = reference(torch.tensor(memory), torch.tensor(tgt), tgt_mask=causal)
    got = model(ta.tensor(memory), ta.tensor(tgt), tgt_mask=ta.tensor(causal.numpy()))
    np.testing.assert_allclose(got.detach().numpy(), expected.detach().numpy(), atol=1e-10)


# ---------------------------------------------------------------- float16
def _half_rows(scale):
    return (np.random.default_rng(0).standard_normal((4, 16)) * scale).astype(np.float16)


def test_clip_grad_norm_of_float16_gradients_does_not_overflow():
    torch = _torch()
    grads = np.full(2, 300.0, dtype=np.float16)       # sum of squares 180000 > float16's max
    p, q = ta.tensor(grads, requires_grad=True), torch.tensor(grads, requires_grad=True)
    p.grad, q.grad = ta.tensor(grads), torch.tensor(grads)
    norm = ta.optim.clip_grad_norm_([p], 1.0)          # was inf, and every gradient became 0
    expected = torch.nn.utils.clip_grad_norm_([q], 1.0)
    assert norm.item() == pytest.approx(float(expected), rel=1e-3)
    assert p.grad.dtype == np.float16
    np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), rtol=1e-3)


@pytest.mark.parametrize("scale", [1.0, 300.0])
def test_layer_norm_in_float16_matches_torch_for_large_activations(scale):
    torch = _torch()
    x = _half_rows(scale)
    w = np.linspace(0.5, 1.5, 16).astype(np.float16)
    b = np.linspace(-1, 1, 16).astype(np.float16)
    tx, tw, tb = (torch.tensor(a, requires_grad=True) for a in (x, w, b))
    ax, aw, ab = (ta.tensor(a, requires_grad=True) for a in (x, w, b))
    expected = torch.nn.functional.layer_norm(tx, (16,), tw, tb)
    got = ta.functional.layer_norm(ax, (16,), aw, ab)   # was all zeros: the variance was inf
    assert got.dtype == np.float16
    np.testing.assert_allclose(got.detach().numpy().astype(np.float32),
                               expected.detach().numpy().astype(np.float32), atol=1e-2)
    g = np.random.default_rng(1).standard_normal((4, 16)).astype(np.float16)
    expected.backward(torch.tensor(g))
    got.backward(ta.tensor(g))
    for a, t in ((ax, tx), (aw, tw), (ab, tb)):
        assert a.grad.dtype == np.float16
        np.testing.assert_allclose(a.grad.numpy().astype(np.float32),
                                   t.grad.numpy().astype(np.float32), rtol=2e-2, atol=2e-2)


@pytest.mark.parametrize("op", ["std", "var", "norm"])
def test_float16_second_moments_do_not_overflow_before_the_result_does(op):
    torch = _torch()
    x = _half_rows(300.0)
    expected = getattr(torch.tensor(x), op)(dim=1).numpy().astype(np.float32)
    got = getattr(ta.tensor(x), op)(dim=1)              # std and norm were inf
    assert got.dtype == np.float16
    np.testing.assert_allclose(got.numpy().astype(np.float32), expected, rtol=2e-3)


def test_gelu_keeps_float16():
    x = ta.tensor(_half_rows(1.0), requires_grad=True)
    y = ta.functional.gelu(x)
    assert y.dtype == np.float16                        # was float64
    y.sum().backward()
    assert x.grad.dtype == np.float16


# ---------------------------------------------------------------- integer and bool dtypes
@pytest.mark.parametrize("dtype", ["bool", "uint8", "int8", "int32", "int64"])
def test_sum_of_integers_and_bools_is_int64_as_in_torch(dtype):
    x = ta.tensor(np.array([[1, 0, 1], [1, 1, 0]]).astype(dtype))
    assert x.sum().dtype == np.int64 and x.sum().item() == 4     # uint8 gave uint64
    assert x.sum(0).dtype == np.int64
    assert x.sum(dtype=ta.float32).dtype == np.float32           # torch's dtype= keyword


@pytest.mark.parametrize("dtype", ["bool", "uint8", "int32", "int64"])
def test_mean_of_integers_gives_the_default_float_not_float64(dtype):
    x = ta.tensor(np.array([[1, 0, 1], [1, 1, 0]]).astype(dtype))
    assert x.mean().dtype == np.float32                          # was float64
    assert x.mean(0).dtype == np.float32
    assert x.mean().item() == pytest.approx(4 / 6)
    assert x.mean(dtype=ta.float64).dtype == np.float64


def test_clamp_of_a_bool_tensor_to_fractional_bounds_gives_float32():
    y = ta.tensor([True, False]).clamp(0, 0.5)
    assert y.dtype == np.float32                                 # was float64
    np.testing.assert_array_equal(y.numpy(), [0.5, 0.0])


@pytest.mark.parametrize("dtype", ["uint8", "int8", "int16", "int32"])
@pytest.mark.parametrize("scalar", [2, -1, 1000])
def test_a_python_int_keeps_an_integer_tensor_dtype_as_in_torch(dtype, scalar):
    torch = _torch()
    values = np.array([1, 0, 3]).astype(dtype)
    for op in (lambda t: t + scalar, lambda t: t * scalar, lambda t: scalar - t,
               lambda t: t - scalar):
        expected = op(torch.tensor(values))
        got = op(ta.tensor(values))                              # was int64
        assert str(got.dtype) == str(expected.dtype).replace("torch.", "")
        np.testing.assert_array_equal(got.numpy(), expected.numpy())


def test_squeeze_takes_a_tuple_of_dims_as_torch_2():
    torch = _torch()
    x = np.zeros((1, 3, 1, 2, 1))
    for dims in [(0, 2), (0, 1), [-1, 0], (1,), ()]:
        assert ta.tensor(x).squeeze(dims).shape == tuple(torch.tensor(x).squeeze(dims).shape)
    with pytest.raises(IndexError):
        ta.tensor(x).squeeze((0, 5))


# ---------------------------------------------------------------- .data and views
def test_data_of_a_base_is_read_only_while_a_pending_backward_saved_a_view_of_it():
    w = ta.tensor([1.0, 2.0, 3.0], requires_grad=True)
    x = ta.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    row = x[0]                                  # a view: Mul saves its array, x's memory
    y = (w * row).sum()
    with ta.autograd.detect_anomaly(), pytest.raises(ta.SavedDataWriteError):
        x.data[0, 0] = 100.0                    # anomaly mode (opt-in); torch: w.grad [100, ..]
    y.backward()
    np.testing.assert_array_equal(w.grad.numpy(), [1.0, 2.0, 3.0])
    x.data[0, 0] = 100.0                        # after the backward: allowed


def test_replacing_data_leaves_the_new_array_writable_and_the_old_graph_refusing():
    w = ta.tensor([1.0, 2.0], requires_grad=True)
    x = ta.tensor([3.0, 4.0])
    y = (w * x).sum()
    x.data = np.array([5.0, 6.0], dtype=np.float32)
    x.data[0] = 7.0                             # the new array is nobody's saved array
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.backward()                            # conservative: torch would use the new values


def test_backward_adds_into_a_user_assigned_expanded_grad():
    x = ta.tensor([1.0, 2.0], requires_grad=True)
    x.grad = ta.tensor([10.0]).expand(2)        # read-only broadcast memory
    x.sum().backward()                          # was NumPy's "output array is read-only"
    np.testing.assert_array_equal(x.grad.numpy(), [11.0, 11.0])


def test_mark_dirty_in_a_custom_function_is_refused_with_an_explanation():
    class Double(ta.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            x.mul_(2)
            ctx.mark_dirty(x)                   # was AttributeError
            return x

        @staticmethod
        def backward(ctx, grad):
            return grad * 2

    with pytest.raises(NotImplementedError, match="new tensor"):
        Double.apply(ta.tensor([1.0, 2.0], requires_grad=True) * 1)


def test_rms_norm_in_float16_matches_torch_for_large_activations():
    torch = _torch()
    x = _half_rows(300.0)
    w = np.linspace(0.5, 1.5, 16).astype(np.float16)
    expected = torch.nn.functional.rms_norm(torch.tensor(x), (16,), torch.tensor(w))
    got = ta.functional.rms_norm(ta.tensor(x), (16,), ta.tensor(w))   # float16 squares: inf
    assert got.dtype == np.float16
    np.testing.assert_allclose(got.numpy().astype(np.float32),
                               expected.numpy().astype(np.float32), atol=1e-2)


# ---------------------------------------------------------------- requires_grad as an attribute
def test_switching_off_requires_grad_of_a_computed_tensor_is_refused_as_in_torch():
    x = ta.tensor([1.0, 2.0], requires_grad=True)
    y = x * 2
    with pytest.raises(RuntimeError, match="leaf"):
        y.requires_grad = False     # was accepted: (y * x).sum() then gave x.grad [2, 4]
    (y * x).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [4.0, 8.0])


def test_requires_grad_attribute_on_leaves_follows_requires_grad_():
    w = ta.tensor([1.0, 2.0])
    w.requires_grad = True                      # freezing and unfreezing parameters: allowed
    assert w.requires_grad and w.is_leaf
    w.requires_grad = False
    assert not w.requires_grad
    ids = ta.tensor([1, 2])
    with pytest.raises(TypeError, match="floating"):
        ids.requires_grad = True                # was accepted on an int64 tensor


def test_no_grad_and_inference_mode_decorate_with_or_without_parentheses():
    x = ta.tensor([1.0], requires_grad=True)

    @ta.no_grad
    def bare(t):
        return t * 2

    @ta.inference_mode()
    def called(t):
        return t * 2

    assert not bare(x).requires_grad and not called(x).requires_grad   # bare was a TypeError
    assert bare.__name__ == "bare"
    with ta.inference_mode():
        assert not (x * 2).requires_grad
    with ta.inference_mode(False):
        assert (x * 2).requires_grad


def test_backward_inputs_accumulates_into_those_tensors_only_as_torch():
    def run(lib):
        a = lib.tensor([1.0, 2.0], dtype=lib.float64, requires_grad=True)
        b = lib.tensor([3.0, 4.0], dtype=lib.float64, requires_grad=True)
        h = a * b
        h.retain_grad()
        (h * a).sum().backward(inputs=[a, h])   # was a TypeError
        return a.grad.detach().numpy(), b.grad, h.grad.detach().numpy()
    (ta_a, ta_b, ta_h), (t_a, t_b, t_h) = run(ta), run(_torch())
    np.testing.assert_allclose(ta_a, t_a)
    np.testing.assert_allclose(ta_h, t_h)
    assert ta_b is None and t_b is None


def test_backward_inputs_fills_retained_grads_on_the_path_as_torch():
    def run(lib):
        a = lib.tensor([1.0, 2.0], dtype=lib.float64, requires_grad=True)
        b = lib.tensor([3.0, 4.0], dtype=lib.float64, requires_grad=True)
        h = a * b
        m = h * 2
        h.retain_grad()
        m.retain_grad()
        (m * a).sum().backward(inputs=[a])
        return [t.grad.detach().numpy() for t in (a, h, m)] + [b.grad]
    ours, theirs = run(ta), run(_torch())
    for mine, torch_value in zip(ours[:3], theirs[:3]):
        np.testing.assert_allclose(mine, torch_value)
    assert ours[3] is None and theirs[3] is None


def test_backward_inputs_empty_or_without_grad_is_refused_as_torch():
    x = ta.tensor([1.0, 2.0], requires_grad=True)
    c = ta.tensor([3.0, 4.0])
    with pytest.raises(RuntimeError, match="empty"):
        (x * c).sum().backward(inputs=[])
    with pytest.raises(RuntimeError, match="input 0 does not require grad"):
        (x * c).sum().backward(inputs=[c])
    assert x.grad is None


def test_create_graph_is_refused_with_an_explanation():
    x = ta.tensor([1.0, 2.0], requires_grad=True)
    y = (x ** 2).sum()
    with pytest.raises(NotImplementedError, match="create_graph"):
        ta.autograd.grad(y, x, create_graph=True)   # was "unexpected keyword argument"
    with pytest.raises(NotImplementedError, match="create_graph"):
        y.backward(create_graph=True)


def test_a_numpy_operand_is_copied_so_refilling_it_cannot_change_the_gradient():
    w = ta.tensor([1.0, 2.0], requires_grad=True)
    buffer = np.array([3.0, 4.0], dtype=np.float32)
    y = (w * buffer).sum()                  # Mul keeps its operand for w's gradient
    buffer[0] = 100.0                       # a reused batch buffer, refilled
    y.backward()
    np.testing.assert_array_equal(w.grad.numpy(), [3.0, 4.0])    # was [100, 4]


# ---------------------------------------------------------------- nn.MultiheadAttention weights
def _torch_and_ta_mha(dropout=0.0):
    torch = _torch()
    torch.manual_seed(0)
    reference = torch.nn.MultiheadAttention(8, 2, dropout=dropout, dtype=torch.float64)
    module = ta.nn.MultiheadAttention(8, 2, dropout=dropout, dtype="float64")
    _load_from_torch(module, reference)
    return torch, reference, module


@pytest.mark.parametrize("average", [True, False])
def test_multihead_attention_weights_are_differentiable_as_in_torch(average):
    torch, reference, module = _torch_and_ta_mha()
    x = np.random.default_rng(0).standard_normal((5, 3, 8))
    pad = np.zeros((3, 5), dtype=bool)
    pad[1, 3:] = True
    tx, ax = torch.tensor(x, requires_grad=True), ta.tensor(x, requires_grad=True)
    t_out, t_w = reference(tx, tx, tx, key_padding_mask=torch.tensor(pad),
                           average_attn_weights=average)
    a_out, a_w = module(ax, ax, ax, key_padding_mask=ta.tensor(pad),
                        average_attn_weights=average)
    np.testing.assert_allclose(a_w.detach().numpy(), t_w.detach().numpy(), atol=1e-12)
    target = np.random.default_rng(1).standard_normal(t_w.shape)
    ((t_w * torch.tensor(target)).sum() + t_out.sum()).backward()
    ((a_w * ta.tensor(target)).sum() + a_out.sum()).backward()   # the weights were detached:
    np.testing.assert_allclose(ax.grad.numpy(), tx.grad.numpy(), atol=1e-10)  # term dropped
    for name, p in reference.named_parameters():
        np.testing.assert_allclose(dict(module.named_parameters())[name].grad.numpy(),
                                   p.grad.numpy(), atol=1e-10)


def test_multihead_attention_weights_in_training_are_after_dropout_as_in_torch():
    _, _, module = _torch_and_ta_mha(dropout=0.5)
    x = ta.tensor(np.random.default_rng(0).standard_normal((5, 3, 8)))
    module.eval()
    _, plain = module(x, x, x, average_attn_weights=False)
    module.train()
    ta.manual_seed(0)
    out, dropped = module(x, x, x, average_attn_weights=False)
    dropped, plain = dropped.detach().numpy(), plain.detach().numpy()
    kept = dropped != 0
    assert 0 < kept.mean() < 1                   # were the eval weights: rows summing to 1
    np.testing.assert_allclose(dropped[kept], 2 * plain[kept])


@pytest.mark.parametrize("dtype", ["bool", "uint8", "int32", "int64"])
def test_integer_powers_keep_integer_dtypes_as_in_torch(dtype):
    torch = _torch()
    values = np.array([1, 0, 3, 2]).astype(dtype)
    for op in (lambda t: 2 ** t, lambda t: 3 ** t, lambda t: t ** 2):
        expected, got = op(torch.tensor(values)), op(ta.tensor(values))
        assert str(got.dtype) == str(expected.dtype).replace("torch.", "")   # 2 ** x: float32
        np.testing.assert_array_equal(got.numpy(), expected.numpy())
    # a negative integer exponent in a tensor: torch computes (2 ** -1 is 0), no error
    assert (2 ** ta.tensor([-1, 2])).tolist() == (2 ** torch.tensor([-1, 2])).tolist()
