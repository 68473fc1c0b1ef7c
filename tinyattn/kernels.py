"""Which attention kernel ``F.scaled_dot_product_attention`` uses, and the float32 matmul
precision switches: PyTorch's ``torch.nn.attention.sdpa_kernel``, the deprecated
``torch.backends.cuda.sdp_kernel`` and ``torch.backends.cuda.matmul.allow_tf32``
(docs/precision_memory_time.md#choosing-an-attention-kernel).

tinyattn has two attention kernels: "plain" (the whole probability matrix: torch's math
kernel) and "tiled" (blocks of queries and keys with an online softmax, the idea behind
torch's flash and memory-efficient kernels; docs/tiled_attention.md). The switches say which
torch backends are allowed; ``choose_impl`` maps them to a kernel, the way torch 2.13 does
on each device:

- MATH allowed -> "plain" (tinyattn's default; torch would try a fused kernel first, whose
  result is the same up to rounding);
- else FLASH_ATTENTION allowed -> "tiled" (torch has a flash kernel on the CPU too); with
  dropout, which neither fused kernel takes, torch warns and raises "No available kernel";
  a float mask or ``need_weights`` (which tiled does not take) use "plain";
- else EFFICIENT_ATTENTION or CUDNN_ATTENTION allowed -> "tiled" on CUDA; on the CPU torch
  has neither, and raises "No viable backend": so does tinyattn.
These switches are process-wide, as torch's.
"""
from __future__ import annotations

import contextlib
import enum
import warnings
from typing import Any, Iterable, Iterator, Union

__all__ = ["SDPBackend", "sdpa_kernel", "sdp_kernel", "choose_impl", "flash_sdp_enabled",
           "math_sdp_enabled", "mem_efficient_sdp_enabled", "cudnn_sdp_enabled",
           "enable_flash_sdp", "enable_math_sdp", "enable_mem_efficient_sdp",
           "enable_cudnn_sdp", "set_float32_matmul_precision",
           "get_float32_matmul_precision", "MatmulSettings", "matmul"]


class SDPBackend(enum.Enum):
    """torch.nn.attention.SDPBackend, with torch's values."""

    ERROR = -1
    MATH = 0
    FLASH_ATTENTION = 1
    EFFICIENT_ATTENTION = 2
    CUDNN_ATTENTION = 3
    OVERRIDEABLE = 4


_ALL = frozenset(SDPBackend) - {SDPBackend.ERROR}
_enabled = set(_ALL)                      # the allowed backends; all, until a switch says
_NO_VIABLE = ("No viable backend for scaled_dot_product_attention was found. This is likely "
              "due to turning off both the math kernel and the fused kernels.")


def choose_impl(device: str, dropout_p: float, float_mask: bool, need_weights: bool) -> str:
    """"plain" or "tiled" for a call of scaled_dot_product_attention (module docstring)."""
    if SDPBackend.MATH in _enabled:
        return "plain"
    fused_here = {SDPBackend.FLASH_ATTENTION}
    if device != "cpu":
        fused_here |= {SDPBackend.EFFICIENT_ATTENTION, SDPBackend.CUDNN_ATTENTION}
    if not _enabled & fused_here:
        raise RuntimeError(_NO_VIABLE)
    if dropout_p > 0.0:
        warnings.warn("Flash attention kernel not used because:", UserWarning, stacklevel=3)
        warnings.warn("Both fused kernels do not support non-zero dropout.", UserWarning,
                      stacklevel=3)
        raise RuntimeError("No available kernel.  Aborting execution.")
    return "plain" if float_mask or need_weights else "tiled"


@contextlib.contextmanager
def _allowing(backends: Iterable[SDPBackend]) -> Iterator[None]:
    global _enabled
    previous = set(_enabled)
    _enabled = set(backends)
    try:
        yield
    finally:
        _enabled = previous


def sdpa_kernel(backends: Union[SDPBackend, Iterable[SDPBackend]],
                set_priority: bool = False) -> Any:
    """``with sdpa_kernel(SDPBackend.FLASH_ATTENTION):`` or a list: only those backends may
    run inside the block (``set_priority`` is accepted; tinyattn's order is fixed)."""
    items = [backends] if isinstance(backends, SDPBackend) else backends
    if not isinstance(items, (list, tuple, set)) or not all(isinstance(b, SDPBackend)
                                                            for b in items):
        raise AssertionError(f"Backend must be an instance of SDPBackend or a list of "
                             f"SDPBackend instances, got {type(backends).__name__}")
    return _allowing(items)


def sdp_kernel(enable_flash: bool = True, enable_math: bool = True,
               enable_mem_efficient: bool = True, enable_cudnn: bool = True) -> Any:
    """The deprecated ``torch.backends.cuda.sdp_kernel``: warns as torch does, then acts as
    ``sdpa_kernel`` with the backends switched on."""
    warnings.warn("`torch.backends.cuda.sdp_kernel()` is deprecated. In the future, this "
                  "context manager will be removed. Please see "
                  "`torch.nn.attention.sdpa_kernel()` for the new context manager, with "
                  "updated signature.", FutureWarning, stacklevel=2)
    chosen = [backend for backend, on in [(SDPBackend.FLASH_ATTENTION, enable_flash),
                                          (SDPBackend.MATH, enable_math),
                                          (SDPBackend.EFFICIENT_ATTENTION, enable_mem_efficient),
                                          (SDPBackend.CUDNN_ATTENTION, enable_cudnn)] if on]
    return _allowing(chosen + [SDPBackend.OVERRIDEABLE])


def _switch(backend: SDPBackend, on: bool) -> None:
    (_enabled.add if on else _enabled.discard)(backend)


def flash_sdp_enabled() -> bool:
    return SDPBackend.FLASH_ATTENTION in _enabled


def math_sdp_enabled() -> bool:
    return SDPBackend.MATH in _enabled


def mem_efficient_sdp_enabled() -> bool:
    return SDPBackend.EFFICIENT_ATTENTION in _enabled


def cudnn_sdp_enabled() -> bool:
    return SDPBackend.CUDNN_ATTENTION in _enabled


def enable_flash_sdp(enabled: bool) -> None:
    _switch(SDPBackend.FLASH_ATTENTION, enabled)


def enable_math_sdp(enabled: bool) -> None:
    _switch(SDPBackend.MATH, enabled)


def enable_mem_efficient_sdp(enabled: bool) -> None:
    _switch(SDPBackend.EFFICIENT_ATTENTION, enabled)


def enable_cudnn_sdp(enabled: bool) -> None:
    _switch(SDPBackend.CUDNN_ATTENTION, enabled)


# ---------------------------------------------------------------- float32 matmul precision
# TF32 rounds a float32 matmul's inputs to 10 mantissa bits on NVIDIA tensor cores. NumPy
# has no such mode, and torch's CPU matmuls ignore it too: these settings are kept and read
# back exactly as torch's, and change no number tinyattn computes.
_PRECISIONS = ("highest", "high", "medium")
_precision = "highest"


def set_float32_matmul_precision(precision: str) -> None:
    global _precision
    if precision not in _PRECISIONS:
        warnings.warn(f"{precision} is not one of 'highest', 'high', or 'medium'; the current"
                      f"setFloat32MatmulPrecision call has no effect.", UserWarning,
                      stacklevel=2)
        return
    _precision = precision


def get_float32_matmul_precision() -> str:
    return _precision


class MatmulSettings:
    """``torch.backends.cuda.matmul``: ``allow_tf32`` is the matmul precision seen as a bool
    (True = "high"), as torch links them; ``allow_fp16_reduced_precision_reduction`` and
    its bf16 twin are kept as set."""

    allow_fp16_reduced_precision_reduction = True
    allow_bf16_reduced_precision_reduction = True

    @property
    def allow_tf32(self) -> bool:
        return _precision != "highest"

    @allow_tf32.setter
    def allow_tf32(self, value: bool) -> None:
        set_float32_matmul_precision("high" if value else "highest")


matmul = MatmulSettings()
