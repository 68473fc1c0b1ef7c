"""Learning-rate schedules, with ``torch.optim.lr_scheduler``'s conventions.

A scheduler rewrites ``group["lr"]`` of its optimizer's parameter groups. Call
``scheduler.step()`` once after each ``optimizer.step()``. ``last_epoch`` counts those calls;
construction itself makes the first call, so a fresh scheduler has ``last_epoch == 0`` and has
already set the learning rate of the first update. Every schedule here is a closed form of
``last_epoch`` and ``base_lrs`` (the learning rates the optimizer had when the scheduler was
made, saved in ``group["initial_lr"]``), so restoring those two restores the schedule exactly.

Formulas and plots: docs/optim.md#schedules.
"""
from __future__ import annotations

import math
import numbers
from typing import Any, Callable, Dict, List, Sequence, Union

from .optimizer import Optimizer

__all__ = ["LRScheduler", "LambdaLR", "WarmupCosineLR", "NoamLR"]


def _check_int(name: str, value: Any, low: int) -> int:
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
        self._last_lr: List[float] = []
        self.step()

    def get_lr(self) -> List[float]:
        """The learning rate of each group at ``self.last_epoch`` (subclasses)."""
        raise NotImplementedError(f"{type(self).__name__} must implement get_lr()")

    def step(self) -> None:
        """Advance one step and write the new learning rates into the optimizer."""
        self.last_epoch += 1
        for group, lr in zip(self.optimizer.param_groups, self.get_lr()):
            group["lr"] = lr
        self._last_lr = [group["lr"] for group in self.optimizer.param_groups]

    def get_last_lr(self) -> List[float]:
        """The learning rates the last ``step()`` (or construction) set, one per group."""
        return list(self._last_lr)

    def state_dict(self) -> Dict[str, Any]:
        """Every attribute except the optimizer (and any callables): plain Python values."""
        return {key: (list(value) if isinstance(value, list) else value)
                for key, value in self.__dict__.items()
                if key != "optimizer" and not key.startswith("lr_lambda")}

    def load_state_dict(self, state_dict: Dict[str, Any]) -> None:
        """Restore a saved schedule and write its current learning rates into the optimizer,
        so it does not matter whether the optimizer's state dict is loaded before or after."""
        expected = set(self.state_dict())
        if not isinstance(state_dict, dict) or set(state_dict) != expected:
            given = sorted(state_dict) if isinstance(state_dict, dict) else type(state_dict)
            raise ValueError(f"{type(self).__name__}.load_state_dict expects the keys "
                             f"{sorted(expected)}, got {given}: was it saved by a different "
                             f"scheduler?")
        groups = self.optimizer.param_groups
        if len(state_dict["base_lrs"]) != len(groups):
            raise ValueError(f"the state dict has {len(state_dict['base_lrs'])} base learning "
                             f"rate(s) but the optimizer has {len(groups)} parameter group(s)")
        self.__dict__.update({key: (list(value) if isinstance(value, list) else value)
                              for key, value in state_dict.items()})
        for group, base_lr, lr in zip(groups, self.base_lrs, self._last_lr):
            group["initial_lr"], group["lr"] = base_lr, lr

    def __repr__(self) -> str:
        return f"{type(self).__name__}(last_epoch={self.last_epoch}, lr={self._last_lr})"


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
