"""What the profiler recorded: one ``Event`` per op call, per backward and per
``record_function`` range, their averages by name (``key_averages``), PyTorch's table and
the Chrome trace-event file (docs/precision_memory_time.md#profiling).

Times are microseconds, as torch's. An event's total time is from its start to its end; its
self time is the total less the totals of the events directly inside it. Memory: the bytes of
the arrays an op returned that own their memory (not views, not the op's temporaries); an
event's ``cpu_memory_usage`` counts the events inside it too, ``self_cpu_memory_usage`` not.
"""
from __future__ import annotations

import json
import os
import socket
from typing import Any, Dict, Iterable, List, Optional

from ..atomic import atomic_write

__all__ = ["Event", "EventList", "FunctionEventAvg", "format_time", "format_memory"]


class _NoDevice:
    """torch's device columns, for scripts that sort by them: tinyattn records host time
    only, so they are 0 (as torch's are on a CPU-only run)."""

    device_time_total = self_device_time_total = device_time = 0.0
    device_memory_usage = self_device_memory_usage = 0
    cuda_time_total = self_cuda_time_total = cuda_time = 0.0
    cuda_memory_usage = self_cuda_memory_usage = 0


class Event(_NoDevice):
    """One recorded call (torch's ``FunctionEvent``)."""

    __slots__ = ("name", "category", "start_ns", "end_ns", "input_shapes", "bytes",
                 "children_ns", "children_bytes", "stack", "thread", "trace_name")

    def __init__(self, name: str, category: str, start_ns: int, input_shapes: Any,
                 stack: Any, thread: int) -> None:
        self.name, self.category, self.start_ns = name, category, start_ns
        self.end_ns = start_ns
        self.input_shapes, self.stack, self.thread = input_shapes, stack, thread
        self.trace_name = name                 # "ProfilerStep#3" where name is "ProfilerStep*"
        self.bytes = self.children_ns = self.children_bytes = 0

    @property
    def key(self) -> str:
        return self.name

    @property
    def count(self) -> int:
        return 1

    @property
    def cpu_time_total(self) -> float:
        return (self.end_ns - self.start_ns) / 1e3

    @property
    def self_cpu_time_total(self) -> float:
        return (self.end_ns - self.start_ns - self.children_ns) / 1e3

    @property
    def cpu_time(self) -> float:
        return self.cpu_time_total

    @property
    def cpu_memory_usage(self) -> int:
        return self.bytes + self.children_bytes

    @property
    def self_cpu_memory_usage(self) -> int:
        return self.bytes

    def __repr__(self) -> str:
        return (f"<Event {self.name} cpu_time_total={self.cpu_time_total:.3f}us "
                f"input_shapes={self.input_shapes}>")


class FunctionEventAvg(_NoDevice):
    """Several events of one name (and shapes, with ``group_by_input_shape``) added up."""

    def __init__(self, key: str, input_shapes: Any, stack: Any) -> None:
        self.key, self.input_shapes, self.stack = key, input_shapes, stack
        self.count = 0
        self.cpu_time_total = self.self_cpu_time_total = 0.0
        self.cpu_memory_usage = self.self_cpu_memory_usage = 0

    def add(self, event: Any) -> "FunctionEventAvg":
        self.count += event.count
        self.cpu_time_total += event.cpu_time_total
        self.self_cpu_time_total += event.self_cpu_time_total
        self.cpu_memory_usage += event.cpu_memory_usage
        self.self_cpu_memory_usage += event.self_cpu_memory_usage
        return self

    @property
    def cpu_time(self) -> float:
        """The average total time of one call."""
        return self.cpu_time_total / max(self.count, 1)

    def __repr__(self) -> str:
        return (f"<FunctionEventAvg key={self.key} self_cpu_time={self.self_cpu_time_total:.3f}"
                f"us cpu_time={self.cpu_time:.3f}us count={self.count}>")


class EventList(list):
    """A list of events (or of averages) with torch's ``table``, ``key_averages`` and
    ``export_chrome_trace``."""

    def __init__(self, events: Iterable[Any] = (), profile_memory: bool = False,
                 record_shapes: bool = False) -> None:
        super().__init__(events)
        self.profile_memory, self.record_shapes = profile_memory, record_shapes

    @property
    def self_cpu_time_total(self) -> float:
        return sum(e.self_cpu_time_total for e in self)

    def key_averages(self, group_by_input_shape: bool = False,
                     group_by_stack_n: int = 0) -> "EventList":
        groups: Dict[Any, FunctionEventAvg] = {}
        for e in self:
            shapes = str(e.input_shapes) if group_by_input_shape else None
            stack = tuple((e.stack or [])[:group_by_stack_n]) if group_by_stack_n else None
            key = (e.name, shapes, stack)
            if key not in groups:
                groups[key] = FunctionEventAvg(e.name, e.input_shapes if group_by_input_shape
                                               else None, list(stack) if stack else None)
            groups[key].add(e)
        return EventList(groups.values(), self.profile_memory, self.record_shapes)

    def table(self, sort_by: Optional[str] = None, row_limit: int = 100,
              max_name_column_width: int = 55, max_shapes_column_width: int = 80,
              header: Optional[str] = None, top_level_events_only: bool = False,
              **ignored: Any) -> str:
        return _table(self, sort_by, row_limit, max_name_column_width,
                      max_shapes_column_width, header, self.profile_memory)

    def export_chrome_trace(self, path: str) -> None:
        write_chrome_trace(self, path, self.record_shapes, self.profile_memory)

    def export_stacks(self, path: str, metric: str = "self_cpu_time_total") -> None:
        """One line per recorded stack (``with_stack=True``), outermost frame first, then
        the op, and the metric in microseconds: the input of flamegraph.pl."""
        metric = metric.replace("cuda", "device")
        with atomic_write(path, "w") as f:
            for e in self:
                if e.stack:
                    frames = ";".join(list(reversed(e.stack)) + [e.name])
                    f.write(f"{frames} {int(getattr(e, metric))}\n")


def format_time(time_us: float) -> str:
    if time_us >= 1e6:
        return f"{time_us / 1e6:.3f}s"
    if time_us >= 1e3:
        return f"{time_us / 1e3:.3f}ms"
    return f"{time_us:.3f}us"


def format_memory(nbytes: int) -> str:
    for unit, size in (("GB", 2 ** 30), ("MB", 2 ** 20), ("KB", 2 ** 10)):
        if abs(nbytes) >= size:
            return f"{nbytes / size:.2f} {unit}"
    return f"{nbytes} B"


def _share(part: float, total: float) -> str:
    return "NaN" if total == 0 else f"{part * 100.0 / total:.2f}%"


_SORT_KEYS = ("cpu_time", "cpu_time_total", "self_cpu_time_total", "count",
              "cpu_memory_usage", "self_cpu_memory_usage", "device_time", "device_time_total",
              "self_device_time_total", "device_memory_usage", "self_device_memory_usage")


def _table(events: List[Any], sort_by: Optional[str], row_limit: int, name_width_max: int,
           shapes_width_max: int, header: Optional[str], profile_memory: bool) -> str:
    """torch's ``_build_table`` layout: a name column, 12-character columns, 2 spaces."""
    if not events:
        return ""
    if sort_by is not None:
        sort_by = sort_by.replace("cuda", "device").replace("xpu", "device")    # as torch
        if sort_by not in _SORT_KEYS:
            raise AttributeError(f"table: sort_by={sort_by!r} is not a column to sort by; "
                                 f"use one of {', '.join(_SORT_KEYS)}")
        events = sorted(events, key=lambda e: getattr(e, sort_by), reverse=True)
    has_shapes = any(e.input_shapes for e in events)
    name_width = min(max(len(e.key) for e in events) + 4, name_width_max)
    shapes_width = min(max(len(str(e.input_shapes)) for e in events) + 4, shapes_width_max)
    headers = ["Name", "Self CPU %", "Self CPU", "CPU total %", "CPU total", "CPU time avg"]
    if profile_memory:
        headers += ["CPU Mem", "Self CPU Mem"]
    headers.append("# of Calls")
    widths = [name_width] + [12] * (len(headers) - 1)
    if has_shapes:
        headers.append("Input Shapes")
        widths.append(shapes_width)
    row_format = "".join("{:>" + str(w) + "}  " for w in widths)
    separator = "".join("-" * w + "  " for w in widths)
    line_length = sum(w + 2 for w in widths) - 2
    total = sum(e.self_cpu_time_total for e in events)
    lines = []
    if header is not None:
        lines += ["=" * line_length, header]
    lines += [separator, row_format.format(*headers), separator]
    for e in events if row_limit < 0 else events[:row_limit]:   # torch: -1 means all rows
        name = e.key if len(e.key) < name_width_max - 3 else e.key[:name_width_max - 3] + "..."
        row = [name, _share(e.self_cpu_time_total, total), format_time(e.self_cpu_time_total),
               _share(e.cpu_time_total, total), format_time(e.cpu_time_total),
               format_time(e.cpu_time)]
        if profile_memory:
            row += [format_memory(e.cpu_memory_usage), format_memory(e.self_cpu_memory_usage)]
        row.append(e.count)
        if has_shapes:
            shapes = str(e.input_shapes)
            row.append(shapes if len(shapes) < shapes_width_max
                       else shapes[:shapes_width_max - 3] + "...")
        lines.append(row_format.format(*row))
    lines += [separator, f"Self CPU time total: {format_time(total)}"]
    return "\n".join(lines) + "\n"


def write_chrome_trace(events: Iterable[Event], path: str, record_shapes: bool,
                       profile_memory: bool) -> None:
    """The Chrome trace-event format (JSON object form) that chrome://tracing and Perfetto
    open: one complete event ("ph": "X") per call, times in microseconds."""
    pid = os.getpid()
    trace: List[Dict[str, Any]] = [
        {"ph": "M", "name": "process_name", "pid": pid, "tid": 0,
         "args": {"name": "tinyattn (CPU)"}}]
    origin = min((e.start_ns for e in events), default=0)
    for e in events:
        item: Dict[str, Any] = {"ph": "X", "cat": e.category, "name": e.trace_name, "pid": pid,
                                "tid": e.thread, "ts": (e.start_ns - origin) / 1e3,
                                "dur": (e.end_ns - e.start_ns) / 1e3, "args": {}}
        if record_shapes and e.input_shapes:
            item["args"]["Input Dims"] = e.input_shapes
        if profile_memory:
            item["args"]["Self CPU Mem (bytes)"] = e.bytes
        if e.stack:
            item["args"]["Call stack"] = ";".join(e.stack)
        trace.append(item)
    document = {"schemaVersion": 1, "displayTimeUnit": "ms", "host_name": socket.gethostname(),
                "traceEvents": trace}
    with atomic_write(path, "w") as f:
        json.dump(document, f)
