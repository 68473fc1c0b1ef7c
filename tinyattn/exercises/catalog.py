"""Every exercise in order, all three tracks, and how to find one by name.

The ops track (01-13, ops_track.py): write the backward of an op in NumPy. The engine track
(14-20, engine_track.py): write the pieces of a reverse-mode autograd engine. The attention
systems track (21-26, systems_track.py): online softmax, the backward from the log-sum-exp,
a KV-cache step, loss scaling, checkpointing, local attention. Then, in the ops track
again: 27-28 (rnn_track.py), an LSTM and a GRU step; 29-30 (vision_track.py), conv2d's
backward and max pooling's. What an exercise, a part, a case and a known mistake are:
course.py.
"""
from __future__ import annotations

from typing import List

from .course import (DERIVATIONS, Case, EngineMistake, EnginePart, Exercise, Mistake, Part,
                     Region, Scenario)
from .engine_track import ENGINE_EXERCISES
from .ops_track import OP_EXERCISES
from .rnn_track import RNN_EXERCISES
from .systems_track import SYSTEMS_EXERCISES
from .vision_track import VISION_EXERCISES

__all__ = ["Case", "Region", "Mistake", "Part", "Scenario", "EngineMistake", "EnginePart",
           "Exercise", "EXERCISES", "TRACKS", "find_exercise", "DERIVATIONS"]

EXERCISES: List[Exercise] = (OP_EXERCISES + ENGINE_EXERCISES + SYSTEMS_EXERCISES
                             + RNN_EXERCISES + VISION_EXERCISES)   # 27-28, 29-30: ops track
TRACKS = {"ops": "write the backward of each op (NumPy)",
          "engine": "build the autograd engine itself",
          "systems": "attention systems: tiled attention, KV cache, loss scaling, checkpointing"}


def find_exercise(name: str) -> Exercise:
    """An exercise by number ('6', '06'), name ('softmax'), file name or part name ('nll')."""
    key = str(name).strip().lower()
    if key.endswith(".py"):
        key = key[:-3]
    for ex in EXERCISES:
        names = {ex.name, ex.filename[:-3], f"{ex.number:02d}", str(ex.number)}
        if key in names:
            return ex
    for ex in EXERCISES:
        if key in {part.name for part in ex.parts}:
            return ex
    known = ", ".join(ex.name for ex in EXERCISES)
    raise ValueError(f"no exercise called {name!r}; choose one of: {known} (or its number, or "
                     f"'all'); 'python -m tinyattn.exercises list' shows them")
