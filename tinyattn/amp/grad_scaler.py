"""``GradScaler``: loss scaling, so that small float16 gradients do not flush to zero.

float16's smallest positive number is 6e-8 (5.96e-8 subnormal; 6.1e-5 normal): a gradient of
1e-8 becomes 0. Multiplying the loss by a large scale S multiplies every gradient by S (the
chain rule is linear), lifting them into range; ``unscale_`` divides by S before the step.
Too large an S overflows (inf/NaN gradients): that step is skipped and S is halved. After
``growth_interval`` steps in a row without overflow S is doubled, to find again the largest
scale that fits. docs/precision_memory_time.md#gradscaler shows it on a float16 model.

    scaler = tinyattn.amp.GradScaler()
    scaler.scale(loss).backward()      # gradients are S times too big
    scaler.step(optimizer)             # unscale_, then optimizer.step() unless inf/NaN
    scaler.update()                    # halve S after an overflow, double it after 2000 good

The rules, messages and state are torch's (``torch.amp.GradScaler``); the scale is kept as a
float32 number and updated in float32, as torch's scale tensor.
"""
from __future__ import annotations

import warnings
from typing import Any, Dict, Optional

import numpy as np

from .. import backend

__all__ = ["GradScaler", "OptState"]


def _as_scaled_dtype(value: Any) -> Any:
    """``value`` converted to the dtype of ``value * torch.tensor(scale)`` (scale: 0-d float32)."""
    dtype = np.dtype(value.dtype)
    if dtype.kind != "f" and dtype.name != "bfloat16":
        return value.to(np.float32)          # integer or bool: float32, the float category
    if value.ndim == 0 and dtype.itemsize < 4:
        return value.to(np.float32)          # 0-d with 0-d: the wider float wins
    return value


class OptState:
    READY, UNSCALED, STEPPED = 0, 1, 2


def _fresh_state() -> Dict[str, Any]:
    return {"stage": OptState.READY, "found_inf": None}


class GradScaler:
    """``GradScaler(device="cpu", init_scale=2.**16, growth_factor=2.0, backoff_factor=0.5,
    growth_interval=2000, enabled=True)``, as ``torch.amp.GradScaler``."""

    def __init__(self, device: str = "cpu", init_scale: float = 2.0 ** 16,
                 growth_factor: float = 2.0, backoff_factor: float = 0.5,
                 growth_interval: int = 2000, enabled: bool = True):
        self._device = str(device).split(":")[0]
        self._enabled = bool(enabled)
        if self._enabled and self._device == "cuda" and not backend.cuda_is_available():
            warnings.warn("torch.cuda.amp.GradScaler is enabled, but CUDA is not available.  "
                          "Disabling.", UserWarning, stacklevel=2)
            self._enabled = False
        if growth_factor <= 1.0:
            raise ValueError(f"The growth factor must be > 1.0, got {growth_factor}")
        if backoff_factor >= 1.0:
            raise ValueError(f"The backoff factor must be < 1.0, got {backoff_factor}")
        self._init_scale = float(init_scale)
        self._scale: Optional[np.float32] = None           # set at the first scale()
        self._growth_factor = float(growth_factor)
        self._backoff_factor = float(backoff_factor)
        self._growth_interval = int(growth_interval)
        self._init_growth_tracker = 0
        self._growth_tracker: Optional[int] = None
        self._per_optimizer_states: Dict[int, Dict[str, Any]] = {}

    # ------------------------------------------------------------------ the loop
    def scale(self, outputs: Any) -> Any:
        """``outputs`` times the scale (a tensor, or a list/tuple/dict of them). torch
        multiplies by its 0-d float32 scale tensor, so its promotion rule decides the dtype:
        a 0-d float16/bfloat16 loss (the usual one) or an integer one comes back float32
        (2.0 * 65536 would be inf in float16), a float16 tensor with dimensions stays
        float16, float64 stays float64."""
        if not self._enabled:
            return outputs
        if self._scale is None:
            self._scale = np.float32(self._init_scale)
            self._growth_tracker = self._init_growth_tracker
        factor = float(self._scale)

        def apply(value: Any) -> Any:
            if hasattr(value, "_data"):
                return _as_scaled_dtype(value) * factor
            if isinstance(value, (list, tuple)):
                return type(value)(apply(v) for v in value)
            if isinstance(value, dict):
                return {k: apply(v) for k, v in value.items()}
            raise ValueError("outputs must be a Tensor or an iterable of Tensors")
        return apply(outputs)

    def unscale_(self, optimizer: Any) -> None:
        """Divide the optimizer's gradients by the scale, in place, and note inf/NaN. Once
        per optimizer per step (before clipping, say); ``step`` calls it if you did not."""
        if not self._enabled:
            return
        self._check_scale("unscale_")
        state = self._state(optimizer)
        if state["stage"] is OptState.UNSCALED:
            raise RuntimeError("unscale_() has already been called on this optimizer since "
                               "the last update().")
        if state["stage"] is OptState.STEPPED:
            raise RuntimeError("unscale_() is being called after step().")
        inv_scale = np.float32(1.0 / np.float64(self._scale))   # as torch: double, then float
        found_inf = False
        for group in optimizer.param_groups:
            for p in group["params"]:
                if p.grad is None:
                    continue
                grad = p.grad._data
                if grad.dtype == np.float16:
                    raise ValueError("Attempting to unscale FP16 gradients.")
                xp = backend.get_array_module(grad)
                if not bool(xp.isfinite(grad).all()):
                    found_inf = True
                p.grad._data = (grad * inv_scale).astype(grad.dtype, copy=False)
        state["found_inf"] = found_inf
        state["stage"] = OptState.UNSCALED

    def step(self, optimizer: Any, *args: Any, **kwargs: Any) -> Any:
        """``optimizer.step()`` unless a gradient is inf or NaN (then nothing; returns None)."""
        if not self._enabled:
            return optimizer.step(*args, **kwargs)
        if "closure" in kwargs:
            raise RuntimeError("Closure use is not currently supported if GradScaler is "
                               "enabled.")
        self._check_scale("step")
        state = self._state(optimizer)
        if state["stage"] is OptState.STEPPED:
            raise RuntimeError("step() has already been called since the last update().")
        if state["stage"] is OptState.READY:
            self.unscale_(optimizer)
        result = None
        if not state["found_inf"]:
            result = optimizer.step(*args, **kwargs)
        state["stage"] = OptState.STEPPED
        return result

    def update(self, new_scale: Any = None) -> None:
        """After an overflow: scale *= backoff_factor. After ``growth_interval`` clean steps
        in a row: scale *= growth_factor. ``new_scale=`` sets it directly."""
        if not self._enabled:
            return
        self._check_scale("update")
        if new_scale is not None:
            if hasattr(new_scale, "_data"):
                if new_scale.numel() != 1 or new_scale.dtype != np.float32 or \
                        new_scale.requires_grad:
                    raise ValueError("new_scale should be a float or a 1-element "
                                     "torch.cuda.FloatTensor or torch.FloatTensor with "
                                     "requires_grad=False.")
                new_scale = new_scale.item()
            self._scale = np.float32(new_scale)
        else:
            found = [s["found_inf"] for s in self._per_optimizer_states.values()
                     if s["found_inf"] is not None]
            if not found:
                raise AssertionError("No inf checks were recorded prior to update().")
            if any(found):
                self._scale = np.float32(self._scale * np.float32(self._backoff_factor))
                self._growth_tracker = 0
            else:
                successful = self._growth_tracker + 1
                if successful == self._growth_interval:
                    grown = np.float32(self._scale * np.float32(self._growth_factor))
                    if np.isfinite(grown):
                        self._scale = grown
                    self._growth_tracker = 0
                else:
                    self._growth_tracker = successful
        self._per_optimizer_states = {}

    # ------------------------------------------------------------------ state
    def _state(self, optimizer: Any) -> Dict[str, Any]:
        return self._per_optimizer_states.setdefault(id(optimizer), _fresh_state())

    def _check_scale(self, where: str) -> None:
        if self._scale is None:
            raise AssertionError(f"Attempted {where} but _scale is None.  This may indicate "
                                 f"your script did not use scaler.scale(loss or outputs) "
                                 f"earlier in the iteration.")

    def get_scale(self) -> float:
        if not self._enabled:
            return 1.0
        return self._init_scale if self._scale is None else float(self._scale)

    def get_growth_factor(self) -> float:
        return self._growth_factor

    def set_growth_factor(self, new_factor: float) -> None:
        self._growth_factor = float(new_factor)

    def get_backoff_factor(self) -> float:
        return self._backoff_factor

    def set_backoff_factor(self, new_factor: float) -> None:
        self._backoff_factor = float(new_factor)

    def get_growth_interval(self) -> int:
        return self._growth_interval

    def set_growth_interval(self, new_interval: int) -> None:
        self._growth_interval = int(new_interval)

    def _get_growth_tracker(self) -> int:
        if not self._enabled:
            return 0
        return self._init_growth_tracker if self._growth_tracker is None \
            else self._growth_tracker

    def is_enabled(self) -> bool:
        return self._enabled

    def state_dict(self) -> Dict[str, Any]:
        if not self._enabled:
            return {}
        return {"scale": self.get_scale(), "growth_factor": self._growth_factor,
                "backoff_factor": self._backoff_factor,
                "growth_interval": self._growth_interval,
                "_growth_tracker": self._get_growth_tracker()}

    def load_state_dict(self, state_dict: Dict[str, Any]) -> None:
        if not self._enabled:
            return
        if len(state_dict) == 0:
            raise RuntimeError("The source state dict is empty, possibly because it was saved "
                               "from a disabled instance of GradScaler.")
        self._init_scale = float(state_dict["scale"])
        if self._scale is not None:
            self._scale = np.float32(state_dict["scale"])
        self._growth_factor = float(state_dict["growth_factor"])
        self._backoff_factor = float(state_dict["backoff_factor"])
        self._growth_interval = int(state_dict["growth_interval"])
        self._init_growth_tracker = int(state_dict["_growth_tracker"])
        if self._growth_tracker is not None:
            self._growth_tracker = int(state_dict["_growth_tracker"])
