"""Shared memory for CPU tensors: ``Tensor.share_memory_()``, and what
``tinyattn.multiprocessing`` sends (docs/data_workers.md#how-shared-memory-is-made-and-freed).

A block of shared memory is an anonymous memory file (Linux ``memfd_create``; where that is
missing, a file of ``/dev/shm`` whose name is removed the moment it is opened), held by its
file descriptor and mapped into the process. It has no name, so nothing can be left behind
however a process ends (normal exit, exception, ``os._exit``, SIGKILL, Ctrl-C): the kernel
frees the memory when the last descriptor and the last mapping of it are gone. Another
process gets the memory by receiving the descriptor (torch's "file_descriptor" strategy,
its Linux default); tinyattn.multiprocessing sends it.

In a process, each block is one ``SharedStorage`` (torch's storage): the arrays of the
tensors on it are views of one mapping. The storage of an array is found from the array
itself (its chain of ``.base`` ends at the mapping), so views, ``detach()``-ed tensors and
tensors received from other processes all answer ``is_shared()`` without a flag to keep.
The descriptor is closed when the mapping is collected (the last array on it is gone).
"""
from __future__ import annotations

import mmap
import os
import sys
import threading
import uuid
import weakref
from typing import Any, Dict, List, Optional, Tuple

import numpy as np

__all__ = ["SharedStorage", "available", "storage_of", "new_storage", "open_storage",
           "array_on", "move_to_shared", "byte_offset", "open_descriptors"]

_DIR = "/dev/shm"
_NAME = "tinyattn-shared"
_lock = threading.Lock()          # a Queue pickles in its feeder thread
_storages: Dict[int, "SharedStorage"] = {}        # id(mapping) -> its storage
_by_key: Dict[Tuple[int, int], "SharedStorage"] = {}  # (device, inode) -> the same
# Test hooks (tests/multiprocessing_leak_script.py): use_memfd=False takes the fallback
# (a /dev/shm file), unlink_fallback_name=False leaves its name in place: the leak that the
# tests' leak count must then see. Never changed in real use.
use_memfd = hasattr(os, "memfd_create")
unlink_fallback_name = True


def available() -> bool:
    return sys.platform.startswith("linux") and (
        hasattr(os, "memfd_create") or (os.path.isdir(_DIR) and os.access(_DIR, os.W_OK)))


class SharedStorage:
    """One block of shared memory in this process: its descriptor ``fd`` (kept open to send
    it on), ``nbytes``, the ``key`` that names the block in every process (the file's device
    and inode: a block received twice is mapped once), and a weak reference to its mapping."""

    def __init__(self, fd: int, nbytes: int, mapping: mmap.mmap):
        info = os.fstat(fd)
        self.fd, self.nbytes = fd, nbytes
        self.key = (info.st_dev, info.st_ino)
        self.mapping = weakref.ref(mapping)
        self.address = _address_of(mapping)

    def __repr__(self) -> str:
        return f"SharedStorage(fd={self.fd}, nbytes={self.nbytes})"


def _address_of(mapping: mmap.mmap) -> int:
    return int(np.ndarray((1,), np.uint8, buffer=mapping).__array_interface__["data"][0])


def _release(mapping_id: int, storage: SharedStorage) -> None:
    """The mapping is gone (no array uses it): forget the storage and close its fd."""
    with _lock:
        if _storages.get(mapping_id) is storage:
            del _storages[mapping_id]
        if _by_key.get(storage.key) is storage:
            del _by_key[storage.key]
    try:
        os.close(storage.fd)
    except OSError:
        pass


def _register(fd: int, nbytes: int) -> Tuple[SharedStorage, mmap.mmap]:
    mapping = mmap.mmap(fd, max(nbytes, 1))
    storage = SharedStorage(fd, nbytes, mapping)
    with _lock:
        _storages[id(mapping)] = storage
        _by_key[storage.key] = storage
    weakref.finalize(mapping, _release, id(mapping), storage)
    return storage, mapping


def _new_fd(nbytes: int) -> int:
    """A nameless memory file of ``nbytes`` (at least 1: an empty mapping is not allowed)."""
    if use_memfd:
        fd = os.memfd_create(_NAME, os.MFD_CLOEXEC)
    else:
        if not available():
            raise RuntimeError("share_memory_(): shared memory needs Linux (memfd_create "
                               "or /dev/shm); on this system tensors cannot be shared")
        path = os.path.join(_DIR, f"{_NAME}-{os.getpid()}-{uuid.uuid4().hex}")
        fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_RDWR, 0o600)
        if unlink_fallback_name:
            os.unlink(path)                    # nameless from here on: nothing to leak
    try:
        os.ftruncate(fd, max(nbytes, 1))
    except OSError:
        os.close(fd)
        raise
    return fd


def new_storage(nbytes: int) -> Tuple[SharedStorage, mmap.mmap]:
    """A new block of ``nbytes`` of shared memory (zeros), mapped here."""
    return _register(_new_fd(nbytes), nbytes)


def open_storage(fd: int, nbytes: int) -> mmap.mmap:
    """The mapping of a block received as ``fd`` (which this takes over): the one this
    process has already, if it holds that block (its own, sent back; or received before),
    else a new mapping."""
    info = os.fstat(fd)
    with _lock:
        known = _by_key.get((info.st_dev, info.st_ino))
        mapping = None if known is None else known.mapping()
    if mapping is not None:
        os.close(fd)
        return mapping
    return _register(fd, nbytes)[1]


def storage_of(array: Any) -> Optional[Tuple[SharedStorage, mmap.mmap]]:
    """The shared storage an array lies in, with its mapping, or None."""
    owner = array
    while isinstance(owner, np.ndarray):
        owner = owner.base
    if not isinstance(owner, mmap.mmap):
        return None
    storage = _storages.get(id(owner))
    if storage is None or storage.mapping() is not owner:
        return None
    return storage, owner


def byte_offset(array: np.ndarray, storage: SharedStorage) -> int:
    """Where ``array``'s first element lies in its storage, in bytes."""
    return int(array.__array_interface__["data"][0]) - storage.address


def array_on(mapping: mmap.mmap, dtype: Any, shape: Tuple[int, ...],
             strides: Tuple[int, ...], offset: int, writeable: bool = True) -> np.ndarray:
    """The array of ``shape``/``strides`` (bytes) at byte ``offset`` of a mapping."""
    array = np.ndarray(shape, dtype=dtype, buffer=mapping, offset=offset, strides=strides)
    if not writeable:
        array.flags.writeable = False
    return array


def move_to_shared(arrays: List[np.ndarray]) -> List[np.ndarray]:
    """The arrays of one memory (the first one, the root, holds every element of the
    others: a base and its views), moved into one new block of shared memory: the root's
    values are copied once, and each array comes back as the same view of the new block
    (same offset and strides), as torch's ``storage.share_memory_()`` does."""
    bounds = [_byte_bounds(a) for a in arrays]
    low, high = min(b[0] for b in bounds), max(b[1] for b in bounds)
    storage, mapping = new_storage(high - low)
    moved = []
    for array in arrays:
        start = int(array.__array_interface__["data"][0]) - low
        moved.append(array_on(mapping, array.dtype, array.shape, array.strides, start,
                              bool(array.flags.writeable)))
    root = moved[0]
    if root.flags.writeable:
        root[...] = arrays[0]
    else:                                       # a read-only root: fill it, then lock it
        root.flags.writeable = True
        root[...] = arrays[0]
        root.flags.writeable = False
    return moved


def _byte_bounds(array: np.ndarray) -> Tuple[int, int]:
    utils = getattr(np.lib, "array_utils", None)          # NumPy 2; NumPy 1 has np.byte_bounds
    return (utils.byte_bounds if utils is not None else np.byte_bounds)(array)


def open_descriptors() -> int:
    """How many shared-memory descriptors this process holds (the leak tests count them)."""
    with _lock:
        return len(_storages)
