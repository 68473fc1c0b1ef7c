"""linalg.cholesky / cholesky_ex, qr, eigh, svd and torch's older names (ops/decompositions.py)
against torch: values (eigen- and singular vectors up to their signs), float64 gradients of
sign-invariant losses, errors, what backward keeps; with negative controls."""
import numpy as np
import pytest

import tinyattn as ta

torch = pytest.importorskip("torch", reason="torch is the oracle for the decompositions")

RNG = np.random.default_rng(7)


def _pair(array):
    return (ta.tensor(array, requires_grad=True),
            torch.tensor(array, requires_grad=True))


def _grads_agree(loss_ta, loss_torch, array, atol=1e-10):
    a, t = _pair(array)
    out_ta, out_torch = loss_ta(a), loss_torch(t)
    np.testing.assert_allclose(out_ta.item(), out_torch.item(), rtol=1e-10, atol=1e-10)
    out_ta.backward()
    out_torch.backward()
    np.testing.assert_allclose(a.grad.numpy(), t.grad.numpy(), rtol=1e-8, atol=atol)


def _spd(shape):
    g = RNG.standard_normal(shape)
    return g @ np.swapaxes(g, -1, -2) + shape[-1] * np.eye(shape[-1])


@pytest.mark.parametrize("upper", [False, True])
@pytest.mark.parametrize("shape", [(4, 4), (2, 3, 3), (0, 2, 2), (0, 0)])
def test_cholesky_matches_torch(shape, upper):
    a = _spd(shape)
    w = RNG.standard_normal(shape)
    for ta_fn, torch_fn in ((lambda x: ta.linalg.cholesky(x, upper=upper),
                             lambda x: torch.linalg.cholesky(x, upper=upper)),
                            (lambda x: ta.linalg.cholesky_ex(x, upper=upper).L,
                             lambda x: torch.linalg.cholesky_ex(x, upper=upper).L),
                            (lambda x: ta.cholesky(x, upper),
                             lambda x: torch.linalg.cholesky(x, upper=upper))):
        _grads_agree(lambda x: (ta_fn(x) * ta.tensor(w)).sum(),
                     lambda x: (torch_fn(x) * torch.tensor(w)).sum(), a)


def test_cholesky_not_positive_definite_raises_linalg_error_and_ex_reports_info():
    bad = np.array([[1.0, 2.0], [2.0, 1.0]])
    with pytest.raises(ta.linalg.LinAlgError, match="not positive-definite.*order 2"):
        ta.linalg.cholesky(ta.tensor(bad))
    assert issubclass(ta.linalg.LinAlgError, RuntimeError)
    batch = np.stack([_spd((2, 2)), bad])
    info = ta.linalg.cholesky_ex(ta.tensor(batch)).info
    want = torch.linalg.cholesky_ex(torch.tensor(batch)).info
    assert info.dtype == np.int32 and info.tolist() == want.tolist() == [0, 2]
    with pytest.raises(ta.linalg.LinAlgError, match="Batch element 1"):
        ta.linalg.cholesky_ex(ta.tensor(batch), check_errors=True)


@pytest.mark.parametrize("fn", ["cholesky", "qr", "eigh", "svd"])
def test_errors_as_torch(fn):
    ta_fn, torch_fn = getattr(ta.linalg, fn), getattr(torch.linalg, fn)
    for bad in (np.ones(3), np.ones((2, 3), dtype=np.int64)):
        with pytest.raises(RuntimeError) as theirs:
            torch_fn(torch.tensor(bad))
        with pytest.raises(RuntimeError) as ours:
            ta_fn(ta.tensor(bad))
        assert str(ours.value).split(".")[0] in str(theirs.value)
    for half in ("float16", "bfloat16"):
        with pytest.raises(NotImplementedError, match="not implemented for"):
            ta_fn(ta.eye(3, dtype=half))
    if fn in ("cholesky", "eigh"):
        with pytest.raises(RuntimeError, match="square matrices, but they are 2 by 3"):
            ta_fn(ta.ones(2, 3))


@pytest.mark.parametrize("mode", ["reduced", "complete", "r"])
@pytest.mark.parametrize("shape", [(5, 3), (3, 3), (3, 5), (2, 4, 2), (0, 3, 2), (3, 0)])
def test_qr_values_and_gradients_match_torch(shape, mode):
    a = RNG.standard_normal(shape)
    q, r = ta.linalg.qr(ta.tensor(a), mode)
    tq, tr = torch.linalg.qr(torch.tensor(a), mode)
    assert q.shape == tuple(tq.shape) and r.shape == tuple(tr.shape)
    np.testing.assert_allclose(q.numpy(), tq.numpy(), atol=1e-12)
    np.testing.assert_allclose(r.numpy(), tr.numpy(), atol=1e-12)
    if mode == "r" or 0 in shape or (mode == "complete" and shape[-2] > shape[-1]):
        return
    wq, wr = RNG.standard_normal(tq.shape), RNG.standard_normal(tr.shape)
    _grads_agree(lambda x: (ta.linalg.qr(x, mode).Q * ta.tensor(wq)).sum()
                 + (ta.linalg.qr(x, mode).R * ta.tensor(wr)).sum(),
                 lambda x: (torch.linalg.qr(x, mode).Q * torch.tensor(wq)).sum()
                 + (torch.linalg.qr(x, mode).R * torch.tensor(wr)).sum(), a)


def test_qr_backward_refuses_where_torch_does():
    a = ta.tensor(RNG.standard_normal((4, 3)), requires_grad=True)
    with pytest.raises(RuntimeError, match="not differentiable when mode='complete'"):
        ta.linalg.qr(a, "complete").Q.sum().backward()
    with pytest.raises(RuntimeError, match="not computed when mode='r'"):
        ta.linalg.qr(a, "r").R.sum().backward()
    q, r = ta.qr(a, some=False)          # torch.qr: some=False is mode="complete"
    assert q.shape == (4, 4) and r.shape == (4, 3)


@pytest.mark.parametrize("uplo", ["L", "U"])
@pytest.mark.parametrize("shape", [(4, 4), (2, 3, 3)])
def test_eigh_matches_torch_up_to_signs(shape, uplo):
    a = RNG.standard_normal(shape)            # not symmetric: only one triangle is read
    w, v = ta.linalg.eigh(ta.tensor(a), UPLO=uplo)
    tw, tv = torch.linalg.eigh(torch.tensor(a), UPLO=uplo)
    np.testing.assert_allclose(w.numpy(), tw.numpy(), atol=1e-12)
    np.testing.assert_allclose(np.abs(v.numpy()), np.abs(tv.numpy()), atol=1e-10)
    gw, gv = RNG.standard_normal(tw.shape), RNG.standard_normal(tv.shape)
    _grads_agree(lambda x: (ta.linalg.eigh(x, uplo)[0] * ta.tensor(gw)).sum()
                 + (ta.linalg.eigh(x, uplo)[1].abs() * ta.tensor(gv)).sum(),
                 lambda x: (torch.linalg.eigh(x, uplo)[0] * torch.tensor(gw)).sum()
                 + (torch.linalg.eigh(x, uplo)[1].abs() * torch.tensor(gv)).sum(), a)


@pytest.mark.parametrize("full", [False, True])
@pytest.mark.parametrize("shape", [(5, 3), (3, 3), (3, 5), (2, 4, 2), (0, 3, 2)])
def test_svd_matches_torch_up_to_signs(shape, full):
    a = RNG.standard_normal(shape)
    u, s, vh = ta.linalg.svd(ta.tensor(a), full_matrices=full)
    tu, ts, tvh = torch.linalg.svd(torch.tensor(a), full_matrices=full)
    assert (u.shape, s.shape, vh.shape) == (tuple(tu.shape), tuple(ts.shape), tuple(tvh.shape))
    np.testing.assert_allclose(s.numpy(), ts.numpy(), atol=1e-12)
    k = s.shape[-1]
    np.testing.assert_allclose((u[..., :k] @ vh[..., :k, :]).numpy(),
                               (tu[..., :k] @ tvh[..., :k, :]).numpy(), atol=1e-10)
    if 0 in shape:
        return
    wu, wv = RNG.standard_normal(tu[..., :k].shape), RNG.standard_normal(tvh[..., :k, :].shape)

    def loss(lib, wrap, x):
        u, s, vh = lib.linalg.svd(x, full_matrices=full)
        u, vh = u[..., :k], vh[..., :k, :]
        return (u.abs() * wrap(wu)).sum() + (vh.abs() * wrap(wv)).sum() + (s * s).sum() \
            + ((u @ vh) * wrap(a)).sum()
    _grads_agree(lambda x: loss(ta, ta.tensor, x), lambda x: loss(torch, torch.tensor, x), a)


def test_older_svd_returns_v_and_zero_factors_without_uv():
    a = RNG.standard_normal((4, 3))
    u, s, v = ta.svd(ta.tensor(a))
    tu, ts, tv = torch.svd(torch.tensor(a))
    np.testing.assert_allclose(np.abs(v.numpy()), np.abs(tv.numpy()), atol=1e-10)
    u, s, v = ta.svd(ta.tensor(a), some=False, compute_uv=False)
    tu, ts, tv = torch.svd(torch.tensor(a), some=False, compute_uv=False)
    assert u.shape == (4, 4) and v.shape == (3, 3) and not u.numpy().any()
    np.testing.assert_allclose(s.numpy(), ts.numpy(), atol=1e-12)


def test_outputs_share_one_node_and_writes_to_any_output_make_backward_raise():
    a = ta.tensor(RNG.standard_normal((4, 3)), requires_grad=True)
    u, s, vh = ta.linalg.svd(a * 1, full_matrices=False)
    assert u.grad_fn is not None and s.grad_fn is not None
    s.mul_(1)                                   # torch keeps S: its backward raises
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        (u.sum() + s.sum()).backward()


def test_negative_control_a_wrong_gradient_is_caught():
    """The comparison above is not vacuous: the eigenvector term's gradient, dropped, shows."""
    a = RNG.standard_normal((3, 3))
    gv = RNG.standard_normal((3, 3))
    with pytest.raises(AssertionError):
        _grads_agree(lambda x: ta.linalg.eigh(x)[0].sum(),
                     lambda x: torch.linalg.eigh(x)[0].sum()
                     + (torch.linalg.eigh(x)[1].abs() * torch.tensor(gv)).sum() * 0.5,
                     a)


@pytest.mark.parametrize("name", ["cholesky", "eigh", "svd", "svdvals", "eigvalsh", "pinv",
                                  "matrix_rank"])
def test_nan_input_raises_linalg_error_as_torch(name):
    nan = np.full((3, 3), np.nan)
    with pytest.raises(torch.linalg.LinAlgError):
        getattr(torch.linalg, name)(torch.tensor(nan))
    with pytest.raises(ta.linalg.LinAlgError):
        getattr(ta.linalg, name)(ta.tensor(nan))
    if name == "cholesky":
        assert ta.linalg.cholesky_ex(ta.tensor(nan)).info.item() == \
            torch.linalg.cholesky_ex(torch.tensor(nan)).info.item() == 1
