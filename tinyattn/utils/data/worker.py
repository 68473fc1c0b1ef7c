"""The DataLoader's worker processes, the worker side: ``get_worker_info``, the loop each
worker runs, and how a batch travels back (docs/data_workers.md).

A worker gets tasks ``(epoch, send_index, indices)`` on its own index queue, builds the
batch (``[dataset[i] for i in indices]`` then ``collate_fn``; for an IterableDataset the
next ``batch_size`` samples of its own copy of the stream), and puts
``(epoch, send_index, batch)`` on the result queue that all workers share. An exception is
sent back with its traceback (``ExceptionWrapper``) and re-raised in the main process.
A batch's tensors travel as every tensor sent to another process does
(tinyattn/multiprocessing/reductions.py): through shared memory, which ``default_collate``
fills directly in a worker, so that the main process maps the batch without a copy.
"""
from __future__ import annotations

import itertools
import os
import queue
import random
import signal
import sys
import traceback
from typing import Any, NamedTuple, Optional

import numpy as np

from ... import backend
from ...tensor import shared_memory

__all__ = ["WorkerInfo", "get_worker_info", "ExceptionWrapper"]

_worker_info: Optional["WorkerInfo"] = None


class WorkerInfo(NamedTuple):
    """What ``get_worker_info()`` returns inside a worker (torch's fields)."""
    id: int
    num_workers: int
    seed: int
    dataset: Any


def get_worker_info() -> Optional[WorkerInfo]:
    """In a DataLoader worker: its ``id``, ``num_workers``, ``seed`` and its copy of the
    ``dataset`` (an IterableDataset uses them to read only its share); None elsewhere."""
    return _worker_info


class ExceptionWrapper:
    """An exception raised in a worker, with its traceback as text (tracebacks do not
    pickle); ``reraise()`` raises the same type in the main process, as torch does."""

    def __init__(self, exc_info: Any, where: str):
        self.exc_type = exc_info[0]
        self.exc_msg = "".join(traceback.format_exception(*exc_info))
        self.where = where

    def reraise(self) -> None:
        message = f"Caught {self.exc_type.__name__} {self.where}.\nOriginal {self.exc_msg}"
        try:
            exception = self.exc_type(message)
        except Exception:                     # a type that takes other arguments
            raise RuntimeError(message) from None
        raise exception


class _IterableStop(NamedTuple):
    """A worker's stream of an IterableDataset is exhausted."""
    worker_id: int


# ------------------------------------------------------------------ shared memory
def shared_memory_available() -> bool:
    return shared_memory.available()


# ------------------------------------------------------------------ the loop
def _seed_everything(seed: int, base_seed: int, worker_id: int) -> None:
    """torch's per-worker seeding: ``random`` and the framework's generator get
    ``base_seed + worker_id``; NumPy's global generator a seed derived from both."""
    random.seed(seed)
    backend.manual_seed(seed)
    np.random.seed(np.random.SeedSequence([base_seed, worker_id]).generate_state(1)[0])


def _one_blas_thread() -> Any:
    """torch runs each worker with one intra-op thread (``torch.set_num_threads(1)``): N
    workers with a full-width BLAS each would fight over the cores with each other and with
    the training loop. NumPy's BLAS is limited through threadpoolctl when it is installed
    (not a tinyattn dependency); the limit object is kept for the worker's life."""
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:
        return None
    return threadpool_limits(limits=1)


def worker_loop(dataset: Any, index_queue: Any, result_queue: Any, done_event: Any,
                auto_collation: bool, collate_fn: Any, drop_last: bool, batch_size: Any,
                iterable: bool, base_seed: int, init_fn: Any, worker_id: int,
                num_workers: int, parent_pid: int) -> None:
    """What each worker process runs until told to stop (None on its queue, the done
    event, or its parent gone)."""
    global _worker_info
    signal.signal(signal.SIGINT, signal.SIG_IGN)   # Ctrl-C is the main process's to handle
    blas_limit = _one_blas_thread()                  # noqa: F841 - kept alive on purpose
    seed = base_seed + worker_id
    _seed_everything(seed, base_seed, worker_id)
    _worker_info = WorkerInfo(worker_id, num_workers, seed, dataset)
    where = f"in DataLoader worker process {worker_id}"
    try:
        if init_fn is not None:
            init_fn(worker_id)
        stream = iter(dataset) if iterable else None
    except Exception:
        result_queue.put((None, None, ExceptionWrapper(sys.exc_info(), where)))
        stream = None
        init_failed = True
    else:
        init_failed = False
    exhausted = False
    while True:
        try:
            task = index_queue.get(timeout=1.0)
        except queue.Empty:
            if done_event.is_set() or os.getppid() != parent_pid:
                return
            continue
        if task is None or done_event.is_set():
            return
        epoch, send_index, indices = task
        if indices == "resume":                        # persistent workers: a new epoch
            if iterable and not init_failed:
                stream, exhausted = iter(dataset), False
            continue
        if init_failed:
            continue
        try:
            if iterable:
                if exhausted:
                    batch: Any = _IterableStop(worker_id)
                else:
                    batch = _next_from_stream(stream, auto_collation, batch_size, drop_last,
                                              collate_fn, worker_id)
                    exhausted = isinstance(batch, _IterableStop)
            elif auto_collation:
                batch = collate_fn([dataset[i] for i in indices])
            else:
                batch = collate_fn(dataset[indices])
        except Exception:
            batch = ExceptionWrapper(sys.exc_info(), where)
        result_queue.put((epoch, send_index, batch))
        del batch


def _next_from_stream(stream: Any, auto_collation: bool, batch_size: Any, drop_last: bool,
                      collate_fn: Any, worker_id: int) -> Any:
    if not auto_collation:
        for sample in stream:
            return collate_fn(sample)
        return _IterableStop(worker_id)
    samples = list(itertools.islice(stream, batch_size))
    if not samples or (drop_last and len(samples) < batch_size):
        return _IterableStop(worker_id)
    return collate_fn(samples)
