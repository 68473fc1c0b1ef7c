"""Edge cases of the op-coverage ops, against PyTorch where it has an answer: ties, NaN, inf,
empty and 0-d tensors, views and in-place writes, integer inputs, and the errors a learner
gets for bad arguments. Negative controls show the checks catch planted bugs."""
import importlib
import math
import warnings

import numpy as np
import pytest

import tinyattn as ta
import tinyattn.functional as F
from tinyattn.ops.reduce import Prod

einsum_module = importlib.import_module("tinyattn.ops.einsum")   # the module, not the function

torch = pytest.importorskip("torch")
TF = torch.nn.functional
inf, nan = math.inf, math.nan


def _both(values, dtype=np.float64):
    a = np.asarray(values, dtype=dtype)
    grad = a.dtype.kind == "f"
    return ta.tensor(a, requires_grad=grad), torch.tensor(a, requires_grad=grad)


def _same(ours, theirs, upstream=None):
    """Outputs equal (NaN == NaN), then the gradients of one backward equal too."""
    o = ours[0] if isinstance(ours, tuple) else ours
    t = theirs[0] if isinstance(theirs, tuple) else theirs
    np.testing.assert_allclose(o.numpy(), t.detach().numpy(), rtol=1e-12, atol=1e-12)
    return o, t


def _grads_equal(ours_out, theirs_out, ours_in, theirs_in):
    g = np.ones(ours_out.shape)
    ours_out.backward(g)
    theirs_out.backward(torch.tensor(g))
    for a, b in zip(ours_in, theirs_in):
        np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=1e-12, atol=1e-12)


# ------------------------------------------------------------------ ties
def test_min_with_dim_sends_ties_to_the_index_as_torch_and_amin_splits_them():
    x = ta.tensor([3.0, 1.0, 1.0, 2.0], dtype="float64", requires_grad=True)
    values, index = x.min(0)
    values.backward()
    t = torch.tensor([3.0, 1.0, 1.0, 2.0], requires_grad=True)
    t.min(0).values.backward()
    np.testing.assert_array_equal(x.grad.numpy(), t.grad.numpy())       # [0, 1, 0, 0]
    assert index.item() == 1
    x.grad = None
    x.amin().backward()                               # docs/derivations.md#max
    np.testing.assert_array_equal(x.grad.numpy(), [0, 0.5, 0.5, 0])
    t.grad = None
    t.amin().backward()
    np.testing.assert_array_equal(x.grad.numpy(), t.grad.numpy())       # as torch.amin


def test_sort_and_topk_break_ties_like_torch_stable():
    data = [2.0, 1.0, 2.0, 1.0, 3.0, 2.0]
    ours, theirs = ta.tensor(data), torch.tensor(data)
    for descending in (False, True):
        o, t = ours.sort(descending=descending), theirs.sort(descending=descending, stable=True)
        np.testing.assert_array_equal(o.indices.numpy(), t.indices.numpy())
    for largest in (True, False):               # torch's CPU order of tied indices (its
        o, t = ours.topk(3, largest=largest), theirs.topk(3, largest=largest)  # nth_element)
        np.testing.assert_array_equal(o.values.numpy(), t.values.numpy())
        np.testing.assert_array_equal(o.indices.numpy(), t.indices.numpy())
    np.testing.assert_array_equal(ours.topk(3).indices.numpy(), [4, 2, 0])   # not the stable


def test_inf_norm_splits_ties_like_torch():
    (x, xt) = _both([0.0, -3.0, 3.0, 1.0])
    _grads_equal(*_same(x.norm(p=inf), xt.norm(p=inf)), [x], [xt])


def test_argmax_argmin_take_the_first_tie_like_torch():
    data = [[1.0, 3.0, 3.0], [0.0, 0.0, -1.0]]
    for name in ("argmax", "argmin"):
        for kwargs in ({}, {"dim": 1}, {"dim": 0, "keepdim": True}):
            o = getattr(ta.tensor(data), name)(**kwargs)
            t = getattr(torch.tensor(data), name)(**kwargs)
            assert o.dtype == np.int64
            np.testing.assert_array_equal(o.numpy(), t.numpy())


# ------------------------------------------------------------------ NaN and inf
def test_sort_topk_argmax_place_nan_like_torch():
    data = [3.0, nan, 1.0, nan, 2.0]
    for descending in (False, True):
        o = ta.tensor(data).sort(descending=descending)
        t = torch.tensor(data).sort(descending=descending, stable=True)
        np.testing.assert_array_equal(o.values.numpy(), t.values.numpy())
        np.testing.assert_array_equal(o.indices.numpy(), t.indices.numpy())
    for largest in (True, False):
        o = ta.tensor(data).topk(2, largest=largest)
        t = torch.tensor(data).topk(2, largest=largest)
        np.testing.assert_array_equal(o.indices.numpy(), t.indices.numpy())
    assert ta.tensor(data).argmax().item() == torch.tensor(data).argmax().item() == 1
    assert ta.tensor(data).argmin().item() == torch.tensor(data).argmin().item() == 1


def test_maximum_minimum_abs_clamp_with_nan_match_torch_values_and_gradients():
    for ours_fn, torch_fn in [(ta.maximum, torch.maximum), (ta.minimum, torch.minimum)]:
        (a, at), (b, bt) = _both([1.0, nan, nan, 2.0]), _both([nan, 1.0, nan, 2.0])
        _grads_equal(*_same(ours_fn(a, b), torch_fn(at, bt)), [a, b], [at, bt])
    for op in (lambda t: t.abs(), lambda t: t.clamp(0.0, 1.0), lambda t: t.sigmoid()):
        x, xt = _both([nan, -0.0, 0.5, 2.0])
        _grads_equal(*_same(op(x), op(xt)), [x], [xt])


def test_logsumexp_with_infinities_matches_torch_including_nan_gradients():
    x, xt = _both([[-inf, -inf], [1.0, inf], [1.0, 2.0], [-inf, 0.0]])
    _grads_equal(*_same(x.logsumexp(1), xt.logsumexp(1)), [x], [xt])


@pytest.mark.parametrize("value", [-1000.0, -30.0, 0.0, 30.0, 1000.0])
def test_activations_and_bce_with_logits_stay_finite_at_extremes(value):
    x, xt = _both([value])
    for ours_fn, torch_fn in [(ta.sigmoid, torch.sigmoid), (F.silu, TF.silu),
                              (F.softplus, TF.softplus)]:
        x.grad, xt.grad = None, None
        _grads_equal(*_same(ours_fn(x), torch_fn(xt)), [x], [xt])
    for target in (0.0, 1.0):
        x.grad, xt.grad = None, None
        ours = F.binary_cross_entropy_with_logits(x, ta.tensor([target], dtype="float64"))
        theirs = TF.binary_cross_entropy_with_logits(xt, torch.tensor([target],
                                                                      dtype=torch.float64))
        assert np.isfinite(ours.item())
        _grads_equal(*_same(ours, theirs), [x], [xt])


def test_rsqrt_at_zero_and_bce_at_the_edges_match_torch():
    x, xt = _both([0.0, 4.0])
    _grads_equal(*_same(ta.rsqrt(x), torch.rsqrt(xt)), [x], [xt])
    (p, pt), (y, yt) = _both([0.0, 0.3, 1.0, 0.999]), _both([0.0, 1.0, 0.5, 1.0])
    ours, theirs = (F.binary_cross_entropy(p, y, reduction="none"),
                    TF.binary_cross_entropy(pt, yt, reduction="none"))
    _grads_equal(*_same(ours, theirs), [p, y], [pt, yt])


# ------------------------------------------------------------------ empty and 0-d
def test_reductions_of_empty_tensors_match_torch():
    cases = [lambda t: t.prod(), lambda t: t.norm(), lambda t: t.sum(1), lambda t: t.cumsum(0),
             lambda t: t.logsumexp(0), lambda t: t.sort(0).values, lambda t: t.topk(0).values,
             lambda t: t.norm(dim=0), lambda t: t.prod(0)]
    for op in cases:
        x, xt = _both(np.zeros((0, 3)))
        _same(op(x), op(xt))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for op in (lambda t: t.var(), lambda t: t.std(0)):
            x, xt = _both(np.zeros((0, 3)))
            _same(op(x), op(xt))
    assert math.isnan(F.mse_loss(ta.zeros(0), ta.zeros(0)).item())
    assert F.mse_loss(ta.zeros(0), ta.zeros(0), reduction="sum").item() == 0.0


def test_max_min_argmax_of_nothing_raise_clearly():
    # torch's error types: RuntimeError for the whole tensor, IndexError for a named dim (and
    # for argmax without one)
    for op, error in ((lambda t: t.amax(), RuntimeError), (lambda t: t.max(1), IndexError),
                      (lambda t: t.min(), RuntimeError), (lambda t: t.argmax(), IndexError),
                      (lambda t: t.argmin(1), IndexError),
                      (lambda t: t.norm(p=inf), RuntimeError)):
        with pytest.raises(error, match="empty"):
            op(ta.zeros(2, 0))


def test_zero_d_tensors_match_torch():
    ops = [lambda t: t.var(correction=0), lambda t: t.std(0, correction=0),
           lambda t: t.logsumexp(0), lambda t: t.norm(), lambda t: t.prod(0),
           lambda t: t.cumsum(0), lambda t: t.sort().values, lambda t: t.topk(1).values,
           lambda t: t.flip(0), lambda t: t.expand(2, 2), lambda t: t.repeat(3),
           lambda t: t.sigmoid(), lambda t: t.amin(0), lambda t: t.max(0).values,
           lambda t: ta.maximum(t, t * 2) if isinstance(t, ta.Tensor) else torch.maximum(t, t * 2)]
    for op in ops:
        x, xt = _both(1.5)
        _grads_equal(*_same(op(x), op(xt)), [x], [xt])
    assert ta.tensor(5.0).argmax(0).item() == 0 and ta.tensor(5.0).sort().indices.item() == 0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert math.isnan(ta.tensor(3.0).var().item())   # N = 1, correction 1: as torch


def test_var_warns_when_degrees_of_freedom_are_gone():
    with pytest.warns(UserWarning, match="degrees of freedom"):     # torch's category
        out = ta.tensor([1.0]).var()
    assert math.isnan(out.item())


# ------------------------------------------------------------------ views and in-place
def test_expand_shares_memory_and_refuses_in_place_writes():
    base = ta.zeros(3)
    wide = base.expand(2, 3)
    with ta.no_grad():
        base.add_(1.0)
    np.testing.assert_array_equal(wide.numpy(), np.ones((2, 3)))   # a view: sees the change
    for write in (lambda: wide.add_(1.0), lambda: wide.__setitem__(0, 2.0), wide.zero_):
        with pytest.raises(RuntimeError, match="read-only.*clone"):
            write()
    recorded = (ta.zeros(3, requires_grad=True) * 1.0).expand(2, 3)
    with pytest.raises(RuntimeError, match="read-only.*clone"):   # torch: "... clone()"
        recorded.mul_(2.0)
    same = ta.zeros(3).expand(3)               # nothing repeats: a writable view, as in torch
    same.add_(1.0)
    np.testing.assert_array_equal(same.numpy(), [1.0, 1.0, 1.0])


def test_view_matches_torch_on_which_layouts_can_be_viewed():
    x = np.arange(24.0).reshape(2, 3, 4)
    for make, shapes in [(lambda t: t[:, :, :2], [(2, 3, 2), (6, 2), (12,)]),
                         (lambda t: t.transpose(1, 2), [(2, 4, 3), (8, 3), (-1,)]),
                         (lambda t: t, [(4, 6), (24,)])]:
        for shape in shapes:
            try:
                expected = make(torch.tensor(x)).view(*shape).numpy()
            except RuntimeError:
                with pytest.raises(RuntimeError, match="reshape"):
                    make(ta.tensor(x)).view(*shape)
            else:
                np.testing.assert_array_equal(make(ta.tensor(x)).view(*shape).numpy(), expected)


def test_view_shares_memory_and_version_with_its_base():
    x = ta.zeros(2, 3)
    v = x.view(6)
    with ta.no_grad():
        v[0] = 5.0
    assert x[0, 0].item() == 5.0 and x._version == v._version == 1
    bits = x.view(ta.int32)                 # the same bytes as int32, as torch's view(dtype)
    assert bits[0, 0].item() == 1084227584 and bits._version == x._version


def test_contiguous_returns_self_or_a_differentiable_copy():
    x = ta.randn(3, 4, requires_grad=True)
    assert x.contiguous() is x
    y = x.transpose(0, 1)
    c = y.contiguous()
    assert c is not y and c._data.flags.c_contiguous
    c.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.ones((3, 4)))


def test_flip_returns_new_memory():
    x = ta.tensor([1.0, 2.0, 3.0])
    y = x.flip(0)
    y[0] = 10.0
    np.testing.assert_array_equal(x.numpy(), [1.0, 2.0, 3.0])


def test_T_warns_like_torch_for_tensors_that_are_not_2d():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert ta.randn(3, 4).T.shape == (4, 3) and ta.randn(3).T.shape == (3,)
    for x in (ta.randn(2, 3, 4), ta.tensor(1.0)):
        with pytest.warns(UserWarning, match="mT"):
            out = x.T
        assert out.shape == tuple(reversed(x.shape))


def test_saved_inputs_are_version_checked():
    """abs and einsum keep their inputs; changing one in place before backward must raise."""
    for op in (lambda t: t.abs(), lambda t: ta.einsum("ij,ij->", t, t),
               lambda t: ta.maximum(t, t * 0.5)):
        h = ta.randn(2, 3, requires_grad=True) * 1.0
        out = op(h)
        with ta.no_grad():
            h.mul_(2.0)
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            out.sum().backward()


# ------------------------------------------------------------------ dtypes
def test_integer_inputs_follow_torch():
    ints = [[1, -2], [3, 4]]
    for name, kwargs in [("cumsum", {"dim": 1}), ("prod", {}), ("abs", {}), ("sigmoid", {}),
                         ("rsqrt", {}), ("logsumexp", {"dim": 0}), ("argmax", {})]:
        for dtype in ("int32", "int64"):
            o = getattr(ta.tensor(ints, dtype=dtype), name)(**kwargs)
            t = getattr(torch.tensor(ints, dtype=getattr(torch, dtype)), name)(**kwargs)
            assert str(o.dtype) == str(t.dtype).replace("torch.", ""), (name, dtype)
            np.testing.assert_allclose(o.numpy(), t.numpy(), rtol=1e-6)
    with pytest.raises(TypeError, match="floating"):
        ta.tensor(ints).var()
    mixed = ta.einsum("ij,jk->ik", ta.tensor(ints), ta.randn(2, 2))
    assert mixed.dtype == np.float32


# ------------------------------------------------------------------ clear errors
@pytest.mark.parametrize("call,error,message", [
    (lambda: ta.randn(3, 1).expand(3), RuntimeError, "at least one size per dim"),
    (lambda: ta.randn(3, 1).expand(2, 4), RuntimeError, "only dims of size 1 can grow"),
    (lambda: ta.randn(3, 1).expand(-1, -1, 4), RuntimeError, "-1. isn't allowed in a leading"),
    (lambda: ta.randn(2, 3).repeat(2), ValueError, "at least one per dim"),
    (lambda: ta.randn(2, 3).repeat(-1, 2), ValueError, ">= 0"),
    (lambda: ta.randn(2, 3).flip((0, 0)), ValueError, "same dim twice"),
    (lambda: ta.randn(2, 3).flip(2), IndexError, "out of range"),
    (lambda: ta.randn(3).tril(), RuntimeError, "at least 2 dims"),
    (lambda: F.pad(ta.randn(2, 3), (1,)), ValueError, "pairs"),
    (lambda: F.pad(ta.randn(2, 3), (1, 1, 1, 1, 1, 1)), ValueError, "at most one pair"),
    (lambda: F.pad(ta.randn(2, 3), (-2, -2)), ValueError, "below zero"),
    (lambda: F.pad(ta.randn(2, 3), (1, 1), mode="wrap"), ValueError, "'circular'"),
    (lambda: F.pad(ta.randn(2, 3), (3, 0), mode="reflect"), ValueError, "at most 2"),
    (lambda: F.pad(ta.randn(3), (1, 1), mode="reflect"), ValueError, "2-D or 3-D"),
    (lambda: ta.einsum("ij,jk", ta.randn(2, 3)), ValueError, "2 operand"),
    (lambda: ta.einsum("ij", ta.randn(2, 3, 4)), ValueError, "3 dims"),
    (lambda: ta.einsum("i,i", ta.randn(2), ta.randn(3)), ValueError, "size 3"),
    (lambda: ta.einsum("i1", ta.randn(2, 2)), ValueError, "letters"),
    (lambda: ta.einsum("ij->jj", ta.randn(2, 2)), ValueError, "more than once"),
    (lambda: ta.einsum("ij->k", ta.randn(2, 2)), ValueError, "does not appear"),
    (lambda: ta.einsum("ii", ta.randn(2, 3)), ValueError, "different sizes"),
    (lambda: ta.einsum("i", [1.0, 2.0]), TypeError, "tensors"),
    (lambda: ta.bmm(ta.randn(3, 4), ta.randn(4, 5)), ValueError, "3-D"),
    (lambda: ta.bmm(ta.randn(2, 3, 4), ta.randn(3, 4, 5)), ValueError, "does not broadcast"),
    (lambda: ta.randn(2, 3, 4).t(), RuntimeError, "<= 2 dims"),
    (lambda: ta.randn(3).mT, RuntimeError, "at least 2 dims"),
    (lambda: ta.randn(2, 3).gather(1, ta.tensor([[0, 3]])), RuntimeError, "out of range"),
    (lambda: ta.randn(2, 3).gather(1, ta.tensor([0, 1])), RuntimeError, "same number"),
    (lambda: ta.randn(2, 3).gather(1, ta.tensor([[0.0]])), TypeError, "integer"),
    (lambda: F.one_hot(ta.tensor([0, 3]), 3), RuntimeError, "out of range"),
    (lambda: F.one_hot(ta.tensor([0, -1])), RuntimeError, "out of range"),
    (lambda: F.one_hot(ta.tensor([0.0])), TypeError, "integer"),
    (lambda: F.one_hot(ta.zeros(0, dtype="int64")), ValueError, "empty"),
    (lambda: F.nll_loss(ta.randn(3, 4), ta.tensor([0, 4, 1])), IndexError, "out of range"),
    (lambda: F.nll_loss(ta.randn(3, 4), ta.tensor([0, 1])), ValueError, "expected input"),
    (lambda: F.nll_loss(ta.randn(3, 4), ta.tensor([0.0, 1.0, 2.0])), RuntimeError, "integer"),
    (lambda: F.nll_loss(ta.randn(3, 4), ta.tensor([0, 1, 2]), weight=ta.ones(3)), RuntimeError,
     "one weight per class"),
    (lambda: F.binary_cross_entropy(ta.tensor([1.5]), ta.tensor([1.0])), ValueError,
     "between 0 and 1"),
    (lambda: F.binary_cross_entropy(ta.tensor([nan]), ta.tensor([1.0])), ValueError,
     "between 0 and 1"),
    (lambda: F.binary_cross_entropy(ta.tensor([0.5]), ta.tensor([2.0])), ValueError,
     "target"),
    (lambda: F.binary_cross_entropy_with_logits(ta.randn(3, 1), ta.rand(3)), ValueError,
     "same as input shape"),
    (lambda: F.binary_cross_entropy_with_logits(ta.randn(3), ta.tensor([1, 0, 1])),
     TypeError, "floating point"),
    (lambda: F.binary_cross_entropy_with_logits(ta.randn(3), ta.rand(3),
                                                weight=ta.ones(3, requires_grad=True)),
     ValueError, "detach"),
    (lambda: F.mse_loss(ta.randn(2), ta.randn(3)), RuntimeError, "do not broadcast"),
    (lambda: F.l1_loss(ta.randn(2), ta.randn(2), reduction="avg"), ValueError, "reduction"),
    (lambda: ta.randn(2, 3, 4).norm(p="nuc"), RuntimeError, "dim must be a 2-tuple"),
    (lambda: ta.randn(2, 3).norm(p="abc"), ValueError, "'fro' or 'nuc'"),
    (lambda: ta.randn(2).var(unbiased=True, correction=1), ValueError, "not both"),
    (lambda: ta.randn(2).topk(3), ValueError, "from 0 to 2"),
    (lambda: ta.randn(2).cumsum((0,)), TypeError, "one int"),
    (lambda: ta.randn(2).max(dim=(0,)), TypeError, "one int dim"),
    (lambda: F.softplus(ta.randn(2), beta=0), ValueError, "non-zero"),
    (lambda: F.silu(ta.randn(2, requires_grad=True), inplace=True), RuntimeError,
     "silu_: a leaf tensor that requires grad"),
])
def test_bad_arguments_get_clear_errors(call, error, message):
    with pytest.raises(error, match=message):
        call()


def test_every_new_method_and_functional_name_is_also_torchs():
    methods = ["abs", "sigmoid", "rsqrt", "maximum", "minimum", "min", "amin", "argmin",
               "argmax", "sort", "topk", "gather", "var", "std", "logsumexp", "norm", "prod",
               "cumsum", "expand", "expand_as", "repeat", "flip", "tril", "triu", "T", "mT",
               "t", "contiguous", "view", "type_as", "bmm", "new_zeros", "new_ones",
               "new_full", "new_empty", "new_tensor", "clone", "clamp", "clip", "numel"]
    for name in methods:
        assert hasattr(ta.Tensor, name) and hasattr(torch.Tensor, name), name
    for name in F.__all__:
        if name not in ("rope", "masked_fill", "where",   # tinyattn's F has these, torch's not
                        "local_attention", "performer_attention"):
            assert hasattr(TF, name), name
    for name in ("einsum", "bmm", "logsumexp", "tril", "triu", "flip", "where", "maximum",
                 "cumsum", "multinomial", "randint", "linspace", "eye", "full_like"):
        assert hasattr(ta, name) and hasattr(torch, name), name


# ------------------------------------------------------------------ negative controls
def test_negative_control_gradcheck_catches_a_missing_einsum_diagonal(monkeypatch):
    x = ta.tensor(np.random.default_rng(0).standard_normal((3, 3)), requires_grad=True)
    assert ta.gradcheck(lambda t: ta.einsum("ii->i", t) * 2.0, [x])

    def no_diagonal(part, target, distinct, subs, shape, dtype):   # forget repeated letters
        return einsum_module.backend.get_array_module(part).broadcast_to(
            part.reshape(-1, 1), shape) if len(distinct) < len(subs) else part
    monkeypatch.setattr(einsum_module, "_place", no_diagonal)
    assert not ta.gradcheck(lambda t: ta.einsum("ii->i", t) * 2.0, [x],
                            raise_exception=False)


def test_negative_control_the_naive_prod_gradient_fails_at_zeros(monkeypatch):
    x = ta.tensor([[2.0, 0.0, 3.0], [1.0, 2.0, 4.0]], dtype="float64", requires_grad=True)
    assert ta.gradcheck(lambda t: t.prod(1), [x])

    def naive(self, grad):                      # out / x: 0 / 0 at the zero
        x_saved, axis, keepdim = self.saved
        out = x_saved.prod(axis=axis, keepdims=True)
        g = grad if keepdim else np.expand_dims(grad, axis)
        return g * out / x_saved
    monkeypatch.setattr(Prod, "backward", naive)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert not ta.gradcheck(lambda t: t.prod(1), [x], raise_exception=False)


def test_dtype_conversion_methods_match_torch_and_float_ones_are_differentiable():
    data = [[1.7, -2.2], [0.0, 3.5]]
    for name in ("float", "double", "half", "int", "long", "bool"):
        o, t = getattr(ta.tensor(data), name)(), getattr(torch.tensor(data), name)()
        assert str(o.dtype) == str(t.dtype).replace("torch.", ""), name
        np.testing.assert_array_equal(o.numpy(), t.numpy())
    x = ta.tensor(data, requires_grad=True)
    (x.double() * 3.0).float().sum().backward()
    assert x.grad.dtype == np.float32
    np.testing.assert_array_equal(x.grad.numpy(), np.full((2, 2), 3.0))


def test_a_gradient_is_a_tensor_with_a_norm():
    w = ta.tensor([[3.0, 4.0], [0.0, 0.0]], requires_grad=True)
    (w * w).sum().backward()
    assert w.grad.norm().item() == pytest.approx(10.0)       # |2w| = 2 * 5
    assert w.grad.norm(p=1).item() == pytest.approx(14.0)
    assert w.grad.abs().max().item() == pytest.approx(8.0)


def test_clamp_in_place_while_recording_differentiates_like_torch():
    x, xt = _both([[-1.0, 0.2, 3.0], [0.5, -0.1, 0.9]])
    h, ht = x * 2.0, xt * 2.0
    h.clamp_(-0.5, 1.0)
    ht.clamp_(-0.5, 1.0)
    _grads_equal(*_same(h * h, ht * ht), [x], [xt])
    with pytest.raises(RuntimeError, match="leaf"):
        x.clamp_(0.0, 1.0)                 # a parameter, while recording: refused as in torch
