"""The modules added for PyTorch users, each against its torch.nn twin in float64 (values and
gradients): activations, Softmax/LogSoftmax, Flatten/Unflatten/Identity, the losses,
RMSNorm (op and module), Embedding(padding_idx) and from_pretrained, factory keywords."""
import numpy as np
import pytest

import tinyattn as ta
import tinyattn.functional as F
import tinyattn.nn as nn

torch = pytest.importorskip("torch")
tnn, TF = torch.nn, torch.nn.functional


def _pair(shape, seed=0, scale=1.0):
    x = np.random.default_rng(seed).standard_normal(shape) * scale
    return ta.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)


def _check(ours, theirs, inputs, rtol=1e-10, atol=1e-12):
    """Same values, and the same gradients for every floating input of each pair."""
    out, tout = ours(*[a for a, _ in inputs]), theirs(*[b for _, b in inputs])
    np.testing.assert_allclose(out.numpy(), tout.detach().numpy(), rtol=rtol, atol=atol)
    weights = np.random.default_rng(9).standard_normal(out.shape)
    (out * ta.tensor(weights)).sum().backward()
    (tout * torch.tensor(weights)).sum().backward()
    for a, b in inputs:
        if isinstance(b, torch.Tensor) and b.requires_grad:
            np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=rtol, atol=atol)


def _needs(*names):
    missing = [n for n in names if not hasattr(F, n)]
    return pytest.mark.skipif(bool(missing), reason=f"F.{', F.'.join(missing)} not in "
                              f"tinyattn.functional yet (the op is not there)")


ACTIVATIONS = [
    ("ReLU", lambda lib: lib.ReLU(), []),
    # torch refuses in-place on a leaf, so both see x * 1; tinyattn computes it out of place
    ("ReLU_inplace", lambda lib: (lambda x: lib.ReLU(inplace=True)(x * 1.0)), []),
    ("GELU", lambda lib: lib.GELU(), []),
    ("GELU_tanh", lambda lib: lib.GELU(approximate="tanh"), []),
    ("Tanh", lambda lib: lib.Tanh(), []),
    ("Sigmoid", lambda lib: lib.Sigmoid(), ["sigmoid"]),
    ("SiLU", lambda lib: lib.SiLU(), ["silu"]),
    ("LeakyReLU", lambda lib: lib.LeakyReLU(0.2), ["leaky_relu"]),
    ("Softplus", lambda lib: lib.Softplus(beta=2.0, threshold=3.0), ["softplus"]),
    ("Softmax", lambda lib: lib.Softmax(dim=1), []),
    ("LogSoftmax", lambda lib: lib.LogSoftmax(dim=-1), []),
    ("Identity", lambda lib: lib.Identity(3, unused=True), []),
    ("Flatten", lambda lib: lib.Flatten(), []),
    ("Flatten_1_2", lambda lib: lib.Flatten(0, 1), []),
    ("Unflatten", lambda lib: lib.Unflatten(2, (2, -1)), []),
]


@pytest.mark.parametrize("name,make,needs", ACTIVATIONS, ids=[a[0] for a in ACTIVATIONS])
def test_parameter_free_modules_match_torch(name, make, needs):
    missing = [n for n in needs if not hasattr(F, n)]
    if missing:
        pytest.skip(f"F.{missing[0]} not in tinyattn.functional yet (the op is not there)")
    x = _pair((3, 4, 6), scale=2.0)
    _check(make(nn), make(tnn), [x])


@pytest.mark.parametrize("shape", [(), (5,), (2, 5), (2, 3, 5), (2, 3, 4, 5)])
def test_softmax_without_dim_takes_torchs_implicit_dim_and_warns(shape):
    """torch's deprecated rule: dim 0 for 0-, 1- and 3-d inputs, dim 1 otherwise (so a 3-d
    input is NOT normalised over its last dim), with torch's warning."""
    torch = pytest.importorskip("torch")
    x = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
    for ours, theirs in ((nn.Softmax(), torch.nn.Softmax()),
                         (nn.LogSoftmax(), torch.nn.LogSoftmax()),
                         (F.softmax, torch.nn.functional.softmax)):
        with pytest.warns(UserWarning, match="Implicit dimension choice"):
            got = ours(ta.tensor(x)).numpy()
        with pytest.warns(UserWarning):
            expected = theirs(torch.tensor(x)).numpy()
        np.testing.assert_allclose(got, expected, rtol=1e-6, atol=1e-7)
    if len(shape) == 3:                                   # negative control: not dim -1
        assert not np.allclose(nn.Softmax(dim=-1)(ta.tensor(x)).numpy(), got)
    assert repr(nn.Softmax()) == "Softmax(dim=None)"


def test_unflatten_names_the_sizes_that_do_not_fit():
    with pytest.raises(ValueError, match=r"size 6 .* cannot be split into \(4, -1\)"):
        nn.Unflatten(1, (4, -1))(ta.zeros(2, 6))
    with pytest.raises(ValueError, match="at most one"):
        nn.Unflatten(1, (-1, -1))


# ------------------------------------------------------------------ losses
CE_CASES = {
    "index (N, C)": ((6, 5), lambda r: r.integers(0, 5, 6)),
    "index ignore": ((6, 5), lambda r: np.array([1, -100, 3, 0, -100, 4])),
    "index (N, C, d1, d2)": ((3, 5, 2, 4), lambda r: r.integers(0, 5, (3, 2, 4))),
    "unbatched (C,)": ((5,), lambda r: np.array(3)),
    "probabilities (N, C, d)": ((3, 5, 2), lambda r: _softmax(r.standard_normal((3, 5, 2)))),
}


def _softmax(z):
    e = np.exp(z - z.max(1, keepdims=True))
    return e / e.sum(1, keepdims=True)


@pytest.mark.parametrize("case", list(CE_CASES))
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("smoothing", [0.0, 0.15])
@pytest.mark.parametrize("weighted", [False, True])
def test_cross_entropy_loss_matches_torch(case, reduction, smoothing, weighted):
    shape, make_target = CE_CASES[case]
    rng = np.random.default_rng(1)
    target = make_target(rng)
    weight = rng.random(5) + 0.2 if weighted else None
    ours = nn.CrossEntropyLoss(weight=None if weight is None else ta.tensor(weight),
                               reduction=reduction, label_smoothing=smoothing)
    theirs = tnn.CrossEntropyLoss(weight=None if weight is None else torch.tensor(weight),
                                  reduction=reduction, label_smoothing=smoothing)
    _check(ours, theirs, [_pair(shape, scale=2.0), (ta.tensor(target), torch.tensor(target))])


def test_cross_entropy_weight_is_a_buffer_and_bad_layouts_are_explained():
    loss = nn.CrossEntropyLoss(weight=ta.ones(3))
    assert "weight" in loss.state_dict() and list(loss.parameters()) == []
    with pytest.raises(RuntimeError, match=r"need integer targets of shape \(2, 4\)"):
        F.cross_entropy(ta.randn(2, 3, 4), ta.tensor([[1, 2, 3], [0, 1, 2]]))
    with pytest.raises(RuntimeError, match=r"Tensor of shape \(C,\) = \(3,\)"):
        F.cross_entropy(ta.randn(2, 3), ta.tensor([0, 1]), weight=ta.ones(4))
    with pytest.raises(ValueError, match="deprecated"):
        nn.CrossEntropyLoss(size_average=True)
    with pytest.raises(RuntimeError, match="weight.detach"):
        F.cross_entropy(ta.randn(2, 3), ta.tensor([0, 1]), weight=ta.ones(3, requires_grad=True))


def test_weighted_cross_entropy_with_every_row_ignored_is_nan_as_torch():
    logits = ta.zeros(2, 3, requires_grad=True)
    loss = F.cross_entropy(logits, ta.tensor([-100, -100]), weight=ta.ones(3))
    assert np.isnan(loss.item())
    loss.backward()
    np.testing.assert_array_equal(logits.grad.numpy(), 0.0)
    logp = F.log_softmax(ta.zeros(2, 3), dim=1)
    assert np.isnan(F.nll_loss(logp, ta.tensor([-100, -100])).item())


def test_weighted_cross_entropy_gradcheck_float64():
    rng = np.random.default_rng(2)
    logits = ta.tensor(rng.standard_normal((4, 3)), requires_grad=True)
    target, weight = ta.tensor([0, 2, -100, 1]), ta.tensor(rng.random(3) + 0.1)
    assert ta.gradcheck(lambda x: F.cross_entropy(x, target, weight=weight,
                                                  label_smoothing=0.1), [logits])
    soft = ta.tensor(_softmax(rng.standard_normal((4, 3, 2))), requires_grad=True)
    x3 = ta.tensor(rng.standard_normal((4, 3, 2)), requires_grad=True)
    assert ta.gradcheck(lambda x, q: F.cross_entropy(x, q, label_smoothing=0.2), [x3, soft])


SIMPLE_LOSSES = [
    ("MSELoss", lambda lib, r: lib.MSELoss(reduction=r), ["mse_loss"], "real"),
    ("L1Loss", lambda lib, r: lib.L1Loss(reduction=r), ["l1_loss"], "real"),
    ("BCELoss", lambda lib, r: lib.BCELoss(reduction=r), ["binary_cross_entropy"], "prob"),
    ("BCEWithLogitsLoss", lambda lib, r: lib.BCEWithLogitsLoss(reduction=r),
     ["binary_cross_entropy_with_logits"], "binary"),
    ("NLLLoss", lambda lib, r: lib.NLLLoss(reduction=r), ["nll_loss"], "index"),
]


@pytest.mark.parametrize("name,make,needs,kind", SIMPLE_LOSSES, ids=[s[0] for s in SIMPLE_LOSSES])
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_other_losses_match_torch(name, make, needs, kind, reduction):
    missing = [n for n in needs if not hasattr(F, n)]
    if missing:
        pytest.skip(f"F.{missing[0]} not in tinyattn.functional yet (the op is not there)")
    rng = np.random.default_rng(3)
    if kind == "prob":
        p = 1 / (1 + np.exp(-rng.standard_normal((4, 3))))
        x, t = (ta.tensor(p, requires_grad=True), torch.tensor(p, requires_grad=True)), \
            rng.random((4, 3))
    elif kind == "index":
        x, t = _pair((4, 3)), rng.integers(0, 3, 4)
    else:
        x = _pair((4, 3))
        t = (rng.random((4, 3)) > 0.5).astype(float) if kind == "binary" \
            else rng.standard_normal((4, 3))
    _check(make(nn, reduction), make(tnn, reduction), [x, (ta.tensor(t), torch.tensor(t))])


def test_losses_refuse_unknown_reductions():
    for loss in (nn.MSELoss, nn.L1Loss, nn.NLLLoss, nn.BCELoss, nn.BCEWithLogitsLoss,
                 nn.CrossEntropyLoss):
        with pytest.raises(ValueError, match="reduction must be one of"):
            loss(reduction="avg")


# ------------------------------------------------------------------ RMSNorm
@pytest.mark.parametrize("shape,normalized", [((2, 3, 8), 8), ((2, 3, 4), (3, 4))])
@pytest.mark.parametrize("eps", [None, 1e-5])
@pytest.mark.parametrize("affine", [True, False])
def test_rms_norm_matches_torch(shape, normalized, eps, affine):
    ours = nn.RMSNorm(normalized, eps=eps, elementwise_affine=affine).double()
    theirs = tnn.RMSNorm(normalized, eps=eps, elementwise_affine=affine).double()
    if affine:
        w = np.random.default_rng(4).standard_normal(ours.weight.shape)
        ours.load_state_dict({"weight": w})
        theirs.load_state_dict({"weight": torch.tensor(w)})
    _check(ours, theirs, [_pair(shape, scale=3.0)])
    if affine:
        np.testing.assert_allclose(ours.weight.grad.numpy(), theirs.weight.grad.numpy(),
                                   rtol=1e-10)


def test_rms_norm_default_eps_is_the_dtypes_machine_epsilon():
    x = ta.zeros(2, 4)
    y = F.rms_norm(x, 4)                        # a zero row: 0, not NaN
    assert np.array_equal(y.numpy(), np.zeros((2, 4)))
    tiny = ta.tensor(np.full((1, 4), 1e-4, np.float32))
    expected = 1e-4 / np.sqrt(1e-8 + np.finfo(np.float32).eps)
    np.testing.assert_allclose(F.rms_norm(tiny, 4).numpy(), expected, rtol=1e-5)
    assert F.rms_norm(tiny, 4).dtype == np.float32
    with pytest.raises(RuntimeError, match=r"normalized_shape \(3,\) must equal the last dims"):
        F.rms_norm(ta.zeros(2, 4), 3)
    with pytest.raises(RuntimeError, match=r"weight has shape \(3,\), expected \(4,\)"):
        F.rms_norm(ta.zeros(2, 4), 4, ta.ones(3))


def test_rms_norm_negative_control_layer_norm_differs():
    """The parity above is not vacuous: layer norm on the same non-centred input differs."""
    x = ta.tensor(3 + np.random.default_rng(5).standard_normal((2, 8)))
    assert not np.allclose(F.rms_norm(x, 8).numpy(), F.layer_norm(x, 8).numpy(), atol=1e-3)


# ------------------------------------------------------------------ Embedding
def test_embedding_padding_idx_row_is_zero_and_never_trained_like_torch():
    ta.manual_seed(0)
    ours = nn.Embedding(6, 3, padding_idx=-2).double()
    assert ours.padding_idx == 4 and not ours.weight.numpy()[4].any()
    theirs = tnn.Embedding(6, 3, padding_idx=-2).double()
    theirs.load_state_dict({"weight": torch.tensor(ours.weight.numpy())})
    ids = np.array([[4, 1, 4, 2], [4, 4, 0, 1]])
    out, tout = ours(ta.tensor(ids)), theirs(torch.tensor(ids))
    g = np.random.default_rng(6).standard_normal(out.shape)
    (out * ta.tensor(g)).sum().backward()
    (tout * torch.tensor(g)).sum().backward()
    np.testing.assert_allclose(ours.weight.grad.numpy(), theirs.weight.grad.numpy(), rtol=1e-12)
    assert not ours.weight.grad.numpy()[4].any() and ours.weight.grad.numpy()[1].any()
    with pytest.raises(ValueError, match="padding_idx 6 is out of range"):
        nn.Embedding(6, 3, padding_idx=6)
    with pytest.raises(NotImplementedError, match="sparse"):
        nn.Embedding(6, 3, sparse=True)             # a sparse gradient: no such layout here


def test_embedding_from_pretrained_shares_memory_and_freezes():
    table = ta.tensor(np.arange(12.0).reshape(4, 3))
    frozen = nn.Embedding.from_pretrained(table)
    assert not frozen.weight.requires_grad and frozen.weight.numpy() is not None
    table.numpy()[0, 0] = 42.0                             # shared, as torch's
    assert frozen(ta.tensor([0])).numpy()[0, 0] == 42.0
    trained = nn.Embedding.from_pretrained(table, freeze=False, padding_idx=1)
    assert trained.weight.requires_grad and trained.weight.numpy()[1].any()   # kept as given
    with pytest.raises(ValueError, match="must be 2-D"):
        nn.Embedding.from_pretrained(ta.zeros(3))


def test_factory_keywords_make_parameters_in_that_dtype():
    for layer in (nn.Linear(3, 2, dtype=ta.float64), nn.Embedding(4, 2, dtype="float64"),
                  nn.LayerNorm(3, dtype=ta.double), nn.RMSNorm(3, dtype=ta.float64),
                  nn.SwiGLU(4, 8, dtype=ta.float64)):
        assert all(p.dtype == np.float64 for p in layer.parameters()), layer
    assert nn.Linear(3, 2, device="cpu").weight.device == "cpu"
