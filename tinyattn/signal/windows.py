"""``tinyattn.signal.windows``: torch.signal.windows's window functions, by their documented
formulas (n = 0 .. M-1; N = M - 1 for a symmetric window):

    general_cosine   w_n = sum_k (-1)^k a_k cos(2 pi k n / N)
    general_hamming  general_cosine with a = [alpha, 1 - alpha];  hann: alpha = 0.5,
                     hamming: 0.54;  blackman: a = [0.42, 0.5, 0.08];  nuttall: a =
                     [0.3635819, 0.4891775, 0.1365995, 0.0106411]
    bartlett         w_n = 1 - |2n / N - 1|
    cosine           w_n = sin(pi (n + 1/2) / M)
    exponential      w_n = exp(-|n - c| / tau),  c = N / 2 unless given
    gaussian         w_n = exp(-(n - N/2)^2 / (2 std^2))
    kaiser           w_n = I0(beta sqrt(1 - ((n - N/2) / (N/2))^2)) / I0(beta)

A periodic window (``sym=False``) is the symmetric window of M + 1 samples without its last.
Values are computed in float64 and rounded once to the dtype (float32 by default; float64
asked for with dtype=); the windows are constants (no gradient unless requires_grad=True
makes the result a leaf that requires it, as torch's).
"""
from __future__ import annotations

import math
from typing import Any, Callable, Optional, Sequence

import numpy as np

from .. import backend, precision
from ..factories import _device, _leaf
from ..tensor import Tensor, normalize_dtype
from ..tensor.layout import strided

__all__ = ["bartlett", "blackman", "cosine", "exponential", "gaussian", "general_cosine",
           "general_hamming", "hamming", "hann", "kaiser", "nuttall"]


def _window(name: str, M: Any, sym: bool, dtype: Any, device: Any, requires_grad: bool,
            values: Callable[[int], np.ndarray], one_is_one: bool = True,
            layout: Any = None) -> Tensor:
    """Check M and dtype as torch does, then ``values(length)`` (a symmetric window of that
    many samples, length >= 2) as a tensor: periodic windows drop the last of M + 1."""
    if not isinstance(M, (int, np.integer)) or isinstance(M, bool):
        raise TypeError(f"{name}(): M must be an int, got {type(M).__name__}")
    if M < 0:
        raise ValueError(f"{name} requires non-negative window length, got M={M}")
    if layout is not None and layout != strided:      # a sparse layout: torch's ValueError
        raise ValueError(f"{name} is implemented for strided tensors only, got: {layout}")
    want = normalize_dtype(dtype) or precision.get_default_dtype()
    if want not in (np.dtype(np.float32), np.dtype(np.float64)):
        raise ValueError(f"{name} expects float32 or float64 dtypes, got: torch.{want.name}")
    if M == 0:
        data = np.zeros(0)
    elif M == 1 and one_is_one:                 # (an exponential's given center: the formula)
        data = np.ones(1)
    else:
        data = values(M) if sym else values(M + 1)[:M]
    return _leaf(backend.to_device(np.asarray(data).astype(want), _device(device)),
                 requires_grad)


def general_cosine(M: int, *, a: Sequence[float], sym: bool = True, dtype: Any = None,
                   layout: Any = None, device: Any = None,
                   requires_grad: bool = False) -> Tensor:
    """w_n = sum_k (-1)^k a_k cos(2 pi k n / (M - 1)) (``torch.signal.windows.general_cosine``)."""
    if isinstance(a, Tensor):
        a = a.tolist()
    if not isinstance(a, (list, tuple)):
        raise TypeError(f"Coefficients must be a list/tuple, got {type(a).__name__}")
    if not a:
        raise ValueError("Coefficients cannot be empty")

    def values(length: int) -> np.ndarray:
        n = np.arange(length, dtype=np.float64)
        step = 2.0 * math.pi / (length - 1)
        return sum((-1) ** k * float(c) * np.cos(k * step * n) for k, c in enumerate(a))
    return _window("general_cosine", M, sym, dtype, device, requires_grad, values,
                   layout=layout)


def general_hamming(M: int, *, alpha: float = 0.54, sym: bool = True, dtype: Any = None,
                    layout: Any = None, device: Any = None,
                    requires_grad: bool = False) -> Tensor:
    return general_cosine(M, a=[alpha, 1.0 - alpha], sym=sym, dtype=dtype,
                          layout=layout, device=device,
                          requires_grad=requires_grad)


def hann(M: int, *, sym: bool = True, dtype: Any = None, layout: Any = None,
         device: Any = None, requires_grad: bool = False) -> Tensor:
    return general_hamming(M, alpha=0.5, sym=sym, dtype=dtype, layout=layout, device=device,
                           requires_grad=requires_grad)


def hamming(M: int, *, sym: bool = True, dtype: Any = None, layout: Any = None,
            device: Any = None, requires_grad: bool = False) -> Tensor:
    return general_hamming(M, sym=sym, dtype=dtype, layout=layout, device=device,
                           requires_grad=requires_grad)


def blackman(M: int, *, sym: bool = True, dtype: Any = None, layout: Any = None,
             device: Any = None, requires_grad: bool = False) -> Tensor:
    return general_cosine(M, a=[0.42, 0.5, 0.08], sym=sym, dtype=dtype,
                          layout=layout, device=device,
                          requires_grad=requires_grad)


def nuttall(M: int, *, sym: bool = True, dtype: Any = None, layout: Any = None,
            device: Any = None, requires_grad: bool = False) -> Tensor:
    return general_cosine(M, a=[0.3635819, 0.4891775, 0.1365995, 0.0106411], sym=sym,
                          dtype=dtype, layout=layout, device=device,
                          requires_grad=requires_grad)


def bartlett(M: int, *, sym: bool = True, dtype: Any = None, layout: Any = None,
             device: Any = None, requires_grad: bool = False) -> Tensor:
    def values(length: int) -> np.ndarray:
        n = np.arange(length, dtype=np.float64)
        return 1.0 - np.abs(2.0 * n / (length - 1) - 1.0)
    return _window("bartlett", M, sym, dtype, device, requires_grad, values, layout=layout)


def cosine(M: int, *, sym: bool = True, dtype: Any = None, layout: Any = None,
           device: Any = None, requires_grad: bool = False) -> Tensor:
    def values(length: int) -> np.ndarray:
        return np.sin(math.pi * (np.arange(length, dtype=np.float64) + 0.5) / length)
    return _window("cosine", M, sym, dtype, device, requires_grad, values, layout=layout)


def exponential(M: int, *, center: Optional[float] = None, tau: float = 1.0,
                sym: bool = True, dtype: Any = None, layout: Any = None, device: Any = None,
                requires_grad: bool = False) -> Tensor:
    if tau <= 0:
        raise ValueError(f"Tau must be positive, got: {tau} instead.")
    if sym and center is not None:
        raise ValueError("Center must be None for symmetric windows")

    def values(length: int) -> np.ndarray:
        middle = (length - 1) / 2.0 if center is None else float(center)
        return np.exp(-np.abs(np.arange(length, dtype=np.float64) - middle) / tau)
    return _window("exponential", M, sym, dtype, device, requires_grad, values, layout=layout,
                   one_is_one=center is None)


def gaussian(M: int, *, std: float = 1.0, sym: bool = True, dtype: Any = None,
             layout: Any = None, device: Any = None, requires_grad: bool = False) -> Tensor:
    if std <= 0:
        raise ValueError(f"Standard deviation must be positive, got: {std} instead.")

    def values(length: int) -> np.ndarray:
        n = np.arange(length, dtype=np.float64) - (length - 1) / 2.0
        return np.exp(-n ** 2 / (2.0 * std ** 2))
    return _window("gaussian", M, sym, dtype, device, requires_grad, values, layout=layout)


def kaiser(M: int, *, beta: float = 12.0, sym: bool = True, dtype: Any = None,
           layout: Any = None, device: Any = None, requires_grad: bool = False) -> Tensor:
    if beta < 0:
        raise ValueError(f"beta must be non-negative, got: {beta} instead.")

    # torch computes I0 in the window's dtype: in float32, I0(beta) overflows past beta ~ 91
    # (inf), so the window is 0 where I0(beta x) is finite and NaN (inf / inf) where not
    want = normalize_dtype(dtype) or precision.get_default_dtype()

    def values(length: int) -> np.ndarray:
        half = (length - 1) / 2.0
        n = np.arange(length, dtype=np.float64)
        inside = np.clip(1.0 - ((n - half) / half) ** 2, 0.0, None)
        args = beta * np.sqrt(inside)
        i0 = backend._scipy_special().i0
        top, bottom = i0(args), i0(np.float64(beta))
        if want == np.float32:          # torch's float32 I0 is e^x times a series: inf once
            limit = math.log(np.finfo(np.float32).max)          # e^x overflows (x > 88.72)
            top = np.where(args > limit, np.inf, top).astype(np.float32)
            bottom = np.float32(np.inf if beta > limit else bottom)
        return top / bottom
    return _window("kaiser", M, sym, dtype, device, requires_grad, values, layout=layout)
