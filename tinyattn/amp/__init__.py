"""Automatic mixed precision, as ``torch.amp``: ``autocast`` and ``GradScaler``.

- ``autocast(device_type, dtype=None, enabled=True, cache_enabled=None)`` runs each op in the
  precision torch's per-op policy gives it (``policy``: matmuls in bfloat16/float16, the
  float32 ops in float32); the casts are made in the one dispatch hook (``dispatch``).
- ``GradScaler`` scales the loss so float16 gradients stay in range, skips steps whose
  gradients overflowed and adapts the scale.

Half dtypes (float16, bfloat16) compute in float32 and round once, op by op, through the same
hook (``dispatch``). docs/precision_memory_time.md explains all three with measured numbers.
"""
from __future__ import annotations

from . import dispatch, policy
from .autocast_mode import (autocast, cpu_autocast, cuda_autocast, get_autocast_dtype,
                            is_autocast_enabled)
from .grad_scaler import GradScaler

__all__ = ["autocast", "GradScaler", "is_autocast_enabled", "get_autocast_dtype",
           "cuda_autocast", "cpu_autocast", "policy", "dispatch"]
