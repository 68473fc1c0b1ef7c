"""``torch.distributed``'s process group and collectives, on MPI (docs/distributed.md).

    dist.init_process_group("gloo")          # RANK and WORLD_SIZE from the launcher
    dist.all_reduce(t, op=dist.ReduceOp.SUM) # t (any shape): the sum over ranks, in place
    dist.broadcast(t, src=0)                 # t: rank 0's values on every rank
    dist.all_gather(out_list, t)             # out_list[r] = rank r's t
    dist.reduce_scatter(out, in_list)        # out = sum over ranks of in_list[this rank]

torch's backend names map onto one engine: ``"gloo"`` and ``"mpi"`` (and ``"cpu:gloo"``)
run on MPI through mpi4py when the job has several processes, and on no engine at all when
``world_size`` is 1. ``"nccl"`` on a machine without a GPU fails as in torch.
Every collective is in place, as torch's, and returns None, or a ``Work`` with
``async_op=True``; each is bounded by the group's timeout (engine.py).
"""
from __future__ import annotations

import datetime
import enum
import os
from typing import Any, List, Optional, Sequence

import numpy as np

from .. import backend
from ..tensor import Tensor
from . import engine as _engine

__all__ = ["ReduceOp", "Work", "GroupMember", "group", "is_available", "is_initialized",
           "is_mpi_available", "is_gloo_available", "is_nccl_available",
           "init_process_group", "destroy_process_group", "get_rank", "get_world_size",
           "get_backend", "all_reduce", "broadcast", "all_gather", "all_gather_into_tensor",
           "reduce_scatter", "reduce_scatter_tensor", "barrier", "new_group",
           "default_pg_timeout"]

default_pg_timeout = datetime.timedelta(minutes=30)        # torch's, for gloo and mpi
_NOT_INITIALIZED = ("Default process group has not been initialized, please make sure to "
                    "call init_process_group.")


class ReduceOp(enum.Enum):
    """How ``all_reduce`` and ``reduce_scatter`` combine the ranks' tensors (torch's
    ``ReduceOp``; ``AVG`` is the sum divided by the world size, floating tensors only)."""
    SUM = "sum"
    AVG = "avg"
    PRODUCT = "product"
    MIN = "min"
    MAX = "max"
    BAND = "band"
    BOR = "bor"
    BXOR = "bxor"

    def __repr__(self) -> str:
        return f"<RedOpType.{self.name}: {list(ReduceOp).index(self)}>"

    def __str__(self) -> str:
        return f"RedOpType.{self.name}"


class _ProcessGroup:
    """The default (world) group: an engine, the backend name, and the timeout."""

    def __init__(self, engine: Any, backend_name: str):
        self.engine, self.backend_name = engine, backend_name

    def rank(self) -> int:
        return self.engine.rank

    def size(self) -> int:
        return self.engine.world_size

    def __repr__(self) -> str:
        return (f"ProcessGroup(backend={self.backend_name!r}, rank={self.rank()}, "
                f"world_size={self.size()}, engine={self.engine.name!r})")


class GroupMember:
    WORLD: Optional[_ProcessGroup] = None
    NON_GROUP_MEMBER = -100


class _GroupNamespace:
    """``dist.group.WORLD``: the default group, once initialised."""

    @property
    def WORLD(self) -> Optional[_ProcessGroup]:
        return GroupMember.WORLD


group = _GroupNamespace()


class Work:
    """What a collective with ``async_op=True`` returns: ``wait()`` blocks (within the
    timeout) until the result is in the tensor and returns True."""

    def __init__(self, request: Any):
        self._request = request

    def wait(self, timeout: Any = None) -> bool:
        seconds = None if timeout is None else _seconds(timeout)
        self._request.wait(seconds)
        return True

    def is_completed(self) -> bool:
        return self._request.test()


# ------------------------------------------------------------------ the group
def is_available() -> bool:
    """True: the package is always there (a group of several processes needs mpi4py)."""
    return True


def is_mpi_available() -> bool:
    try:
        import mpi4py                          # noqa: F401,PLC0415 - only asking
    except ImportError:
        return False
    return True


def is_gloo_available() -> bool:
    return True                                # "gloo" runs on MPI, or alone for one rank


def is_nccl_available() -> bool:
    return False


def is_initialized() -> bool:
    return GroupMember.WORLD is not None


def _seconds(timeout: Any) -> float:
    if isinstance(timeout, datetime.timedelta):
        return timeout.total_seconds()
    if isinstance(timeout, (int, float)) and not isinstance(timeout, bool):
        return float(timeout)
    raise TypeError(f"timeout must be a datetime.timedelta (torch's type), got "
                    f"{type(timeout).__name__}")


def _env_int(name: str) -> int:
    value = os.environ.get(name)
    if value is None:
        raise ValueError(f"Error initializing torch.distributed using env:// rendezvous: "
                         f"environment variable {name} expected, but not set")
    try:
        return int(value)
    except ValueError:
        raise ValueError(f"Error initializing torch.distributed using env:// rendezvous: "
                         f"environment variable {name} is {value!r}, not an integer") from None


def _backend_name(backend_arg: Optional[str]) -> str:
    if backend_arg is None:
        return "gloo"
    name = str(backend_arg).lower()
    if name in ("gloo", "mpi", "cpu:gloo") or name.startswith("cpu:gloo,"):
        return "mpi" if name == "mpi" else "gloo"
    if name == "nccl" or "nccl" in name:
        if not backend.cuda_is_available():
            raise RuntimeError("ProcessGroupNCCL is only supported with GPUs, no GPUs found! "
                               "(use backend='gloo' on a CPU; tinyattn runs it on MPI)")
        raise RuntimeError("backend='nccl' is not implemented in tinyattn; use "
                           "backend='gloo' (tensors are copied to the host and reduced over "
                           "MPI)")
    raise ValueError(f"Invalid backend: {backend_arg!r}: tinyattn runs 'gloo' and 'mpi' "
                     f"(both on MPI through mpi4py); torch's other backends are not here")


def init_process_group(backend: Optional[str] = None, init_method: Optional[str] = None,
                       timeout: Any = None, world_size: int = -1, rank: int = -1,
                       store: Any = None, group_name: str = "", pg_options: Any = None,
                       device_id: Any = None) -> None:
    """Join the default group, as ``torch.distributed.init_process_group``.

    The rank and world size come from ``rank=``/``world_size=`` or, with ``init_method``
    None or ``"env://"``, from ``RANK`` and ``WORLD_SIZE`` (torchrun's variables, which
    ``python -m tinyattn.distributed.run`` sets); under ``mpirun`` without them, from MPI.
    They must agree with the processes MPI started: ranks cannot be made up by arguments.
    """
    if GroupMember.WORLD is not None:
        raise ValueError("trying to initialize the default process group twice!")
    if store is not None:
        raise ValueError("init_process_group(store=...): tinyattn has no key-value store; "
                         "MPI finds the other processes (leave store=None)")
    name = _backend_name(backend)
    seconds = _seconds(default_pg_timeout if timeout is None else timeout)
    if seconds <= 0:
        raise ValueError(f"timeout must be positive, got {seconds} s")
    if init_method not in (None, "env://") and not str(init_method).startswith(
            ("tcp://", "file://")):
        raise ValueError(f"init_method {init_method!r}: use 'env://' (the default), "
                         f"'tcp://host:port' or 'file://path'")
    from_mpi = _engine.launched_by_mpi()
    if (init_method in (None, "env://")) and not from_mpi:
        if rank == -1:
            rank = _env_int("RANK")
        if world_size == -1:
            world_size = _env_int("WORLD_SIZE")
    elif not from_mpi and (rank == -1 or world_size == -1):
        raise ValueError(f"init_method={init_method!r} needs rank= and world_size=")
    if from_mpi or world_size != 1:
        engine = _mpi_engine(seconds, name)
        _check_agrees(engine, rank, world_size)
    else:
        if rank not in (0, -1):
            raise ValueError(f"Invalid rank {rank} for world_size 1: rank must be 0")
        engine = _engine.LocalEngine(seconds)
    GroupMember.WORLD = _ProcessGroup(engine, name)


def _mpi_engine(seconds: float, name: str) -> Any:
    try:
        return _engine.MPIEngine(seconds)
    except ImportError as exc:
        raise RuntimeError(f"init_process_group(backend={name!r}) with several processes: "
                           f"{_engine.MPI_MISSING} ({exc})") from None


def _check_agrees(engine: Any, rank: int, world_size: int) -> None:
    if world_size not in (-1, engine.world_size):
        raise ValueError(
            f"init_process_group: world_size={world_size}, but MPI started "
            f"{engine.world_size} process(es) in this job. Start {world_size} with "
            f"python -m tinyattn.distributed.run --nproc_per_node {world_size} script.py (or "
            f"mpirun -n {world_size} python script.py); a process started on its own has "
            f"world_size 1")
    if rank not in (-1, engine.rank):
        raise ValueError(f"init_process_group: rank={rank}, but MPI numbers this process "
                         f"{engine.rank} (pass rank=int(os.environ['RANK']) or leave it out)")


def destroy_process_group(group: Any = None) -> None:
    """Leave the default group (the engine's communicator is freed)."""
    if GroupMember.WORLD is None:
        raise AssertionError("Process group cannot be None")
    GroupMember.WORLD.engine.close()
    GroupMember.WORLD = None


def _world(group_arg: Any = None) -> _ProcessGroup:
    if GroupMember.WORLD is None:
        raise ValueError(_NOT_INITIALIZED)
    if group_arg is not None and group_arg is not GroupMember.WORLD:
        raise ValueError("tinyattn has only the default group (group=None or "
                         "dist.group.WORLD); new_group is not supported")
    return GroupMember.WORLD


def get_rank(group: Any = None) -> int:
    return _world(group).rank()


def get_world_size(group: Any = None) -> int:
    return _world(group).size()


def get_backend(group: Any = None) -> str:
    return _world(group).backend_name


def new_group(ranks: Optional[Sequence[int]] = None, **_: Any) -> _ProcessGroup:
    world = _world()
    if ranks is None or sorted(ranks) == list(range(world.size())):
        return world
    raise NotImplementedError("new_group over a subset of ranks is not implemented in "
                              "tinyattn: use the default group")


# ------------------------------------------------------------------ collectives
def _check_tensor(t: Any, what: str, argname: str = "tensor") -> Tensor:
    if not isinstance(t, Tensor):
        raise TypeError(f"{what}: {argname} must be a Tensor, got {type(t).__name__}")
    return t


def _host_contiguous(t: Tensor) -> np.ndarray:
    """A C-contiguous NumPy copy of t (MPI reads and writes it as one buffer)."""
    return np.ascontiguousarray(backend.to_host(t._data)).copy()


def _write_back(t: Tensor, array: np.ndarray) -> None:
    xp = backend.get_array_module(t._data)
    t._data[...] = xp.asarray(array).astype(t._data.dtype, copy=False)
    t._bump_version()


def _wire(array: np.ndarray, op: str) -> np.ndarray:
    """What travels: MPI has no float16, bfloat16 or bool: they travel as float32 (exact for
    every value they hold; the sum is rounded back to the dtype once) or uint8."""
    if _engine.mpi_supports(array.dtype):
        return array
    if array.dtype == np.bool_:
        return array.astype(np.uint8)       # sum/max/or: any True; product/min/and: all
    return array.astype(np.float32)


def _finish(work: Any, async_op: bool) -> Optional[Work]:
    if async_op:
        return Work(work)
    work.wait()
    return None


def _op_name(op: Any, what: str) -> str:
    if isinstance(op, str) and op.lower() in {o.value for o in ReduceOp}:
        return op.lower()
    if not isinstance(op, ReduceOp):
        raise TypeError(f"{what}: op must be a dist.ReduceOp (SUM, AVG, PRODUCT, MIN, MAX), "
                        f"got {op!r}")
    return op.value


def all_reduce(tensor: Tensor, op: Any = ReduceOp.SUM, group: Any = None,
               async_op: bool = False) -> Optional[Work]:
    """``tensor`` becomes op over every rank's ``tensor`` (in place). AVG: the sum / world
    size, for floating tensors (an integer tensor raises, as torch's gloo does)."""
    world = _world(group)
    _check_tensor(tensor, "all_reduce")
    name = _op_name(op, "all_reduce")
    if name == "avg" and tensor.dtype.kind not in "fcV":
        raise RuntimeError(f"result type Float can't be cast to the desired output type "
                           f"{_torch_type(tensor)} (all_reduce with ReduceOp.AVG needs a "
                           f"floating tensor; use SUM and divide yourself)")
    if name in ("band", "bor", "bxor") and tensor.dtype.kind not in "biu":
        raise RuntimeError(f"all_reduce: ReduceOp.{name.upper()} needs an integer or bool "
                           f"tensor, got {tensor.dtype}")
    host = _host_contiguous(tensor)
    wire = _wire(host, "sum" if name == "avg" else name)
    what = f"all_reduce({ReduceOp(name).name}) of a {tensor.dtype} tensor {tensor.shape}"
    request = world.engine.allreduce(wire, "sum" if name == "avg" else name, what)

    def done() -> None:
        result = wire / world.size() if name == "avg" else wire
        if host.dtype == np.bool_:
            result = result != 0
        _write_back(tensor, np.asarray(result).astype(host.dtype))
    request.finish = done
    return _finish(request, async_op)


def _torch_type(t: Tensor) -> str:
    return {"int64": "Long", "int32": "Int", "int16": "Short", "int8": "Char",
            "uint8": "Byte", "bool": "Bool"}.get(str(t.dtype), str(t.dtype))


def broadcast(tensor: Tensor, src: Optional[int] = None, group: Any = None,
              async_op: bool = False, group_src: Optional[int] = None) -> Optional[Work]:
    """Every rank's ``tensor`` becomes rank ``src``'s (in place)."""
    world = _world(group)
    _check_tensor(tensor, "broadcast")
    root = group_src if src is None else src
    if root is None:
        raise ValueError("broadcast: pass src= (the rank whose tensor everyone receives)")
    if isinstance(root, bool) or not isinstance(root, (int, np.integer)) or \
            not 0 <= root < world.size():
        raise RuntimeError(f"broadcast: invalid root rank: {root} (the ranks are 0 to "
                           f"{world.size() - 1})")
    host = _host_contiguous(tensor)
    wire = host.view(np.uint8) if host.size else host       # bytes: any dtype travels exact
    request = world.engine.bcast(wire, int(root), f"broadcast(src={root}) of a "
                                                  f"{tensor.dtype} tensor {tensor.shape}")
    request.finish = lambda: _write_back(tensor, host)
    return _finish(request, async_op)


def _check_list(tensors: Any, like: Tensor, world: _ProcessGroup, what: str,
                argname: str) -> List[Tensor]:
    if not isinstance(tensors, (list, tuple)):
        raise TypeError(f"{what}: {argname} must be a list of Tensors, got "
                        f"{type(tensors).__name__}")
    if len(tensors) != world.size():
        raise RuntimeError(f"{what}: invalid {argname} (expected length {world.size()}, one "
                           f"tensor per rank, got {len(tensors)})")
    for index, t in enumerate(tensors):
        _check_tensor(t, what, f"{argname}[{index}]")
        if t.shape != like.shape:
            raise RuntimeError(f"{what}: invalid tensor size at index {index} (expected "
                               f"{like.shape}, got {t.shape})")
        if t.dtype != like.dtype:
            raise RuntimeError(f"{what}: invalid tensor type at index {index} (expected "
                               f"{like.dtype}, got {t.dtype})")
    return list(tensors)


def all_gather(tensor_list: List[Tensor], tensor: Tensor, group: Any = None,
               async_op: bool = False) -> Optional[Work]:
    """``tensor_list[r]`` becomes rank r's ``tensor``, on every rank."""
    world = _world(group)
    _check_tensor(tensor, "all_gather")
    outs = _check_list(tensor_list, tensor, world, "all_gather", "tensor_list")
    host = _host_contiguous(tensor)
    wire = host.view(np.uint8).reshape(-1)
    gathered = np.empty((world.size(), wire.size), np.uint8)
    request = world.engine.allgather(wire, gathered, f"all_gather of a {tensor.dtype} "
                                                     f"tensor {tensor.shape}")

    def done() -> None:
        for rank, out in enumerate(outs):
            _write_back(out, gathered[rank].view(host.dtype).reshape(host.shape))
    request.finish = done
    return _finish(request, async_op)


def all_gather_into_tensor(output_tensor: Tensor, input_tensor: Tensor, group: Any = None,
                           async_op: bool = False) -> Optional[Work]:
    """``output_tensor`` (world_size * n, ...) becomes every rank's input, concatenated along
    dim 0 (or stacked, for an output of shape (world_size, *input.shape))."""
    world = _world(group)
    _check_tensor(input_tensor, "all_gather_into_tensor", "input_tensor")
    _check_tensor(output_tensor, "all_gather_into_tensor", "output_tensor")
    if output_tensor.numel() != world.size() * input_tensor.numel() or \
            output_tensor.dtype != input_tensor.dtype:
        raise ValueError(f"all_gather_into_tensor: output tensor size must be equal to "
                         f"world_size times input tensor size ({world.size()} x "
                         f"{input_tensor.shape} {input_tensor.dtype}), got "
                         f"{output_tensor.shape} {output_tensor.dtype}")
    host = _host_contiguous(input_tensor)
    gathered = np.empty((world.size(), host.view(np.uint8).size), np.uint8)
    request = world.engine.allgather(host.view(np.uint8).reshape(-1), gathered,
                                     f"all_gather_into_tensor of {input_tensor.shape}")
    request.finish = lambda: _write_back(
        output_tensor, gathered.view(host.dtype).reshape(output_tensor.shape))
    return _finish(request, async_op)


def reduce_scatter(output: Tensor, input_list: List[Tensor], op: Any = ReduceOp.SUM,
                   group: Any = None, async_op: bool = False) -> Optional[Work]:
    """``output`` becomes op over every rank's ``input_list[this rank]``."""
    world = _world(group)
    _check_tensor(output, "reduce_scatter", "output")
    inputs = _check_list(input_list, output, world, "reduce_scatter", "input_list")
    stacked = np.stack([_host_contiguous(t) for t in inputs])
    return _reduce_scatter(world, output, stacked, _op_name(op, "reduce_scatter"), async_op,
                           f"reduce_scatter of {world.size()} x {output.shape}")


def reduce_scatter_tensor(output: Tensor, input: Tensor, op: Any = ReduceOp.SUM,
                          group: Any = None, async_op: bool = False) -> Optional[Work]:
    """``output`` becomes op over ranks of this rank's slice of ``input`` (world_size equal
    slices along dim 0)."""
    world = _world(group)
    _check_tensor(output, "reduce_scatter_tensor", "output")
    _check_tensor(input, "reduce_scatter_tensor", "input")
    if input.numel() != world.size() * output.numel() or input.dtype != output.dtype:
        raise ValueError(f"reduce_scatter_tensor: input tensor must be the same size as "
                         f"output size times world size ({world.size()} x {output.shape} "
                         f"{output.dtype}), got {input.shape} {input.dtype}")
    stacked = _host_contiguous(input).reshape((world.size(),) + tuple(output.shape))
    return _reduce_scatter(world, output, stacked, _op_name(op, "reduce_scatter_tensor"),
                           async_op, f"reduce_scatter_tensor of {input.shape}")


def _reduce_scatter(world: _ProcessGroup, output: Tensor, stacked: np.ndarray, name: str,
                    async_op: bool, what: str) -> Optional[Work]:
    if name == "avg" and output.dtype.kind not in "fcV":
        raise RuntimeError(f"result type Float can't be cast to the desired output type "
                           f"{_torch_type(output)} (ReduceOp.AVG needs a floating tensor)")
    wire_op = "sum" if name == "avg" else name
    wire = np.ascontiguousarray(_wire(stacked, wire_op))
    out = np.empty(wire.shape[1:], wire.dtype)
    request = world.engine.reduce_scatter(wire, out, wire_op, what)

    def done() -> None:
        result = out / world.size() if name == "avg" else out
        if stacked.dtype == np.bool_:
            result = result != 0
        _write_back(output, np.asarray(result).astype(stacked.dtype))
    request.finish = done
    return _finish(request, async_op)


def barrier(group: Any = None, async_op: bool = False, device_ids: Any = None
            ) -> Optional[Work]:
    """Wait until every rank has reached this call (within the timeout)."""
    world = _world(group)
    return _finish(world.engine.barrier("barrier"), async_op)
