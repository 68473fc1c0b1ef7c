"""Creation functions (tinyattn/factories.py) against PyTorch's: size forms, dtype inference,
the dtype/device/requires_grad keywords, the *_like and x.new_* families, random draws and
multinomial sampling (checked statistically, with a negative control)."""
import math

import numpy as np
import pytest

import tinyattn as ta

torch = pytest.importorskip("torch")


def _dtype_name(t):
    return str(t.dtype).replace("torch.", "")


def _same(ours, theirs):
    assert ours.shape == tuple(theirs.shape)
    assert str(ours.dtype) == _dtype_name(theirs), (ours.dtype, theirs.dtype)
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("name", ["zeros", "ones", "empty", "rand", "randn"])
@pytest.mark.parametrize("size", [(2, 3), ((2, 3),), ([2, 3],), ((),), (0,), (4,)])
def test_size_forms(name, size):
    ours, theirs = getattr(ta, name)(*size), getattr(torch, name)(*size)
    assert ours.shape == tuple(theirs.shape) and ours.dtype == np.float32
    assert getattr(ta, name)(size=(2, 3)).shape == (2, 3)
    assert getattr(ta, name)(ta.zeros(2, 5).shape).shape == (2, 5)   # x.shape, as torch.Size


@pytest.mark.parametrize("name", ["zeros", "ones", "empty", "rand", "randn"])
def test_bad_sizes_are_refused_clearly(name):
    fn = getattr(ta, name)
    with pytest.raises(TypeError, match="whole numbers"):
        fn(2.5)
    with pytest.raises(RuntimeError, match="negative"):       # torch's error type
        fn(2, -1)
    with pytest.raises(TypeError, match="either positionally or as size="):
        fn(2, size=(2,))


def test_zero_and_one_fills_match_torch_and_take_the_keywords():
    _same(ta.zeros(2, 3), torch.zeros(2, 3))
    _same(ta.ones(3, dtype=ta.int64), torch.ones(3, dtype=torch.int64))
    _same(ta.empty(2, dtype=ta.float64), torch.zeros(2, dtype=torch.float64))  # empty: zeros
    x = ta.ones(2, 2, dtype="float64", device="cpu", requires_grad=True)
    assert x.requires_grad and x.is_leaf and x.dtype == np.float64 and x.device == "cpu"
    with pytest.raises(TypeError, match="floating-point"):
        ta.zeros(2, dtype=ta.long, requires_grad=True)


@pytest.mark.parametrize("value", [3, 2.5, True, -1])
def test_full_infers_the_dtype_like_torch(value):
    _same(ta.full((2, 3), value), torch.full((2, 3), value))
    _same(ta.full([2], value, dtype=ta.float64), torch.full([2], value, dtype=torch.float64))
    _same(ta.full(3, value), torch.full((3,), value))


def test_eye_linspace_logspace_match_torch():
    _same(ta.eye(3), torch.eye(3))
    _same(ta.eye(2, 4, dtype=ta.float64), torch.eye(2, 4, dtype=torch.float64))
    _same(ta.eye(0), torch.eye(0))
    for args in [(0, 1, 5), (-2.5, 3, 1), (0, 1, 0), (3, -3, 4)]:
        _same(ta.linspace(*args), torch.linspace(*args))
    _same(ta.linspace(0, 10, 3, dtype=ta.int64), torch.linspace(0, 10, 3, dtype=torch.int64))
    _same(ta.logspace(0, 2, 3), torch.logspace(0, 2, 3))
    _same(ta.logspace(0, 3, 4, base=2), torch.logspace(0, 3, 4, base=2))
    with pytest.raises(RuntimeError, match="non-negative"):
        ta.linspace(0, 1, -1)


@pytest.mark.parametrize("args,kwargs", [
    ((5,), {}), ((5.0,), {}), ((2, 9, 3), {}), ((0, 1, 0.3), {}), ((1, 0, -0.5), {}),
    ((3,), {"dtype": ta.float64}), ((0, 10, 3), {"dtype": ta.int32}), ((-3, 3), {}),
    ((0,), {}), ((0.5, 2.5), {}),
])
def test_arange_matches_torch(args, kwargs):
    torch_kwargs = {k: getattr(torch, v) for k, v in kwargs.items()}
    _same(ta.arange(*args, **kwargs), torch.arange(*args, **torch_kwargs))


def test_arange_refuses_what_torch_refuses():
    with pytest.raises(RuntimeError, match="nonzero"):         # torch's error types
        ta.arange(0, 1, 0)
    with pytest.raises(RuntimeError, match="disagree in sign"):
        ta.arange(1, 0, 1)
    with pytest.raises(RuntimeError, match="finite"):
        ta.arange(0, math.inf)


def test_random_factories_are_seeded_shaped_and_typed():
    ta.manual_seed(3)
    a = ta.randn(4, 5, dtype=ta.float64)
    ta.manual_seed(3)
    b = ta.randn(4, 5, dtype=ta.float64)
    np.testing.assert_array_equal(a.numpy(), b.numpy())
    u = ta.rand(1000)
    assert 0 <= u.numpy().min() and u.numpy().max() < 1 and u.dtype == np.float32
    gen = np.random.default_rng(1)
    np.testing.assert_array_equal(ta.rand(3, generator=gen).numpy(),
                                  np.random.default_rng(1).random(3).astype(np.float32))
    with pytest.raises(TypeError, match="randint"):
        ta.rand(2, dtype=ta.int64)


def test_randint_matches_torch_signatures_and_range():
    ta.manual_seed(0)
    for args, low, high in [((5, (2000,)), 0, 5), ((-3, 4, (2000,)), -3, 4)]:
        draws = ta.randint(*args)
        assert draws.dtype == np.int64 == getattr(np, _dtype_name(torch.randint(*args)))
        values = set(draws.numpy().tolist())
        assert values == set(range(low, high))              # every value, nothing outside
    assert ta.randint(3, size=(2, 2)).shape == (2, 2)
    assert ta.randint(3, (2,), dtype=ta.float32).dtype == np.float32
    with pytest.raises(ValueError, match="less than high"):
        ta.randint(5, 5, (2,))
    with pytest.raises(TypeError, match="tuple"):
        ta.randint(5, 3)


def test_like_functions_inherit_dtype_and_device_like_torch():
    for src, tsrc in [(ta.ones(2, 3, dtype=ta.int64), torch.ones(2, 3, dtype=torch.int64)),
                      (ta.ones(2, dtype=ta.float64), torch.ones(2, dtype=torch.float64))]:
        _same(ta.zeros_like(src), torch.zeros_like(tsrc))
        _same(ta.ones_like(src, dtype=ta.float32), torch.ones_like(tsrc, dtype=torch.float32))
        _same(ta.empty_like(src), torch.zeros_like(tsrc))
        _same(ta.full_like(src, 2.7), torch.full_like(tsrc, 2.7))   # int: 2, as torch
    x = ta.ones(3, dtype=ta.float64)
    assert ta.rand_like(x).dtype == ta.randn_like(x).dtype == np.float64
    assert ta.randn_like(x, requires_grad=True).requires_grad
    r = ta.randint_like(x, 3, 7)
    assert r.dtype == np.float64 and set(r.numpy().tolist()) <= {3.0, 4.0, 5.0, 6.0}
    assert ta.randint_like(ta.ones(4, dtype=ta.int64), 2).dtype == np.int64
    for fn in (ta.rand_like, ta.randn_like):
        with pytest.raises(TypeError, match="floating"):
            fn(ta.ones(2, dtype=ta.int64))


def test_new_methods_follow_torch():
    x, xt = ta.ones(2, dtype=ta.float64, requires_grad=True), torch.ones(2, dtype=torch.float64,
                                                                         requires_grad=True)
    _same(x.new_zeros(2, 3), xt.new_zeros(2, 3))
    _same(x.new_ones((3,)), xt.new_ones((3,)))
    _same(x.new_full((2,), 3), xt.new_full((2,), 3))
    _same(x.new_empty(2), xt.new_zeros(2))
    _same(x.new_tensor([1, 2]), xt.new_tensor([1, 2]))
    _same(x.new_zeros(2, dtype=ta.int64), xt.new_zeros(2, dtype=torch.int64))
    assert not x.new_zeros(2).requires_grad and x.new_zeros(2, requires_grad=True).requires_grad
    longs, tlongs = ta.ones(2, dtype=ta.int64), torch.ones(2, dtype=torch.int64)
    _same(longs.new_tensor([1.5, -2.5]), tlongs.new_tensor([1.5, -2.5]))
    _same(longs.new_full((1,), 2.5), tlongs.new_full((1,), 2.5))
    _same(ta.ones(2).type_as(longs), torch.ones(2).type_as(tlongs))


# ------------------------------------------------------------------ multinomial
def _frequencies_agree(draws, probs, sigmas=5.0):
    """Each category's count within `sigmas` binomial standard deviations of n p."""
    n = draws.size
    counts = np.bincount(draws.ravel(), minlength=len(probs))
    expected = n * np.asarray(probs)
    spread = np.sqrt(n * np.asarray(probs) * (1 - np.asarray(probs))) + 1e-9
    return bool((np.abs(counts - expected) <= sigmas * spread).all())


def test_multinomial_with_replacement_draws_in_proportion():
    ta.manual_seed(0)
    weights = np.array([1.0, 2.0, 0.0, 5.0])             # unnormalised, one impossible
    draws = ta.multinomial(ta.tensor(weights), 20000, replacement=True)
    assert draws.dtype == np.int64 and draws.shape == (20000,)
    assert 2 not in draws.numpy()
    assert _frequencies_agree(draws.numpy(), weights / weights.sum())


def test_multinomial_without_replacement():
    ta.manual_seed(1)
    weights = np.array([[1.0, 2.0, 3.0, 4.0], [0.0, 1.0, 0.0, 1.0]])
    draws = ta.multinomial(ta.tensor(weights), 2).numpy()
    assert draws.shape == (2, 2) and len(set(draws[0])) == 2
    assert set(draws[1]) == {1, 3}                       # zero weights never before positives
    firsts = np.array([ta.multinomial(ta.tensor(weights[0]), 2).numpy()[0]
                       for _ in range(4000)])
    assert _frequencies_agree(firsts, weights[0] / weights[0].sum())   # first draw in proportion
    # As torch: once the positive categories are used up, zero-weight ones come last.
    np.testing.assert_array_equal(np.sort(ta.multinomial(ta.tensor([0.0, 1.0, 3.0]), 3).numpy()),
                                  [0, 1, 2])


def test_negative_control_the_frequency_check_rejects_a_biased_sampler():
    uniform = np.random.default_rng(0).integers(0, 4, 20000)
    assert not _frequencies_agree(uniform, np.array([1.0, 2.0, 0.0, 5.0]) / 8)


def test_multinomial_generator_reproduces_and_errors_are_clear():
    weights = ta.tensor([0.2, 0.3, 0.5])
    a = ta.multinomial(weights, 5, True, generator=np.random.default_rng(7))
    b = ta.multinomial(weights, 5, True, generator=np.random.default_rng(7))
    np.testing.assert_array_equal(a.numpy(), b.numpy())
    for call, message in [
        (lambda: ta.multinomial(weights, 4), "without replacement"),
        (lambda: ta.multinomial(ta.tensor([-1.0, 1.0]), 1), ">= 0"),
        (lambda: ta.multinomial(ta.tensor([1.0, math.inf]), 1), ">= 0"),
        (lambda: ta.multinomial(ta.tensor([0.0, 0.0]), 1), "positive sum"),
        (lambda: ta.multinomial(ta.ones(2, 2, 2), 1), "1-D"),
        (lambda: ta.multinomial(weights, 0), "positive"),
    ]:
        with pytest.raises(RuntimeError, match=message):
            call()
    with pytest.raises(RuntimeError, match="floating"):
        ta.multinomial(ta.tensor([1, 2]), 1)


def test_arange_with_an_integer_dtype_truncates_as_torch():
    """torch converts start and step (and, for int64, the end) to the integer dtype before
    counting: arange(3.1, dtype=int64) is [0, 1, 2]; arange(-0.9, 2.1, 2.0, dtype=int32) is
    [0, 2]. tinyattn counted in floats and gave one element more (a silent difference)."""
    torch = pytest.importorskip("torch", reason="torch is the oracle")
    cases = [(3.1,), (0.0, -8.000001, -4.0), (1.0, 5.000001, 2.0), (-0.9, 2.1, 2.0),
             (2.1, -2.9, -1.0), (0.1, -7.9, -4.0), (0.5, 3.7, 1.5), (0, 10.01, 1.5)]
    for name in ("int64", "int32", "int16", "int8", "float32"):
        for args in cases:
            want = torch.arange(*args, dtype=getattr(torch, name))
            got = ta.arange(*args, dtype=getattr(ta, name))
            assert got.tolist() == want.tolist(), (name, args)
    with pytest.raises(RuntimeError, match="nonzero"):       # torch repeats start instead
        ta.arange(0, 3, 0.5, dtype=ta.int32)
