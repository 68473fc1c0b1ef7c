"""The op-table rows of ops/activations.py: each row names an op, the function under test, a
NumPy reference and its input cases (tinyattn/optable/__init__.py assembles the table)."""
from __future__ import annotations

from typing import List

import numpy as np

from .. import functional as F
from .cases import ACTIVATIONS, away_from_zero_cases, case_pair, normal_cases
from .spec import Case, OpSpec, from_pairs


__all__ = ["ROWS"]


def _hardtanh_cases(rng: np.random.Generator) -> List[Case]:
    x = rng.standard_normal((4, 5)) * 1.5
    return [case_pair("(4, 5)", np.where(np.abs(np.abs(x) - 0.8) < 0.05, x + 0.2, x))]


ROWS: List[OpSpec] = from_pairs([
    ("logsigmoid", F.logsigmoid, lambda x: -np.logaddexp(0, -x), normal_cases((3, 4), scale=4.0),
     ACTIVATIONS),
    ("elu", lambda x: F.elu(x, alpha=1.5), lambda x: np.where(x > 0, x, 1.5 * np.expm1(x)),
     away_from_zero_cases((3, 4)), ACTIVATIONS),
    ("hardtanh", lambda x: F.hardtanh(x, -0.8, 0.8), lambda x: np.clip(x, -0.8, 0.8),
     _hardtanh_cases, ACTIVATIONS),
    ("softsign", F.softsign, lambda x: x / (1 + np.abs(x)), away_from_zero_cases((3, 4)),
     ACTIVATIONS),
])
