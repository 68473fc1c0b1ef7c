"""The launcher: torchrun's command line and environment, on MPI's launcher.

    python -m tinyattn.distributed.run --nproc_per_node 2 train.py --lr 3e-4
    python -m tinyattn.distributed.run --nproc_per_node 2 -m tinyattn run-torch train.py

starts ``--nproc_per_node`` processes with ``mpirun`` (Open MPI or MPICH), each of which
sets torchrun's variables (``RANK``, ``LOCAL_RANK``, ``WORLD_SIZE``, ``LOCAL_WORLD_SIZE``,
``MASTER_ADDR``, ``MASTER_PORT``) from MPI's numbering and runs the script as ``__main__``.
A process that fails makes MPI stop the others; the launcher exits with its code. One
machine only here (``--nnodes 1``): on several machines, start with MPI's own launcher.
"""
from __future__ import annotations

import argparse
import os
import runpy
import shutil
import signal
import subprocess
import sys
from typing import List, Optional

from .engine import MPI_MISSING

__all__ = ["main", "mpirun_command"]

_CHILD_FLAG = "--tinyattn-rank-child"


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m tinyattn.distributed.run",
        description="Start N processes of a training script with torchrun's environment "
                    "(RANK, LOCAL_RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT), over MPI.")
    parser.add_argument("--nproc_per_node", "--nproc-per-node", type=int, default=1,
                        help="processes to start (default 1)")
    parser.add_argument("--nnodes", default="1", help="machines: only 1 here")
    parser.add_argument("--node_rank", "--node-rank", type=int, default=0)
    parser.add_argument("--standalone", action="store_true", help="accepted (one machine)")
    parser.add_argument("--master_addr", "--master-addr", default="127.0.0.1")
    parser.add_argument("--master_port", "--master-port", type=int, default=29500)
    parser.add_argument("-m", "--module", action="store_true",
                        help="run the script argument as a module (python -m)")
    parser.add_argument("--no_python", "--no-python", action="store_true",
                        help="run the script argument as a program, not with python")
    parser.add_argument("script", help="the training script (or module with -m)")
    parser.add_argument("script_args", nargs=argparse.REMAINDER)
    return parser


def _find_mpirun() -> Optional[str]:
    beside = os.path.join(os.path.dirname(sys.executable), "mpirun")
    return beside if os.path.exists(beside) else shutil.which("mpirun")


def mpirun_command(nprocs: int, target: List[str], env_flags: List[str]) -> List[str]:
    """The mpirun command line that starts ``nprocs`` copies of ``target``."""
    mpirun = _find_mpirun()
    if mpirun is None:
        raise RuntimeError(f"no mpirun found: {MPI_MISSING}")
    version = subprocess.run([mpirun, "--version"], capture_output=True, text=True,
                             timeout=60).stdout
    command = [mpirun, "-n", str(nprocs)]
    if "Open MPI" in version or "OpenRTE" in version:
        command.append("--oversubscribe")     # more processes than cores is fine here
        if hasattr(os, "geteuid") and os.geteuid() == 0:
            command.append("--allow-run-as-root")
    return command + target + env_flags


def main(argv: Optional[List[str]] = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv and argv[0] == _CHILD_FLAG:
        return _child(argv[1:])
    args = _parser().parse_args(argv)
    if str(args.nnodes) not in ("1", "1:1"):
        print(f"tinyattn.distributed.run: --nnodes {args.nnodes}: one machine only; on "
              f"several, start the script with MPI's launcher (mpirun -n N -H hosts python "
              f"train.py)", file=sys.stderr)
        return 2
    if args.nproc_per_node < 1:
        print(f"tinyattn.distributed.run: --nproc_per_node must be >= 1, got "
              f"{args.nproc_per_node}", file=sys.stderr)
        return 2
    try:
        import mpi4py  # noqa: F401,PLC0415 - checked here so the error is one clear line
    except ImportError:
        print(f"tinyattn.distributed.run: {MPI_MISSING}", file=sys.stderr)
        return 1
    mode = ["--module"] if args.module else ["--no-python"] if args.no_python else []
    target = [sys.executable, "-m", "tinyattn.distributed.run", _CHILD_FLAG,
              args.master_addr, str(args.master_port), *mode, args.script, *args.script_args]
    try:
        command = mpirun_command(args.nproc_per_node, target, [])
    except RuntimeError as exc:
        print(f"tinyattn.distributed.run: {exc}", file=sys.stderr)
        return 1
    return _run_and_forward_signals(command, _one_thread_each(args.nproc_per_node))


def _one_thread_each(nproc: int) -> dict:
    """torchrun's default: with several processes on one machine and OMP_NUM_THREADS unset,
    each process gets one thread (and says so), since N processes of N-threaded BLAS on N
    cores overload it (an idle OpenBLAS thread spins). Here the BLAS's own variables too."""
    env = dict(os.environ)
    if nproc > 1 and "OMP_NUM_THREADS" not in env:
        print("*****************************************\n"
              "Setting OMP_NUM_THREADS environment variable for each process to be 1 in "
              "default, to avoid your system being overloaded, please further tune the "
              "variable for optimal performance in your application as needed. \n"
              "*****************************************", file=sys.stderr)
        for name in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
            env.setdefault(name, "1")
    return env


def _run_and_forward_signals(command: List[str], env: Optional[dict] = None) -> int:
    """Run mpirun; a Ctrl-C or SIGTERM to the launcher goes on to mpirun, which stops every
    rank, and the launcher waits for that (a terminal's Ctrl-C reaches mpirun directly too).
    mpirun is never killed outright: it could not stop its ranks then."""
    process = subprocess.Popen(command, env=env)
    previous = signal.signal(signal.SIGTERM, lambda signum, frame: process.send_signal(
        signal.SIGTERM))
    try:
        while True:
            try:
                return process.wait()
            except KeyboardInterrupt:
                process.send_signal(signal.SIGINT)
                try:
                    process.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    process.terminate()
                    process.wait(timeout=30)
                return 130
    finally:
        signal.signal(signal.SIGTERM, previous)


def _rank_from_mpi() -> tuple:
    env = os.environ
    for rank_key, size_key, local_key, local_size_key in (
            ("OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK",
             "OMPI_COMM_WORLD_LOCAL_SIZE"),
            ("PMI_RANK", "PMI_SIZE", "MPI_LOCALRANKID", "MPI_LOCALNRANKS")):
        if rank_key in env and size_key in env:
            rank, size = int(env[rank_key]), int(env[size_key])
            return rank, size, int(env.get(local_key, rank)), int(env.get(local_size_key,
                                                                           size))
    raise RuntimeError("this process was not started by mpirun (no OMPI_COMM_WORLD_RANK or "
                       "PMI_RANK): use python -m tinyattn.distributed.run")


def _child(argv: List[str]) -> int:
    """In each rank: torchrun's variables from MPI's numbering, then the script."""
    master_addr, master_port, rest = argv[0], argv[1], argv[2:]
    rank, size, local_rank, local_size = _rank_from_mpi()
    os.environ.update(RANK=str(rank), WORLD_SIZE=str(size), LOCAL_RANK=str(local_rank),
                      LOCAL_WORLD_SIZE=str(local_size), GROUP_RANK="0", ROLE_RANK=str(rank),
                      ROLE_WORLD_SIZE=str(size), MASTER_ADDR=master_addr,
                      MASTER_PORT=master_port, TORCHELASTIC_RUN_ID="none")
    if rest and rest[0] == "--no-python":
        return subprocess.run(rest[1:]).returncode
    if rest and rest[0] == "--module":
        sys.argv = [rest[1]] + rest[2:]
        runpy.run_module(rest[1], run_name="__main__", alter_sys=True)
        return 0
    sys.argv = rest
    sys.path.insert(0, os.path.dirname(os.path.abspath(rest[0])))
    runpy.run_path(rest[0], run_name="__main__")
    return 0


if __name__ == "__main__":
    sys.exit(main())
