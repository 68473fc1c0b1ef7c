"""``torch.profiler`` for tinyattn: time every op's forward and every backward, by name.

While a ``profile`` records, it sits in autograd's op-observer slot (``set_op_observer``):
``Function.apply`` hands it each op, which it times around the real call, and the engine
hands it each backward. Events nest (a ``record_function`` range holds the ops run inside
it), so each has a total time and a self time. When no profiler records, the slot is None
and an op pays one global read. Names follow torch's: forward ``aten::<op in snake case>``
(from the Function's class: ``LayerNorm`` -> ``aten::layer_norm``), backward
``<Class>Backward0`` (``SoftmaxBackward0``), ``record_function`` ranges their own name,
and ``ProfilerStep#N`` for each ``prof.step()`` of a schedule.
"""
from __future__ import annotations

import enum
import functools
import os
import re
import socket
import threading
import time
import traceback
import warnings
from typing import Any, Callable, Dict, Iterable, List, Optional

from .. import autograd
from ..atomic import atomic_write
from .events import Event, EventList

__all__ = ["profile", "record_function", "schedule", "tensorboard_trace_handler",
           "ProfilerActivity", "ProfilerAction", "supported_activities", "LegacyProfile"]

_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
_active: Optional["profile"] = None          # the profile recording now (one at a time)


class ProfilerActivity(enum.Enum):
    """What to record. tinyattn runs ops on the host, so CPU is what it records; CUDA is
    accepted (with a GPU, tinyattn's CPU times include waiting for CuPy's kernels)."""

    CPU = 0
    CUDA = 1


def supported_activities() -> set:
    return {ProfilerActivity.CPU}


class ProfilerAction(enum.Enum):
    NONE = 0
    WARMUP = 1
    RECORD = 2
    RECORD_AND_SAVE = 3


def schedule(*, wait: int, warmup: int, active: int, repeat: int = 0,
             skip_first: int = 0) -> Callable[[int], ProfilerAction]:
    """torch's schedule: skip ``skip_first`` steps, then cycles of ``wait`` idle steps,
    ``warmup`` steps run but not kept, ``active`` recorded steps (the last one saves: the
    trace handler is called); ``repeat`` cycles (0: for as long as steps come)."""
    if wait < 0 or warmup < 0 or active <= 0 or repeat < 0 or skip_first < 0:
        raise ValueError(f"schedule: needs wait, warmup, repeat, skip_first >= 0 and active > 0"
                         f", got wait={wait}, warmup={warmup}, active={active}, "
                         f"repeat={repeat}, skip_first={skip_first}")
    cycle = wait + warmup + active
    if warmup == 0:
        warnings.warn("Profiler won't be using warmup, this can skew profiler results",
                      UserWarning, stacklevel=2)

    def action(step: int) -> ProfilerAction:
        if step < skip_first:
            return ProfilerAction.NONE
        step -= skip_first
        if repeat > 0 and step / cycle >= repeat:
            return ProfilerAction.NONE
        position = step % cycle
        if position < wait:
            return ProfilerAction.NONE
        if position < wait + warmup:
            return ProfilerAction.WARMUP
        return ProfilerAction.RECORD if position < cycle - 1 else ProfilerAction.RECORD_AND_SAVE
    return action


def tensorboard_trace_handler(dir_name: str, worker_name: Optional[str] = None,
                              use_gzip: bool = False) -> Callable[["profile"], None]:
    """An ``on_trace_ready`` that writes each saved cycle to
    ``dir_name/<worker_name>.<time in ns>.pt.trace.json`` (TensorBoard's profiler plugin and
    Perfetto read it); ``worker_name`` defaults to ``<host>_<pid>``, as torch's."""
    def handler(prof: "profile") -> None:
        os.makedirs(dir_name, exist_ok=True)
        name = worker_name or f"{socket.gethostname()}_{os.getpid()}"
        path = os.path.join(dir_name, f"{name}.{time.time_ns()}.pt.trace.json")
        prof.export_chrome_trace(path)
        if use_gzip:
            import gzip  # noqa: PLC0415 - only when asked for
            with open(path, "rb") as f, atomic_write(path + ".gz", "wb") as raw, \
                    gzip.GzipFile(fileobj=raw, mode="wb") as out:
                out.write(f.read())
            os.remove(path)
    return handler


@functools.lru_cache(maxsize=None)
def _snake(name: str) -> str:
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])", "_", name).lower()


def _forward_name(cls: type) -> str:
    return cls.__name__ if cls._pytorch_style else "aten::" + _snake(cls.__name__)


def _backward_name(fn: Any) -> str:
    user_class = getattr(fn, "user_class", None)
    if user_class is not None:                       # a PyTorch-style custom Function
        return f"{user_class.__name__}Backward"
    return f"{type(fn).__name__}Backward0"


def _user_stack() -> List[str]:
    """The caller's frames outside tinyattn, innermost first, as 'file(line): function'."""
    frames = [f for f in traceback.extract_stack()
              if not os.path.abspath(f.filename).startswith(_PACKAGE_DIR)]
    return [f"{f.filename}({f.lineno}): {f.name}" for f in reversed(frames)]


def _owned_bytes(arrays: Iterable[Any], inputs: Iterable[Any] = ()) -> int:
    """Bytes of the arrays that are new memory (not a view of an input)."""
    total = 0
    for a in arrays:
        if a is None or not hasattr(a, "nbytes"):
            continue
        if any(getattr(a, "base", None) is not None and _shares(a, x) for x in inputs):
            continue
        total += int(a.nbytes)
    return total


def _shares(a: Any, b: Any) -> bool:
    try:
        import numpy as np  # noqa: PLC0415 - numpy is loaded; keeps the top imports small
        return bool(np.may_share_memory(a, b))
    except TypeError:
        return False


class _OpTimer:
    """The op observer a recording profile installs (see autograd.set_op_observer)."""

    def __init__(self, prof: "profile", below: Any) -> None:
        self.prof, self.below = prof, below

    def apply(self, cls: type, inputs: Any, options: Dict[str, Any]) -> Any:
        prof = self.prof
        if threading.get_ident() != prof._thread:
            return self._run(cls, inputs, options)
        shapes = [list(t.shape) for t in inputs] if prof.record_shapes else []
        event = prof._open(_forward_name(cls), "cpu_op", shapes)
        out = None
        try:
            out = self._run(cls, inputs, options)
        finally:
            if prof.profile_memory and out is not None:
                event.bytes = _owned_bytes([out._data], [t._data for t in inputs])
            prof._close(event)
        return out

    def _run(self, cls: type, inputs: Any, options: Dict[str, Any]) -> Any:
        mine = autograd.set_op_observer(self.below)
        try:
            return cls.apply(*inputs, **options)
        finally:
            autograd.set_op_observer(mine)

    def backward(self, fn: Any, grad: Any) -> Any:
        prof = self.prof
        run = fn.backward if self.below is None else functools.partial(self.below.backward, fn)
        if threading.get_ident() != prof._thread:
            return run(grad)
        shapes = [list(grad.shape)] if prof.record_shapes else []
        event = prof._open(_backward_name(fn), "cpu_op", shapes)
        grads = None
        try:
            grads = run(grad)
        finally:
            if prof.profile_memory and grads is not None:
                event.bytes = _owned_bytes(grads if isinstance(grads, tuple) else (grads,))
            prof._close(event)
        return grads


class profile:  # noqa: N801 - PyTorch's name
    """``torch.profiler.profile``: a context manager (or ``start()``/``stop()``) that records
    every op while it is active (or, with a ``schedule``, in its active steps; ``step()``
    marks the end of each step). ``key_averages()`` sums the events by name;
    ``export_chrome_trace(path)`` writes them for Perfetto. Records the thread that started
    it; ops in other threads run unrecorded."""

    def __init__(self, *, activities: Optional[Iterable[ProfilerActivity]] = None,
                 schedule: Optional[Callable[[int], ProfilerAction]] = None,
                 on_trace_ready: Optional[Callable[["profile"], Any]] = None,
                 record_shapes: bool = False, profile_memory: bool = False,
                 with_stack: bool = False, with_flops: bool = False,
                 with_modules: bool = False, **ignored: Any) -> None:
        self.activities = set(activities) if activities is not None else supported_activities()
        for activity in self.activities:
            if not isinstance(activity, ProfilerActivity):
                raise TypeError(f"profile: activities must be ProfilerActivity values, got "
                                f"{activity!r}")
        self.schedule = schedule if schedule is not None else (lambda step: ProfilerAction.RECORD)
        self.record_steps = schedule is not None    # ProfilerStep#N events, as torch's
        self.on_trace_ready = on_trace_ready
        self.record_shapes, self.profile_memory = bool(record_shapes), bool(profile_memory)
        self.with_stack = bool(with_stack)
        self.step_num = 0
        self.current_action = ProfilerAction.NONE
        self._events: List[Event] = []
        self._open_events: List[Event] = []
        self._step_event: Optional[Event] = None
        self._timer: Optional[_OpTimer] = None
        self._thread = threading.get_ident()

    # ------------------------------------------------------------------ the recording
    def _open(self, name: str, category: str, shapes: Any) -> Event:
        stack = _user_stack() if self.with_stack else None
        event = Event(name, category, time.perf_counter_ns(), shapes, stack, self._thread)
        self._events.append(event)
        self._open_events.append(event)
        return event

    def _close(self, event: Event) -> None:
        event.end_ns = time.perf_counter_ns()
        while self._open_events and self._open_events.pop() is not event:
            pass                             # an inner range left open by an error
        if self._open_events:
            parent = self._open_events[-1]
            parent.children_ns += event.end_ns - event.start_ns
            parent.children_bytes += event.bytes + event.children_bytes

    def _start_recording(self) -> None:
        global _active
        if _active is not None and _active is not self:
            raise RuntimeError("profile: another profiler is already recording; stop it first")
        self._events, self._open_events = [], []
        self._thread = threading.get_ident()
        self._timer = _OpTimer(self, autograd.set_op_observer(None))
        autograd.set_op_observer(self._timer)
        _active = self

    def _stop_recording(self) -> None:
        global _active
        self._end_step_event()
        if self._timer is not None and autograd.function._op_observer is self._timer:
            autograd.set_op_observer(self._timer.below)
        self._timer = None
        _active = None

    def _begin_step_event(self) -> None:
        if self.recording and self.record_steps:    # one name for all steps, as torch's
            self._step_event = self._open("ProfilerStep*", "user_annotation", [])
            self._step_event.trace_name = f"ProfilerStep#{self.step_num}"

    def _end_step_event(self) -> None:
        if self._step_event is not None and self.recording:
            self._close(self._step_event)
        self._step_event = None

    @property
    def recording(self) -> bool:
        return _active is self

    def _transit(self, previous: ProfilerAction, current: Optional[ProfilerAction]) -> None:
        keeps = (ProfilerAction.RECORD, ProfilerAction.RECORD_AND_SAVE)
        was, now = previous in keeps, current in keeps
        if was and (previous is ProfilerAction.RECORD_AND_SAVE or not now):
            if previous is ProfilerAction.RECORD and current is not None:
                warnings.warn("Incorrect schedule: RECORD followed by "
                              f"{current.name}", UserWarning, stacklevel=3)
            self._stop_recording()
            if self.on_trace_ready is not None:
                self.on_trace_ready(self)
            was = False
        if now and not was:
            self._start_recording()

    # ------------------------------------------------------------------ torch's API
    def start(self) -> None:
        self.step_num = 0
        self.current_action = self.schedule(0)
        self._transit(ProfilerAction.NONE, self.current_action)
        self._begin_step_event()

    def stop(self) -> None:
        self._end_step_event()
        self._transit(self.current_action, None)
        self.current_action = ProfilerAction.NONE

    def step(self) -> None:
        """End one training step: the schedule decides what the next one does."""
        self._end_step_event()
        previous = self.current_action
        self.step_num += 1
        self.current_action = self.schedule(self.step_num)
        self._transit(previous, self.current_action)
        self._begin_step_event()

    def __enter__(self) -> "profile":
        self.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    def events(self) -> EventList:
        return EventList(self._events, self.profile_memory, self.record_shapes)

    def key_averages(self, group_by_input_shape: bool = False,
                     group_by_stack_n: int = 0) -> EventList:
        return self.events().key_averages(group_by_input_shape, group_by_stack_n)

    def export_chrome_trace(self, path: str) -> None:
        self.events().export_chrome_trace(path)

    def export_stacks(self, path: str, metric: str = "self_cpu_time_total") -> None:
        self.events().export_stacks(path, metric)


class LegacyProfile(profile):
    """``torch.autograd.profiler.profile(enabled=True, use_cuda=False, record_shapes=False,
    profile_memory=False, with_stack=False, ...)``: the older spelling; ``enabled=False``
    records nothing. ``prof.table(...)`` is ``prof.events().table(...)``."""

    def __init__(self, enabled: bool = True, *, use_cuda: bool = False,
                 record_shapes: bool = False, profile_memory: bool = False,
                 with_stack: bool = False, **ignored: Any) -> None:
        super().__init__(record_shapes=record_shapes, profile_memory=profile_memory,
                         with_stack=with_stack)
        self.enabled = bool(enabled)

    def start(self) -> None:
        if self.enabled:
            super().start()

    def stop(self) -> None:
        if self.enabled:
            super().stop()

    def table(self, **options: Any) -> str:
        return self.events().table(**options)


class record_function:  # noqa: N801 - PyTorch's name
    """``with record_function("name"):`` (or ``@record_function("name")``): one event that
    spans the block, holding the ops run inside it. Does nothing when no profiler records."""

    def __init__(self, name: str, args: Optional[str] = None) -> None:
        self.name = name
        self._event: Optional[Event] = None
        self._prof: Optional[profile] = None

    def __enter__(self) -> "record_function":
        prof = _active
        if prof is not None and threading.get_ident() == prof._thread:
            self._prof, self._event = prof, prof._open(self.name, "user_annotation", [])
        return self

    def __exit__(self, *exc: Any) -> None:
        if self._event is not None and self._prof is not None and self._prof.recording:
            self._prof._close(self._event)
        self._event = self._prof = None

    def __call__(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        name = self.name

        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            with record_function(name):
                return fn(*args, **kwargs)
        return wrapper
