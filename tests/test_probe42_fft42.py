"""Findings of the fft42 stream (complex tensors and torch.fft as torch's), each against torch:
a learner's Llama 2 RoPE program under run-torch's dtypes, complex factories, and torch.fft's
printing, out= and Hermitian n-D transforms."""
import re
import warnings

import numpy as np
import pytest

import tinyattn as ta
from tinyattn.torch_shim import patches
from tinyattn.torch_shim.shim_names import torch_dtype

torch = pytest.importorskip("torch", reason="torch is the oracle for these tests")


@pytest.fixture
def run_torch_names():
    """x.dtype as run-torch gives it (a str subclass that hashes as its name)."""
    patches.apply()
    try:
        yield
    finally:
        patches.restore()


# ------------------------------------------------------------------ Llama 2's RoPE
def _rope_program(m, dtype, data):
    """Meta's llama/model.py RoPE as learners copy it, then attention and a backward."""
    dim, seqlen = data[0].shape[-1], data[0].shape[1]
    freqs = 1.0 / (10000.0 ** (m.arange(0, dim, 2)[: (dim // 2)].float() / dim))
    t = m.arange(seqlen * 2)
    freqs = m.outer(t, freqs).float()
    freqs_cis = m.polar(m.ones_like(freqs), freqs)[:seqlen]
    xq, xk, v = (m.tensor(d, dtype=dtype, requires_grad=True) for d in data)
    xq_ = m.view_as_complex(xq.float().reshape(*xq.shape[:-1], -1, 2))
    xk_ = m.view_as_complex(xk.float().reshape(*xk.shape[:-1], -1, 2))
    shape = [d if i == 1 or i == xq_.ndim - 1 else 1 for i, d in enumerate(xq_.shape)]
    fc = freqs_cis.view(*shape)
    q = m.view_as_real(xq_ * fc).flatten(3).type_as(xq).transpose(1, 2)
    k = m.view_as_real(xk_ * fc).flatten(3).type_as(xk).transpose(1, 2)
    scores = m.matmul(q, k.transpose(2, 3)) / dim ** 0.5
    scores = m.nn.functional.softmax(scores.float(), dim=-1).type_as(q)
    out = m.matmul(scores, v.transpose(1, 2))
    loss = out.float().pow(2).sum()
    loss.backward()
    return [str(freqs_cis.dtype), str(q.dtype), str(freqs_cis[1])] + \
        [a.detach().float().numpy() for a in (loss, q, xq.grad, xk.grad, v.grad)]


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
def test_llama2_rope_program_matches_torch(dtype, run_torch_names):
    rng = np.random.default_rng(0)
    data = [rng.standard_normal((2, 5, 2, 8)).astype(np.float32) for _ in range(3)]
    mine = _rope_program(ta, torch_dtype(dtype), data)
    theirs = _rope_program(torch, getattr(torch, dtype), data)
    assert mine[:3] == theirs[:3]
    tol = 1e-5 if dtype == "float32" else 2e-2
    for a, b in zip(mine[3:], theirs[3:]):
        np.testing.assert_allclose(a, b, rtol=tol, atol=tol)


def test_run_torch_complex_dtype_attributes_match_torch(run_torch_names):
    z = ta.zeros(2, dtype="complex64")
    for mine, theirs in ((z.dtype, torch.complex64), (ta.ones(1).dtype, torch.float32),
                         (ta.zeros(1, dtype="complex128").dtype, torch.complex128)):
        assert (mine.is_complex, mine.is_floating_point, mine.is_signed) == \
            (theirs.is_complex, theirs.is_floating_point, theirs.is_signed)
        assert str(mine.to_real()) == str(theirs.to_real())
        assert str(mine.to_complex()) == str(theirs.to_complex())
    assert ta.polar(ta.ones(2), ta.zeros(2)).dtype == "complex64"   # was refused


# ------------------------------------------------------------------ complex factories
@pytest.mark.parametrize("call", [
    lambda m: m.full((2,), 1 + 2j), lambda m: m.full((2, 1), 3, dtype=m.complex64),
    lambda m: m.full((1,), 2.5, dtype=m.cdouble), lambda m: m.full((2,), 1 + 0j, dtype=m.float64),
    lambda m: m.ones(2, dtype=m.complex64), lambda m: m.zeros(2, 2, dtype=m.cdouble),
])
def test_complex_fills_match_torch(call):
    mine, theirs = call(ta), call(torch)
    assert repr(mine) == repr(theirs).replace("torch.", "")


def test_complex_fill_into_a_real_dtype_is_refused_as_torch():
    with pytest.raises(RuntimeError):
        torch.full((2,), 1 + 2j, dtype=torch.float32)
    with pytest.raises(RuntimeError, match="imaginary part"):
        ta.full((2,), 1 + 2j, dtype=ta.float32)


@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
def test_complex_randn_draws_parts_of_variance_one_half(dtype):
    ta.manual_seed(0)
    z = ta.randn(200, 100, dtype=getattr(ta, dtype))
    assert z.dtype == getattr(ta, dtype) == np.dtype(dtype)
    assert torch.randn(2, dtype=getattr(torch, dtype)).dtype == getattr(torch, dtype)
    parts = np.stack([z.real.numpy(), z.imag.numpy()])
    np.testing.assert_allclose(parts.var(axis=(1, 2)), [0.5, 0.5], atol=0.03)
    assert abs(np.mean(np.abs(z.numpy()) ** 2) - 1) < 0.03          # E|z|^2 = 1, as torch
    assert ta.randn_like(z).dtype == z.dtype
    assert ta.randn(3, dtype=ta.complex64, requires_grad=True).requires_grad


# ------------------------------------------------------------------ torch.fft of real signals
_REAL_SIGNAL_CALLS = {
    "fft_6": lambda m, x: m.fft.fft(x, dim=-2), "ifft_odd": lambda m, x: m.fft.ifft(x, n=7),
    "fft2_pad": lambda m, x: m.fft.fft2(x, s=(3, 10), norm="ortho"),
    "fftn_one_dim": lambda m, x: m.fft.fftn(x, s=(8,)), "ifftn": lambda m, x: m.fft.ifftn(x),
    "rfft2": lambda m, x: m.fft.rfft2(x, norm="ortho"), "rfftn_cut": lambda m, x: m.fft.rfftn(x, s=(6, 4)),
    "ihfft": lambda m, x: m.fft.ihfft(x),
}


@pytest.mark.parametrize("dtype", ["float32", "float64", "int64"])
@pytest.mark.parametrize("name", sorted(_REAL_SIGNAL_CALLS))
def test_real_signal_spectra_print_as_torchs(name, dtype):
    """The imaginary parts a real signal's spectrum has exactly 0 are 0 (were ~1e-17: the
    printout switched to scientific notation where torch prints 0.0000j)."""
    rng = np.random.default_rng(3)
    x = rng.integers(-9, 10, (3, 6, 5)) if dtype == "int64" else rng.standard_normal((3, 6, 5))
    x = x.astype(dtype)
    mine = _REAL_SIGNAL_CALLS[name](ta, ta.tensor(x))
    theirs = _REAL_SIGNAL_CALLS[name](torch, torch.tensor(x))
    np.testing.assert_allclose(mine.numpy(), theirs.resolve_conj().numpy(), rtol=2e-5,
                               atol=2e-5)
    assert _masked(str(mine)) == _masked(str(theirs).replace("torch.", ""))
    theirs = theirs.resolve_conj()                  # the exact zeros are where torch's are
    assert ((mine.numpy().imag == 0) == (theirs.numpy().imag == 0)).all()


def _masked(text):
    """str() with each number's digits masked (a last digit may differ): the layout, the
    notation (fixed or scientific) and the signs stay."""
    return re.sub(r"\d+\.\d+", "N", text).replace(" ", "").replace("\n", "")


def test_real_signal_spectrum_gradient_matches_torch():
    rng = np.random.default_rng(4)
    x = rng.standard_normal((4, 6))
    w = rng.standard_normal((4, 6, 2))
    grads = []
    for m in (ta, torch):
        t = m.tensor(x, requires_grad=True)
        loss = 0
        for call in (lambda v: m.fft.fft(v, n=5), lambda v: m.fft.ifft2(v),
                     lambda v: m.fft.fftn(v, dim=0, norm="ortho")):
            y = call(t)
            y = m.view_as_real(y.resolve_conj() if m is torch else y)
            loss = loss + (y * m.tensor(w[:, :y.shape[1]], dtype=y.dtype)).sum()
        loss.backward()
        grads.append(np.asarray(t.grad.numpy()))
    np.testing.assert_allclose(grads[0], grads[1], rtol=1e-10, atol=1e-12)


# ------------------------------------------------------------------ torch.fft's out=
_OUT_CASES = [
    ("fft", "float32", (4,), "complex128", (4,)), ("fft", "float32", (4,), "complex64", (2,)),
    ("rfft", "float32", (4,), "complex128", (3,)), ("irfft", "complex64", (4,), "float64", (6,)),
    ("hfft", "complex64", (4,), "float64", (0,)), ("ihfft", "float32", (4,), "complex64", (3,)),
    ("fft2", "float64", (2, 2), "complex128", (2, 2)), ("ifftn", "complex64", (3,), "complex64", (3,)),
]


@pytest.mark.parametrize("name,in_dtype,shape,out_dtype,out_shape", _OUT_CASES)
def test_fft_out_writes_and_returns_out_as_torch(name, in_dtype, shape, out_dtype, out_shape):
    rng = np.random.default_rng(5)
    x = rng.standard_normal(shape) + (1j * rng.standard_normal(shape) if "complex" in in_dtype
                                      else 0)
    x = x.astype(in_dtype)
    results = []
    for m in (ta, torch):
        out = m.zeros(out_shape, dtype=getattr(m, out_dtype))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")            # torch's (and tinyattn's) resize warning
            got = getattr(m.fft, name)(m.tensor(x), out=out)
        assert got is out
        results.append((str(out.dtype), tuple(out.shape), np.asarray(out.resolve_conj().numpy()
                                                                      if m is torch else out.numpy())))
    assert results[0][0] == results[1][0].replace("torch.", "")
    assert results[0][1] == results[1][1]
    np.testing.assert_allclose(results[0][2], results[1][2], rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("name,in_dtype,out_dtype", [
    ("fft", "float32", "float32"), ("irfft", "complex64", "complex64"),
    ("ihfft", "float32", "complex128")])
def test_fft_out_of_the_wrong_kind_is_refused_as_torch(name, in_dtype, out_dtype):
    for m in (ta, torch):
        x = m.ones(4, dtype=getattr(m, in_dtype))
        with pytest.raises(RuntimeError):
            getattr(m.fft, name)(x, out=m.zeros(4, dtype=getattr(m, out_dtype)))
    x = ta.ones(4, requires_grad=True)
    with pytest.raises(RuntimeError, match="automatic differentiation"):
        ta.fft.fft(x, out=ta.zeros(4, dtype=ta.complex64))


# ------------------------------------------------------------------ hfft2, hfftn, ihfft2, ihfftn
_HERMITIAN_CALLS = {
    "hfft2": lambda m, z, x: m.fft.hfft2(z, s=(3, 6)),
    "hfftn": lambda m, z, x: m.fft.hfftn(z, dim=(0, 2), norm="ortho"),
    "hfftn_default": lambda m, z, x: m.fft.hfftn(z),
    "ihfft2": lambda m, z, x: m.fft.ihfft2(x, norm="forward"),
    "ihfftn": lambda m, z, x: m.fft.ihfftn(x, s=(5, 4), dim=(2, 0)),
    "ihfftn_one_dim": lambda m, z, x: m.fft.ihfftn(x, dim=1),
}


@pytest.mark.parametrize("name", sorted(_HERMITIAN_CALLS))
def test_hermitian_nd_transforms_match_torch_with_gradients(name):
    rng = np.random.default_rng(6)
    z = rng.standard_normal((3, 4, 5)) + 1j * rng.standard_normal((3, 4, 5))
    x = rng.standard_normal((3, 4, 5))
    results = []
    for m in (ta, torch):
        tz, tx = m.tensor(z, requires_grad=True), m.tensor(x, requires_grad=True)
        y = _HERMITIAN_CALLS[name](m, tz, tx)
        flat = m.view_as_real(y.resolve_conj() if m is torch else y) if y.is_complex() else y
        w = np.cos(np.arange(flat.numel())).reshape(tuple(flat.shape))
        (flat * m.tensor(w)).sum().backward()
        grad = tz.grad if tz.grad is not None else tx.grad
        results.append((str(y.dtype).replace("torch.", ""), tuple(y.shape),
                        y.grad_fn.name(), np.asarray((y.resolve_conj() if m is torch else y)
                                                     .detach().numpy()),
                        np.asarray(grad.numpy())))
    (dtype, shape, node, value, grad), theirs = results
    assert (dtype, shape, node) == theirs[:3]
    np.testing.assert_allclose(value, theirs[3], rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(grad, theirs[4], rtol=1e-10, atol=1e-12)


def test_hermitian_nd_transforms_refuse_what_torch_refuses():
    for m in (ta, torch):
        with pytest.raises(RuntimeError):
            m.fft.ihfft2(m.ones(2, 2, dtype=m.complex64))         # a complex input
        with pytest.raises(RuntimeError):
            m.fft.hfftn(m.ones(3, dtype=m.complex64), s=(2, 2))    # more sizes than dims
    assert ta.fft.hfft2(ta.ones(2, 3, dtype=ta.complex64)).shape == (2, 4)   # control


# ------------------------------------------------------------------ more complex ops a learner meets
_MORE_COMPLEX = {
    "square": lambda m, z, r: z.square(),
    "reciprocal": lambda m, z, r: z.reciprocal(),
    "where": lambda m, z, r: m.where(r > 0, z, m.zeros_like(z)),
    "where_real_other": lambda m, z, r: m.where(r > 0, z, r.to(z.dtype)),
    "where_number": lambda m, z, r: m.where(r > 0, r, 2j),
    "masked_fill": lambda m, z, r: z.masked_fill(r < 0, 1 + 2j),
    "diag": lambda m, z, r: m.diag(z[0]) * m.diag(z)[1],
}


@pytest.mark.parametrize("name", sorted(_MORE_COMPLEX))
def test_more_complex_ops_match_torch_with_gradients(name):
    re = [[1.0, -2.0, 0.5], [0.25, 3.0, -1.0]]
    im = [[0.5, 3.0, -1.0], [2.0, -0.5, 1.5]]
    results = []
    for m in (ta, torch):
        z = m.complex(m.tensor(re, dtype=m.float64), m.tensor(im, dtype=m.float64))
        z.requires_grad_(True)
        r = m.tensor([2.0, -1.0, 0.5], dtype=m.float64, requires_grad=True)
        y = _MORE_COMPLEX[name](m, z, r)
        (m.view_as_real(y) ** 2).sum().backward()
        results.append([str(y.dtype).replace("torch.", ""), y.detach().numpy(),
                        z.grad.numpy() if z.grad is not None else None,
                        r.grad.numpy() if r.grad is not None else None])
    mine, theirs = results
    assert mine[0] == theirs[0]
    for a, b in zip(mine[1:], theirs[1:]):
        assert (a is None) == (b is None)
        if a is not None:
            np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)


def test_complex_ops_still_refused_name_the_op():            # the negative control
    z = ta.tensor([1 + 2j])
    with pytest.raises(TypeError, match="Sqrt: complex"):
        ta.sqrt(z)
    with pytest.raises(RuntimeError, match="complex32"):
        ta.where(ta.tensor([True]), ta.ones(1, dtype=ta.float16), 2j)
