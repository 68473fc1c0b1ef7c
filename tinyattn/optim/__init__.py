"""``tinyattn.optim``: optimizers, learning-rate schedules and gradient clipping.

    opt = optim.AdamW(model.parameters(), lr=3e-4, weight_decay=0.1)
    sched = optim.WarmupCosineLR(opt, warmup_steps=100, total_steps=2000)
    for step in range(2000):
        loss = ...; loss.backward()
        optim.clip_grad_norm_(model.parameters(), max_norm=1.0)
        opt.step(); opt.zero_grad(); sched.step()

The update rules, the reason AdamW decouples weight decay, and the schedules as formulas are
in docs/optim.md. Names and arithmetic follow ``torch.optim``.
"""
from __future__ import annotations

from . import lr_scheduler
from .adam import Adam, AdamW
from .adam_variants import Adamax, NAdam, RAdam
from .clip import clip_grad_norm_, clip_grad_value_
from .lr_scheduler import (ChainedScheduler, ConstantLR, CosineAnnealingLR,
                           CosineAnnealingWarmRestarts, CyclicLR, ExponentialLR, LambdaLR,
                           LinearLR, LRScheduler, MultiStepLR, NoamLR, OneCycleLR,
                           PolynomialLR, ReduceLROnPlateau, SequentialLR, StepLR,
                           WarmupCosineLR)
from .optimizer import Optimizer
from .rmsprop import Adagrad, RMSprop
from .sgd import SGD
from .adafactor import Adafactor
from .classic import ASGD, Adadelta, Rprop
from .lbfgs import LBFGS
from .muon import Muon

__all__ = ["Optimizer", "SGD", "Adam", "AdamW", "NAdam", "RAdam", "Adamax", "RMSprop",
           "Adagrad", "clip_grad_norm_",
           "clip_grad_value_", "lr_scheduler",
           "LRScheduler", "LambdaLR", "WarmupCosineLR", "NoamLR", "StepLR", "MultiStepLR",
           "ExponentialLR", "CosineAnnealingLR", "LinearLR", "OneCycleLR", "ReduceLROnPlateau",
           "ConstantLR", "PolynomialLR", "SequentialLR", "ChainedScheduler",
           "CosineAnnealingWarmRestarts", "CyclicLR", "Adadelta", "Rprop", "ASGD", "Adafactor",
           "LBFGS", "Muon"]
