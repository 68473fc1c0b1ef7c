"""Train with your own backward passes: tinyattn's backward swapped for the learner's.

    python -m tinyattn train --backward-from my_exercises

``learner_backward(folder)`` first runs the exercise checker (isolated, as always) on every
ops-track exercise that can stand in for one of tinyattn's ops (adapters.SWAPS), and keeps
the parts that pass. Then it imports those files INTO THIS PROCESS (the learner's code is
trusted here: it is their own training run) and, until the ``with`` block ends, replaces the
``backward`` method of the matching ``Function`` subclasses (``Linear``, ``LayerNorm``,
``CrossEntropy``, attention, ...) with a wrapper that calls the learner's function through
its adapter. tinyattn's core is untouched; leaving the block puts every method back.

For the first ``compare_calls`` calls of each swapped op, the wrapper also runs tinyattn's
own backward and compares: a learner's backward can pass the exercise's small float64 cases
and still be wrong on a model's shapes. The first disagreement is printed at once, naming the
op and the exercise; training goes on with the learner's gradients (so the effect can be
seen: the loss does not fall as it should). A learner's backward that raises is replaced by
tinyattn's for the rest of the run, with a message.
"""
from __future__ import annotations

import contextlib
import os
import sys
import textwrap
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Dict, Iterator, List

import numpy as np

from .. import autograd
from .adapters import SWAPS, NotCovered, Swap
from .catalog import find_exercise
from .checker import DEFAULT_TIMEOUT, check, load_file
from .judge_ops import _readonly

__all__ = ["learner_backward", "train_with_backward_from", "SwapReport", "OpRecord"]


@dataclass
class OpRecord:
    """What happened to one swapped op during the run."""

    swap: Swap
    calls: int = 0              # backward calls that used the learner's function
    compared: int = 0           # of those, compared with tinyattn's own
    worst: float = 0.0          # the largest relative difference seen
    worst_where: str = ""
    own: int = 0                # calls outside the exercise's scope: tinyattn's backward
    failed: str = ""            # the learner's function raised: the message
    dtype: str = "float32"      # of the gradients compared
    warned: bool = False

    @property
    def label(self) -> str:
        exercise = find_exercise(self.swap.exercise)
        return f"{self.swap.op.__name__} (exercise {exercise.label}, {self.swap.part})"


@dataclass
class SwapReport:
    folder: str
    records: List[OpRecord] = field(default_factory=list)
    not_used: List[str] = field(default_factory=list)   # why a swappable op stayed tinyattn's
    tolerance: Dict[str, float] = field(default_factory=lambda: {"float32": 1e-3,
                                                                 "float64": 1e-7})
    out: Callable[[str], None] = print

    calls_by_op: Counter = field(default_factory=Counter)   # every op backward, by class

    def summary(self) -> str:
        mine = sum(r.calls for r in self.records)
        total = sum(self.calls_by_op.values())
        share = f" ({100 * mine / total:.0f}%)" if total else ""
        lines = [f"Your backward passes in this run (from {self.folder}): {mine:,} of the "
                 f"{total:,} op backwards the engine ran were yours{share}.",
                 f"  {'op':<26} {'exercise':<24} {'your calls':>10}  checked against "
                 f"tinyattn's"]
        unused = []
        for r in self.records:
            exercise = find_exercise(r.swap.exercise).label
            if r.failed:
                state = f"raised, so tinyattn's own was used instead: {r.failed}"
            elif not r.calls:
                unused.append(r.swap.op.__name__)
                continue
            elif r.compared and r.worst > self._tolerance(r):
                state = (f"DISAGREED (max relative difference {r.worst:.2g} in "
                         f"{r.worst_where}): check it")
            else:
                state = (f"first {r.compared} agreed (max relative difference "
                         f"{r.worst:.1g})")
            if r.own:
                state += f"; {r.own:,} calls outside the exercise's cases used tinyattn's"
            lines.append(f"  {r.swap.op.__name__:<26} {exercise:<24} {r.calls:>10,}  {state}")
        if unused:
            lines.append(f"  (not called by this model: {', '.join(unused)}"
                         + (": attention runs as separate ops here, so your softmax, masked "
                            "fill and matmul run instead" if "ScaledDotProductAttention" in
                            unused else "") + ")")
        swapped = {r.swap.op.__name__ for r in self.records}
        others = [(name, n) for name, n in self.calls_by_op.most_common() if name not in
                  swapped]
        if others:
            lines.append("  tinyattn's own backward (no exercise of yours covers them): " +
                         ", ".join(f"{name} {n:,}" for name, n in others[:12]) +
                         (", ..." if len(others) > 12 else ""))
        return "\n".join(lines)

    def _tolerance(self, record: OpRecord) -> float:
        return self.tolerance.get(record.dtype, 1e-3)

    @property
    def disagreeing(self) -> List[OpRecord]:
        return [r for r in self.records if r.compared and r.worst > self._tolerance(r)]


def _relative(mine: Any, theirs: Any) -> float:
    mine, theirs = np.asarray(mine, dtype=np.float64), np.asarray(theirs, dtype=np.float64)
    if mine.shape != theirs.shape:
        return float("inf")
    scale = max(float(np.linalg.norm(theirs)), 1e-30)
    difference = float(np.linalg.norm(mine - theirs))
    return difference / scale if np.isfinite(difference) else float("inf")


class _ReadOnlySaved:
    """``fn`` seen by an adapter: the same op, with its saved arrays read-only."""

    def __init__(self, fn: Any):
        self.saved = _readonly(tuple(fn.saved))
        self.needs_input_grad = fn.needs_input_grad


def _as_tuple(grads: Any) -> tuple:
    return grads if isinstance(grads, tuple) else (grads,)


def _conform(grads: Any, fn: Any, grad: Any) -> Any:
    """The learner's gradients in the op's dtype, checked against the op's input shapes;
    a tuple stays a tuple, one array stays one array."""
    shapes = [tuple(t.shape) for t in fn.inputs]
    out = []
    for i, g in enumerate(_as_tuple(grads)):
        if g is None:
            out.append(None)
            continue
        g = np.asarray(g)
        if i < len(shapes) and g.shape != shapes[i]:
            raise ValueError(f"returned a gradient of shape {g.shape} for an input of shape "
                             f"{shapes[i]}")
        out.append(g.astype(grad.dtype, copy=False))
    return tuple(out) if isinstance(grads, tuple) else out[0]


def _wrapper(record: OpRecord, original: Callable, learner: Callable, compare_calls: int,
             report: SwapReport, folder: str) -> Callable:
    swap = record.swap

    def backward(fn: Any, grad: Any) -> Any:
        if record.failed or not isinstance(grad, np.ndarray):
            return original(fn, grad)
        try:
            mine = swap.adapter(_ReadOnlySaved(fn), _readonly(grad), learner)
            mine = _conform(mine, fn, grad)
        except NotCovered:
            record.own += 1
            return original(fn, grad)
        except Exception as error:  # the learner's code, in a training run: keep training
            record.failed = f"{type(error).__name__}: {error}"[:300]
            report.out("\n" + textwrap.fill(
                f"tinyattn: your backward for {record.label} raised {record.failed}; "
                f"tinyattn's own backward is used for it from now on.", 92))
            return original(fn, grad)
        record.calls += 1
        if record.compared < compare_calls:
            record.compared += 1
            record.dtype = grad.dtype.name
            theirs = _as_tuple(original(fn, grad))
            for i, (m, t) in enumerate(zip(_as_tuple(mine), theirs)):
                if m is None or t is None:
                    continue
                difference = _relative(m, t)
                if difference > record.worst:
                    record.worst = difference
                    record.worst_where = f"d(input {i}) of shape {tuple(np.shape(t))}"
            if record.worst > report._tolerance(record) and not record.warned:
                record.warned = True
                _warn(record, report, folder)
        return mine

    return backward


def _warn(record: OpRecord, report: SwapReport, folder: str) -> None:
    exercise = find_exercise(record.swap.exercise)
    report.out("\n" + textwrap.fill(
        f"tinyattn: your backward for {record.label} DISAGREES with tinyattn's own: "
        f"relative difference {record.worst:.2g} in {record.worst_where} ({record.dtype}). "
        f"Training goes on with yours, so you can see what it does. Check exercise "
        f"{exercise.label}: python -m tinyattn.exercises check {exercise.name} --path "
        f"{folder} (if it passes there, the difference is in what its small float64 cases do "
        f"not cover: these shapes, this dtype).", 92, break_on_hyphens=False))


def _plan(folder: str, unchecked: bool, timeout: float) -> tuple:
    """(list of (swap, learner function), reasons ops are not swapped)."""
    exercises = sorted({s.exercise for s in SWAPS}, key=lambda n: find_exercise(n).number)
    passing: Dict[str, set] = {}
    reasons: List[str] = []
    modules: Dict[str, Any] = {}
    for name in exercises:
        exercise = find_exercise(name)
        path = Path(folder) / exercise.filename
        if not path.is_file():
            reasons.append(f"{exercise.label}: no file {path}")
            continue
        result = check(exercise, folder, timeout)
        passing[name] = {p.part for p in result.parts if p.passed or (
            unchecked and p.status == "failed")}
        for p in result.parts:
            if p.part not in passing[name]:
                label = {"not_implemented": "not written yet"}.get(p.status, p.status)
                reasons.append(f"{exercise.label}, {p.part}: {label}")
        if passing[name]:
            modules[name] = load_file(path)      # the learner's own code, trusted here
    chosen = [(s, getattr(modules[s.exercise], f"{s.part}_backward")) for s in SWAPS
              if s.part in passing.get(s.exercise, ())]
    return chosen, reasons


@contextlib.contextmanager
def learner_backward(folder: str, *, unchecked: bool = False, compare_calls: int = 4,
                     timeout: float = DEFAULT_TIMEOUT,
                     out: Callable[[str], None] = print) -> Iterator[SwapReport]:
    """Inside the block, tinyattn's ops whose exercise part passes in ``folder`` run the
    learner's backward. ``unchecked=True`` also uses parts that fail the checker (to watch
    what a wrong gradient does to training); parts that raise or are not written never are."""
    out(f"tinyattn: checking your exercises in {folder} (python -m tinyattn.exercises) ...")
    chosen, reasons = _plan(folder, unchecked, timeout)
    report = SwapReport(folder, not_used=reasons, out=out)
    originals: Dict[type, Any] = {}
    try:
        for swap, learner in chosen:
            record = OpRecord(swap)
            report.records.append(record)
            originals[swap.op] = swap.op.__dict__["backward"]
            swap.op.backward = _wrapper(record, originals[swap.op], learner, compare_calls,
                                        report, folder)
        out(_announce(report))
        previous = autograd.set_backward_hook(None)
        autograd.set_backward_hook(_counting(report, previous))
        try:
            yield report
        finally:
            autograd.set_backward_hook(previous)
    finally:
        for op, original in originals.items():
            op.backward = original


def _counting(report: SwapReport, previous: Any) -> Callable:
    """The engine's trace hook: count every op backward by class (then call the hook that
    was set before, if any: trace_backward still works inside)."""
    def hook(fn: Any, grad: Any, sent: Any) -> None:
        report.calls_by_op[type(fn).__name__] += 1
        if previous is not None:
            previous(fn, grad, sent)
    return hook


def _announce(report: SwapReport) -> str:
    if report.records:
        lines = [f"Training with YOUR backward passes (from {report.folder}, where they pass "
                 f"the checker):"]
        lines += [f"  {r.swap.op.__name__:<26} exercise {find_exercise(r.swap.exercise).label}, "
                  f"{r.swap.part}_backward" for r in report.records]
    else:
        lines = ["None of your backward passes can be used yet: training uses tinyattn's own."]
    missing = [r for r in report.not_used if ": no file " in r]
    other = [r for r in report.not_used if ": no file " not in r]
    if other:
        lines.append("Not used (not passing yet; tinyattn's own backward instead): " +
                     "; ".join(other))
    if missing:
        lines.append("No file in the folder for: " + ", ".join(r.split(":")[0]
                                                               for r in missing))
    lines.append("Every other op runs tinyattn's own backward.")
    return "\n".join(lines)


def train_with_backward_from(folder: str, config: Any, train: Callable[[Any], int]) -> int:
    """``python -m tinyattn train --backward-from DIR``: run ``train(config)`` (which returns
    the run's exit status, errors already reported) with the learner's backward passes."""
    if not str(folder).strip() or not os.path.isdir(folder):
        print(f"error: --backward-from {folder!r} is not a folder; it should be the folder of "
              f"your exercises (python -m tinyattn.exercises start DIR made it)",
              file=sys.stderr)
        return 2
    if config.device != "cpu":
        print("error: --backward-from runs your NumPy backward passes, which need --device "
              "cpu", file=sys.stderr)
        return 2
    given = config.extra.get("given", set()) if isinstance(config.extra, dict) else set()
    if "attn_impl" not in given and config.attn_impl == "plain":
        config.attn_impl = "composed"
        print("tinyattn: attention is computed from separate ops (q k^T, the scale, the mask, "
              "softmax, the product with v), so that your softmax, masked fill, mul and "
              "matmul backwards run in it; --attn-impl plain uses the fused attention op "
              "instead (your exercise 12)")
    with learner_backward(folder) as report:
        if not report.records:
            print("error: nothing to train with: make an ops exercise pass first (python -m "
                  "tinyattn.exercises check all --path " + folder + ")", file=sys.stderr)
            return 1
        start = time.perf_counter()
        status = train(config)
        took = time.perf_counter() - start
    print(report.summary())
    print(f"Training with your backward passes took {took:.0f} s (wall time; the checker's "
          f"run before it is not included).")
    for record in report.disagreeing:
        exercise = find_exercise(record.swap.exercise)
        print(f"check: python -m tinyattn.exercises check {exercise.name} --path {folder}")
    return status
