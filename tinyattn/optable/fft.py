"""The op-table rows of ops/fft.py: real signals in, real numbers out (complex spectra through
``view_as_real``, complex inputs through ``view_as_complex``), so the float64 gradcheck checks
each transform's backward (its adjoint, docs/derivations.md#fourier-transforms) in torch's
convention for complex gradients; NumPy's np.fft is the reference."""
from __future__ import annotations

from typing import List

import numpy as np

from .. import fft
from .cases import case_pair
from .complex_numbers import _c, _nc, _nr, _r   # complex <-> (..., 2) real pairs
from .spec import OpSpec, from_pairs

__all__ = ["ROWS"]


def _normal(shape):
    return lambda rng: [case_pair(str(shape), rng.standard_normal(shape))]


ROWS: List[OpSpec] = from_pairs([
    ("fft.fft", lambda x: _r(fft.fft(x, n=6, norm="ortho")),
     lambda x: _nr(np.fft.fft(x, n=6, norm="ortho")), _normal((3, 5)), "fourier-transforms"),
    ("fft.ifft_complex", lambda x: _r(fft.ifft(_c(x), n=3, dim=0)),
     lambda x: _nr(np.fft.ifft(_nc(x), n=3, axis=0)), _normal((4, 5, 2)),
     "fourier-transforms"),
    ("fft.fftn", lambda x: _r(fft.fftn(_c(x), s=(3, 6), norm="forward")),
     lambda x: _nr(np.fft.fftn(_nc(x), s=(3, 6), axes=(0, 1), norm="forward")),
     _normal((4, 5, 2)), "fourier-transforms"),
    ("fft.rfft", lambda x: _r(fft.rfft(x, n=7)),
     lambda x: _nr(np.fft.rfft(x, n=7)), _normal((3, 6)), "fourier-transforms"),
    ("fft.rfft2", lambda x: _r(fft.rfft2(x, norm="ortho")),
     lambda x: _nr(np.fft.rfft2(x, norm="ortho")), _normal((4, 6)), "fourier-transforms"),
    ("fft.irfft", lambda x: fft.irfft(_c(x), n=8),
     lambda x: np.fft.irfft(_nc(x), n=8), _normal((3, 5, 2)), "fourier-transforms"),
    ("fft.irfft_odd", lambda x: fft.irfft(_c(x), n=7, dim=0, norm="ortho"),
     lambda x: np.fft.irfft(_nc(x), n=7, axis=0, norm="ortho"), _normal((3, 2, 2)),
     "fourier-transforms"),
    ("fft.irfftn", lambda x: fft.irfftn(_c(x), s=(4, 6)),
     lambda x: np.fft.irfftn(_nc(x), s=(4, 6), axes=(0, 1)), _normal((3, 4, 2)),
     "fourier-transforms"),
    ("fft.hfft", lambda x: fft.hfft(_c(x), n=6),
     lambda x: np.fft.hfft(_nc(x), n=6), _normal((2, 4, 2)), "fourier-transforms"),
    ("fft.ihfft", lambda x: _r(fft.ihfft(x)),
     lambda x: _nr(np.fft.ihfft(x)), _normal((2, 5)), "fourier-transforms"),
    ("fft.hfft2", lambda x: fft.hfft2(_c(x), s=(3, 6)),
     lambda x: np.fft.irfftn(np.conj(_nc(x)), s=(3, 6), axes=(0, 1), norm="forward"),
     _normal((4, 3, 2)), "fourier-transforms"),
    ("fft.hfftn", lambda x: fft.hfftn(_c(x), dim=(0, 1), norm="ortho"),
     lambda x: np.fft.irfftn(np.conj(_nc(x)), axes=(0, 1), norm="ortho"),
     _normal((3, 4, 2)), "fourier-transforms"),
    ("fft.ihfft2", lambda x: _r(fft.ihfft2(x, s=(3, 5))),
     lambda x: _nr(np.conj(np.fft.rfftn(x, s=(3, 5), norm="forward"))), _normal((4, 6)),
     "fourier-transforms"),
    ("fft.ihfftn", lambda x: _r(fft.ihfftn(x, dim=(1, 0), norm="ortho")),
     lambda x: _nr(np.conj(np.fft.rfftn(x, axes=(1, 0), norm="ortho"))), _normal((4, 5)),
     "fourier-transforms"),
    ("fft.fftshift", lambda x: fft.ifftshift(fft.fftshift(x, dim=0) * 2.0, dim=(0, 1)),
     lambda x: np.fft.ifftshift(np.fft.fftshift(x, axes=0) * 2.0, axes=(0, 1)),
     _normal((5, 4)), "fourier-transforms"),
])
