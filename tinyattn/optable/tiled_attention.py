"""The op-table rows of ops/tiled_attention.py: each row names an op, the function under test, a
NumPy reference and its input cases (tinyattn/optable/__init__.py assembles the table)."""
from __future__ import annotations

from typing import List

import numpy as np

from .. import functional as F
from .cases import attention_cases, attention_ref, causal_mask_or_flag
from .spec import OpSpec


__all__ = ["ROWS"]


ROWS: List[OpSpec] = [
    # impl="tiled" (docs/tiled_attention.md): block_size=2 splits the cases into several tiles.
    OpSpec("attention_tiled",
           lambda q, k, v, m=None: F.scaled_dot_product_attention(q, k, v, m, impl="tiled",
                                                                  block_size=2),
           attention_ref, attention_cases, "tiled_attention.md#4-backward-step-by-step"),
    OpSpec("attention_tiled_causal",
           lambda q, k, v, m=None: F.scaled_dot_product_attention(
               q, k, v, **causal_mask_or_flag(q, k, m), impl="tiled", block_size=2),
           lambda q, k, v, m=None: attention_ref(
               q, k, v, np.tri(q.shape[-2], k.shape[-2], dtype=bool) if m is None
               else m & np.tri(q.shape[-2], k.shape[-2], dtype=bool)),
           attention_cases, "tiled_attention.md#4-backward-step-by-step"),
]
