"""``ConstantLR``, ``PolynomialLR`` and the two schedulers that combine others,
``SequentialLR`` and ``ChainedScheduler``, with ``torch.optim.lr_scheduler``'s arithmetic
(docs/optim.md#schedules). Reached as ``tinyattn.optim.lr_scheduler.<Name>``, as in PyTorch;
they live here to keep each file short.
"""
from __future__ import annotations

import bisect
from typing import Any, Dict, List, Optional, Sequence

from .lr_scheduler_base import LRScheduler, _check_int, _check_real
from .optimizer import Optimizer

__all__ = ["ConstantLR", "PolynomialLR", "SequentialLR", "ChainedScheduler"]


class ConstantLR(LRScheduler):
    """Multiply the learning rate by ``factor`` for the first ``total_iters`` steps, then give
    the full learning rate back: ``lr = base_lr * (factor if last_epoch < total_iters else 1)``.

    Chainable, as PyTorch's: step 0 multiplies the current lr by ``factor``, step
    ``total_iters`` divides it by ``factor``. So factor must be > 0 (PyTorch accepts 0 and then
    divides by zero at ``total_iters``) and total_iters >= 1 (with 0, PyTorch's recursion keeps
    the factor forever while its closed form says it never applied).
    """

    def __init__(self, optimizer: Optimizer, factor: float = 1.0 / 3, total_iters: int = 5,
                 last_epoch: int = -1):
        self.factor = _check_real("factor", factor, 0.0, 1.0)
        if self.factor == 0.0:
            raise ValueError("ConstantLR: factor must be in (0, 1]; with 0 the learning rate "
                             "could never be restored after total_iters (1 / 0)")
        self.total_iters = _check_int("total_iters", total_iters, low=1)
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> List[float]:
        if self.last_epoch == 0:
            return [lr * self.factor for lr in self._current_lrs()]
        if self.last_epoch != self.total_iters:
            return self._current_lrs()
        return [lr * (1.0 / self.factor) for lr in self._current_lrs()]

    def _get_closed_form_lr(self) -> List[float]:
        return [base_lr * (self.factor + (self.last_epoch >= self.total_iters)
                           * (1 - self.factor)) for base_lr in self.base_lrs]


class PolynomialLR(LRScheduler):
    """Decay the learning rate to 0 over ``total_iters`` steps along a polynomial of degree
    ``power`` (power=1: a straight line), then keep it at 0:
    ``lr = base_lr * (1 - min(last_epoch, total_iters) / total_iters) ** power``.

    Chainable, as PyTorch's: each step multiplies the current lr by
    ``((1 - t / T) / (1 - (t - 1) / T)) ** power``.
    """

    def __init__(self, optimizer: Optimizer, total_iters: int = 5, power: float = 1.0,
                 last_epoch: int = -1):
        self.total_iters = _check_int("total_iters", total_iters, low=1)
        self.power = _check_real("power", power, low=0.0)
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> List[float]:
        if self._is_initial or self.last_epoch > self.total_iters:
            return self._current_lrs()
        decay_factor = ((1.0 - self.last_epoch / self.total_iters)
                        / (1.0 - (self.last_epoch - 1) / self.total_iters)) ** self.power
        return [lr * decay_factor for lr in self._current_lrs()]

    def _get_closed_form_lr(self) -> List[float]:
        return [base_lr * (1.0 - min(self.total_iters, self.last_epoch) / self.total_iters)
                ** self.power for base_lr in self.base_lrs]


def _check_schedulers(owner: str, schedulers: Sequence[Any],
                      optimizer: Optional[Optimizer]) -> List[LRScheduler]:
    """The schedulers as a list, all tinyattn schedulers of one optimizer, none a plateau."""
    from .lr_scheduler_onecycle_plateau import ReduceLROnPlateau
    schedulers = list(schedulers)
    if not schedulers:
        raise ValueError(f"{owner} expects at least one scheduler, but got none")
    for index, scheduler in enumerate(schedulers):
        if not isinstance(scheduler, LRScheduler):
            raise TypeError(f"{owner}: schedulers[{index}] is a {type(scheduler).__name__}, "
                            f"not a tinyattn.optim.lr_scheduler scheduler")
    optimizer = optimizer if optimizer is not None else schedulers[0].optimizer
    for index, scheduler in enumerate(schedulers):
        if isinstance(scheduler, ReduceLROnPlateau):
            raise ValueError(f"{owner} does not support ReduceLROnPlateau (schedulers[{index}])"
                             f": its step() needs the metric; step it on its own")
        if scheduler.optimizer is not optimizer:
            raise ValueError(f"{owner} expects all schedulers to belong to the same optimizer, "
                             f"but schedulers[{index}] ({type(scheduler).__name__}) has "
                             f"another one")
    return schedulers


class _Composite(LRScheduler):
    """State dicts of a scheduler made of schedulers: its own attributes plus
    ``"_schedulers"``, one state dict per inner scheduler (PyTorch's keys)."""

    _schedulers: List[LRScheduler]

    def state_dict(self) -> Dict[str, Any]:
        state = {key: (list(value) if isinstance(value, list) else value)
                 for key, value in self.__dict__.items()
                 if key not in ("optimizer", "_schedulers")}
        state["_schedulers"] = [s.state_dict() for s in self._schedulers]
        return state

    def load_state_dict(self, state_dict: Dict[str, Any]) -> None:
        self._check_keys(state_dict)
        inner = state_dict["_schedulers"]
        if len(inner) != len(self._schedulers):
            raise ValueError(f"the state dict holds {len(inner)} scheduler(s) but this "
                             f"{type(self).__name__} has {len(self._schedulers)}")
        for scheduler, saved in zip(self._schedulers, inner):
            scheduler.load_state_dict(saved)
        self.__dict__.update({key: (list(value) if isinstance(value, list) else value)
                              for key, value in state_dict.items() if key != "_schedulers"})
        for group, lr in zip(self.optimizer.param_groups, self._last_lr):
            group["lr"] = lr          # the active scheduler's rate, whichever loaded last



class SequentialLR(_Composite):
    """Run ``schedulers[0]`` until ``milestones[0]``, then ``schedulers[1]`` until
    ``milestones[1]``, ... (one more scheduler than milestones), as PyTorch's.

    Making the inner schedulers already stepped each of them once; SequentialLR undoes that
    (each one's ``last_epoch`` goes back by one, every learning rate back to
    ``initial_lr``) and makes the first scheduler's initial step. At a milestone the next
    scheduler restarts at its step 0, from its closed form if it has one. Milestones must be
    increasing (PyTorch does not check, and unsorted ones silently skip schedulers).
    """

    def __init__(self, optimizer: Optimizer, schedulers: Sequence[LRScheduler],
                 milestones: Sequence[int], last_epoch: int = -1):
        if not isinstance(optimizer, Optimizer):
            raise TypeError(f"a scheduler needs a tinyattn.optim optimizer, got "
                            f"{type(optimizer).__name__}")
        schedulers = _check_schedulers("SequentialLR", schedulers, optimizer)
        stones = [_check_int("each milestone", m, low=0) for m in milestones]
        if len(stones) != len(schedulers) - 1:
            raise ValueError(f"SequentialLR expects one milestone fewer than schedulers, got "
                             f"{len(schedulers)} scheduler(s) and {len(stones)} milestone(s)")
        if any(a >= b for a, b in zip(stones, stones[1:])):
            raise ValueError(f"SequentialLR: milestones must be strictly increasing, got "
                             f"{stones}")
        self._schedulers = schedulers
        self._milestones = stones
        self.last_epoch = _check_int("last_epoch", last_epoch, low=-1) + 1
        self.optimizer = optimizer
        for group in optimizer.param_groups:
            group["lr"] = group["initial_lr"]
        self._undo_initial_steps(self)
        first = self._schedulers[bisect.bisect_right(self._milestones, 0)]
        first._initial_step()
        self._last_lr = first.get_last_lr()

    def _undo_initial_steps(self, scheduler: LRScheduler) -> None:
        """PyTorch's ``recursive_undo``: each inner scheduler's ``last_epoch`` minus one."""
        if hasattr(scheduler, "_schedulers"):
            for inner in scheduler._schedulers:
                self._undo_initial_steps(inner)
        elif hasattr(scheduler, "last_epoch"):
            scheduler.last_epoch -= 1

    def step(self) -> None:
        """Advance one step: the scheduler whose stretch this is steps (or restarts)."""
        self.last_epoch += 1
        index = bisect.bisect_right(self._milestones, self.last_epoch)
        scheduler = self._schedulers[index]
        if index > 0 and self._milestones[index - 1] == self.last_epoch:
            scheduler._update_lr(0)
        else:
            scheduler.step()
        self._last_lr = scheduler.get_last_lr()


class ChainedScheduler(_Composite):
    """Step every scheduler in ``schedulers`` on each ``step()``: with chainable schedulers
    their factors multiply (``ConstantLR`` and ``ExponentialLR`` together give a constant
    warm-up followed by decay). ``get_last_lr()`` is the optimizer's lr after all of them."""

    def __init__(self, schedulers: Sequence[LRScheduler],
                 optimizer: Optional[Optimizer] = None):
        schedulers = _check_schedulers("ChainedScheduler", schedulers, optimizer)
        self._schedulers = schedulers
        self.optimizer = schedulers[0].optimizer if optimizer is None else optimizer
        self._last_lr = self._current_lrs()

    def step(self) -> None:
        """Step each scheduler in order."""
        for scheduler in self._schedulers:
            scheduler.step()
        self._last_lr = self._current_lrs()
