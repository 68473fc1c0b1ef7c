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
torch's older top-level spellings (``torch.hann_window(window_length, periodic=True)``,
``hamming_window`` with alpha and beta, ``blackman_window``, ``bartlett_window``,
``kaiser_window``) are at the end: the same formulas, periodic by default, any float dtype.
Values are computed in float64 and rounded once to the dtype (float32 by default; float64
asked for with dtype=); the windows are constants (no gradient unless requires_grad=True
makes the result a leaf that requires it, as torch's).
"""
from __future__ import annotations

import math
from typing import Any, Callable, Optional, Sequence

import numpy as np

from .. import backend, precision
from ..factories import _device, _leaf, _placement
from ..tensor import Tensor, normalize_dtype
from ..tensor.layout import strided

__all__ = ["bartlett", "blackman", "cosine", "exponential", "gaussian", "general_cosine",
           "general_hamming", "hamming", "hann", "kaiser", "nuttall",
           "hann_window", "hamming_window", "blackman_window", "bartlett_window",
           "kaiser_window"]


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


def _cosines(a: Sequence[float]) -> Callable[[int], np.ndarray]:
    """values(length): the symmetric window sum_k (-1)^k a_k cos(2 pi k n / (length - 1))."""
    def values(length: int) -> np.ndarray:
        n = np.arange(length, dtype=np.float64)
        step = 2.0 * math.pi / (length - 1)
        return sum((-1) ** k * c * np.cos(k * step * n) for k, c in enumerate(a))
    return values


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
    return _window("general_cosine", M, sym, dtype, device, requires_grad,
                   _cosines([float(c) for c in a]), layout=layout)


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


# ---------------------------------------------------------------- torch.hann_window & co.
# torch builds these from tensor ops in the window's dtype (arange, then mul_, cos_, add_),
# each rounded to the dtype (a half dtype computing each step in float32), each Python number
# rounded to the dtype first (as a scalar operand is); the steps below are those, so
# float16/bfloat16 windows round as torch's do. The kaiser window is one kernel that rounds
# once.
def _torch_window(name: str, window_length: Any, periodic: bool, dtype: Any, layout: Any,
                  device: Any, requires_grad: bool, pin_memory: Any,
                  values: Callable[[int, Callable[[Any], np.ndarray]], np.ndarray]) -> Tensor:
    """torch's top-level window functions: its checks and messages, then ``values(length,
    rounded)`` (the symmetric window of that many samples, length >= 2; ``rounded(x)``
    rounds a step to the dtype), periodic dropping the last of window_length + 1."""
    if not isinstance(window_length, (int, np.integer)) or isinstance(window_length, bool):
        raise TypeError(f"{name}(): argument 'window_length' (position 1) must be int, not "
                        f"{type(window_length).__name__}")
    want = normalize_dtype(dtype) or precision.get_default_dtype()
    if not precision.is_floating(want):
        raise RuntimeError(f"{name} expects floating point dtypes, got: torch.{want.name} "
                           f"(as torch); pass dtype=torch.float32 or float64")
    if window_length < 0:
        raise RuntimeError(f"{name} requires non-negative window_length, got "
                           f"window_length={window_length}")
    _placement(name, layout, pin_memory)
    step_dtype = np.float64 if want == np.float64 else np.float32   # torch's opmath type

    def rounded(x: Any) -> np.ndarray:
        return precision.cast(np.asarray(x, dtype=step_dtype), want).astype(step_dtype)
    if window_length == 0:
        data = np.zeros(0)
    elif window_length == 1:
        data = np.ones(1)
    else:
        length = window_length + 1 if periodic else window_length
        data = values(length, rounded)[:window_length]
    return _leaf(backend.to_device(precision.cast(np.asarray(data), want), _device(device)),
                 requires_grad)


def _positions(length: int, rounded: Callable[[Any], np.ndarray], scale: float) -> np.ndarray:
    """arange(length) in the dtype, times scale (torch's first two steps)."""
    return rounded(rounded(np.arange(length)) * rounded(scale))


def hamming_window(window_length: int, periodic: bool = True, alpha: float = 0.54,
                   beta: float = 0.46, *, dtype: Any = None, layout: Any = None,
                   device: Any = None, requires_grad: bool = False,
                   pin_memory: Any = False) -> Tensor:
    """``torch.hamming_window``: w_n = alpha - beta cos(2 pi n / (N - 1))."""
    def values(length: int, rounded: Callable[[Any], np.ndarray]) -> np.ndarray:
        x = _positions(length, rounded, 2.0 * math.pi / (length - 1))
        x = rounded(np.cos(x))
        x = rounded(x * rounded(-beta))
        return rounded(x + rounded(alpha))
    return _torch_window("hamming_window", window_length, periodic, dtype, layout, device,
                         requires_grad, pin_memory, values)


def hann_window(window_length: int, periodic: bool = True, *, dtype: Any = None,
                layout: Any = None, device: Any = None, requires_grad: bool = False,
                pin_memory: Any = False) -> Tensor:
    """``torch.hann_window``: hamming_window with alpha = beta = 0.5."""
    return hamming_window(window_length, periodic, 0.5, 0.5, dtype=dtype, layout=layout,
                          device=device, requires_grad=requires_grad, pin_memory=pin_memory)


def blackman_window(window_length: int, periodic: bool = True, *, dtype: Any = None,
                    layout: Any = None, device: Any = None,
                    requires_grad: bool = False, pin_memory: Any = False) -> Tensor:
    """``torch.blackman_window``: 0.42 - 0.5 cos(2 pi n / (N - 1)) + 0.08 cos(4 pi n / (N - 1))."""
    def values(length: int, rounded: Callable[[Any], np.ndarray]) -> np.ndarray:
        w = _positions(length, rounded, math.pi / (length - 1))
        fours = rounded(rounded(np.cos(rounded(w * rounded(4)))) * rounded(0.08))
        twos = rounded(rounded(np.cos(rounded(w * rounded(2)))) * rounded(0.5))
        return rounded(rounded(fours - twos) + rounded(0.42))
    return _torch_window("blackman_window", window_length, periodic, dtype, layout, device,
                         requires_grad, pin_memory, values)


def bartlett_window(window_length: int, periodic: bool = True, *, dtype: Any = None,
                    layout: Any = None, device: Any = None,
                    requires_grad: bool = False, pin_memory: Any = False) -> Tensor:
    """``torch.bartlett_window``: 1 - |2n / (N - 1) - 1| (2n / (N - 1), then 2 minus it on
    the second half)."""
    def values(length: int, rounded: Callable[[Any], np.ndarray]) -> np.ndarray:
        w = _positions(length, rounded, 2.0 / (length - 1))
        first = ((length - 1) >> 1) + 1
        w[first:] = rounded(-w[first:] + rounded(2))
        return w
    return _torch_window("bartlett_window", window_length, periodic, dtype, layout, device,
                         requires_grad, pin_memory, values)


def kaiser_window(window_length: int, periodic: bool = True, beta: float = 12.0, *,
                  dtype: Any = None, layout: Any = None, device: Any = None,
                  requires_grad: bool = False, pin_memory: Any = False) -> Tensor:
    """``torch.kaiser_window``: I0(beta sqrt(1 - ((n - N/2) / (N/2))^2)) / I0(beta), one
    kernel (computed in float64 here, rounded once)."""
    def values(length: int, rounded: Callable[[Any], np.ndarray]) -> np.ndarray:
        half = (length - 1) / 2.0
        n = rounded(np.arange(length)).astype(np.float64)   # arange in the dtype (bfloat16
        inside = np.clip(1.0 - ((n - half) / half) ** 2, 0.0, None)    # skips past 256)
        i0 = backend._scipy_special().i0
        return i0(beta * np.sqrt(inside)) / i0(np.float64(beta))
    return _torch_window("kaiser_window", window_length, periodic, dtype, layout, device,
                         requires_grad, pin_memory, values)
