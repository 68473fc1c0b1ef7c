"""``DistributedSampler``: each rank's share of a dataset, as
``torch.utils.data.distributed.DistributedSampler`` (docs/distributed.md).

    sampler = DistributedSampler(dataset, shuffle=True, seed=0)   # rank, world from dist
    loader = DataLoader(dataset, batch_size=8, sampler=sampler)
    for epoch in range(epochs):
        sampler.set_epoch(epoch)                                  # a new order each epoch

The indices (shuffled with ``seed + epoch``, the same on every rank) are padded by repeating
the first ones until they divide evenly (or cut with ``drop_last``), and rank r takes every
``num_replicas``-th index starting at r, so every rank gets ``num_samples`` of them and
together they cover the dataset. The shuffled order is NumPy's (tinyattn.Generator), not
torch's bits; everything else (lengths, padding, interleaving) is torch's.
"""
from __future__ import annotations

import math
from typing import Any, Iterator, Optional

from ... import distributed as dist
from ...generator import Generator
from . import Sampler

__all__ = ["DistributedSampler"]


class DistributedSampler(Sampler):
    """Indices of ``dataset`` for one rank (``rank`` of ``num_replicas``, by default this
    process's in the default process group)."""

    def __init__(self, dataset: Any, num_replicas: Optional[int] = None,
                 rank: Optional[int] = None, shuffle: bool = True, seed: int = 0,
                 drop_last: bool = False):
        if num_replicas is None:
            num_replicas = dist.get_world_size()      # ValueError when not initialised
        if rank is None:
            rank = dist.get_rank()
        if rank >= num_replicas or rank < 0:
            raise ValueError(f"Invalid rank {rank}, rank should be in the interval "
                             f"[0, {num_replicas - 1}]")
        self.dataset, self.num_replicas, self.rank = dataset, num_replicas, rank
        self.epoch, self.drop_last, self.shuffle, self.seed = 0, drop_last, shuffle, seed
        n = len(dataset)
        if self.drop_last and n % self.num_replicas != 0:
            # the tail is dropped so that every rank gets the same number of samples
            self.num_samples = math.ceil((n - self.num_replicas) / self.num_replicas)
        else:
            self.num_samples = math.ceil(n / self.num_replicas)
        self.total_size = self.num_samples * self.num_replicas

    def __iter__(self) -> Iterator[int]:
        n = len(self.dataset)
        if self.shuffle:
            indices = Generator().manual_seed(self.seed + self.epoch).permutation(n).tolist()
        else:
            indices = list(range(n))
        if not self.drop_last:
            padding = self.total_size - len(indices)
            if padding <= len(indices):
                indices += indices[:padding]
            else:
                indices += (indices * math.ceil(padding / len(indices)))[:padding]
        else:
            indices = indices[:self.total_size]
        if len(indices) != self.total_size:
            raise AssertionError(f"{len(indices)} indices for a total size of "
                                 f"{self.total_size}")
        mine = indices[self.rank:self.total_size:self.num_replicas]
        return iter(mine)

    def __len__(self) -> int:
        return self.num_samples

    def set_epoch(self, epoch: int) -> None:
        """Shuffle differently in this epoch (call it at the start of each one, on every
        rank: otherwise every epoch repeats the first one's order)."""
        self.epoch = epoch
