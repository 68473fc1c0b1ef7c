"""A small progress bar for long loops (no dependency): step, rate, and any fields you set.

    bar = ProgressBar(total=1000, desc="train")
    for step in range(1000):
        bar.update(step + 1, loss=f"{loss:.3f}")
    bar.close()

On a terminal it redraws one line; in a Jupyter notebook too (a carriage return, which the
notebook honours, without the terminal's erase code); when output goes to a file or a pipe
it prints a plain line every ``log_every`` seconds instead, so logs stay readable.

A reader that goes away (``python -m tinyattn train | head``) must not stop a training run:
``say`` and the bar then send that stream to /dev/null and carry on.
"""
from __future__ import annotations

import os
import sys
import time
from typing import Any, Optional, TextIO

__all__ = ["ProgressBar", "say"]


def _silence(stream: TextIO) -> None:
    """Point ``stream``'s file descriptor at /dev/null (its reader has gone)."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, stream.fileno())
        os.close(devnull)
    except (OSError, ValueError, AttributeError):
        pass


def say(text: str, stream: Optional[TextIO] = None) -> None:
    """Print a line and flush it; a closed pipe silences the stream instead of raising."""
    stream = stream or sys.stdout
    try:
        stream.write(text + "\n")
        stream.flush()
    except BrokenPipeError:
        _silence(stream)


def _is_notebook_stream(stream: Any) -> bool:
    """A Jupyter kernel's output stream (ipykernel's OutStream): not a terminal, but it
    redraws a line on a carriage return."""
    return type(stream).__module__.split(".")[0] == "ipykernel"


class ProgressBar:
    def __init__(self, total: int, desc: str = "", width: int = 24, stream: TextIO = None,
                 log_every: float = 10.0, start: int = 0):
        self.total, self.desc, self.width = max(total, 1), desc, width
        self.stream = stream or sys.stderr
        self.notebook = _is_notebook_stream(self.stream)
        self.interactive = self.notebook or getattr(self.stream, "isatty", lambda: False)()
        self.log_every = log_every
        self.start_time = time.perf_counter()
        self.start_step = start
        self.last_draw = 0.0
        self.step = start
        self.fields: dict = {}
        self.drawn: Optional[tuple] = None       # (step, fields) of the last line drawn

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
        fields = "  ".join(f"{k} {v}" for k, v in self.fields.items())
        line = (f"{self.desc} [{'#' * filled}{'.' * (self.width - filled)}] "
                f"{self.step}/{self.total} {elapsed:.0f}s<{eta:.0f}s {rate:.1f} it/s  {fields}")
        if self.notebook:                   # no erase code: pad over the longer last line
            width = len(line)
            line = line.ljust(getattr(self, "_width", 0))
            self._width = width
        erase = "" if self.notebook else "\033[K"
        self._emit("\r" + line + erase if self.interactive else line + "\n")
        self.drawn = (self.step, dict(self.fields))

    def _emit(self, text: str) -> None:
        try:
            self.stream.write(text)
            self.stream.flush()
        except BrokenPipeError:
            _silence(self.stream)

    def write(self, message: str) -> None:
        """Print a message without breaking the bar."""
        clear = "\r" + " " * getattr(self, "_width", 0) + "\r" if self.notebook else "\r\033[K"
        self._emit((clear if self.interactive else "") + message + "\n")
        if self.interactive:
            self._draw(time.perf_counter())

    def close(self, final: Optional[str] = None) -> None:
        if self.interactive or self.drawn != (self.step, self.fields):   # not the same line twice
            self._draw(time.perf_counter())
        self._emit(("\n" if self.interactive else "") + (final + "\n" if final else ""))
