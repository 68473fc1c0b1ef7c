"""The one hook in ``Function.apply``: autocast's casts, and float32 compute of half dtypes.

``autograd.function.dispatch_hook`` is None until a program uses autocast or a
float16/bfloat16 tensor, so a float32 program pays one global check per op. When
installed, for each op it:

1. inside ``autocast``, casts the op's floating inputs as torch's policy says (``policy``);
2. when the (possibly cast) floating inputs are all one half dtype, runs the op in float32
   and rounds its floating output back: x (half) -> float32 -> op -> half. PyTorch's CPU
   kernels do the same (compute in float32, round once; reductions and matmuls accumulate in
   float32). The casts are ordinary differentiable ``Convert`` ops, so the backward also runs
   in float32 and rounds each input's gradient once, and a float32 parameter cast for a
   bfloat16 matmul gets its gradient in float32.

Ops that only rearrange memory (views: reshape, permute, indexing) run in the half dtype as
they are: they compute nothing. While the hook runs an op, the ops it applies (the casts and
the op itself) pass through untouched (``_local.busy``).
"""
from __future__ import annotations

import threading
from typing import Any, Dict, Optional, Sequence, Tuple

import numpy as np

from .. import autograd, precision
from . import policy

__all__ = ["install", "uninstall_if_idle", "autocast_state", "clear_cast_cache", "cast_args",
           "outside_autocast",
           "composite"]

_FLOAT32 = np.dtype(np.float32)
_FLOAT64 = np.dtype(np.float64)


class _Local(threading.local):
    busy = False
    op_name: Optional[str] = None       # set by ``composite``: the torch op being run


class _AutocastState(threading.local):
    """Per thread, as torch's: the autocast dtype of each device where it is on."""

    def __init__(self) -> None:
        self.dtypes: Dict[str, Any] = {}          # device type -> dtype, while enabled
        self.cache_enabled: Dict[str, bool] = {}
        self.cache: Dict[Tuple[int, Any, bool], Tuple[Any, Any, int]] = {}  # w, cast, version
        self.depth = 0


_local = _Local()
autocast_state = _AutocastState()
_kinds: Dict[Tuple[str, type], str] = {}         # (device, Function class) -> cast kind
_half_seen = False


def _hook(cls: type, inputs: Sequence[Any], options: Dict[str, Any]) -> Optional[Any]:
    if _local.busy or not inputs or cls._pytorch_style:   # type: ignore[attr-defined]
        return None
    work: Optional[Sequence[Any]] = None
    if autocast_state.dtypes:
        device = inputs[0].device.split(":")[0]
        dtype = autocast_state.dtypes.get(device)
        if dtype is not None:
            kind = _kind(device, cls) if _local.op_name is None else \
                policy.kind_of_name(device, _local.op_name)
            work = _autocast_inputs(kind, inputs, device, dtype)
    low = _one_half_dtype(work if work is not None else inputs)
    if low is None and work is None:
        return None
    _local.busy = True
    try:
        if low is None or cls.returns_view or cls.computes_in_half \
                or cls.__name__ == "Convert":  # type: ignore
            return cls.apply(*(work if work is not None else inputs), **options)  # type: ignore
        wide = [t.to(_FLOAT32) if t.dtype == low else t
                for t in (work if work is not None else inputs)]
        out = cls.apply(*wide, **options)                   # type: ignore[attr-defined]
        if out.dtype != _FLOAT32:
            return out
        with np.errstate(over="ignore"):          # beyond the half range is inf, as torch
            result = out.to(low)
        if result._ctx is not None and out._ctx is not None:
            result._ctx.torch_name = out._ctx         # named as the op, not the rounding
        return result
    finally:
        _local.busy = False


def _one_half_dtype(tensors: Sequence[Any]) -> Optional[Any]:
    """The half dtype when every floating input has it (None otherwise: a float32 op, or a
    mix, which Function.apply promotes as torch does). Runs for every op once a half
    dtype was used, so it reads 2-byte floats (kind "f", or "V" for bfloat16) off the
    itemsize first."""
    found = None
    for t in tensors:
        dtype = t._data.dtype
        if dtype.itemsize != 2 or dtype.kind not in "fV":
            if dtype.kind in "biu":
                continue
            return None
        if found is not None and dtype != found:
            return None
        found = dtype
    return found


def _kind(device: str, cls: type) -> str:
    key = (device, cls)
    kind = _kinds.get(key)
    if kind is None:
        kind = _kinds[key] = policy.cast_kind(device, cls.__name__)
    return kind


def _autocast_inputs(kind: str, inputs: Sequence[Any], device: str, dtype: Any
                     ) -> Optional[Tuple[Any, ...]]:
    """The inputs cast as torch's autocast policy says, or None when none changes."""
    if kind == policy.BANNED:
        raise RuntimeError(policy.BANNED_MESSAGE)
    floats = {t.dtype for t in inputs if precision.is_floating(t.dtype)}
    if not floats:
        return None
    if kind == policy.LOWER:
        return _cast(inputs, dtype, lambda d: d != _FLOAT64 and d != dtype, device)
    if kind == policy.FP32:
        return _cast(inputs, _FLOAT32, precision.is_low_precision, None)
    if len(floats) < 2 or _FLOAT64 in floats:
        return None         # nothing to reconcile; float64 mixes promote in Function.apply
    if kind == policy.FOLLOW_INPUT and precision.is_floating(inputs[0].dtype):
        first = inputs[0].dtype
        return _cast(inputs, first, lambda d: d != first, None)
    widest = _FLOAT32 if _FLOAT32 in floats or len(floats) > 1 else next(iter(floats))
    return _cast(inputs, widest, lambda d: d != widest, None)


def _cast(inputs: Sequence[Any], dtype: Any, eligible: Any, cache_device: Optional[str]
          ) -> Optional[Tuple[Any, ...]]:
    out, changed = [], False
    outer, _local.op_name = _local.op_name, None   # a cast is a cast, not the composite's op:
    try:                                           # inside composite("reflection_pad") it
        for t in inputs:                           # would cast its own input again, forever
            if precision.is_floating(t.dtype) and eligible(t.dtype):
                t, changed = _cached_cast(t, dtype, cache_device), True
            out.append(t)
    finally:
        _local.op_name = outer
    return tuple(out) if changed else None


def _cached_cast(t: Any, dtype: Any, cache_device: Optional[str]) -> Any:
    """torch caches the lower-precision copy of a leaf that requires grad (a parameter) for
    the rest of the outermost autocast region, so a weight used twice is cast once."""
    if cache_device is None or not autocast_state.cache_enabled.get(cache_device) or not (
            t.requires_grad and t.grad_fn is None):
        return t.to(dtype)
    key = (id(t), dtype, autograd.is_grad_enabled())    # a no_grad cast has no graph
    hit = autocast_state.cache.get(key)
    if hit is not None and hit[0] is t and hit[2] == t._version:
        return hit[1]
    cast = t.to(dtype)
    autocast_state.cache[key] = (t, cast, t._version)      # keeps t alive: ids stay unique
    return cast


def cast_args(op_name: str, *tensors: Any) -> Tuple[Any, ...]:
    """For a function composed of several ops that torch runs as one (``addmm``, a
    ``layer_norm`` that handles float16 itself): its tensor arguments (None passes) cast as
    torch's autocast casts ``op_name``. Returns them unchanged when autocast is off."""
    if not autocast_state.dtypes:
        return tensors
    present = [t for t in tensors if t is not None]
    device = present[0].device.split(":")[0] if present else ""
    dtype = autocast_state.dtypes.get(device)
    if dtype is None:
        return tensors
    cast = _autocast_inputs(policy.kind_of_name(device, op_name), present, device, dtype)
    if cast is None:
        return tensors
    remaining = iter(cast)
    return tuple(None if t is None else next(remaining) for t in tensors)


class composite:  # noqa: N801 - used as a context manager, like torch's guards
    """``with composite("dot"):`` the ops inside follow the policy of torch's op ``dot``
    rather than their own (tinyattn's dot is a matmul, which autocast would lower; torch's
    dot is not in the CPU lists and stays float32)."""

    __slots__ = ("name", "previous")

    def __init__(self, name: str):
        self.name = name

    def __enter__(self) -> None:
        self.previous, _local.op_name = _local.op_name, self.name

    def __exit__(self, *exc: Any) -> None:
        _local.op_name = self.previous


class outside_autocast:  # noqa: N801 - a context manager, like torch's guards
    """``with outside_autocast():`` the ops inside are not cast (an op that torch runs as one
    kernel computing in float32 internally, composed here of ops: half addmm's float32 sum),
    whatever the device; autocast is back on after the block."""

    __slots__ = ("saved",)

    def __enter__(self) -> None:
        self.saved, autocast_state.dtypes = autocast_state.dtypes, {}

    def __exit__(self, *exc: Any) -> None:
        autocast_state.dtypes = self.saved


def clear_cast_cache() -> None:
    autocast_state.cache.clear()


def _on_half_dtype() -> None:
    global _half_seen
    _half_seen = True
    install()


def install() -> None:
    autograd.function.dispatch_hook = _hook


def uninstall_if_idle() -> None:
    """Remove the hook when no thread's autocast is on here and no half dtype was used."""
    if not _half_seen and not autocast_state.dtypes:
        autograd.function.dispatch_hook = None


precision.on_low_precision(_on_half_dtype)
