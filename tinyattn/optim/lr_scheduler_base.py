"""``LRScheduler``, the base of every learning-rate schedule, and the argument checks the
schedules share (docs/optim.md#schedules). Every schedule module builds on this one;
``lr_scheduler.py`` gathers them under torch's path, ``tinyattn.optim.lr_scheduler``.
"""
from __future__ import annotations

import math
import numbers
import warnings
from typing import Any, Dict, List, Optional

from .optimizer import Optimizer

__all__ = ["LRScheduler"]


def _check_real(name: str, value: Any, low: float = -math.inf, high: float = math.inf) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a real number, got {value!r}")
    if not low <= value <= high:
        raise ValueError(f"{name} must lie in [{low}, {high}], got {value}")
    return float(value)


def _check_int(name: str, value: Any, low: int) -> int:
    """A whole number; a float that is one (PyTorch's tutorials write ``StepLR(opt, 1.0,
    gamma=0.95)``, which torch accepts) counts as that int, a fractional one is refused."""
    if isinstance(value, numbers.Real) and not isinstance(value, (bool, numbers.Integral)) \
            and math.isfinite(value) and float(value).is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an integer, got {value!r}")
    if value < low:
        raise ValueError(f"{name} must be >= {low}, got {value}")
    return int(value)


class LRScheduler:
    """Base class: holds ``base_lrs`` and ``last_epoch``; subclasses define ``get_lr()``.

    Args:
        optimizer: the optimizer whose learning rates this scheduler sets.
        last_epoch: -1 for a new schedule (the default). Like torch, a value >= 0 says the
            optimizer's groups already hold ``"initial_lr"``; prefer ``load_state_dict``.
    """

    def __init__(self, optimizer: Optimizer, last_epoch: int = -1):
        if not isinstance(optimizer, Optimizer):
            raise TypeError(f"a scheduler needs a tinyattn.optim optimizer, got "
                            f"{type(optimizer).__name__}")
        self.optimizer = optimizer
        last_epoch = _check_int("last_epoch", last_epoch, low=-1)
        for number, group in enumerate(optimizer.param_groups):
            if last_epoch == -1:
                group.setdefault("initial_lr", group["lr"])
            elif "initial_lr" not in group:
                raise KeyError(f"param_groups[{number}] has no 'initial_lr', which a scheduler "
                               f"made with last_epoch={last_epoch} needs: load the optimizer's "
                               f"state dict first, or make the scheduler with last_epoch=-1 "
                               f"and call load_state_dict")
        self.base_lrs: List[float] = [group["initial_lr"] for group in optimizer.param_groups]
        self.last_epoch = last_epoch
        # torch's bookkeeping, in torch's order, so the state dict has torch's keys: the
        # number of step() calls (the constructor's included), whether the constructor's
        # step is running, and torch's flag for get_lr() called outside step()
        self._step_count = 0
        self._is_initial = False
        self._get_lr_called_within_step = False
        self._last_lr: List[float] = []
        self._initial_step()

    def _initial_step(self) -> None:
        """The constructor's step (PyTorch's ``_initial_step``): ``get_lr`` sees
        ``_is_initial``, so chainable schedules keep the optimizer's learning rate."""
        self._step_count = 0
        self._is_initial = True
        try:
            self.step()
        finally:
            self._is_initial = False

    def _update_lr(self, epoch: int) -> None:
        """Jump to ``last_epoch = epoch`` and set its learning rates from the closed form
        where there is one (PyTorch's ``_update_lr``; SequentialLR's milestones use it)."""
        self.last_epoch = epoch
        closed_form = getattr(self, "_get_closed_form_lr", None)
        lrs = closed_form() if closed_form is not None else self.get_lr()
        for group, lr in zip(self.optimizer.param_groups, lrs):
            group["lr"] = lr
        self._last_lr = [group["lr"] for group in self.optimizer.param_groups]

    def get_lr(self) -> List[float]:
        """The learning rate of each group at ``self.last_epoch`` (subclasses)."""
        raise NotImplementedError(f"{type(self).__name__} must implement get_lr()")

    def _current_lrs(self) -> List[float]:
        return [group["lr"] for group in self.optimizer.param_groups]

    def step(self, epoch: Optional[int] = None) -> None:
        """Advance one step and write the new learning rates into the optimizer.

        ``step(epoch)`` is PyTorch's deprecated form, kept with its meaning and its warning:
        jump to ``last_epoch = epoch``, from the closed form where the schedule has one.
        """
        self._step_count += 1
        if epoch is not None:
            warnings.warn("passing an epoch to scheduler.step() is deprecated (as in "
                          "PyTorch): call step() once per optimizer step", UserWarning,
                          stacklevel=2)
            self._update_lr(_check_int("epoch", epoch, low=0))
            return
        self.last_epoch += 1
        for group, lr in zip(self.optimizer.param_groups, self.get_lr()):
            group["lr"] = lr
        self._last_lr = [group["lr"] for group in self.optimizer.param_groups]

    def get_last_lr(self) -> List[float]:
        """The learning rates the last ``step()`` (or construction) set, one per group."""
        return list(self._last_lr)

    def state_dict(self) -> Dict[str, Any]:
        """Every attribute except the optimizer (and any callables): plain Python values,
        with torch's keys (``_step_count``, ``_is_initial``, ``_get_lr_called_within_step``)."""
        return {key: (list(value) if isinstance(value, list) else value)
                for key, value in self.__dict__.items()
                if key != "optimizer" and not key.startswith("lr_lambda")}

    def _check_keys(self, state_dict: Any, expected: Any = None, named: Any = None) -> None:
        """Refuse a state dict whose keys are not this scheduler's (``expected``, by default
        its own state dict's), naming both sets (``named``, by default the expected ones)."""
        expected = set(self.state_dict()) if expected is None else set(expected)
        # torch's bookkeeping keys may be absent (a state dict saved by older tinyattn)
        optional = {"_step_count", "_is_initial", "_get_lr_called_within_step",
                    "default_min_lr", "mode_worse"}     # ReduceLROnPlateau's, from older ones
        if not isinstance(state_dict, dict) or not \
                expected - optional <= set(state_dict) <= expected:
            given = sorted(state_dict) if isinstance(state_dict, dict) else type(state_dict)
            raise ValueError(f"{type(self).__name__}.load_state_dict expects the keys "
                             f"{sorted(expected if named is None else named)}, got {given}: "
                             f"was it saved by a different scheduler?")

    def load_state_dict(self, state_dict: Dict[str, Any]) -> None:
        """Restore a saved schedule and write its current learning rates into the optimizer,
        so it does not matter whether the optimizer's state dict is loaded before or after."""
        self._check_keys(state_dict)
        groups = self.optimizer.param_groups
        if len(state_dict["base_lrs"]) != len(groups):
            raise ValueError(f"the state dict has {len(state_dict['base_lrs'])} base learning "
                             f"rate(s) but the optimizer has {len(groups)} parameter group(s)")
        self.__dict__.update({key: (list(value) if isinstance(value, list) else value)
                              for key, value in state_dict.items()})
        for group, base_lr, lr in zip(groups, self.base_lrs, self._last_lr):
            group["initial_lr"], group["lr"] = base_lr, lr

