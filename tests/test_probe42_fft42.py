"""Findings of the fft42 stream (complex tensors and torch.fft as torch's), each against torch:
a learner's Llama 2 RoPE program under run-torch's dtypes, complex factories, and torch.fft's
printing, out= and Hermitian n-D transforms."""
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
