"""Where a run writes, decided and checked before any training step.

Never overwrite a different run without being asked:

* ``--out`` not given: the run goes to ``runs/<task>/``. If that folder holds a run with
  other settings, the first of ``runs/<task>-2/``, ``-3/``, ... that is free (or holds a
  finished run with these very settings) is used instead, and the run says so.
* ``--out DIR`` given: if DIR holds a run with other settings, the run is refused; the
  message names the settings that differ and the flags that help (``--out`` elsewhere, or
  ``--overwrite`` to replace it).
* A finished run with the same settings is simply run again (same numbers on the CPU).
* An unfinished run with the same settings is never restarted silently: ``--resume DIR``
  continues it, ``--overwrite`` starts again.

The folder must be a folder (not a file) that can be created and written: that is checked by
writing a probe file, so a read-only ``--out`` fails at once, not after the last step.

One run at a time in a folder: a run holds ``.tinyattn-train.lock`` in it (``fcntl.flock``,
which the system releases when the process ends, however it ends, so a killed run never
leaves a stale lock), and a second run on the same folder is refused while the first runs.
"""
from __future__ import annotations

import os
import tempfile
from typing import Any, Dict, List, Optional, Tuple

try:
    import fcntl
except ImportError:  # not POSIX: no folder lock
    fcntl = None

from ..atomic import temp_prefix
from . import checkpoint
from .config import RESUME_FIELDS, TrainConfig

__all__ = ["OutputError", "choose", "check_writable", "clear_run", "RUN_FILES", "lock_folder",
           "unlock_folder", "LOCK_FILE"]

LOCK_FILE = ".tinyattn-train.lock"

RUN_FILES = (checkpoint.CHECKPOINT, "metrics.json", "loss.png", "attention.png",
             "positional.png", "attention_evolution.png", "attention_evolution.gif")


class OutputError(ValueError):
    """The output folder cannot be used (a file, not writable, or holding another run)."""


def _settings(config: TrainConfig) -> Dict[str, Any]:
    return {**{key: getattr(config, key) for key in RESUME_FIELDS}, "steps": config.steps}


def _existing(folder: str) -> Optional[Dict[str, Any]]:
    """None if ``folder`` holds no run; else its settings (None if unreadable) and step."""
    if not any(os.path.exists(os.path.join(folder, name)) for name in RUN_FILES[:2]):
        return None
    try:
        state = checkpoint.read(folder)
        return {"settings": checkpoint.saved_settings(state), "step": state["step"]}
    except checkpoint.CheckpointError:
        return {"settings": None, "step": None}


def _differences(saved: Optional[Dict[str, Any]], wanted: Dict[str, Any]) -> List[str]:
    if saved is None:
        return ["its checkpoint is missing or unreadable"]
    return [f"{key}={saved.get(key)!r} there, {value!r} here" for key, value in wanted.items()
            if saved.get(key) != value]


def choose(config: TrainConfig, log=print) -> str:
    """The folder a new (not resumed) run writes to, following the module docstring."""
    explicit = config.out is not None
    base = config.out if explicit else os.path.join("runs", config.task)
    if not base:
        raise OutputError("--out is empty; give a folder (it is created if missing)")
    wanted = _settings(config)
    candidates = [base] if explicit else [base] + [f"{base}-{n}" for n in range(2, 1000)]
    for folder in candidates:
        found = None if config.overwrite or os.path.isfile(folder) else _existing(folder)
        if found is None:
            if folder != base:
                log(f"{base}/ holds a run with other settings; writing this run to {folder}/ "
                    f"instead (--out chooses the folder, --overwrite replaces)")
            return folder
        differences = _differences(found["settings"], wanted)
        if not differences:
            if found["step"] < wanted["steps"]:
                raise OutputError(
                    f"{folder}/ holds an unfinished run with these settings (step "
                    f"{found['step']} of {wanted['steps']}): --resume {folder} continues it, "
                    f"--overwrite starts it again")
            return folder
        if explicit:
            raise OutputError(
                f"--out {folder} holds a different run ({'; '.join(differences)}); refusing "
                f"to overwrite it. Choose another --out, or add --overwrite to replace it")
    raise OutputError(f"{base}/ and its 998 numbered siblings all hold other runs; give --out")


def check_writable(folder: str) -> None:
    """Create ``folder`` if needed and prove it can be written, or say why not."""
    if os.path.exists(folder) and not os.path.isdir(folder):
        raise OutputError(f"--out {folder} is a file, not a folder; give a folder (it is "
                          f"created if missing)")
    try:
        os.makedirs(folder, exist_ok=True)
        handle, probe = tempfile.mkstemp(prefix=temp_prefix(), dir=folder)
        os.close(handle)
        os.remove(probe)
    except OSError as exc:
        raise OutputError(f"--out {folder}: cannot write there ({exc.strerror or exc}); "
                          f"choose a folder you can write to with --out") from None


def clear_run(folder: str) -> None:
    """--overwrite: remove the old run's files first, so a stop before this run's first
    checkpoint can never leave the old checkpoint to be resumed as if it were this run."""
    for name in RUN_FILES:
        path = os.path.join(folder, name)
        if os.path.isfile(path):
            os.remove(path)



def lock_folder(folder: str) -> Optional[Tuple[int, str]]:
    """Hold ``folder`` for this run (it must exist); refuse if another run holds it. Returns
    the handle for ``unlock_folder`` (None where there is no flock). The lock file is removed
    when the run ends, so a finished run's folder lists only what the run wrote."""
    if fcntl is None:
        return None
    path = os.path.join(folder, LOCK_FILE)
    for _ in range(100):
        try:
            handle = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as exc:
            raise OutputError(f"--out {folder}: cannot open its lock file {LOCK_FILE} "
                              f"({exc.strerror or exc}); remove it if no run is using the "
                              f"folder, or choose another --out") from None
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            if not isinstance(exc, BlockingIOError):   # a file system without locks: go on
                os.close(handle)
                return None
            holder = os.read(handle, 200).decode("utf-8", "replace").strip() or "pid unknown"
            os.close(handle)
            raise OutputError(f"{folder}/ is in use by another training run ({holder}); two "
                              f"runs in one folder would overwrite each other's files. Wait "
                              f"for it to finish (or stop it), or choose another --out") from None
        try:                                # the file we locked is still the one at path?
            same = os.fstat(handle).st_ino == os.stat(path).st_ino
        except OSError:                     # removed by a run that just ended: try again
            same = False
        if same:
            break
        os.close(handle)
    else:
        raise OutputError(f"--out {folder}: could not take its lock file {LOCK_FILE}")
    os.ftruncate(handle, 0)
    os.write(handle, f"pid {os.getpid()}\n".encode())
    return handle, path


def unlock_folder(handle: Optional[Tuple[int, str]]) -> None:
    """Release the folder: remove the lock file while still holding it (a run that opens it
    now locks a removed file, sees that, and takes the new one), then close it."""
    if handle is not None:
        descriptor, path = handle
        try:
            os.remove(path)
        except OSError:
            pass
        os.close(descriptor)                # closing the file releases the lock