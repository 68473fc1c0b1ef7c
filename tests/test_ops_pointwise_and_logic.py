"""Pointwise and rounding ops, comparisons and logic against torch, with their dtype rules and
edge cases (NaN, inf, empty, 0-d, integer and bool tensors) and the errors a learner gets.
Shape, product and functional ops are in test_ops_shape_products_losses.py. Negative controls
show the comparisons catch planted bugs."""
import math

import numpy as np
import pytest

import tinyattn as ta

torch = pytest.importorskip("torch")
inf, nan = math.inf, math.nan
TORCH_DTYPES = {"float32": torch.float32, "float64": torch.float64, "int64": torch.int64,
                "int32": torch.int32, "uint8": torch.uint8, "bool": torch.bool}


def compare(ours_fn, torch_fn, *arrays, grad=True, seed=0):
    """Both libraries on the same inputs: outputs equal (NaN == NaN, same dtype and shape),
    then one backward of the same random upstream gradient and every input gradient equal."""
    arrays = [np.asarray(a) for a in arrays]
    needs = [grad and a.dtype.kind == "f" for a in arrays]
    ours = [ta.tensor(a, requires_grad=n) for a, n in zip(arrays, needs)]
    theirs = [torch.tensor(a, requires_grad=n) for a, n in zip(arrays, needs)]
    out, ref = ours_fn(*ours), torch_fn(*theirs)
    assert out.shape == tuple(ref.shape), f"shape {out.shape} vs torch {tuple(ref.shape)}"
    assert str(out.dtype) == str(ref.dtype).replace("torch.", ""), (out.dtype, ref.dtype)
    np.testing.assert_allclose(out.numpy(), ref.detach().numpy(), rtol=1e-12, atol=1e-12)
    assert out.requires_grad == ref.requires_grad
    if not ref.requires_grad:
        return ours
    upstream = np.random.default_rng(seed).standard_normal(out.shape)
    out.backward(upstream)
    ref.backward(torch.tensor(upstream))
    for i, (o, t) in enumerate(zip(ours, theirs)):
        if t.requires_grad:
            want = np.zeros(o.shape) if t.grad is None else t.grad.numpy(force=True)
            got = np.zeros(o.shape) if o.grad is None else o.grad.numpy()
            np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12,
                                       err_msg=f"gradient of input {i}")
    return ours


SPECIAL = np.array([-2.5, -1.5, -0.5, -0.0, 0.0, 0.5, 1.5, 2.5, 0.25, -3.7, 1e-10, -1e-10,
                    1e300, inf, -inf, nan])

UNARY = ["square", "reciprocal", "log1p", "expm1", "sign", "sgn", "floor", "ceil", "round",
         "trunc", "nan_to_num", "isnan", "isinf", "isfinite"]


@pytest.mark.parametrize("name", UNARY)
def test_unary_matches_torch_on_special_values_with_gradients(name):
    with np.errstate(all="ignore"):
        compare(getattr(ta, name), getattr(torch, name), SPECIAL)
        compare(lambda x: getattr(x, name)(), lambda x: getattr(x, name)(),
                np.random.default_rng(1).standard_normal((3, 4)) * 3)


@pytest.mark.parametrize("name", UNARY)
@pytest.mark.parametrize("dtype", ["int64", "int32", "uint8", "bool", "float32"])
def test_unary_dtype_rules_match_torch(name, dtype):
    values = np.array([0, 1, 3, 2, 0, 1]).astype(dtype)
    try:
        expected = getattr(torch, name)(torch.tensor(values))
    except (RuntimeError, TypeError):
        with pytest.raises(TypeError, match=name):
            getattr(ta, name)(ta.tensor(values))
        return
    with np.errstate(divide="ignore"):
        out = getattr(ta, name)(ta.tensor(values))
    assert str(out.dtype) == str(expected.dtype).replace("torch.", "")
    np.testing.assert_array_equal(out.numpy(), expected.numpy())


@pytest.mark.parametrize("name", UNARY)
def test_unary_on_empty_and_zero_d_tensors(name):
    for values in (np.zeros((0, 3)), np.array(2.5), np.array(-0.5)):
        with np.errstate(all="ignore"):
            compare(getattr(ta, name), getattr(torch, name), values)


@pytest.mark.parametrize("decimals", [0, 1, 2, 3, -1, -2])
def test_round_decimals_matches_torch_halves_to_even(decimals):
    x = np.array([0.5, 1.5, 2.5, -0.5, 2.675, 1.005, 1234.5, 15.0, 25.0, -35.0, 0.125, 1e-3])
    compare(lambda t: ta.round(t, decimals=decimals), lambda t: torch.round(t, decimals=decimals),
            x)
    compare(lambda t: t.round(decimals=decimals), lambda t: t.round(decimals=decimals),
            x.astype(np.float32), grad=False)


def test_round_decimals_refuses_integers_and_non_ints():
    with pytest.raises(TypeError, match="decimals=1 is not supported for int64"):
        ta.round(ta.tensor([15, 25]), decimals=1)
    with pytest.raises(TypeError, match="decimals must be an int, got 1.5"):
        ta.round(ta.tensor([1.0]), decimals=1.5)


@pytest.mark.parametrize("kwargs", [{}, {"nan": 2.0}, {"posinf": 9.0, "neginf": -9.0},
                                    {"nan": -1.0, "posinf": 1e3}])
def test_nan_to_num_options_and_gradient(kwargs):
    x = np.array([nan, inf, -inf, 1.5, -2.0])
    compare(lambda t: ta.nan_to_num(t, **kwargs), lambda t: torch.nan_to_num(t, **kwargs), x)
    compare(lambda t: t.nan_to_num(**kwargs), lambda t: t.nan_to_num(**kwargs),
            x.astype(np.float32))


def test_nan_to_num_refuses_a_non_number():
    # torch's parser's words ("(position 2)" when nan is given by position)
    with pytest.raises(TypeError, match=r"argument 'nan'( \(position 2\))? must be float, not str"):
        ta.nan_to_num(ta.tensor([nan]), nan="zero")


def test_step_functions_pass_zero_gradient_like_torch():
    x = ta.tensor([1.5, -2.3, 0.0], requires_grad=True)
    for name in ("sign", "floor", "ceil", "round", "trunc"):
        y = getattr(x, name)()
        assert y.requires_grad
        (y * 3.0).sum().backward()
        np.testing.assert_array_equal(x.grad.numpy(), [0, 0, 0])


def test_log1p_and_expm1_stay_accurate_for_tiny_inputs():
    tiny = np.array([1e-10, -1e-12], dtype=np.float32)
    np.testing.assert_allclose(ta.log1p(ta.tensor(tiny)).numpy(), tiny, rtol=1e-6)
    np.testing.assert_allclose(ta.expm1(ta.tensor(tiny)).numpy(), tiny, rtol=1e-6)


# ------------------------------------------------------------------ comparisons and logic
COMPARE = ["eq", "ne", "lt", "le", "gt", "ge", "logical_and", "logical_or", "logical_xor"]


@pytest.mark.parametrize("name", COMPARE)
def test_comparisons_match_torch_with_tensors_scalars_and_broadcasting(name):
    a = np.array([[1.0, nan, 2.0], [0.0, -1.0, inf]])
    b = np.array([1.0, nan, 3.0])
    compare(getattr(ta, name), getattr(torch, name), a, b, grad=False)
    if name.startswith("logical"):      # torch takes a tensor only there; so does tinyattn
        with pytest.raises(TypeError, match=f"{name}: other must be a Tensor"):
            getattr(ta, name)(ta.tensor(a), 2.0)
    else:
        compare(lambda x: getattr(x, name)(2.0), lambda x: getattr(x, name)(2.0), a,
                grad=False)
    compare(getattr(ta, name), getattr(torch, name), np.array([0, 2, 3]),
            np.array([0.0, 2.0, 1.5]), grad=False)
    compare(getattr(ta, name), getattr(torch, name), np.zeros((0, 3)), b, grad=False)


@pytest.mark.parametrize("name", COMPARE)
def test_comparisons_name_the_shapes_that_do_not_broadcast(name):
    with pytest.raises(RuntimeError, match=rf"{name}: shapes \(2,\) and \(3,\) do not broadcast"):
        getattr(ta, name)(ta.tensor([1, 2]), ta.tensor([1, 2, 3]))
    with pytest.raises(TypeError, match=f"{name}: .*, got str"):
        getattr(ta, name)(ta.tensor([1, 2]), "2")


def test_logical_not_and_method_forms():
    for values in ([0.0, 2.0, nan], [0, 3], [True, False]):
        compare(ta.logical_not, torch.logical_not, np.array(values), grad=False)
    compare(lambda x: x.logical_and(x > 0), lambda x: x.logical_and(x > 0),
            np.array([-1.0, 0.0, 2.0]), grad=False)


def test_isclose_matches_torch():
    a = np.array([1.0, 1.0 + 1e-6, nan, inf, -inf, 0.0, 1e-9])
    b = np.array([1.0, 1.0, nan, inf, inf, 1e-9, 0.0])
    for kwargs in ({}, {"equal_nan": True}, {"rtol": 0.0, "atol": 1e-8}, {"rtol": 1e-7}):
        compare(lambda x, y: ta.isclose(x, y, **kwargs),
                lambda x, y: torch.isclose(x, y, **kwargs), a, b, grad=False)
    with pytest.raises(TypeError, match="different dtypes \\(int64 and float32\\)"):
        ta.isclose(ta.tensor([1]), ta.tensor([1.0]))


def test_count_nonzero_and_nonzero_match_torch():
    x = np.array([[0.0, 1.5, 0.0], [nan, 0.0, -2.0]])
    for dim in (None, 0, 1, -1, (0, 1)):
        compare(lambda t: ta.count_nonzero(t, dim=dim),
                lambda t: torch.count_nonzero(t, dim=dim), x, grad=False)
    for values in (x, np.array([0, 3, 0, 4]), np.array(2.0), np.array(0.0), np.zeros((0, 2)),
                   np.zeros((2, 3), dtype=bool)):
        compare(ta.nonzero, torch.nonzero, values, grad=False)
        ours = ta.nonzero(ta.tensor(values), as_tuple=True)
        theirs = torch.nonzero(torch.tensor(values), as_tuple=True)
        assert len(ours) == len(theirs)
        for o, t in zip(ours, theirs):
            assert o.dtype == np.int64
            np.testing.assert_array_equal(o.numpy(), t.numpy())


def test_nonzero_as_tuple_indexes_the_tensor():
    x = ta.tensor([[0.0, 1.5], [2.0, 0.0]])
    np.testing.assert_array_equal(x[x.nonzero(as_tuple=True)].numpy(), [1.5, 2.0])


@pytest.mark.parametrize("descending", [False, True])
@pytest.mark.parametrize("dim", [0, 1, -1])
def test_argsort_matches_torch_stable_with_ties_and_nan(descending, dim):
    x = np.array([[2.0, 1.0, 2.0, nan], [1.0, 1.0, 0.0, -inf], [3.0, 3.0, 3.0, 3.0]])
    compare(lambda t: ta.argsort(t, dim, descending=descending),
            lambda t: torch.argsort(t, dim=dim, descending=descending, stable=True), x,
            grad=False)
    compare(lambda t: t.argsort(dim=dim, descending=descending, stable=True),
            lambda t: t.argsort(dim=dim, descending=descending, stable=True),
            np.array([[3, 1, 2, 1], [0, 0, 5, 5], [1, 2, 3, 4]]), grad=False)


def test_argsort_edges_and_errors():
    compare(ta.argsort, torch.argsort, np.array(4.0), grad=False)
    compare(ta.argsort, torch.argsort, np.zeros((2, 0)), grad=False)
    with pytest.raises(IndexError, match="argsort: dim 2 is out of range for a tensor with 2"):
        ta.argsort(ta.zeros(2, 3), dim=2)


@pytest.mark.parametrize("name", ["any", "all"])
def test_any_and_all_functions_match_torch(name):
    x = np.array([[0.0, 1.0, nan], [0.0, 0.0, 2.0]])
    for kwargs in ({}, {"dim": 0}, {"dim": 1, "keepdim": True}, {"dim": -1}):
        compare(lambda t: getattr(ta, name)(t, **kwargs),
                lambda t: getattr(torch, name)(t, **kwargs), x, grad=False)
    for values in (np.array([1, 0], dtype=np.uint8), np.zeros(0), np.array(True)):
        compare(getattr(ta, name), getattr(torch, name), values, grad=False)


def test_numel_and_clip():
    assert ta.numel(ta.zeros(2, 3, 4)) == 24 == torch.numel(torch.zeros(2, 3, 4))
    x = np.array([-2.0, 0.5, 3.0, nan])
    compare(lambda t: ta.clip(t, -1.0, 1.0), lambda t: torch.clip(t, -1.0, 1.0), x)


# ------------------------------------------------------------------ negative controls
def test_the_comparison_catches_a_wrong_gradient(monkeypatch):
    """Negative control: a reciprocal whose backward forgets the minus sign is caught, both
    by the torch comparison and by the float64 gradcheck."""
    from tinyattn.ops.rounding import Reciprocal
    monkeypatch.setattr(Reciprocal, "backward", lambda self, grad: grad * self.saved[0] ** 2)
    with pytest.raises(AssertionError, match="gradient of input 0"):
        compare(ta.reciprocal, torch.reciprocal, np.array([0.5, 2.0, -3.0]))
    x = ta.tensor([0.5, 2.0, -3.0], dtype="float64", requires_grad=True)
    assert not ta.gradcheck_report(ta.reciprocal, [x]).passed


def test_the_comparison_catches_a_wrong_rounding_rule():
    """Negative control: rounding halves away from zero (Python 2's rule, np.round's
    opposite) differs from torch on 0.5 and 2.5, and the comparison says so."""
    def half_away(t):
        return ta.tensor(np.sign(t.numpy()) * np.floor(np.abs(t.numpy()) + 0.5))
    with pytest.raises(AssertionError):
        compare(half_away, torch.round, np.array([0.5, 2.5, -0.5]), grad=False)
