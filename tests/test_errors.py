"""Bad input gets a clear error naming the values, never a raw NumPy traceback."""
import numpy as np
import pytest

import tinyattn as ta
import tinyattn.functional as F


def test_binary_shape_mismatch_names_op_and_both_shapes():
    with pytest.raises(RuntimeError, match=r"add: shapes \(2, 3\) and \(4,\) do not broadcast"):
        ta.randn(2, 3) + ta.randn(4)


def test_matmul_mismatch_names_shapes_and_suggests_transpose():
    with pytest.raises(ValueError, match=r"matmul: shapes \(2, 3\) and \(4, 5\).*transpose"):
        ta.randn(2, 3) @ ta.randn(4, 5)


def test_linear_feature_mismatch():
    with pytest.raises(ValueError, match="in_features=5"):
        F.linear(ta.randn(2, 3), ta.randn(4, 5))


def test_reshape_to_impossible_shape():
    with pytest.raises(ValueError, match=r"reshape: cannot view .*\(2, 3\).*\(4, 2\)"):
        ta.randn(2, 3).reshape(4, 2)


def test_mixing_devices_names_both(monkeypatch):
    from tinyattn import autograd

    a, b = ta.randn(2), ta.randn(2)
    monkeypatch.setattr(type(b), "device", property(lambda self: "cuda" if self is b
                                                    else "cpu"))
    with pytest.raises(RuntimeError, match="different devices \\(cpu and cuda\\)"):
        autograd._check_same_device("Add", (a, b))


def test_cuda_without_cupy_says_what_to_install():
    if ta.cuda_is_available():
        pytest.skip("a GPU is present")
    with pytest.raises(RuntimeError, match=r'pip install "tinyattn\[gpu\]"'):
        ta.randn(2, device="cuda")
    with pytest.raises(RuntimeError, match="cupy"):
        ta.randn(2).to("cuda")


def test_unknown_device():
    with pytest.raises(ValueError, match="unknown device 'tpu'"):
        ta.zeros(2, device="tpu")


def test_cross_entropy_class_out_of_range():
    with pytest.raises(IndexError, match="target class 7 is out of range; valid values are "
                                         "0 to 3"):
        F.cross_entropy(ta.randn(2, 4), ta.tensor([1, 7]))


def test_cross_entropy_wrong_shapes_suggest_flattening():
    with pytest.raises(RuntimeError, match=r"reshape\(-1, C\)"):   # torch: RuntimeError
        F.cross_entropy(ta.randn(2, 3, 4), ta.tensor([[1, 2, 3], [0, 1, 2]]))


def test_cross_entropy_float_target():
    with pytest.raises(RuntimeError, match="integer class indices"):     # as torch
        F.cross_entropy(ta.randn(2, 4), ta.tensor([1.0, 2.0]))


def test_embedding_id_out_of_range():
    with pytest.raises(IndexError, match="token id 10 is out of range; valid values are 0 to 4"):
        F.embedding(ta.tensor([1, 10]), ta.randn(5, 3))
    with pytest.raises(IndexError, match="token id -1"):
        F.embedding(ta.tensor([-1]), ta.randn(5, 3))


def test_embedding_float_ids():
    with pytest.raises(TypeError, match=r"\.long\(\)"):
        F.embedding(ta.tensor([1.0]), ta.randn(5, 3))


def test_attention_mask_that_does_not_broadcast_shows_expected_shape():
    q = ta.randn(2, 4, 3, 8)
    k = ta.randn(2, 4, 5, 8)
    with pytest.raises(ValueError, match=r"shape \(3, 3\) does not broadcast to the expected "
                                         r"shape \(2, 4, 3, 5\)"):
        F.scaled_dot_product_attention(q, k, k, ta.tensor(np.ones((3, 3), dtype=bool)))


def test_attention_integer_mask_is_refused_with_a_hint_and_float_masks_are_added():
    q = ta.randn(1, 3, 8)
    with pytest.raises(TypeError, match=r"boolean.*floating.*\.bool\(\)"):
        F.scaled_dot_product_attention(q, q, q, ta.tensor(np.ones((3, 3), dtype=np.int64)))
    keep = np.tril(np.ones((3, 3), dtype=bool))
    additive = np.where(keep, 0.0, -np.inf).astype(np.float32)   # PyTorch's float convention
    np.testing.assert_allclose(
        F.scaled_dot_product_attention(q, q, q, ta.tensor(additive)).numpy(),
        F.scaled_dot_product_attention(q, q, q, ta.tensor(keep)).numpy(), rtol=1e-6,
        atol=1e-6)        # float32: an output near 0 differs by a rounding, not relatively


def test_attention_width_mismatch():
    with pytest.raises(ValueError, match="d_k=8 but k has d_k=4"):
        F.scaled_dot_product_attention(ta.randn(1, 3, 8), ta.randn(1, 3, 4), ta.randn(1, 3, 4))


def test_masked_fill_mask_shape():
    with pytest.raises(RuntimeError, match=r"tensor a \(4\) must match the size of tensor b "
                       r"\(3\) at non-singleton dimension 1"):                 # as torch
        F.masked_fill(ta.randn(2, 3), ta.tensor([True, False, True, True]), 0.0)


def test_layer_norm_shape_mismatch():
    with pytest.raises(RuntimeError, match=r"normalized_shape \(4,\) must equal the last dims"):
        F.layer_norm(ta.randn(2, 3), 4)


def test_softmax_dim_out_of_range():
    with pytest.raises(IndexError, match="dim 2 is out of range"):
        F.softmax(ta.randn(2, 3), dim=2)


def test_sum_dim_out_of_range():
    with pytest.raises(IndexError, match="dim 5 is out of range"):
        ta.randn(2, 3).sum(5)


def test_cat_shape_mismatch():
    with pytest.raises(RuntimeError, match=r"tensor 1 has shape \(3, 3\)"):
        ta.cat([ta.randn(2, 2), ta.randn(3, 3)], dim=1)


def test_dropout_probability_out_of_range():
    with pytest.raises(ValueError, match=r"p must be a probability in \[0, 1\], got 1.5"):
        F.dropout(ta.randn(3), 1.5)


def test_item_on_many_elements():
    with pytest.raises(RuntimeError, match=r"single-element.*\(3,\)"):
        ta.randn(3).item()


def test_bool_of_many_elements():
    with pytest.raises(RuntimeError, match="ambiguous"):
        bool(ta.randn(3))


def test_gelu_approximate_value():
    with pytest.raises(RuntimeError, match="'none' or 'tanh'"):
        F.gelu(ta.randn(3), approximate="fast")


@pytest.mark.parametrize("call,error,message", [
    (lambda: F.where([True], 1.0, 2.0), TypeError, "condition must be a bool tensor"),
    (lambda: ta.randn(2, 3).chunk(0), ValueError, "positive integer"),
    (lambda: ta.randn(2, 3).sum((1, 1)), RuntimeError, "same axis twice"),
    (lambda: ta.tensor([[1.0], [1.0, 2.0]]), ValueError, "ragged"),
    (lambda: ta.tensor("abc"), TypeError, "expected numbers"),
    (lambda: ta.randn(2).to("cuda:1"), ValueError, "one GPU"),
    (lambda: ta.zeros(-1), RuntimeError, "negative sizes"),
    (lambda: ta.randn(2, 3).permute(0, 3), ValueError, "not an ordering"),
    (lambda: F.masked_fill(ta.randn(2), ta.tensor([True, False]), ta.ones(1)), RuntimeError,
     "only supports a 0-dimensional value tensor"),
    (lambda: "2" ** ta.randn(2), TypeError, "the base must be a number"),
])
def test_more_bad_inputs_get_clear_errors(call, error, message):
    with pytest.raises(error, match=message):
        call()


def test_numpy_integer_dim_and_tensor_fill_value_are_accepted():
    x = ta.randn(2, 3)
    assert x.sum(np.int64(1)).shape == (2,)
    filled = F.masked_fill(x, ta.tensor(np.ones((2, 3), dtype=bool)), ta.tensor(0.0))
    np.testing.assert_array_equal(filled.numpy(), 0.0)


def test_nn_bad_inputs_get_clear_errors():
    from tinyattn import nn
    model = nn.GPT(nn.GPTConfig(vocab_size=5, block_size=4, n_layer=1, n_head=1, d_model=4))
    with pytest.raises(ValueError, match="0 KV caches for 1 layers"):
        model(ta.tensor([[1, 2]]), kv_caches=[])
    with pytest.raises(ValueError, match="top_k must be a whole number"):
        model.generate(ta.tensor([[1]]), 2, top_k=2.5)
    with pytest.raises(ValueError, match="positive sizes"):
        nn.LayerNorm(0)
