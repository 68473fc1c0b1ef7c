"""``tinyattn.distributed``: torch's ``torch.distributed`` on MPI (docs/distributed.md).

- ``collectives.py``: ``init_process_group``, ``all_reduce``, ``broadcast``, ``all_gather``,
  ``reduce_scatter``, ``barrier``, ``ReduceOp`` (torch's names and errors);
- ``engine.py``: what does the sending: MPI through mpi4py (optional: only a job of several
  processes needs it), or nothing for a process on its own; every wait bounded by a timeout;
- ``run.py``: the launcher, torchrun's environment
  (``python -m tinyattn.distributed.run --nproc_per_node 2 train.py``).

``tinyattn.nn.parallel.DistributedDataParallel`` and
``tinyattn.utils.data.distributed.DistributedSampler`` are built on it.
"""
from __future__ import annotations

from .collectives import (GroupMember, ReduceOp, Work, all_gather, all_gather_into_tensor,
                          all_reduce, barrier, broadcast, default_pg_timeout,
                          destroy_process_group, get_backend, get_rank, get_world_size, group,
                          init_process_group, is_available, is_gloo_available, is_initialized,
                          is_mpi_available, is_nccl_available, new_group, reduce_scatter,
                          reduce_scatter_tensor)

__all__ = ["ReduceOp", "Work", "GroupMember", "group", "is_available", "is_initialized",
           "is_mpi_available", "is_gloo_available", "is_nccl_available",
           "init_process_group", "destroy_process_group", "get_rank", "get_world_size",
           "get_backend", "all_reduce", "broadcast", "all_gather", "all_gather_into_tensor",
           "reduce_scatter", "reduce_scatter_tensor", "barrier", "new_group",
           "default_pg_timeout"]
