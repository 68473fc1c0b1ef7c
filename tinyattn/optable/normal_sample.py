"""The op-table rows of ops/normal_sample.py: each row names an op, the function under test, a
NumPy reference and its input cases (tinyattn/optable/__init__.py assembles the table)."""
from __future__ import annotations

from typing import List

import numpy as np

from .. import ops
from .cases import normal_cases
from .spec import OpSpec, from_pairs


__all__ = ["ROWS"]


ROWS: List[OpSpec] = from_pairs([
    # torch.normal: a draw with a zero gradient by definition (derivations.md#normal-samples);
    # std = 0 makes it deterministic; the row runs it through the table's checks, and
    # tests/test_learner_names.py checks the zero gradient against torch.
    ("normal_sample", lambda m: ops.normal(m, 0.0) * 0.0, np.zeros_like, normal_cases((3, 4)),
     "normal-samples"),
])
