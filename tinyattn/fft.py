"""``tinyattn.fft``: torch.fft's transforms (ops/fft.py, docs/derivations.md#fourier-transforms).

    import tinyattn.fft
    spectrum = tinyattn.fft.rfft(signal)            # complex64 for a float32 signal
    back = tinyattn.fft.irfft(spectrum, n=signal.shape[-1])
"""
from __future__ import annotations

from .ops.fft import (fft, fft2, fftfreq, fftn, fftshift, hfft, hfft2, hfftn, ifft, ifft2, ifftn,
                      ifftshift, ihfft, ihfft2, ihfftn, irfft, irfft2, irfftn, rfft, rfft2,
                      rfftfreq, rfftn)

__all__ = ["fft", "ifft", "rfft", "irfft", "fft2", "ifft2", "rfft2", "irfft2", "fftn", "ifftn",
           "rfftn", "irfftn", "hfft", "ihfft", "hfft2", "ihfft2", "hfftn", "ihfftn", "fftfreq",
           "rfftfreq", "fftshift", "ifftshift"]
