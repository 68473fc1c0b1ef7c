"""The op-table rows of ops/group_norm.py: each row names an op, the function under test, a
NumPy reference and its input cases (tinyattn/optable/__init__.py assembles the table)."""
from __future__ import annotations

from typing import List

import numpy as np

from .. import functional as F
from .cases import normal_inputs
from .spec import OpSpec, from_pairs


__all__ = ["ROWS"]


def _group_norm_ref(x: np.ndarray, w: np.ndarray, b: np.ndarray, groups: int = 2):
    rows = x.reshape(x.shape[0], groups, -1)
    xhat = (rows - rows.mean(-1, keepdims=True)) / np.sqrt(rows.var(-1, keepdims=True) + 1e-5)
    channel = (1, -1) + (1,) * (x.ndim - 2)
    return xhat.reshape(x.shape) * w.reshape(channel) + b.reshape(channel)


ROWS: List[OpSpec] = from_pairs([
    ("group_norm", lambda x, w, b: F.group_norm(x, 2, w, b), _group_norm_ref,
     normal_inputs((3, 4, 3, 2), (4,), (4,)), "group-norm"),
])
