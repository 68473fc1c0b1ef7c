"""The training checkpoint: what it holds, writing it, and reading it back as untrusted input.

A checkpoint holds everything a run needs to continue with the same numbers (bit for bit on
the CPU) as a run that was never stopped: the settings, the model, the optimizer and the
schedule, the step, the dropout and data generators, and the loss history with the time
and tokens spent so far.

``read`` and ``restore`` check all of it and explain what is wrong (a missing part, a wrong
type, NaN weights, a step that does not match the history, ...) as a ``CheckpointError``,
never a raw KeyError or TypeError.
"""
from __future__ import annotations

import json
import math
import numbers
import os
from typing import Any, Dict

import numpy as np

from .. import backend, nn, optim
from ..serialization import CheckpointError, load, save
from .config import RESUME_FIELDS, TrainConfig
from .history import loss_entries

__all__ = ["CHECKPOINT", "FORMAT", "save_checkpoint", "read", "restore", "saved_settings",
           "damaged", "CheckpointError", "KEPT_ON_RESUME"]

CHECKPOINT = "checkpoint.npz"
# Settings that do not change the numbers but that a resumed run keeps unless given again.
KEPT_ON_RESUME = ("eval_every", "save_every")
FORMAT = "tinyattn-train-checkpoint-1"
_PARTS = ("config", "model", "optimizer", "scheduler", "step", "rng", "data_rng", "history")


def save_checkpoint(path: str, config: TrainConfig, model: nn.GPT, opt: optim.Optimizer,
                    sched: optim.WarmupCosineLR, step: int, data_rng: np.random.Generator,
                    history: Dict[str, Any]) -> None:
    save({
        "format": FORMAT,
        "config": {**{k: getattr(config, k) for k in RESUME_FIELDS}, "steps": config.steps,
                   **{k: getattr(config, k) for k in KEPT_ON_RESUME}},
        "model": model.state_dict(),
        "optimizer": opt.state_dict(),
        "scheduler": sched.state_dict(),
        "step": step,
        "rng": json.dumps(backend.get_rng_state()),
        "data_rng": json.dumps(data_rng.bit_generator.state),
        "history": json.dumps(history, allow_nan=False),
    }, path)


class _Problem(Exception):
    """What is wrong with one part of a checkpoint (wrapped into a CheckpointError)."""


def damaged(directory: str, problem: Any) -> CheckpointError:
    """The error for a checkpoint whose ``problem`` stops the run from continuing."""
    return CheckpointError(
        f"--resume {directory}: {CHECKPOINT} {problem}; the run cannot continue from it. "
        f"Start a new run (another --out, or --overwrite to replace this one)")


def _whole(value: Any) -> bool:
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


def _json(state: Dict[str, Any], key: str) -> Any:
    value = state[key]
    if not isinstance(value, str):
        raise _Problem(f"has '{key}' as {type(value).__name__}, not a JSON string")
    try:
        return json.loads(value)
    except (ValueError, RecursionError) as exc:
        raise _Problem(f"has '{key}' that is not valid JSON ({exc})") from None


def _check_history(history: Any, step: int) -> Dict[str, Any]:
    if not isinstance(history, dict):
        raise _Problem(f"has a history that is {type(history).__name__}, not a dict")
    losses, evals = history.get("train_loss"), history.get("evals")
    if not isinstance(losses, list) or not isinstance(evals, list):
        raise _Problem("has a history without its 'train_loss' and 'evals' lists")
    stride = history.get("train_loss_stride", 1)
    if not _whole(stride) or stride < 1 or stride & (stride - 1):
        raise _Problem(f"has a history 'train_loss_stride' of {stride!r}, not a power of 2")
    if len(losses) != loss_entries(step, stride):
        raise _Problem(f"is at step {step} but its history has {len(losses)} training losses"
                       + (f" (one per {stride} steps)" if stride > 1 else ""))
    for i, loss in enumerate(losses):
        if isinstance(loss, bool) or not isinstance(loss, numbers.Real) \
                or not math.isfinite(loss):
            raise _Problem(f"has a training loss {loss!r} at step {i + 1}, not a finite number")
    for entry in evals:
        if not isinstance(entry, dict) or not _whole(entry.get("step")) \
                or not 0 < entry["step"] <= step:
            raise _Problem(f"has an evaluation entry {str(entry)[:60]!r} without a valid step")
    for key in ("wall_time_s", "tokens"):
        value = history.get(key, 0)
        if isinstance(value, bool) or not isinstance(value, numbers.Real) \
                or not 0 <= value < math.inf:
            raise _Problem(f"has a history '{key}' of {value!r}, not a number >= 0")
    return history


def read(directory: str) -> Dict[str, Any]:
    """Load ``directory``'s checkpoint and check its structure: every part present with the
    right type, the step a whole number >= 0 that matches the history. Returns the state
    with ``history``, ``rng`` and ``data_rng`` decoded from JSON."""
    path = os.path.join(directory, CHECKPOINT)
    if not os.path.isfile(path):
        raise CheckpointError(f"--resume {directory}: no {CHECKPOINT} there; point --resume at "
                              f"the --out folder of an earlier run")
    try:
        state = load(path)
    except CheckpointError as exc:
        raise CheckpointError(f"--resume {directory}: {CHECKPOINT} is corrupt or not a tinyattn "
                              f"checkpoint ({exc})") from None
    except OSError as exc:
        raise CheckpointError(f"--resume {directory}: cannot read {CHECKPOINT} "
                              f"({exc.strerror or exc})") from None
    if not isinstance(state, dict) or state.get("format") != FORMAT:
        raise CheckpointError(f"--resume {directory}: {CHECKPOINT} is a tinyattn file but not "
                              f"a training checkpoint (no format {FORMAT!r})")
    try:
        missing = [part for part in _PARTS if part not in state]
        if missing:
            raise _Problem(f"lacks {', '.join(map(repr, missing))}")
        config = state["config"]
        if not isinstance(config, dict):
            raise _Problem(f"has settings ('config') that are {type(config).__name__}")
        absent = [key for key in RESUME_FIELDS if key not in config]
        if absent:
            raise _Problem(f"lacks the setting(s) {', '.join(absent)}")
        step = state["step"]
        if not _whole(step) or step < 0:
            raise _Problem(f"is at step {step!r}; a step is a whole number >= 0")
        steps = config.get("steps", step)
        if not _whole(steps) or steps < 1 or step > steps:
            raise _Problem(f"is at step {step} of a run of {steps!r} steps")
        for part in ("model", "optimizer", "scheduler"):
            if not isinstance(state[part], dict):
                raise _Problem(f"has '{part}' as {type(state[part]).__name__}, not a dict")
        state = dict(state, rng=_json(state, "rng"), data_rng=_json(state, "data_rng"),
                     history=_check_history(_json(state, "history"), step))
    except _Problem as problem:
        raise damaged(directory, problem) from None
    return state


def saved_settings(state: Dict[str, Any]) -> Dict[str, Any]:
    """The settings of a checkpointed run: RESUME_FIELDS and its total steps. Files from
    before ``steps`` was saved take it from the schedule; their block_size (64 for every
    task) only means something for chars."""
    settings = {key: state["config"][key] for key in RESUME_FIELDS}
    steps = state["config"].get("steps")
    if steps is None:
        steps = state["scheduler"].get("total_steps")
    settings["steps"] = steps
    if settings["task"] != "chars":
        settings["block_size"] = None
    return settings


def _finite_arrays(directory: str, where: str, tree: Any) -> None:
    items = tree.items() if isinstance(tree, dict) else enumerate(tree) \
        if isinstance(tree, (list, tuple)) else ()
    for key, value in items:
        if isinstance(value, (dict, list, tuple)):
            _finite_arrays(directory, f"{where}/{key}", value)
        elif isinstance(value, (np.ndarray, np.generic)):
            if not np.issubdtype(value.dtype, np.number):
                raise damaged(directory, f"has {where}/{key} of dtype {value.dtype}, not numbers")
            bad = int(np.size(value) - np.count_nonzero(np.isfinite(value)))
            if bad:
                raise damaged(directory, f"has {bad} NaN or infinite value(s) in {where}/{key}: "
                                       f"the saved run had diverged")


def restore(state: Dict[str, Any], directory: str, model: nn.GPT, opt: optim.Optimizer,
            sched: optim.WarmupCosineLR, data_rng: np.random.Generator) -> None:
    """Put a checked state (``read``) into freshly made objects; explain any misfit."""
    _finite_arrays(directory, "model", state["model"])
    _finite_arrays(directory, "optimizer", state["optimizer"])
    parts = (("model", model.load_state_dict), ("optimizer", opt.load_state_dict),
             ("scheduler", sched.load_state_dict), ("rng", backend.set_rng_state))
    for part, load_part in parts:
        try:
            load_part(state[part])
        except (KeyError, TypeError, ValueError, IndexError, AttributeError) as exc:
            raise damaged(directory, f"has '{part}' that does not fit this run "
                                   f"({type(exc).__name__}: {str(exc)[:200]})") from None
    try:
        data_rng.bit_generator.state = state["data_rng"]
    except (KeyError, TypeError, ValueError) as exc:
        raise damaged(directory, f"has a data generator state that does not fit "
                               f"({type(exc).__name__}: {exc})") from None
    expect = (state["step"], saved_settings(state)["steps"], state["config"]["warmup"])
    found = (getattr(sched, "last_epoch", None), getattr(sched, "total_steps", None),
             getattr(sched, "warmup_steps", None))
    if found != expect or not all(map(_whole, found)):
        raise damaged(directory, f"has a schedule at (step, total, warm-up) = {found} but the "
                               f"run is at {expect}")
