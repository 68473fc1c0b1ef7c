"""Edges where tinyattn now follows torch (issue 30, stream edge30): 0-d and empty inputs of
the gather/scatter family, masked_fill's broadcasting and tensor value, cat's legacy empty
tensors and out= checks, zero-size matmuls, torch's TypeErrors for numbers, rms_norm's
normalized_shape and eps, embedding's max_norm, per-slice repeat_interleave, scatter with a
reduce and a Tensor src, integer scatter means, and the matrix norms. Each is compared with
torch (values, dtypes, gradients, or that both raise); negative controls show the comparison
catches a planted difference."""
import math
import warnings

import numpy as np
import pytest

import tinyattn as ta
import tinyattn.linalg  # noqa: F401 - registers tinyattn.linalg

torch = pytest.importorskip("torch", reason="these edges are checked against torch")


def _run(lib, fn):
    """fn(lib)'s result as (dtype name, nested list), or ("raises", exception type name)."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            out = fn(lib)
    except Exception as exc:  # noqa: BLE001 - the exception is the result compared
        return ("raises", type(exc).__name__)
    array = out.detach().numpy() if lib is torch else out.numpy()
    return (str(out.dtype).replace("torch.", ""), np.asarray(array, dtype=np.float64).tolist())


def _agree(fn):
    """Both libraries raise, or both give equal values of one dtype and shape."""
    ours, theirs = _run(ta, fn), _run(torch, fn)
    if ours[0] == "raises" or theirs[0] == "raises":
        assert ours[0] == theirs[0] == "raises", f"tinyattn {ours} but torch {theirs}"
        return
    assert ours[0] == theirs[0], f"dtype: tinyattn {ours[0]}, torch {theirs[0]}"
    np.testing.assert_allclose(np.asarray(ours[1]), np.asarray(theirs[1]), rtol=1e-6, atol=1e-7)


def _grads_agree(fn, *arrays, upstream_seed=0):
    """fn(lib, *leaves) differentiated with one random upstream gradient in both."""
    grads = []
    for lib in (ta, torch):
        leaves = [lib.tensor(a, requires_grad=True) for a in arrays]
        out = fn(lib, *leaves)
        g = np.random.default_rng(upstream_seed).standard_normal(tuple(out.shape))
        (out * lib.tensor(g)).sum().backward()
        grads.append([leaf.grad.numpy() for leaf in leaves])
    for ours, theirs in zip(*grads):
        np.testing.assert_allclose(ours, theirs, rtol=1e-10, atol=1e-12)


def T(lib, *args, **kwargs):  # noqa: N802 - reads as the tensor it makes
    return lib.tensor(*args, **kwargs)


# ------------------------------------------------------------------ gather / scatter family
ZERO_D_AND_EMPTY = [
    lambda L: L.gather(T(L, 3.0), 0, T(L, [0, 0])),
    lambda L: L.gather(T(L, [1.0, 2.0, 3.0]), 0, T(L, 2)),
    lambda L: L.gather(T(L, 3.0), 0, T(L, 1)),                       # out of range: raises
    lambda L: L.gather(L.ones(3, 4), 1, L.zeros(5, 0, dtype=L.int64)),   # empty: any shape
    lambda L: L.gather(L.ones(3), 0, L.zeros(2, 0, dtype=L.int64)),
    lambda L: L.gather(L.ones(3, 4), 5, L.zeros(5, 0, dtype=L.int64)),   # dim still checked
    lambda L: L.scatter_add(T(L, 3.0), 0, T(L, [0, 0]), T(L, [1.0, 2.0])),
    lambda L: L.scatter_add(T(L, 3.0), 0, T(L, 0), T(L, 5.0)),
    lambda L: L.scatter_add(T(L, 3.0), 0, T(L, [[0]]), T(L, [[5.0]])),   # raises in both
    lambda L: L.scatter_add(L.zeros(3), 0, L.zeros(2, 0, dtype=L.int64), L.ones(4, 3, 2)),
    lambda L: L.scatter(T(L, 3.0), 0, T(L, [0]), T(L, 5.0)),
    lambda L: L.scatter_reduce(T(L, 3.0), 0, T(L, [0, 0]), T(L, [1.0, 2.0]), "prod"),
    lambda L: L.scatter_reduce(T(L, 2.0), 0, T(L, 0), T(L, 5.0), "amax", include_self=False),
    lambda L: L.scatter_reduce(T(L, 2.0), 1, T(L, [0]), T(L, [5.0]), "amax"),   # dim: raises
    lambda L: L.index_add(T(L, 3.0), 0, T(L, [0]), T(L, 2.0), alpha=-1),
    lambda L: L.index_add(T(L, 3.0), 0, T(L, [0]), T(L, [2.0])),      # source shape: raises
    lambda L: L.index_add(L.zeros(3), 0, T(L, 1), T(L, [2.0])),
]


@pytest.mark.parametrize("index", range(len(ZERO_D_AND_EMPTY)))
def test_zero_d_and_empty_index_follow_torch(index):
    _agree(ZERO_D_AND_EMPTY[index])


def test_zero_d_scatter_and_gather_gradients_follow_torch():
    _grads_agree(lambda L, x: L.gather(x, 0, T(L, [0, 0])), np.array(3.0))
    _grads_agree(lambda L, x, s: L.scatter_add(x, 0, T(L, [0, 0]), s), np.array(3.0),
                 np.array([1.0, 2.0]))
    _grads_agree(lambda L, x, s: L.scatter_reduce(x, 0, T(L, 0), s, "prod"), np.array(3.0),
                 np.array(2.0))
    _grads_agree(lambda L, x, s: L.index_add(x, 0, T(L, [0]), s, alpha=2.0), np.array(3.0),
                 np.array(2.0))
    # an empty index of another shape: torch's own backward fails there ("invalid gradient
    # ... got [2, 0]"), so tinyattn's is checked by hand: x passes through, src is unused
    x, src = ta.ones(3, requires_grad=True), ta.ones(4, 3, 2, requires_grad=True)
    ta.scatter_add(x, 0, ta.zeros(2, 0, dtype=ta.int64), src).sum().backward()
    assert x.grad.tolist() == [1.0, 1.0, 1.0] and not src.grad.numpy().any()


INTEGER_WRAPS_AND_MEANS = [
    lambda L: L.scatter_reduce(T(L, [-7, 7]), 0, T(L, [0, 1, 1]), T(L, [0, 0, 1]), "mean"),
    lambda L: L.scatter_reduce(T(L, [5, 3, 7]), 0, T(L, [0, 0, 1, 2]), T(L, [2, 2, -3, 4]),
                               "mean", include_self=False),
    lambda L: L.scatter_reduce(T(L, [True, False]), 0, T(L, [0, 1]), T(L, [True, True]),
                               "mean"),                               # bool mean: raises
    lambda L: L.index_reduce(T(L, [-7, 7]), 0, T(L, [0, 0, 1]), T(L, [0, -2, 1]), "mean",
                             include_self=False),
    lambda L: L.index_add(T(L, [5, 9], dtype=L.uint8), 0, T(L, [0, 1]),
                          T(L, [3, 200], dtype=L.uint8), alpha=-1),     # wraps around
    lambda L: L.index_add(T(L, [5, 9], dtype=L.uint8), 0, T(L, [0, 1]),
                          T(L, [3, 200], dtype=L.uint8), alpha=300),    # overflow: raises
    lambda L: L.index_add(T(L, [5, 9], dtype=L.int8), 0, T(L, [0, 1]),
                          T(L, [3, 100], dtype=L.int8), alpha=2),
]


@pytest.mark.parametrize("index", range(len(INTEGER_WRAPS_AND_MEANS)))
def test_integer_means_floor_and_integer_alpha_wraps_as_torch(index):
    _agree(INTEGER_WRAPS_AND_MEANS[index])


def test_scatter_with_reduce_and_a_tensor_src_follows_torch():
    index = [[0, 1], [0, 1]]
    for reduce in ("add", "multiply"):
        _agree(lambda L: L.scatter(L.ones(3, 2), 0, T(L, index), T(L, [[2.0, 3.0], [4.0, 5.0]]),
                                   reduce=reduce))
        _agree(lambda L: L.scatter(L.ones(3, 2, dtype=L.int64), 0, T(L, index),
                                   T(L, [[2, 3], [4, 5]]), reduce=reduce))
    _agree(lambda L: L.scatter(L.ones(3, 2), 0, T(L, index), T(L, [[2.0, 3.0], [4.0, 5.0]]),
                               reduce="mean"))


# ------------------------------------------------------------------ masked_fill
MASKED_FILL = [
    lambda L: L.zeros(2).masked_fill(T(L, [[True, False], [False, True]]), 2.0),  # broadcasts
    lambda L: L.zeros(2).masked_fill_(T(L, [[True, False], [False, True]]), 2.0),  # raises
    lambda L: L.zeros(2, 2).masked_fill(T(L, True), T(L, [1.0])),       # 1-d value: raises
    lambda L: L.zeros(3, dtype=L.int64).masked_fill(T(L, [True, False, True]), T(L, 2.7)),
    lambda L: L.zeros(3, dtype=L.int8).masked_fill(T(L, [True, False, True]), 1000),
    lambda L: L.zeros(3, dtype=L.float16).masked_fill(T(L, [True, False, True]), T(L, 1e6)),
]


@pytest.mark.parametrize("index", range(len(MASKED_FILL)))
def test_masked_fill_broadcasts_and_checks_its_value_as_torch(index):
    _agree(MASKED_FILL[index])


def test_masked_fill_gives_a_tensor_value_its_gradient():
    mask = [[True, False], [False, True]]
    _grads_agree(lambda L, x, v: x.masked_fill(T(L, mask), v), np.ones(2), np.array(2.0))
    _grads_agree(lambda L, x, v: x.masked_fill(T(L, [True, False]), v), np.ones((3, 2)),
                 np.array(-1.0))


# ------------------------------------------------------------------ cat, matmul, errors
CAT_AND_MATMUL = [
    lambda L: L.cat([L.zeros(0), L.ones(2, 2)], dim=1),               # legacy (0,): skipped
    lambda L: L.cat([L.ones(2, 2), L.zeros(0, dtype=L.float64)]),      # still promotes
    lambda L: L.cat([L.zeros(0), L.zeros(0)], dim=1),
    lambda L: L.cat([L.zeros(0, 3), L.ones(2, 2)]),                    # not legacy: raises
    lambda L: L.cat(L.ones(2, 2)),                                     # a tensor: raises
    lambda L: L.cat([T(L, 1.0), T(L, 2.0)]),                           # 0-d: raises
    lambda L: L.matmul(L.ones(5, 5, 0), L.ones(0, 5)),
    lambda L: L.matmul(L.ones(0, 5), L.ones(5, 5, 0)),
    lambda L: L.matmul(L.ones(3), L.ones(0, 3, 2)),
    lambda L: L.nn.functional.linear(L.ones(2, 0), L.ones(3, 0), L.ones(3)),
]


@pytest.mark.parametrize("index", range(len(CAT_AND_MATMUL)))
def test_cat_and_zero_size_matmul_follow_torch(index):
    _agree(CAT_AND_MATMUL[index])


def test_cat_legacy_empty_gets_its_empty_gradient():
    _grads_agree(lambda L, e, x: L.cat([e, x], dim=1), np.zeros(0), np.ones((2, 3)))


@pytest.mark.parametrize("call", [
    lambda L: L.atan2(L.ones(3), 2), lambda L: L.atan2(2, L.ones(3)),
    lambda L: L.fmod(2, L.arange(1, 4)), lambda L: L.maximum(L.arange(3), 2),
    lambda L: L.minimum(2, L.arange(3)), lambda L: L.max(2, L.arange(3)),
    lambda L: L.min(2, L.arange(3)), lambda L: L.arange(3.0).atan2(2),
], ids=["atan2_other", "atan2_input", "fmod", "maximum", "minimum", "max", "min", "method"])
def test_numbers_where_torch_wants_tensors_raise_type_errors(call):
    with pytest.raises(TypeError):
        call(torch)
    with pytest.raises(TypeError):
        call(ta)
    assert ta.fmod(ta.arange(1, 4), 2).tolist() == [1, 0, 1]       # a number as other is fine


def test_out_tensors_checked_as_torch():
    x = ta.randn(4, 4)
    with pytest.raises(RuntimeError, match="Expected out tensor to have dtype float"):
        ta.gather(x, 0, ta.zeros(2, 4, dtype=ta.int64), out=ta.zeros(2, 4, dtype=ta.float64))
    with pytest.raises(RuntimeError, match="unsupported operation"):
        ta.cat([x, x], out=x)
    with pytest.raises(RuntimeError, match="unsupported operation"):
        ta.index_select(x, 0, ta.tensor([0, 1]), out=x)
    with pytest.raises(RuntimeError, match="unsupported operation"):
        ta.kthvalue(x[0], 2, out=(x[0], ta.zeros((), dtype=ta.int64)))
    with pytest.raises(RuntimeError, match="Expected out tensor to have dtype float"):
        ta.aminmax(x, dim=0, out=(ta.zeros(4), ta.zeros(4, dtype=ta.float64)))
    values = ta.zeros(4)
    ta.aminmax(x, dim=0, out=(values, ta.zeros(4)))                  # a good out= is written
    np.testing.assert_array_equal(values.numpy(), x.numpy().min(axis=0))


# ------------------------------------------------------------------ norms and 0-d inputs
def test_cosine_similarity_and_normalize_of_0d_follow_torch():
    for a, b in ((-3.0, 2.0), (0.0, 2.0)):
        _agree(lambda L: L.nn.functional.cosine_similarity(T(L, a), T(L, b), dim=0))
    _agree(lambda L: L.nn.functional.cosine_similarity(T(L, 1.0), T(L, 2.0), dim=1))
    _agree(lambda L: L.nn.functional.normalize(T(L, -3.0), p=1.2, dim=0))
    _agree(lambda L: L.nn.functional.normalize(T(L, 0.0), dim=-1))
    _agree(lambda L: L.nn.functional.normalize(T(L, 2.0), dim=1))
    _grads_agree(lambda L, a, b: L.nn.functional.cosine_similarity(a, b, dim=0),
                 np.array(-3.0), np.array(2.0))


def test_rms_norm_normalized_shape_and_negative_eps_follow_torch():
    x = np.random.default_rng(0).standard_normal((2, 2, 3)) * 2
    _agree(lambda L: L.nn.functional.rms_norm(T(L, x), (2, 3), eps=-0.5))
    _agree(lambda L: L.nn.functional.rms_norm(T(L, x), ()))
    _agree(lambda L: L.nn.functional.layer_norm(T(L, x), ()))


def test_embedding_max_norm_renormalises_rows_in_place_as_torch():
    weight = np.random.default_rng(1).standard_normal((6, 4)) * 2
    ids = [[0, 2, 2], [5, 2, 0]]
    for options in (dict(max_norm=1.0), dict(max_norm=1.5, norm_type=1.0),
                    dict(max_norm=0.5, norm_type=math.inf), dict(scale_grad_by_freq=True),
                    dict(scale_grad_by_freq=True, padding_idx=2, max_norm=2.0)):
        results = []
        for lib in (ta, torch):
            w = lib.tensor(weight.copy(), requires_grad=True)
            out = lib.nn.functional.embedding(lib.tensor(ids), w, **options)
            (out * lib.tensor(np.arange(24.0).reshape(2, 3, 4))).sum().backward()
            results.append([out.detach().numpy(), w.detach().numpy(), w.grad.numpy()])
        for ours, theirs in zip(*results):
            np.testing.assert_allclose(ours, theirs, rtol=1e-12, err_msg=str(options))
    module = ta.nn.Embedding(5, 3, max_norm=0.1)
    module(ta.tensor([1, 3]))
    norms = np.linalg.norm(module.weight.detach().numpy(), axis=1)
    assert np.all(norms[[1, 3]] <= 0.1 + 1e-6)


def test_repeat_interleave_with_counts_per_slice_follows_torch():
    x = np.arange(6.0).reshape(2, 3)
    for call in (lambda L: T(L, x).repeat_interleave(T(L, [1, 0, 2]), dim=1),
                 lambda L: T(L, x).repeat_interleave(T(L, [1, 0, 2, 1, 1, 1])),
                 lambda L: T(L, x).repeat_interleave(T(L, [2]), dim=0),
                 lambda L: T(L, x).repeat_interleave(T(L, [1, 0, 2]), dim=1, output_size=4),
                 lambda L: T(L, x).repeat_interleave(T(L, [1, -1, 2]), dim=1),
                 lambda L: T(L, x).repeat_interleave(T(L, [1, 2]), dim=1),
                 lambda L: L.repeat_interleave(T(L, [1, 0, 2], dtype=L.int32)),
                 lambda L: L.repeat_interleave(T(L, 2))):
        _agree(call)
    _grads_agree(lambda L, a: a.repeat_interleave(T(L, [1, 0, 3]), dim=1), x)


@pytest.mark.parametrize("order", ["fro", "nuc", 2, -2, 1, -1, math.inf, -math.inf])
def test_matrix_norms_and_their_gradients_follow_torch(order):
    a = np.random.default_rng(2).standard_normal((3, 2, 4))
    _agree(lambda L: L.linalg.matrix_norm(T(L, a), order))
    _agree(lambda L: L.linalg.matrix_norm(T(L, a), order, dim=(2, 0), keepdim=True))
    _agree(lambda L: L.linalg.norm(T(L, a[0]), order))
    _grads_agree(lambda L, x: L.linalg.matrix_norm(x, order), a)


def test_norm_nuc_and_matrix_norm_errors_follow_torch():
    a = np.random.default_rng(3).standard_normal((2, 3, 4))
    _agree(lambda L: L.norm(T(L, a[0]), "nuc"))
    _agree(lambda L: L.norm(T(L, a), "nuc", dim=(0, 2)))
    _agree(lambda L: L.norm(T(L, a), "nuc"))                          # 3-D without dim
    _agree(lambda L: L.linalg.matrix_norm(T(L, a), 3))
    _agree(lambda L: L.linalg.matrix_norm(T(L, a), "fro", dim=(0, 0)))
    _agree(lambda L: L.linalg.matrix_norm(T(L, a[0, 0]), "fro"))
    _agree(lambda L: L.linalg.norm(T(L, a), 2))                       # 3-D with ord: raises
    _agree(lambda L: L.linalg.norm(T(L, a), 3, dim=1))
    _agree(lambda L: L.linalg.matrix_norm(L.zeros(2, 0, 3), 2))       # no entries: 0
    _grads_agree(lambda L, x: L.norm(x, "nuc"), a[0])


# ------------------------------------------------------------------ negative controls
def test_negative_control_the_comparison_sees_a_planted_difference():
    with pytest.raises(AssertionError):
        _agree(lambda L: L.ones(2) * (2 if L is ta else 3))
    with pytest.raises(AssertionError):
        _agree(lambda L: L.ones(2, dtype=L.float64 if L is ta else L.float32))
    with pytest.raises(AssertionError):
        _agree(lambda L: L.ones(2) if L is ta else L.ones(3)[5])     # only torch raises
    with pytest.raises(AssertionError):
        _grads_agree(lambda L, x: x * (2.0 if L is ta else 3.0), np.ones(3))


def test_zero_norm_gives_no_gradient_as_torch():
    for lib in (ta, torch):
        x = lib.tensor([1.5, 0.0, -2.0], requires_grad=True)
        lib.linalg.vector_norm(x, 0).backward()
        assert x.grad is None, lib.__name__
    y = ta.tensor([1.5, 0.0], requires_grad=True)
    (ta.norm(y, 0) + y.sum()).backward()                  # other paths still reach y
    assert y.grad.tolist() == [1.0, 1.0]
