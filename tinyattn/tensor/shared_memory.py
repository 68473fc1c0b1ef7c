"""``Tensor.share_memory_()``: a CPU tensor's array moved into shared memory, so processes
that receive it (``tinyattn.multiprocessing``) read and write the same numbers.

The array lives in a file of ``/dev/shm`` (memory, not disk), mapped into this process; a
process that receives the tensor maps the same file. The file's name is removed when the
process that made it exits (the mappings stay valid while anyone holds them).
"""
from __future__ import annotations

import atexit
import mmap
import os
import sys
import uuid
from typing import Any, List, Tuple

import numpy as np

__all__ = ["to_shared", "from_shared", "available"]

_DIR = "/dev/shm"
_created: List[str] = []


def available() -> bool:
    return sys.platform.startswith("linux") and os.path.isdir(_DIR) and \
        os.access(_DIR, os.W_OK)


def _remove_created() -> None:
    for path in _created:
        try:
            os.unlink(path)
        except OSError:
            pass


atexit.register(_remove_created)


def _map(path: str, dtype: Any, shape: Tuple[int, ...]) -> np.ndarray:
    fd = os.open(path, os.O_RDWR)
    try:
        size = os.fstat(fd).st_size
        mapped = mmap.mmap(fd, max(size, 1))
    finally:
        os.close(fd)
    count = int(np.prod(shape, dtype=np.int64))
    return np.frombuffer(mapped, dtype=dtype, count=count).reshape(shape)


def to_shared(array: np.ndarray) -> Tuple[np.ndarray, str]:
    """A copy of ``array`` in a new shared file (C order), mapped here, and the file."""
    if not available():
        raise RuntimeError("share_memory_(): shared memory needs /dev/shm (Linux); on this "
                           "system send tensors by value (they are copied)")
    path = os.path.join(_DIR, f"tinyattn-shared-{os.getpid()}-{uuid.uuid4().hex}")
    fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_RDWR, 0o600)
    try:
        os.ftruncate(fd, max(array.nbytes, 1))
    finally:
        os.close(fd)
    _created.append(path)
    shared = _map(path, array.dtype, array.shape)
    shared[...] = array
    return shared, path


def from_shared(path: str, dtype: str, shape: Tuple[int, ...]) -> np.ndarray:
    """Map a shared tensor's file that another process made."""
    return _map(path, np.dtype(dtype), tuple(shape))
