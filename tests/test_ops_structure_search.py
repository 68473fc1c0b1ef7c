"""The ops of issue 30's second half against torch, at the edges the OpInfo samples do not
reach: empty and 0-d tensors, NaN and inf, repeated indices, bad arguments (a clear error,
never a silent result), what an in-place write after the op does to backward, and the
activation modules. Negative controls show the comparisons can fail. Skipped without torch.
"""
import numpy as np
import pytest

import tinyattn as ta
import tinyattn.functional as F

torch = pytest.importorskip("torch", reason="torch is the oracle for these ops")
TF = torch.nn.functional


def _both(array, grad=False):
    array = np.asarray(array)
    floating = array.dtype.kind == "f"
    return (ta.tensor(array, requires_grad=grad and floating),
            torch.tensor(array, requires_grad=grad and floating))


def _same(ours, theirs, tol=1e-12):
    if isinstance(theirs, (tuple, list)):
        assert isinstance(ours, (tuple, list)) and len(ours) == len(theirs)
        for a, b in zip(ours, theirs):
            _same(a, b, tol)
        return
    assert ours.shape == tuple(theirs.shape), f"shape {ours.shape} vs {tuple(theirs.shape)}"
    assert str(ours.dtype) == str(theirs.dtype).replace("torch.", ""), \
        f"dtype {ours.dtype} vs {theirs.dtype}"
    np.testing.assert_allclose(ours.detach().numpy().astype(np.float64),
                               theirs.detach().numpy().astype(np.float64),
                               rtol=tol, atol=tol, equal_nan=True)


def _grads_agree(ours_fn, theirs_fn, *arrays, seed=0):
    pairs = [_both(a, grad=True) for a in arrays]
    out, ref = ours_fn(*[p[0] for p in pairs]), theirs_fn(*[p[1] for p in pairs])
    _same(out, ref)
    g = np.random.default_rng(seed).standard_normal(tuple(ref.shape))
    out.backward(ta.tensor(g))
    ref.backward(torch.tensor(g))
    for mine, theirs in pairs:
        if theirs.requires_grad:
            _same(mine.grad, theirs.grad)


# ------------------------------------------------------------------ structure ops
def test_stacks_and_splits_agree_with_torch_at_the_edges():
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((2, 3)), rng.standard_normal((2, 3))
    (ta_a, t_a), (ta_b, t_b) = _both(a), _both(b)
    for name in ("hstack", "vstack", "dstack", "column_stack", "row_stack"):
        _same(getattr(ta, name)([ta_a, ta_b]), getattr(torch, name)([t_a, t_b]))
    zero_d = _both(np.array(2.0))
    _same(ta.hstack([zero_d[0], zero_d[0]]), torch.hstack([zero_d[1], zero_d[1]]))
    x = _both(np.arange(7.0))
    for spec in (3, [2, 5], [5, 2], [-2], [0, 0, 9]):
        _same(ta.tensor_split(x[0], spec), torch.tensor_split(x[1], spec))
    _same(ta.tensor_split(x[0], ta.tensor(3)), torch.tensor_split(x[1], torch.tensor(3)))
    _same(ta.atleast_3d(zero_d[0]), torch.atleast_3d(zero_d[1]))
    _same(ta.atleast_2d((x[0], zero_d[0])), torch.atleast_2d((x[1], zero_d[1])))


def test_split_errors_name_the_sizes():
    x = ta.zeros(2, 3)
    with pytest.raises(RuntimeError, match="not divisible"):
        ta.hsplit(x, 2)
    with pytest.raises(RuntimeError, match="at least 3 dimension"):
        ta.dsplit(x, 1)
    with pytest.raises(RuntimeError, match="larger than 0"):
        ta.tensor_split(x, 0)
    with pytest.raises(RuntimeError, match="Shape mismatch"):
        ta.broadcast_shapes((2, 3), (4, 3))


def test_broadcast_shapes_and_tensors_agree_with_torch():
    assert ta.broadcast_shapes((2, 1), (3,), 1) == tuple(torch.broadcast_shapes((2, 1), (3,), 1))
    assert ta.broadcast_shapes() == tuple(torch.broadcast_shapes())
    _grads_agree(lambda a, b: ta.broadcast_tensors(a, b)[0] * ta.broadcast_tensors(a, b)[1],
                 lambda a, b: torch.broadcast_tensors(a, b)[0] * torch.broadcast_tensors(a, b)[1],
                 np.ones((3, 1)) * 2, np.arange(4.0))


@pytest.mark.parametrize("k", [-1, 0, 1, 2, 3, 5])
def test_rot90_values_and_gradient(k):
    x = np.arange(24.0).reshape(2, 3, 4)
    _grads_agree(lambda t: ta.rot90(t, k, (2, 0)), lambda t: torch.rot90(t, k, (2, 0)), x)


def test_combinations_and_cartesian_prod_edges():
    for r in (0, 1, 2, 4, 5):
        for replace in (False, True):
            ours, theirs = _both(np.array([3.0, 1.0, 2.0, 5.0]))
            _same(ta.combinations(ours, r, replace), torch.combinations(theirs, r, replace))
    _grads_agree(lambda a, b, c: ta.cartesian_prod(a, b, c),
                 lambda a, b, c: torch.cartesian_prod(a, b, c),
                 np.array([1.0, 2.0]), np.array([3.0]), np.array([4.0, 5.0, 6.0]))


# ------------------------------------------------------------------ region writes and picks
def test_region_writes_agree_with_torch_values_and_gradients():
    rng = np.random.default_rng(1)
    x, s = rng.standard_normal((3, 4, 5)), rng.standard_normal((3, 5))
    _grads_agree(lambda a, b: ta.select_scatter(a, b, 1, -1),
                 lambda a, b: torch.select_scatter(a, b, 1, -1), x, s)
    _grads_agree(lambda a, b: ta.slice_scatter(a, b, 2, None, None, 2),
                 lambda a, b: torch.slice_scatter(a, b, 2, None, None, 2),
                 x, rng.standard_normal((3, 4, 3)))
    _grads_agree(lambda a, b: ta.diagonal_scatter(a, b, -1, 2, 1),
                 lambda a, b: torch.diagonal_scatter(a, b, -1, 2, 1),
                 x, rng.standard_normal((3, 4)))
    _grads_agree(lambda v: ta.diag_embed(v, 2, 0, 2), lambda v: torch.diag_embed(v, 2, 0, 2),
                 rng.standard_normal((2, 3)))


def test_block_diag_promotes_and_places_each_block():
    rng = np.random.default_rng(7)
    _grads_agree(lambda a, b, c: ta.block_diag(a, b, c),
                 lambda a, b, c: torch.block_diag(a, b, c),
                 np.array(2.0), rng.standard_normal(3), rng.standard_normal((2, 2)))
    _same(ta.block_diag(ta.tensor([1, 2]), ta.ones(2, 1)),
          torch.block_diag(torch.tensor([1, 2]), torch.ones(2, 1)))
    _same(ta.block_diag(), torch.block_diag())
    _same(ta.block_diag(ta.zeros(0, 3), ta.zeros(2, 0)),
          torch.block_diag(torch.zeros(0, 3), torch.zeros(2, 0)))
    with pytest.raises(RuntimeError, match="2 or fewer"):
        ta.block_diag(ta.zeros(1, 1, 1))


def test_index_put_accumulates_repeats_and_assigns_without():
    rng = np.random.default_rng(2)
    x, v = rng.standard_normal((4, 3)), rng.standard_normal(3)
    rows = np.array([1, 1, 3])
    for accumulate in (True, False):
        ours_rows, torch_rows = ta.tensor(rows), torch.tensor(rows)
        _grads_agree(lambda a, b: ta.index_put(a, (ours_rows,), b, accumulate),
                     lambda a, b: torch.index_put(a, (torch_rows,), b, accumulate),
                     x, v)
    mask = np.array([True, False, True, False])
    _same(ta.index_put(ta.tensor(x), (ta.tensor(mask),), ta.tensor(v)),
          torch.index_put(torch.tensor(x), (torch.tensor(mask),), torch.tensor(v)))


def test_masked_ops_and_their_errors():
    rng = np.random.default_rng(3)
    x = rng.standard_normal((3, 4))
    mask = rng.random(4) < 0.5
    ours_mask, torch_mask = ta.tensor(mask), torch.tensor(mask)
    _grads_agree(lambda a: ta.masked_select(a, ours_mask),
                 lambda a: torch.masked_select(a, torch_mask), x)
    _grads_agree(lambda a, s: ta.masked_scatter(a, ours_mask, s),
                 lambda a, s: torch.masked_scatter(a, torch_mask, s), x,
                 rng.standard_normal(20))
    with pytest.raises(RuntimeError, match="BoolTensor"):
        ta.masked_select(ta.tensor(x), ta.tensor(mask.astype(np.int64)))
    with pytest.raises(RuntimeError, match="at least"):
        ta.masked_scatter(ta.tensor(x), ta.ones(3, 4, dtype=ta.bool), ta.zeros(2,
                                                                            dtype=ta.float64))


def test_unfold_overlapping_windows_sum_their_gradients():
    x = np.arange(10.0).reshape(2, 5)
    for size, step in ((3, 1), (2, 2), (5, 3)):
        _grads_agree(lambda t: t.unfold(1, size, step) * 1.0,
                     lambda t: t.unfold(1, size, step) * 1.0, x)
    _same(ta.tensor(x).unfold(1, 0, 1), torch.tensor(x).unfold(1, 0, 1))
    _same(ta.tensor(3.0).unfold(0, 1, 1), torch.tensor(3.0).unfold(0, 1, 1))
    with pytest.raises(RuntimeError, match="step"):
        ta.zeros(4).unfold(0, 2, 0)


def test_writing_to_a_saved_index_after_the_op_makes_backward_raise_as_torch():
    x = ta.tensor(np.ones((3, 2)), requires_grad=True)
    index = ta.tensor([2, 0])
    out = ta.index_copy(x * 1, 0, index, ta.tensor(np.zeros((2, 2)), requires_grad=True))
    index.add_(0)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        out.sum().backward()


def test_take_along_dim_reads_indices_along_a_dim_modulo_its_size_as_torch():
    x = np.arange(12.0).reshape(3, 4)
    idx = np.array([[-1, 0], [2, -4], [9, -9]])        # torch: taken modulo 4, unchecked
    _grads_agree(lambda a: ta.take_along_dim(a, ta.tensor(idx), 1),
                 lambda a: torch.take_along_dim(a, torch.tensor(idx), 1), x)
    _same(ta.take_along_dim(ta.tensor(x), ta.tensor([5, 11])),
          torch.take_along_dim(torch.tensor(x), torch.tensor([5, 11])))
    with pytest.raises(Exception):                     # flattened: checked, as torch
        ta.take_along_dim(ta.tensor(x), ta.tensor([-1]))
    with pytest.raises(Exception):
        torch.take_along_dim(torch.tensor(x), torch.tensor([-1]))


def test_take_put_index_reduce_unravel_and_nonzero_static_agree_with_torch():
    rng = np.random.default_rng(8)
    x = rng.standard_normal((3, 4))
    index = np.array([[0, -1], [5, 5]])
    _grads_agree(lambda a: ta.take(a, ta.tensor(index)),
                 lambda a: torch.take(a, torch.tensor(index)), x)
    flat = np.array([1, -2, 1])
    for accumulate in (True, False):
        ours_i, torch_i = ta.tensor(flat[:2] if not accumulate else flat), \
            torch.tensor(flat[:2] if not accumulate else flat)
        n = 3 if accumulate else 2
        _grads_agree(lambda a, s: ta.put(a, ours_i, s, accumulate),
                     lambda a, s: torch.put(a, torch_i, s, accumulate), x,
                     rng.standard_normal(n))
    for reduce in ("prod", "mean", "amax", "amin"):
        for include_self in (True, False):
            _grads_agree(
                lambda a, s: ta.index_reduce(a, 1, ta.tensor([3, 0]), s, reduce,
                                             include_self=include_self),
                lambda a, s: torch.index_reduce(a, 1, torch.tensor([3, 0]), s, reduce,
                                                include_self=include_self),
                x, rng.standard_normal((3, 2)))
    _same(ta.unravel_index(ta.tensor([4, -1, 0]), (2, 3)),
          torch.unravel_index(torch.tensor([4, -1, 0]), (2, 3)))
    for size in (0, 1, 5):
        _same(ta.nonzero_static(ta.tensor([[0, 1], [1, 1]]), size=size),
              torch.nonzero_static(torch.tensor([[0, 1], [1, 1]]), size=size))
    with pytest.raises(IndexError, match="out of range"):
        ta.take(ta.tensor(x), ta.tensor([12]))


# ------------------------------------------------------------------ search and count
def test_searchsorted_and_bucketize_agree_with_torch_with_ties_nan_and_scalars():
    seq = np.array([1.0, 2.0, 2.0, 3.0, np.nan])
    values = np.array([[2.0, np.nan, -np.inf], [3.0, 0.0, np.inf]])
    for right in (False, True):
        _same(ta.searchsorted(ta.tensor(seq), ta.tensor(values), right=right),
              torch.searchsorted(torch.tensor(seq), torch.tensor(values), right=right))
        _same(ta.bucketize(ta.tensor(values), ta.tensor(seq[:4]), right=right),
              torch.bucketize(torch.tensor(values), torch.tensor(seq[:4]), right=right))
    _same(ta.searchsorted(ta.tensor(seq), 2.0), torch.searchsorted(torch.tensor(seq), 2.0))
    rows = np.sort(np.random.default_rng(4).standard_normal((2, 5)), axis=1)
    _same(ta.searchsorted(ta.tensor(rows), ta.tensor(values), side="right", out_int32=True),
          torch.searchsorted(torch.tensor(rows), torch.tensor(values), side="right",
                             out_int32=True))
    with pytest.raises(RuntimeError, match="opposites"):
        ta.searchsorted(ta.tensor(seq), ta.tensor(values), right=True, side="left")


def test_isin_histc_unique_consecutive_and_triangle_indices_agree_with_torch():
    e, t = np.array([[1, 2], [3, 4]]), np.array([4, 1, 9])
    for invert in (False, True):
        _same(ta.isin(ta.tensor(e), ta.tensor(t), invert=invert),
              torch.isin(torch.tensor(e), torch.tensor(t), invert=invert))
    _same(ta.isin(ta.tensor(e), 3), torch.isin(torch.tensor(e), 3))
    data = np.array([0.0, 1.0, 1.0, 2.0, 5.0, -1.0, 2.5])
    for bins, low, high in ((4, 0, 0), (5, 0, 2), (3, 1, 1)):
        _same(ta.histc(ta.tensor(data), bins, low, high),
              torch.histc(torch.tensor(data), bins, low, high))
    runs = np.array([[1, 1], [1, 1], [2, 3], [2, 3], [1, 1]])
    for dim in (None, 0, 1):
        _same(ta.unique_consecutive(ta.tensor(runs), True, True, dim),
              torch.unique_consecutive(torch.tensor(runs), True, True, dim))
    for args in ((3, 4, 1), (4, 3, -2), (0, 3, 0), (3, 3, 10)):
        _same(ta.triu_indices(*args), torch.triu_indices(*args))
        _same(ta.tril_indices(*args), torch.tril_indices(*args))
    _same(ta.argwhere(ta.tensor(e > 2)), torch.argwhere(torch.tensor(e > 2)))


def test_bernoulli_draws_zeros_and_ones_with_zero_gradient():
    p = ta.tensor(np.full((2000,), 0.3), requires_grad=True)
    draws = ta.bernoulli(p, generator=ta.Generator().manual_seed(0))
    assert set(np.unique(draws.numpy())) <= {0.0, 1.0}
    assert abs(draws.numpy().mean() - 0.3) < 0.05
    draws.sum().backward()
    assert np.all(p.grad.numpy() == 0)
    again = ta.bernoulli(p.detach(), generator=ta.Generator().manual_seed(0))
    np.testing.assert_array_equal(again.numpy(), draws.detach().numpy())   # seeded
    with pytest.raises(RuntimeError, match=r"\[0, 1\]"):
        ta.bernoulli(ta.tensor([1.5]))


# ------------------------------------------------------------------ activations
ACTIVATIONS = [
    ("relu6", {}), ("hardsigmoid", {}), ("hardswish", {}), ("hardshrink", {"lambd": 0.7}),
    ("softshrink", {"lambd": 0.7}), ("tanhshrink", {}), ("mish", {}), ("celu", {"alpha": 1.5}),
    ("selu", {}), ("elu", {"alpha": 0.5}), ("hardtanh", {}), ("logsigmoid", {}),
]


@pytest.mark.parametrize("name,kwargs", ACTIVATIONS, ids=[a[0] for a in ACTIVATIONS])
def test_activation_values_and_gradients_at_kinks_nan_and_inf(name, kwargs):
    x = np.array([-np.inf, -20.0, -3.0, -0.7, -0.5, 0.0, 0.5, 0.7, 3.0, 6.0, 30.0, np.inf])
    ours, theirs = _both(x, grad=True)
    out, ref = getattr(F, name)(ours, **kwargs), getattr(TF, name)(theirs, **kwargs)
    _same(out, ref)
    out.sum().backward()
    ref.sum().backward()
    _same(ours.grad, theirs.grad)
    nan = _both(np.array([np.nan]))
    _same(getattr(F, name)(nan[0], **kwargs), getattr(TF, name)(nan[1], **kwargs))


def test_threshold_glu_prelu_softmin_and_rrelu_eval():
    rng = np.random.default_rng(5)
    x = rng.standard_normal((2, 4, 3))
    _grads_agree(lambda t: F.threshold(t, 0.1, -5.0), lambda t: TF.threshold(t, 0.1, -5.0), x)
    _grads_agree(lambda t: F.glu(t, 1), lambda t: TF.glu(t, 1), x)
    _grads_agree(lambda t, w: F.prelu(t, w), lambda t, w: TF.prelu(t, w), x,
                 np.array([0.1, 0.2, 0.3, 0.4]))
    _grads_agree(lambda t: F.softmin(t, 2), lambda t: TF.softmin(t, 2), x)
    _grads_agree(lambda t: F.rrelu(t, 0.1, 0.4), lambda t: TF.rrelu(t, 0.1, 0.4), x)
    ints = np.array([-3, 2, 9])
    _same(F.relu6(ta.tensor(ints)), TF.relu6(torch.tensor(ints)))
    with pytest.raises(RuntimeError, match="even"):
        F.glu(ta.zeros(3, 5))
    with pytest.raises(RuntimeError, match="channel"):
        F.prelu(ta.zeros(2, 3), ta.zeros(4))


def test_rrelu_in_training_draws_slopes_inside_its_bounds():
    x = ta.tensor(-np.ones(1000), requires_grad=True)
    out = F.rrelu(x, 0.1, 0.3, training=True)
    slopes = -out.detach().numpy()
    assert slopes.min() >= 0.1 and slopes.max() <= 0.3 and slopes.std() > 0.03
    out.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), slopes, rtol=1e-6)   # each its own slope


def test_activation_modules_match_torch_modules():
    x = np.random.default_rng(6).standard_normal((2, 4, 3)).astype(np.float32) * 4
    for name, args in [("ReLU6", ()), ("Hardsigmoid", ()), ("Hardswish", ()), ("Mish", ()),
                       ("SELU", ()), ("CELU", (1.3,)), ("ELU", (0.7,)),
                       ("Hardtanh", (-0.5, 2.0)), ("Hardshrink", (0.6,)),
                       ("Softshrink", (0.6,)), ("Tanhshrink", ()), ("Softsign", ()),
                       ("LogSigmoid", ()), ("Threshold", (0.1, 20.0)), ("GLU", (1,)),
                       ("Softmin", (1,)), ("PReLU", (4, 0.1))]:
        ours, theirs = getattr(ta.nn, name)(*args), getattr(torch.nn, name)(*args)
        np.testing.assert_allclose(ours(ta.tensor(x)).detach().numpy(),
                                   theirs(torch.tensor(x)).detach().numpy(), rtol=1e-5,
                                   atol=1e-6, err_msg=name)
    prelu = ta.nn.PReLU(4)
    assert prelu.num_parameters == 4 and list(prelu.state_dict()) == ["weight"]
    rrelu = ta.nn.RReLU(0.1, 0.3).eval()
    np.testing.assert_allclose(rrelu(ta.tensor(x)).numpy(),
                               torch.nn.RReLU(0.1, 0.3).eval()(torch.tensor(x)).numpy(),
                               rtol=1e-6)


# ------------------------------------------------------------------ negative controls
def test_the_comparison_helpers_can_fail():
    """A wrong shape, dtype, value or gradient is caught by the helpers used above."""
    with pytest.raises(AssertionError):
        _same(ta.zeros(2), torch.zeros(3))
    with pytest.raises(AssertionError):
        _same(ta.zeros(2, dtype=ta.int64), torch.zeros(2))
    with pytest.raises(AssertionError):
        _same(ta.tensor([1.0, 2.0]), torch.tensor([1.0, 2.5]))
    with pytest.raises(AssertionError):     # same values, gradient 3 where ours is 2
        _grads_agree(lambda t: ta.rot90(t * 2),
                     lambda t: torch.rot90(t * 2) + (torch.rot90(t) - torch.rot90(t).detach()),
                     np.ones((2, 2)))


def test_softmin_with_dtype_negates_in_the_input_dtype():
    # torch computes -x in uint8 (wrapping: 200 -> 56) before converting to dtype
    x = ta.tensor(np.array([[0, 3], [200, 255]], dtype=np.uint8))
    out = F.softmin(x, 0, dtype=ta.float64).numpy()
    assert out[1, 0] == pytest.approx(1.0) and out[0, 0] == pytest.approx(np.exp(-56.0))
    # negative control: converting first gives softmax([0, -200]) = [1, e^-200]
    first = F.softmin(x.to(ta.float64), 0).numpy()
    assert first[0, 0] == pytest.approx(1.0)
