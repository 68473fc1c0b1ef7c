"""Judge an engine-track part: the learner's probe values against the reference's.

The probes (probes.py) run in the learner's process on the learner's module, and here, in the
checker's process, on a fresh copy of the reference solution, scenario by scenario in the same
order (a module may keep state between scenarios, as a no_grad switch does). When a part's
``verify`` finds a difference, each known ``EngineMistake`` is installed into another fresh
copy of the reference and replayed: identical values name the mistake (else ``verify``'s own
diagnosis stands).
"""
from __future__ import annotations

from typing import Any, Callable, Dict, List, Optional

import numpy as np

from .course import Diagnosis, EnginePart, Exercise, Scenario
from .engine_verify import same_values
from .runner import find_probe
from .results import Failure, PartResult, fail, learner_failure, wrap

__all__ = ["prepare_engine_part", "engine_request", "judge_engine_part"]

Loader = Callable[[], Any]                      # a fresh copy of the reference module


def prepare_engine_part(exercise: Exercise, part: EnginePart, once: bool) -> List[Scenario]:
    scenarios = part.scenarios(np.random.default_rng(exercise.number * 100))
    return scenarios[:1] if once else scenarios


def engine_request(part: EnginePart, scenarios: List[Scenario]) -> Dict[str, Any]:
    return {"kind": "engine", "name": part.name, "functions": list(part.functions),
            "probe": part.probe,
            "scenarios": [{"label": s.label, "data": s.data} for s in scenarios]}


def _known_mistake(part: EnginePart, scenarios: List[Scenario],
                   learner: List[Optional[Dict[str, Any]]], load_reference: Loader
                   ) -> Optional[Diagnosis]:
    """The known mistake whose values equal the learner's in EVERY scenario the learner's
    code completed (one scenario alone can be ambiguous), or None."""
    probe = find_probe(part.probe)
    agree = part.agree or same_values
    for mistake in part.mistakes:
        module = load_reference()
        mistake.install(module)
        for scenario, got in zip(scenarios, learner):
            try:
                values = probe(module, scenario.data)
            except Exception:  # the mistake breaks here; the learner's code did not
                values = None
            if got is not None and (values is None or not agree(got, values)):
                break
        else:
            return Diagnosis(mistake.kind, mistake.message)
    return None


def _values(record: Dict[str, Any], arrays: Dict[str, np.ndarray], s: int,
            want: Dict[str, Any]) -> Dict[str, Any]:
    """The learner's values of scenario ``s``: an array only where the reference has one, so
    a verify function never meets an array where it expects a number or a string."""
    values = dict(record.get("values")) if isinstance(record.get("values"), dict) else {}
    names = record.get("arrays") if isinstance(record.get("arrays"), list) else []
    for name in names:
        if isinstance(name, str) and (isinstance(want.get(name), np.ndarray) or (
                name.startswith("ret_") and name in want)):   # a returned value, any type
            values[name] = arrays.get(f"s{s}_{name}")
    return values


def judge_engine_part(exercise: Exercise, part: EnginePart, scenarios: List[Scenario],
                      record: Any, arrays: Dict[str, np.ndarray], origin: str,
                      load_reference: Loader, once: bool = False) -> PartResult:
    if isinstance(record, dict) and record.get("status") == "missing_function":
        text = wrap(f"{origin} has no function {record.get('function')}; the checker calls it "
                    f"by that name. Restore it from a fresh stub (start DIR).")
        return PartResult(part.name, "error", f"  {part.name}: ERROR\n{text}",
                          Diagnosis("missing_function", text))
    results = record.get("scenarios") if isinstance(record, dict) else None
    results = results if isinstance(results, list) else []
    reference = load_reference()
    probe = find_probe(part.probe)
    wants = [probe(reference, scenario.data) for scenario in scenarios]
    learner = [_values(r, arrays, s, wants[s]) if isinstance(r, dict) and r.get("status") ==
               "ok" else None for s, r in enumerate(results[:len(scenarios)])]
    got: Dict[str, Any] = {}
    try:
        for s, scenario in enumerate(scenarios):
            where = f"scenario {s + 1} of {len(scenarios)}: {scenario.label}"
            srec = results[s] if s < len(results) and isinstance(results[s], dict) else None
            if srec is None:
                raise fail(part.name, "error", [wrap(f"no result for {where}: the process "
                                                     f"running your code stopped early")],
                           Diagnosis("unreadable", ""), where)
            if srec.get("status") == "error":
                raise learner_failure(exercise, part.name, srec.get("error"), where)
            got = learner[s]
            try:
                diagnosis = part.verify(scenario, got, wants[s])
            except (TypeError, ValueError, KeyError, IndexError, AttributeError):
                diagnosis = Diagnosis("unreadable", "the checker could not make sense of what "
                                                    "your code returned here")
            if diagnosis is None:
                continue
            diagnosis = _known_mistake(part, scenarios, learner, load_reference) or diagnosis
            raise fail(part.name, "failed", [f"    {where}", wrap(f"diagnosis: "
                                                                 f"{diagnosis.message}"),
                                             f"    read: {exercise.read}"], diagnosis, where)
    except Failure as failure:
        return failure.result
    if once:
        return PartResult(part.name, "passed", f"  {part.name}: right for this scenario")
    count = f"{len(scenarios)} scenario{'' if len(scenarios) == 1 else 's'}"
    text = f"  {part.name}: passed ({count})"
    note = part.note(got) if part.note is not None else ""
    return PartResult(part.name, "passed", text + (f"; {note}" if note else ""))
