"""Property tests: hypothesis draws shapes (and dims) and every drawn case must match the
reference and pass a float64 gradcheck (random projection, so big shapes stay cheap).
The unary and binary rows come from the op table, so a new row is covered here too."""
import numpy as np
import scipy.special
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra.numpy import array_shapes, mutually_broadcastable_shapes

import tinyattn as ta
import tinyattn.functional as F
from tinyattn.optable import OP_TABLE, OpCase, make_inputs

UNARY = [s for s in OP_TABLE if s.name in {"neg", "exp", "tanh", "gelu", "gelu_tanh",
                                           "softmax", "log_softmax", "sum", "mean", "transpose"}]
POSITIVE = [s for s in OP_TABLE if s.name in {"log", "sqrt", "pow"}]
BINARY = [s for s in OP_TABLE if s.name in {"add", "sub", "mul", "div"}]


def _check(spec_fn, reference, arrays):
    case = OpCase("drawn", tuple(arrays))
    out = spec_fn(*make_inputs(case))
    np.testing.assert_allclose(out.numpy(), reference(*arrays), rtol=1e-10, atol=1e-10)
    report = ta.gradcheck_report(spec_fn, make_inputs(case), fast=True)
    assert report.passed, str(report)


@given(st.sampled_from(UNARY + POSITIVE), array_shapes(min_dims=2, max_dims=4, max_side=5),
       st.integers(0, 2**31 - 1))
def test_unary_rows_on_random_shapes(spec, shape, seed):
    x = np.random.default_rng(seed).standard_normal(shape)
    if spec in POSITIVE:
        x = np.abs(x) + 0.3
    _check(spec.fn, spec.reference, [x])


@given(st.sampled_from(BINARY), mutually_broadcastable_shapes(num_shapes=2, max_dims=4,
                                                              max_side=4),
       st.integers(0, 2**31 - 1))
def test_binary_rows_broadcast_on_random_shapes(spec, shapes, seed):
    rng = np.random.default_rng(seed)
    a, b = (rng.standard_normal(s) for s in shapes.input_shapes)
    if spec.name == "div":
        b = np.abs(b) + 0.5
    _check(spec.fn, spec.reference, [np.asarray(a), np.asarray(b)])


@given(array_shapes(min_dims=1, max_dims=4, max_side=5), st.data())
def test_softmax_and_reductions_along_any_dim(shape, data):
    dim = data.draw(st.integers(-len(shape), len(shape) - 1))
    x = np.random.default_rng(0).standard_normal(shape) * 3
    _check(lambda t: F.softmax(t, dim), lambda a: scipy.special.softmax(a, axis=dim), [x])
    _check(lambda t: t.sum(dim, keepdim=True), lambda a: a.sum(axis=dim, keepdims=True), [x])
    _check(lambda t: t.amax(dim), lambda a: a.max(axis=dim), [x])


@given(st.lists(st.integers(1, 3), max_size=2), st.integers(1, 4), st.integers(1, 4),
       st.integers(1, 4), st.booleans())
def test_matmul_and_linear_on_random_batches(batch, m, k, n, weight_2d):
    rng = np.random.default_rng(m * 100 + k * 10 + n)
    a = rng.standard_normal(tuple(batch) + (m, k))
    b = rng.standard_normal((k, n) if weight_2d else tuple(batch) + (k, n))
    _check(lambda x, y: x @ y, np.matmul, [a, b])
    w, bias = rng.standard_normal((n, k)), rng.standard_normal(n)
    _check(F.linear, lambda x, w_, b_: x @ w_.T + b_, [a, w, bias])


@given(st.integers(1, 3), st.integers(1, 6), st.integers(1, 6), st.integers(1, 4),
       st.booleans(), st.integers(0, 2**31 - 1))
def test_attention_on_random_lengths_and_masks(batch, s_q, s_k, d, causal, seed):
    rng = np.random.default_rng(seed)
    q, k, v = (rng.standard_normal((batch, s, d)) for s in (s_q, s_k, s_k))
    mask = rng.random((batch, s_q, s_k)) > 0.3        # some rows may be fully masked

    def reference(q_, k_, v_, m_):
        keep = m_ & np.tri(s_q, s_k, dtype=bool) if causal else m_
        scores = np.where(keep, q_ @ np.swapaxes(k_, -1, -2) / np.sqrt(d), -np.inf)
        with np.errstate(invalid="ignore"):
            p = scipy.special.softmax(scores, axis=-1)
        return np.nan_to_num(p) @ v_                   # fully masked rows: zeros

    tri = ta.tensor(np.tri(s_q, s_k, dtype=bool))      # torch refuses mask with is_causal:
    _check(lambda *t: F.scaled_dot_product_attention(    # the causal part goes in the mask
        *t[:3], t[3] & tri if causal else t[3]), reference, [q, k, v, mask])


@given(array_shapes(min_dims=2, max_dims=3, min_side=2, max_side=6), st.booleans())
def test_layer_norm_on_random_shapes(shape, affine):
    rng = np.random.default_rng(sum(shape))
    x = rng.standard_normal(shape) * 2 + 1
    w, b = rng.standard_normal(shape[-1]), rng.standard_normal(shape[-1])

    def reference(x_, *wb):
        y = (x_ - x_.mean(-1, keepdims=True)) / np.sqrt(x_.var(-1, keepdims=True) + 1e-5)
        return y * wb[0] + wb[1] if wb else y

    if affine:
        _check(lambda t, w_, b_: F.layer_norm(t, shape[-1], w_, b_), reference, [x, w, b])
    else:
        _check(lambda t: F.layer_norm(t, shape[-1]), reference, [x])
