"""The optim_db cases: one per (optimizer, constructor variant), with the skip table applied
(rows of ``db="optim"``; a row's ``when`` is a predicate on the OptimizerInput, e.g.
``desc_is("amsgrad")``), and how each runs (optim_runner.py). Every variant runs: there are
few, and a trajectory of a few steps on a (3, 4) weight costs milliseconds."""
from __future__ import annotations

import dataclasses
import functools
import re
from typing import Any, List, Optional, Tuple

import pytest

from . import optim_runner as O
from . import torch_database
from .skip_rules import Skip
from .skips import TABLE

__all__ = ["OptimCase", "optim_entries", "optim_cases", "run_optim_case"]


@functools.lru_cache(maxsize=None)
def optim_entries() -> Tuple[O.OptimEntry, ...]:
    """Every OptimizerInfo of torch's optim_db, with tinyattn's class found by name."""
    return tuple(O.OptimEntry.build(info) for info in torch_database.optim_db())


@dataclasses.dataclass
class OptimCase:
    entry: O.OptimEntry
    optim_input: Any
    row: Optional[Skip]

    @property
    def id(self) -> str:
        desc = re.sub(r"[^A-Za-z0-9_.]+", "_", self.optim_input.desc)
        return f"optimizer-{self.entry.key}-{desc}"


def _row_for(key: str, optim_input: Any) -> Optional[Skip]:
    for row in TABLE:
        if row.db != "optim" or row.name != key:
            continue
        try:
            if row.when is None or row.when(optim_input):
                return row
        except Exception:  # noqa: BLE001 - a predicate that cannot read an input: not it
            continue
    return None


def optim_cases() -> List[OptimCase]:
    return [OptimCase(entry, optim_input, _row_for(entry.key, optim_input))
            for entry in optim_entries() if entry.present
            for optim_input in O.optimizer_inputs(entry.info)]


def marks_for(case: OptimCase) -> list:
    if case.row is None:
        return []
    if case.row.kind in ("skip", "structure"):
        return [pytest.mark.skip(reason=f"skip table: {case.row.reason}")]
    return [pytest.mark.xfail(strict=True, reason=f"skip table: {case.row.reason}")]


def run_optim_case(case: OptimCase) -> None:
    result = O.check_trajectory(case.entry, case.optim_input)
    if result is not None:
        pytest.fail(f"{case.id} ({case.optim_input.kwargs}): tinyattn disagrees with torch: "
                    f"{result}", pytrace=False)
