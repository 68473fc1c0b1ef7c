"""``CosineAnnealingWarmRestarts`` and ``CyclicLR``: schedules that go back up, with
``torch.optim.lr_scheduler``'s arithmetic (docs/optim.md#schedules). Reached as
``tinyattn.optim.lr_scheduler.<Name>``, as in PyTorch; they live here to keep files short.
"""
from __future__ import annotations

import math
import numbers
import types
from typing import Any, Callable, Dict, List, Optional, Sequence, Union

from .lr_scheduler_base import LRScheduler, _check_int, _check_real
from .lr_scheduler_onecycle_plateau import _per_group
from .optimizer import Optimizer

__all__ = ["CosineAnnealingWarmRestarts", "CyclicLR"]


class CosineAnnealingWarmRestarts(LRScheduler):
    """SGDR (Loshchilov and Hutter, 2017): cosine decay from base_lr to ``eta_min`` over
    ``T_i`` steps, then a restart at base_lr; the first period is ``T_0`` steps and each next
    one ``T_mult`` times longer. With T_cur the steps since the last restart::

        lr = eta_min + (base_lr - eta_min) * (1 + cos(pi * T_cur / T_i)) / 2

    ``step()`` advances one step; ``step(epoch)`` jumps to ``epoch``, which may be fractional
    (``scheduler.step(epoch + i / iters)`` inside the batch loop), as PyTorch's, except
    that the restart count is exact at every restart (see ``_restarts_before``). The other
    schedulers' ``step()`` takes no epoch (PyTorch's form for them is deprecated).
    """

    def __init__(self, optimizer: Optimizer, T_0: int, T_mult: int = 1,  # noqa: N803
                 eta_min: float = 0.0, last_epoch: int = -1):
        self.T_0 = _check_int("T_0", T_0, low=1)
        self.T_i = self.T_0
        self.T_mult = _check_int("T_mult", T_mult, low=1)
        self.eta_min = _check_real("eta_min", eta_min)
        self.T_cur: Union[int, float] = _check_int("last_epoch", last_epoch, low=-1)
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> List[float]:
        return [self.eta_min + (base_lr - self.eta_min)
                * (1 + math.cos(math.pi * self.T_cur / self.T_i)) / 2
                for base_lr in self.base_lrs]

    def step(self, epoch: Optional[float] = None) -> None:  # type: ignore[override]
        """One step further, or (with ``epoch``, >= 0, may be fractional) to that epoch."""
        if epoch is None and self.last_epoch < 0:
            epoch = 0
        if epoch is None:
            epoch = self.last_epoch + 1
            self.T_cur = self.T_cur + 1
            if self.T_cur >= self.T_i:
                self.T_cur = self.T_cur % self.T_i
                self.T_i = self.T_i * self.T_mult
        else:
            if isinstance(epoch, bool) or not isinstance(epoch, numbers.Real) \
                    or not math.isfinite(epoch) or epoch < 0:
                raise ValueError(f"CosineAnnealingWarmRestarts.step(epoch): epoch must be a "
                                 f"finite number >= 0, got {epoch!r}")
            if epoch >= self.T_0:
                if self.T_mult == 1:
                    self.T_cur = epoch % self.T_0
                else:
                    n = self._restarts_before(epoch)
                    self.T_cur = epoch - self.T_0 * (self.T_mult ** n - 1) / (self.T_mult - 1)
                    self.T_i = self.T_0 * self.T_mult ** n
            else:
                self.T_i = self.T_0
                self.T_cur = epoch
        self.last_epoch = math.floor(epoch)
        for group, lr in zip(self.optimizer.param_groups, self.get_lr()):
            group["lr"] = lr
        self._last_lr = self._current_lrs()

    def _restarts_before(self, epoch: float) -> int:
        """The number n of restarts up to ``epoch``: the largest n with
        T_0 (T_mult^n - 1) / (T_mult - 1) <= epoch. PyTorch takes
        n = int(log_{T_mult}(epoch / T_0 (T_mult - 1) + 1)), which rounds down at some exact
        restarts (T_0=1, T_mult=3, epoch=121 gives 4, not 5, and eta_min instead of
        base_lr); the integer checks below correct that."""
        t0, mult = self.T_0, self.T_mult
        n = int(math.log((epoch / t0 * (mult - 1) + 1), mult))
        while t0 * (mult ** (n + 1) - 1) // (mult - 1) <= epoch:
            n += 1
        while n > 0 and t0 * (mult ** n - 1) // (mult - 1) > epoch:
            n -= 1
        return n


class CyclicLR(LRScheduler):
    """Cyclical learning rates (Smith, 2017): the lr climbs linearly from ``base_lr`` to
    ``max_lr`` over ``step_size_up`` steps, comes back down over ``step_size_down`` (default:
    the same), and repeats. With c = floor(1 + t / (up + down)) the cycle number and
    x = 1 + t / (up + down) - c the position in it::

        height = x / r  if x <= r  else  (x - 1) / (r - 1)      (r = up / (up + down))
        lr     = base_lr + (max_lr - base_lr) * height * scale

    scale is 1 ("triangular"), 1 / 2^(c-1) ("triangular2": each cycle half as high) or
    gamma^t ("exp_range"), or ``scale_fn(c)`` / ``scale_fn(t)`` (``scale_mode`` "cycle" /
    "iterations"). With ``cycle_momentum`` the momentum (SGD's ``momentum``, Adam's beta1)
    moves the opposite way, from ``max_momentum`` to ``base_momentum``; an optimizer with
    neither (Adagrad) raises, as PyTorch's. ``base_lr`` replaces the optimizer's lr.
    """

    def __init__(self, optimizer: Optimizer, base_lr: Union[float, Sequence[float]],
                 max_lr: Union[float, Sequence[float]], step_size_up: float = 2000,
                 step_size_down: Optional[float] = None, mode: str = "triangular",
                 gamma: float = 1.0, scale_fn: Optional[Callable[[float], float]] = None,
                 scale_mode: str = "cycle", cycle_momentum: bool = True,
                 base_momentum: Union[float, Sequence[float]] = 0.8,
                 max_momentum: Union[float, Sequence[float]] = 0.9, last_epoch: int = -1):
        if not isinstance(optimizer, Optimizer):
            raise TypeError(f"a scheduler needs a tinyattn.optim optimizer, got "
                            f"{type(optimizer).__name__}")
        self.optimizer = optimizer
        base_lrs = _per_group("base_lr", optimizer, base_lr)
        if last_epoch == -1:
            for lr, group in zip(base_lrs, optimizer.param_groups):
                group["lr"] = lr
        self.max_lrs = _per_group("max_lr", optimizer, max_lr)
        up = _check_real("step_size_up", step_size_up)
        down = up if step_size_down is None else _check_real("step_size_down", step_size_down)
        if not up > 0 or down < 0:
            raise ValueError(f"CyclicLR needs step_size_up > 0 and step_size_down >= 0, got "
                             f"{step_size_up} and {step_size_down}")
        self.total_size = up + down
        self.step_ratio = up / self.total_size
        if scale_fn is None and mode not in ("triangular", "triangular2", "exp_range"):
            raise ValueError(f"CyclicLR: mode must be 'triangular', 'triangular2' or "
                             f"'exp_range' (or pass scale_fn), got {mode!r}")
        if scale_fn is not None and not callable(scale_fn):
            raise TypeError(f"CyclicLR: scale_fn must be a function, got {scale_fn!r}")
        if scale_mode not in ("cycle", "iterations"):
            raise ValueError(f"CyclicLR: scale_mode must be 'cycle' or 'iterations', got "
                             f"{scale_mode!r}")
        self.mode = mode
        self.gamma = _check_real("gamma", gamma)
        self._scale_fn_custom = scale_fn
        self.scale_mode = scale_mode
        self._init_scale_mode()
        self.cycle_momentum = bool(cycle_momentum)
        if self.cycle_momentum:
            if "momentum" not in optimizer.defaults and "betas" not in optimizer.defaults:
                raise ValueError(f"CyclicLR: {type(optimizer).__name__} has no momentum or "
                                 f"betas to cycle; pass cycle_momentum=False")
            self.use_beta1 = "betas" in optimizer.defaults
            self.base_momentums = _per_group("base_momentum", optimizer, base_momentum)
            self.max_momentums = _per_group("max_momentum", optimizer, max_momentum)
            if last_epoch == -1:
                for high, low, group in zip(self.max_momentums, self.base_momentums,
                                            optimizer.param_groups):
                    self._set_momentum(group, high)
                    group["max_momentum"], group["base_momentum"] = high, low
        super().__init__(optimizer, last_epoch)
        self.base_lrs = base_lrs

    def _init_scale_mode(self) -> None:
        if self._scale_fn_custom is None:   # the built-in modes fix their scale_mode
            self.scale_mode = "iterations" if self.mode == "exp_range" else "cycle"

    def scale_fn(self, x: float) -> float:
        """The amplitude's scale at cycle (or iteration) ``x``."""
        if self._scale_fn_custom is not None:
            return self._scale_fn_custom(x)
        if self.mode == "triangular":
            return 1.0
        if self.mode == "triangular2":
            return 1 / (2.0 ** (x - 1))
        return self.gamma ** x

    def _set_momentum(self, group: Dict[str, Any], value: float) -> None:
        if self.use_beta1:
            group["betas"] = (value, *group["betas"][1:])
        else:
            group["momentum"] = value

    def get_lr(self) -> List[float]:
        cycle = math.floor(1 + self.last_epoch / self.total_size)
        x = 1.0 + self.last_epoch / self.total_size - cycle
        if x <= self.step_ratio:
            scale_factor = x / self.step_ratio
        else:
            scale_factor = (x - 1) / (self.step_ratio - 1)
        scale = self.scale_fn(cycle if self.scale_mode == "cycle" else self.last_epoch)
        lrs = [base_lr + (max_lr - base_lr) * scale_factor * scale
               for base_lr, max_lr in zip(self.base_lrs, self.max_lrs)]
        if self.cycle_momentum:
            for group, low, high in zip(self.optimizer.param_groups, self.base_momentums,
                                        self.max_momentums):
                self._set_momentum(group, high - (high - low) * scale_factor * scale)
        return lrs

    def state_dict(self) -> Dict[str, Any]:
        """As the base class, with ``_scale_fn_custom`` None for a function (code is not
        state: make the scheduler with the same scale_fn before loading) and the attribute
        dict of a callable object, as PyTorch's."""
        state = {key: (list(value) if isinstance(value, list) else value)
                 for key, value in self.__dict__.items()
                 if key not in ("optimizer", "_scale_fn_custom")}
        fn = self._scale_fn_custom
        state["_scale_fn_custom"] = (None if fn is None or isinstance(fn, types.FunctionType)
                                     else dict(fn.__dict__))
        return state

    def load_state_dict(self, state_dict: Dict[str, Any]) -> None:
        fn, fn_state = self._scale_fn_custom, None
        if isinstance(state_dict, dict) and "_scale_fn_custom" in state_dict:
            fn_state = state_dict["_scale_fn_custom"]
            state_dict = dict(state_dict, _scale_fn_custom=fn)    # code stays as made
        super().load_state_dict(state_dict)
        self._scale_fn_custom = fn
        if fn is not None and fn_state is not None:
            fn.__dict__.update(fn_state)
        self._init_scale_mode()
