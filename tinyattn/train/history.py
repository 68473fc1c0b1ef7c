"""The loss and evaluation history of a run, kept to a bounded size.

The checkpoint carries the history (metrics.json and loss.png are drawn from it, and a
resumed run must end with the same ones), and every save rewrites the checkpoint: a history
that grew by one loss per step made saving cost grow with the square of the run's length
(a 1M-step run: an 81 MB checkpoint). So the history is bounded:

* ``train_loss`` holds one loss per step up to ``MAX_POINTS`` steps; past that, neighbouring
  entries are averaged in pairs and ``train_loss_stride`` doubles, so entry i is the mean
  loss of steps i * stride + 1 ... (i + 1) * stride (the last one may be partly filled,
  a running mean). A run of ``MAX_POINTS`` steps or fewer (every default run) keeps every
  loss.
* ``evals`` keeps at most ``MAX_POINTS`` evaluations: past that, every other one is
  dropped (the latest always stays).

Both are pure functions of the sequence of losses and evaluations, so a resumed run and an
uninterrupted one hold the same history, bit for bit.
"""
from __future__ import annotations

from typing import Any, Dict

__all__ = ["MAX_POINTS", "record_loss", "record_eval", "loss_entries"]

MAX_POINTS = 10_000          # even: halving keeps the latest entry


def loss_entries(step: int, stride: int) -> int:
    """How many ``train_loss`` entries a history at ``step`` holds (ceil(step / stride))."""
    return -(-step // stride)


def record_loss(history: Dict[str, Any], value: float, step: int) -> None:
    """Add the loss of ``step`` (1, 2, ...) to ``history``, keeping it bounded."""
    losses = history["train_loss"]
    stride = history.get("train_loss_stride", 1)
    filled = (step - 1) % stride                # losses already in the last entry
    if filled:
        losses[-1] += (value - losses[-1]) / (filled + 1)          # running mean
        return
    if len(losses) == MAX_POINTS:               # every entry full: average them in pairs
        losses[:] = [(losses[i] + losses[i + 1]) / 2 for i in range(0, len(losses), 2)]
        history["train_loss_stride"] = stride * 2   # step - 1 = MAX_POINTS * stride: a new one
    losses.append(value)


def record_eval(history: Dict[str, Any], entry: Dict[str, Any]) -> None:
    evals = history["evals"]
    evals.append(entry)
    if len(evals) > MAX_POINTS:
        evals[:] = evals[::2]                   # len MAX_POINTS + 1 is odd: the last stays
