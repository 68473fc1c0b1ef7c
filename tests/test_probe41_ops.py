"""probeA41: tensor-op semantics checked against torch (CPU) where tinyattn differed.

Each case runs the same small program with ``torch`` and with ``tinyattn`` and compares
values, dtype, shape, or the exception type (and warning, where torch warns)."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import tinyattn as ta

torch = pytest.importorskip("torch")


def _run(code: str, mod):
    ns = {"torch": mod}
    exec(code, ns)  # noqa: S102 - the test programs below
    return ns["r"]


def _as_numpy(value):
    if isinstance(value, (tuple, list)):
        return [_as_numpy(v) for v in value]
    if isinstance(value, torch.Tensor):
        return value.detach().numpy(), str(value.dtype).replace("torch.", "")
    if isinstance(value, ta.Tensor):
        return value.detach().numpy(), str(value.dtype).replace("tinyattn.", "")
    return value


def _same(code: str) -> None:
    want = _as_numpy(_run(code, torch))
    got = _as_numpy(_run(code, ta))
    flat_want = want if isinstance(want, list) else [want]
    flat_got = got if isinstance(got, list) else [got]
    assert len(flat_want) == len(flat_got)
    for (w, wd), (g, gd) in zip(flat_want, flat_got):
        assert gd == wd, (code, gd, wd)
        assert g.shape == w.shape, (code, g.shape, w.shape)
        np.testing.assert_allclose(g, w, rtol=1e-6, atol=1e-6, equal_nan=True, err_msg=code)


def _same_error(code: str) -> None:
    with pytest.raises(Exception) as want:
        _run(code, torch)
    with pytest.raises(Exception) as got:
        _run(code, ta)
    assert isinstance(got.value, type(want.value)), (code, got.value, want.value)


# ---- an empty dim tuple/list reduces over every dim (sum/mean/amax/var/norm...), but any/all
# ---- over no dims is each element's own truth
X = "x = torch.arange(24.).view(2, 3, 4) - 5; "
EMPTY_DIM = [X + f"r = {call}" for call in [
    "x.sum(())", "x.sum([])", "torch.sum(x, dim=(), keepdim=True)", "x.mean(dim=[])",
    "torch.mean(x, (), True)", "x.amax(())", "x.amin([])", "torch.nansum(x, ())",
    "torch.nanmean(x, [])", "x.std(())", "x.var([], correction=0)", "torch.var_mean(x, ())",
    "torch.std_mean(x, (), keepdim=True)", "torch.count_nonzero(x, ())", "x.norm(dim=())",
    "torch.linalg.vector_norm(x, 1, dim=[], keepdim=True)",
    "torch.logsumexp(x, (), keepdim=True)",
    "x.any(dim=[])", "x.all(dim=[])", "torch.any(x, ())", "torch.all(x, dim=[])",
    "x.any(dim=[0, 2])", "x.to(torch.uint8).all(dim=[])",
]]


@pytest.mark.parametrize("code", EMPTY_DIM)
def test_empty_dim_reduces_as_torch(code):
    _same(code)


def test_empty_dim_is_not_a_no_op():        # negative control: the old answer was x itself
    x = ta.arange(6.).view(2, 3)
    assert x.sum(()).shape == ()
    assert float(x.sum(dim=[])) == 15.0


# ---- indexing: torch's reading of a list holding sequences (a tuple), uint8 masks, empty
# ---- lists, negative steps and narrow integer index tensors
M = "x = torch.arange(12).view(3, 4); "
INDEX_SAME = [M + code for code in [
    "r = x[[[0, 2]]]", "r = x[[[0, 1], [1, 2]]]", "r = x[[0, slice(None)]]",
    "r = x[[torch.tensor([0, 1]), 1]]", "r = x[[None, 0]]", "r = x[[..., 0]]",
    "r = x[[[0]] * 32]", "r = x[0, [[0, 1]]]", "r = x[[0, 2]]", "r = x[[True, False, True]]",
    "x[[[0, 1], [1, 2]]] = -1; r = x",
    "r = x[torch.tensor([0, 1, 1], dtype=torch.uint8)]",
    "r = x[:, torch.tensor([0, 1, 1, 0], dtype=torch.uint8)]",
    "r = x[torch.tensor(1, dtype=torch.uint8)]", "r = x[torch.tensor(0, dtype=torch.uint8)]",
    "x[torch.tensor([0, 1, 1], dtype=torch.uint8)] = torch.tensor([7, 7, 7, 7]); r = x",
    "x[torch.tensor(1, dtype=torch.uint8)] = 7; r = x",
    "r = x[torch.tensor([0, 2], dtype=torch.int32)]",
    "r = x[[]]", "r = x[[], 1]", "x[[]] = 5; r = x",
]]
INDEX_ERRORS = [M + code for code in [
    "r = x[::-1]", "r = x[:, ::-2]", "r = x[1, 3:0:-1]", "x[::-1] = 0; r = x",
    "r = x[torch.tensor([0, 2], dtype=torch.int16)]",
    "r = x[torch.tensor([0, 2], dtype=torch.int8)]",
    "x[torch.tensor([0, 1, 1], dtype=torch.uint8)] = 0; r = x",
    "x[torch.tensor([0, 1, 1], dtype=torch.uint8), 0] = 7; r = x",
    "r = x[[[0]] * 31]",
]]


@pytest.mark.parametrize("code", INDEX_SAME)
def test_indexing_as_torch(code):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)    # both warn: deprecated forms
        _same(code)


@pytest.mark.parametrize("code", INDEX_ERRORS)
def test_indexing_errors_as_torch(code):
    _same_error(code)


def test_deprecated_index_forms_warn_as_torch():
    x = ta.arange(12).view(3, 4)
    with pytest.warns(UserWarning, match="non-tuple sequence"):
        x[[[0, 1], [1, 2]]]
    with pytest.warns(UserWarning, match="uint8"):
        x[ta.tensor([1, 0, 1], dtype=ta.uint8)]
    with warnings.catch_warnings():                     # negative control: no warning
        warnings.simplefilter("error")
        x[[0, 1]]
        x[0, [[0, 1]]]


def test_list_of_lists_index_backward_as_torch():
    grads = []
    for lib in (torch, ta):
        x = lib.arange(12.).view(3, 4).requires_grad_()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            x[[[0, 1], [1, 1]]].sum().backward()
        grads.append(x.grad.numpy())
    np.testing.assert_array_equal(grads[1], grads[0])


# ---- clamp: a NaN bound gives NaN everywhere (gradient 0); no bound at all is RuntimeError
CLAMP = ["x = torch.tensor([1., 2., float('nan')]); r = x.clamp(min=float('nan'))",
         "x = torch.tensor([1., 2.]); r = x.clamp(0., float('nan'))",
         "x = torch.tensor([1., 2.]); r = x.clamp(min=float('nan'), max=1.)",
         "x = torch.tensor([1, 2]); r = x.clamp(min=float('nan'))",
         "x = torch.tensor([1, 2]); r = x.clamp(max=torch.tensor(float('nan')))",
         "x = torch.tensor([1., 2.], dtype=torch.float16); r = torch.clamp(x, max=float('nan'))",
         "x = torch.tensor([1., 2.]); x.clamp_(min=float('nan')); r = x",
         "x = torch.tensor([1., 5.], requires_grad=True); x.clamp(float('nan')).sum().backward(); "
         "r = x.grad",
         "x = torch.tensor([1., 5., 10.]); r = x.clamp(min=6, max=4)"]


@pytest.mark.parametrize("code", CLAMP)
def test_clamp_nan_bounds_as_torch(code):
    _same(code)


def test_clamp_without_bounds_raises_as_torch():
    _same_error("r = torch.tensor([1., 2.]).clamp()")
    with pytest.raises(ValueError):         # still a ValueError for tinyattn's older callers
        ta.tensor([1.]).clamp()


# ---- creation and scalar conversion into integer dtypes: torch refuses what does not fit
# ---- (NumPy wrapped 300 to 44, inf/NaN to int64's minimum); -1 into uint8 is 255
CREATION_SAME = ["r = " + code for code in [
    "torch.tensor([-1], dtype=torch.uint8)", "torch.tensor([-128], dtype=torch.int8)",
    "torch.tensor([255], dtype=torch.uint8)", "torch.tensor([-255], dtype=torch.uint8)",
    "torch.tensor([1.7, -1.7], dtype=torch.int64)", "torch.tensor([True], dtype=torch.uint8)",
    "torch.tensor([2 ** 63 - 1])", "torch.tensor([-2 ** 63])",
    "torch.tensor([2 ** 63], dtype=torch.float32)", "torch.tensor([[]], dtype=torch.uint8)",
    "torch.tensor([np.float64(2.5)])", "torch.tensor([1, np.float64(2)])",
    "torch.tensor([[np.float64(1)], [2.]])", "torch.tensor([np.float32(1.5), 2.0])",
    "torch.tensor([np.int8(1)])", "torch.tensor([0.5, 1.5])",
    "torch.full((2,), -1, dtype=torch.uint8)", "torch.full((2,), 2.5, dtype=torch.uint8)",
    "torch.zeros(2, dtype=torch.uint8).fill_(-1)", "torch.zeros(2, dtype=torch.int8).fill_(2.7)",
    "torch.where(torch.tensor([True, False]), torch.zeros(2, dtype=torch.uint8), -1)",
    "torch.where(torch.tensor([True, False]), 255, torch.zeros(2, dtype=torch.uint8))",
    "torch.where(torch.tensor([True, False]), torch.zeros(2, dtype=torch.int32), 2.5)",
    "torch.where(torch.tensor([True, False]), torch.zeros(2), 2 ** 40)",
]]
CREATION_ERRORS = ["r = " + code for code in [
    "torch.tensor([300], dtype=torch.uint8)", "torch.tensor(300, dtype=torch.uint8)",
    "torch.tensor([-256], dtype=torch.uint8)", "torch.tensor([-129], dtype=torch.int8)",
    "torch.tensor([[1, 2 ** 40]], dtype=torch.int32)", "torch.tensor([1e10], dtype=torch.int32)",
    "torch.tensor([float('inf')], dtype=torch.int64)",
    "torch.tensor([float('nan')], dtype=torch.int32)",
    "torch.tensor([255.7], dtype=torch.uint8)", "torch.tensor([-0.5], dtype=torch.uint8)",
    "torch.tensor(2 ** 63)", "torch.tensor([-2 ** 63 - 1])", "torch.tensor([2 ** 64])",
    "torch.full((1,), float('inf'), dtype=torch.int64)", "torch.full((1,), 2 ** 63)",
    "torch.full((1,), 1000, dtype=torch.uint8)", "torch.full((1,), -256, dtype=torch.uint8)",
    "torch.full((1,), float('nan'), dtype=torch.int32)",
    "torch.full_like(torch.zeros(2, dtype=torch.int64), float('nan'))",
    "torch.zeros(2, dtype=torch.int32).new_full((2,), 2 ** 40)",
    "torch.zeros(2, dtype=torch.uint8).fill_(300)", "torch.zeros(2, dtype=torch.int8).fill_(128.0)",
    "torch.zeros(2, dtype=torch.int32).fill_(float('inf'))",
    "torch.where(torch.tensor([True, False]), torch.zeros(2, dtype=torch.uint8), 300)",
    "torch.where(torch.tensor([True, False]), 2 ** 40, torch.zeros(2, dtype=torch.int32))",
]]


@pytest.mark.parametrize("code", CREATION_SAME)
def test_creation_as_torch(code):
    _same("import numpy as np; " + code)


@pytest.mark.parametrize("code", CREATION_ERRORS)
def test_creation_errors_as_torch(code):
    _same_error(code)


# ---- torch's NotImplementedError (a RuntimeError subclass) for a kernel without the dtype
NOT_IMPLEMENTED = ["r = " + code for code in [
    "torch.tensor([5]) & 3.0", "torch.bitwise_or(torch.tensor([True]), 2.5)",
    "torch.bitwise_xor(torch.tensor([1.]), torch.tensor([1.], dtype=torch.float64))",
    "torch.bitwise_left_shift(torch.tensor([1], dtype=torch.int8), 2.5)",
    "torch.bitwise_not(torch.tensor([1.], dtype=torch.float16))",
    "torch.gcd(torch.tensor([4]), torch.tensor(2.))",
    "torch.lcm(torch.tensor([True]), torch.tensor([True]))",
    "torch.hypot(torch.tensor([3]), torch.tensor([4]))",
    "torch.logaddexp(torch.tensor([3], dtype=torch.uint8), torch.tensor([4]))",
    "torch.nextafter(torch.tensor([3]), torch.tensor([4]))", "torch.tensor([-3, 3]).frac()",
]]


@pytest.mark.parametrize("code", NOT_IMPLEMENTED)
def test_not_implemented_dtype_errors_as_torch(code):
    _same_error(code)
    with pytest.raises(RuntimeError):           # still caught as RuntimeError, as in torch
        _run(code, ta)


# ---- matmul does not promote: an integer operand with another dtype is torch's RuntimeError
# ---- (NumPy gave float64 for float32 @ int64)
MATMUL_ERRORS = ["r = " + code for code in [
    "torch.tensor([[1, 2]]) @ torch.tensor([[1.], [2.]])",
    "torch.ones(2) @ torch.ones(2, dtype=torch.int64)",
    "torch.ones(2, 2, dtype=torch.int32) @ torch.ones(2, 2, dtype=torch.int64)",
    "torch.matmul(torch.ones(2, 2, 2, dtype=torch.int32), torch.ones(2, 2))",
    "torch.ones(2, 2) @ torch.ones(2, 2, dtype=torch.float64)",
    "torch.tensor(2.) @ torch.tensor(3.)",
]]


@pytest.mark.parametrize("code", MATMUL_ERRORS)
def test_matmul_dtype_errors_as_torch(code):
    _same_error(code)


def test_matmul_same_integer_dtype_still_works():       # negative control
    _same("r = torch.tensor([[1, 2], [3, 4]]) @ torch.tensor([[1, 2], [3, 4]])")
    _same("r = torch.ones(2, 3, dtype=torch.float64) @ torch.ones(3, dtype=torch.float64)")


# ---- a Python number written by x[index] = v or masked_fill into an integer dtype: torch's
# ---- scalar conversion (-1 into uint8 is 255; 300, 2**40 into int32, inf are errors)
SCALAR_WRITES = [
    "x = torch.zeros(5, dtype=torch.uint8); x[0] = -1; r = x",
    "x = torch.zeros(5, dtype=torch.uint8); x[1:3] = -255; r = x",
    "x = torch.zeros(5, dtype=torch.int64); x[torch.tensor([0, 0, 2])] = 2.7; r = x",
    "x = torch.zeros(5, dtype=torch.int64); x[0] = True; r = x",
    "x = torch.zeros(5, dtype=torch.uint8); "
    "x.masked_fill_(torch.tensor([True, False, True, False, False]), -1); r = x",
    "x = torch.zeros(5, dtype=torch.int64); "
    "x.masked_fill_(torch.tensor([True, False, True, False, False]), 2.7); r = x",
]
SCALAR_WRITE_ERRORS = [
    "x = torch.zeros(5, dtype=torch.uint8); x[0] = 300; r = x",
    "x = torch.zeros(5, dtype=torch.int32); x[1:3] = 2**40; r = x",
    "x = torch.zeros(5, dtype=torch.int32); x[1:3] = float('inf'); r = x",
    "x = torch.zeros(5, dtype=torch.int32); x[torch.tensor([1, 2])] = float('nan'); r = x",
    "x = torch.zeros(5, dtype=torch.uint8); "
    "x.masked_fill_(torch.tensor([True, False, True, False, False]), 256); r = x",
    "x = torch.zeros(5, dtype=torch.int32); "
    "x.masked_fill_(torch.tensor([True, False, True, False, False]), float('nan')); r = x",
]


@pytest.mark.parametrize("code", SCALAR_WRITES)
def test_scalar_writes_into_integers_as_torch(code):
    _same(code)


@pytest.mark.parametrize("code", SCALAR_WRITE_ERRORS)
def test_scalar_write_errors_as_torch(code):
    _same_error(code)


# ---- flatten with start_dim after end_dim: torch refuses (tinyattn inserted a dim of 1)
SHAPE_ERRORS = [X + "r = " + code for code in [
    "x.flatten(2, 1)", "torch.flatten(x, -1, 0)", "x.unflatten(2, (3, 2))",
]]


@pytest.mark.parametrize("code", SHAPE_ERRORS)
def test_shape_errors_as_torch(code):
    _same_error(code)


@pytest.mark.parametrize("code", [X + "r = x.flatten(1, 1)", X + "r = x.flatten(-2)",
                                  X + "r = torch.tensor(3.).flatten(0, -1)"])
def test_flatten_still_works(code):          # negative control
    _same(code)


# ---- cummax/cummin: bfloat16 NaNs were ignored, and each later NaN takes the index over
CUM = [f"x = torch.tensor([[1., float('nan'), 0.5, 2., 0.5], [3., 1., float('nan'), "
       f"float('nan'), -1.], [float('nan'), float('nan'), float('nan'), 1., float('nan')]], "
       f"dtype=torch.{dt}); r = x.{op}({dim})"
       for dt in ("float32", "float64", "float16", "bfloat16") for op in ("cummax", "cummin")
       for dim in (0, 1)]


@pytest.mark.parametrize("code", CUM)
def test_cummax_cummin_nan_as_torch(code):
    want, got = _run(code, torch), _run(code, ta)
    np.testing.assert_array_equal(got.indices.numpy(), want.indices.numpy(), err_msg=code)
    np.testing.assert_array_equal(got.values.float().numpy(), want.values.float().numpy())


# ---- mode with NaN: torch's std::sort by plain < places NaNs where an insertion sort leaves
# ---- them (a stable NaN-last argsort does not), so the mode and its index differed
MODE = [f"x = torch.tensor({v}, dtype=torch.{dt}); r = x.mode({dim})"
        for v, dim in (("[3., float('nan'), -4., -4., 3.]", ""),
                       ("[float('nan'), float('nan'), 1.]", ""),
                       ("[[1., float('nan'), 0.5, 2., 0.5], "
                        "[3., 1., float('nan'), float('nan'), -1.]]", "1"),
                       ("[[1., float('nan'), 0.5], [float('nan'), float('nan'), 0.5]]", "0"),
                       ("[2., 2., 1., 1.]", ""))
        for dt in ("float32", "bfloat16")]


@pytest.mark.parametrize("code", MODE)
def test_mode_with_nan_as_torch(code):
    want, got = _run(code, torch), _run(code, ta)
    np.testing.assert_array_equal(got.indices.numpy(), want.indices.numpy(), err_msg=code)
    np.testing.assert_array_equal(got.values.float().numpy(), want.values.float().numpy())


# ---- add/sub alpha: torch refuses a float alpha with integer inputs and a bool alpha with a
# ---- non-bool result (tinyattn gave float32); an int alpha keeps a bool result bool
ALPHA_SAME = ["r = " + code for code in [
    "torch.add(torch.ones(3, dtype=torch.bool), torch.ones(3, dtype=torch.bool), alpha=2)",
    "torch.add(torch.zeros(3, dtype=torch.bool), torch.ones(3, dtype=torch.bool), alpha=0)",
    "torch.add(torch.ones(3, dtype=torch.bool), torch.ones(3, dtype=torch.bool), alpha=True)",
    "torch.add(torch.ones(3, dtype=torch.int64), 1.5, alpha=2.5)",
    "torch.add(torch.ones(3, dtype=torch.int64), torch.ones(3), alpha=2.5)",
    "torch.add(torch.ones(3, dtype=torch.uint8), torch.ones(3, dtype=torch.uint8) * 3, alpha=-1)",
    "torch.ones(3).sub(torch.ones(3), alpha=0.5)",
    "torch.tensor([1, 2]).add(torch.tensor([1, 2]), alpha=3)",
]]
ALPHA_ERRORS = ["r = " + code for code in [
    "torch.add(torch.ones(3, dtype=torch.int64), 1, alpha=2.5)",
    "torch.add(torch.ones(3, dtype=torch.int64), 1, alpha=2.0)",
    "torch.ones(3, dtype=torch.int64).add_(1, alpha=2.5)",
    "torch.sub(torch.ones(3, dtype=torch.int64), 1, alpha=0.5)",
    "torch.add(torch.ones(3, dtype=torch.int64), 1, alpha=True)",
    "torch.add(torch.ones(3), 1, alpha=False)",
]]


@pytest.mark.parametrize("code", ALPHA_SAME)
def test_alpha_as_torch(code):
    _same(code)


@pytest.mark.parametrize("code", ALPHA_ERRORS)
def test_alpha_errors_as_torch(code):
    _same_error(code)
