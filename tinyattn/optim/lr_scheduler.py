"""Learning-rate schedules, with ``torch.optim.lr_scheduler``'s conventions.

A scheduler rewrites ``group["lr"]`` of its optimizer's parameter groups. Call
``scheduler.step()`` once after each ``optimizer.step()``. ``last_epoch`` counts those calls;
construction itself makes the first call, so a fresh scheduler has ``last_epoch == 0`` and has
already set the learning rate of the first update. ``base_lrs`` are the learning rates the
optimizer had when the scheduler was made (saved in ``group["initial_lr"]``).

Two kinds, as in PyTorch. ``LambdaLR``, ``WarmupCosineLR`` and ``NoamLR`` are closed forms of
``last_epoch`` and ``base_lrs`` (as are ``OneCycleLR``, ``CyclicLR`` and
``CosineAnnealingWarmRestarts``, in sibling files). ``StepLR``, ``MultiStepLR``,
``ExponentialLR``, ``CosineAnnealingLR``, ``LinearLR``, ``ConstantLR`` and ``PolynomialLR`` are
*chainable*, with PyTorch's very arithmetic: each step multiplies the current ``group["lr"]``
by a factor, so two of them on one optimizer compose (``ChainedScheduler``) and a learning rate
changed by hand is followed; their closed forms (``_get_closed_form_lr``) give the same numbers
when nothing else touches the learning rate (``SequentialLR`` restarts a scheduler from it).
``state_dict`` holds the current learning rates too, so either kind resumes exactly.

Formulas and plots: docs/optim.md#schedules.
"""
from __future__ import annotations

import types

import bisect
import math
import numbers
from collections import Counter
from typing import Any, Callable, Dict, Iterable, List, Sequence, Union

from .lr_scheduler_base import LRScheduler, _check_int, _check_real
from .lr_scheduler_onecycle_plateau import OneCycleLR, ReduceLROnPlateau
from .lr_scheduler_chain import (ChainedScheduler, ConstantLR, PolynomialLR,
                                 SequentialLR)
from .lr_scheduler_cyclic import CosineAnnealingWarmRestarts, CyclicLR
from .optimizer import Optimizer

__all__ = ["LRScheduler", "LambdaLR", "WarmupCosineLR", "NoamLR", "StepLR", "MultiStepLR",
           "ExponentialLR", "CosineAnnealingLR", "LinearLR", "OneCycleLR", "ReduceLROnPlateau",
           "ConstantLR", "PolynomialLR", "SequentialLR", "ChainedScheduler",
           "CosineAnnealingWarmRestarts", "CyclicLR"]


class _LRScheduler(LRScheduler):
    """torch's older name of the base class, kept there as a plain subclass: tutorials
    subclass it (the UvA course's ``CosineWarmupScheduler(optim.lr_scheduler._LRScheduler)``
    overrides ``get_lr``)."""


class LambdaLR(LRScheduler):
    """``lr = base_lr * lr_lambda(last_epoch)``; one function, or one per parameter group.

    The functions are code, not state: ``state_dict`` leaves them out, so make the scheduler
    with the same functions before calling ``load_state_dict``.
    """

    def __init__(self, optimizer: Optimizer,
                 lr_lambda: Union[Callable[[int], float], Sequence[Callable[[int], float]]],
                 last_epoch: int = -1):
        groups = optimizer.param_groups if isinstance(optimizer, Optimizer) else []
        if callable(lr_lambda):
            self.lr_lambdas = [lr_lambda] * len(groups)
        else:
            lr_lambdas = list(lr_lambda)
            if len(lr_lambdas) != len(groups) or not all(map(callable, lr_lambdas)):
                raise ValueError(f"lr_lambda must be one function or a list of "
                                 f"{len(groups)} functions (one per parameter group), got "
                                 f"{lr_lambda!r}")
            self.lr_lambdas = lr_lambdas
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> List[float]:
        return [base_lr * fn(self.last_epoch) for fn, base_lr in zip(self.lr_lambdas,
                                                                     self.base_lrs)]

    def state_dict(self) -> Dict[str, Any]:
        """As torch's: ``lr_lambdas`` last, None for a function, a copy of a callable
        object's attributes otherwise (the functions themselves are code, not state)."""
        state = super().state_dict()
        state["lr_lambdas"] = [None if isinstance(fn, types.FunctionType)
                               else dict(fn.__dict__) for fn in self.lr_lambdas]
        return state

    def load_state_dict(self, state_dict: Dict[str, Any]) -> None:
        state_dict = dict(state_dict)
        saved = state_dict.pop("lr_lambdas", None)   # older tinyattn state dicts lack it
        LRScheduler.load_state_dict(self, state_dict)
        for fn, attributes in zip(self.lr_lambdas, saved or []):
            if attributes is not None:
                fn.__dict__.update(attributes)

    def _check_keys(self, state_dict: Any) -> None:
        expected = set(LRScheduler.state_dict(self))     # lr_lambdas was popped already
        super()._check_keys(state_dict, expected, named=expected | {"lr_lambdas"})


class WarmupCosineLR(LRScheduler):
    """Linear warmup, then cosine decay from each group's base lr down to ``eta_min``.

    With t = ``last_epoch``, W = ``warmup_steps``, T = ``total_steps``::

        t <  W:       lr = base_lr * (t + 1) / W
        W <= t <= T:  lr = eta_min + (base_lr - eta_min) * (1 + cos(pi * (t - W) / (T - W))) / 2
        t >  T:       lr = eta_min

    The first update already uses base_lr / W (not 0), the warmup reaches base_lr at t = W - 1,
    and, as in ``torch.optim.lr_scheduler.CosineAnnealingLR(T_max=T - W)``, the decay reaches
    eta_min at t = T.
    """

    def __init__(self, optimizer: Optimizer, warmup_steps: int, total_steps: int,
                 eta_min: float = 0.0, last_epoch: int = -1):
        self.warmup_steps = _check_int("warmup_steps", warmup_steps, low=0)
        self.total_steps = _check_int("total_steps", total_steps, low=1)
        if self.total_steps <= self.warmup_steps:
            raise ValueError(f"total_steps ({total_steps}) must be larger than warmup_steps "
                             f"({warmup_steps}), to leave steps for the cosine decay")
        if isinstance(eta_min, bool) or not isinstance(eta_min, numbers.Real) or eta_min < 0:
            raise ValueError(f"eta_min (the final learning rate) must be a number >= 0, got "
                             f"{eta_min!r}")
        self.eta_min = float(eta_min)
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> List[float]:
        t, warmup, total = self.last_epoch, self.warmup_steps, self.total_steps
        if t < warmup:
            return [base_lr * (t + 1) / warmup for base_lr in self.base_lrs]
        progress = min(t - warmup, total - warmup) / (total - warmup)
        cosine = (1.0 + math.cos(math.pi * progress)) / 2.0
        return [self.eta_min + (base_lr - self.eta_min) * cosine for base_lr in self.base_lrs]


class NoamLR(LRScheduler):
    """The inverse-square-root schedule of "Attention Is All You Need" (section 5.3).

    With s = ``last_epoch + 1`` (the paper's step_num, counted from 1)::

        lr = base_lr * d_model^-0.5 * min(s^-0.5, s * warmup_steps^-1.5)

    It rises linearly for ``warmup_steps`` steps, peaks at
    ``base_lr * (d_model * warmup_steps)^-0.5``, then decays as 1 / sqrt(s). With the
    optimizer's lr set to 1.0 this is the paper's schedule exactly (the paper used
    ``Adam(lr=1.0, betas=(0.9, 0.98), eps=1e-9)``, d_model = 512, warmup_steps = 4000);
    the optimizer's lr acts as the "factor" of the Annotated Transformer.
    """

    def __init__(self, optimizer: Optimizer, d_model: int, warmup_steps: int = 4000,
                 last_epoch: int = -1):
        self.d_model = _check_int("d_model", d_model, low=1)
        self.warmup_steps = _check_int("warmup_steps", warmup_steps, low=1)
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> List[float]:
        s = self.last_epoch + 1
        factor = self.d_model ** -0.5 * min(s ** -0.5, s * self.warmup_steps ** -1.5)
        return [base_lr * factor for base_lr in self.base_lrs]


# ---------------------------------------------------------------- PyTorch's chainable ones
class StepLR(LRScheduler):
    """Multiply the learning rate by ``gamma`` every ``step_size`` steps:
    ``lr = base_lr * gamma ** (last_epoch // step_size)``."""

    def __init__(self, optimizer: Optimizer, step_size: int, gamma: float = 0.1,
                 last_epoch: int = -1):
        self.step_size = _check_int("step_size", step_size, low=1)
        self.gamma = _check_real("gamma", gamma, low=0.0)
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> List[float]:
        if self.last_epoch == 0 or self.last_epoch % self.step_size != 0:
            return self._current_lrs()
        return [lr * self.gamma for lr in self._current_lrs()]

    def _get_closed_form_lr(self) -> List[float]:
        return [base_lr * self.gamma ** (self.last_epoch // self.step_size)
                for base_lr in self.base_lrs]


class MultiStepLR(LRScheduler):
    """Multiply the learning rate by ``gamma`` at each milestone step:
    ``lr = base_lr * gamma ** (number of milestones <= last_epoch)`` (a milestone listed
    twice counts twice, as PyTorch)."""

    def __init__(self, optimizer: Optimizer, milestones: Iterable[int], gamma: float = 0.1,
                 last_epoch: int = -1):
        stones = [_check_int("each milestone", m, low=0) for m in milestones]
        if stones != sorted(stones):
            raise ValueError(f"milestones must be increasing, got {stones}")
        self.milestones = Counter(stones)
        self.gamma = _check_real("gamma", gamma, low=0.0)
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> List[float]:
        if self.last_epoch not in self.milestones:
            return self._current_lrs()
        factor = self.gamma ** self.milestones[self.last_epoch]
        return [lr * factor for lr in self._current_lrs()]

    def _get_closed_form_lr(self) -> List[float]:
        stones = sorted(self.milestones.elements())
        return [base_lr * self.gamma ** bisect.bisect_right(stones, self.last_epoch)
                for base_lr in self.base_lrs]

    def state_dict(self) -> Dict[str, Any]:
        state = super().state_dict()
        state["milestones"] = dict(self.milestones)      # a plain dict for checkpoints
        return state

    def load_state_dict(self, state_dict: Dict[str, Any]) -> None:
        super().load_state_dict(state_dict)
        self.milestones = Counter({int(k): int(v) for k, v in dict(self.milestones).items()})


class ExponentialLR(LRScheduler):
    """Multiply the learning rate by ``gamma`` every step: ``lr = base_lr * gamma **
    last_epoch``."""

    def __init__(self, optimizer: Optimizer, gamma: float, last_epoch: int = -1):
        self.gamma = _check_real("gamma", gamma, low=0.0)
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> List[float]:
        if self._is_initial:
            return self._current_lrs()
        return [lr * self.gamma for lr in self._current_lrs()]

    def _get_closed_form_lr(self) -> List[float]:
        return [base_lr * self.gamma ** self.last_epoch for base_lr in self.base_lrs]


class CosineAnnealingLR(LRScheduler):
    """Cosine decay from base_lr to ``eta_min`` over ``T_max`` steps (SGDR without restarts):

        lr_t = eta_min + (base_lr - eta_min) * (1 + cos(pi * t / T_max)) / 2

    computed as PyTorch does, recursively from the current learning rate:
    lr_t = eta_min + (lr_{t-1} - eta_min) * (1 + cos(pi t / T)) / (1 + cos(pi (t-1) / T)).
    It reaches eta_min at t = T_max and, like PyTorch's, does not stop there: the cosine goes
    on, back up to base_lr at t = 2 T_max (for one decay, train T_max steps; for warmup +
    decay see WarmupCosineLR). The ratio is 0/0 at t = T_max + 1 + 2k T_max, where the step
    is taken from the closed form instead (PyTorch's special case).
    """

    def __init__(self, optimizer: Optimizer, T_max: int, eta_min: float = 0.0,  # noqa: N803
                 last_epoch: int = -1):
        self.T_max = _check_int("T_max", T_max, low=1)
        self.eta_min = _check_real("eta_min", eta_min, low=0.0)
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> List[float]:
        t, period, low = self.last_epoch, self.T_max, self.eta_min
        if self._is_initial:
            return self._current_lrs()
        if (t - 1 - period) % (2 * period) == 0:
            return [lr + (base_lr - low) * (1 - math.cos(math.pi / period)) / 2
                    for lr, base_lr in zip(self._current_lrs(), self.base_lrs)]
        return [(1 + math.cos(math.pi * t / period)) / (1 + math.cos(math.pi * (t - 1) / period))
                * (lr - low) + low for lr in self._current_lrs()]

    def _get_closed_form_lr(self) -> List[float]:
        return [self.eta_min + (base_lr - self.eta_min)
                * (1 + math.cos(math.pi * self.last_epoch / self.T_max)) / 2
                for base_lr in self.base_lrs]


class LinearLR(LRScheduler):
    """Scale the learning rate by a factor that moves linearly from ``start_factor`` to
    ``end_factor`` over ``total_iters`` steps, then stays (a linear warmup with the defaults
    start_factor=1/3, end_factor=1):
    ``lr = base_lr * (start + (end - start) * min(last_epoch, total_iters) / total_iters)``."""

    def __init__(self, optimizer: Optimizer, start_factor: float = 1.0 / 3,
                 end_factor: float = 1.0, total_iters: int = 5, last_epoch: int = -1):
        if isinstance(start_factor, numbers.Real) and not 0 < start_factor <= 1:
            raise ValueError(f"start_factor must be in (0, 1], got {start_factor}")
        self.start_factor = _check_real("start_factor", start_factor, 0.0, 1.0)
        self.end_factor = _check_real("end_factor", end_factor, 0.0, 1.0)
        self.total_iters = _check_int("total_iters", total_iters, low=1)
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> List[float]:
        if self.last_epoch == 0:
            return [lr * self.start_factor for lr in self._current_lrs()]
        if self._is_initial or self.last_epoch > self.total_iters:
            return self._current_lrs()
        change = self.end_factor - self.start_factor
        ratio = 1.0 + change / (self.total_iters * self.start_factor
                                + (self.last_epoch - 1) * change)
        return [lr * ratio for lr in self._current_lrs()]

    def _get_closed_form_lr(self) -> List[float]:
        progress = min(self.total_iters, self.last_epoch) / self.total_iters
        factor = self.start_factor + (self.end_factor - self.start_factor) * progress
        return [base_lr * factor for base_lr in self.base_lrs]


# PyTorch's path for these is lr_scheduler.OneCycleLR, ...; they build on LRScheduler above.

# torch's schedulers print as Python's default object repr, with their module path
# (``<torch.optim.lr_scheduler.StepLR object at 0x...>``); every scheduler here gives this
# module as its own, whichever file defines it (this module exports them all, so pickling
# finds them by that path too)
for _name in __all__:
    globals()[_name].__module__ = __name__
del _name
