"""``OneCycleLR`` and ``ReduceLROnPlateau``, with ``torch.optim.lr_scheduler``'s arithmetic
(docs/optim.md#schedules). Both are reached as ``tinyattn.optim.lr_scheduler.OneCycleLR``
and ``...ReduceLROnPlateau``, as in PyTorch; they live here to keep each file short.
"""
from __future__ import annotations

import math
import numbers
from typing import Any, Dict, List, Sequence, Union

from .lr_scheduler_base import LRScheduler, _check_int, _check_real
from .optimizer import Optimizer

__all__ = ["OneCycleLR", "ReduceLROnPlateau"]


def _per_group(name: str, optimizer: Optimizer, value: Union[float, Sequence[float]]
               ) -> List[float]:
    groups = len(optimizer.param_groups)
    if isinstance(value, (list, tuple)):
        if len(value) != groups:
            raise ValueError(f"{name} must have the same length as optimizer.param_groups: "
                             f"{name} has {len(value)} values, param_groups has {groups}")
        return [_check_real(name, v) for v in value]
    return [_check_real(name, value)] * groups


class OneCycleLR(LRScheduler):
    """The 1cycle policy (Smith and Topin, 2018): the learning rate rises from
    max_lr / div_factor to ``max_lr`` over the first ``pct_start`` of ``total_steps``, then
    anneals (cosine, or linear) to max_lr / (div_factor * final_div_factor); with
    ``cycle_momentum`` the momentum (SGD's ``momentum``, Adam's beta1) moves the opposite
    way between ``max_momentum`` and ``base_momentum``. ``three_phase=True`` comes back down
    to the start before the final annealing. Stepping past ``total_steps`` raises, as
    PyTorch's does. Not chainable: it sets the learning rate from its own phases.
    """

    def __init__(self, optimizer: Optimizer, max_lr: Union[float, Sequence[float]],
                 total_steps: Union[int, None] = None, epochs: Union[int, None] = None,
                 steps_per_epoch: Union[int, None] = None, pct_start: float = 0.3,
                 anneal_strategy: str = "cos", cycle_momentum: bool = True,
                 base_momentum: Union[float, Sequence[float]] = 0.85,
                 max_momentum: Union[float, Sequence[float]] = 0.95, div_factor: float = 25.0,
                 final_div_factor: float = 1e4, three_phase: bool = False,
                 last_epoch: int = -1):
        if not isinstance(optimizer, Optimizer):
            raise TypeError(f"a scheduler needs a tinyattn.optim optimizer, got "
                            f"{type(optimizer).__name__}")
        if total_steps is not None:
            self.total_steps = _check_int("total_steps", total_steps, low=1)
        elif epochs is not None and steps_per_epoch is not None:
            self.total_steps = (_check_int("epochs", epochs, low=1)
                                * _check_int("steps_per_epoch", steps_per_epoch, low=1))
        else:
            raise ValueError("OneCycleLR: define either total_steps OR (epochs AND "
                             "steps_per_epoch)")
        pct_start = _check_real("pct_start", pct_start, 0.0, 1.0)
        if anneal_strategy not in ("cos", "linear"):
            raise ValueError(f"anneal_strategy must be one of 'cos' or 'linear', got "
                             f"{anneal_strategy!r}")
        self._anneal_func_type = anneal_strategy
        rise_end = float(pct_start * self.total_steps) - 1
        if three_phase:
            self._schedule_phases = [
                _phase(rise_end, "initial_lr", "max_lr", "max_momentum", "base_momentum"),
                _phase(float(2 * pct_start * self.total_steps) - 2, "max_lr", "initial_lr",
                       "base_momentum", "max_momentum"),
                _phase(self.total_steps - 1, "initial_lr", "min_lr", "max_momentum",
                       "max_momentum")]
        else:
            self._schedule_phases = [
                _phase(rise_end, "initial_lr", "max_lr", "max_momentum", "base_momentum"),
                _phase(self.total_steps - 1, "max_lr", "min_lr", "base_momentum",
                       "max_momentum")]
        max_lrs = _per_group("max_lr", optimizer, max_lr)
        if last_epoch == -1:
            for lr, group in zip(max_lrs, optimizer.param_groups):
                group["initial_lr"] = lr / div_factor
                group["max_lr"] = lr
                group["min_lr"] = group["initial_lr"] / final_div_factor
        self.cycle_momentum = bool(cycle_momentum)
        if self.cycle_momentum:
            if "momentum" not in optimizer.defaults and "betas" not in optimizer.defaults:
                raise ValueError("OneCycleLR: the optimizer must have momentum or betas for "
                                 "cycle_momentum=True (pass cycle_momentum=False)")
            self.use_beta1 = "betas" in optimizer.defaults
            highs = _per_group("max_momentum", optimizer, max_momentum)
            lows = _per_group("base_momentum", optimizer, base_momentum)
            if last_epoch == -1:
                for high, low, group in zip(highs, lows, optimizer.param_groups):
                    self._set_momentum(group, high)
                    group["max_momentum"], group["base_momentum"] = high, low
        super().__init__(optimizer, last_epoch)

    def _set_momentum(self, group: Dict[str, Any], value: float) -> None:
        if self.use_beta1:
            group["betas"] = (value, *group["betas"][1:])
        else:
            group["momentum"] = value

    def _anneal(self, start: float, end: float, pct: float) -> float:
        if self._anneal_func_type == "cos":
            return end + (start - end) / 2.0 * (math.cos(math.pi * pct) + 1)
        return (end - start) * pct + start

    def get_lr(self) -> List[float]:
        step = self.last_epoch
        if step > self.total_steps:
            raise ValueError(f"OneCycleLR: tried to step {step} times; the specified number "
                             f"of total steps is {self.total_steps}")
        lrs = []
        for group in self.optimizer.param_groups:
            start_step = 0.0
            for i, phase in enumerate(self._schedule_phases):
                end_step = phase["end_step"]
                if step <= end_step or i == len(self._schedule_phases) - 1:
                    pct = (step - start_step) / (end_step - start_step)
                    lrs.append(self._anneal(group[phase["start_lr"]], group[phase["end_lr"]],
                                            pct))
                    if self.cycle_momentum:
                        self._set_momentum(group, self._anneal(
                            group[phase["start_momentum"]], group[phase["end_momentum"]], pct))
                    break
                start_step = phase["end_step"]
        return lrs


def _phase(end_step: float, start_lr: str, end_lr: str, start_momentum: str,
           end_momentum: str) -> Dict[str, Any]:
    return {"end_step": end_step, "start_lr": start_lr, "end_lr": end_lr,
            "start_momentum": start_momentum, "end_momentum": end_momentum}


class ReduceLROnPlateau(LRScheduler):
    """Multiply the learning rate by ``factor`` when a metric has not improved for more than
    ``patience`` calls of ``step(metric)`` (mode "min": lower is better, "max": higher).

    Improvement means beating the best value by ``threshold``: relatively
    (best * (1 - threshold) in min mode) or, with threshold_mode="abs", absolutely
    (best - threshold). After a reduction, ``cooldown`` calls are ignored. The learning rate
    never goes below ``min_lr``, and a reduction smaller than ``eps`` is skipped. A NaN
    metric never counts as an improvement.
    """

    def __init__(self, optimizer: Optimizer, mode: str = "min", factor: float = 0.1,
                 patience: int = 10, threshold: float = 1e-4, threshold_mode: str = "rel",
                 cooldown: int = 0, min_lr: Union[float, Sequence[float]] = 0,
                 eps: float = 1e-8):
        if not isinstance(optimizer, Optimizer):
            raise TypeError(f"a scheduler needs a tinyattn.optim optimizer, got "
                            f"{type(optimizer).__name__}")
        if isinstance(factor, numbers.Real) and factor >= 1.0:
            raise ValueError(f"ReduceLROnPlateau: factor should be < 1.0, got {factor}")
        if mode not in ("min", "max"):
            raise ValueError(f"ReduceLROnPlateau: mode must be 'min' or 'max', got {mode!r}")
        if threshold_mode not in ("rel", "abs"):
            raise ValueError(f"ReduceLROnPlateau: threshold_mode must be 'rel' or 'abs', got "
                             f"{threshold_mode!r}")
        self.optimizer = optimizer
        # the attributes in torch's order and with its values (state_dict() is them: a
        # checkpoint saved by either library loads in the other)
        self.factor = _check_real("factor", factor, low=0.0)
        _per_group("min_lr", optimizer, min_lr)                  # checked; kept as given
        many = isinstance(min_lr, (list, tuple))
        self.default_min_lr = None if many else min_lr
        self.min_lrs = list(min_lr) if many else [min_lr] * len(optimizer.param_groups)
        self.patience = _check_int("patience", patience, low=0)
        self.cooldown = _check_int("cooldown", cooldown, low=0)
        self.eps = _check_real("eps", eps, low=0.0)
        self.last_epoch = 0
        self._last_lr = self._current_lrs()
        self.mode_worse = math.inf if mode == "min" else -math.inf   # the first best
        self.mode = mode
        self.threshold = _check_real("threshold", threshold, low=0.0)
        self.threshold_mode = threshold_mode
        self.best = self.mode_worse
        self.cooldown_counter = 0
        self.num_bad_epochs = 0

    def step(self, metrics: Any = None) -> None:  # type: ignore[override]
        """Record one value of the monitored metric (a number or a one-element tensor)."""
        if metrics is None:
            raise TypeError("ReduceLROnPlateau.step(metrics) needs the monitored value, e.g. "
                            "scheduler.step(val_loss)")
        current = float(metrics)
        self.last_epoch += 1
        if self._is_better(current):
            self.best, self.num_bad_epochs = current, 0
        else:
            self.num_bad_epochs += 1
        if self.cooldown_counter > 0:
            self.cooldown_counter -= 1
            self.num_bad_epochs = 0                  # bad epochs in cooldown do not count
        if self.num_bad_epochs > self.patience:
            for group, min_lr in zip(self.optimizer.param_groups, self.min_lrs):
                old = float(group["lr"])
                new = max(old * self.factor, min_lr)
                if old - new > self.eps:
                    group["lr"] = new
            self.cooldown_counter, self.num_bad_epochs = self.cooldown, 0
        self._last_lr = self._current_lrs()

    def _is_better(self, value: float) -> bool:
        best, threshold = self.best, self.threshold
        if self.mode == "min":
            return value < (best * (1 - threshold) if self.threshold_mode == "rel"
                            else best - threshold)
        return value > (best * (1 + threshold) if self.threshold_mode == "rel"
                        else best + threshold)

    def get_lr(self) -> List[float]:
        return self._current_lrs()

    def state_dict(self) -> Dict[str, Any]:
        return {key: (list(value) if isinstance(value, list) else value)
                for key, value in self.__dict__.items() if key != "optimizer"}

    def load_state_dict(self, state_dict: Dict[str, Any]) -> None:
        self._check_keys(state_dict)
        self.__dict__.update(state_dict)
