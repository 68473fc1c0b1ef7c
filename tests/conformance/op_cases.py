"""The op_db cases: one per (entry, check, dtype), with the skip table applied, and how each
runs.

Checks: ``values`` (every tested dtype; sample and reference inputs, every variant; in the
first tested dtype noncontiguous copies of some samples too),
``gradients`` (float64), ``errors`` (error_inputs), ``saves`` (float64: what backward saves),
``out`` (float32: ``fn(..., out=t)`` where the OpInfo says supports_out).
A row of the skip table that covers a whole case marks it (skip or expected failure); a
narrower row becomes a case of its own, and its (variant, sample) pairs leave the main case.
"""
from __future__ import annotations

import dataclasses
import functools
from typing import Any, Iterable, List, Optional, Tuple

import pytest
import torch

from . import op_runner as R
from . import torch_database
from .skip_rules import Skip
from .skips import TABLE

__all__ = ["OpCase", "op_entries", "op_cases", "run_op_case", "dtype_name", "marks_for"]


def dtype_name(dtype: Optional[torch.dtype]) -> str:
    return "" if dtype is None else str(dtype).replace("torch.", "")


@functools.lru_cache(maxsize=None)
def op_entries() -> Tuple[R.OpEntry, ...]:
    """Every OpInfo entry of torch's op_db, with tinyattn's variants found by name."""
    return tuple(R.OpEntry.build(info) for info in torch_database.op_db())


@dataclasses.dataclass
class OpCase:
    check: str
    entry: R.OpEntry
    dtype: Optional[torch.dtype]
    rows: List[Skip]                 # rows that apply to this (entry, check, dtype)
    own: Optional[Skip] = None       # the narrow row this case runs (None: the main case)

    @property
    def id(self) -> str:
        parts = [self.check, self.entry.key] + ([dtype_name(self.dtype)] if self.dtype else [])
        if self.own is not None:
            parts.append(f"skip{self.rows.index(self.own)}")
        return "-".join(parts)

    @property
    def whole(self) -> Optional[Skip]:
        return next((row for row in self.rows if row.whole), None)

    def takes(self, variant: str, sample: Any) -> bool:
        """Does this case run ``variant`` on ``sample``?"""
        if self.own is not None:
            return self.own.covers(variant, sample)
        return not any(row.covers(variant, sample) for row in self.rows if not row.whole)


def _rows_for(key: str, check: str, dtype: Optional[torch.dtype]) -> List[Skip]:
    name = dtype_name(dtype)
    return [row for row in TABLE if row.db == "op" and row.name == key and check in row.checks
            and (not row.dtypes or name in row.dtypes)]


def _cases_of(entry: R.OpEntry) -> Iterable[OpCase]:
    info = entry.info
    plan: List[Tuple[str, Optional[torch.dtype]]] = [
        ("values", dtype) for dtype in R.tested_dtypes(info)]
    differentiable = info.supports_autograd and \
        torch.float64 in info.supported_backward_dtypes("cpu")
    if differentiable:
        plan += [("gradients", torch.float64), ("saves", torch.float64)]
        if R.takes_complex(info) and torch.complex128 in info.supported_backward_dtypes("cpu"):
            plan.append(("gradients", torch.complex128))    # torch's convention for z.grad
    if info.error_inputs_func is not None:
        plan.append(("errors", None))
    out = R.out_dtype(entry)
    if out is not None:
        plan.append(("out", out))
    for check, dtype in plan:
        rows = _rows_for(entry.key, check, dtype)
        yield OpCase(check, entry, dtype, rows)
        for row in rows:
            if not row.whole:
                yield OpCase(check, entry, dtype, rows, own=row)


def op_cases() -> List[OpCase]:
    return [case for entry in op_entries() if entry.present for case in _cases_of(entry)]


def marks_for(case: Any) -> list:
    """pytest marks: a skip for a row that is never compared, a strict expected failure for
    a known disagreement (it fails the moment tinyattn agrees: delete the row then)."""
    row = case.own or case.whole
    if row is None or row.kind == "structure":      # runs, then skips (run_op_case)
        return []
    if row.kind == "skip":
        return [pytest.mark.skip(reason=f"skip table: {row.reason}")]
    return [pytest.mark.xfail(strict=True, reason=f"skip table: {row.reason}")]


# ------------------------------------------------------------------ running a case
def _pairs(case: OpCase, samples: List[Any], count: int, *key: Any
           ) -> List[Tuple[R.Variant, Any]]:
    """(variant, sample) pairs this case runs: ``count`` samples chosen among those it takes."""
    variants = case.entry.variants if case.check == "values" else \
        [v for v in [case.entry.function] if v is not None]
    taken = [s for s in samples if any(case.takes(v.kind, s) for v in variants)]
    chosen = R.select_samples(taken, count, case.entry.key, case.check, *key)
    return [(v, s) for s in chosen for v in variants if case.takes(v.kind, s)]


def _structure_only(case: OpCase) -> bool:
    row = case.own or case.whole
    return row is not None and row.kind == "structure"


def _run_values(case: OpCase) -> List[str]:
    info, dtype = case.entry.info, case.dtype
    values = not _structure_only(case)
    failures = []
    kinds = ["values"] + (["reference"] if dtype in R.reference_dtypes(info) else [])
    for kind in kinds:
        samples = R.generate(info, kind, dtype, requires_grad=False)
        for variant, sample in _pairs(case, samples, R.samples_per_case(kind),
                                      kind, dtype_name(dtype)):
            result = R.check_values(variant, sample, values=values,
                                    gauge=case.entry.key in R.SIGN_GAUGE_ENTRIES)
            if result is not None:
                failures.append(f"{variant.kind}({R.describe(sample)}): {result}")
        if kind == "values" and dtype == R.tested_dtypes(info)[0]:
            failures += _noncontiguous(case, samples, values)
    return failures


def _noncontiguous(case: OpCase, samples: List[Any], values: bool) -> List[str]:
    """The same check on noncontiguous copies of some samples (SampleInput.noncontiguous():
    every tensor strided, the values unchanged), in the entry's first tested dtype."""
    failures = []
    for variant, sample in _pairs(case, samples, R.samples_per_case("noncontiguous"),
                                  "noncontiguous"):
        try:
            with R.quiet():
                strided = sample.noncontiguous()
        except Exception:  # noqa: BLE001 - a sample holding something noncontiguous() refuses
            continue
        if not case.takes(variant.kind, strided):   # a row whose predicate the copy meets
            continue
        result = R.check_values(variant, strided, values=values,
                                gauge=case.entry.key in R.SIGN_GAUGE_ENTRIES)
        if result is not None:
            failures.append(f"noncontiguous {variant.kind}({R.describe(strided)}): {result}")
    return failures


def _run_out(case: OpCase) -> List[str]:
    samples = R.generate(case.entry.info, "values", case.dtype, requires_grad=False)
    failures = []
    for variant, sample in _pairs(case, samples, R.samples_per_case("out"), "out"):
        result = R.check_out(variant, sample, values=not _structure_only(case),
                             gauge=case.entry.key in R.SIGN_GAUGE_ENTRIES)
        if result is not None:
            failures.append(f"{variant.kind}({R.describe(sample)}): {result}")
    return failures


def _run_gradients(case: OpCase) -> List[str]:
    samples = R.generate(case.entry.info, "gradients", case.dtype, requires_grad=True)
    failures = []
    for variant, sample in _pairs(case, samples, R.samples_per_case("gradients"),
                                  *([] if case.dtype == torch.float64 else
                                    [dtype_name(case.dtype)])):
        result = R.check_gradients(variant, sample)
        if result is not None:
            failures.append(f"{variant.kind}({R.describe(sample)}): {result}")
    return failures


def _run_saves(case: OpCase) -> List[str]:
    samples = R.generate(case.entry.info, "gradients", torch.float64, requires_grad=True)
    failures = []
    for variant, sample in _pairs(case, samples, R.samples_per_case("saves"), "saves"):
        for result in R.check_saves(variant, sample):
            failures.append(f"{variant.kind}({R.describe(sample)}): {result}")
    return failures


def _run_errors(case: OpCase) -> List[str]:
    variant = case.entry.function
    if variant is None:
        return []
    failures = []
    with R.quiet():
        error_inputs = list(case.entry.info.error_inputs("cpu"))
    for error_input in error_inputs:
        if not case.takes(variant.kind, error_input.sample_input):
            continue
        result = R.check_error(variant, error_input)
        if result is not None:
            failures.append(f"{variant.kind}({R.describe(error_input.sample_input)}): "
                            f"{result}")
    return failures


_RUNNERS = {"values": _run_values, "gradients": _run_gradients, "saves": _run_saves,
            "errors": _run_errors, "out": _run_out}


def run_op_case(case: OpCase) -> None:
    """Run the case; fail with every difference found (or, for a narrow row's case whose
    samples no longer exist, say that the row is stale)."""
    failures = _RUNNERS[case.check](case)
    if failures:
        shown = "\n  ".join(failures[:12])
        more = f"\n  ... and {len(failures) - 12} more" if len(failures) > 12 else ""
        pytest.fail(f"{case.id}: tinyattn disagrees with torch in {len(failures)} "
                    f"call(s):\n  {shown}{more}", pytrace=False)
    if _structure_only(case):
        row = case.own or case.whole
        pytest.skip(f"skip table: {row.reason} (structure, shapes, dtypes and errors "
                    f"agree; values not compared)")
