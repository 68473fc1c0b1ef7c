"""The op-table rows of ops/attention.py: each row names an op, the function under test, a
NumPy reference and its input cases (tinyattn/optable/__init__.py assembles the table)."""
from __future__ import annotations

from typing import List

import numpy as np

from .. import functional as F
from ..nn.long_attention import linformer_attention
from ..ops.attention import packed_rows, packed_self_attention
from .cases import (LONG_SEQUENCES_DOC, attention_cases, attention_ref, causal_mask_or_flag,
                    op_case, softmax_rows)
from .spec import Case, OpSpec, from_pairs


__all__ = ["ROWS"]


def _linformer_cases(rng: np.random.Generator) -> List[Case]:
    """q, k, v (2, 2, 6, 4), E and F (3, 6); and S = 5 < seq_len = 6 (E's first 5 columns)."""
    cases = []
    for s in (6, 5):
        q, k, v = (rng.standard_normal((2, 2, s, 4)) for _ in range(3))
        e, f = rng.standard_normal((3, 6)) / np.sqrt(3), rng.standard_normal((3, 6)) / np.sqrt(3)
        cases.append((f"q, k, v (2, 2, {s}, 4) E, F (3, 6)", (q, k, v, e, f)))
    return cases


def _linformer_ref(q: np.ndarray, k: np.ndarray, v: np.ndarray, e: np.ndarray,
                   f: np.ndarray) -> np.ndarray:
    s = k.shape[-2]
    k_low, v_low = e[:, :s] @ k, f[:, :s] @ v
    return softmax_rows(q @ np.swapaxes(k_low, -1, -2) / np.sqrt(q.shape[-1])) @ v_low


ROWS: List[OpSpec] = [
    OpSpec("attention", lambda q, k, v, m=None: F.scaled_dot_product_attention(q, k, v, m),
           attention_ref, attention_cases, "attention"),
    OpSpec("attention_broadcast",   # one set of keys/values shared by every batch row and head
           lambda q, k, v: F.scaled_dot_product_attention(q, k, v), attention_ref,
           lambda rng: [op_case("q (2, 3, 4, 5) k, v (1, 1, 6, 5)",
                              rng.standard_normal((2, 3, 4, 5)),
                              rng.standard_normal((1, 1, 6, 5)),
                              rng.standard_normal((1, 1, 6, 5)))], "attention"),
    OpSpec("attention_packed",      # MultiHeadAttention's self-attention: q, k, v stacked
           lambda qkv: packed_self_attention(qkv, is_causal=True),
           lambda qkv: attention_ref(qkv[0], qkv[1], qkv[2],
                                      np.tri(qkv.shape[-2], qkv.shape[-2], dtype=bool)),
           lambda rng: [op_case("qkv (3, 2, 2, 4, 5) causal",
                              rng.standard_normal((3, 2, 2, 4, 5)))], "attention"),
    OpSpec("packed_rows",           # MultiHeadAttention's q/k/v weights: rows of one array
           lambda w: packed_rows([w[0:2], w[2:5], w[5:6]]), lambda w: w,
           lambda rng: [op_case("w (6, 3) as its rows 0:2, 2:5, 5:6",
                                rng.standard_normal((6, 3)))], "attention"),
    OpSpec("attention_causal",
           lambda q, k, v, m=None: F.scaled_dot_product_attention(
               q, k, v, **causal_mask_or_flag(q, k, m)),
           lambda q, k, v, m=None: attention_ref(
               q, k, v, np.tri(q.shape[-2], k.shape[-2], dtype=bool) if m is None
               else m & np.tri(q.shape[-2], k.shape[-2], dtype=bool)),
           attention_cases, "attention"),
    OpSpec("attention_composed",    # the same attention from separate ops (viz.explore)
           lambda q, k, v, m=None: F.scaled_dot_product_attention(q, k, v, m,
                                                                  impl="composed"),
           attention_ref, attention_cases, "attention"),
] + from_pairs([
    ("linformer_attention", linformer_attention, _linformer_ref, _linformer_cases,
     LONG_SEQUENCES_DOC + "linformer"),
])
