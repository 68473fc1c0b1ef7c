"""What each task usually reaches with the default settings, and a warning when a run ends
well below it (so that a learner whose addition run stops at 57% knows it needs more steps,
not a bug hunt).

Every figure in ``USUAL`` was measured with this repository's training script and the
default settings except the ones named, seeds 0 and 1 (``python -m tinyattn train --task T
--pos-encoding P --steps N --seed S``; docs/see_it.md#is-my-run-normal lists the results).
"""
from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import Any, Dict, Optional, Tuple

from .config import default_warmup

__all__ = ["Usual", "USUAL", "accuracy_warning", "warn_if_below_usual", "WELL_BELOW"]


@dataclass(frozen=True)
class Usual:
    steps: int             # the --steps of the measured runs
    accuracy: float        # the lower of the two seeds' final held-out exact match


# (task, pos_encoding) -> the fewest steps measured (500, 1000, 2000) that reach the task's
# best, and the lower of the two seeds' accuracy there. Measured 2026-11-30 at the commit
# that added this file; every run and its figures: docs/see_it.md#is-my-run-normal.
USUAL: Dict[Tuple[str, str], Usual] = {
    ("reverse", "learned"): Usual(500, 1.0),
    ("copy", "learned"): Usual(500, 1.0),
    ("sort", "learned"): Usual(500, 1.0),
    ("addition", "learned"): Usual(1000, 0.974),     # 500 steps: 56.9% and 64.4%
    ("reverse", "sinusoidal"): Usual(500, 1.0),
    ("reverse", "rope"): Usual(500, 0.993),
    ("reverse", "alibi"): Usual(2000, 0.817),        # 500 steps: 60.7% and 61.0%
}
WELL_BELOW = 0.8    # warn below this fraction of the usual accuracy
# Settings that change what a run can reach; a run that changes one is not compared (the
# warm-up is compared with its default for the run's steps).
_MODEL_SETTINGS = ("d_model", "heads", "layers", "lr", "warmup", "batch_size", "dropout",
                   "weight_decay", "eval_size")


def _is_default(config: Any, name: str) -> bool:
    value = getattr(config, name)
    if name == "warmup":
        return value is None or value == default_warmup(config.steps)
    return value == getattr(type(config)(), name)


def accuracy_warning(config: Any, metrics: Dict[str, Any], out: str) -> Optional[str]:
    """A warning when a finished run with default model settings ends well below what its
    task usually reaches, with what to do about it; None otherwise."""
    accuracy = metrics.get("heldout_exact_match")
    usual = USUAL.get((config.task, config.pos_encoding))
    if accuracy is None or usual is None or metrics.get("interrupted"):
        return None
    if not all(_is_default(config, name) for name in _MODEL_SETTINGS):
        return None
    if accuracy >= WELL_BELOW * usual.accuracy:
        return None
    steps = metrics.get("steps", config.steps)
    where = (f"'{config.task}' with --pos-encoding {config.pos_encoding} usually reaches "
             f"{usual.accuracy:.0%} with the default settings and --steps {usual.steps} "
             f"(measured, seeds 0 and 1)")
    if steps < usual.steps:
        advice = (f"this run trained {steps} steps: continue it with --resume {out} --steps "
                  f"{usual.steps}, or start again with --steps {usual.steps}")
    else:
        advice = (f"this run trained {steps} steps, enough for that: try another --seed, and "
                  f"if it stays low, check your changes (python -m tinyattn gradcheck)")
    return (f"warning: held-out exact match {accuracy:.1%} is well below what is usual; "
            f"{where}; {advice}")


def warn_if_below_usual(config: Any, metrics: Dict[str, Any], out: str) -> None:
    """Print ``accuracy_warning`` to standard error (even with --quiet) and keep it in the
    metrics under "warning"."""
    warning = accuracy_warning(config, metrics, out)
    if warning is not None:
        metrics["warning"] = warning
        print(warning, file=sys.stderr)
