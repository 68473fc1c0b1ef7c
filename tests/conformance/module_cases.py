"""The module_db cases: one per (module, check, training mode, dtype), with the skip table
applied (rows of ``db="module"``), and how each runs.

Checks: ``values`` (each dtype the ModuleInfo supports, float32 and float64), ``gradients``
(float64), ``errors`` (where the entry has error inputs). Training mode always; eval mode too
where the ModuleInfo says the two differ. A row narrowed by ``when`` (a predicate on torch's
ModuleInput) is a case of its own, as in op_cases.py.
"""
from __future__ import annotations

import dataclasses
import functools
from typing import Any, Iterable, List, Optional, Tuple

import pytest
import torch

from . import module_runner as M
from . import op_runner as R
from . import torch_database
from .op_cases import dtype_name
from .skip_rules import Skip
from .skips import TABLE

__all__ = ["ModuleCase", "module_entries", "module_cases", "run_module_case"]

_DTYPES = (torch.float32, torch.float64)


@functools.lru_cache(maxsize=None)
def module_entries() -> Tuple[M.ModuleEntry, ...]:
    """Every ModuleInfo of torch's module_db, with tinyattn's class found by name."""
    return tuple(M.ModuleEntry.build(info) for info in torch_database.module_db())


@dataclasses.dataclass
class ModuleCase:
    check: str
    entry: M.ModuleEntry
    training: bool
    dtype: Optional[torch.dtype]
    rows: List[Skip]
    own: Optional[Skip] = None

    @property
    def id(self) -> str:
        parts = [self.check, self.entry.key, "train" if self.training else "eval"]
        parts += [dtype_name(self.dtype)] if self.dtype else []
        if self.own is not None:
            parts.append(f"skip{self.rows.index(self.own)}")
        return "-".join(parts)

    @property
    def whole(self) -> Optional[Skip]:
        return next((row for row in self.rows if row.when is None), None)

    def takes(self, module_input: Any) -> bool:
        if self.own is not None:
            return _covers(self.own, module_input)
        return not any(_covers(row, module_input) for row in self.rows
                       if row.when is not None)


def _covers(row: Skip, module_input: Any) -> bool:
    try:
        return bool(row.when(module_input))
    except Exception:  # noqa: BLE001 - a predicate that cannot read an input: not it
        return False


def _rows_for(key: str, check: str, training: bool, dtype: Optional[torch.dtype]
              ) -> List[Skip]:
    """The rows for this case (a row's ``variants`` are the modes it covers)."""
    name, mode = dtype_name(dtype), "train" if training else "eval"
    return [row for row in TABLE if row.db == "module" and row.name == key
            and check in row.checks and (not row.dtypes or name in row.dtypes)
            and (not row.variants or mode in row.variants)]


def tested_dtypes(info: Any) -> List[torch.dtype]:
    return [d for d in _DTYPES if d in info.supported_dtypes("cpu")]


def _cases_of(entry: M.ModuleEntry) -> Iterable[ModuleCase]:
    info = entry.info
    plan: List[Tuple[str, bool, Optional[torch.dtype]]] = []
    for training in M.training_modes(info):
        plan += [("values", training, dtype) for dtype in tested_dtypes(info)]
        if torch.float64 in tested_dtypes(info):
            plan.append(("gradients", training, torch.float64))
    if info.module_error_inputs_func is not None:
        plan.append(("errors", True, None))
    for check, training, dtype in plan:
        rows = _rows_for(entry.key, check, training, dtype)
        yield ModuleCase(check, entry, training, dtype, rows)
        for row in rows:
            if row.when is not None:
                yield ModuleCase(check, entry, training, dtype, rows, own=row)


def module_cases() -> List[ModuleCase]:
    return [case for entry in module_entries() if entry.present for case in _cases_of(entry)]


def _inputs_per_case() -> int:
    """How many ModuleInputs one case runs: a few by default (the first and others chosen
    by a fixed seed), all of them with TINYATTN_CONFORMANCE=all."""
    return 1 << 30 if R.RUN_ALL else 4


def _chosen(case: ModuleCase, dtype: torch.dtype, requires_grad: bool) -> List[Any]:
    inputs = M.generate_module_inputs(case.entry.info, dtype, requires_grad, case.training)
    taken = [m for m in inputs if case.takes(m)]
    return R.select_samples(taken, _inputs_per_case(), case.id)


def _run(case: ModuleCase) -> List[str]:
    failures = []
    if case.check == "errors":
        with R.quiet():
            error_inputs = list(case.entry.info.module_error_inputs_func(
                case.entry.info, device="cpu", dtype=torch.float32, requires_grad=False,
                training=True))
        for error_input in error_inputs:
            if not case.takes(error_input.module_error_input):
                continue
            result = M.check_module_error(case.entry, error_input)
            if result is not None:
                failures.append(result)
        return failures
    gradients = case.check == "gradients"
    for module_input in _chosen(case, case.dtype, requires_grad=gradients):
        if gradients:
            result = M.check_module_gradients(case.entry, module_input, case.training)
        else:
            result = M.check_module_values(case.entry, module_input, case.dtype,
                                           case.training)
        if result is not None:
            failures.append(f"{M.describe_module_input(module_input)}: {result}")
    return failures


def run_module_case(case: ModuleCase) -> None:
    failures = _run(case)
    if failures:
        shown = "\n  ".join(failures[:12])
        more = f"\n  ... and {len(failures) - 12} more" if len(failures) > 12 else ""
        pytest.fail(f"{case.id}: tinyattn disagrees with torch in {len(failures)} "
                    f"module input(s):\n  {shown}{more}", pytrace=False)
    row = case.own or case.whole
    if row is not None and row.kind == "structure":
        pytest.skip(f"skip table: {row.reason}")
