"""Outside probes of issue 30's promises (stream probe43): each case runs the same call in
torch 2.13 and in tinyattn and requires the same dtype and values, or an error where torch
raises one. Found by sweeping binary and ternary ops over every dtype pair, 0-d tensors and
Python bool/int/float/complex numbers, in place and with out=.

What was wrong before (each a silent answer where torch refuses or computes otherwise):
a complex Python number lost its imaginary part in ops computed in a real dtype
(``xlogy(x, 1 + 2j)``, ``copysign(int_tensor, 2j)``, ``x < 1j`` compared real parts or
NumPy's lexicographic order); ``float_power`` of a complex tensor was float64 (imaginary parts
dropped); a bool tensor with a Python bool in ``//``, ``%``, ``fmod``, ``div(rounding_mode=)``
and ``True ** bool_tensor`` gave int8/int64 numbers; ``heaviside`` of complex tensors and
``clamp`` of bool tensors by bool tensor bounds computed; ``where(..., out=)`` cast into an
out= of another dtype; the strict promotion mode let ``addcmul``, ``addcdiv``, ``clamp`` with
tensor bounds, ``hypot``, ``copysign``, ``xlogy``, ``logaddexp``, ``fmax``, ``nextafter``,
``ldexp`` and ``float_power`` upcast float32 with float64 silently. Loud refusals torch does
not make: ``bfloat16_tensor * 1j`` (torch: complex64), ``x == 1j``, ``logical_and`` of complex
tensors, ``result_type(x, 1j)``, ``addcmul`` of integers with a float ``value`` (torch
truncates it).
"""
from __future__ import annotations

import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="these probes compare with torch")

import tinyattn as ta  # noqa: E402


def _ta(t):
    """The torch tensor's values as a tinyattn tensor of the same dtype."""
    name = str(t.dtype).replace("torch.", "")
    if name == "bfloat16":
        return ta.tensor(t.float().numpy()).to(ta.bfloat16)
    return ta.tensor(t.numpy(), dtype=getattr(ta, name))


def _both(fn_torch, fn_ta):
    """(torch's result or exception type, tinyattn's result or exception type)."""
    out = []
    for fn in (fn_torch, fn_ta):
        try:
            out.append(fn())
        except Exception as exc:  # noqa: BLE001 - the probe records any error
            out.append(exc)
    return out


def _same(fn_torch, fn_ta):
    expected, got = _both(fn_torch, fn_ta)
    if isinstance(expected, Exception):
        assert isinstance(got, Exception), f"torch raises {expected!r}; tinyattn gave {got!r}"
        return
    assert not isinstance(got, Exception), f"torch gives {expected!r}; tinyattn raised {got!r}"
    if isinstance(expected, torch.dtype):
        assert str(got) == str(expected).replace("torch.", "")
        return
    assert str(got.dtype) == str(expected.dtype).replace("torch.", "")
    want = expected.detach()
    want = (want.float() if want.dtype == torch.bfloat16 else want).numpy()
    have = got.detach().numpy()
    have = have.astype(np.float32) if str(have.dtype) == "bfloat16" else have
    np.testing.assert_allclose(have.astype(np.complex128), want.astype(np.complex128),
                               rtol=1e-2 if "bfloat16" in str(got.dtype) else 1e-6)


INT_FLOAT = ["bool", "uint8", "int32", "int64", "float32", "float64"]


def _sample(dtype):
    values = {"bool": [True, False, True], "uint8": [0, 3, 200], "int32": [0, -1, 7],
              "int64": [0, -1, 7], "float32": [0.0, -1.5, 3.25], "float64": [0.0, -1.5, 3.25],
              "bfloat16": [0.5, -1.5, 3.25], "float16": [0.5, -1.5, 3.25],
              "complex64": [0, 1 - 2j, 3.5j], "complex128": [0, 1 - 2j, 3.5j]}[dtype]
    return torch.tensor(values, dtype=getattr(torch, dtype))


# --- a complex Python number never loses its imaginary part ----------------------------------

@pytest.mark.parametrize("dtype", INT_FLOAT)
@pytest.mark.parametrize("op", ["xlogy", "copysign"])
def test_complex_number_in_real_ops(op, dtype):
    x = _sample(dtype)
    _same(lambda: getattr(torch, op)(x, 1 + 2j), lambda: getattr(ta, op)(_ta(x), 1 + 2j))


@pytest.mark.parametrize("dtype", INT_FLOAT)
def test_float_power_with_complex_number(dtype):
    """torch: complex128; tinyattn has no complex power and refuses (was: float64 values of
    the real part)."""
    x = _sample(dtype)
    assert torch.float_power(x, 1 + 2j).dtype == torch.complex128
    with pytest.raises(TypeError, match="complex"):
        ta.float_power(_ta(x), 1 + 2j)


@pytest.mark.parametrize("dtype", INT_FLOAT)
@pytest.mark.parametrize("op", ["lt", "le", "gt", "ge", "eq", "ne"])
def test_comparison_with_complex_number(op, dtype):
    x = _sample(dtype)
    _same(lambda: getattr(torch, op)(x, 3 + 0j), lambda: getattr(ta, op)(_ta(x), 3 + 0j))
    _same(lambda: getattr(torch, op)(x, 1j), lambda: getattr(ta, op)(_ta(x), 1j))
    dunder = f"__{op}__"
    _same(lambda: getattr(x, dunder)(2j), lambda: getattr(_ta(x), dunder)(2j))


def test_comparison_with_complex_number_negative_control():
    """The refused comparison is not refused for a real number (the check is not vacuous)."""
    x = ta.tensor([1.0, 5.0])
    assert (x < 3).tolist() == [True, False]
    with pytest.raises(NotImplementedError):
        x < 3 + 0j


@pytest.mark.parametrize("pair", [("complex64", "float32"), ("float64", "complex64"),
                                  ("int64", "complex128"), ("complex128", "complex128")])
def test_float_power_of_complex_is_not_real(pair):
    """torch: complex128; tinyattn has no complex power and refuses (was: float64, the
    imaginary parts dropped)."""
    a, b = (_sample(d) for d in pair)
    expected = torch.float_power(a, b)
    assert expected.dtype == torch.complex128
    with pytest.raises(TypeError, match="complex"):
        ta.float_power(_ta(a), _ta(b))
    with pytest.raises(RuntimeError, match="complex128"):
        _ta(_sample("float64")).float_power_(_ta(b) if b.is_complex() else _ta(a))


def test_float_power_real_still_float64():
    _same(lambda: torch.float_power(_sample("int64"), 2),
          lambda: ta.float_power(_ta(_sample("int64")), 2))
    _same(lambda: torch.float_power(_sample("float32"), _sample("float32")),
          lambda: ta.float_power(_ta(_sample("float32")), _ta(_sample("float32"))))


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
@pytest.mark.parametrize("op", ["add", "mul", "div", "sub"])
def test_half_tensor_with_complex_number(op, dtype):
    """bfloat16 with a complex number is complex64 in torch; float16 would be complex32,
    which tinyattn does not have (refused)."""
    x = _sample(dtype)
    expected, got = _both(lambda: getattr(torch, op)(x, 1 + 2j),
                          lambda: getattr(ta, op)(_ta(x), 1 + 2j))
    if dtype == "float16":
        assert isinstance(got, TypeError) and (isinstance(expected, Exception)
                                               or expected.dtype == torch.complex32)
    else:
        _same(lambda: getattr(torch, op)(x, 1 + 2j), lambda: getattr(ta, op)(_ta(x), 1 + 2j))
        if op != "div":
            _same(lambda: getattr(torch, op)(1 + 2j, x), lambda: getattr(ta, op)(1 + 2j, _ta(x)))


@pytest.mark.parametrize("dtype", ["bfloat16", "float32", "float64"])
def test_complex_number_over_real_tensor_bit_for_bit(dtype):
    """torch's ``number / x`` is reciprocal(x) * number, the reciprocal rounded in x's dtype
    (bfloat16 too); a complex number was divided directly (0.3077 for 0.3086)."""
    x = torch.tensor([0.0, -1.5, 3.25, 1000.0, 0.1]).to(getattr(torch, dtype))
    expected, got = ((1 + 2j) / x).numpy(), ((1 + 2j) / _ta(x)).numpy()
    assert got.dtype == expected.dtype
    np.testing.assert_array_equal(got, expected)


@pytest.mark.parametrize("number", [True, 2, 2.5, 1j])
@pytest.mark.parametrize("dtype", ["bool", "int64", "bfloat16", "float64", "complex64"])
def test_result_type_with_numbers(dtype, number):
    x = _sample(dtype)
    _same(lambda: torch.result_type(x, number), lambda: ta.result_type(_ta(x), number))
    _same(lambda: torch.result_type(number, x), lambda: ta.result_type(number, _ta(x)))


# --- bool operands torch has no kernel for ------------------------------------------------

@pytest.mark.parametrize("call", [
    lambda L, b: b // True, lambda L, b: True // b, lambda L, b: b % True,
    lambda L, b: True % b, lambda L, b: L.fmod(b, True), lambda L, b: L.remainder(b, True),
    lambda L, b: L.div(b, True, rounding_mode="floor"),
    lambda L, b: L.div(b, True, rounding_mode="trunc"), lambda L, b: L.floor_divide(b, True),
    lambda L, b: True ** b, lambda L, b: L.pow(True, b),
    lambda L, b: L.clamp(b, b, b), lambda L, b: L.clamp(b, ~b, b),
])
@pytest.mark.parametrize("zero_dim", [False, True])
def test_bool_with_bool_refused(call, zero_dim):
    b = torch.tensor(True) if zero_dim else torch.tensor([True, False])
    _same(lambda: call(torch, b), lambda: call(ta, _ta(b)))


@pytest.mark.parametrize("call", [lambda L, b: b ** True, lambda L, b: b // 2,
                                  lambda L, b: L.fmod(b, 2), lambda L, b: b % 2,
                                  lambda L, b: L.clamp(b, L.tensor(0), L.tensor(1)),
                                  lambda L, b: L.clamp(b, min=~b), lambda L, b: L.clamp(b, max=~b)])
def test_bool_with_int_still_computes(call):
    """Negative control: a bool tensor with an int, or bool ** True, computes in torch."""
    b = torch.tensor([True, False])
    _same(lambda: call(torch, b), lambda: call(ta, _ta(b)))


def test_heaviside_of_complex_refused():
    z = _sample("complex64")
    _same(lambda: torch.heaviside(z, z), lambda: ta.heaviside(_ta(z), _ta(z)))
    x = _sample("float32")
    _same(lambda: torch.heaviside(x, x), lambda: ta.heaviside(_ta(x), _ta(x)))


@pytest.mark.parametrize("op", ["logical_and", "logical_or", "logical_xor"])
@pytest.mark.parametrize("other", ["bool", "complex64", "float32"])
def test_logical_ops_of_complex(op, other):
    z, y = _sample("complex64"), _sample(other)
    _same(lambda: getattr(torch, op)(z, y), lambda: getattr(ta, op)(_ta(z), _ta(y)))


# --- out= ----------------------------------------------------------------------------------

@pytest.mark.parametrize("out_dtype", ["uint8", "int32", "int64", "float32", "float64"])
@pytest.mark.parametrize("dtypes", [("int64", "int64"), ("float32", "float32"),
                                    ("int64", "float32")])
def test_where_out_dtype_must_match(dtypes, out_dtype):
    a, b = (_sample(d) for d in dtypes)
    c = torch.tensor([True, False, True])

    def run(L, a, b, c):
        out = L.empty(3, dtype=getattr(L, out_dtype))
        result = L.where(c, a, b, out=out)
        assert result is out
        return out
    _same(lambda: run(torch, a, b, c), lambda: run(ta, _ta(a), _ta(b), _ta(c)))


# --- addcmul's value on integer tensors ----------------------------------------------------

@pytest.mark.parametrize("value", [0.5, 1.7, -0.5, -0.99, 2.0, 1 + 0j, 1 + 1j, True, 300, -1,
                                   -255, -256, 255, 200])
@pytest.mark.parametrize("dtype", ["int64", "uint8", "int32"])
def test_addcmul_integer_value(dtype, value):
    x = torch.tensor([1, 2, 3], dtype=getattr(torch, dtype))
    _same(lambda: torch.addcmul(x, x, x, value=value),
          lambda: ta.addcmul(_ta(x), _ta(x), _ta(x), value=value))


# --- the strict promotion mode -------------------------------------------------------------

STRICT_CALLS = {
    "addcmul": lambda a, b: ta.addcmul(a, b, b), "addcdiv": lambda a, b: ta.addcdiv(a, b, b),
    "clamp": lambda a, b: ta.clamp(a, min=b), "clamp_max": lambda a, b: ta.clamp(a, b, b),
    "hypot": ta.hypot, "copysign": ta.copysign, "xlogy": ta.xlogy,
    "logaddexp": ta.logaddexp, "fmax": ta.fmax, "fmin": ta.fmin, "nextafter": ta.nextafter,
    "ldexp": ta.ldexp, "float_power": ta.float_power, "add": ta.add, "atan2": ta.atan2,
}


@pytest.mark.parametrize("name", sorted(STRICT_CALLS))
def test_strict_mode_refuses_every_float_mix(name):
    call = STRICT_CALLS[name]
    a32, b64 = ta.ones(3), ta.full((3,), 2.0, dtype=ta.float64)
    assert call(a32, b64).dtype == ta.float64             # promoted as torch when off
    with ta.strict_promotion():
        with pytest.raises(TypeError, match="strict promotion"):
            call(a32, b64)
        same = ta.float64 if name == "float_power" else ta.float32
        assert call(a32, b64.float()).dtype == same            # one dtype: allowed
        assert call(a32, ta.tensor(2.0, dtype=ta.float64)).dtype == same   # a 0-d tensor


# --- attention masks of another float dtype ------------------------------------------------

@pytest.mark.parametrize("dtypes", [("float32", "float16"), ("float32", "float64"),
                                    ("float16", "float32"), ("float64", "float32"),
                                    ("bfloat16", "float32"), ("float64", "float64"),
                                    ("float32", "bool"), ("float16", "float64")])
def test_sdpa_float_mask_dtype_as_torch(dtypes):
    """torch takes a bool mask, a float32 one, or one of the query's dtype, and refuses
    the rest ("Expected attn_mask dtype to be bool or float or to match query dtype");
    tinyattn cast any float mask to the query's dtype."""
    q_dtype, mask_dtype = dtypes
    q = torch.randn(2, 3, 4, 8).to(getattr(torch, q_dtype))
    mask = torch.zeros(4, 4, dtype=getattr(torch, mask_dtype))
    _same(lambda: torch.nn.functional.scaled_dot_product_attention(q, q, q, attn_mask=mask),
          lambda: ta.nn.functional.scaled_dot_product_attention(_ta(q), _ta(q), _ta(q),
                                                                attn_mask=_ta(mask)))


@pytest.mark.parametrize("need_weights", [True, False])
@pytest.mark.parametrize("dtypes", [("float32", "float64"), ("float64", "float32"),
                                    ("float32", "float32")])
def test_multihead_attention_float_mask_dtype_as_torch(dtypes, need_weights):
    module_dtype, mask_dtype = (getattr(ta, d) for d in dtypes)
    torch_dtypes = [getattr(torch, d) for d in dtypes]
    x = torch.randn(2, 4, 8)

    def run(L, module_dtype, mask_dtype):
        mha = L.nn.MultiheadAttention(8, 2, batch_first=True).to(module_dtype)
        X = (x if L is torch else _ta(x)).to(module_dtype)
        return mha(X, X, X, attn_mask=L.zeros(4, 4, dtype=mask_dtype),
                   need_weights=need_weights)[0].dtype
    expected, got = _both(lambda: run(torch, *torch_dtypes),
                          lambda: run(ta, module_dtype, mask_dtype))
    if isinstance(expected, Exception):
        assert isinstance(got, RuntimeError)
    else:
        assert str(got) == str(expected).replace("torch.", "")


# --- grad_fn names a learner prints --------------------------------------------------------

_SHAPES = {1: (3,), 2: (3, 3), 3: (2, 3, 3), 4: (2, 2, 3, 3)}


@pytest.mark.parametrize("dims", [(a, b) for a in range(1, 5) for b in range(1, 5)])
def test_matmul_node_names(dims):
    """torch names matmul's node by the shapes: 2-D @ 3-D or 4-D ends in a copy
    (CloneBackward0; tinyattn said UnsafeViewBackward0)."""
    a, b = (np.ones(_SHAPES[d], np.float32) for d in dims)
    names = []
    for lib in (torch, ta):
        x, y = (lib.tensor(v, requires_grad=True) for v in (a, b))
        names.append((x @ y).grad_fn.name())
    assert names[0] == names[1]


@pytest.mark.parametrize("ndim", [1, 2, 3])
@pytest.mark.parametrize("bias", [False, True])
def test_linear_node_names(ndim, bias):
    """F.linear of a vector without bias is torch's SqueezeBackward4 (was UnsafeView)."""
    x = np.ones((2, 2, 3)[3 - ndim:], np.float32)
    names = []
    for lib in (torch, ta):
        w = lib.ones(4, 3, requires_grad=True)
        b = lib.ones(4, requires_grad=True) if bias else None
        names.append(lib.nn.functional.linear(lib.tensor(x), w, b).grad_fn.name())
    assert names[0] == names[1]


# --- float32 reductions along other axes than the last: within 2x torch's error -------------

def _rel_err(out, ref):
    out, ref = np.asarray(out, np.float64), np.asarray(ref, np.float64)
    return float(np.abs(out - ref).max() / np.abs(ref).max())


REDUCTIONS = {
    "sum(0)": (lambda L, a: a.sum(0), lambda a: a.sum(0)),
    "mean(0)": (lambda L, a: a.mean(0), lambda a: a.mean(0)),
    "sum(0) of 3-d": (lambda L, a: a.reshape(a.shape[0], 50, -1).sum(0),
                      lambda a: a.reshape(a.shape[0], 50, -1).sum(0)),
    "std(0)": (lambda L, a: a.std(0), lambda a: a.std(0, ddof=1)),
    "var(1) of a.T": (lambda L, a: a.T.var(1), lambda a: a.T.var(1, ddof=1)),
    "std_mean(0)": (lambda L, a: L.std_mean(a, 0)[0], lambda a: a.std(0, ddof=1)),
}


@pytest.mark.parametrize("rows", [16, 32, 64, 200])
@pytest.mark.parametrize("name", sorted(REDUCTIONS))
def test_float32_reduction_error_within_twice_torch(name, rows):
    """torch's CPU kernels add rows in cascades and var/std in double; NumPy adds one row
    after another in float32. Each case: tinyattn's error against torch's float64 result is
    at most twice torch's (plus a floor), and the sequential float32 formula (tinyattn's
    before, written in NumPy: the negative control) is more than twice, so the check can
    fail. Inputs: mean 100, spread 3, (rows, 5000)."""
    call, naive = REDUCTIONS[name]
    rng = np.random.default_rng(rows)
    x = (rng.standard_normal((rows, 5000)) * 3 + 100).astype(np.float32)
    ref = call(torch, torch.tensor(x).double()).numpy()
    torch_err = _rel_err(call(torch, torch.tensor(x)).numpy(), ref)
    ours = _rel_err(call(ta, ta.tensor(x)).numpy(), ref)
    assert ours <= 2 * torch_err + 2.0 ** -26, (ours, torch_err)
    if rows >= 64 or (rows >= 32 and ("std" in name or "var" in name)):   # short: lucky
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            before = _rel_err(naive(x), ref)
        assert before > 2 * torch_err + 2.0 ** -26, (before, torch_err)


def test_as_strided_views_with_shared_elements_refuse_writes():
    """torch runs an in-place op through overlapping as_strided elements one at a time (a
    shared element doubled once per window); tinyattn would double it once, so such views are
    read-only (loud) while views without overlap stay writable, as torch's."""
    x = ta.arange(1.0, 6.0)
    with pytest.raises(RuntimeError, match="read-only"):
        ta.as_strided(x, (3, 3), (1, 1)).mul_(2)
    assert x.tolist() == [1.0, 2.0, 3.0, 4.0, 5.0]                  # nothing changed
    with pytest.raises(RuntimeError):
        ta.as_strided(x, (3,), (0,)).mul_(2)                        # torch refuses too
    with pytest.raises(RuntimeError):
        torch.as_strided(torch.arange(1.0, 6.0), (3,), (0,)).mul_(2)
    view = ta.as_strided(x, (2, 2), (2, 1))                          # no overlap: writable
    view.mul_(2)
    theirs = torch.arange(1.0, 6.0)
    torch.as_strided(theirs, (2, 2), (2, 1)).mul_(2)
    assert x.tolist() == theirs.tolist()
