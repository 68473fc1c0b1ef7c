"""``spawn(fn, args, nprocs)`` started as one MPI job, so the processes can form a group.

torch's tutorials (the Annotated Transformer, pytorch/examples' DDP scripts) call
``mp.spawn(worker, nprocs=N)`` and then, in each worker, ``init_process_group(rank=i,
world_size=N)``. Processes started one by one by Python's multiprocessing are MPI
"singletons": Open MPI cannot join them afterwards (Comm_connect/Comm_accept between
singletons fails without a running PMIx server). So spawn starts the N processes with
``mpirun -n N`` (the launcher's command, tinyattn/distributed/run.py), each running
``fn(i, *args)`` with i its MPI rank: their ``init_process_group`` then finds the group MPI
made. The parent itself never starts MPI.

What travels: ``fn`` and ``args`` pickled as Python's spawn pickles them (by reference for
functions, tensors by their shared memory, reopened through ``/proc/<parent>/fd``: the
parent holds them while the job runs), and the
parent's ``__main__`` is prepared in each child as Python's spawn prepares it. Results come
back through files in a temporary folder: ``error-<i>`` holds a failing process's traceback,
``done-<i>`` marks a process whose ``fn`` returned.
"""
from __future__ import annotations

import multiprocessing.spawn
import os
import pickle
import subprocess
import sys
import tempfile
import traceback
from multiprocessing.reduction import ForkingPickler
from typing import Any, Optional, Sequence

__all__ = ["available", "payload_bytes", "spawn_with_mpi"]

_PAYLOAD = "payload.pickle"


def available() -> bool:
    """mpi4py importable (not imported: that would start MPI here), an mpirun found, and
    this process not itself an MPI rank (an mpirun inside an MPI job is not started)."""
    import importlib.util
    from ..distributed.engine import launched_by_mpi    # noqa: PLC0415 - same layer
    if launched_by_mpi() or importlib.util.find_spec("mpi4py") is None:
        return False
    from ..distributed.run import _find_mpirun     # noqa: PLC0415 - same layer
    return _find_mpirun() is not None


def payload_bytes(fn: Any, args: Sequence[Any]) -> Optional[bytes]:
    """``(fn, args)`` pickled, or None when they cannot travel to an MPI-started process
    (a multiprocessing Queue or Lock: those only pass to processes Python starts)."""
    from .reductions import sharing_by_proc_path    # noqa: PLC0415 - same package
    try:
        with sharing_by_proc_path():       # tensors: by /proc/<this pid>/fd, for N readers
            return ForkingPickler.dumps((fn, tuple(args)))
    except (RuntimeError, pickle.PicklingError, TypeError, AttributeError):
        return None


def _under_run_torch() -> bool:
    """Whether ``import torch`` in this process is answered by tinyattn (run-torch): then the
    workers must answer it so too (torch_shim/spawn_child.py installs that first). Read from
    the torch module itself, since this layer does not import the shim."""
    torch = sys.modules.get("torch")
    return torch is not None and type(torch).__module__.startswith("tinyattn.")


def spawn_with_mpi(fn_args: bytes, nprocs: int) -> None:
    """Run the pickled ``(fn, args)`` on ``nprocs`` MPI processes; raise torch's
    ProcessRaisedException / ProcessExitedException as ``spawn`` does."""
    from . import ProcessExitedException, ProcessRaisedException
    from ..distributed.run import mpirun_command    # noqa: PLC0415 - same layer
    with tempfile.TemporaryDirectory(prefix="tinyattn-spawn-") as folder:
        preparation = multiprocessing.spawn.get_preparation_data("tinyattn-spawn")
        preparation["authkey"] = bytes(preparation["authkey"])   # pickles only as bytes
        with open(os.path.join(folder, _PAYLOAD), "wb") as handle:
            pickle.dump(preparation, handle)
            handle.write(fn_args)
        entry = "tinyattn.torch_shim.spawn_child" if _under_run_torch() else __name__
        command = mpirun_command(nprocs, [sys.executable, "-m", entry, folder], [])
        code = subprocess.run(command).returncode
        for index in range(nprocs):
            error = os.path.join(folder, f"error-{index}")
            if os.path.exists(error):
                with open(error, encoding="utf-8") as handle:
                    message = handle.read()
                raise ProcessRaisedException(
                    f"\n\n-- Process {index} terminated with the following error:\n"
                    f"{message}", index, None)
        for index in range(nprocs):
            if not os.path.exists(os.path.join(folder, f"done-{index}")):
                exit_code = code if code != 0 else 1
                raise ProcessExitedException(
                    f"process {index} terminated with exit code {exit_code}", index, None,
                    exit_code)
        if code != 0:
            raise ProcessExitedException(f"process 0 terminated with exit code {code}", 0,
                                         None, code)


def _child(folder: str) -> int:
    """In each MPI process: prepare ``__main__`` as Python's spawn does, run fn(rank, *args)."""
    rank = int(os.environ.get("OMPI_COMM_WORLD_RANK", os.environ.get("PMI_RANK", "0")))
    try:
        with open(os.path.join(folder, _PAYLOAD), "rb") as handle:
            multiprocessing.spawn.prepare(pickle.load(handle))
            from .reductions import init_reductions
            init_reductions()
            fn, args = pickle.load(handle)
        fn(rank, *args)
    except KeyboardInterrupt:
        return 130
    except SystemExit as exc:
        if exc.code not in (None, 0):
            raise
    except BaseException:
        with open(os.path.join(folder, f"error-{rank}"), "w", encoding="utf-8") as handle:
            handle.write(traceback.format_exc())
        return 1
    open(os.path.join(folder, f"done-{rank}"), "w").close()
    return 0


if __name__ == "__main__":
    sys.exit(_child(sys.argv[1]))
