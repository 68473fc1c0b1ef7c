"""The DataLoader's worker processes, the worker side: ``get_worker_info``, the loop each
worker runs, and how a batch travels back (docs/data_workers.md).

A worker gets tasks ``(epoch, send_index, indices)`` on its own index queue, builds the
batch (``[dataset[i] for i in indices]`` then ``collate_fn``; for an IterableDataset the
next ``batch_size`` samples of its own copy of the stream), and puts
``(epoch, send_index, batch)`` on the result queue that all workers share. An exception is
sent back with its traceback (``ExceptionWrapper``) and re-raised in the main process.
Large arrays travel through shared memory (``/dev/shm``, one mapping, no pickle copy).
"""
from __future__ import annotations

import itertools
import os
import queue
import random
import signal
import sys
import traceback
import uuid
from typing import Any, NamedTuple, Optional

import numpy as np

from ... import backend
from ...tensor import Tensor

__all__ = ["WorkerInfo", "get_worker_info", "ExceptionWrapper"]

SHARED_MEMORY_MIN_BYTES = 64 * 1024      # smaller arrays are cheaper to pickle
_SHM_DIR = "/dev/shm"
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
class _SharedArray(NamedTuple):
    path: str
    shape: tuple
    dtype: str


def _to_shared(array: np.ndarray) -> Any:
    """Write a large array into a file of /dev/shm (memory, not disk)."""
    import mmap                               # noqa: PLC0415 - workers only
    path = os.path.join(_SHM_DIR, f"tinyattn-loader-{os.getpid()}-{uuid.uuid4().hex}")
    fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_RDWR, 0o600)
    try:
        os.ftruncate(fd, array.nbytes)
        with mmap.mmap(fd, array.nbytes) as mapped:
            np.frombuffer(mapped, dtype=array.dtype).reshape(array.shape)[...] = array
    finally:
        os.close(fd)
    return _SharedArray(path, array.shape, array.dtype.str)


def _from_shared(shared: _SharedArray) -> np.ndarray:
    """Map the worker's array (no copy) and remove its name: the mapping stays while the
    array lives."""
    import mmap                               # noqa: PLC0415
    fd = os.open(shared.path, os.O_RDWR)
    try:
        size = os.fstat(fd).st_size
        mapped = mmap.mmap(fd, size) if size else None
    finally:
        os.close(fd)
        os.unlink(shared.path)
    if mapped is None:
        return np.empty(shared.shape, np.dtype(shared.dtype))
    return np.frombuffer(mapped, dtype=np.dtype(shared.dtype)).reshape(shared.shape)


def pack(value: Any, use_shared_memory: bool) -> Any:
    """A batch ready for the result queue: large CPU tensors' arrays moved to /dev/shm."""
    if not use_shared_memory:
        return value
    if isinstance(value, Tensor) and type(value._data) is np.ndarray and \
            value._data.nbytes >= SHARED_MEMORY_MIN_BYTES and value._ctx is None and \
            not value.requires_grad and value._data.dtype.kind in "biufc":
        return ("__tinyattn_shared_tensor__", _to_shared(np.ascontiguousarray(value._data)))
    if isinstance(value, tuple) and hasattr(value, "_fields"):
        return type(value)(*(pack(v, True) for v in value))
    if isinstance(value, (list, tuple)):
        return type(value)(pack(v, True) for v in value)
    if isinstance(value, dict):
        try:
            return type(value)((k, pack(v, True)) for k, v in value.items())
        except TypeError:
            return {k: pack(v, True) for k, v in value.items()}
    return value


def unpack(value: Any) -> Any:
    """The inverse of ``pack``, in the main process."""
    if isinstance(value, tuple) and len(value) == 2 and \
            value[0] == "__tinyattn_shared_tensor__" and isinstance(value[1], _SharedArray):
        return Tensor._wrap(_from_shared(value[1]))
    if isinstance(value, tuple) and hasattr(value, "_fields"):
        return type(value)(*(unpack(v) for v in value))
    if isinstance(value, (list, tuple)):
        return type(value)(unpack(v) for v in value)
    if isinstance(value, dict):
        try:
            return type(value)((k, unpack(v)) for k, v in value.items())
        except TypeError:
            return {k: unpack(v) for k, v in value.items()}
    return value


def shared_memory_available() -> bool:
    return sys.platform.startswith("linux") and os.path.isdir(_SHM_DIR) and \
        os.access(_SHM_DIR, os.W_OK)


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
                num_workers: int, use_shared_memory: bool, parent_pid: int) -> None:
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
            batch = pack(batch, use_shared_memory)
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
