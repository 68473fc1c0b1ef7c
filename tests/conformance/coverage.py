"""The coverage report in docs/pytorch.md, generated from the conformance run's own cases.

How many of torch's op_db / module_db / optim_db entries tinyattn has (found by torch's names
exactly as test_op_db.py, test_module_db.py and test_optim_db.py find them), which it lacks,
how many cases the run makes of those it has, and which of them the skip table marks: never
compared (random numbers, ...), different on purpose (each with its reason), or known
disagreements still to fix. test_coverage_report.py fails when the committed report is not
what this produces; then run

    python -m tests.conformance.coverage --write      # rewrites the section in place
"""
from __future__ import annotations

import argparse
import collections
import pathlib
import sys
import textwrap
from typing import Any, Dict, Iterable, List

from .module_cases import module_cases, module_entries
from .op_cases import op_cases, op_entries
from .optim_cases import optim_cases, optim_entries
from .skips import TABLE

__all__ = ["BEGIN", "END", "DOC", "report", "committed_report"]

DOC = pathlib.Path(__file__).resolve().parents[2] / "docs" / "pytorch.md"
BEGIN = "<!-- conformance coverage: python -m tests.conformance.coverage --write -->"
END = "<!-- end of the generated conformance coverage -->"


def _category(row: Any) -> str:
    if row.kind in ("skip", "structure"):
        return "not compared"
    if row.reason.startswith("on purpose"):
        return "on purpose"
    if row.reason.startswith("torch bug not copied"):
        return "torch bug not copied"
    if row.reason.startswith("not implemented"):
        return "not implemented"
    return "to fix"


def _case_row(case: Any) -> Any:
    return getattr(case, "own", None) or getattr(case, "whole", None) \
        or getattr(case, "row", None)


def _case_counts(cases: Iterable[Any]) -> str:
    counts: Dict[str, int] = collections.Counter()
    total = 0
    for case in cases:
        total += 1
        row = _case_row(case)
        counts["compared" if row is None else _category(row)] += 1
    parts = [f"{counts[k]} {k}" for k in ("compared", "not compared", "on purpose",
                                          "torch bug not copied", "not implemented",
                                          "to fix") if counts[k]]
    return f"{total} cases: " + ", ".join(parts)


def _names(names: Iterable[str]) -> str:
    unique = sorted(set(names), key=lambda n: (n.lower(), n))
    return ", ".join(f"`{n}`" for n in unique) if unique else "none"


def _rows_text(db: str, category: str) -> List[str]:
    grouped: Dict[str, List[str]] = collections.defaultdict(list)
    for row in TABLE:
        if row.db == db and _category(row) == category:
            grouped[row.reason].append(row.name)
    lines = []
    for reason, names in sorted(grouped.items(), key=lambda item: sorted(item[1])[0]):
        lines.append(f"- {_names(names)}: {reason}")
    return lines


def report() -> str:
    """The section's text (between BEGIN and END)."""
    ops = op_entries()
    ops_present = [e for e in ops if e.present]
    modules = module_entries()
    modules_present = [e for e in modules if e.present]
    optimizers = optim_entries()
    optimizers_present = [e for e in optimizers if e.present]
    to_fix = collections.Counter(row.db for row in TABLE if _category(row) == "to fix")
    to_fix_names = {db: sorted({row.name for row in TABLE
                                if row.db == db and _category(row) == "to fix"})
                    for db in ("op", "module", "optim")}
    lines = [
        "| database | entries | tinyattn has | cases run | known disagreements (rows) |",
        "| --- | --- | --- | --- | --- |",
        f"| op_db (OpInfo) | {len(ops)} | {len(ops_present)} | {_case_counts(op_cases())} "
        f"| {to_fix['op']} |",
        f"| module_db (ModuleInfo) | {len(modules)} | {len(modules_present)} | "
        f"{_case_counts(module_cases())} | {to_fix['module']} |",
        f"| optim_db (OptimizerInfo) | {len(optimizers)} | {len(optimizers_present)} | "
        f"{_case_counts(optim_cases())} | {to_fix['optim']} |",
        "",
        "A case is one (entry, check, dtype) of op_db, one (module, check, mode, dtype) of "
        "module_db, one constructor variant of optim_db; by default each draws a few of its "
        "samples (all with `TINYATTN_CONFORMANCE=all`).",
        "",
        f"**Absent op_db entries ({len(ops) - len(ops_present)})**, by torch's name and "
        f"variant: {_names(e.key for e in ops if not e.present)}.",
        "",
        f"**Absent modules ({len(modules) - len(modules_present)}):** "
        f"{_names(e.key for e in modules if not e.present)}.",
        "",
        f"**Absent optimizers ({len(optimizers) - len(optimizers_present)}):** "
        f"{_names(e.key for e in optimizers if not e.present)}.",
        "",
        "**Different on purpose** (strict extensions: torch refuses, tinyattn computes; each "
        "also a row of the table above, *What differs on purpose*):",
    ]
    for db in ("op", "module", "optim"):
        lines += _rows_text(db, "on purpose")
    lines += ["", "**Torch bugs not copied** (torch's value is plainly wrong; tinyattn's is "
              "right, *Where torch has a documented bug* above):"]
    for db in ("op", "module", "optim"):
        lines += _rows_text(db, "torch bug not copied")
    lines += ["", "**Not compared** (the values cannot be):"]
    for db in ("op", "module", "optim"):
        lines += _rows_text(db, "not compared")
    lines += ["", "**Not implemented, refused loudly** (torch computes these; tinyattn raises "
              "an error that says so, expected failures):"]
    for db in ("op", "module", "optim"):
        lines += _rows_text(db, "not implemented")
    lines += ["", "**Known disagreements still to fix** (strict expected failures, reasons in "
              "`tests/conformance/skips.py`):"]
    for db, label in (("op", "ops"), ("module", "modules"), ("optim", "optimizers")):
        lines.append(f"- {label} ({len(to_fix_names[db])}): {_names(to_fix_names[db])}")
    return "\n".join(_wrapped(line) for line in lines)


def _wrapped(line: str) -> str:
    """A paragraph or list item wrapped under 100 characters (table rows as they are)."""
    if line.startswith("|") or len(line) < 100:
        return line
    indent = "  " if line.startswith("- ") else ""
    return textwrap.fill(line, width=99, subsequent_indent=indent, break_long_words=False,
                         break_on_hyphens=False)


def committed_report(text: str) -> str:
    """The section as committed in docs/pytorch.md (between BEGIN and END)."""
    if BEGIN not in text or END not in text:
        raise ValueError(f"{DOC} has no generated conformance section ({BEGIN!r} ... {END!r})")
    return text.split(BEGIN, 1)[1].split(END, 1)[0].strip("\n")


def main(argv: List[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true",
                        help="rewrite the section of docs/pytorch.md (else print it)")
    args = parser.parse_args(argv)
    fresh = report()
    if not args.write:
        print(fresh)
        return 0
    text = DOC.read_text(encoding="utf-8")
    before = text.split(BEGIN, 1)[0]
    after = text.split(END, 1)[1]
    DOC.write_text(f"{before}{BEGIN}\n{fresh}\n{END}{after}", encoding="utf-8")
    print(f"wrote the conformance coverage into {DOC}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
