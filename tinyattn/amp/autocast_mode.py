"""``autocast``: run each op in the precision torch's autocast policy gives it.

    with tinyattn.autocast("cpu"):               # bfloat16 on the CPU by default
        logits = model(x)                        # linear/matmul/attention in bfloat16
        loss = F.cross_entropy(logits, y)        # float32 (a float32 op in the policy)
    loss.backward()                              # outside: gradients of float32 params
                                                 # arrive in float32

A context manager and a decorator, nestable (an inner ``autocast(..., enabled=False)``
switches it off for a block), per thread and per device type, as ``torch.autocast``. It
affects only tensors on its device type: ``autocast("cuda")`` leaves CPU tensors alone (torch
warns and disables it on a machine without CUDA; so does tinyattn). The per-op policy is in
``tinyattn.amp.policy``; the casts happen in ``tinyattn.amp.dispatch``.
"""
from __future__ import annotations

import functools
import threading
import warnings
from typing import Any, List, Optional, Tuple

import numpy as np

from .. import backend, precision
from . import dispatch

__all__ = ["autocast", "is_autocast_enabled", "get_autocast_dtype", "cuda_autocast",
           "cpu_autocast"]

_DEFAULT_DTYPES = {"cpu": "bfloat16", "cuda": "float16"}   # names: bfloat16 imports ml-dtypes
_active_lock = threading.Lock()
_active_regions = 0                   # enabled regions open in any thread (for the hook)


def _dtype_of(dtype: Any) -> np.dtype:
    from ..tensor import normalize_dtype  # noqa: PLC0415 - tensor sits beside autograd
    return normalize_dtype(dtype)


class autocast:  # noqa: N801 - PyTorch's name
    """``autocast(device_type, dtype=None, enabled=True, cache_enabled=None)``, as torch's."""

    def __init__(self, device_type: str, dtype: Any = None, enabled: bool = True,
                 cache_enabled: Optional[bool] = None):
        if not isinstance(device_type, str) or device_type.split(":")[0] not in (
                "cpu", "cuda"):
            raise RuntimeError(f"User specified an unsupported autocast device_type "
                               f"'{device_type}': tinyattn's autocast knows 'cpu' and 'cuda'")
        self.device = device_type.split(":")[0]
        self.fast_dtype = _dtype_of(_DEFAULT_DTYPES[self.device] if dtype is None else dtype)
        self._enabled = bool(enabled)
        self._cache_enabled = True if cache_enabled is None else bool(cache_enabled)
        if self._enabled and not precision.is_low_precision(self.fast_dtype):
            warnings.warn(f"In {self.device.upper()} autocast, but the target dtype is not "
                          f"supported ({self.fast_dtype}; autocast runs ops in float16 or "
                          f"bfloat16). Disabling autocast.", UserWarning, stacklevel=2)
            self._enabled = False
        if self._enabled and self.device == "cuda" and not backend.cuda_is_available():
            warnings.warn("CUDA is not available or torch_xla is imported. Disabling "
                          "autocast.", UserWarning, stacklevel=2)     # torch 2.13's text
            self._enabled = False
        self._saved: List[Tuple[Any, Any]] = []

    def __enter__(self) -> "autocast":
        global _active_regions
        state = dispatch.autocast_state
        self._saved.append((state.dtypes.get(self.device),
                            state.cache_enabled.get(self.device)))
        state.depth += 1
        if self._enabled:
            state.dtypes[self.device] = self.fast_dtype
            state.cache_enabled[self.device] = self._cache_enabled
            with _active_lock:
                _active_regions += 1
            dispatch.install()
        else:
            state.dtypes.pop(self.device, None)
        return self

    def __exit__(self, *exc: Any) -> None:
        global _active_regions
        state = dispatch.autocast_state
        previous_dtype, previous_cache = self._saved.pop()
        if previous_dtype is None:
            state.dtypes.pop(self.device, None)
        else:
            state.dtypes[self.device] = previous_dtype
            state.cache_enabled[self.device] = previous_cache
        state.depth -= 1
        if state.depth == 0:
            dispatch.clear_cast_cache()          # as torch: the cache lives one region
        if self._enabled:
            with _active_lock:
                _active_regions -= 1
                if _active_regions == 0:
                    dispatch.uninstall_if_idle()

    def __call__(self, fn: Any) -> Any:
        """Decorate a function (or a module's forward) to run inside this autocast."""
        settings = (self.device, self.fast_dtype, self._enabled, self._cache_enabled)

        @functools.wraps(fn)
        def run_in_autocast(*args: Any, **kwargs: Any) -> Any:
            with autocast(settings[0], settings[1], settings[2], settings[3]):
                return fn(*args, **kwargs)
        return run_in_autocast


def is_autocast_enabled(device_type: Optional[str] = None) -> bool:
    """Whether autocast is on in this thread for ``device_type`` (torch's default: cuda)."""
    return (device_type or "cuda").split(":")[0] in dispatch.autocast_state.dtypes


def get_autocast_dtype(device_type: str) -> str:
    """The dtype autocast uses on ``device_type`` (its default when not inside one)."""
    device = device_type.split(":")[0]
    return str(dispatch.autocast_state.dtypes.get(device, _DEFAULT_DTYPES.get(device)))


def cuda_autocast(enabled: bool = True, dtype: Any = "float16",
                  cache_enabled: bool = True) -> autocast:
    """The old spelling ``torch.cuda.amp.autocast(...)``: ``autocast("cuda", ...)``, with
    torch 2.13's FutureWarning (deprecated there)."""
    warnings.warn("`torch.cuda.amp.autocast(args...)` is deprecated. Please use "
                  "`torch.amp.autocast('cuda', args...)` instead.", FutureWarning, stacklevel=2)
    return autocast("cuda", dtype=dtype, enabled=enabled, cache_enabled=cache_enabled)


def cpu_autocast(enabled: bool = True, dtype: Any = "bfloat16",
                 cache_enabled: bool = True) -> autocast:
    """The old spelling ``torch.cpu.amp.autocast(...)``: ``autocast("cpu", ...)``, with
    torch 2.13's FutureWarning (deprecated there)."""
    warnings.warn("`torch.cpu.amp.autocast(args...)` is deprecated. Please use "
                  "`torch.amp.autocast('cpu', args...)` instead.", FutureWarning, stacklevel=2)
    return autocast("cpu", dtype=dtype, enabled=enabled, cache_enabled=cache_enabled)
