"""Judge an ops-track part from the plain arrays the learner's process returned.

For each case the checker prepares, in its own process: the reference forward's output, and
the upstream gradients to send: ``RANDOM`` random ones first (random arrays, or for a scalar
output random numbers that are not 1, so a backward that ignores its incoming gradient
fails), then one one-hot gradient per output element (together the full Jacobian). The
learner's answers are judged against
1. finite differences of the reference forward in float64 (the gradient check: every Jacobian
   entry within atol + rtol |numeric|, tinyattn.gradcheck's tolerance), and
2. the reference backward for the same random gradients (to a relative 1e-6).
A case with ``exact_rule`` (inputs where the op is not differentiable: a max pooling window
with tied maxima) skips 1. and compares every gradient, random and one-hot, with 2.
Only arrays come back from the learner's process; their shapes and dtypes are checked before
any value is read.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Dict, List, Optional

import numpy as np

from ..gradcheck import InputReport
from .course import Case, Diagnosis, Exercise, Part
from .diagnose import (close, diagnose_dtype, diagnose_shape, diagnose_structure,
                       diagnose_values)
from .results import Failure, PartResult, fail, learner_failure, wrap

__all__ = ["PreparedCase", "prepare_part", "op_request", "judge_op_part", "numeric_jacobian",
           "RANDOM", "EPS", "ATOL", "RTOL"]

RANDOM = 2                                      # random upstream gradients per case
EPS, ATOL, RTOL = 1e-6, 1e-5, 1e-3              # tinyattn.gradcheck's defaults
REFERENCE_RTOL = 1e-6


@dataclass
class PreparedCase:
    case: Case
    out: np.ndarray                             # the reference forward's output
    cache: Any                                  # the reference forward's cache
    grads: List[np.ndarray]                     # RANDOM random ones, then one-hots


def _random_grad(rng: np.random.Generator, shape) -> np.ndarray:
    if shape == ():
        return np.asarray(rng.uniform(0.3, 2.5) * rng.choice([-1.0, 1.0]))
    return rng.standard_normal(shape)


def prepare_part(exercise: Exercise, part: Part, reference: Any, once: bool) -> List[
        PreparedCase]:
    cases = part.cases(np.random.default_rng(exercise.number * 100))
    forward = getattr(reference, part.forward_name)
    prepared = []
    for i, case in enumerate(cases[:1] if once else cases, 1):
        out, cache = forward(*[x.copy() for x in case.inputs.values()], **case.consts)
        out = np.asarray(out)
        rng = np.random.default_rng(exercise.number * 100 + i)
        grads = [_random_grad(rng, out.shape) for _ in range(1 if once else RANDOM)]
        if not once:
            eye = np.eye(out.size)
            grads += [eye[m].reshape(out.shape) for m in range(out.size)]
        prepared.append(PreparedCase(case, out, cache, grads))
    return prepared


def op_request(part: Part, prepared: List[PreparedCase]) -> Dict[str, Any]:
    return {"kind": "op", "name": part.name, "functions": list(part.functions),
            "forward": part.forward_name, "backward": part.backward_name,
            "inputs": list(part.inputs),
            "cases": [{"inputs": [x.copy() for x in p.case.inputs.values()],
                       "consts": p.case.consts, "grads": p.grads} for p in prepared]}


def _readonly(value: Any) -> Any:
    if isinstance(value, np.ndarray):
        view = value.view()
        view.flags.writeable = False
        return view
    if isinstance(value, tuple):
        return tuple(_readonly(v) for v in value)
    return value


def _as_list(grads: Any, count: int) -> list:
    return [grads] if count == 1 and not isinstance(grads, (tuple, list)) else list(grads)


def numeric_jacobian(forward: Any, case: Case, index: int, eps: float = EPS) -> np.ndarray:
    """d out / d input ``index`` by central differences of ``forward``: (out size, in size)."""
    inputs = [x.copy() for x in case.inputs.values()]
    flat = inputs[index].reshape(-1)            # a view: perturbs inputs[index] in place
    columns = []
    for n in range(flat.size):
        saved = flat[n]
        flat[n] = saved + eps
        up = np.asarray(forward(*[x.copy() for x in inputs], **case.consts)[0]).reshape(-1)
        flat[n] = saved - eps
        down = np.asarray(forward(*[x.copy() for x in inputs], **case.consts)[0]).reshape(-1)
        flat[n] = saved
        columns.append((up - down) / (2.0 * eps))
    return np.stack(columns, axis=1)


def _index(idx) -> str:
    return "[" + ", ".join(str(i) for i in idx) + "]" if idx else ""


def _reference_diagonal(backward: Any, prep: PreparedCase, index: int, count: int):
    """A thunk computing diag(d out / d input) with the reference backward, or None."""
    def compute() -> Optional[np.ndarray]:
        shape = prep.case.inputs[list(prep.case.inputs)[index]].shape
        if prep.out.shape != shape:
            return None
        eye = np.eye(prep.out.size)
        diag = [_as_list(backward(eye[m].reshape(shape), prep.cache), count)[index]
                .reshape(-1)[m] for m in range(prep.out.size)]
        return np.array(diag).reshape(shape)
    return compute


def _check_arrays(part: Part, prep: PreparedCase, arrays: Dict[str, np.ndarray], c: int,
                  where: str) -> List[np.ndarray]:
    """The learner's stacked gradients of case ``c``, validated, or raise Failure."""
    out = arrays.get(f"c{c}_out")
    if not isinstance(out, np.ndarray) or out.shape != prep.out.shape or not np.allclose(
            out, prep.out, rtol=1e-10, atol=1e-12):
        raise fail(part.name, "failed", [wrap(
            f"{part.forward_name} no longer computes the original forward ({where}); the "
            f"gradient check would test something else. Restore it from the stub (python -m "
            f"tinyattn.exercises start DIR copies fresh stubs into a new folder).")],
            Diagnosis("forward_changed", "forward changed"), where)
    order = _shape_order(part, prep, arrays, c)
    if order is not None:
        raise fail(part.name, "failed", [f"    {where}", wrap(f"diagnosis: {order.message}")],
                   order, where)
    stacked = []
    for i, name in enumerate(part.inputs):
        got = arrays.get(f"c{c}_g{i}")
        want = prep.case.inputs[name].shape
        if not isinstance(got, np.ndarray) or got.ndim < 1 or got.shape[0] != len(prep.grads):
            raise fail(part.name, "error", [wrap("the checker could not read your gradients "
                                                 "(a malformed result)")],
                       Diagnosis("unreadable", ""), where)
        diagnosis = None
        if got.shape[1:] != want:
            diagnosis = part.shape_hint and part.shape_hint(name, got.shape[1:], want,
                                                            prep.case)
            diagnosis = diagnosis or diagnose_shape(name, got.shape[1:], want,
                                                    part.transpose_hint, tuple(prep.out.shape))
        elif got.dtype != np.float64:
            diagnosis = diagnose_dtype(name, got.dtype)
        if diagnosis is not None:
            raise fail(part.name, "failed", [f"    {where}", wrap(
                f"diagnosis: {diagnosis.message}")], diagnosis, where)
        stacked.append(got)
    return stacked


def _shape_order(part: Part, prep: PreparedCase, arrays: Dict[str, np.ndarray], c: int
                 ) -> Optional[Diagnosis]:
    """Gradients of the right shapes in another order (dk where dq belongs): a return order,
    not a shape mistake."""
    wants = [prep.case.inputs[name].shape for name in part.inputs]
    gots = [arrays.get(f"c{c}_g{i}") for i in range(len(part.inputs))]
    if len(wants) < 2 or not all(isinstance(g, np.ndarray) and g.ndim >= 1 for g in gots):
        return None
    shapes = [g.shape[1:] for g in gots]
    if shapes == wants or sorted(shapes) != sorted(wants):
        return None
    yours = []
    for shape in shapes:
        names = [n for n, w in zip(part.inputs, wants) if w == shape and n not in yours]
        yours.append(names[0] if names else "?")
    return Diagnosis("return_order", (
        f"Your gradients come back in another order: their shapes are those of "
        f"({', '.join('d' + n for n in yours)}). Return them in the forward's input order, "
        f"({', '.join('d' + n for n in part.inputs)}): the checker (and an engine) pairs the "
        f"i-th gradient with the i-th input."))


def _judge_values(exercise: Exercise, part: Part, reference: Any, prep: PreparedCase,
                  stacked: List[np.ndarray], where: str, once: bool) -> float:
    """The gradient check and the reference comparison; the max abs error, or Failure."""
    forward = getattr(reference, part.forward_name)
    backward = getattr(reference, part.backward_name)
    count, randoms = len(part.inputs), (1 if once else RANDOM)
    exact = bool(prep.case.exact_rule)          # not differentiable here: the rule decides
    if exact:
        randoms = len(prep.grads)               # every grad against the reference rule
    wants = [_as_list(backward(_readonly(g.copy()), _readonly(prep.cache)), count)
             for g in prep.grads[:randoms]]
    worst = 0.0
    lines: List[str] = []
    diagnoses: List[Diagnosis] = []
    for i, name in enumerate(part.inputs):
        shape = prep.case.inputs[name].shape
        report = None
        if not once and not exact:
            rows = stacked[i][randoms:].reshape(prep.out.size, -1)
            report = InputReport(i, shape, rows, numeric_jacobian(forward, prep.case, i),
                                 ATOL, RTOL, False, output_shape=prep.out.shape)
            worst = max(worst, report.max_abs_error)
        bad_random = [r for r in range(randoms) if not close(stacked[i][r], np.asarray(
            wants[r][i], dtype=np.float64), REFERENCE_RTOL)]
        if (report is None or report.passed) and not bad_random:
            continue
        r = bad_random[0] if bad_random else 0
        got, want = stacked[i][r], np.asarray(wants[r][i], dtype=np.float64)
        grad = prep.grads[r]
        if not bad_random:
            diagnosis = Diagnosis("inconsistent", (
                "Your backward is right for a random grad but not for every one-hot grad: "
                "does it keep state between calls, or depend on grad in a way that is not "
                "linear?"))
        else:
            ones = _as_list(backward(np.ones_like(grad), _readonly(prep.cache)), count)[i]
            diagnosis = diagnose_values(part, prep.case, name, got, want, grad, prep.cache,
                                        _reference_diagonal(backward, prep, i, count),
                                        np.asarray(ones, dtype=np.float64))
            swapped = _other_input(part, got, wants[r], i)
            named = diagnosis.kind in {m.kind for m in part.mistakes}
            if exact and not named:
                diagnosis = Diagnosis("exact_rule", f"{prep.case.exact_rule} "
                                                    f"{diagnosis.message}")
            elif swapped is not None and not named:
                diagnosis = Diagnosis("return_order", (
                    f"Your d{name} is exactly the right d{swapped}: the gradients come back "
                    f"in another order. Return them in the forward's input order, "
                    f"({', '.join('d' + n for n in part.inputs)})."))
        lines += [f"    the gradient of {name} is wrong ({name} has shape {shape})"]
        if report is not None and not report.passed:
            out_index = _index(report.worst_output_index) if prep.out.ndim else ""
            lines += [f"    worst element: d out{out_index} / "
                      f"d {name}{_index(report.worst_input_index)}: yours (analytic) "
                      f"{report.worst_analytic:.6g} vs numeric {report.worst_numeric:.6g}",
                      _count_line(report)]
        else:
            diff = float(np.abs(got - want).max())
            if exact:
                what = "a random grad" if r < RANDOM else "a one-hot grad"
                lines.append(wrap(f"for {what} your d{name} is off by up to {diff:.3g} (no "
                                  f"numeric check in this case: the op is not differentiable "
                                  f"at these inputs, so the reference rule decides)"))
            else:
                lines.append(wrap(f"for a random grad your d{name} is off by up to "
                                  f"{diff:.3g}" + ("" if once else " (right for each one-hot "
                                                   "grad, where the incoming gradient is "
                                                   "exactly 1)")))
        lines.append(wrap(f"diagnosis: {diagnosis.message}"))
        diagnoses.append(diagnosis)
    if diagnoses:           # every wrong gradient at once, not one per round of fixing
        if len(diagnoses) > 1:
            lines.insert(0, f"    {len(diagnoses)} of the {count} gradients are wrong:")
        raise fail(part.name, "failed", [f"    {where}"] + lines
                   + [f"    read: {exercise.read}"], diagnoses[0], where)
    return worst


def _other_input(part: Part, got: np.ndarray, wants: List[Any], i: int) -> Optional[str]:
    """The name of the input whose right gradient ``got`` is, if not input ``i``'s own."""
    for j, other in enumerate(part.inputs):
        if j == i or j >= len(wants) or wants[j] is None:
            continue
        right = np.asarray(wants[j], dtype=np.float64)
        if right.shape == got.shape and close(got, right) and not close(
                right, np.asarray(wants[i], dtype=np.float64)) and \
                float(np.abs(right).max(initial=0.0)) > 0.0:
            return other
    return None


def _count_line(report: InputReport) -> str:
    nonfinite = int((~np.isfinite(report.analytic)).sum())
    if nonfinite:
        return f"    {nonfinite} of {report.analytic.size} Jacobian entries are NaN or inf"
    return (f"    {report.num_failing} of {report.analytic.size} Jacobian entries are off (max "
            f"abs error {report.max_abs_error:.2e})")


def _judge_case(exercise: Exercise, part: Part, reference: Any, prep: PreparedCase,
                record: Any, arrays: Dict[str, np.ndarray], c: int, where: str,
                once: bool) -> float:
    status = record.get("status") if isinstance(record, dict) else None
    if status == "error":
        raise learner_failure(exercise, part.name, record.get("error"), where, prep.case)
    if status in ("forward_not_pair", "forward_bad_out"):
        what = "a pair (out, cache)" if status == "forward_not_pair" else "out as an array"
        raise fail(part.name, "failed", [wrap(
            f"{part.forward_name} must return {what}, as the stub's does; it returned "
            f"{record.get('got')}. Restore it from a fresh stub.")],
            Diagnosis("forward_changed", "forward returns no pair"), where)
    if status == "structure":
        diagnosis = diagnose_structure(record.get("problem") or {}, part, prep.case)
        raise fail(part.name, "failed", [f"    {where}", wrap(f"diagnosis: {diagnosis.message}")],
                   diagnosis, where)
    if status == "varies":
        raise fail(part.name, "error", [f"    {where}", wrap(
            "your backward returned arrays of different shapes or dtypes for different grads "
            f"(first {record.get('first')}, then {record.get('now')}): a gradient's shape is "
            f"its input's, whatever grad is.")], Diagnosis("varies", ""), where)
    if status != "ok":
        raise fail(part.name, "error", [wrap("the checker could not read what happened (a "
                                             "malformed result)")],
                   Diagnosis("unreadable", ""), where)
    stacked = _check_arrays(part, prep, arrays, c, where)
    return _judge_values(exercise, part, reference, prep, stacked, where, once)


def judge_op_part(exercise: Exercise, part: Part, reference: Any,
                  prepared: List[PreparedCase], record: Any, arrays: Dict[str, np.ndarray],
                  origin: str, once: bool = False) -> PartResult:
    if isinstance(record, dict) and record.get("status") == "missing_function":
        text = wrap(f"{origin} has no function {record.get('function')}; the checker calls it "
                    f"by that name. Restore it from a fresh stub (start DIR).")
        return PartResult(part.name, "error", f"  {part.name}: ERROR\n{text}",
                          Diagnosis("missing_function", text))
    cases = record.get("cases") if isinstance(record, dict) else None
    if not isinstance(cases, list):
        cases = []
    worst = 0.0
    try:
        for c, prep in enumerate(prepared):
            where = f"case {c + 1} of {len(prepared)}, {prep.case.describe()}"
            if c >= len(cases):
                raise fail(part.name, "error", [wrap(f"no result for {where}: the process "
                                                     f"running your code stopped early")],
                           Diagnosis("unreadable", ""), where)
            worst = max(worst, _judge_case(exercise, part, reference, prep, cases[c], arrays,
                                           c, where, once))
    except Failure as failure:
        return failure.result
    if once:
        return PartResult(part.name, "passed", f"  {part.name}: right for this one grad")
    text = f"  {part.name}: passed ({len(prepared)} cases, max abs error {worst:.1e})"
    return PartResult(part.name, "passed", text, max_abs_error=worst)
