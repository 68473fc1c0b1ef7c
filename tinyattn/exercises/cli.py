"""The command line: ``python -m tinyattn.exercises list|check|start`` and ``--solution``.

    python -m tinyattn.exercises list                        the exercises, by track
    python -m tinyattn.exercises start my_exercises          copy the stubs to a folder
    python -m tinyattn.exercises check softmax --path my_exercises
    python -m tinyattn.exercises check softmax --path my_exercises --once   one call, prints
    python -m tinyattn.exercises check all --path my_exercises
    python -m tinyattn.exercises --solution softmax          the reference, with derivation

``check all`` prints each exercise's result as soon as it is decided. Exit status: 0 when
every checked exercise passes, 1 when one does not (or was stopped), 2 for a usage error,
130 when interrupted with Ctrl-C.
"""
from __future__ import annotations

import argparse
import errno
import os
import shutil
import sys
from pathlib import Path
from typing import List, Optional, Sequence

from .catalog import EXERCISES, TRACKS, find_exercise
from .checker import DEFAULT_TIMEOUT, SOLUTIONS_DIR, STUBS_DIR, check

__all__ = ["main", "start", "solution_source", "listing", "StartError"]

PROG = "python -m tinyattn.exercises"


class StartError(ValueError):
    """``start`` cannot copy the exercises there; the message says why and what to do."""


def _folder_problem(folder: str, option: str) -> Optional[str]:
    if not str(folder).strip():
        return f"{option} is empty: give a folder name, e.g. my_exercises"
    return None


def start(folder: str) -> List[str]:
    """Copy every stub into ``folder`` (created if needed); never overwrite a learner's file.

    Returns one line per exercise saying what happened to it; raises ``StartError`` when the
    folder cannot be used (a file of that name, no permission, an empty name).
    """
    problem = _folder_problem(folder, "the folder")
    if problem:
        raise StartError(problem)
    target = Path(folder)
    if target.exists() and not target.is_dir():
        raise StartError(f"{folder} is a file, not a folder; choose another name (start "
                         f"creates the folder)")
    try:
        target.mkdir(parents=True, exist_ok=True)
        lines = []
        for exercise in EXERCISES:
            destination = target / exercise.filename
            if destination.exists():
                lines.append(f"  kept your {destination} (delete it for a fresh copy)")
            else:
                shutil.copyfile(STUBS_DIR / exercise.filename, destination)
                lines.append(f"  copied {destination}")
    except OSError as error:
        why = "permission denied" if error.errno in (errno.EACCES, errno.EPERM, errno.EROFS) \
            else (error.strerror or str(error))
        raise StartError(f"cannot write into {folder}: {why}; choose a folder you can write "
                         f"to (for example one in your home directory)") from None
    return lines


def solution_source(name: str) -> str:
    """The reference solution file of exercise ``name``, derivation included."""
    exercise = find_exercise(name)
    return (SOLUTIONS_DIR / exercise.filename).read_text()


def listing(path: Optional[str] = None, timeout: float = DEFAULT_TIMEOUT,
            echo=None) -> str:
    """The exercises by track; with ``path``, whether each one passes there. ``echo``, when
    given, receives each line as soon as it is known (checking takes a moment per exercise)."""
    out: List[str] = []

    def emit(line: str) -> None:
        out.append(line)
        if echo is not None:
            echo(line)

    emit("tinyattn exercises: write it yourself, the checker tells you what is wrong.")
    for track, what in TRACKS.items():
        emit("")
        emit(f"The {track} track: {what}")
        for exercise in (e for e in EXERCISES if e.track == track):
            status = ""
            if path is not None:
                status = "  [passed]" if check(exercise, path, timeout).passed else "  [not yet]"
            parts = ", ".join(part.name for part in exercise.parts)
            emit(f"  {exercise.label:<20} {exercise.title}{status}")
            emit(f"  {'':<20} parts: {parts}; read {exercise.read}")
    for line in ["", f"Start:  {PROG} start my_exercises",
                 f"Check:  {PROG} check broadcast --path my_exercises   (or: check all)",
                 f"Debug:  {PROG} check broadcast --path my_exercises --once",
                 f"Stuck:  {PROG} --solution broadcast"]:
        emit(line)
    return "\n".join(out)


def _positive_seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of seconds, got {text!r}") \
            from None
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be more than 0 seconds, got {value}")
    return value


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=PROG, description="Exercises: write the backward of each op (ops track), the "
        "autograd engine itself (engine track) or attention's systems tricks (systems "
        "track); the checker says what is wrong.")
    parser.add_argument("--solution", metavar="NAME",
                        help="print the reference solution of exercise NAME, with its "
                             "derivation")
    commands = parser.add_subparsers(dest="command", metavar="{list,check,start}")
    listing_parser = commands.add_parser("list", help="list the exercises in order")
    listing_parser.add_argument("--path", metavar="DIR",
                                help="also say which exercises pass in DIR")
    checking = commands.add_parser("check", help="check an exercise (or all of them)")
    checking.add_argument("name", metavar="NAME",
                          help="exercise name or number (softmax, 06), a part (nll), or 'all'")
    checking.add_argument("--path", metavar="DIR",
                          help="folder with your exercise files (default: the package's stubs)")
    checking.add_argument("--once", action="store_true",
                          help="call each function once, on one small input, and show what "
                               "your code prints (for debugging with print)")
    checking.add_argument("--timeout", type=_positive_seconds, default=DEFAULT_TIMEOUT,
                          metavar="SECONDS", help=f"time limit per exercise (default "
                                                  f"{DEFAULT_TIMEOUT:g})")
    starting = commands.add_parser("start", help="copy the exercise stubs into DIR")
    starting.add_argument("folder", metavar="DIR")
    return parser


def _error(message: str) -> int:
    print(f"error: {message}", file=sys.stderr)
    return 2


def _lookup(names: Sequence[str]) -> Optional[list]:
    """Exercises by name, or None after printing why a name is unknown."""
    try:
        return [exercise for name in names
                for exercise in (EXERCISES if name == "all" else [find_exercise(name)])]
    except ValueError as error:
        _error(str(error))
        return None


def _check_path(path: Optional[str], command: str) -> Optional[str]:
    if path is None:
        return None
    problem = _folder_problem(path, "--path")
    if problem:
        return problem
    if not Path(path).exists():
        return f"--path {path} does not exist; create it with {PROG} start {path}"
    if not Path(path).is_dir():
        return f"--path {path} is a file; give the folder that holds your exercise files"
    if not os.access(path, os.R_OK | os.X_OK):
        return f"--path {path} cannot be read (permission denied)"
    return None


def _run_check(args: argparse.Namespace) -> int:
    exercises = _lookup([args.name])
    if exercises is None:
        return 2
    problem = _check_path(args.path, "check")
    if problem:
        return _error(problem)
    target = args.name if len(exercises) == 1 else None
    passed = 0
    for i, exercise in enumerate(exercises):
        result = check(target or exercise, args.path, args.timeout, once=args.once)
        print(("\n" if i else "") + result.text, flush=True)
        passed += result.passed
    if len(exercises) > 1:
        print(f"\n{passed} of {len(exercises)} exercises pass.")
    return 0 if passed == len(exercises) else 1


def _main(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    if args.solution:
        found = _lookup([args.solution])
        if found is None:
            return 2
        print(f"# Reference solution (spoiler!): {found[0].filename}\n")
        print(solution_source(args.solution), end="")
        return 0
    if args.command == "list":
        problem = _check_path(args.path, "list")
        if problem:
            return _error(problem)
        listing(args.path, echo=lambda line: print(line, flush=True))
        return 0
    if args.command == "start":
        try:
            lines = start(args.folder)
        except StartError as error:
            return _error(str(error))
        print(f"Copied the exercises to {args.folder}:")
        print("\n".join(lines))
        print(f"\nNext: open {Path(args.folder) / EXERCISES[0].filename} (ops track), "
              f"{Path(args.folder) / EXERCISES[13].filename} (engine track) or "
              f"{Path(args.folder) / EXERCISES[20].filename} (systems track), fill in the "
              f"functions, then run\n  {PROG} check {EXERCISES[0].name} --path {args.folder}")
        return 0
    if args.command == "check":
        return _run_check(args)
    parser.print_help()
    return 2


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    try:
        return _main(args, parser)
    except KeyboardInterrupt:
        print("\ninterrupted (Ctrl-C): nothing after this point was checked", file=sys.stderr)
        return 130
    except BrokenPipeError:                     # `... | head` stopped reading: stop quietly
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141                              # 128 + SIGPIPE, as tinyattn's other commands
