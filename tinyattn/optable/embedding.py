"""The op-table rows of ops/embedding.py: each row names an op, the function under test, a
NumPy reference and its input cases (tinyattn/optable/__init__.py assembles the table)."""
from __future__ import annotations

from typing import List

import numpy as np

from .. import functional as F
from ..nn.long_attention import relative_position_bucket
from ..tensor import Tensor, tensor
from .cases import LONG_SEQUENCES_DOC, op_case
from .spec import OpCase, OpSpec, from_pairs


__all__ = ["ROWS"]


def _embedding_cases(rng: np.random.Generator) -> List[OpCase]:
    return [op_case("weight (6, 3) ids (2, 4) repeated", rng.standard_normal((6, 3)),
                  np.array([[1, 1, 5, 0], [1, 2, 5, 1]]))]


_BUCKETS = relative_position_bucket(np.arange(12)[None, :] - np.arange(4, 12)[:, None], False,
                                    8, 20)           # (S_q 8, S_k 12), causal buckets


def _relative_bias_fn(weight: Tensor) -> Tensor:
    ids = tensor(_BUCKETS, device=weight.device)
    return F.embedding(ids, weight).permute(2, 0, 1)     # (S_q, S_k, h) -> (h, S_q, S_k)


ROWS: List[OpSpec] = [
    OpSpec("embedding", lambda w, ids: F.embedding(ids, w), lambda w, ids: w[ids],
           _embedding_cases, "embedding"),
] + from_pairs([
    ("relative_position_bias", _relative_bias_fn,
     lambda w: np.transpose(w[_BUCKETS], (2, 0, 1)),
     lambda rng: [("weight (8 buckets, 3 heads), S_q 8, S_k 12", (rng.standard_normal((8, 3)),))],
     LONG_SEQUENCES_DOC + "relative-position-bias-t5"),
])
