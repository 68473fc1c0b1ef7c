"""``DistributedDataParallel``: torch's data-parallel training, over ``tinyattn.distributed``
(docs/distributed.md#data-parallel-training).

    model = DistributedDataParallel(model)      # rank 0's parameters, broadcast to all
    loss = loss_fn(model(x_of_this_rank), y)    # each rank its own slice of the batch
    loss.backward()                             # .grad: the average over ranks

Each rank computes the gradient of its own slice; averaging the gradients over ranks gives
the gradient of the mean loss over the whole batch (equal slices), so every rank takes the
same optimizer step and the replicas stay identical. The averaging is done by all-reduce,
in buckets: parameters are grouped (in reverse order of ``parameters()``, roughly the order
their gradients become ready in the backward) into buckets of at most ``bucket_cap_mb``
(by default 25, the first one 1 MiB, as torch); a post-accumulate-grad hook on each
parameter marks it ready, and as soon as a bucket's parameters are all ready, its gradients
are copied into one flat buffer and its all-reduce is started without waiting, while the
backward goes on.
Buckets start in order (every rank must start the same collectives in the same order); the
last one to start waits for all of them and writes the averages back into ``.grad``.

``no_sync()`` (or ``require_backward_grad_sync = False`` before the forward) skips all of
that: gradients accumulate locally, and the next synchronised backward averages the sum.
"""
from __future__ import annotations

import contextlib
import time
from typing import Any, Dict, Iterator, List, Optional, Set

import numpy as np

from ... import backend
from ... import distributed as dist
from ...autograd import no_grad
from ...tensor import Tensor
from ..module import Module, Parameter

__all__ = ["DistributedDataParallel"]

_FIRST_BUCKET_BYTES = 1024 * 1024          # torch's dist._DEFAULT_FIRST_BUCKET_BYTES
_DEFAULT_BUCKET_MB = 25


class _Bucket:
    """Parameters whose gradients are all-reduced together, as one flat buffer."""

    def __init__(self, index: int, params: List[Parameter]):
        self.index, self.params = index, params
        self.numel = sum(p.numel() for p in params)
        self.dtype = params[0].dtype

    def __repr__(self) -> str:
        return f"_Bucket({self.index}, {len(self.params)} params, {self.numel} elements)"


def _buckets(params: List[Parameter], cap_bytes: int, first_cap: int) -> List[_Bucket]:
    """Reverse order of ``parameters()``; a new bucket when the cap would be passed or the
    dtype changes; the first bucket capped at ``first_cap`` (torch: 1 MiB unless
    ``bucket_cap_mb`` was given) so that the first all-reduce starts early."""
    groups: List[List[Parameter]] = []
    size = 0
    for p in reversed(params):
        nbytes = p.numel() * p.dtype.itemsize
        cap = first_cap if len(groups) <= 1 else cap_bytes
        if not groups or groups[-1][0].dtype != p.dtype or (size + nbytes > cap and size):
            groups.append([])
            size = 0
        groups[-1].append(p)
        size += nbytes
    return [_Bucket(i, g) for i, g in enumerate(groups)]


class DistributedDataParallel(Module):
    """torch's ``nn.parallel.DistributedDataParallel(module, ...)``: ``module`` runs on each
    rank, gradients are averaged over the ranks during the backward (see the module doc).

    Args kept from torch: ``broadcast_buffers`` (rank 0's buffers, e.g. BatchNorm's running
    statistics, sent to all at each forward), ``process_group`` (the default one),
    ``bucket_cap_mb``, ``find_unused_parameters`` (parameters the forward did not use
    count as ready with a zero gradient; one no rank used keeps its ``.grad``),
    ``gradient_as_bucket_view`` and ``static_graph`` (accepted; no effect on values).
    ``device_ids``/``output_device`` are for GPU modules, as in torch.
    """

    def __init__(self, module: Module, device_ids: Any = None, output_device: Any = None,
                 dim: int = 0, broadcast_buffers: bool = True, process_group: Any = None,
                 bucket_cap_mb: Optional[float] = None, find_unused_parameters: bool = False,
                 check_reduction: bool = False, gradient_as_bucket_view: bool = False,
                 static_graph: bool = False, **unused: Any):
        super().__init__()
        if not isinstance(module, Module):
            raise TypeError(f"DistributedDataParallel wraps an nn.Module, got "
                            f"{type(module).__name__}")
        world = dist.collectives._world(process_group)          # ValueError if not init
        params = [p for p in module.parameters() if p.requires_grad]
        if not params:
            raise RuntimeError("DistributedDataParallel is not needed when a module doesn't "
                               "have any parameter that requires a gradient.")
        devices = {p.device for p in module.parameters()}
        if device_ids is not None and devices == {"cpu"}:
            raise ValueError(f"DistributedDataParallel device_ids and output_device arguments "
                             f"only work with single-device/multiple-device GPU modules or "
                             f"CPU modules, but got device_ids {device_ids}, output_device "
                             f"{output_device}, and module parameters {devices}.")
        self.module = module
        self.process_group = world
        self.dim, self.broadcast_buffers = dim, bool(broadcast_buffers)
        self.find_unused_parameters = bool(find_unused_parameters)
        self.gradient_as_bucket_view, self.static_graph = gradient_as_bucket_view, static_graph
        self.device_ids, self.output_device = device_ids, output_device
        self.require_backward_grad_sync = True
        self.require_forward_param_sync = True
        cap_mb = _DEFAULT_BUCKET_MB if bucket_cap_mb is None else bucket_cap_mb
        self.bucket_bytes_cap = int(cap_mb * 1024 * 1024)
        object.__setattr__(self, "_params", params)
        first_cap = _FIRST_BUCKET_BYTES if bucket_cap_mb is None else self.bucket_bytes_cap
        object.__setattr__(self, "_buckets", _buckets(params, self.bucket_bytes_cap,
                                                      first_cap))
        object.__setattr__(self, "_bucket_of", {id(p): b for b in self._buckets
                                                for p in b.params})
        object.__setattr__(self, "_names", {id(p): n for n, p in module.named_parameters()})
        self._check_same_model()
        self._sync_module_states()
        self._reset_iteration(expect=False)
        object.__setattr__(self, "_hook_handles", [
            p.register_post_accumulate_grad_hook(self._grad_ready) for p in params])
        # what the last synchronised step did: (event, bucket, parameter, time.perf_counter())
        object.__setattr__(self, "_bucket_log", [])

    # ------------------------------------------------------------ construction
    def _check_same_model(self) -> None:
        """Every rank must wrap the same architecture: compare counts and sizes."""
        mine = [len(self._params)] + [p.numel() for p in self._params]
        sizes = Tensor._wrap(np.array([len(mine)], np.int64))
        everyone = [Tensor._wrap(np.zeros(1, np.int64)) for _ in range(self._world_size)]
        dist.all_gather(everyone, sizes)
        if len({int(t.item()) for t in everyone}) == 1:
            shapes = [Tensor._wrap(np.zeros(len(mine), np.int64))
                      for _ in range(self._world_size)]
            dist.all_gather(shapes, Tensor._wrap(np.array(mine, np.int64)))
            if all(s.tolist() == mine for s in shapes):
                return
        raise RuntimeError(f"DDP expects same model across all ranks, but rank "
                           f"{self._rank} has {len(self._params)} params (sizes {mine[1:8]}"
                           f"{'...' if len(mine) > 8 else ''}) and another rank differs")

    @property
    def _world_size(self) -> int:
        return self.process_group.size()

    @property
    def _rank(self) -> int:
        return self.process_group.rank()

    def _sync_module_states(self) -> None:
        """Rank 0's parameters and buffers, on every rank (one broadcast per tensor)."""
        with no_grad():
            for tensor in list(self.module.parameters()) + list(self.module.buffers()):
                dist.broadcast(tensor, src=0)

    # ------------------------------------------------------------ forward
    def forward(self, *inputs: Any, **kwargs: Any) -> Any:
        from ...autograd import is_grad_enabled     # noqa: PLC0415 - same layer, cheap
        if self._expect_hooks and self._ready:
            raise RuntimeError(self._unfinished_message())
        if self.broadcast_buffers and self._world_size > 1:
            with no_grad():
                for buffer in self.module.buffers():
                    dist.broadcast(buffer, src=0)
        output = self.module(*inputs, **kwargs)
        prepare = is_grad_enabled() and self.require_backward_grad_sync
        self.require_forward_param_sync = prepare
        self._reset_iteration(expect=prepare)
        if prepare:
            self._bucket_log.clear()        # what the last synchronised backward did
            self._bucket_log.append(("forward done", None, None, time.perf_counter()))
        if prepare and self.find_unused_parameters:
            used = _parameters_reached(output)
            for p in self._params:
                if id(p) not in used:
                    self._unused.add(id(p))
                    self._mark_ready(p)
        return output

    def _unfinished_message(self) -> str:
        missing = [self._names.get(id(p), "?") for p in self._params
                   if id(p) not in self._ready]
        return ("Expected to have finished reduction in the prior iteration before starting "
                "a new one. This error indicates that your module has parameters that were "
                "not used in producing loss. You can enable unused parameter detection by "
                "passing the keyword argument `find_unused_parameters=True` to "
                "`torch.nn.parallel.DistributedDataParallel`, and by making sure all "
                "`forward` function outputs participate in calculating loss. Parameters "
                f"which did not receive grad for rank {self._rank}: {', '.join(missing)}")

    @contextlib.contextmanager
    def no_sync(self) -> Iterator[None]:
        """Backward passes inside keep their gradients local (accumulate); the first one
        after it averages the accumulated sum."""
        old = self.require_backward_grad_sync
        self.require_backward_grad_sync = False
        try:
            yield
        finally:
            self.require_backward_grad_sync = old

    # ------------------------------------------------------------ the reducer
    def _reset_iteration(self, expect: bool) -> None:
        object.__setattr__(self, "_expect_hooks", expect)
        object.__setattr__(self, "_ready", set())
        object.__setattr__(self, "_unused", set())
        object.__setattr__(self, "_bucket_ready", [0] * len(self._buckets))
        object.__setattr__(self, "_next_bucket", 0)
        object.__setattr__(self, "_in_flight", [])
        object.__setattr__(self, "_seen_done", set())

    def _grad_ready(self, param: Parameter) -> None:
        """The post-accumulate-grad hook: ``param.grad`` holds its whole gradient."""
        if not self._expect_hooks:
            return
        if id(param) in self._ready:
            raise RuntimeError(
                f"Expected to mark a variable ready only once. Parameter "
                f"{self._names.get(id(param), '?')} was marked ready twice in one iteration "
                f"(a second backward through the same forward, or a parameter reused in "
                f"several reentrant backward passes); run the forward again first")
        self._mark_ready(param)

    def _mark_ready(self, param: Parameter) -> None:
        self._ready.add(id(param))
        bucket = self._bucket_of[id(param)]
        self._bucket_ready[bucket.index] += 1
        self._bucket_log.append(("ready", bucket.index, self._names.get(id(param)),
                                 time.perf_counter()))
        while self._next_bucket < len(self._buckets) and \
                self._bucket_ready[self._next_bucket] == \
                len(self._buckets[self._next_bucket].params):
            self._launch(self._buckets[self._next_bucket])
            self._next_bucket += 1
        for bucket, _, work in self._in_flight:   # MPI progresses inside these calls
            if bucket.index not in self._seen_done and work.is_completed():
                self._seen_done.add(bucket.index)
                self._bucket_log.append(("done", bucket.index, None, time.perf_counter()))
        if self._next_bucket == len(self._buckets):
            self._finalize()

    def _launch(self, bucket: _Bucket) -> None:
        """Copy the bucket's gradients (zeros for an unused one) into one flat buffer, plus
        one "used here" flag per parameter, and start its all-reduce."""
        xp = np
        flat = xp.zeros(bucket.numel + len(bucket.params), dtype=_wire_dtype(bucket.dtype))
        offset = 0
        for i, p in enumerate(bucket.params):
            n = p.numel()
            if p.grad is not None and id(p) not in self._unused:
                flat[offset:offset + n] = backend.to_host(p.grad._data).reshape(-1)
                flat[bucket.numel + i] = 1
            offset += n
        buffer = Tensor._wrap(flat)
        work = dist.all_reduce(buffer, op=dist.ReduceOp.SUM, async_op=True)
        self._bucket_log.append(("launch", bucket.index, None, time.perf_counter()))
        self._in_flight.append((bucket, buffer, work))

    def _finalize(self) -> None:
        """Wait for every bucket and write the averaged gradients back into ``.grad``."""
        world = self._world_size
        for bucket, buffer, work in self._in_flight:
            work.wait()
            flat = buffer._data
            offset = 0
            for i, p in enumerate(bucket.params):
                n = p.numel()
                used_somewhere = flat[bucket.numel + i] > 0
                if used_somewhere:
                    average = (flat[offset:offset + n] / world).reshape(p.shape)
                    xp = backend.get_array_module(p._data)
                    value = xp.asarray(average).astype(p.dtype, copy=False)
                    if p.grad is None:
                        p.grad = Tensor._wrap(value.copy())
                    else:
                        p.grad._data[...] = value
                        p.grad._bump_version()
                offset += n
            if bucket.index not in self._seen_done:
                self._bucket_log.append(("done", bucket.index, None, time.perf_counter()))
        self._reset_iteration(expect=False)

    def __getstate__(self) -> Dict[str, Any]:
        raise TypeError("DistributedDataParallel cannot be pickled: save model.module "
                        "(its state_dict) instead")


def _wire_dtype(dtype: np.dtype) -> np.dtype:
    """Gradients travel in their own dtype; float16 and bfloat16 as float32 (MPI lacks them)."""
    return dtype if dtype.kind in "fc" and dtype.itemsize >= 4 else np.dtype(np.float32)


def _parameters_reached(output: Any) -> Set[int]:
    """ids of the leaves the autograd graph of ``output`` (tensors in any nesting) reads."""
    roots = [t._ctx for t in _tensors_in(output) if t._ctx is not None]
    seen: Set[int] = set()
    leaves: Set[int] = set()
    stack = list(roots)
    while stack:
        fn = stack.pop()
        if id(fn) in seen:
            continue
        seen.add(id(fn))
        for t, parent in zip(fn.inputs, fn.parents):
            if parent is None:
                leaves.add(id(t))
            else:
                stack.append(parent)
    leaves.update(id(t) for t in _tensors_in(output) if t._ctx is None)
    return leaves


def _tensors_in(value: Any) -> List[Tensor]:
    if isinstance(value, Tensor):
        return [value]
    if isinstance(value, dict):
        value = list(value.values())
    if isinstance(value, (list, tuple)):
        return [t for v in value for t in _tensors_in(v)]
    return []
