"""Issue 30's promotion and accuracy items, torch as the oracle.

- mixed floating dtypes promote as torch's ``result_type`` in every kind of op (binary ops,
  where, cat/stack, losses, in place), are refused where torch refuses them, and the opt-in
  strict mode (``tinyattn.set_strict_promotion``) refuses each implicit float promotion;
- ``pow`` with 0-d operands of every kind takes torch's dtype;
- what an op saves for backward: an in-place change to an input or to the output makes the
  backward raise in tinyattn exactly when it raises in torch (d2l's masked_softmax writes
  into a quotient; torch's Div does not keep its output);
- ``max(x, dim)`` sends the gradient at ties to the returned index;
- ``base ** tensor`` is a real power (RoPE tables at long positions), ``x ** 3.0`` is fast.
"""
import itertools
import time

import numpy as np
import pytest

import tinyattn as ta
import tinyattn.functional as F

torch = pytest.importorskip("torch", reason="these tests compare with PyTorch")
TF = torch.nn.functional

FLOATS = ["float16", "bfloat16", "float32", "float64"]


def _pair(lib, da, db, zero_dim_b=False):
    rng = np.random.default_rng(0)
    a = rng.standard_normal((3, 4)) + 2.0
    b = rng.standard_normal(() if zero_dim_b else (3, 4)) + 2.0
    return (lib.tensor(a.astype(np.float32), dtype=getattr(lib, da)),
            lib.tensor(np.asarray(b, dtype=np.float32), dtype=getattr(lib, db)))


def _dtype_name(t):
    return str(t.dtype).replace("torch.", "")


# Ops whose mixed floating inputs torch promotes; each is (ours, torch's) on two tensors.
PROMOTING = {
    "add": (lambda a, b: a + b, lambda a, b: a + b),
    "mul": (lambda a, b: a * b, lambda a, b: a * b),
    "div": (lambda a, b: a / b, lambda a, b: a / b),
    "pow": (lambda a, b: a ** b, lambda a, b: a ** b),
    "maximum": (ta.maximum, torch.maximum),
    "atan2": (ta.atan2, torch.atan2),
    "where": (lambda a, b: ta.where(a > 2, a, b), lambda a, b: torch.where(a > 2, a, b)),
    "cat": (lambda a, b: ta.cat([a, b]), lambda a, b: torch.cat([a, b])),
    "stack": (lambda a, b: ta.stack([a, b]), lambda a, b: torch.stack([a, b])),
    "mse_loss": (F.mse_loss, TF.mse_loss),
    "l1_loss": (F.l1_loss, TF.l1_loss),
    "bce_with_logits": (lambda a, b: F.binary_cross_entropy_with_logits(a, b.sigmoid()),
                        lambda a, b: TF.binary_cross_entropy_with_logits(a, b.sigmoid())),
    "cross_entropy_probs": (lambda a, b: F.cross_entropy(a, b.softmax(-1)),
                            lambda a, b: TF.cross_entropy(a, b.softmax(-1))),
}


@pytest.mark.parametrize("name", list(PROMOTING))
def test_mixed_floats_promote_as_torch_with_gradients_in_each_dtype(name):
    ours_fn, torch_fn = PROMOTING[name]
    for da, db in itertools.product(FLOATS, FLOATS):
        if da == db or (name == "bce_with_logits" and {da, db} == {"float16", "bfloat16"}):
            continue            # torch's composite gives the target's bfloat16 there
        a, b = _pair(ta, da, db)
        ta_a, ta_b = a.detach().requires_grad_(), b.detach().requires_grad_()
        th_a, th_b = (torch.tensor(t.float().numpy(), dtype=getattr(torch, str(t.dtype)),
                                   requires_grad=True) for t in (a, b))
        got, expected = ours_fn(ta_a, ta_b), torch_fn(th_a, th_b)
        assert str(got.dtype) == _dtype_name(expected), (name, da, db)
        tol = 1e-2 if {da, db} & {"float16", "bfloat16"} else 1e-5
        np.testing.assert_allclose(got.float().numpy(), expected.float().detach().numpy(),
                                   rtol=tol, atol=tol)
        got.float().sum().backward()
        expected.float().sum().backward()
        for ours, theirs in ((ta_a, th_a), (ta_b, th_b)):
            assert str(ours.grad.dtype) == _dtype_name(theirs.grad), (name, da, db)
        with ta.strict_promotion(), pytest.raises(TypeError, match="strict promotion"):
            ours_fn(a, b)


REFUSING = {
    "matmul": (lambda a, b: a @ b.T, lambda a, b: a @ b.T),
    "linear": (F.linear, TF.linear),
    "layer_norm": (lambda a, b: F.layer_norm(a, (4,), b[0]),
                   lambda a, b: TF.layer_norm(a, (4,), b[0])),
    "sdpa": (lambda a, b: F.scaled_dot_product_attention(a[None], b[None], b[None]),
             lambda a, b: TF.scaled_dot_product_attention(a[None], b[None], b[None])),
    "binary_cross_entropy": (lambda a, b: F.binary_cross_entropy(a.sigmoid(), b.sigmoid()),
                             lambda a, b: TF.binary_cross_entropy(a.sigmoid(), b.sigmoid())),
}


@pytest.mark.parametrize("name", list(REFUSING))
def test_mixed_floats_are_refused_where_torch_refuses(name):
    ours_fn, torch_fn = REFUSING[name]
    with pytest.raises(RuntimeError):
        torch_fn(*_pair(torch, "float32", "float64"))
    with pytest.raises(RuntimeError, match="same dtype"):        # torch's error type too
        ours_fn(*_pair(ta, "float32", "float64"))
    ours_fn(*_pair(ta, "float64", "float64"))                  # negative control: one dtype


def test_zero_dim_and_numbers_keep_the_tensors_dtype_also_in_strict_mode():
    for lib in (ta, torch):
        a, b = _pair(lib, "float32", "float64", zero_dim_b=True)
        h, _ = _pair(lib, "bfloat16", "float32")
        assert _dtype_name(a * b) == "float32" and _dtype_name(h * 2.5) == "bfloat16"
    with ta.strict_promotion():                     # no promotion happens: nothing refused
        a, b = _pair(ta, "float32", "float64", zero_dim_b=True)
        assert (a * b).dtype == np.float32


def test_in_place_keeps_the_target_dtype_and_refuses_a_float_into_an_integer():
    for lib in (ta, torch):
        x32, x64 = _pair(lib, "float32", "float64")
        h16, _ = _pair(lib, "bfloat16", "float32")
        x32 += x64
        h16 *= x32
        assert _dtype_name(x32) == "float32" and _dtype_name(h16) == "bfloat16"
        with pytest.raises(RuntimeError, match="cannot be|can't be cast"):
            ints = lib.tensor([1, 2])
            ints += lib.tensor([0.5, 0.5])


def test_strict_mode_switch_and_context_restore_the_setting():
    assert not ta.is_strict_promotion()
    a, b = _pair(ta, "float32", "float64")
    with ta.strict_promotion():
        assert ta.is_strict_promotion()
        with pytest.raises(TypeError, match=r"float32 and float64.*\.double\(\)"):
            a + b
        with ta.strict_promotion(False):
            assert (a + b).dtype == np.float64
        assert ta.is_strict_promotion()
    assert not ta.is_strict_promotion()
    ta.set_strict_promotion(True)
    try:
        with pytest.raises(TypeError):
            ta.cat([a, b])
    finally:
        ta.set_strict_promotion(False)
    assert ta.cat([a, b]).dtype == np.float64


# -------------------------------------------------------------------------------- pow
INTS = ["bool", "uint8", "int8", "int16", "int32", "int64"]


def _operand(lib, dtype, zero_dim, values):
    data = values[0] if zero_dim else values
    if dtype == "bool":
        data = [True, False][0] if zero_dim else [True, False]
    return lib.tensor(data, dtype=getattr(lib, dtype))


@pytest.mark.parametrize("zero_dim", [(True, False), (False, True), (True, True)],
                         ids=["0d-base", "0d-exponent", "both-0d"])
def test_pow_dtypes_with_zero_dim_operands_as_torch(zero_dim):
    for db, de in itertools.product(INTS + ["float16", "float32"], repeat=2):
        pair = []
        for lib in (ta, torch):
            base = _operand(lib, db, zero_dim[0], [3, 2])
            exponent = _operand(lib, de, zero_dim[1], [5, 2])
            try:
                pair.append(base ** exponent)
            except (RuntimeError, ValueError, TypeError) as exc:
                pair.append(exc)
        ours, theirs = pair
        if isinstance(theirs, Exception):
            assert isinstance(ours, Exception), (db, de, zero_dim)
            continue
        assert not isinstance(ours, Exception), (db, de, zero_dim, ours)
        assert str(ours.dtype) == _dtype_name(theirs), (db, de, zero_dim)
        np.testing.assert_allclose(ours.float().numpy(), theirs.float().numpy(), rtol=1e-3)


def test_the_issues_pow_cases():
    out = ta.tensor(3, dtype=ta.uint8) ** ta.tensor([5, 2], dtype=ta.int8)
    assert out.dtype == np.int8 and out.tolist() == [-13, 9]          # torch: int8, wraps
    half = ta.tensor([2, 3]) ** ta.tensor(2.0, dtype=ta.float16)
    assert half.dtype == np.float16 and half.tolist() == [4.0, 9.0]
    assert ((-2.0) ** ta.tensor([3.0, 2.0])).tolist() == [-8.0, 4.0]   # torch: real values


# ------------------------------------------------------------- saved tensors, in place
SAVED = {
    "div": (2, lambda L, a, b: a / b), "mul": (2, lambda L, a, b: a * b),
    "exp": (1, lambda L, a: a.exp()), "log": (1, lambda L, a: a.log()),
    "tanh": (1, lambda L, a: a.tanh()), "sigmoid": (1, lambda L, a: a.sigmoid()),
    "sqrt": (1, lambda L, a: a.sqrt()), "relu": (1, lambda L, a: a.relu()),
    "softmax": (1, lambda L, a: a.softmax(-1)), "log_softmax": (1, lambda L, a: a.log_softmax(-1)),
    "pow3": (1, lambda L, a: a ** 3), "rpow": (1, lambda L, a: 2 ** a),
    "pow_tensor": (2, lambda L, a, b: a ** b), "amax": (1, lambda L, a: a.amax(0)),
    "max_dim": (1, lambda L, a: a.max(0)[0]), "max": (1, lambda L, a: a.max()),
    "matmul": (2, lambda L, a, b: a @ b.T), "var": (1, lambda L, a: a.var(0)),
    "std": (1, lambda L, a: a.std(0)), "norm": (1, lambda L, a: a.norm()),
    "logsumexp": (1, lambda L, a: a.logsumexp(0)), "clamp": (1, lambda L, a: a.clamp(0.6, 1.0)),
    "maximum": (2, lambda L, a, b: L.maximum(a, b)), "prod": (1, lambda L, a: a.prod(0)),
    "cumprod": (1, lambda L, a: a.cumprod(0)), "cumsum": (1, lambda L, a: a.cumsum(0)),
    "layer_norm": (1, lambda L, a: (F if L is ta else TF).layer_norm(a, (4,))),
    "mse_loss": (2, lambda L, a, b: (F if L is ta else TF).mse_loss(a, b)),
    "softplus": (1, lambda L, a: (F if L is ta else TF).softplus(a)),
    "leaky_relu": (1, lambda L, a: (F if L is ta else TF).leaky_relu(a)),
    "elu": (1, lambda L, a: (F if L is ta else TF).elu(a)),
    "hardtanh": (1, lambda L, a: (F if L is ta else TF).hardtanh(a)),
    "sin": (1, lambda L, a: a.sin()), "abs": (1, lambda L, a: a.abs()),
}


def _backward_after_write(lib, fn, arrays, which):
    """'raise' or 'ok': the op, then add_(1) into input ``which`` (-1: the output), then
    backward through the op."""
    xs = [lib.tensor(a, requires_grad=True) * 1 for a in arrays]     # non-leaf inputs
    out = fn(lib, *xs)
    (out if which == -1 else xs[which]).add_(1.0)
    try:
        (out * 1).sum().backward()
    except RuntimeError as exc:
        assert "modified by an inplace operation" in str(exc)
        return "raise"
    return "ok"


@pytest.mark.parametrize("name", list(SAVED))
def test_in_place_writes_break_the_backward_exactly_when_they_do_in_torch(name):
    count, fn = SAVED[name]
    rng = np.random.default_rng(1)
    arrays = [np.abs(rng.standard_normal((3, 4))).astype(np.float32) + 0.5
              for _ in range(count)]
    for which in list(range(count)) + [-1]:
        expected = _backward_after_write(torch, fn, arrays, which)
        assert _backward_after_write(ta, fn, arrays, which) == expected, (name, which)


def test_d2l_masked_softmax_writes_into_a_quotient():
    """d2l's masked_softmax pattern: X / valid_lens, then an in-place fill of that quotient;
    torch's Div keeps no output, so the backward runs, with torch's gradient."""
    grads = []
    for lib in (ta, torch):
        x = lib.tensor(np.arange(1.0, 7.0).reshape(2, 3), requires_grad=True)
        scale = lib.tensor([[2.0], [4.0]], requires_grad=True)
        quotient = x / scale
        quotient[:, 2] = -1e6                      # in place into Div's output
        quotient.softmax(-1).pow(2).sum().backward()
        grads.append((x.grad.numpy().copy(), scale.grad.numpy().copy()))
    for ours, theirs in zip(*grads):
        np.testing.assert_allclose(ours, theirs, rtol=1e-6)


def test_max_dim_gradient_at_ties_goes_to_the_returned_index():
    values = np.array([[1.0, 3.0, 3.0, 2.0], [5.0, 5.0, 0.0, 5.0]])
    for op in ("max", "min"):
        for dim, keepdim in itertools.product((0, 1, -1), (False, True)):
            grads = []
            for lib in (ta, torch):
                x = lib.tensor(values, requires_grad=True)
                out, index = getattr(x, op)(dim, keepdim=keepdim)
                (out * (lib.arange(out.numel()).reshape(out.shape) + 1)).sum().backward()
                grads.append((x.grad.numpy(), index.numpy()))
            np.testing.assert_array_equal(grads[0][0], grads[1][0])
            np.testing.assert_array_equal(grads[0][1], grads[1][1])
    x = ta.tensor(values, requires_grad=True)          # negative control: amax splits ties
    x.amax(1).sum().backward()
    assert x.grad.numpy()[0].tolist() == [0.0, 0.5, 0.5, 0.0]


# ------------------------------------------------------------------- accuracy and speed
def test_base_to_a_tensor_power_is_a_real_power_rope_at_long_positions():
    """RoPE's inverse frequencies base ** (-2i/d) and angles at positions up to 100k:
    tinyattn's float32 tables match torch's to float32 rounding (exp(x ln b) drifted 8e-3)."""
    d = 128
    exponents = np.arange(0, d, 2, dtype=np.float32) / d
    ours = 10000.0 ** ta.tensor(-exponents)
    theirs = 10000.0 ** torch.tensor(-exponents)
    exact = 10000.0 ** -exponents.astype(np.float64)
    assert np.abs(ours.numpy() / exact - 1).max() <= 2 * np.finfo(np.float32).eps
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=2e-7, atol=0)
    positions = np.arange(0, 100_000, 997, dtype=np.float32)[:, None]
    exact_angles = positions.astype(np.float64) * exact[None, :]

    def angle_error(inv_freq):
        return np.abs(positions * inv_freq[None, :] - exact_angles).max()

    ours_error, torch_error = angle_error(ours.numpy()), angle_error(theirs.numpy())
    assert ours_error <= 2 * torch_error + 1e-3, (ours_error, torch_error)
    composed = (ta.tensor(-exponents) * float(np.log(10000.0))).exp()   # negative control
    assert np.abs(composed.numpy() / exact - 1).max() > 2 * np.finfo(np.float32).eps


def test_small_whole_exponents_skip_the_general_float_power():
    x = ta.randn(400_000)
    exact = x.numpy().astype(np.float64)
    for p in (2.0, 3.0, 3, -2.0, 5.0, 0.5):
        got = (x.abs() + 0.1 if p in (-2.0, 0.5) else x) ** p
        base = np.abs(exact) + np.float32(0.1) if p in (-2.0, 0.5) else exact
        np.testing.assert_allclose(got.numpy(), base.astype(np.float32).astype(np.float64) ** p,
                                   rtol=3e-7)
    start = time.perf_counter()
    for _ in range(5):
        x ** 3.0
    cube = time.perf_counter() - start
    start = time.perf_counter()
    for _ in range(5):
        np.power(x.numpy(), np.float32(3.1))             # the general power, for scale
    general = time.perf_counter() - start
    assert cube < general / 3, (cube, general)


def test_float32_error_is_at_most_twice_torchs_over_the_accuracy_table():
    """tests/accuracy_vs_torch.py: reductions over 10^6 elements (and along a strided axis),
    running sums, products, softmax rows of 50,000, layer norm, matmuls with K = 4096 and the
    pointwise functions, each against torch's float64. A float32 sum along axis 0 accumulated
    one row after another (NumPy's way there) was 96x torch's error; cumsum 220x."""
    from accuracy_vs_torch import measure

    floor = np.finfo(np.float32).eps / 4            # both exact to rounding: no ratio to take
    worse = [(name, ours, theirs) for name, ours, theirs in measure()
             if ours > 2 * max(theirs, floor)]
    assert not worse, worse


def test_accuracy_table_can_fail_negative_control(monkeypatch):
    """With float64 accumulation off, the strided float32 sum is far beyond torch's."""
    from accuracy_vs_torch import measure
    from tinyattn import backend

    monkeypatch.setattr(backend, "WIDE_SUM_TERMS", 10**12)
    monkeypatch.setattr(backend, "SHORT_SUM_TERMS", 10**12)
    ((name, ours, theirs),) = measure(["sum_dim"])
    assert ours > 10 * theirs, (ours, theirs)


def test_repeated_indices_while_recording_give_torchs_gradients():
    """scatter and x[index] = v with an index that repeats a position: torch accepts them
    and gives every written value that position's gradient; so does tinyattn."""
    weights = np.array([5.0, 7.0, 11.0])
    results = []
    for lib in (ta, torch):
        x = lib.tensor(np.zeros(3, dtype=np.float32), requires_grad=True) * 1
        src = lib.tensor([1.0, 2.0, 3.0], requires_grad=True)
        out = x.scatter(0, lib.tensor([0, 0, 1]), src)
        (out * lib.tensor(weights, dtype=lib.float32)).sum().backward()
        y = lib.tensor(np.zeros(3, dtype=np.float32), requires_grad=True)
        z = y * 1
        v = lib.tensor([1.0, 2.0], requires_grad=True)
        z[lib.tensor([2, 2])] = v
        (z * lib.tensor(weights, dtype=lib.float32)).sum().backward()
        results.append([src.grad.numpy().copy(), v.grad.numpy().copy(), y.grad.numpy().copy()])
    for ours, theirs in zip(*results):
        np.testing.assert_array_equal(ours, theirs)
    assert results[0][0].tolist() == [5.0, 5.0, 7.0]
