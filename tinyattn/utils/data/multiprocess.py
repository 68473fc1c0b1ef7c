"""The DataLoader's worker processes, the main side (docs/data_workers.md).

The main process draws index batches from the sampler, as with ``num_workers=0``, and hands
them out round-robin, keeping ``prefetch_factor * num_workers`` tasks in flight; results
come back in any order on one shared queue and are given out in the order they were sent,
so the batches are the same, in the same order, as without workers. Waiting is bounded:
``timeout`` (torch's ``DataLoader timed out after N seconds``), and even without one a
worker that died is noticed within half a second. The workers stop when the pass ends
(unless ``persistent_workers``), when the loop is left early (the iterator is collected),
on an error, on Ctrl-C, and with the main process (daemon processes that also watch their
parent).
"""
from __future__ import annotations

import itertools
import multiprocessing
import os
import queue
import signal
import warnings
from typing import Any, Dict, List

from .worker import ExceptionWrapper, _IterableStop, worker_loop

__all__ = ["MultiProcessingIter", "resolve_context"]

_STATUS_CHECK_SECONDS = 0.5        # how often a wait looks for dead workers


def resolve_context(context: Any) -> Any:
    """A start-method name ('fork', 'spawn', 'forkserver') or a context, as torch takes."""
    if context is None:
        return multiprocessing.get_context()
    if isinstance(context, str):
        valid = multiprocessing.get_all_start_methods()
        if context not in valid:
            raise ValueError(f"multiprocessing_context option should specify a valid start "
                             f"method in {valid!r}, but got multiprocessing_context="
                             f"{context!r}")
        return multiprocessing.get_context(context)
    if not hasattr(context, "Process") or not hasattr(context, "Queue"):
        raise TypeError(f"multiprocessing_context option should be a valid context object "
                        f"or a string specifying the start method, but got "
                        f"multiprocessing_context={context!r}")
    return context


class MultiProcessingIter:
    """One pass over a DataLoader with ``num_workers > 0`` (reused across passes with
    ``persistent_workers``)."""

    def __init__(self, loader: Any, base_seed: int):
        self.loader = loader
        self._shutdown = True                      # nothing to stop until the workers exist
        self._owner_pid = os.getpid()              # a forked child inherits this object
        context = resolve_context(loader.multiprocessing_context)
        self.num_workers = loader.num_workers
        self.in_flight = loader.prefetch_factor * self.num_workers
        self.timeout = loader.timeout
        self.iterable = loader._iterable
        self.result_queue = context.Queue()
        self.done_event = context.Event()
        self.index_queues: List[Any] = []
        self.workers: List[Any] = []
        auto_collation = loader.batch_sampler is not None or (
            self.iterable and loader.batch_size is not None)
        for worker_id in range(self.num_workers):
            index_queue = context.Queue()
            index_queue.cancel_join_thread()
            worker = context.Process(
                target=worker_loop, daemon=True,
                args=(loader.dataset, index_queue, self.result_queue, self.done_event,
                      auto_collation, loader.collate_fn, loader.drop_last, loader.batch_size,
                      self.iterable, base_seed, loader.worker_init_fn, worker_id,
                      self.num_workers, os.getpid()))
            worker.start()
            self.index_queues.append(index_queue)
            self.workers.append(worker)
        self._shutdown = False
        self.epoch = 0
        self._reset(first=True)

    # ------------------------------------------------------------ one pass
    def _reset(self, first: bool = False) -> None:
        self.epoch += 1
        if self.iterable:
            self.index_iter: Any = itertools.repeat(None)     # each worker reads its stream
        else:
            sampler = self.loader.batch_sampler if self.loader.batch_sampler is not None \
                else self.loader.sampler
            self.index_iter = iter(sampler)
        self.send_index = self.received_index = 0
        self.task_worker: Dict[int, int] = {}
        self.arrived: Dict[int, Any] = {}
        self.active = [True] * self.num_workers
        self.worker_cycle = itertools.cycle(range(self.num_workers))
        if not first:
            for index_queue in self.index_queues:
                index_queue.put((self.epoch, None, "resume"))
        for _ in range(self.in_flight):
            self._send_task()

    def _send_task(self) -> None:
        for _ in range(self.num_workers):
            worker_id = next(self.worker_cycle)
            if self.active[worker_id]:
                break
        else:
            return                                  # every stream is exhausted
        indices = next(self.index_iter, StopIteration)
        if indices is StopIteration:
            return
        self.index_queues[worker_id].put((self.epoch, self.send_index, indices))
        self.task_worker[self.send_index] = worker_id
        self.send_index += 1

    def __iter__(self) -> "MultiProcessingIter":
        return self

    def __len__(self) -> int:
        return len(self.loader)

    def __next__(self) -> Any:
        try:
            return self._next()
        except KeyboardInterrupt:
            self.shutdown()
            raise

    def _next(self) -> Any:
        if self._shutdown:
            raise StopIteration
        while True:
            while self.received_index < self.send_index:
                if self.received_index in self.arrived or \
                        self.active[self.task_worker[self.received_index]]:
                    break
                del self.task_worker[self.received_index]     # a finished stream's task
                self.received_index += 1
            else:
                self._end_of_pass()
                raise StopIteration
            if self.received_index in self.arrived:
                batch = self.arrived.pop(self.received_index)
                del self.task_worker[self.received_index]
                self.received_index += 1
                self._send_task()
                if isinstance(batch, ExceptionWrapper):
                    batch.reraise()
                return batch
            epoch, send_index, batch = self._get()
            if epoch is None and isinstance(batch, ExceptionWrapper):
                self.shutdown()                      # worker_init_fn failed
                batch.reraise()
            if epoch != self.epoch:
                continue                             # a task of an abandoned pass
            if isinstance(batch, _IterableStop):
                self.active[batch.worker_id] = False
                self._send_task()
                continue
            self.arrived[send_index] = batch

    def _get(self) -> Any:
        waited = 0.0
        while True:
            step = _STATUS_CHECK_SECONDS if self.timeout <= 0 else \
                min(_STATUS_CHECK_SECONDS, self.timeout - waited)
            try:
                return self.result_queue.get(timeout=max(step, 1e-3))
            except queue.Empty:
                waited += step
            except (OSError, EOFError):
                # a batch's shared memory is fetched from its worker as it is unpickled:
                # a worker that died after sending cannot hand it over
                if all(w.is_alive() for w in self.workers):
                    raise
            dead = [w for w in self.workers if not w.is_alive()]
            if dead:
                self.shutdown()
                raise RuntimeError(f"DataLoader worker (pid(s) "
                                   f"{', '.join(str(w.pid) for w in dead)}) exited "
                                   f"unexpectedly ({_how_it_ended(dead[0].exitcode)})")
            if self.timeout > 0 and waited >= self.timeout:
                raise RuntimeError(f"DataLoader timed out after {self.timeout} seconds")

    def _end_of_pass(self) -> None:
        if not self.loader.persistent_workers:
            self.shutdown()

    # ------------------------------------------------------------ stopping
    def shutdown(self) -> None:
        """Stop the workers (they finish their task), then collect what is left."""
        if self._shutdown:
            return
        self._shutdown = True
        if os.getpid() != self._owner_pid:         # a copy in another loader's worker
            return
        self.done_event.set()
        for index_queue in self.index_queues:
            try:
                index_queue.put(None)
            except (OSError, ValueError):
                pass
        for worker in self.workers:
            worker.join(timeout=5)
            if worker.is_alive():
                worker.terminate()
                worker.join(timeout=5)
        self.arrived.clear()             # batches nobody reads: their memory goes with them
        for _ in range(self.in_flight + 2 * self.num_workers + 1):   # empty the pipe (a
            try:                 # stopped worker's batch cannot be unpickled: nothing to read)
                self.result_queue.get(timeout=0.05)
            except queue.Empty:
                break
            except (OSError, ValueError, EOFError):
                continue
        for q in self.index_queues + [self.result_queue]:
            q.cancel_join_thread()
            q.close()

    def __del__(self) -> None:
        if not getattr(self, "_shutdown", True):
            self.shutdown()


def _how_it_ended(exitcode: Any) -> str:
    if exitcode is not None and exitcode < 0:
        try:
            return f"killed by signal: {signal.Signals(-exitcode).name}"
        except ValueError:
            return f"killed by signal {-exitcode}"
    return f"exit code {exitcode}"


def warn_pin_memory() -> None:
    warnings.warn("'pin_memory' argument is set as true but no accelerator is found, then "
                  "device pinned memory won't be used.", UserWarning, stacklevel=3)
