"""What a check reports: one ``PartResult`` per part, gathered in a ``CheckResult``.

Shared by the two judges (judge_ops.py, judge_engine.py) and the checker; text formatting of
failures lives here too, so every part of every track reads the same way.
"""
from __future__ import annotations

import re
import textwrap
from dataclasses import dataclass, field
from typing import Any, List, Optional

from .course import Diagnosis, Exercise

__all__ = ["PartResult", "CheckResult", "Failure", "fail", "wrap", "learner_failure",
           "printed_block"]

WIDTH = 92


@dataclass
class PartResult:
    part: str
    status: str                     # passed, failed, not_implemented, error, timeout
    text: str
    diagnosis: Optional[Diagnosis] = None
    case: Optional[str] = None
    max_abs_error: float = 0.0

    @property
    def passed(self) -> bool:
        return self.status == "passed"


@dataclass
class CheckResult:
    exercise: Exercise
    origin: str
    parts: List[PartResult] = field(default_factory=list)
    note: str = ""
    once: bool = False              # one call of each part (--once): show the prints
    output: str = ""                # what the learner's code printed (the first 64 KiB)
    output_bytes: int = 0           # how much it printed in all

    @property
    def passed(self) -> bool:
        return bool(self.parts) and all(p.passed for p in self.parts)

    @property
    def text(self) -> str:
        ex = self.exercise
        if self.once:
            lines = [f"{ex.label} ({ex.title}): each part ONCE, on its first input",
                     f"  file: {self.origin}", printed_block(self.output, self.output_bytes)]
        elif self.passed:
            lines = [f"{ex.label} ({ex.title}): PASSED"]
        else:
            lines = [f"{ex.label} ({ex.title}): not passed yet", f"  file: {self.origin}"]
        lines += [p.text for p in self.parts]
        if self.note:
            lines.append(self.note)
        if self.once:
            lines.append("  (one call only: run without --once for the full check)")
        return "\n".join(lines)


def printed_block(output: str, total_bytes: int, max_lines: int = 120) -> str:
    """What the learner's code printed, at most ``max_lines`` lines, between two markers."""
    lines = output.splitlines()
    if not lines:
        return "  (your code printed nothing)"
    shown = ["    " + line for line in lines[:max_lines]]
    extra = []
    if len(lines) > max_lines:
        extra.append(f"  ... {len(lines) - max_lines} more line(s)")
    if total_bytes > len(output.encode("utf-8", errors="replace")):
        extra.append(f"  ... (cut: your code printed {total_bytes:,} bytes in all)")
    return "\n".join(["  --- what your code printed ---"] + shown + extra +
                     ["  --- end of what it printed ---"])


class Failure(Exception):
    """Raised by a judge with the finished ``PartResult`` of a part that does not pass."""

    def __init__(self, result: PartResult):
        super().__init__(result.text)
        self.result = result


def wrap(text: str, indent: str = "    ") -> str:
    """Fill ``text`` to WIDTH columns; a number stays on the line of its unit ("2 s")."""
    kept = re.sub(r"(\d) (s|bytes|MiB)\b", "\\1\u00a0\\2", text)   # no break in "2 s"
    filled = textwrap.fill(kept, WIDTH, initial_indent=indent, subsequent_indent=indent,
                           break_on_hyphens=False)
    return filled.replace("\u00a0", " ")


def fail(part: str, status: str, lines: List[str], diagnosis: Optional[Diagnosis] = None,
         case: Optional[str] = None) -> Failure:
    label = {"not_implemented": "NOT WRITTEN YET", "timeout": "STOPPED"}.get(status,
                                                                             status.upper())
    text = "\n".join([f"  {part}: {label}"] + lines)
    return Failure(PartResult(part, status, text, diagnosis, case))


def learner_failure(exercise: Exercise, part: str, error: Any, where: str,
                    case: Any = None) -> Failure:
    """The part failed because the learner's code raised ``error`` (a runner error record)."""
    from .diagnose import explain_error
    if not isinstance(error, dict):
        return fail(part, "error", [wrap("the checker could not read what happened (a "
                                         "malformed result)")], Diagnosis("unreadable", ""))
    if error.get("type") == "NotImplementedError":
        name = error.get("function") or error.get("called")
        line = wrap(f"{name} still raises NotImplementedError: that is the function to fill "
                    f"in (the task and the hints are at the top of the file). Read "
                    f"{exercise.read} first.")
        return fail(part, "not_implemented", [line], Diagnosis("not_implemented", line))
    diagnosis, lines = explain_error(error, case)
    called = error.get("called", part)
    head = f"    your {called} raised an error ({where}):"
    return fail(part, "error", [head] + lines, diagnosis, where)
