"""Check a learner's backward passes with tinyattn's own gradient check.

For each part of an exercise and each of its cases, the checker
1. runs the learner's forward and compares it with the reference (a changed forward makes the
   gradient check meaningless, so it says so);
2. calls the learner's backward once with a random upstream gradient and checks what came
   back: a tuple of arrays of the inputs' shapes (``diagnose_structure``);
3. wraps forward and backward into a ``tinyattn.Function`` subclass and runs
   ``tinyattn.gradcheck_report`` on it in float64: the full Jacobian, every element;
4. on a failure names the input, the worst element, analytic against numeric, and asks
   ``diagnose_values`` which common mistake it is, comparing with the reference solution.

The learner's code runs with a read-only ``grad`` and read-only cached arrays: a backward that
writes into them would corrupt a shared gradient in a real engine, so it fails loudly here.
"""
from __future__ import annotations

import functools
import importlib.util
import os
import textwrap
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any, Callable, List, Optional, Sequence, Union

import numpy as np
import scipy

from ..autograd import Function
from ..gradcheck import gradcheck_report
from ..tensor import tensor
from .catalog import EXERCISES, Case, Exercise, Part, find_exercise
from .diagnose import Diagnosis, close, diagnose_structure, diagnose_values

__all__ = ["check", "check_module", "check_all", "CheckResult", "PartResult", "load_file",
           "STUBS_DIR", "SOLUTIONS_DIR"]

PACKAGE_DIR = Path(__file__).resolve().parent
STUBS_DIR = PACKAGE_DIR / "stubs"
SOLUTIONS_DIR = PACKAGE_DIR / "solutions"
_TINYATTN_DIR = str(PACKAGE_DIR.parent) + os.sep
_LIBRARY_DIRS = (os.path.dirname(np.__file__) + os.sep, os.path.dirname(scipy.__file__) + os.sep)
_WIDTH = 92


@dataclass
class PartResult:
    part: str
    status: str                     # passed, failed, not_implemented, error
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

    @property
    def passed(self) -> bool:
        return bool(self.parts) and all(p.passed for p in self.parts)

    @property
    def text(self) -> str:
        ex = self.exercise
        if self.passed:
            lines = [f"{ex.label} ({ex.title}): PASSED"]
        else:
            lines = [f"{ex.label} ({ex.title}): not passed yet", f"  file: {self.origin}"]
        lines += [p.text for p in self.parts]
        if self.note:
            lines.append(self.note)
        return "\n".join(lines)


class LearnerError(Exception):
    """The learner's code raised; ``function`` is the exercise function that was called."""

    def __init__(self, function: str, error: BaseException):
        super().__init__(f"{function}: {type(error).__name__}: {error}")
        self.function, self.error = function, error


def _wrap(text: str, indent: str = "    ") -> str:
    return textwrap.fill(text, _WIDTH, initial_indent=indent, subsequent_indent=indent)


def _is_learner_frame(filename: str) -> bool:
    path = os.path.abspath(filename)
    if path.startswith((str(STUBS_DIR) + os.sep, str(SOLUTIONS_DIR) + os.sep)):
        return True
    if path.startswith(_TINYATTN_DIR) or path.startswith(_LIBRARY_DIRS):
        return False
    return "importlib" not in path and not path.startswith("<frozen")


def _learner_trace(error: BaseException) -> str:
    frames = [f for f in traceback.extract_tb(error.__traceback__)
              if _is_learner_frame(f.filename)][-4:]
    lines = []
    for f in frames:
        lines.append(f'    File "{f.filename}", line {f.lineno}, in {f.name}')
        if f.line:
            lines.append(f"      {f.line}")
    lines.append(f"    {type(error).__name__}: {error}")
    if isinstance(error, ValueError) and "read-only" in str(error):
        lines.append(_wrap("hint: grad and the cached arrays are read-only here. Write into a "
                           "copy (grad.copy(), np.zeros_like(x)) instead: in a real engine the "
                           "same gradient array may feed other ops."))
    return "\n".join(lines)


def _call(fn: Callable[..., Any], name: str, *args: Any, **kwargs: Any) -> Any:
    try:
        return fn(*args, **kwargs)
    except Exception as error:  # the learner's code: anything can happen
        raise LearnerError(name, error) from error


def _readonly(value: Any) -> Any:
    if isinstance(value, np.ndarray):
        view = value.view()
        view.flags.writeable = False
        return view
    if isinstance(value, tuple):
        return tuple(_readonly(v) for v in value)
    return value


def _as_list(grads: Any, count: int) -> list:
    if count == 1 and not isinstance(grads, (tuple, list)):
        return [grads]
    return list(grads)


def _exercise_function(part: Part, forward: Callable, backward: Callable) -> type:
    """The learner's forward/backward as a tinyattn Function subclass."""

    def fwd(self, *arrays, **consts):
        out, cache = _call(forward, part.forward_name, *arrays, **consts)
        self.save_for_backward(cache)
        return np.asarray(out)

    def bwd(self, grad):
        (cache,) = self.saved
        grads = _call(backward, part.backward_name, _readonly(grad.copy()), _readonly(cache))
        return tuple(np.asarray(g) for g in _as_list(grads, len(part.inputs)))

    return type(f"Exercise_{part.name}", (Function,), {"forward": fwd, "backward": bwd})


def load_file(path: Union[str, Path]) -> ModuleType:
    """Import an exercise file by path (its name starts with a digit, so not by name)."""
    path = Path(path)
    spec = importlib.util.spec_from_file_location(f"tinyattn_exercise_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@functools.lru_cache(maxsize=None)
def _reference(exercise_number: int) -> ModuleType:
    exercise = EXERCISES[exercise_number - 1]
    return load_file(SOLUTIONS_DIR / exercise.filename)


def _index(idx: Sequence[int]) -> str:
    return "[" + ", ".join(str(i) for i in idx) + "]" if idx else ""


class _Failure(Exception):
    def __init__(self, result: PartResult):
        super().__init__(result.text)
        self.result = result


def _fail(part: Part, status: str, lines: List[str], diagnosis: Optional[Diagnosis] = None,
          case: Optional[str] = None) -> _Failure:
    label = "NOT WRITTEN YET" if status == "not_implemented" else status.upper()
    text = "\n".join([f"  {part.name}: {label}"] + lines)
    return _Failure(PartResult(part.name, status, text, diagnosis, case))


def _learner_failure(exercise: Exercise, part: Part, error: LearnerError,
                     where: str) -> _Failure:
    if isinstance(error.error, NotImplementedError):
        lines = [_wrap(f"{error.function} still raises NotImplementedError: that is the "
                       f"function to fill in (the task, shapes and hints are at the top of "
                       f"the file). Read {exercise.read} first.")]
        return _fail(part, "not_implemented", lines, Diagnosis("not_implemented", lines[0]))
    lines = [f"    your {error.function} raised an error ({where}):", _learner_trace(error.error)]
    return _fail(part, "error", lines, Diagnosis("error", str(error)), where)


def _reference_diagonal(ref_backward: Callable, cache: Any, out_shape, in_index: int,
                        in_shape, count: int) -> Callable[[], Optional[np.ndarray]]:
    """A thunk computing diag(d out / d input) exactly with the reference backward."""

    def compute() -> Optional[np.ndarray]:
        if tuple(out_shape) != tuple(in_shape):
            return None
        size = int(np.prod(out_shape))
        diag = np.zeros(size)
        for m in range(size):
            one_hot = np.zeros(size)
            one_hot[m] = 1.0
            grads = _as_list(ref_backward(one_hot.reshape(out_shape), cache), count)
            diag[m] = grads[in_index].reshape(-1)[m]
        return diag.reshape(in_shape)

    return compute


def _count_line(bad: Any) -> str:
    nonfinite = int((~np.isfinite(bad.analytic)).sum())
    if nonfinite:
        return f"    {nonfinite} of {bad.analytic.size} Jacobian entries are NaN or inf"
    return (f"    {bad.num_failing} of {bad.analytic.size} Jacobian entries are off (max abs "
            f"error {bad.max_abs_error:.2e})")


def _check_case(exercise: Exercise, part: Part, module: ModuleType, case: Case, where: str,
                seed: int) -> float:
    """Run one case; return its max abs error, or raise _Failure."""
    reference = _reference(exercise.number)
    ref_forward = getattr(reference, part.forward_name)
    ref_backward = getattr(reference, part.backward_name)
    forward = getattr(module, part.forward_name)
    backward = getattr(module, part.backward_name)
    copies = [x.copy() for x in case.inputs.values()]
    ref_out, ref_cache = ref_forward(*copies, **case.consts)
    ref_out = np.asarray(ref_out)
    try:
        returned = _call(forward, part.forward_name, *[x.copy() for x in copies],
                         **case.consts)
        if not isinstance(returned, tuple) or len(returned) != 2:
            raise _fail(part, "failed", [_wrap(
                f"{part.forward_name} must return a pair (out, cache), as the stub's does; "
                f"restore it from a fresh stub.")], Diagnosis("forward_changed",
                                                              "forward returns no pair"))
        out, cache = np.asarray(returned[0]), returned[1]
        if out.shape != ref_out.shape or not np.allclose(out, ref_out, rtol=1e-10, atol=1e-12):
            raise _fail(part, "failed", [_wrap(
                f"{part.forward_name} no longer computes the original forward ({where}); "
                f"the gradient check would test something else. Restore it from the stub "
                f"(python -m tinyattn.exercises start DIR copies fresh stubs into an empty "
                f"folder).")], Diagnosis("forward_changed", "forward changed"), case.label)
        grad = np.random.default_rng(seed).standard_normal(ref_out.shape)
        grads = _call(backward, part.backward_name, _readonly(grad.copy()), _readonly(cache))
        problem, grads = diagnose_structure(grads, part, case)
        if problem is not None:
            raise _fail(part, "failed", [f"    {where}", _wrap(f"diagnosis: {problem.message}")],
                        problem, case.label)
        op = _exercise_function(part, forward, backward)
        tensors = [tensor(x, requires_grad=True) for x in copies]
        report = gradcheck_report(lambda *ts: op.apply(*ts, **case.consts), tensors)
    except LearnerError as error:
        raise _learner_failure(exercise, part, error, where) from None
    except (RuntimeError, ValueError, TypeError) as error:  # e.g. shapes that vary with grad
        raise _fail(part, "error", [f"    {where}", _wrap(
            f"the gradient check could not run: {error}. Does your backward return "
            f"gradients of a different shape for some grad?")],
            Diagnosis("error", str(error)), case.label) from None
    if report.passed:
        return report.max_abs_error
    bad = next(r for r in report.inputs if not r.passed)
    name = part.inputs[bad.index]
    want = _as_list(ref_backward(grad.copy(), ref_cache), len(part.inputs))[bad.index]
    got = np.asarray(grads[bad.index], dtype=np.float64)
    if close(got, want):
        diagnosis = Diagnosis("inconsistent", (
            "Your backward is right for one random grad but not for every one-hot grad: does "
            "it keep state between calls, or depend on grad in a way that is not linear?"))
    else:
        diagnosis = diagnose_values(part, case, name, got, want, grad, ref_cache,
                                    _reference_diagonal(ref_backward, ref_cache, ref_out.shape,
                                                        bad.index, bad.shape,
                                                        len(part.inputs)))
    lines = [f"    {where}",
             f"    the gradient of {name} is wrong ({name} has shape {bad.shape})",
             f"    worst element: d out{_index(bad.worst_output_index)} / "
             f"d {name}{_index(bad.worst_input_index)}: yours (analytic) "
             f"{bad.worst_analytic:.6g} vs numeric {bad.worst_numeric:.6g}",
             _count_line(bad),
             _wrap(f"diagnosis: {diagnosis.message}"),
             f"    read: {exercise.read}"]
    raise _fail(part, "failed", lines, diagnosis, case.label)


def _check_part(exercise: Exercise, part: Part, module: ModuleType, origin: str) -> PartResult:
    for fn_name in (part.forward_name, part.backward_name):
        if not callable(getattr(module, fn_name, None)):
            text = _wrap(f"{origin} has no function {fn_name}; the checker calls it by that "
                         f"name. Restore it from a fresh stub (start DIR).")
            return PartResult(part.name, "error", f"  {part.name}: ERROR\n{text}",
                              Diagnosis("missing_function", text))
    cases = part.cases(np.random.default_rng(exercise.number * 100))
    worst = 0.0
    for i, case in enumerate(cases, 1):
        where = f"case {i} of {len(cases)}, {case.describe()}"
        try:
            worst = max(worst, _check_case(exercise, part, module, case, where,
                                           seed=exercise.number * 100 + i))
        except _Failure as failure:
            return failure.result
    text = f"  {part.name}: passed ({len(cases)} cases, max abs error {worst:.1e})"
    return PartResult(part.name, "passed", text, max_abs_error=worst)


def check_module(exercise: Exercise, module: ModuleType, origin: str = "") -> CheckResult:
    """Check every part of ``exercise`` as implemented by ``module`` (a loaded exercise file)."""
    origin = origin or getattr(module, "__file__", None) or "<module>"
    result = CheckResult(exercise, origin)
    for part in exercise.parts:
        result.parts.append(_check_part(exercise, part, module, origin))
    if origin.startswith(str(STUBS_DIR) + os.sep) and not result.passed:
        result.note = (f"  (These are the package's own stubs. To work on a copy of your own:\n"
                       f"      python -m tinyattn.exercises start my_exercises\n"
                       f"      python -m tinyattn.exercises check {exercise.name} "
                       f"--path my_exercises)")
    return result


def check(name: Union[str, Exercise], path: Optional[Union[str, Path]] = None) -> CheckResult:
    """Check one exercise in folder ``path`` (default: the package's own stubs)."""
    exercise = name if isinstance(name, Exercise) else find_exercise(name)
    folder = Path(path) if path is not None else STUBS_DIR
    file = folder / exercise.filename
    result = CheckResult(exercise, str(file))
    if not file.is_file():
        text = _wrap(f"no file {exercise.filename} in {folder}. Copy the exercises there with: "
                     f"python -m tinyattn.exercises start {folder}")
        result.parts.append(PartResult("all", "error", text, Diagnosis("missing_file", text)))
        return result
    try:
        module = load_file(file)
    except SyntaxError as error:
        text = (f"    {file} does not parse: line {error.lineno}: {error.msg}\n"
                f"      {(error.text or '').rstrip()}")
        result.parts.append(PartResult("all", "error", text, Diagnosis("error", text)))
        return result
    except Exception as error:  # an error while importing the learner's file
        text = f"    importing {file} failed:\n{_learner_trace(error)}"
        result.parts.append(PartResult("all", "error", text, Diagnosis("error", text)))
        return result
    return check_module(exercise, module, str(file))


def check_all(path: Optional[Union[str, Path]] = None) -> List[CheckResult]:
    return [check(exercise, path) for exercise in EXERCISES]
