"""probeC41: the autograd engine, grad modes, hooks and the Tensor API against torch 2.13
(CPU). Each case runs the same program with torch and with tinyattn and compares."""
import pytest

import tinyattn as ta

torch = pytest.importorskip("torch", reason="torch is the oracle for these tests")


def _t(lib, data, rg=True):
    return lib.tensor(data, dtype=lib.float64, requires_grad=rg)


def _lists(values):
    return [None if v is None else v.tolist() for v in values]


# --- full backward hook: a tensor argument that does not require grad -------------------

def _hook_grad_input(lib, detach_b):
    class M(lib.nn.Module):
        def forward(self, a, b, c):
            return a * b + c * 2

    seen = []
    m = M()
    m.register_full_backward_hook(lambda mod, gi, go: seen.append(_lists(gi)))
    a, b, c = _t(lib, [1., 2.]), _t(lib, [3., 4.]), _t(lib, [5., 6.], rg=False)
    if detach_b:
        b = b.detach()
    (m(a, b, c) * lib.tensor([1., 10.], dtype=lib.float64)).sum().backward()
    return seen, a.grad.tolist()


@pytest.mark.parametrize("detach_b", [False, True])
def test_full_backward_hook_grad_input_of_input_without_grad(detach_b):
    # torch reports zeros for a tensor argument that does not require grad (tinyattn gave
    # the gradient it would have had, [2, 20], silently)
    got, want = _hook_grad_input(ta, detach_b), _hook_grad_input(torch, detach_b)
    assert got == want
    assert want[0][0][2] == [0.0, 0.0]          # negative control: not the real gradient


def test_full_backward_hook_non_tensor_arg_is_none():
    def run(lib):
        class M(lib.nn.Module):
            def forward(self, a, k):
                return a * k
        seen = []
        m = M()
        m.register_full_backward_hook(lambda mod, gi, go: seen.append(_lists(gi)))
        m(_t(lib, [1., 2.]), 3.0).sum().backward()
        return seen
    assert run(ta) == run(torch)


# --- retain_grad on a tensor that does not require grad --------------------------------

def test_retain_grad_without_requires_grad_raises():
    for lib in (torch, ta):
        with pytest.raises(RuntimeError, match="retain_grad"):
            lib.tensor([1., 2.]).retain_grad()


def test_retain_grad_on_leaf_and_non_leaf_as_torch():
    def run(lib):
        x = _t(lib, [1., 2.])
        x.retain_grad()
        y = x * 2
        before = y.retains_grad
        y.retain_grad()
        (y * y).sum().backward()
        return x.retains_grad, before, y.retains_grad, y.grad.tolist(), x.grad.tolist()
    assert run(ta) == run(torch)


# --- set_grad_enabled as a decorator ---------------------------------------------------

def _decorated(lib):
    x = _t(lib, [1., 2.])

    @lib.set_grad_enabled(False)
    def f(a):
        return a * 2
    after_decorating = lib.is_grad_enabled()
    inside = f(x).requires_grad
    return after_decorating, inside, lib.is_grad_enabled(), (x * 2).requires_grad


def test_set_grad_enabled_decorator_does_not_leak():
    # tinyattn left recording off after the decorator line: every later op was silently
    # untracked
    try:
        assert _decorated(ta) == _decorated(torch) == (True, False, True, True)
    finally:
        ta.set_grad_enabled(True)


def test_set_grad_enabled_call_and_context_as_torch():
    def run(lib):
        out = []
        lib.set_grad_enabled(False)
        out.append(lib.is_grad_enabled())
        lib.set_grad_enabled(True)
        with lib.set_grad_enabled(False):
            out.append(lib.is_grad_enabled())
            with lib.enable_grad():
                out.append(lib.is_grad_enabled())
        out.append(lib.is_grad_enabled())
        return out
    try:
        assert run(ta) == run(torch)
    finally:
        ta.set_grad_enabled(True)


# --- x.data = ... on a tensor that requires grad ---------------------------------------

def test_data_assign_integer_to_requires_grad_raises():
    for lib in (torch, ta):
        x = _t(lib, [1., 2.])
        with pytest.raises(RuntimeError, match="floating point"):
            x.data = lib.tensor([5, 6])
        assert x.dtype == lib.float64          # unchanged


def test_data_assign_float_other_shape_as_torch():
    def run(lib):
        x = _t(lib, [1., 2.])
        x.data = lib.tensor([5., 6., 7.], dtype=lib.float64)
        (x * x).sum().backward()
        return x.grad.tolist(), x.requires_grad
    assert run(ta) == run(torch)


# --- custom autograd.Function ----------------------------------------------------------

def _function(lib, forward, backward, setup_context=None):
    body = {"forward": staticmethod(forward), "backward": staticmethod(backward)}
    if setup_context is not None:
        body["setup_context"] = staticmethod(setup_context)
    return type("F", (lib.autograd.Function,), body)


def _kwargs_ctx_style(lib):
    F = _function(lib, lambda ctx, x, k=2.0: x * k, lambda ctx, g: (g * 3, None))
    x = _t(lib, [1., 2.])
    y = F.apply(x, k=4.0)
    y.sum().backward()
    return y.tolist(), x.grad.tolist()


def _setup_context_style(lib, use_kw):
    def forward(x, w, k=2.0):
        return x * w * k

    def setup(ctx, inputs, output):
        ctx.save_for_backward(inputs[0], inputs[1])
        ctx.k = inputs[2]
        ctx.n = len(inputs)

    def backward(ctx, g):
        x, w = ctx.saved_tensors
        return g * w * ctx.k, g * x * ctx.k, None

    F = _function(lib, forward, backward, setup)
    x, w = _t(lib, [1., 2.]), _t(lib, [3., 4.])
    y = F.apply(x, w=w, k=5.0) if use_kw else F.apply(x, w)
    y.sum().backward()
    return y.tolist(), x.grad.tolist(), w.grad.tolist()


def test_function_apply_keywords_as_torch():
    # torch 2.13 passes keywords on to forward (tinyattn refused them)
    assert _kwargs_ctx_style(ta) == _kwargs_ctx_style(torch)


@pytest.mark.parametrize("use_kw", [False, True])
def test_function_setup_context_style_as_torch(use_kw):
    assert _setup_context_style(ta, use_kw) == _setup_context_style(torch, use_kw)


def _materialize(lib, materialize):
    seen = []

    def forward(ctx, x):
        ctx.set_materialize_grads(materialize)
        return x * 2, x * 3

    def backward(ctx, g1, g2):
        seen.append((g1 is None, g2 is None, None if g2 is None else g2.tolist()))
        return g1 * 2 if g2 is None else g1 * 2 + g2 * 3

    x = _t(lib, [1., 2.])
    a, _ = _function(lib, forward, backward).apply(x)
    a.sum().backward()
    return seen, x.grad.tolist()


@pytest.mark.parametrize("materialize", [True, False])
def test_function_set_materialize_grads_as_torch(materialize):
    # False: backward gets None for the unused output (tinyattn gave zeros)
    assert _materialize(ta, materialize) == _materialize(torch, materialize)


def _non_tensor_output(lib):
    seen = []

    def backward(ctx, g, g2):
        seen.append(g2)
        return g * 2

    x = _t(lib, [1., 2.])
    y, n = _function(lib, lambda ctx, x: (x * 2, 5), backward).apply(x)
    y.sum().backward()
    return seen, n, x.grad.tolist()


def test_function_non_tensor_output_gets_none_in_backward():
    assert _non_tensor_output(ta) == _non_tensor_output(torch)


def test_function_gradient_for_non_tensor_input_raises():
    for lib in (torch, ta):
        F = _function(lib, lambda ctx, x, k: x * k, lambda ctx, g: (g * 2, g))
        y = F.apply(_t(lib, [1., 2.]), 2.0).sum()
        with pytest.raises(RuntimeError, match="different than None at position 2"):
            y.backward()


def test_once_differentiable_as_torch():
    def run(lib):
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @lib.autograd.function.once_differentiable
        def backward(ctx, g):
            x, = ctx.saved_tensors
            return 2 * x * g
        x = _t(lib, [1., 2.])
        _function(lib, forward, backward).apply(x).sum().backward()
        return x.grad.tolist()
    assert run(ta) == run(torch) == [2.0, 4.0]


# --- an index naming one element is a 0-d view -----------------------------------------

ZERO_D_VIEWS = {
    "add_at_2d": lambda lib, a: a.view(2, 3)[1, 2].add_(10),
    "mul_at_1d": lambda lib, a: a[1].mul_(10),
    "fill_last": lambda lib, a: a[-1].fill_(7),
    "zero_second": lambda lib, a: a[1].zero_(),
    "copy_into": lambda lib, a: a[1].copy_(lib.tensor(9.)),
    "select": lambda lib, a: a.select(0, 1).add_(5),
    "unbind": lambda lib, a: a.unbind(0)[1].add_(5),
    "iterate": lambda lib, a: [v.mul_(2) for v in a],
    "diagonal_element": lambda lib, a: a.view(2, 3).diagonal()[1].add_(5),
    "view_of_0d": lambda lib, a: a[2].view(()).sub_(1),
}


@pytest.mark.parametrize("name", sorted(ZERO_D_VIEWS))
def test_zero_d_index_writes_through(name):
    # tinyattn's x[1] was a copy (NumPy's scalar): x[1].mul_(10) left x unchanged silently
    def run(lib):
        a = lib.arange(6.)
        ZERO_D_VIEWS[name](lib, a)
        return a.tolist()
    assert run(ta) == run(torch)
    assert run(torch) != list(range(6))        # negative control: the write lands


def test_zero_d_view_sees_later_writes_and_offsets():
    def run(lib):
        a = lib.arange(24.).reshape(2, 3, 4)
        b = a[1, 2, 3]
        a.add_(1)
        return b.item(), b.storage_offset(), a[0, 1].storage_offset()
    assert run(ta) == run(torch)


def test_zero_d_view_in_place_gradient():
    def run(lib):
        x = lib.tensor([1., 2., 3.], requires_grad=True)
        y = x * 1
        y[1].mul_(3)
        (y * y).sum().backward()
        return y.tolist(), x.grad.tolist()
    assert run(ta) == run(torch)


# --- max(x) / min(x) without a dim on a tensor holding NaN -----------------------------

@pytest.mark.parametrize("data", [[float("nan"), 1.], [1., float("nan"), 3.],
                                  [[float("nan"), float("nan"), 2.]], [[2., 2., 1.]]])
@pytest.mark.parametrize("op", ["max", "min", "amax", "amin"])
def test_extreme_without_dim_gradient_with_nan(op, data):
    # torch's max(x) gives the NaN elements the gradient (k NaNs: g / k each); tinyattn gave
    # every element 0. amax keeps NaN everywhere, in both.
    def run(lib):
        x = lib.tensor(data, dtype=lib.float64, requires_grad=True)
        getattr(x, op)().backward()
        return [str(v) for v in x.grad.flatten().tolist()]
    assert run(ta) == run(torch)


# --- Python number conversions ----------------------------------------------------------

def _convert(lib, name, make):
    t = make(lib)
    try:
        return "ok", {"float": float, "int": int, "complex": complex}[name](t)
    except (ValueError, RuntimeError, TypeError) as exc:
        return type(exc).__name__


CONVERSIONS = {
    "several": lambda lib: lib.tensor([1., 2.]),
    "empty": lambda lib: lib.tensor([]),
    "one_nested": lambda lib: lib.tensor([[2.5]]),
    "complex_0d": lambda lib: lib.tensor(1 + 2j),
}


@pytest.mark.parametrize("make", sorted(CONVERSIONS))
@pytest.mark.parametrize("name", ["float", "int", "complex"])
def test_python_number_conversion_as_torch(name, make):
    # float(t) of several elements: torch's ValueError (tinyattn raised RuntimeError);
    # complex(t) of a complex tensor works (tinyattn refused it)
    got, want = _convert(ta, name, CONVERSIONS[make]), _convert(torch, name, CONVERSIONS[make])
    assert got == want


def test_numpy_force_keyword():
    assert ta.tensor([1., 2.], requires_grad=True).numpy(force=True).tolist() == \
        torch.tensor([1., 2.], requires_grad=True).numpy(force=True).tolist()


# --- .grad of a non-leaf ----------------------------------------------------------------

def _non_leaf_grad(lib, use_inputs):
    import warnings
    x = _t(lib, [1., 2.])
    y = x * 3
    z = (y * y).sum()
    if use_inputs:
        z.backward(inputs=[y])
    else:
        z.backward()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        g = y.grad
    return (None if g is None else g.tolist(), len(caught),
            None if x.grad is None else x.grad.tolist())


@pytest.mark.parametrize("use_inputs", [False, True])
def test_non_leaf_grad_warns_only_without_a_grad(use_inputs):
    # backward(inputs=[y]) fills y.grad; torch reads it without the non-leaf warning
    assert _non_leaf_grad(ta, use_inputs) == _non_leaf_grad(torch, use_inputs)


def _tuple_output_hooks(lib):
    class M(lib.nn.Module):
        def forward(self, a):
            return a * 2, a * 3

    seen = []
    m = M()
    m.register_full_backward_pre_hook(lambda mod, go: seen.append(("pre", _lists(go))))
    m.register_full_backward_hook(lambda mod, gi, go: seen.append((_lists(gi), _lists(go))))
    a = _t(lib, [1., 2.])
    first, _ = m(a)
    first.sum().backward()
    return seen, a.grad.tolist()


def test_full_backward_hooks_unused_output_is_none():
    # torch's grad_output holds None for an output the loss did not use (tinyattn: zeros)
    assert _tuple_output_hooks(ta) == _tuple_output_hooks(torch)


# --- an empty dim reduces over every dim (sum, mean, std, amax, norm, ...) -------------

EMPTY_DIM_OPS = ["sum", "mean", "nansum", "nanmean", "std", "var", "amax", "amin", "norm",
                 "var_mean", "std_mean", "any", "all"]


@pytest.mark.parametrize("keepdim", [False, True])
@pytest.mark.parametrize("dim", [(), []], ids=["tuple", "list"])
@pytest.mark.parametrize("op", EMPTY_DIM_OPS)
def test_empty_dim_reduction_as_torch(op, dim, keepdim):
    # tinyattn reduced over no dim (x.sum(()) was x itself, x.std(()) all NaN); torch
    # reduces over all of them. any/all reduce over none in both (negative control).
    def run(lib):
        x = lib.tensor([[1., 2., 0.], [4., 5., 7.]])
        out = getattr(lib, op)(x, dim=dim, keepdim=keepdim)
        outs = out if isinstance(out, tuple) else (out,)
        return [(tuple(o.shape), [round(float(v), 5) for v in o.flatten().tolist()])
                for o in outs]
    assert run(ta) == run(torch)


def test_empty_dim_gradient_as_torch():
    def run(lib):
        x = lib.tensor([[1., 2.], [4., 5.]], dtype=lib.float64, requires_grad=True)
        (x.sum(()) + x.mean([]) * 4 + x.amax(())).backward()
        return x.grad.tolist()
    assert run(ta) == run(torch)


# --- tensor(python numbers, dtype=<integer>) checks the range as torch ------------------

RANGE_CASES = [([100000], "int16"), ([300], "uint8"), ([-1], "uint8"), ([-255], "uint8"),
               ([-256], "uint8"), ([2 ** 40], "int32"), ([1e6], "int16"), ([3.7], "int64"),
               (100000, "int16"), ([[1, 2], [3, 100000]], "int16"), ([32767.9], "int16"),
               ([float("nan")], "int32"), ([float("inf")], "int64"), ([], "int8"),
               ([2 ** 63 - 1], "int64"), ([-2 ** 63], "int64"), ([-0.5], "uint8"),
               ([1.5, -2.5], "int8"), ([True, 2], "uint8")]


@pytest.mark.parametrize("data,dtype", RANGE_CASES, ids=[f"{d}-{t}" for d, t in RANGE_CASES])
def test_tensor_integer_range_as_torch(data, dtype):
    # tinyattn wrapped silently: tensor([100000], dtype=int16) was [-31072]
    def run(lib):
        try:
            return lib.tensor(data, dtype=getattr(lib, dtype)).tolist()
        except RuntimeError as exc:
            assert "without overflow" in str(exc)
            return "overflow"
    assert run(ta) == run(torch)


WHERE_CASES = {
    "other_too_big": lambda lib: lib.where(lib.tensor([True, False]),
                                           lib.zeros(2, dtype=lib.int16), 100000),
    "input_too_big": lambda lib: lib.where(lib.tensor([True, False]), 100000,
                                           lib.zeros(2, dtype=lib.int16)),
    "method_int8": lambda lib: lib.zeros(2, dtype=lib.int8).where(lib.tensor([True, False]), 200),
    "uint8_minus_one_wraps": lambda lib: lib.where(lib.tensor([True, False]),
                                                   lib.zeros(2, dtype=lib.uint8), -1),
    "uint8_too_negative": lambda lib: lib.where(lib.tensor([True, False]),
                                                lib.zeros(2, dtype=lib.uint8), -256),
    "fits": lambda lib: lib.where(lib.tensor([True, False]), lib.zeros(2, dtype=lib.int16), 5),
    "two_numbers": lambda lib: lib.where(lib.tensor([True, False]), 1, 100000),
}


@pytest.mark.parametrize("name", sorted(WHERE_CASES))
def test_where_number_range_as_torch(name):
    # where(c, int16_x, 100000) wrapped to -31072 silently; torch refuses it
    def run(lib):
        try:
            out = WHERE_CASES[name](lib)
        except RuntimeError as exc:
            assert "without overflow" in str(exc)
            return "overflow"
        return out.tolist(), str(out.dtype).replace("torch.", "")
    assert run(ta) == run(torch)


# --- float64 -> float16 / bfloat16 rounds through float32, as torch ----------------------

DOUBLE_ROUNDED = [1.1645508316087867, 0.5085449116976437, 1.3784179206039884,
                  -1.3090820361107907]


@pytest.mark.parametrize("how", ["list", "to", "numpy", "gradient"])
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_double_to_half_rounds_as_torch(dtype, how):
    # NumPy rounds float64 -> float16 once; torch goes through float32 (c10::Half(float)),
    # and for these values the two land one ulp apart (1.1640625 in torch, 1.1650391 here)
    import numpy as np
    values = DOUBLE_ROUNDED + list(np.random.default_rng(1).standard_normal(20000))

    def run(lib):
        dt = getattr(lib, dtype)
        if how == "list":
            t = lib.tensor(values, dtype=dt)
        elif how == "to":
            t = lib.tensor(values, dtype=lib.float64).to(dt)
        elif how == "numpy":
            t = lib.tensor(np.array(values), dtype=dt)
        else:
            x = lib.zeros(len(values), dtype=dt, requires_grad=True)
            (x.double() * lib.tensor(values, dtype=lib.float64)).sum().backward()
            t = x.grad
        return t.float().tolist()
    got, want = run(ta), run(torch)
    assert got == want
    if dtype == "float16":                     # negative control: NumPy's single rounding
        assert np.float16(DOUBLE_ROUNDED[0]) != np.float16(want[0])


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_setitem_double_into_half_rounds_as_torch(dtype):
    import numpy as np
    values = DOUBLE_ROUNDED + list(np.random.default_rng(2).standard_normal(20000))

    def run(lib):
        out = lib.zeros(len(values), dtype=getattr(lib, dtype))
        out[:] = lib.tensor(values, dtype=lib.float64)
        return out.float().tolist()
    assert run(ta) == run(torch)


FILL_CASES = {
    "full_int16": lambda lib: lib.full((2,), 100000, dtype=lib.int16),
    "full_uint8": lambda lib: lib.full((2,), 300, dtype=lib.uint8),
    "full_fits": lambda lib: lib.full((2,), 7, dtype=lib.uint8),
    "fill_int16": lambda lib: lib.zeros(2, dtype=lib.int16).fill_(100000),
    "fill_min": lambda lib: lib.zeros(2, dtype=lib.int16).fill_(-32768),
    "fill_nan_int": lambda lib: lib.zeros(2, dtype=lib.int32).fill_(float("nan")),
    "fill_float_big": lambda lib: lib.zeros(2, dtype=lib.int16).fill_(1e10),
    "fill_float_truncates": lambda lib: lib.zeros(2, dtype=lib.int16).fill_(3.9),
    "new_full": lambda lib: lib.zeros(2, dtype=lib.int16).new_full((2,), 100000),
    "full_like": lambda lib: lib.full_like(lib.zeros(2, dtype=lib.int16), 100000),
    "masked_fill": lambda lib: lib.zeros(2, dtype=lib.int16).masked_fill(
        lib.tensor([True, False]), 100000),
}


@pytest.mark.parametrize("name", sorted(FILL_CASES))
def test_fill_number_range_as_torch(name):
    # NumPy's OverflowError (not a RuntimeError) where torch raises RuntimeError
    def run(lib):
        try:
            return FILL_CASES[name](lib).tolist()
        except RuntimeError as exc:
            assert "without overflow" in str(exc)
            return "overflow"
    assert run(ta) == run(torch)


@pytest.mark.parametrize("grad", ["float32", "other_shape"])
def test_assigning_a_wrong_grad_raises_runtime_error(grad):
    for lib in (torch, ta):
        x = _t(lib, [1., 2.])
        value = lib.ones(2) if grad == "float32" else lib.ones(3, dtype=lib.float64)
        with pytest.raises(RuntimeError):
            x.grad = value
        assert x.grad is None


@pytest.mark.parametrize("p", [float("inf"), -float("inf")])
@pytest.mark.parametrize("data", [[float("nan"), 1.], [float("nan"), -2., float("nan")],
                                  [3., -3., 1.], [0., 0.]])
def test_inf_norm_gradient_with_nan_as_torch(data, p):
    # torch counts NaNs among the extremes and takes sign(NaN) = 0: gradient 0 there;
    # tinyattn divided by a count of 0 and gave NaN everywhere
    def run(lib):
        x = lib.tensor(data, dtype=lib.float64, requires_grad=True)
        lib.linalg.vector_norm(x, p).backward()
        return [str(v) for v in x.grad.tolist()]
    assert run(ta) == run(torch)


@pytest.mark.parametrize("op", ["cummax", "cummin"])
@pytest.mark.parametrize("data", [[float("nan"), float("nan"), 2.],
                                  [1., float("nan"), 3., float("nan"), 0.],
                                  [3., 1., float("nan"), float("nan")]])
def test_cumulative_extreme_later_nan_takes_over(op, data):
    # torch's running index moves to each new NaN; tinyattn kept the first NaN's index
    # (so the gradient went to the wrong element)
    def run(lib):
        x = lib.tensor(data, dtype=lib.float64, requires_grad=True)
        out = getattr(lib, op)(x, 0)
        out.values.sum().backward()
        return out.indices.tolist(), x.grad.tolist()
    assert run(ta) == run(torch)


SETITEM_NUMBER_CASES = {
    "int16_too_big": (lambda lib: lib.zeros(2, dtype=lib.int16), 100000),
    "uint8_256": (lambda lib: lib.zeros(2, dtype=lib.uint8), 256),
    "uint8_minus_one_wraps": (lambda lib: lib.zeros(2, dtype=lib.uint8), -1),
    "int32_float_too_big": (lambda lib: lib.zeros(2, dtype=lib.int32), 1e10),
    "int32_nan": (lambda lib: lib.zeros(2, dtype=lib.int32), float("nan")),
    "int32_float_truncates": (lambda lib: lib.zeros(2, dtype=lib.int32), 2.7),
}


@pytest.mark.parametrize("name", sorted(SETITEM_NUMBER_CASES))
def test_setitem_number_range_as_torch(name):
    def run(lib):
        make, value = SETITEM_NUMBER_CASES[name]
        x = make(lib)
        try:
            x[0] = value
        except RuntimeError as exc:
            assert "without overflow" in str(exc)
            return "overflow"
        return x.tolist()
    assert run(ta) == run(torch)
