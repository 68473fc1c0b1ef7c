"""The op-table rows of ops/softmax.py: each row names an op, the function under test, a
NumPy reference and its input cases (tinyattn/optable/__init__.py assembles the table)."""
from __future__ import annotations

from typing import List

import numpy as np
import scipy.special

from .. import functional as F
from .cases import unary_cases
from .spec import OpSpec


__all__ = ["ROWS"]


def _softmax_ref(x: np.ndarray, axis: int = -1) -> np.ndarray:
    return scipy.special.softmax(x, axis=axis)


ROWS: List[OpSpec] = [
    OpSpec("softmax", lambda x: F.softmax(x, dim=-1), _softmax_ref,
           unary_cases(shapes=((3, 4), (2, 3, 5))), "softmax"),
    OpSpec("softmax_dim0", lambda x: F.softmax(x, dim=0), lambda x: _softmax_ref(x, 0),
           unary_cases(shapes=((3, 4),)), "softmax"),
    OpSpec("log_softmax", lambda x: F.log_softmax(x, dim=-1),
           lambda x: scipy.special.log_softmax(x, axis=-1),
           unary_cases(), "log-softmax"),
]
