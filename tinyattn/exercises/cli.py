"""The command line: ``python -m tinyattn.exercises list|check|start`` and ``--solution``.

    python -m tinyattn.exercises list                        the exercises, in order
    python -m tinyattn.exercises start my_exercises          copy the stubs to a folder
    python -m tinyattn.exercises check softmax --path my_exercises
    python -m tinyattn.exercises check all --path my_exercises
    python -m tinyattn.exercises --solution softmax          the reference, with derivation

Exit status: 0 when every checked exercise passes, 1 when one does not, 2 for a usage error.
"""
from __future__ import annotations

import argparse
import shutil
import sys
from pathlib import Path
from typing import List, Optional, Sequence

from .catalog import EXERCISES, find_exercise
from .checker import SOLUTIONS_DIR, STUBS_DIR, check

__all__ = ["main", "start", "solution_source", "listing"]

PROG = "python -m tinyattn.exercises"


def start(folder: str) -> List[str]:
    """Copy every stub into ``folder`` (created if needed); never overwrite a learner's file.

    Returns one line per exercise saying what happened to it.
    """
    target = Path(folder)
    target.mkdir(parents=True, exist_ok=True)
    lines = []
    for exercise in EXERCISES:
        destination = target / exercise.filename
        if destination.exists():
            lines.append(f"  kept your {destination} (delete it for a fresh copy)")
        else:
            shutil.copyfile(STUBS_DIR / exercise.filename, destination)
            lines.append(f"  copied {destination}")
    return lines


def solution_source(name: str) -> str:
    """The reference solution file of exercise ``name``, derivation included."""
    exercise = find_exercise(name)
    return (SOLUTIONS_DIR / exercise.filename).read_text()


def listing(path: Optional[str] = None) -> str:
    """The exercises in order; with ``path``, whether each one passes there."""
    lines = ["tinyattn gradient-check exercises: write the backward, the checker tells you "
             "what is wrong.", ""]
    for exercise in EXERCISES:
        parts = ", ".join(part.name for part in exercise.parts)
        status = ""
        if path is not None:
            status = "  [passed]" if check(exercise, path).passed else "  [not yet]"
        lines.append(f"  {exercise.label:<20} {exercise.title}{status}")
        lines.append(f"  {'':<20} parts: {parts}; read {exercise.read}")
    lines += ["", f"Start:  {PROG} start my_exercises",
              f"Check:  {PROG} check broadcast --path my_exercises   (or: check all)",
              f"Stuck:  {PROG} --solution broadcast"]
    return "\n".join(lines)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=PROG, description="Gradient-check exercises: write the backward pass of an op; "
        "the checker runs a float64 gradient check and says what is wrong.")
    parser.add_argument("--solution", metavar="NAME",
                        help="print the reference solution of exercise NAME, with its "
                             "derivation")
    commands = parser.add_subparsers(dest="command", metavar="{list,check,start}")
    listing_parser = commands.add_parser("list", help="list the exercises in order")
    listing_parser.add_argument("--path", metavar="DIR",
                                help="also say which exercises pass in DIR")
    checking = commands.add_parser("check", help="check an exercise (or all of them)")
    checking.add_argument("name", metavar="NAME",
                          help="exercise name or number (softmax, 06), or 'all'")
    checking.add_argument("--path", metavar="DIR",
                          help="folder with your exercise files (default: the package's stubs)")
    starting = commands.add_parser("start", help="copy the exercise stubs into DIR")
    starting.add_argument("folder", metavar="DIR")
    return parser


def _lookup(names: Sequence[str]) -> Optional[list]:
    """Exercises by name, or None after printing why a name is unknown."""
    try:
        return [exercise for name in names
                for exercise in (EXERCISES if name == "all" else [find_exercise(name)])]
    except ValueError as error:
        print(f"error: {error}", file=sys.stderr)
        return None


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    if args.solution:
        found = _lookup([args.solution])
        if found is None:
            return 2
        print(f"# Reference solution (spoiler!): {found[0].filename}\n")
        print(solution_source(args.solution), end="")
        return 0
    if args.command == "list":
        print(listing(args.path))
        return 0
    if args.command == "start":
        print(f"Copying the exercises to {args.folder}:")
        print("\n".join(start(args.folder)))
        print(f"\nNext: open {Path(args.folder) / EXERCISES[0].filename}, fill in the backward "
              f"functions, then run\n  {PROG} check {EXERCISES[0].name} --path {args.folder}")
        return 0
    if args.command == "check":
        exercises = _lookup([args.name])
        if exercises is None:
            return 2
        if args.path is not None and not Path(args.path).is_dir():
            print(f"error: --path {args.path} is not a folder; create it with "
                  f"{PROG} start {args.path}", file=sys.stderr)
            return 2
        results = [check(exercise, args.path) for exercise in exercises]
        print("\n\n".join(result.text for result in results))
        if len(results) > 1:
            passed = sum(result.passed for result in results)
            print(f"\n{passed} of {len(results)} exercises pass.")
        return 0 if all(result.passed for result in results) else 1
    parser.print_help()
    return 2
