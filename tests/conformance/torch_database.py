"""torch's test databases (op_db, module_db, optim_db), imported once per process and made
cheap to sample under pytest.

Two things in torch's testing internals cost milliseconds per sample inside pytest's deep
call stack, and dominated the run (4x its CPU time): ``extract_test_fn`` walks
``inspect.stack()`` (reading the source of every frame) to find a unittest test method,
which the harness never has; and ``set_rng_seed`` (called before every sample) goes through
``torch.manual_seed``, which records a formatted stack for each not-yet-initialised
accelerator. Here the first finds nothing at once, as it would outside unittest, and the
second seeds the same generators (torch's CPU generator, Python's, NumPy's) directly. The
samples are the same numbers either way."""
from __future__ import annotations

import functools
import random
from typing import Any

import numpy as np
import torch

__all__ = ["op_db", "module_db", "optim_db", "seed"]


def seed(value: int) -> None:
    """What torch's ``set_rng_seed`` does on a CPU-only machine, without the accelerators."""
    torch.default_generator.manual_seed(value)
    random.seed(value)
    np.random.seed(value)


def _patch() -> None:
    from torch.testing._internal import common_utils
    from torch.testing._internal.opinfo import core

    def no_test_fn() -> None:
        return None

    def set_rng_seed(value: Any = None) -> None:
        seed(common_utils.SEED if value is None else value)

    common_utils.extract_test_fn = no_test_fn
    core.extract_test_fn = no_test_fn
    common_utils.set_rng_seed = set_rng_seed


@functools.lru_cache(maxsize=None)
def op_db() -> tuple:
    from torch.testing._internal.common_methods_invocations import op_db as database
    _patch()
    return tuple(database)


@functools.lru_cache(maxsize=None)
def module_db() -> tuple:
    from torch.testing._internal.common_modules import module_db as database
    _patch()
    return tuple(database)


@functools.lru_cache(maxsize=None)
def optim_db() -> tuple:
    from torch.testing._internal.common_optimizers import optim_db as database
    _patch()
    return tuple(database)
