"""``torch.utils.benchmark``'s ``Timer``: time a statement the way torch's tutorials do.

    t = Timer(stmt="x @ y", setup="x = torch.randn(64, 64); y = torch.randn(64, 64)",
              globals={"torch": tinyattn})
    print(t.timeit(100))                      # one measurement of 100 runs
    print(t.blocked_autorange())              # blocks of runs until min_run_time has passed

Each returns a ``Measurement`` that prints as torch's (the statement, the time per run in
us/ms/s, the median and interquartile range over blocks) and has its fields: ``times``
(seconds per run, one per block), ``mean``, ``median``, ``iqr``, ``number_per_run``.
tinyattn runs on NumPy, so there is one thread to report, and no CUDA synchronisation.
"""
from __future__ import annotations

import timeit as _timeit
from typing import Any, Dict, List, Optional

import numpy as np

__all__ = ["Timer", "Measurement"]


def _human_time(seconds: float) -> str:
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("us", 1e-6)):
        if seconds >= scale:
            return f"{seconds / scale:.2f} {unit}"
    return f"{seconds / 1e-9:.2f} ns"


class Measurement:
    """The times of one ``timeit`` or ``blocked_autorange`` call (seconds per run)."""

    def __init__(self, number_per_run: int, raw_times: List[float], stmt: str, setup: str,
                 label: Optional[str], sub_label: Optional[str],
                 description: Optional[str], num_threads: int) -> None:
        self.number_per_run, self.raw_times = number_per_run, raw_times
        self.stmt, self.setup, self.num_threads = stmt, setup, num_threads
        self.label, self.sub_label, self.description = label, sub_label, description

    @property
    def times(self) -> List[float]:
        return [t / self.number_per_run for t in self.raw_times]

    @property
    def mean(self) -> float:
        return float(np.mean(self.times))

    @property
    def median(self) -> float:
        return float(np.median(self.times))

    @property
    def iqr(self) -> float:
        return float(np.quantile(self.times, 0.75) - np.quantile(self.times, 0.25))

    @property
    def title(self) -> str:
        if self.label is not None:
            return f"{self.label}: {self.sub_label}" if self.sub_label else self.label
        return self.stmt

    def __repr__(self) -> str:
        lines = [f"<torch.utils.benchmark.utils.common.Measurement object at {hex(id(self))}>",
                 self.title]
        if self.description:
            lines.append(self.description)
        elif self.setup and self.setup != "pass":
            lines.append(f"setup: {self.setup}")
        runs, threads = self.number_per_run, f"{self.num_threads} thread" + (
            "s" if self.num_threads != 1 else "")
        if len(self.times) == 1:
            lines += [f"  {_human_time(self.times[0])}",
                      f"  1 measurement, {runs} runs , {threads}"]
        else:
            low, high = np.quantile(self.times, 0.25), np.quantile(self.times, 0.75)
            lines += [f"  Median: {_human_time(self.median)}",
                      f"  IQR:    {_human_time(self.iqr)} ({_human_time(low)[:-3]} to "
                      f"{_human_time(high)})",
                      f"  {len(self.times)} measurements, {runs} runs per measurement, "
                      f"{threads}"]
            if self.median > 0 and self.iqr / self.median > 0.1:
                lines += [f"  WARNING: Interquartile range is {100 * self.iqr / self.median:.1f}%"
                          f" of the median measurement.",
                          "           This suggests significant environmental influence."]
        return "\n".join(lines)

    __str__ = __repr__


class Timer:
    """``Timer(stmt="pass", setup="pass", globals=None, label=None, sub_label=None,
    description=None, num_threads=1)``, as torch's."""

    def __init__(self, stmt: str = "pass", setup: str = "pass", global_setup: str = "",
                 timer: Any = _timeit.default_timer, globals: Optional[Dict[str, Any]] = None,
                 label: Optional[str] = None, sub_label: Optional[str] = None,
                 description: Optional[str] = None, env: Optional[str] = None,
                 num_threads: int = 1, language: str = "python") -> None:
        if language != "python":
            raise ValueError(f"Timer: tinyattn times Python statements only, got "
                             f"language={language!r}")
        self.stmt, self.setup, self.num_threads = stmt, setup, int(num_threads)
        self.label, self.sub_label, self.description = label, sub_label, description
        self._timer = _timeit.Timer(stmt=stmt, setup=f"{global_setup}\n{setup}", timer=timer,
                                    globals=dict(globals or {}))

    def _measurement(self, number: int, raw: List[float]) -> Measurement:
        return Measurement(number, raw, self.stmt, self.setup, self.label, self.sub_label,
                           self.description, self.num_threads)

    def timeit(self, number: int = 1000000) -> Measurement:
        """One block of ``number`` runs (after one warm-up run)."""
        self._timer.timeit(1)
        return self._measurement(int(number), [self._timer.timeit(int(number))])

    def repeat(self, repeat: int = -1, number: int = -1) -> None:
        raise NotImplementedError("Timer.repeat is not provided by torch either; use "
                                  "blocked_autorange or timeit")

    def blocked_autorange(self, callback: Any = None, min_run_time: float = 0.2
                          ) -> Measurement:
        """Blocks of runs, each long enough (>= 0.1 ms, growing by 10x) to time reliably,
        until ``min_run_time`` seconds have been spent in them."""
        number = 1
        while True:                           # pick the block size
            spent = self._timer.timeit(number)
            if spent >= 1e-4 or number >= 10 ** 9:
                break
            number *= 10
        raw, total = [], 0.0
        while total < min_run_time or not raw:
            spent = self._timer.timeit(number)
            raw.append(spent)
            total += spent
            if callback is not None:
                callback(number, spent)
        return self._measurement(number, raw)

    def adaptive_autorange(self, threshold: float = 0.1, *, min_run_time: float = 0.01,
                           max_run_time: float = 10.0, callback: Any = None) -> Measurement:
        """Blocks until the IQR is within ``threshold`` of the median (or max_run_time)."""
        measurement = self.blocked_autorange(callback, min_run_time)
        spent = sum(measurement.raw_times)
        while spent < max_run_time and measurement.median > 0 and \
                measurement.iqr / measurement.median > threshold:
            more = self.blocked_autorange(callback, min_run_time)
            measurement.raw_times.extend(more.raw_times)
            spent += sum(more.raw_times)
        return measurement

