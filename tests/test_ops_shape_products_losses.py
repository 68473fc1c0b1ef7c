"""Shape and index ops, cumprod and the products, functional activations and losses, and
Tensor.register_hook, against torch; with their edge cases and errors. Negative controls show
the comparisons catch planted bugs."""
import math
import warnings

import numpy as np
import pytest

import tinyattn as ta
import tinyattn.functional as F
from test_ops_pointwise_and_logic import compare

torch = pytest.importorskip("torch")
TF = torch.nn.functional
inf, nan = math.inf, math.nan
rng = np.random.default_rng(0)


def randn(*shape):
    return rng.standard_normal(shape)


# ------------------------------------------------------------------ shape and index ops
SHAPE = [
    ("unbind_0", lambda x: ta.stack([t * (i + 1) for i, t in enumerate(x.unbind())]),
     lambda x: torch.stack([t * (i + 1) for i, t in enumerate(x.unbind())]), (3, 4)),
    ("unbind_neg", lambda x: ta.cat(ta.unbind(x, -1)), lambda x: torch.cat(torch.unbind(x, -1)),
     (2, 3, 2)),
    ("narrow", lambda x: x.narrow(1, 1, 2), lambda x: x.narrow(1, 1, 2), (3, 4)),
    ("narrow_negative_start", lambda x: ta.narrow(x, 0, -2, 2),
     lambda x: torch.narrow(x, 0, -2, 2), (3, 4)),
    ("narrow_empty", lambda x: x.narrow(1, 4, 0), lambda x: x.narrow(1, 4, 0), (3, 4)),
    ("roll", lambda x: x.roll(1), lambda x: x.roll(1), (3, 4)),
    ("roll_dims", lambda x: ta.roll(x, (1, -3), (0, -1)),
     lambda x: torch.roll(x, (1, -3), (0, -1)), (2, 3, 4)),
    ("roll_big_shift", lambda x: x.roll(7, 1), lambda x: x.roll(7, 1), (3, 4)),
    ("roll_0d", lambda x: x.roll(2), lambda x: x.roll(2), ()),
    ("movedim", lambda x: x.movedim(0, -1), lambda x: x.movedim(0, -1), (2, 3, 4)),
    ("movedim_tuple", lambda x: ta.movedim(x, (0, 1), (2, 0)),
     lambda x: torch.movedim(x, (0, 1), (2, 0)), (2, 3, 4)),
    ("moveaxis", lambda x: x.moveaxis(2, 0), lambda x: x.moveaxis(2, 0), (2, 3, 4)),
    ("swapdims", lambda x: x.swapdims(0, 2), lambda x: x.swapdims(0, 2), (2, 3, 4)),
    ("unflatten", lambda x: x.unflatten(1, (2, -1)), lambda x: x.unflatten(1, (2, -1)), (2, 6)),
    ("unflatten_neg_dim", lambda x: ta.unflatten(x, -1, (3, 1, 2)),
     lambda x: torch.unflatten(x, -1, (3, 1, 2)), (2, 6)),
    ("tile_short", lambda x: x.tile((2,)), lambda x: x.tile((2,)), (2, 3)),
    ("tile_long", lambda x: ta.tile(x, (2, 1, 3)), lambda x: torch.tile(x, (2, 1, 3)), (2, 3)),
    ("view_as", lambda x: x.view_as(ta.zeros(6, 2)), lambda x: x.view_as(torch.zeros(6, 2)),
     (3, 4)),
    ("reshape_as", lambda x: x.T.reshape_as(ta.zeros(12)),
     lambda x: x.T.reshape_as(torch.zeros(12)), (3, 4)),
    ("diagonal", lambda x: x.diagonal(), lambda x: x.diagonal(), (3, 4)),
    ("diagonal_offset", lambda x: x.diagonal(2), lambda x: x.diagonal(2), (3, 4)),
    ("diagonal_below", lambda x: ta.diagonal(x, -1), lambda x: torch.diagonal(x, -1), (3, 4)),
    ("diagonal_dims", lambda x: x.diagonal(1, 2, 0), lambda x: x.diagonal(1, 2, 0), (3, 2, 4)),
    ("diagonal_off_the_end", lambda x: x.diagonal(5), lambda x: x.diagonal(5), (3, 4)),
    ("trace", lambda x: x.trace(), lambda x: x.trace(), (3, 4)),
    ("trace_fn", ta.trace, torch.trace, (4, 2)),
    ("masked_fill", lambda x: ta.masked_fill(x, x > 0, -1.5),
     lambda x: torch.masked_fill(x, x > 0, -1.5), (3, 4)),
    ("cumprod", lambda x: x.cumprod(1), lambda x: x.cumprod(1), (3, 5)),
    ("cumprod_neg_dim", lambda x: ta.cumprod(x, -1), lambda x: torch.cumprod(x, -1), (2, 3, 4)),
    ("cumprod_0d", lambda x: x.cumprod(0), lambda x: x.cumprod(0), ()),
    ("cumprod_empty", lambda x: x.cumprod(1), lambda x: x.cumprod(1), (3, 0)),
]


@pytest.mark.parametrize("name,ours,theirs,shape", SHAPE, ids=[s[0] for s in SHAPE])
def test_shape_ops_match_torch(name, ours, theirs, shape):
    compare(ours, theirs, randn(*shape))


def test_index_select_matches_torch_with_repeats_dims_and_0d_index():
    x = randn(4, 3)
    for dim, index in ((0, [2, 0, 2, 3]), (1, [1, 1]), (-1, []), (0, 3)):
        idx = np.array(index, dtype=np.int64)
        compare(lambda t: ta.index_select(t, dim, ta.tensor(idx)),
                lambda t: torch.index_select(t, dim, torch.tensor(idx)), x)
        compare(lambda t: t.index_select(dim, ta.tensor(idx)),
                lambda t: t.index_select(dim, torch.tensor(idx)), x.astype(np.float32))


@pytest.mark.parametrize("zeros", [[1], [0, 3], [4], [0, 1, 2, 3, 4], [2, 2]])
def test_cumprod_gradient_with_zeros_matches_torch(zeros):
    x = randn(3, 5)
    x[:, zeros] = 0.0
    compare(lambda t: ta.cumprod(t, 1), lambda t: torch.cumprod(t, 1), x)
    compare(lambda t: ta.cumprod(t, 0), lambda t: torch.cumprod(t, 0), x.T.copy())


def test_cumprod_worked_example_of_the_docs():
    x = ta.tensor([2.0, 0.0, 3.0, 0.0, 5.0], dtype="float64", requires_grad=True)
    x.cumprod(0).backward(ta.tensor([1.0, 2.0, 3.0, 4.0, 5.0], dtype="float64"))
    np.testing.assert_array_equal(x.grad.numpy(), [1, 22, 0, 0, 0])   # derivations.md#cumprod


def test_cumprod_dtypes_match_torch():
    for values in ([1, 2, 3], [True, True, False]):
        compare(lambda t: t.cumprod(0), lambda t: t.cumprod(0), np.array(values))
    compare(lambda t: ta.cumprod(t, 0, dtype="float64"),
            lambda t: torch.cumprod(t, 0, dtype=torch.float64), np.array([1, 2, 3]))


def test_the_comparison_catches_the_division_shortcut_of_cumprod(monkeypatch):
    """Negative control: dx_j = sum_{i>=j} g_i y_i / x_j (right without zeros) is caught on
    an input with a zero, by the torch comparison and by the gradcheck."""
    from tinyattn.ops.products import Cumprod

    def shortcut(self, grad):
        x, axis = self.saved
        y = np.cumprod(x, axis=axis)
        with np.errstate(all="ignore"):
            return np.flip(np.cumsum(np.flip(grad * y, axis), axis=axis), axis) / x
    compare(lambda t: t.cumprod(0), lambda t: t.cumprod(0), np.array([2.0, 3.0, 4.0]))
    monkeypatch.setattr(Cumprod, "backward", shortcut)
    with pytest.raises(AssertionError, match="gradient of input 0"):
        compare(lambda t: t.cumprod(0), lambda t: t.cumprod(0), np.array([2.0, 0.0, 4.0]))
    x = ta.tensor([2.0, 0.0, 4.0], dtype="float64", requires_grad=True)
    assert not ta.gradcheck_report(lambda t: t.cumprod(0), [x]).passed


# ------------------------------------------------------------------ products
PRODUCTS = [
    ("outer", ta.outer, torch.outer, [(3,), (4,)]),
    ("outer_method", lambda a, b: a.outer(b), lambda a, b: a.outer(b), [(1,), (2,)]),
    ("dot", ta.dot, torch.dot, [(5,), (5,)]),
    ("dot_empty", ta.dot, torch.dot, [(0,), (0,)]),
    ("mv", ta.mv, torch.mv, [(3, 4), (4,)]),
    ("mv_method", lambda a, b: a.mv(b), lambda a, b: a.mv(b), [(2, 3), (3,)]),
    ("addmm", ta.addmm, torch.addmm, [(3, 2), (3, 4), (4, 2)]),
    ("addmm_broadcast", lambda c, a, b: ta.addmm(c, a, b, beta=0.5, alpha=2.0),
     lambda c, a, b: torch.addmm(c, a, b, beta=0.5, alpha=2.0), [(2,), (3, 4), (4, 2)]),
    ("addmm_method", lambda c, a, b: c.addmm(a, b, alpha=-1.0),
     lambda c, a, b: c.addmm(a, b, alpha=-1.0), [(1, 2), (3, 4), (4, 2)]),
    ("lerp_scalar", lambda a, b: ta.lerp(a, b, 0.3), lambda a, b: torch.lerp(a, b, 0.3),
     [(3, 4), (3, 4)]),
    ("lerp_big_weight", lambda a, b: a.lerp(b, 1.7), lambda a, b: a.lerp(b, 1.7),
     [(3, 4), (4,)]),
    ("lerp_tensor", ta.lerp, torch.lerp, [(3, 4), (3, 4), (4,)]),
]


@pytest.mark.parametrize("name,ours,theirs,shapes", PRODUCTS, ids=[p[0] for p in PRODUCTS])
def test_products_match_torch(name, ours, theirs, shapes):
    compare(ours, theirs, *[randn(*s) for s in shapes])


def test_addmm_with_beta_zero_ignores_nan_in_input_like_torch():
    c = np.full((2, 2), nan)
    ours = compare(lambda c, a, b: ta.addmm(c, a, b, beta=0),
                   lambda c, a, b: torch.addmm(c, a, b, beta=0), c, randn(2, 3), randn(3, 2))
    assert ours[0].grad is not None and ours[0].grad.tolist() == [[0.0, 0.0], [0.0, 0.0]]


def test_integer_products_match_torch():
    a, b = np.array([1, 2, 3]), np.array([4, 5, 6])
    for ours, theirs in ((ta.dot, torch.dot), (ta.outer, torch.outer)):
        compare(ours, theirs, a, b)
    compare(ta.trace, torch.trace, np.arange(6).reshape(2, 3))


PRODUCT_ERRORS = [
    (lambda: ta.dot(ta.zeros(3), ta.zeros(4)), RuntimeError, r"different lengths \(3 and 4\)"),
    (lambda: ta.dot(ta.zeros(2, 2), ta.zeros(2)), RuntimeError, r"input must be a 1-D tensor"),
    (lambda: ta.dot(ta.zeros(2), ta.zeros(2, dtype="int64")), RuntimeError,
     r"same dtype, got float32 and int64"),
    (lambda: ta.mv(ta.zeros(2, 3), ta.zeros(2)), RuntimeError, r"\(2, 3\) and vector \(2,\)"),
    (lambda: ta.outer(ta.zeros(2, 1), ta.zeros(2)), RuntimeError,
     r"outer: input must be a 1-D tensor, got \(2, 1\)"),
    (lambda: ta.addmm(ta.zeros(3), ta.zeros(2, 3), ta.zeros(3, 2)), RuntimeError,
     r"expanded size of the tensor \(2\) must match the existing size \(3\)"),
    (lambda: ta.addmm(ta.zeros(2), ta.zeros(2, 3), ta.zeros(2, 2)), RuntimeError,
     r"mat1 and mat2 shapes cannot be multiplied \(2x3 and 2x2\)"),
    (lambda: ta.lerp(ta.zeros(2), ta.zeros(2, dtype="float64"), 0.5), RuntimeError,
     r"same dtype"),
    (lambda: ta.trace(ta.zeros(2, 2, 2)), RuntimeError, r"trace: expects a 2-D tensor"),
    (lambda: ta.diagonal(ta.zeros(3)), IndexError, r"needs at least 2 dims, got shape \(3,\)"),
    (lambda: ta.diagonal(ta.zeros(3, 3), 0, 1, -1), RuntimeError, r"dim1 and dim2 must differ"),
    (lambda: ta.cumprod(ta.zeros(3), 1), IndexError, r"cumprod: dim 1 is out of range"),
    (lambda: ta.narrow(ta.zeros(3, 4), 1, 3, 2), RuntimeError,
     r"start \(3\) \+ length \(2\) exceeds the size of dim 1 \(4\)"),
    (lambda: ta.narrow(ta.zeros(3, 4), 0, -5, 1), IndexError, r"start -5 is out of range"),
    (lambda: ta.index_select(ta.zeros(3, 4), 1, ta.tensor([0, 4])), IndexError,
     r"index 4 is out of range for dim 1 of size 4"),
    (lambda: ta.index_select(ta.zeros(3), 0, ta.tensor([0.0])), TypeError,
     r"index must be a 1-D int64 tensor, got float32"),
    (lambda: ta.index_select(ta.zeros(3), 0, [0]), TypeError, r"index must be a 1-D int64"),
    (lambda: ta.roll(ta.zeros(3, 4), (1, 2), 0), RuntimeError, r"must have the same length"),
    (lambda: ta.roll(ta.zeros(3, 4), (1, 2)), RuntimeError, r"with dims=None, shifts must be"),
    (lambda: ta.roll(ta.zeros(3, 4), 1, 2), IndexError, r"roll: dim 2 is out of range"),
    (lambda: ta.roll(ta.tensor(1.0), 1, 0), IndexError, r"0-d tensor has no dims to roll"),
    (lambda: ta.movedim(ta.zeros(2, 3), (0, 1), 0), RuntimeError, r"same number of dims"),
    (lambda: ta.movedim(ta.zeros(2, 3), (0, 0), (1, 0)), RuntimeError, r"repeated dim"),
    (lambda: ta.unflatten(ta.zeros(2, 6), 1, (4, -1)), ValueError,
     r"sizes \(4, -1\) do not multiply to the size of dim 1 \(6\)"),
    (lambda: ta.unbind(ta.tensor(1.0)), IndexError, r"0-d tensor has no dim to unbind"),
    (lambda: ta.zeros(2, 3).view_as(ta.zeros(5)), ValueError, r"as shape \(5,\)"),
]


@pytest.mark.parametrize("call,error,message", PRODUCT_ERRORS,
                         ids=[f"error{i}" for i in range(len(PRODUCT_ERRORS))])
def test_bad_arguments_get_clear_errors(call, error, message):
    with pytest.raises(error, match=message):
        call()


# ------------------------------------------------------------------ functional
EXTREME = np.array([-1000.0, -30.0, -2.0, -1.0, -1e-8, 0.0, 1e-8, 0.5, 1.0, 3.0, 40.0, 1000.0,
                    nan])
ACTIVATIONS = [
    ("logsigmoid", F.logsigmoid, TF.logsigmoid),
    ("elu", F.elu, TF.elu),
    ("elu_alpha", lambda x: F.elu(x, alpha=2.5), lambda x: TF.elu(x, alpha=2.5)),
    ("hardtanh", F.hardtanh, TF.hardtanh),
    ("hardtanh_bounds", lambda x: F.hardtanh(x, -2.0, 0.5), lambda x: TF.hardtanh(x, -2.0, 0.5)),
    ("softsign", F.softsign, TF.softsign),
]


@pytest.mark.parametrize("name,ours,theirs", ACTIVATIONS, ids=[a[0] for a in ACTIVATIONS])
def test_activations_match_torch_at_extremes_kinks_and_bounds(name, ours, theirs):
    with np.errstate(all="ignore"):
        compare(ours, theirs, EXTREME)
        compare(ours, theirs, np.array([-2.0, -1.0, 0.5, 1.0, 2.0]).reshape(5, 1))
        compare(ours, theirs, np.zeros((0, 2)))
        compare(ours, theirs, np.array(0.25))
    out = ours(ta.tensor([1, -2]))
    keeps_ints = name.startswith("hardtanh")     # torch's hardtanh keeps int64 (bounds
    assert out.dtype == (np.int64 if keeps_ints else np.float32)    # truncated), as torch
    if keeps_ints:
        assert str(theirs(torch.tensor([1, -2])).dtype) == f"torch.{out.dtype}"


@pytest.mark.parametrize("name,call", [
    ("elu", lambda lib, x: lib.nn.functional.elu(x, 0.5, True)),
    ("hardtanh", lambda lib, x: lib.nn.functional.hardtanh(x, -0.5, 0.5, inplace=True)),
    ("silu", lambda lib, x: lib.nn.functional.silu(x, inplace=True)),
    ("leaky_relu", lambda lib, x: lib.nn.functional.leaky_relu(x, 0.2, True)),
    ("relu", lambda lib, x: lib.nn.functional.relu(x, inplace=True)),
    ("ReLU", lambda lib, x: lib.nn.ReLU(inplace=True)(x)),
    ("LeakyReLU", lambda lib, x: lib.nn.LeakyReLU(0.1, inplace=True)(x)),
])
def test_inplace_activations_write_into_the_input_as_torch(name, call):
    torch = pytest.importorskip("torch")
    values = np.array([-2.0, -0.25, 0.0, 0.75, 3.0], dtype=np.float32)
    grads = []
    for lib in (ta, torch):
        leaf = lib.tensor(values, requires_grad=True)
        x = leaf * 1
        out = call(lib, x)
        assert out is x, name                            # the input itself, overwritten
        (out * lib.tensor(values)).sum().backward()
        grads.append((np.array(x.detach().numpy()), leaf.grad.numpy().copy()))
    np.testing.assert_allclose(grads[0][0], grads[1][0], rtol=1e-6)
    np.testing.assert_allclose(grads[0][1], grads[1][1], rtol=1e-6)
    kept = ta.tensor(values)                             # negative control: out of place
    F.elu(kept)
    np.testing.assert_array_equal(kept.numpy(), values)


def test_activations_refuse_bad_bounds():
    with pytest.raises(ValueError, match=r"min_val \(1.0\) must not exceed max_val \(0.0\)"):
        F.hardtanh(ta.zeros(2), 1.0, 0.0)


NORMALIZE = [
    ("default", {}),
    ("p1_dim0", {"p": 1, "dim": 0}),
    ("p3_last", {"p": 3.0, "dim": -1}),
    ("big_eps", {"eps": 10.0}),
    ("inf", {"p": inf, "dim": 1}),
]


@pytest.mark.parametrize("name,kwargs", NORMALIZE, ids=[n[0] for n in NORMALIZE])
def test_normalize_matches_torch(name, kwargs):
    x = randn(3, 4)
    x[1] = [1e-14, 0.0, -1e-14, 0.0]                 # a norm below eps
    compare(lambda t: F.normalize(t, **kwargs), lambda t: TF.normalize(t, **kwargs), x)


def test_normalize_errors():
    with pytest.raises(TypeError, match="must be a floating-point tensor, got int64"):
        F.normalize(ta.tensor([3, 4]), dim=0)
    with pytest.raises(IndexError, match="out of range for a 0-d tensor"):
        F.normalize(ta.tensor(3.0))                 # dim=1 on a 0-d tensor, as torch
    assert F.normalize(ta.tensor(-3.0), dim=0).item() == -1.0     # one element along dim 0


@pytest.mark.parametrize("shapes,dim", [(((3, 4), (3, 4)), 1), (((2, 3, 4), (4,)), -1),
                                        (((3, 1), (3, 4)), 1), (((2, 5), (2, 5)), 0)])
def test_cosine_similarity_matches_torch(shapes, dim):
    compare(lambda a, b: F.cosine_similarity(a, b, dim=dim),
            lambda a, b: TF.cosine_similarity(a, b, dim=dim), *[randn(*s) for s in shapes])


def test_cosine_similarity_below_eps_matches_torch_values_and_gradients():
    a = np.array([[1e-9, 0.0], [1.0, 2.0], [0.0, 0.0]])
    b = np.array([[1.0, 1.0], [2.0, 1.0], [1.0, -1.0]])
    compare(F.cosine_similarity, TF.cosine_similarity, a, b)
    compare(lambda x, y: F.cosine_similarity(x, y, eps=0.5),
            lambda x, y: TF.cosine_similarity(x, y, eps=0.5), a, b)


def test_cosine_similarity_errors():
    with pytest.raises(RuntimeError, match=r"shapes \(3,\) and \(4,\) do not broadcast"):
        F.cosine_similarity(ta.zeros(3), ta.zeros(4), dim=0)
    with pytest.raises(IndexError, match="dim 2 is out of range for 2-d inputs"):
        F.cosine_similarity(ta.zeros(2, 3), ta.zeros(2, 3), dim=2)


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("beta", [1.0, 0.4, 0.0])
def test_smooth_l1_and_huber_match_torch(reduction, beta):
    x = randn(4, 5) * 2
    y = x + np.array([0.0, 0.4, -0.4, 1.0, -1.0])      # |d| exactly at the kinks too
    compare(lambda a, b: F.smooth_l1_loss(a, b, reduction=reduction, beta=beta),
            lambda a, b: TF.smooth_l1_loss(a, b, reduction=reduction, beta=beta), x, y)
    delta = beta or 2.0
    compare(lambda a, b: F.huber_loss(a, b, reduction=reduction, delta=delta),
            lambda a, b: TF.huber_loss(a, b, reduction=reduction, delta=delta), x, y)


def test_robust_loss_errors():
    with pytest.raises(ValueError, match="beta must be >= 0, got -1"):
        F.smooth_l1_loss(ta.zeros(2), ta.zeros(2), beta=-1)
    with pytest.raises(RuntimeError, match="delta must be > 0, got 0"):
        F.huber_loss(ta.zeros(2), ta.zeros(2), delta=0)
    with pytest.raises(ValueError, match="reduction must be one of 'mean', 'sum', 'none'"):
        F.huber_loss(ta.zeros(2), ta.zeros(2), reduction="avg")
    with pytest.raises(RuntimeError, match=r"tensor a \(2\) must match the size of tensor b "
                       r"\(3\).*shapes \(2,\) and \(3,\) do not broadcast"):
        F.smooth_l1_loss(ta.zeros(2), ta.zeros(3))


@pytest.mark.parametrize("reduction", ["batchmean", "sum", "none", "mean"])
@pytest.mark.parametrize("log_target", [False, True])
def test_kl_div_matches_torch(reduction, log_target):
    logp = np.log(rng.dirichlet(np.ones(5), size=4))
    q = rng.dirichlet(np.ones(5), size=4)
    q[0, 1] = 0.0                                     # 0 log 0 = 0; its gradient is NaN
    with warnings.catch_warnings(), np.errstate(divide="ignore"):
        warnings.simplefilter("ignore")
        target = np.log(q) if log_target else q
        compare(lambda x, t: F.kl_div(x, t, reduction=reduction, log_target=log_target),
                lambda x, t: TF.kl_div(x, t, reduction=reduction, log_target=log_target),
                logp, target)


def test_kl_div_mean_warns_and_bad_reduction_is_refused():
    with pytest.warns(UserWarning, match="'batchmean' divides only by the batch size"):
        F.kl_div(ta.zeros(2, 3), ta.ones(2, 3) / 3)
    with pytest.raises(ValueError, match="'batchmean', got 'batch'"):
        F.kl_div(ta.zeros(2, 3), ta.ones(2, 3), reduction="batch")


# ------------------------------------------------------------------ register_hook
def _hook_run(lib, double_leaf=True):
    """The same program in either library: hooks on a leaf (seen once, summed over two
    paths) and on an intermediate (replacing its gradient), plus retain_grad."""
    seen = []
    x = lib.tensor([1.0, -2.0, 3.0], requires_grad=True)
    if double_leaf:
        x.register_hook(lambda g: seen.append(g.tolist()) or g * 2)
    h = x * x
    h.retain_grad()
    h.register_hook(lambda g: g + 1)
    h.register_hook(lambda g: seen.append(g.tolist()))      # None: gradient unchanged
    (h.sum() + (x * 3).sum()).backward()
    return x.grad.tolist(), h.grad.tolist(), seen


def test_register_hook_matches_torch():
    assert _hook_run(ta) == _hook_run(torch)
    assert _hook_run(ta, False) == _hook_run(torch, False)


def test_register_hook_remove_and_autograd_grad():
    x = ta.tensor([1.0, 2.0], requires_grad=True)
    handle = x.register_hook(lambda g: g * 10)
    (g,) = ta.autograd.grad((x * x).sum(), [x])
    np.testing.assert_array_equal(g.numpy(), [20.0, 40.0])     # hooks run for grad() too
    handle.remove()
    handle.remove()                                            # twice is harmless
    (x * x).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [2.0, 4.0])


def test_register_hook_errors():
    with pytest.raises(RuntimeError, match="doesn't require gradient"):
        ta.tensor([1.0]).register_hook(lambda g: g)
    x = ta.tensor([1.0, 2.0], requires_grad=True)
    x.register_hook(lambda g: 3)
    with pytest.raises(TypeError, match="returned a int; a hook returns None or a Tensor"):
        (x * 2).sum().backward()
    y = ta.tensor([1.0, 2.0], requires_grad=True)
    y.register_hook(lambda g: g.sum())
    with pytest.raises(RuntimeError, match=r"gradient of shape \(\) for a tensor of shape"):
        (y * 2).sum().backward()
    with pytest.raises(TypeError, match="expected a function"):
        y.register_hook(3)


def test_the_hook_comparison_can_fail():
    """Negative control: a hook that runs once per path (not on the sum) would see two
    gradients where torch sees one; the comparison above distinguishes the two."""
    ours = _hook_run(ta)
    per_path = (ours[0], ours[1], [ours[2][0], [3.0, 3.0, 3.0], ours[2][1]])
    assert per_path != _hook_run(torch)


def test_autograd_grad_runs_hooks_only_on_its_way_to_the_asked_for_tensors():
    def run(lib):
        seen = []
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        y = lib.tensor([3.0, 4.0], requires_grad=True)
        x.register_hook(lambda g: seen.append("x"))
        h = x * y
        h.register_hook(lambda g: seen.append("h"))
        (gy,) = lib.autograd.grad(h.sum(), [y])
        return seen, gy.tolist(), x.grad
    assert run(ta) == run(torch) == (["h"], [1.0, 2.0], None)


def test_autograd_grad_skips_hooks_on_a_branch_that_leads_elsewhere():
    """u = w * 3 feeds the output but w was not asked for: torch never runs u's node, so
    u's hook stays silent; y's (on the way to x) runs."""
    def run(lib):
        seen = []
        x = lib.tensor([1.0, 1.0], requires_grad=True)
        w = lib.tensor([1.0, 1.0], requires_grad=True)
        y, u = x * 2, w * 3
        u.register_hook(lambda g: seen.append("u"))
        y.register_hook(lambda g: seen.append("y"))
        (gx,) = lib.autograd.grad((y * y).sum() + (u * y).sum(), x)
        return seen, gx.tolist()
    assert run(ta) == run(torch) == (["y"], [14.0, 14.0])
