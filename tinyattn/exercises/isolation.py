"""Run a learner's file in a separate process and collect its plain results.

``run_isolated`` writes the request into a private temporary folder, starts ``runner.py`` as
a new process (in its own session, so a Ctrl-C at the terminal reaches the checker, which
then stops the child), and waits at most ``timeout`` seconds. The child's output (the
learner's prints) is read as it comes by a thread that keeps the first ``OUTPUT_KEEP`` bytes
and counts the rest, so a print in a loop neither fills memory nor blocks the child. The
results are read back with ``transport.decode``, which validates every byte.

``run_in_process`` runs the same request on an already imported module in this process, for
trusted code only (the test suite's planted mistakes): no isolation, same messages.
"""
from __future__ import annotations

import os
import pickle
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

import numpy as np

from . import runner
from .transport import TransportError, decode, encode

__all__ = ["ChildRun", "run_isolated", "run_in_process", "RUNNER", "OUTPUT_KEEP"]

RUNNER = Path(__file__).resolve().parent / "runner.py"
OUTPUT_KEEP = 64 * 1024
Message = Tuple[Any, Dict[str, np.ndarray]]


@dataclass
class ChildRun:
    """What came back from one run of a learner's file."""

    imported: Optional[Message] = None          # import.bin: imported, or the import error
    parts: List[Optional[Message]] = field(default_factory=list)  # None: no (valid) message
    unreadable: List[str] = field(default_factory=list)           # why a message was refused
    done: bool = False
    timed_out: bool = False
    exit_code: Optional[int] = None
    seconds: float = 0.0
    progress: str = ""                          # what the child was doing last
    output: bytes = b""                         # the first OUTPUT_KEEP bytes it printed
    output_bytes: int = 0                       # how many it printed in all

    @property
    def output_text(self) -> str:
        return self.output.decode("utf-8", errors="replace")

    @property
    def printed(self) -> str:
        """'3 lines', or 'more than 650 lines (20,000,000 bytes)' when not all was kept."""
        lines = self.output.count(b"\n") + (0 if self.output.endswith(b"\n") else
                                            bool(self.output))
        if self.output_bytes > len(self.output):
            return f"more than {lines:,} lines ({self.output_bytes:,} bytes)"
        return f"{lines:,} line(s)"


def _read(path: Path, run: ChildRun, what: str) -> Optional[Message]:
    if not path.is_file():
        return None
    try:
        return decode(path.read_bytes())
    except (OSError, TransportError) as error:
        run.unreadable.append(f"{what}: {error}")
        return None


def _collect(folder: Path, run: ChildRun, count: int) -> None:
    run.imported = _read(folder / "import.bin", run, "import")
    run.parts = [_read(folder / f"part_{i}.bin", run, f"part {i + 1}") for i in range(count)]
    run.done = _read(folder / "done.bin", run, "end") is not None
    try:
        run.progress = (folder / "progress.txt").read_text(errors="replace")[:300]
    except OSError:
        run.progress = ""


class _OutputReader(threading.Thread):
    def __init__(self, stream: Any):
        super().__init__(daemon=True)
        self.stream, self.kept, self.total = stream, bytearray(), 0

    def run(self) -> None:
        while True:
            chunk = self.stream.read1(65536) if hasattr(self.stream, "read1") else \
                self.stream.read(65536)
            if not chunk:
                return
            self.total += len(chunk)
            if len(self.kept) < OUTPUT_KEEP:
                self.kept += chunk[:OUTPUT_KEEP - len(self.kept)]


def _stop(process: subprocess.Popen) -> None:
    """Kill the child and anything it started (its whole session, even after the child
    itself has exited: a process the learner's code left behind goes too)."""
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError, AttributeError):
        if process.poll() is None:
            process.kill()
    try:
        process.wait(timeout=5)
    except subprocess.TimeoutExpired:
        pass


def run_isolated(request: Dict[str, Any], timeout: float) -> ChildRun:
    """Run ``request`` (see runner.py) in a new process; at most ``timeout`` seconds."""
    run = ChildRun()
    with tempfile.TemporaryDirectory(prefix="tinyattn-check-") as tmp:
        folder = Path(tmp)
        with open(folder / "request.pkl", "wb") as f:
            pickle.dump(request, f)
        cwd = os.path.dirname(os.path.abspath(request["file"]))
        started = time.perf_counter()
        process = subprocess.Popen(
            [sys.executable, "-B", str(RUNNER), str(folder)], cwd=cwd,
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
            start_new_session=True)
        reader = _OutputReader(process.stdout)
        reader.start()
        try:
            run.exit_code = process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            run.timed_out = True
        finally:                                # also on KeyboardInterrupt: never leave it
            _stop(process)
            reader.join(timeout=5)
            process.stdout.close()
        run.seconds = time.perf_counter() - started
        run.output, run.output_bytes = bytes(reader.kept), reader.total
        _collect(folder, run, len(request["parts"]))
    return run


def run_in_process(module: Any, request: Dict[str, Any]) -> ChildRun:
    """The same request run here on ``module`` (trusted code only: no isolation)."""
    run = ChildRun()
    with tempfile.TemporaryDirectory(prefix="tinyattn-check-") as tmp:
        folder = Path(tmp)
        (folder / "import.bin").write_bytes(encode({"status": "imported"}, {}))
        runner.run_request(module, dict(request, in_process=True), str(folder))
        run.exit_code = 0
        _collect(folder, run, len(request["parts"]))
    return run
