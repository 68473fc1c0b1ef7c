"""A small progress bar for long loops (no dependency): step, rate, and any fields you set.

    bar = ProgressBar(total=1000, desc="train")
    for step in range(1000):
        bar.update(step + 1, loss=f"{loss:.3f}")
    bar.close()

On a terminal it redraws one line; when output goes to a file or a pipe it prints a plain line
every ``log_every`` seconds instead, so logs stay readable.
"""
from __future__ import annotations

import sys
import time
from typing import Any, Optional, TextIO

__all__ = ["ProgressBar"]


class ProgressBar:
    def __init__(self, total: int, desc: str = "", width: int = 24, stream: TextIO = None,
                 log_every: float = 10.0, start: int = 0):
        self.total, self.desc, self.width = max(total, 1), desc, width
        self.stream = stream or sys.stderr
        self.interactive = getattr(self.stream, "isatty", lambda: False)()
        self.log_every = log_every
        self.start_time = time.perf_counter()
        self.start_step = start
        self.last_draw = 0.0
        self.step = start
        self.fields: dict = {}

    def update(self, step: int, **fields: Any) -> None:
        self.step = step
        self.fields.update(fields)
        now = time.perf_counter()
        interval = 0.1 if self.interactive else self.log_every
        if now - self.last_draw >= interval or step >= self.total:
            self.last_draw = now
            self._draw(now)

    def _draw(self, now: float) -> None:
        done = self.step / self.total
        filled = int(self.width * done)
        elapsed = now - self.start_time
        rate = (self.step - self.start_step) / elapsed if elapsed > 0 else 0.0
        eta = (self.total - self.step) / rate if rate > 0 else 0.0
        extras = "  ".join(f"{k} {v}" for k, v in self.fields.items())
        line = (f"{self.desc} [{'#' * filled}{'.' * (self.width - filled)}] "
                f"{self.step}/{self.total} {elapsed:.0f}s<{eta:.0f}s {rate:.1f} it/s  {extras}")
        if self.interactive:
            self.stream.write("\r" + line + "\033[K")
        else:
            self.stream.write(line + "\n")
        self.stream.flush()

    def write(self, message: str) -> None:
        """Print a message without breaking the bar."""
        if self.interactive:
            self.stream.write("\r\033[K")
        self.stream.write(message + "\n")
        self.stream.flush()
        if self.interactive:
            self._draw(time.perf_counter())

    def close(self, final: Optional[str] = None) -> None:
        self._draw(time.perf_counter())
        if self.interactive:
            self.stream.write("\n")
        if final:
            self.stream.write(final + "\n")
        self.stream.flush()
