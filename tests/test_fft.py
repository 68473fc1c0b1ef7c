"""torch.fft against torch (docs/derivations.md#fourier-transforms): values, dtypes and
gradients of every transform (through a real loss, torch's convention for complex
gradients), the frequencies and shifts, and the refusals torch makes too."""
import itertools

import numpy as np
import pytest

import tinyattn as ta

torch = pytest.importorskip("torch")


def _np(t):
    if hasattr(t, "resolve_conj"):
        t = t.detach().resolve_conj()
    return np.asarray(t.detach().numpy())


# ------------------------------------------------------------------ torch.fft
def _fft_cases():
    for name, norm, n, dim in itertools.product(
            ("fft", "ifft", "rfft", "irfft", "hfft", "ihfft"), (None, "ortho", "forward"),
            (None, 3, 8), (-1, 0)):
        yield name, dict(n=n, dim=dim, norm=norm)
    for name, norm, s, dim in itertools.product(
            ("fft2", "ifft2", "rfft2", "irfft2", "fftn", "ifftn", "rfftn", "irfftn"),
            (None, "ortho", "forward"), (None, (3, 6)), (None, (1, 0), (-1, 0))):
        if dim is None and name.endswith("2"):
            continue
        yield name, dict(s=s, norm=norm, **({} if dim is None else {"dim": dim}))


FFT_CASES = list(_fft_cases())


def _weighted_sum(m, y):
    if y.is_complex():
        y = m.view_as_real(y.resolve_conj() if m is torch else y)
    w = m.tensor(np.cos(np.arange(y.numel())).reshape(tuple(y.shape)), dtype=y.dtype)
    return (y * w).sum()


@pytest.mark.parametrize("dtype", ["float64", "complex128", "float32"])
def test_fft_values_dtypes_and_gradients_match_torch(dtype):
    """Every transform, norm, n/s and dim (1077 combinations checked while writing it; a
    sample here), float32 -> complex64 as torch, gradients through a real loss."""
    rng = np.random.default_rng(0)
    checked = 0
    for name, kw in FFT_CASES:
        if name in ("rfft", "rfft2", "rfftn", "ihfft") and dtype.startswith("complex"):
            continue
        base = rng.standard_normal((5, 4))
        if dtype.startswith("complex"):
            base = base + 1j * rng.standard_normal((5, 4))
        results = []
        for m in (ta, torch):
            x = m.tensor(base, dtype=getattr(m, dtype), requires_grad=True)
            y = getattr(m.fft, name)(x, **kw)
            _weighted_sum(m, y).backward()
            results.append((_np(y), _np(x.grad), str(y.dtype).replace("torch.", "")))
        (y1, g1, d1), (y2, g2, d2) = results
        tol = 2e-5 if dtype == "float32" else 1e-10
        assert d1 == d2, (name, kw)
        np.testing.assert_allclose(y1, y2, rtol=tol, atol=tol, err_msg=f"{name} {kw}")
        np.testing.assert_allclose(g1, g2, rtol=tol, atol=tol, err_msg=f"{name} {kw} grad")
        checked += 1
    assert checked > 50


def test_fft_refuses_what_torch_refuses():
    x = ta.ones(4)
    with pytest.raises(RuntimeError, match="real input"):
        ta.fft.rfft(ta.ones(4, dtype=ta.complex64))
    with pytest.raises(ValueError, match="normalization"):
        ta.fft.fft(x, norm="sideways")
    with pytest.raises(RuntimeError, match="Invalid number of data points"):
        ta.fft.fft(x, n=0)
    with pytest.raises(RuntimeError, match="Unsupported dtype"):
        ta.fft.fft(ta.ones(4, dtype=ta.float16))
    with pytest.raises(IndexError, match="Dimension out of range"):
        ta.fft.fft(x, dim=1)
    with pytest.raises(RuntimeError, match="same length"):
        ta.fft.fftn(ta.ones(3, 3), s=(2,), dim=(0, 1))
    assert ta.fft.fft(ta.arange(4)).dtype == np.complex64          # integers: as float32


def test_fft_frequencies_and_shifts_match_torch():
    for n, d in ((1, 1.0), (6, 1.0), (7, 0.1), (8, 2.5)):
        for op in ("fftfreq", "rfftfreq"):
            for dtype in (None, "float64"):
                kw = {} if dtype is None else {"dtype": dtype}
                mine = getattr(ta.fft, op)(n, d, **kw)
                theirs = getattr(torch.fft, op)(n, d, **({} if dtype is None else
                                                         {"dtype": torch.float64}))
                assert str(theirs.dtype) == f"torch.{mine.dtype}"
                np.testing.assert_array_equal(mine.numpy(), _np(theirs))
    base = np.arange(35.0).reshape(5, 7)
    for op in ("fftshift", "ifftshift"):
        for dim in (None, 0, (1,), (-1, 0)):
            mine = getattr(ta.fft, op)(ta.tensor(base), dim=dim)
            theirs = getattr(torch.fft, op)(torch.tensor(base), dim=dim)
            np.testing.assert_array_equal(mine.numpy(), _np(theirs))


def test_fnet_style_token_mixing_trains_like_torch():
    """FNet's mixing layer, Re(fft2(x)) over (sequence, hidden), inside a small loss: the
    same loss and gradients as torch's."""
    rng = np.random.default_rng(1)
    x0 = rng.standard_normal((2, 6, 4))
    w0 = rng.standard_normal((4, 4))
    results = []
    for m in (ta, torch):
        x = m.tensor(x0, requires_grad=True)
        w = m.tensor(w0, requires_grad=True)
        mixed = m.fft.fft2(x @ w, dim=(-2, -1)).real
        loss = (mixed ** 2).mean()
        loss.backward()
        results.append((_np(loss), _np(x.grad), _np(w.grad)))
    for mine, theirs in zip(*results):
        np.testing.assert_allclose(mine, theirs, rtol=1e-10, atol=1e-12)


def test_node_names_are_torchs():
    """grad_fn names as torch prints them (FftR2CBackward0, ...), also for a real signal's
    fft (FftR2C), ifft (Conj) and fft2 (FftC2C: torch converts to complex there)."""
    x = ta.ones(4, requires_grad=True)
    xt = torch.ones(4, requires_grad=True)
    for make in (lambda m, v: m.fft.rfft(v), lambda m, v: m.fft.fft(v * 1j),
                 lambda m, v: m.fft.irfft(v * 1j), lambda m, v: m.fft.hfft(v * 1j),
                 lambda m, v: m.complex(v, v), lambda m, v: (v * 1j).abs(),
                 lambda m, v: m.fft.fftshift(v), lambda m, v: m.fft.fftn(v.reshape(2, 2)),
                 lambda m, v: m.fft.fft(v), lambda m, v: m.fft.ifft(v),
                 lambda m, v: m.fft.fftn(v, dim=0), lambda m, v: m.fft.ihfft(v)):
        assert make(ta, x).grad_fn.name() == make(torch, xt).grad_fn.name()
