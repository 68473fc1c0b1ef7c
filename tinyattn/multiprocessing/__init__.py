"""``tinyattn.multiprocessing``: torch's ``torch.multiprocessing``, Python's multiprocessing
with tensors that can be shared, and ``spawn`` (docs/data_workers.md#torchmultiprocessing).

    def train(rank, model):                    # runs in each process
        ...                                    # model's parameters: the same memory
    model.share_memory()                       # parameters into shared memory (optional:
                                               # sending them moves them there too)
    tinyattn.multiprocessing.spawn(train, args=(model,), nprocs=2)

Everything of Python's ``multiprocessing`` is here (``Process``, ``Queue``, ``Pool``,
``get_context``, ``set_start_method``, ...). As in torch, a CPU tensor sent to another
process (a Queue, a Pipe, a Pool, the arguments of a spawned Process) is moved into shared
memory first, in the sender, and arrives as the same memory: an in-place change in one
process is seen in the other (reductions.py says how; ``import tinyattn`` registers it
with Python's multiprocessing, as ``import torch`` does).
"""
from __future__ import annotations

import multiprocessing
import multiprocessing.connection
import signal
import sys
import traceback
from multiprocessing import (Barrier, Condition, Event, JoinableQueue, Lock, Manager, Pipe,
                             Pool, Process, Queue, RLock, Semaphore, SimpleQueue, Value,
                             active_children, cpu_count, current_process,
                             get_all_start_methods, get_context, get_start_method,
                             set_start_method)
from typing import Any, List, Optional, Sequence

from .reductions import init_reductions

__all__ = ["Process", "Queue", "SimpleQueue", "JoinableQueue", "Pool", "Pipe", "Event",
           "Lock", "RLock", "Semaphore", "Condition", "Barrier", "Value", "Manager",
           "get_context", "set_start_method", "get_start_method", "get_all_start_methods",
           "cpu_count", "current_process", "active_children", "spawn", "start_processes",
           "ProcessContext", "ProcessRaisedException", "ProcessExitedException",
           "set_sharing_strategy", "get_sharing_strategy", "get_all_sharing_strategies",
           "init_reductions"]


# ------------------------------------------------------------------ sharing tensors
init_reductions()          # again here: a Tensor subclass defined since import tinyattn

_SHARING_STRATEGIES = ("file_descriptor", "file_system")
_strategy = ["file_descriptor"]


def get_all_sharing_strategies() -> set:
    return set(_SHARING_STRATEGIES)


def get_sharing_strategy() -> str:
    return _strategy[0]


def set_sharing_strategy(strategy: str) -> None:
    """torch's switch between its two ways of passing shared memory. Both share the same
    way as seen from Python; tinyattn always passes the memory's file descriptor (torch's
    "file_descriptor", its Linux default: no file name exists, so none can be left behind)
    and records the choice, so that ``get_sharing_strategy()`` answers as torch's."""
    if strategy not in _SHARING_STRATEGIES:
        raise ValueError(f"sharing strategy {strategy!r} is not one of "
                         f"{sorted(_SHARING_STRATEGIES)}")
    _strategy[0] = strategy


# ------------------------------------------------------------------ spawn
class ProcessException(Exception):
    def __init__(self, msg: str, error_index: int, pid: Optional[int]):
        super().__init__(msg)
        self.msg, self.error_index, self.pid = msg, error_index, pid

    def __reduce__(self) -> Any:
        return type(self), (self.msg, self.error_index, self.pid)


class ProcessRaisedException(ProcessException):
    """A spawned function raised; the message holds its traceback (torch's)."""


class ProcessExitedException(ProcessException):
    """A spawned process exited with a non-zero code or a signal (torch's)."""

    def __init__(self, msg: str, error_index: int, error_pid: Optional[int],
                 exit_code: int, signal_name: Optional[str] = None):
        super().__init__(msg, error_index, error_pid)
        self.exit_code, self.signal_name = exit_code, signal_name

    def __reduce__(self) -> Any:
        return type(self), (self.msg, self.error_index, self.pid, self.exit_code,
                            self.signal_name)


def _wrap(fn: Any, index: int, args: Sequence[Any], error_queue: Any) -> None:
    try:
        fn(index, *args)
    except KeyboardInterrupt:
        pass                               # the parent is being interrupted too
    except Exception:
        error_queue.put(traceback.format_exc())
        sys.exit(1)


class ProcessContext:
    """The processes ``spawn(..., join=False)`` started; ``join()`` waits for them and
    raises the first failure (after stopping the others), as torch's."""

    def __init__(self, processes: List[Any], error_queues: List[Any]):
        self.processes, self.error_queues = processes, error_queues
        self.sentinels = {p.sentinel: i for i, p in enumerate(processes)}

    def pids(self) -> List[int]:
        return [int(p.pid) for p in self.processes]

    def join(self, timeout: Optional[float] = None) -> bool:
        """True when every process has ended well; False if ``timeout`` passed first."""
        if not self.sentinels:
            return True
        ready = multiprocessing.connection.wait(list(self.sentinels), timeout=timeout)
        failed = None
        for sentinel in ready:
            index = self.sentinels.pop(sentinel)
            process = self.processes[index]
            process.join()
            if process.exitcode != 0:
                failed = index
                break
        if failed is None:
            return not self.sentinels
        for process in self.processes:         # stop the rest, as torch does
            if process.is_alive():
                process.terminate()
            process.join()
        process = self.processes[failed]
        if not self.error_queues[failed].empty():
            message = (f"\n\n-- Process {failed} terminated with the following error:\n"
                       f"{self.error_queues[failed].get()}")
            raise ProcessRaisedException(message, failed, process.pid)
        if process.exitcode < 0:
            name = signal.Signals(-process.exitcode).name
            raise ProcessExitedException(f"process {failed} terminated with signal {name}",
                                         failed, process.pid, process.exitcode, name)
        raise ProcessExitedException(f"process {failed} terminated with exit code "
                                     f"{process.exitcode}", failed, process.pid,
                                     process.exitcode)


def start_processes(fn: Any, args: Sequence[Any] = (), nprocs: int = 1, join: bool = True,
                    daemon: bool = False, start_method: str = "spawn"
                    ) -> Optional[ProcessContext]:
    """``fn(i, *args)`` in ``nprocs`` new processes (i = 0 .. nprocs-1). With
    ``start_method="spawn"``, ``join=True`` and several processes, they are started as one
    MPI job when mpi4py and mpirun are here (``mpi_spawn.py``), so that they can form a
    ``torch.distributed`` group, as torch's tutorials expect; otherwise (or when ``args``
    hold a Queue or Lock, which only Python-started processes can receive) by Python."""
    init_reductions()
    if start_method == "spawn" and join and nprocs > 1 and not daemon:
        from . import mpi_spawn             # noqa: PLC0415 - mpi4py only when it is used
        payload = mpi_spawn.payload_bytes(fn, args) if mpi_spawn.available() else None
        if payload is not None:
            mpi_spawn.spawn_with_mpi(payload, nprocs)
            return None
    context = get_context(start_method)
    processes, error_queues = [], []
    for index in range(nprocs):
        error_queue = context.SimpleQueue()
        process = context.Process(target=_wrap, args=(fn, index, tuple(args), error_queue),
                                  daemon=daemon)
        process.start()
        processes.append(process)
        error_queues.append(error_queue)
    process_context = ProcessContext(processes, error_queues)
    if not join:
        return process_context
    while not process_context.join():
        pass
    return None


def spawn(fn: Any, args: Sequence[Any] = (), nprocs: int = 1, join: bool = True,
          daemon: bool = False, start_method: str = "spawn") -> Optional[ProcessContext]:
    """torch's ``torch.multiprocessing.spawn``: ``fn(i, *args)`` in ``nprocs`` processes
    started with ``start_method`` (default "spawn": ``fn`` must be importable, defined at
    the top of a module). With ``join`` it waits, and a failure in any process is raised
    here (``ProcessRaisedException`` with its traceback, or ``ProcessExitedException``)."""
    return start_processes(fn, args, nprocs, join, daemon, start_method)
