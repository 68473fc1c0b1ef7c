"""torch's second names, in-place forms, random fills and memory questions (ops/tensor_extras.py,
torch_top_level.py), each against torch."""
from __future__ import annotations

import numpy as np
import pytest

import tinyattn as ta
from tinyattn.ops.tensor_extras import IN_PLACE_ALIASES, IN_PLACE_OF, METHOD_ALIASES
from tinyattn.torch_top_level import ALIASES, SAME_AS_FUNCTIONAL

torch = pytest.importorskip("torch", reason="torch is the oracle for these tests")

X = [[0.5, -1.5, 2.0], [3.0, 0.25, -0.75]]
Y = [[1.0, 2.0, -1.0], [0.5, 0.25, 4.0]]


def _same(got, want):
    if isinstance(want, torch.Tensor):
        assert str(got.dtype) == str(want.dtype).replace("torch.", "")
        np.testing.assert_allclose(np.asarray(got.data, dtype=np.float64),
                                   want.double().numpy(), rtol=1e-6, atol=1e-6)
    else:
        assert got == want


def test_every_name_is_torch_s():
    for name in list(METHOD_ALIASES) + [n + "_" for n in IN_PLACE_OF] + list(IN_PLACE_ALIASES):
        assert hasattr(torch.Tensor, name), name
    for name in list(ALIASES) + list(SAME_AS_FUNCTIONAL):
        assert hasattr(torch, name), name


@pytest.mark.parametrize("alias", sorted(ALIASES))
def test_top_level_alias_computes_as_torch(alias):
    x, y = ta.tensor(X), ta.tensor(Y)
    tx, ty = torch.tensor(X), torch.tensor(Y)
    if alias in ("swapaxes", "moveaxis"):
        _same(getattr(ta, alias)(x, 0, 1), getattr(torch, alias)(tx, 0, 1))
    elif alias == "concatenate":
        _same(ta.concatenate([x, y], 1), torch.concatenate([tx, ty], 1))
    elif alias == "ger":
        _same(ta.ger(x[0], y[1]), torch.ger(tx[0], ty[1]))
    elif alias in ("arccos", "arcsin", "absolute", "negative", "fix", "arctan"):
        _same(getattr(ta, alias)(x / 4), getattr(torch, alias)(tx / 4))
    else:
        _same(getattr(ta, alias)(x, y), getattr(torch, alias)(tx, ty))


@pytest.mark.parametrize("name", sorted(IN_PLACE_OF))
def test_in_place_form_writes_what_the_op_gives(name):
    args = {"cumsum": (1,), "cumprod": (0,), "tril": (), "triu": (1,), "round": (),
            "addmm": "mm"}.get(name)
    x, tx = ta.tensor(X), torch.tensor(X)
    if args == "mm":
        a, b = ta.tensor(X), ta.tensor(Y).t()
        ta_result = ta.ones(2, 2).addmm_(a, b)
        want = torch.ones(2, 2).addmm_(torch.tensor(X), torch.tensor(Y).t())
        _same(ta_result, want)
        return
    if args is None:
        binary = name in ("eq", "ne", "lt", "gt", "le", "ge", "logical_and", "logical_or",
                          "logical_xor", "atan2")
        args = (ta.tensor(Y),) if binary else ()
        torch_args = (torch.tensor(Y),) if binary else ()
    else:
        torch_args = args
    if name in ("acos", "asin"):
        x, tx = x / 4, tx / 4
    before = x._version
    out = getattr(x, name + "_")(*args)
    assert out is x and x._version == before + 1
    _same(x, getattr(tx, name + "_")(*torch_args))


def test_in_place_form_records_the_op_for_backward():
    w = ta.tensor(X, requires_grad=True)
    tw = torch.tensor(X, requires_grad=True)
    y = w * 1.0
    y.cumsum_(1)
    ty = tw * 1.0
    ty.cumsum_(1)
    (y * ta.tensor(Y)).sum().backward()
    (ty * torch.tensor(Y)).sum().backward()
    _same(w.grad, tw.grad)


@pytest.mark.parametrize("name,args", [("unsqueeze_", (0,)), ("squeeze_", ()), ("t_", ()),
                                       ("transpose_", (0, 1)), ("swapaxes_", (1, 0)),
                                       ("swapdims_", (0, 1))])
def test_reshape_in_place_as_torch(name, args):
    base = [[[1.0, 2.0, 3.0]], [[4.0, 5.0, 6.0]]] if name == "squeeze_" else X
    w = ta.tensor(base, requires_grad=True)
    tw = torch.tensor(base, requires_grad=True)
    y, ty = w * 2.0, tw * 2.0
    getattr(y, name)(*args)
    getattr(ty, name)(*args)
    assert tuple(y.shape) == tuple(ty.shape) and y._version == ty._version
    weights = np.arange(ty.numel(), dtype=np.float32).reshape(tuple(ty.shape))
    (y * ta.tensor(weights)).sum().backward()
    (ty * torch.tensor(weights)).sum().backward()
    _same(w.grad, tw.grad)
    with pytest.raises(RuntimeError, match="leaf"):
        getattr(ta.tensor(base, requires_grad=True), name)(*args)
    plain = ta.tensor(base)                     # no gradients: just the new shape
    getattr(plain, name)(*args)
    assert tuple(plain.shape) == tuple(ty.shape)


def test_memory_questions_as_torch():
    x, tx = ta.tensor(X), torch.tensor(X)
    for a, b in ((x, tx), (x.t(), tx.t()), (x[1], tx[1]), (x[:, 1:], tx[:, 1:])):
        assert a.stride() == b.stride() and a.storage_offset() == b.storage_offset()
        assert a.stride(-1) == b.stride(-1)
    assert x[1].data_ptr() - x.data_ptr() == tx[1].data_ptr() - tx.data_ptr()
    assert x.element_size() == tx.element_size() == 4
    assert ta.tensor([1], dtype=ta.int16).element_size() == 2
    assert x.get_device() == tx.get_device() == -1
    assert x.ndimension() == 2
    for dtype in ("uint8", "int8", "bool", "float16", "bfloat16", "int64"):
        assert ta.ones(1, dtype=getattr(ta, dtype)).is_signed() == \
            torch.ones(1, dtype=getattr(torch, dtype)).is_signed(), dtype
    assert ta.is_nonzero(ta.tensor([0.5])) and not ta.is_nonzero(ta.tensor(0))
    with pytest.raises(RuntimeError, match="ambiguous"):
        ta.tensor([1, 2]).is_nonzero()
    assert ta.is_same_size(x, ta.zeros(2, 3)) and not ta.is_complex(x)
    assert ta.is_floating_point(x) and not ta.is_floating_point(ta.tensor([1]))


def test_where_method_as_torch():
    x, tx = ta.tensor(X), torch.tensor(X)
    _same(x.where(x > 0, ta.tensor(0.0)), tx.where(tx > 0, torch.tensor(0.0)))
    _same(x.where(x > 0, 7), tx.where(tx > 0, 7))


def test_random_fills_have_torch_s_distributions_and_refusals():
    ta.manual_seed(0)
    n = 200_000
    e = ta.empty(n).exponential_(2.0)
    assert abs(float(e.mean()) - 0.5) < 0.01 and float(e.min()) >= 0
    g = ta.empty(n).geometric_(0.25)
    assert abs(float(g.mean()) - 4.0) < 0.05 and float(g.min()) == 1.0
    assert np.array_equal(np.unique(g.numpy()) % 1, np.zeros(len(np.unique(g.numpy()))))
    ln = ta.empty(n, dtype=ta.float64).log_normal_(0.0, 0.5)
    assert abs(float(ln.log().mean())) < 0.01 and abs(float(ln.log().std()) - 0.5) < 0.01
    c = ta.empty(n, dtype=ta.float64).cauchy_(1.0, 2.0)
    assert abs(float(c.median()) - 1.0) < 0.05
    r = ta.empty(n, dtype=ta.int64).random_(3, 7)
    assert r.dtype == np.int64 and set(np.unique(r.numpy())) == {3, 4, 5, 6}
    assert set(np.unique(ta.empty(1000).random_(4).numpy())) == {0, 1, 2, 3}
    full = ta.empty(n).random_()
    assert 0 <= float(full.min()) and float(full.max()) <= 2 ** 24
    assert set(np.unique(ta.empty(100, dtype=ta.bool).random_().numpy())) == {False, True}
    for call, torch_call in ((lambda t: t.exponential_(-1.0), lambda t: t.exponential_(-1.0)),
                             (lambda t: t.geometric_(1.5), lambda t: t.geometric_(1.5)),
                             (lambda t: t.random_(5, 2), lambda t: t.random_(5, 2))):
        with pytest.raises(RuntimeError):
            torch_call(torch.empty(3))
        with pytest.raises(RuntimeError):
            call(ta.empty(3))


def test_top_level_forms_with_torch_s_argument_order():
    rng = np.random.default_rng(0)
    w = rng.standard_normal((5, 3)).astype(np.float32)
    i = np.array([[0, 4], [2, 2]])
    _same(ta.embedding(ta.tensor(w), ta.tensor(i)),
          torch.embedding(torch.tensor(w), torch.tensor(i)))
    x = rng.standard_normal((4, 3)).astype(np.float32)
    g, b = rng.random(3).astype(np.float32), rng.random(3).astype(np.float32)
    stats = (np.zeros(3, np.float32), np.ones(3, np.float32))
    _same(ta.batch_norm(ta.tensor(x), ta.tensor(g), ta.tensor(b), ta.tensor(stats[0]),
                        ta.tensor(stats[1]), True, 0.1, 1e-5, False),
          torch.batch_norm(torch.tensor(x), torch.tensor(g), torch.tensor(b),
                           torch.tensor(stats[0]), torch.tensor(stats[1]), True, 0.1, 1e-5,
                           False))
    _same(ta.layer_norm(ta.tensor(x), (3,), ta.tensor(g), None, 1e-5, True),
          torch.layer_norm(torch.tensor(x), (3,), torch.tensor(g), None, 1e-5, True))
    _same(ta.dropout(ta.tensor(x), 0.5, False), torch.dropout(torch.tensor(x), 0.5, False))
    image = rng.standard_normal((1, 2, 5, 5)).astype(np.float32)
    kernel = rng.standard_normal((3, 2, 3, 3)).astype(np.float32)
    _same(ta.conv2d(ta.tensor(image), ta.tensor(kernel), padding=1),
          torch.conv2d(torch.tensor(image), torch.tensor(kernel), padding=1))
    _same(ta.pixel_shuffle(ta.tensor(image[:, :1].repeat(4, 1)), 2),
          torch.pixel_shuffle(torch.tensor(image[:, :1].repeat(4, 1)), 2))


def test_negative_control_a_wrong_alias_is_caught():
    """The comparison must fail for an alias bound to the wrong op."""
    with pytest.raises(AssertionError):
        _same(ta.sub(ta.tensor(X), ta.tensor(Y)), torch.multiply(torch.tensor(X),
                                                                 torch.tensor(Y)))


@pytest.mark.parametrize("name,args", [("relu_", ()), ("elu_", (0.5,)), ("leaky_relu_", (0.2,)),
                                       ("hardtanh_", (-0.5, 0.5)), ("selu_", ()),
                                       ("celu_", (0.7,)), ("threshold_", (0.1, 9.0)),
                                       ("rrelu_", ())])
def test_functional_in_place_activations_as_torch(name, args):
    import tinyattn.functional as F
    import torch.nn.functional as TF
    x, tx = ta.tensor(X), torch.tensor(X)
    assert getattr(F, name)(x, *args) is x and x._version == 1
    getattr(TF, name)(tx, *args)
    _same(x, tx)
    w, tw = ta.tensor(X, requires_grad=True), torch.tensor(X, requires_grad=True)
    y, ty = w * 1.0, tw * 1.0
    getattr(F, name)(y, *args)
    getattr(TF, name)(ty, *args)
    (y * ta.tensor(Y)).sum().backward()
    (ty * torch.tensor(Y)).sum().backward()
    _same(w.grad, tw.grad)


def test_alpha_dropout_keeps_mean_and_variance_and_torch_s_values():
    import tinyattn.functional as F
    ta.manual_seed(1)
    x = ta.randn(200_000, dtype=ta.float64)
    y = F.alpha_dropout(x, 0.2, True)
    assert abs(float(y.mean())) < 0.01 and abs(float(y.std()) - 1.0) < 0.01
    alpha = 1.7580993408473766
    a = 1 / np.sqrt((alpha ** 2 * 0.2 + 1) * 0.8)
    kept = np.isclose(y.numpy(), a * x.numpy() + alpha * a * 0.2)
    dropped = np.isclose(y.numpy(), -alpha * a + alpha * a * 0.2)     # torch's formula
    assert np.all(kept | dropped) and abs(dropped.mean() - 0.2) < 0.01
    assert F.alpha_dropout(x, 0.2, False) is x
    channels = F.feature_alpha_dropout(ta.randn(8, 16, 5), 0.5, True).numpy()
    per_channel = channels.std(axis=2)
    assert np.sum(per_channel == 0) > 20          # whole channels set to one value
    with pytest.raises(ValueError):
        F.alpha_dropout(x, 1.5, True)


def test_gumbel_softmax_samples_the_softmax():
    import tinyattn.functional as F
    ta.manual_seed(2)
    logits = ta.tensor([[0.0, 1.0, 2.0]]).expand(20_000, 3)
    soft = F.gumbel_softmax(logits, tau=0.5)
    np.testing.assert_allclose(soft.sum(-1).numpy(), 1.0, rtol=1e-5)
    hard = F.gumbel_softmax(logits, hard=True)
    assert set(np.unique(hard.numpy())) == {0.0, 1.0}
    np.testing.assert_allclose(hard.sum(-1).numpy(), 1.0)
    frequencies = hard.numpy().mean(0)                    # the Gumbel-max trick
    expected = torch.softmax(torch.tensor([0.0, 1.0, 2.0]), 0).numpy()
    np.testing.assert_allclose(frequencies, expected, atol=0.015)
    leaf = ta.tensor([[1.0, 2.0, 3.0]], requires_grad=True)
    (F.gumbel_softmax(leaf, hard=True) * ta.tensor([[1.0, 0.0, 0.0]])).sum().backward()
    assert leaf.grad is not None and np.any(leaf.grad.numpy() != 0)   # straight-through
