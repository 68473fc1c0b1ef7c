"""How a tensor travels to another process: through shared memory, as torch's
``torch/multiprocessing/reductions.py`` sends it (docs/data_workers.md#torchmultiprocessing).

Python's multiprocessing pickles everything it sends (Queue, SimpleQueue, Pipe, Pool, the
arguments of a spawn- or forkserver-started Process) with ``ForkingPickler``, whose table of
reductions torch fills at ``import torch``; ``init_reductions()`` fills it for tinyattn's
Tensor and nn.Parameter at ``import tinyattn``. A CPU tensor is then sent as torch sends it:

1. its memory is moved into shared memory, in the SENDER, if it is not there yet
   (``share_memory_()``: the base and all its views move together; afterwards the sender's
   ``is_shared()`` is True and the two processes see each other's in-place writes);
2. what travels is the memory's file descriptor (``multiprocessing.reduction.DupFd``: passed
   to a child being started, or fetched from the sender by the receiver), its size, and the
   tensor's dtype, shape, strides, byte offset and ``requires_grad``: a view arrives as the
   same view of the same memory;
3. the receiver maps the memory once (a block it already holds is not mapped again).

An empty tensor, a GPU tensor and a tensor that requires grad but was computed by an op are
not shared: the first two travel by value (torch shares GPU tensors through CUDA IPC, which
tinyattn does not have), the last is refused with torch's error. Off Linux (no memfd, no
/dev/shm) tensors travel by value. ``pickle`` and
``torch.save`` do not use this table: they copy by value.
"""
from __future__ import annotations

import contextlib
import os
import threading
from multiprocessing import reduction
from typing import Any, Iterator, Tuple

import numpy as np

from ..tensor import Tensor
from ..tensor import shared_memory

__all__ = ["init_reductions", "reduce_tensor", "rebuild_tensor", "sharing_by_proc_path"]

_NON_LEAF = ("Cowardly refusing to serialize non-leaf tensor which requires_grad, since "
             "autograd does not support crossing process boundaries.  If you just want to "
             "transfer the data, call detach() on the tensor before serializing (e.g., "
             "putting it on the queue).")
_by_proc_path = threading.local()


class ProcPathFd:
    """A descriptor reopened through ``/proc/<pid>/fd/<n>``: for processes that Python's
    multiprocessing does not start (spawn's MPI job), which cannot fetch a descriptor from
    the sender. The sender must hold the tensor until the receiver has unpickled it."""

    def __init__(self, fd: int):
        self.path = f"/proc/{os.getpid()}/fd/{fd}"
        info = os.fstat(fd)
        self.key = (info.st_dev, info.st_ino)

    def detach(self) -> int:
        fd = os.open(self.path, os.O_RDWR)
        info = os.fstat(fd)
        if (info.st_dev, info.st_ino) != self.key:     # the number now names another file
            os.close(fd)
            raise RuntimeError(f"a shared tensor's memory is gone from its sender "
                               f"({self.path} names another file now): the sending "
                               f"process must hold the tensor until it is received")
        return fd


@contextlib.contextmanager
def sharing_by_proc_path() -> Iterator[None]:
    """Within it, tensors pickled in this thread carry a ``ProcPathFd``."""
    _by_proc_path.on = True
    try:
        yield
    finally:
        _by_proc_path.on = False


def rebuild_tensor(cls: type, handle: Any, nbytes: int, offset: int, dtype: Any,
                   shape: Tuple[int, ...], strides: Tuple[int, ...], writeable: bool,
                   requires_grad: bool) -> Tensor:
    """The receiving end of ``reduce_tensor``: the same view of the same memory."""
    mapping = shared_memory.open_storage(handle.detach(), nbytes)
    data = shared_memory.array_on(mapping, dtype, shape, strides, offset, writeable)
    return cls._wrap(data, requires_grad)


def _rebuild_by_value(cls: type, data: np.ndarray, requires_grad: bool) -> Tensor:
    return cls._wrap(data, requires_grad)


def reduce_tensor(tensor: Tensor) -> Any:
    """The sending end: see the module docstring (torch's ``reduce_tensor``)."""
    if tensor.requires_grad and tensor._ctx is not None:
        raise RuntimeError(_NON_LEAF)
    data = tensor._data
    if type(data) is not np.ndarray:
        # torch shares a CUDA tensor's memory through CUDA IPC, so the receiver's in-place
        # writes reach the sender; tinyattn has no IPC, and a copy would differ silently
        raise RuntimeError(f"sending a tensor on {tensor.device} to another process: torch "
                           f"shares its GPU memory (CUDA IPC), which tinyattn does not "
                           f"implement; send t.cpu() (shared memory, as torch's CPU "
                           f"tensors) or t.cpu().clone() for a copy, and move it back with "
                           f".to(device) in the receiver")
    if data.size == 0 or not shared_memory.available():
        # torch does not share an empty storage either; without Linux's shared memory
        # (tinyattn has no other kind) the tensor is copied: docs/data_workers.md
        return (_rebuild_by_value, (type(tensor), data, tensor.requires_grad))
    tensor.share_memory_()
    data = tensor._data
    found = shared_memory.storage_of(data)
    if found is None:                   # share_memory_() could not move it (not expected)
        raise RuntimeError(f"sending a tensor of shape {tuple(data.shape)} to another "
                           f"process: its memory could not be moved into shared memory; "
                           f"send a copy (t.clone()) instead")
    storage = found[0]
    handle = ProcPathFd(storage.fd) if getattr(_by_proc_path, "on", False) else \
        reduction.DupFd(storage.fd)
    return (rebuild_tensor, (type(tensor), handle, storage.nbytes,
                             shared_memory.byte_offset(data, storage), data.dtype,
                             tuple(data.shape), tuple(data.strides),
                             bool(data.flags.writeable), tensor.requires_grad))


def init_reductions() -> None:
    """Register ``reduce_tensor`` for Tensor and its subclasses loaded so far (nn.Parameter:
    ForkingPickler looks its table up by exact type), as torch's ``init_reductions``."""
    todo = [Tensor]
    while todo:
        cls = todo.pop()
        reduction.ForkingPickler.register(cls, reduce_tensor)
        todo.extend(cls.__subclasses__())
