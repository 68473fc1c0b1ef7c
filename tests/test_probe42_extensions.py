"""extensions42: what tinyattn accepted where torch refuses (issue 30), decided against torch.

Where accepting could hand a learner a plausible wrong answer (addcmul of bools is an or, not
a count), or where the difference had no reason to exist, tinyattn now raises torch's
exception type; where torch computes (lerp with a 0-d weight of another dtype, dropout2d on a
5-D input with its deprecation warning), tinyattn computes the same. Each case runs one small
program with ``torch`` and with ``tinyattn`` and compares values, dtype and shape, or the
exception type."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import tinyattn as ta

torch = pytest.importorskip("torch")


def _run(code: str, mod):
    ns = {"torch": mod, "F": mod.nn.functional}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        exec(code, ns)  # noqa: S102 - the test programs below
    return ns["r"]


def _numpy(value):
    if isinstance(value, (torch.Tensor, ta.Tensor)):
        dtype = str(value.dtype).split(".")[-1]
        value = value.detach()
        return (value.float() if dtype == "bfloat16" else value).numpy(), dtype
    return np.asarray(value), type(value).__name__


def _same(code: str) -> None:
    (want, want_dtype), (got, got_dtype) = _numpy(_run(code, torch)), _numpy(_run(code, ta))
    assert got_dtype == want_dtype, (code, got_dtype, want_dtype)
    assert got.shape == want.shape, (code, got.shape, want.shape)
    np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), rtol=1e-6,
                               err_msg=code)


def _same_error(code: str) -> None:
    with pytest.raises(Exception) as want:
        _run(code, torch)
    with pytest.raises(Exception) as got:
        _run(code, ta)
    assert isinstance(got.value, type(want.value)), (code, got.value, want.value)


B = "b = torch.tensor([True, False, True]); "
M = "m = torch.tensor([[True, False], [True, True]]); "
REFUSED = [
    # addcmul of bools: True + 2 * True * True would be True, not 3
    B + "r = torch.addcmul(b, b, b)",
    B + "r = torch.addcmul(b, b, b, value=2)",
    B + "r = b.clone().addcmul_(b, b)",
    # isin with a bool side (tensor or Python bool), either argument
    B + "r = torch.isin(b, torch.tensor([True]))",
    B + "r = torch.isin(b, torch.tensor([1]))",
    "r = torch.isin(torch.tensor([1, 2]), torch.tensor([True]))",
    "r = torch.isin(torch.tensor([1, 2]), True)",
    "r = torch.isin(True, torch.tensor([1]))",
    # searchsorted/bucketize: a bool sequence searched for bool values
    B + "r = torch.searchsorted(torch.tensor([False, True]), b)",
    "r = torch.searchsorted(torch.tensor([False, True]), True)",
    B + "r = torch.bucketize(b, torch.tensor([False, True]))",
    # ldexp of a floating tensor by a bool exponent
    B + "r = torch.ldexp(torch.tensor([1., 2., 3.]), b)",
    B + "r = torch.ldexp(torch.tensor([1., 2., 3.]).half(), b)",
    "r = torch.ldexp(torch.tensor([1., 2.]), torch.tensor(True))",
    # a fill value that is a tensor with dimensions
    "r = torch.full((2,), torch.tensor([3.]))",
    "r = torch.full((2,), torch.tensor([3]))",
    "r = torch.full((2,), torch.tensor([3., 4.]))",
    "r = torch.full_like(torch.zeros(2), torch.tensor([3.]))",
    "r = torch.zeros(2).new_full((2,), torch.tensor([3.]))",
    # index_fill takes an int64 index only
    "r = torch.zeros(3).index_fill(0, torch.tensor([0], dtype=torch.int32), 1.)",
    "r = torch.zeros(3).index_fill_(0, torch.tensor([0], dtype=torch.int32), 1.)",
    "r = torch.zeros(3).index_fill(0, torch.tensor([0.]), 1.)",
    "r = torch.zeros(3).index_fill(0, torch.tensor([True]), 1.)",
    "r = torch.zeros(3).index_fill(0, torch.tensor([[1]]), 1.)",
    # prelu: input and weight of one dtype
    "r = F.prelu(torch.tensor([-1, 2]), torch.tensor([0.25]))",
    "r = F.prelu(torch.tensor([-1., 2]), torch.tensor([2]))",
    "r = F.prelu(torch.tensor([-1., 2], dtype=torch.float64), torch.tensor([0.25]))",
    "r = F.prelu(torch.tensor([-1., 2]).half(), torch.tensor([0.25]))",
    "r = torch.nn.PReLU()(torch.tensor([[-1., 2]], dtype=torch.float64))",
    # lerp: a weight with dimensions must have the input's dtype; no integer/bool kernel
    B + "r = torch.lerp(b, b, torch.tensor([0.5]).half())",
    "r = torch.lerp(torch.ones(2), torch.zeros(2), torch.tensor([0.5]).half())",
    B + "r = torch.lerp(b, b, 0.5)",
    "r = torch.lerp(torch.tensor([1, 2]), torch.tensor([3, 4]), torch.tensor(1))",
    "r = torch.lerp(torch.tensor([1, 2]), torch.tensor([3, 4]), 1)",
    # dropout2d of a 1-D input in training with p > 0
    "r = F.dropout2d(torch.ones(4), 0.5, True)",
    # bool inputs torch has no kernel for (order statistics, trace, trapezoid, reflection and
    # replication pads, einsum contractions: a bool product summed would be an or, not a count)
    M + "r = torch.median(m)",
    M + "r = torch.median(m, 0)",
    M + "r = torch.nanmedian(m)",
    M + "r = torch.kthvalue(m, 1)",
    M + "r = torch.topk(m, 1)",
    M + "r = torch.trace(m)",
    M + "r = torch.trapezoid(m)",
    M + "r = torch.trapz(m)",
    M + "r = torch.cumulative_trapezoid(m)",
    M + "r = torch.trapezoid(torch.ones(2, 2), m)",
    M + "r = F.pad(m[None], (1, 1), mode='reflect')",
    M + "r = F.pad(m[None, None], (1, 1, 1, 1), mode='replicate')",
    M + "r = torch.einsum('ij,j->i', m, m[0])",
    M + "r = torch.einsum('ij,jk->ik', m, m)",
    M + "r = torch.einsum('i,i->', m[0], m[1])",
    M + "r = torch.einsum('i,i,i->', m[0], m[1], m[0])",
    # refused before too, now with torch's exception type (NotImplementedError, RuntimeError)
    B + "r = torch.fmod(b, b)",
    B + "r = b // b",
    B + "r = torch.remainder(b, b)",
    B + "r = b ** b",
    "r = torch.logcumsumexp(torch.tensor([1, 2]), 0)",
    "r = torch.tensor([1, 2]).std()",
    "r = torch.var_mean(torch.tensor([1, 2]))",
    B + "r = b.norm()",
    "r = F.one_hot(torch.tensor([1.]))",
    "r = F.embedding(torch.tensor([1.]), torch.eye(2))",
]

COMPUTED = [
    # the neighbours of the refusals, which torch computes
    B + "r = torch.addcmul(torch.tensor([1.]), b, b)",
    B + "r = torch.addcmul(b, torch.ones(3), torch.ones(3))",
    B + "r = torch.searchsorted(torch.tensor([0, 1]), b)",
    "r = torch.searchsorted(torch.tensor([False, True]), torch.tensor([0, 1]))",
    "r = torch.searchsorted(torch.tensor([False, True]), 1)",
    B + "r = torch.bucketize(b, torch.tensor([0, 1]))",
    "r = torch.isin(torch.tensor([1., 2.]), torch.tensor([1]))",
    B + "r = torch.ldexp(b, b)",
    B + "r = torch.ldexp(torch.tensor([1, 0, 1]), b)",
    "r = torch.ldexp(torch.tensor([1., 2.]), torch.tensor(2))",
    "r = torch.full((2,), torch.tensor(3.))",
    "r = torch.zeros(3).index_fill(0, torch.tensor(1), 1.)",
    "r = torch.zeros(3).index_fill(0, torch.tensor([0, 2]), 1.)",
    "r = F.prelu(torch.tensor([-1., 2]), torch.tensor([0.25]))",
    # lerp with a 0-d weight of another dtype promotes
    B + "r = torch.lerp(b, b, torch.tensor(0.5, dtype=torch.float16))",
    "r = torch.lerp(torch.tensor([1, 0]), torch.tensor([0, 1]), torch.tensor(0.5, dtype=torch.float64))",
    "r = torch.lerp(torch.tensor([1., 0.]), torch.tensor([0., 1.]), torch.tensor(0.25, dtype=torch.float64))",
    "r = torch.lerp(torch.tensor([1., 0.]).half(), torch.tensor([0., 1.]).half(), torch.tensor(0.25))",
    "r = torch.lerp(torch.tensor([1., 0.]).bfloat16(), torch.tensor([0., 1.]).bfloat16(), torch.tensor(0.25).half())",
    "r = torch.lerp(torch.tensor(1.), torch.tensor(0.), torch.tensor(0.25, dtype=torch.float64))",
    "r = torch.ones(3).lerp_(torch.zeros(3), torch.tensor(0.25, dtype=torch.float64))",
    # bool neighbours torch computes
    M + "r = torch.trace(m.int())",
    M + "r = F.pad(m[None], (1, 1), mode='circular')",
    M + "r = torch.einsum('ij->', m)",
    M + "r = torch.einsum('ij,ij->ij', m, m)",
    M + "r = torch.einsum('i,j->ij', m[0], m[1])",
    M + "r = torch.einsum('ij,j->j', m, m[0])",
    M + "r = torch.einsum('ij,jk->', m, m)",
    M + "r = torch.einsum('i,i,i->i', m[0], m[1], m[0])",
    # dropout2d/3d of other dimension counts: computed with a deprecation warning
    "r = F.dropout2d(torch.ones(2, 2, 2, 2, 2), 0.0, True)",
    "r = F.dropout2d(torch.ones(2, 3), 0.5, False)",
    "r = F.dropout2d(torch.ones(4), 0.0, True)",
    "r = F.dropout3d(torch.ones(2, 3), 0.0, True)",
    "r = F.dropout3d(torch.ones(2, 2, 2, 2, 2, 2), 0.5, False)",
]


@pytest.mark.parametrize("code", REFUSED)
def test_refused_as_torch(code):
    _same_error(code)


@pytest.mark.parametrize("code", COMPUTED)
def test_computed_as_torch(code):
    _same(code)


def test_lerp_zero_d_weight_gradient_keeps_its_dtype():
    grads = []
    for mod in (torch, ta):
        a = mod.tensor([1., 2.])
        w = mod.tensor(0.3, dtype=mod.float64, requires_grad=True)
        out = mod.lerp(a, a * 3, w)
        out.sum().backward()
        grads.append((str(out.dtype).split(".")[-1], str(w.grad.dtype).split(".")[-1],
                      float(w.grad)))
    assert grads[0] == pytest.approx(grads[1]) and grads[0][:2] == grads[1][:2]


@pytest.mark.parametrize("op, shape, varies", [
    ("dropout2d", (4, 4, 2, 2, 2), [0, 1]),     # torch: one draw per (dim 0, dim 1)
    ("dropout2d", (4, 4), [0, 1]),
    ("dropout3d", (4, 2, 2), [0]),             # torch: unbatched, one draw per dim 0 entry
    ("dropout3d", (4, 2, 2, 2, 2, 2), [0]),
])
def test_channel_dropout_other_dims_warns_and_draws_as_torch(op, shape, varies):
    for mod in (torch, ta):
        mod.manual_seed(0)
        x = mod.ones(*shape)
        with pytest.warns(UserWarning, match=f"{op}: Received a {len(shape)}-D input"):
            out = getattr(mod.nn.functional, op)(x, 0.5, True)
        seen = [d for d in range(len(shape))
                if not bool((out == out.narrow(d, 0, 1).expand_as(out)).all())]
        assert seen == varies, (mod.__name__, seen)     # negative control: both libraries
        assert sorted(set(np.unique(out.numpy()).tolist())) == [0.0, 2.0]


def test_dropout_p0_identity_as_torch():
    for code in ("x = torch.ones(2, 3); r = F.dropout1d(x, 0.0, True) is x",
                 "x = torch.ones(2, 3, 2); r = F.dropout2d(x, 0.0, True) is x",
                 "x = torch.ones(2, 2, 2, 2, 2); r = F.dropout2d(x, 0.0, True) is x",
                 "x = torch.ones(2, 3, 2, 2); r = F.dropout3d(x, 0.0, True) is x",
                 "x = torch.ones(2, 3); r = F.dropout(x, 0.0, True) is x"):
        assert _run(code, ta) == _run(code, torch), code
