"""``python -m tinyattn train --nproc N``: the toy task trained data-parallel
(docs/distributed.md). The command starts N copies of itself with the launcher
(``python -m tinyattn.distributed.run``); in each, ``Ranks`` joins the process group, gives
the rank its own stream of training samples (``batch_size / N`` per step), wraps the model
in ``DistributedDataParallel``, averages the logged loss over the ranks, and makes every
rank stop at the same step when any of them is signalled. Rank 0 writes the run's folder;
the others write nothing that stays.
"""
from __future__ import annotations

import os
import shutil
import tempfile
from typing import Any, List

import numpy as np

from .. import distributed as dist
from ..nn.parallel import DistributedDataParallel
from ..tensor import tensor
from .config import ConfigError

__all__ = ["Ranks", "launch", "without_nproc"]


def without_nproc(argv: List[str]) -> List[str]:
    """The command line of one rank: the same, less ``--nproc N``."""
    out, skip = [], False
    for arg in argv:
        if skip:
            skip = False
        elif arg == "--nproc":
            skip = True
        elif not arg.startswith("--nproc="):
            out.append(arg)
    return out


def launch(nproc: int, argv: List[str]) -> int:
    """Start ``nproc`` ranks of ``python -m tinyattn train`` with the launcher."""
    from ..distributed.run import main as run_main    # noqa: PLC0415 - only with --nproc
    return run_main(["--nproc_per_node", str(nproc), "-m", "tinyattn", "train",
                     *without_nproc(argv)])


class Ranks:
    """This process's place in a data-parallel run (world size 1: a plain run)."""

    def __init__(self, from_environment: bool = True) -> None:
        """From torchrun's variables (the launcher sets them), or alone."""
        self.world = int(os.environ.get("WORLD_SIZE", "1")) if from_environment else 1
        self.rank = int(os.environ.get("RANK", "0")) if self.world > 1 else 0
        self.scratch = None

    def join(self, config: Any) -> None:
        """Join the group; a rank other than 0 trains quietly into a scratch folder."""
        if self.world == 1:
            return
        if config.extra.get("resume"):
            raise ConfigError("--resume with several processes is not supported: resume the "
                              "run on one process, or start a new one")
        if config.batch_size % self.world:
            raise ConfigError(f"--batch-size {config.batch_size} does not split over "
                              f"{self.world} processes: give a multiple of {self.world}")
        dist.init_process_group("gloo")
        if self.rank != 0:
            self.scratch = tempfile.mkdtemp(prefix=f"tinyattn-rank{self.rank}-")
            config.out, config.quiet, config.overwrite = self.scratch, True, True

    def data_rng(self, seed: int) -> np.random.Generator:
        return np.random.default_rng(seed if self.world == 1 else [seed, self.rank])

    def batch_size(self, batch_size: int) -> int:
        return batch_size // self.world

    def wrap(self, model: Any) -> Any:
        return model if self.world == 1 else DistributedDataParallel(model)

    def mean(self, value: float) -> float:
        """The loss over the whole batch: the mean of the ranks' (equal slices)."""
        if self.world == 1:
            return value
        t = tensor([value], dtype="float64")
        dist.all_reduce(t, op=dist.ReduceOp.AVG)
        return float(t.item())

    def any_stopped(self, stopped: bool) -> bool:
        """True on every rank if any rank was signalled: they all stop at this step."""
        if self.world == 1:
            return stopped
        t = tensor([1 if stopped else 0])
        dist.all_reduce(t, op=dist.ReduceOp.MAX)
        return bool(t.item())

    def leave(self) -> None:
        if self.world > 1 and dist.is_initialized():
            dist.destroy_process_group()
        if self.scratch is not None:
            shutil.rmtree(self.scratch, ignore_errors=True)
