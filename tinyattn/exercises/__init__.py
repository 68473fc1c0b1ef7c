"""Exercises: the backward passes (ops track), the autograd engine (engine track), attention
systems (systems track).

The ops track, 01-13: broadcasting, reductions, matmul, linear, GELU, softmax, log_softmax
with negative log-likelihood, masked softmax, layer norm, embedding, attention heads, scaled
dot-product attention, rotary embeddings. Each file gives the forward; the learner writes the
backward in NumPy. The engine track, 14-20: ops that record their parents, the topological
sort, the backward pass, unbroadcast, a no-grad switch, a gradient check, training a small
network: reverse-mode autograd, piece by piece. The attention systems track, 21-26: the
online-softmax merge of tiled attention, its backward from the log-sum-exp, a KV-cache
decoding step, dynamic loss scaling, gradient checkpointing, local attention's backward.

The checker runs a learner's file in a separate process (with a time limit) and judges what
comes back in its own: for an op, a float64 gradient check over the full Jacobian and a
comparison with the reference backward for random upstream gradients; for the engine, the
same scenarios run on the reference engine. On a failure it names the input, the worst
element and the likely mistake.

    python -m tinyattn.exercises start my_exercises
    python -m tinyattn.exercises check softmax --path my_exercises

From Python: ``check("softmax", path="my_exercises").passed``. After the ops track,
``python -m tinyattn train --backward-from my_exercises`` trains the toy model with the
learner's own backward passes (payoff.py). See docs/exercises.md.
"""
from __future__ import annotations

from .catalog import EXERCISES, TRACKS, Exercise, find_exercise
from .checker import check, check_all, check_module, load_file
from .cli import listing, main, solution_source, start
from .course import Diagnosis
from .results import CheckResult, PartResult

__all__ = ["EXERCISES", "TRACKS", "Exercise", "find_exercise", "check", "check_all",
           "check_module", "load_file", "CheckResult", "PartResult", "Diagnosis", "start",
           "solution_source", "listing", "main"]
