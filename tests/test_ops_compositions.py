"""The compositions of tinyattn/ops/compositions.py against torch, at the edges op_db's samples
do not reach: NaN and inf, 0-d, one sample, clamped variances, bad arguments (a clear error).
Values and float64 gradients; negative controls show the comparisons can fail. Skipped
without torch.
"""
import numpy as np
import pytest

import tinyattn as ta
import tinyattn.functional as F
from tinyattn.gradcheck import gradcheck

torch = pytest.importorskip("torch", reason="torch is the oracle for these ops")
TF = torch.nn.functional


def _both(array, grad=False):
    array = np.asarray(array)
    floating = array.dtype.kind == "f"
    return (ta.tensor(array, requires_grad=grad and floating),
            torch.tensor(array, requires_grad=grad and floating))


def _same(ours, theirs, tol=1e-10):
    if theirs is None:                      # torch has no gradient there: neither may we
        assert ours is None, "tinyattn gives a gradient where torch gives none"
        return
    assert tuple(ours.shape) == tuple(theirs.shape), f"{ours.shape} vs {tuple(theirs.shape)}"
    assert str(ours.dtype) == str(theirs.dtype).replace("torch.", ""), \
        f"dtype {ours.dtype} vs {theirs.dtype}"
    np.testing.assert_allclose(ours.detach().numpy().astype(np.float64),
                               theirs.detach().numpy().astype(np.float64),
                               rtol=tol, atol=tol, equal_nan=True)


def _agree(ours_fn, theirs_fn, *arrays, grad=True):
    """Values, and with grad the float64 gradients of every floating input, agree."""
    pairs = [_both(a, grad=grad) for a in arrays]
    out, ref = ours_fn(*[p[0] for p in pairs]), theirs_fn(*[p[1] for p in pairs])
    _same(out, ref)
    if grad:
        out.sum().backward()
        ref.sum().backward()
        for ours, theirs in pairs:
            if theirs.requires_grad:
                _same(ours.grad, theirs.grad)


RNG = np.random.default_rng(30)
A, B = RNG.standard_normal((3, 5)), RNG.standard_normal((3, 5))
SIGNS = np.where(RNG.standard_normal(3) > 0, 1.0, -1.0)


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_losses_agree_with_torch(reduction):
    kw = {"reduction": reduction}
    _agree(lambda a, b, t: F.margin_ranking_loss(a, b, t, 0.3, **kw),
           lambda a, b, t: TF.margin_ranking_loss(a, b, t, 0.3, **kw), A[0], B[0], SIGNS[:1] * 1)
    _agree(lambda a, t: F.hinge_embedding_loss(a, t, 0.5, **kw),
           lambda a, t: TF.hinge_embedding_loss(a, t, 0.5, **kw), A[:, 0], SIGNS)
    _agree(lambda a: F.soft_margin_loss(a, ta.tensor(SIGNS), **kw),   # torch: no target grad
           lambda a: TF.soft_margin_loss(a, torch.tensor(SIGNS), **kw), A[:, 0])
    _agree(lambda a, b, t: F.cosine_embedding_loss(a, b, t, 0.1, **kw),
           lambda a, b, t: TF.cosine_embedding_loss(a, b, t, 0.1, **kw), A, B, SIGNS)
    _agree(lambda a, t, w: F.multilabel_soft_margin_loss(a, t, w, **kw),
           lambda a, t, w: TF.multilabel_soft_margin_loss(a, t, w, **kw),
           A, (B > 0) * 1.0, np.abs(B[0]))
    _agree(lambda a, t: F.poisson_nll_loss(a, t, full=True, **kw),
           lambda a, t: TF.poisson_nll_loss(a, t, full=True, **kw), A, np.abs(B) * 3)
    _agree(lambda a, t: F.poisson_nll_loss(a, t, log_input=False, **kw),
           lambda a, t: TF.poisson_nll_loss(a, t, log_input=False, **kw), np.abs(A), np.abs(B))


def test_gaussian_nll_clamps_var_without_cutting_its_gradient():
    var = np.abs(B)
    var[0, 0], var[1, 1] = 1e-9, np.inf            # below eps: clamped; inf: kept
    _agree(lambda a, t, v: F.gaussian_nll_loss(a, t, v, full=True),
           lambda a, t, v: TF.gaussian_nll_loss(a, t, v, full=True), A, B, var)
    _agree(lambda a, t, v: F.gaussian_nll_loss(a, t, v, reduction="none"),   # var per row
           lambda a, t, v: TF.gaussian_nll_loss(a, t, v, reduction="none"), A, B, var[:, 0])
    with pytest.raises(ValueError, match="negative"):
        F.gaussian_nll_loss(ta.tensor(A), ta.tensor(B), ta.tensor(-np.abs(B)))
    _agree(lambda a, t, v: F.gaussian_nll_loss(a, t, v),        # one var per column
           lambda a, t, v: TF.gaussian_nll_loss(a, t, v), A, B, var[:1] + 1)
    with pytest.raises(ValueError, match="incorrect size"):
        F.gaussian_nll_loss(ta.tensor(A), ta.tensor(B), ta.tensor(np.ones(4)))


def test_nan_and_inf_stay_where_torch_puts_them():
    x, t = np.array([np.inf, 1.0, -2.0, np.nan]), np.array([1.0, -1.0, 1.0, -1.0])
    _agree(lambda a, b: F.hinge_embedding_loss(a, b, reduction="none"),
           lambda a, b: TF.hinge_embedding_loss(a, b, reduction="none"), x, t, grad=False)
    _agree(ta.trapezoid, torch.trapezoid, np.array([np.nan]), grad=False)
    _agree(ta.trapezoid, torch.trapezoid, np.zeros(0), grad=False)
    _agree(ta.cumulative_trapezoid, torch.cumulative_trapezoid, np.array([2.0]), grad=False)


def test_trapezoid_family_agrees_with_torch():
    x = np.cumsum(np.abs(RNG.standard_normal(5)))
    _agree(lambda y, s: ta.trapezoid(y, s), lambda y, s: torch.trapezoid(y, s), A, x)
    _agree(lambda y: ta.trapz(y, dx=0.5, dim=0), lambda y: torch.trapz(y, dx=0.5, dim=0), A)
    _agree(lambda y, s: ta.cumulative_trapezoid(y, s, dim=0),
           lambda y, s: torch.cumulative_trapezoid(y, s, dim=0), A, B)
    _agree(ta.trapezoid, torch.trapezoid, np.array([[1, 2], [3, 4]]), grad=False)  # int: float
    with pytest.raises(TypeError, match="not both"):
        ta.trapezoid(ta.tensor(A), ta.tensor(x), dx=1.0)


def test_distances_and_rearrangements_agree_with_torch():
    _agree(lambda a, b: ta.dist(a, b, 3), lambda a, b: torch.dist(a, b, 3), A, B)
    _agree(lambda a, b: a.dist(b), lambda a, b: a.dist(b), A, B)
    _agree(lambda a, b: F.pairwise_distance(a, b, keepdim=True),
           lambda a, b: TF.pairwise_distance(a, b, keepdim=True), A, B)
    _agree(F.pairwise_distance, TF.pairwise_distance, np.array(1.0), np.array(3.0))
    x = RNG.standard_normal((2, 8, 2, 3))
    _agree(lambda a: F.pixel_shuffle(a, 2), lambda a: TF.pixel_shuffle(a, 2), x)
    _agree(lambda a: F.pixel_unshuffle(a, 2), lambda a: TF.pixel_unshuffle(a, 2),
           RNG.standard_normal((3, 4, 6)))
    _agree(lambda a: F.channel_shuffle(a, 4), lambda a: TF.channel_shuffle(a, 4), x)
    _agree(lambda a: ta.linalg.diagonal(a, offset=1),
           lambda a: torch.linalg.diagonal(a, offset=1), x)
    assert ta.tensor(A).isreal().dtype == "bool" and bool(ta.isreal(ta.tensor(A)).all())
    for bad in (lambda: F.pixel_shuffle(ta.tensor(x), 3),
                lambda: F.pixel_unshuffle(ta.tensor(x), 2),
                lambda: F.channel_shuffle(ta.tensor(x), 3)):
        with pytest.raises(RuntimeError, match="divisible"):
            bad()


def test_gradcheck_float64():
    a = ta.tensor(A, requires_grad=True)
    b = ta.tensor(B, requires_grad=True)
    assert gradcheck(lambda p, q: F.cosine_embedding_loss(p, q, ta.tensor(SIGNS)), (a, b))
    assert gradcheck(lambda p, q: ta.cumulative_trapezoid(p, q), (a, b))
    assert gradcheck(lambda p: F.channel_shuffle(p.reshape(1, 3, 5), 3), (a,))
    assert gradcheck(lambda p: F.pixel_shuffle(p[:, :4].reshape(3, 4, 1, 1), 2), (a,))


def test_negative_controls():
    """The comparison fails on a wrong value and on a wrong gradient."""
    with pytest.raises(AssertionError):
        _agree(lambda a, b: ta.dist(a, b, 3), lambda a, b: torch.dist(a, b, 2), A, B)
    with pytest.raises(AssertionError):                 # same values, different gradient
        _agree(lambda a: a * 1.0, lambda a: a * 2 - a.detach(), A)
    with pytest.raises(AssertionError):
        _agree(lambda a: F.pixel_shuffle(a, 2),
               lambda a: TF.pixel_unshuffle(a, 2).reshape(2, 2, 4, 8),
               RNG.standard_normal((2, 8, 2, 4)))
