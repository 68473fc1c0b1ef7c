"""Check a learner's exercise file: run it in its own process, judge the results here.

    result = check("softmax", path="my_exercises")
    result.passed, result.text, result.parts[0].diagnosis.kind

``check`` prepares every case of every part (inputs, upstream gradients; for the engine track,
scenarios), runs the learner's file in a separate process (isolation.py, runner.py) with a
time limit, and judges what came back with the reference solutions, in this process:
judge_ops.py for the ops track, judge_engine.py for the engine track. Learner code never runs
here, so nothing it does (exit, monkeypatching NumPy, printing, looping) can change a verdict.

``once=True`` runs each part once, on its first (small) input, and keeps what the learner's
code printed: for reading a debug print that a full check would repeat hundreds of times.
``check_module`` judges an already imported module in this process: trusted code only.
"""
from __future__ import annotations

import functools
import os
from pathlib import Path
from types import ModuleType
from typing import Any, List, Optional, Tuple, Union

from .catalog import EXERCISES, Exercise, find_exercise
from .course import Diagnosis
from .diagnose import explain_error
from .isolation import ChildRun, run_in_process, run_isolated
from .judge_engine import engine_request, judge_engine_part, prepare_engine_part
from .judge_ops import judge_op_part, op_request, prepare_part
from .results import CheckResult, PartResult, wrap
from .runner import load_source

__all__ = ["check", "check_module", "check_all", "load_file", "CheckResult", "PartResult",
           "STUBS_DIR", "SOLUTIONS_DIR", "DEFAULT_TIMEOUT"]

PACKAGE_DIR = Path(__file__).resolve().parent
STUBS_DIR = PACKAGE_DIR / "stubs"
SOLUTIONS_DIR = PACKAGE_DIR / "solutions"
DEFAULT_TIMEOUT = 30.0


def load_file(path: Union[str, Path]) -> ModuleType:
    """Import an exercise file by path (its name starts with a digit, so not by name).
    This runs the file in this process: for trusted code (reference solutions, tests)."""
    path = Path(path)
    return load_source(f"tinyattn_exercise_{path.stem}", str(path))   # never stale bytecode


@functools.lru_cache(maxsize=None)
def _reference(number: int) -> ModuleType:
    """The reference solution of an ops exercise (stateless, so one copy is shared)."""
    return load_file(SOLUTIONS_DIR / find_exercise(str(number)).filename)


def _fresh_reference(exercise: Exercise):
    return lambda: load_file(SOLUTIONS_DIR / exercise.filename)


def _plan(exercise: Exercise, file: str, once: bool, only: Optional[str]
          ) -> Tuple[List[Tuple[Any, Any]], dict]:
    parts = [p for p in exercise.parts if only is None or p.name == only]
    plan, requests = [], []
    for part in parts:
        if part.kind == "op":
            prepared = prepare_part(exercise, part, _reference(exercise.number), once)
            requests.append(op_request(part, prepared))
        else:
            prepared = prepare_engine_part(exercise, part, once)
            requests.append(engine_request(part, prepared))
        plan.append((part, prepared))
    return plan, {"file": file, "parts": requests}


def _missing_part(part: Any, run: ChildRun, timeout: float) -> PartResult:
    """The part has no (readable) result: say why, from how the child process ended."""
    doing = f": {run.progress}" if run.progress else ""
    if run.timed_out:
        why = (f"It printed {run.output_bytes:,} bytes: printing takes time; print less."
               if run.output_bytes > 10 * 2**20 else
               "An endless loop? (A slow machine? Allow more with --timeout SECONDS.)")
        text = wrap(f"stopped after {timeout:g} s, your code was still running{doing}. {why}")
        return PartResult(part.name, "timeout", f"  {part.name}: STOPPED\n{text}",
                          Diagnosis("timeout", text))
    if run.unreadable:
        text = wrap(f"the results could not be read ({run.unreadable[0]}). Does your file "
                    f"change NumPy or the standard library (np.something = ...)?")
    else:
        text = wrap(f"the process running your code ended before this part was checked (exit "
                    f"status {run.exit_code}; it was running{doing or ' your code'}). Does "
                    f"your code call os._exit(), or crash Python?")
    return PartResult(part.name, "error", f"  {part.name}: ERROR\n{text}",
                      Diagnosis("ended", text))


def _import_failure(file: str, run: ChildRun, timeout: float) -> Optional[PartResult]:
    if run.imported is None:
        if run.timed_out:
            text = wrap(f"importing {file} did not finish in {timeout:g} s: code at the top "
                        f"level of the file runs forever?")
        else:
            text = wrap(f"the process importing {file} ended before it finished (exit status "
                        f"{run.exit_code}): os._exit() at the top level of the file?")
        return PartResult("all", "error", text, Diagnosis("ended", text))
    record = run.imported[0]
    if not isinstance(record, dict) or record.get("status") == "imported":
        return None
    syntax = record.get("syntax")
    if isinstance(syntax, dict):
        text = (f"    {file} does not parse: line {syntax.get('line')}: {syntax.get('message')}"
                f"\n      {syntax.get('text')}")
        return PartResult("all", "error", text, Diagnosis("syntax", text))
    error = record.get("error") if isinstance(record.get("error"), dict) else {}
    diagnosis, lines = explain_error(error, None)
    text = "\n".join([f"    importing {file} failed:"] + lines)
    return PartResult("all", "error", text, diagnosis)


def _judge(exercise: Exercise, plan: List[Tuple[Any, Any]], run: ChildRun, origin: str,
           timeout: float, once: bool) -> CheckResult:
    result = CheckResult(exercise, origin, once=once, output=run.output_text,
                         output_bytes=run.output_bytes)
    failure = _import_failure(origin, run, timeout)
    if failure is not None:
        result.parts.append(failure)
        return result
    for index, (part, prepared) in enumerate(plan):
        message = run.parts[index] if index < len(run.parts) else None
        if message is None:
            result.parts.append(_missing_part(part, run, timeout))
            continue
        record, arrays = message
        if part.kind == "op":
            result.parts.append(judge_op_part(exercise, part, _reference(exercise.number),
                                              prepared, record, arrays, origin, once))
        else:
            result.parts.append(judge_engine_part(exercise, part, prepared, record, arrays,
                                                  origin, _fresh_reference(exercise), once))
    if run.output_bytes and not once:
        result.note = wrap(f"(your code printed {run.printed}; to read it, "
                           f"run each function once: python -m tinyattn.exercises check "
                           f"{exercise.name} --path {Path(origin).parent} --once)", "  ")
    if origin.startswith(str(STUBS_DIR) + os.sep) and not result.passed and not once:
        result.note = (f"  (These are the package's own stubs. To work on a copy of your own:\n"
                       f"      python -m tinyattn.exercises start my_exercises\n"
                       f"      python -m tinyattn.exercises check {exercise.name} "
                       f"--path my_exercises)")
    return result


def _target(name: Union[str, Exercise]) -> Tuple[Exercise, Optional[str]]:
    """The exercise, and the one part to run when ``name`` names a part, not an exercise."""
    if isinstance(name, Exercise):
        return name, None
    exercise = find_exercise(name)
    key = str(name).strip().lower()
    parts = {part.name for part in exercise.parts}
    only = key if key in parts and key != exercise.name and len(parts) > 1 else None
    return exercise, only


def check(name: Union[str, Exercise], path: Optional[Union[str, Path]] = None,
          timeout: float = DEFAULT_TIMEOUT, once: bool = False) -> CheckResult:
    """Check one exercise in folder ``path`` (default: the package's own stubs), running the
    learner's file in a separate process for at most ``timeout`` seconds. A part name
    (``nll``) with ``once=True`` runs that part only."""
    exercise, only = _target(name)
    folder = Path(path) if path is not None else STUBS_DIR
    file = folder / exercise.filename
    result = CheckResult(exercise, str(file), once=once)
    if not file.is_file():
        text = wrap(f"no file {exercise.filename} in {folder}. Copy the exercises there with: "
                    f"python -m tinyattn.exercises start {folder}")
        result.parts.append(PartResult("all", "error", text, Diagnosis("missing_file", text)))
        return result
    plan, request = _plan(exercise, str(file.resolve()), once, only if once else None)
    run = run_isolated(request, timeout)
    return _judge(exercise, plan, run, str(file), timeout, once)


def check_module(exercise: Union[str, Exercise], module: ModuleType, origin: str = "",
                 once: bool = False) -> CheckResult:
    """Judge ``module`` (an imported exercise file) in THIS process: no isolation, so for
    trusted code only (the tests' planted mistakes); the verdict is computed the same way."""
    exercise, _ = _target(exercise)
    origin = origin or getattr(module, "__file__", None) or "<module>"
    plan, request = _plan(exercise, os.path.abspath(origin), once, None)
    return _judge(exercise, plan, run_in_process(module, request), origin, DEFAULT_TIMEOUT,
                  once)


def check_all(path: Optional[Union[str, Path]] = None,
              timeout: float = DEFAULT_TIMEOUT) -> List[CheckResult]:
    return [check(exercise, path, timeout) for exercise in EXERCISES]

