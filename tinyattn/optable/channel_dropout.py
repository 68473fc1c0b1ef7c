"""The op-table rows of ops/channel_dropout.py: the mask is drawn from a seeded generator,
so the reference draws the same one (one uniform per (sample, channel))."""
from __future__ import annotations

from typing import List

import numpy as np

from ..ops.channel_dropout import _channel_dropout
from .cases import normal_cases
from .spec import OpSpec, from_pairs


__all__ = ["ROWS"]


def _reference(x: np.ndarray) -> np.ndarray:
    keep = np.random.default_rng(0).random(x.shape[:2] + (1, 1)) >= 0.3
    return x * keep / 0.7


ROWS: List[OpSpec] = from_pairs([
    ("dropout2d", lambda x: _channel_dropout("dropout2d", 2, x, 0.3, True,
                                             np.random.default_rng(0)),
     _reference, normal_cases((6, 5, 3, 2)), "dropout"),
])
