"""The summary line of the conformance run: how many cases agreed, and every skip-table reason
with how many cases it covered (``tests/conftest.py`` calls ``write_summary`` at the end of
a run, in the process that prints, also under pytest-xdist)."""
from __future__ import annotations

import collections
from typing import Any

__all__ = ["write_summary"]

_PREFIX = "tests/conformance/"


def _reason(report: Any) -> str:
    if hasattr(report, "wasxfail"):
        return str(report.wasxfail)
    longrepr = report.longrepr
    text = longrepr[2] if isinstance(longrepr, tuple) else str(longrepr)
    return text[len("Skipped: "):] if text.startswith("Skipped: ") else text


def write_summary(terminalreporter: Any) -> None:
    stats = terminalreporter.stats
    mine = {key: [r for r in stats.get(key, []) if getattr(r, "nodeid", "")
                  .startswith(_PREFIX) and getattr(r, "when", "call") in ("call", "setup")]
            for key in ("passed", "failed", "skipped", "xfailed", "xpassed")}
    if not any(mine.values()):
        return
    reasons = collections.Counter(_reason(r) for r in mine["skipped"] + mine["xfailed"])
    terminalreporter.write_sep("-", "conformance with torch (tests/conformance)")
    terminalreporter.write_line(
        f"{len(mine['passed'])} cases agree, {len(mine['failed'])} disagree; "
        f"{len(mine['skipped'])} skipped and {len(mine['xfailed'])} known disagreements, "
        f"all by the skip table (tests/conformance/skips.py):")
    for reason, count in sorted(reasons.items(), key=lambda item: (-item[1], item[0])):
        terminalreporter.write_line(f"  {count:4d}  {reason}")
