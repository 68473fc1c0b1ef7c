"""Gradient-check exercises: write the backward pass of an op; a checker says what is wrong.

Thirteen exercises, in order: broadcasting, reductions, matmul, linear, GELU, softmax,
log_softmax with negative log-likelihood, masked softmax, layer norm, embedding, attention
heads, scaled dot-product attention, rotary embeddings. Each is one file with the forward
given and the backward to write, in NumPy: arrays in, arrays out, math rather than framework
code. The checker wraps the learner's pair into a ``tinyattn.Function`` and runs
``tinyattn.gradcheck_report`` in float64 over several shapes and edge cases; on a failure it
names the input, the worst element, analytic against numeric, and the likely mistake.

    python -m tinyattn.exercises start my_exercises
    python -m tinyattn.exercises check softmax --path my_exercises

From Python: ``check("softmax", path="my_exercises").passed``. See docs/exercises.md.
"""
from __future__ import annotations

from .catalog import EXERCISES, Exercise, find_exercise
from .checker import CheckResult, PartResult, check, check_all, check_module, load_file
from .cli import listing, main, solution_source, start
from .diagnose import Diagnosis

__all__ = ["EXERCISES", "Exercise", "find_exercise", "check", "check_all", "check_module",
           "load_file", "CheckResult", "PartResult", "Diagnosis", "start", "solution_source",
           "listing", "main"]
