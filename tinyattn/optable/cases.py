"""Case makers, references and doc sections that rows of several ops modules share."""
from __future__ import annotations

from typing import Any, Callable, List, Sequence, Tuple

import numpy as np

from ..tensor import Tensor, tensor
from .spec import Case, OpCase


__all__ = ["ACTIVATIONS", "GRIDS", "INDEX", "LONG_SEQUENCES_DOC", "PRODUCTS", "SCATTER_REDUCE",
           "attention_cases", "attention_ref", "away_from_zero_cases", "case_pair",
           "device_tensor", "distinct_cases", "normal_cases", "normal_inputs", "op_case",
           "qkv_cases", "scatter_reduce_cases", "shapes_label", "shapes_text", "softmax_rows",
           "unary_cases"]


def op_case(label: str, *arrays: np.ndarray) -> OpCase:
    return OpCase(label, tuple(arrays))


def shapes_text(*shapes: Sequence[int]) -> str:
    return " ".join(str(tuple(s)) for s in shapes)


def unary_cases(low: float = None, shapes=((3, 4), (2, 3, 5))):  # type: ignore[assignment]
    def make(rng: np.random.Generator) -> List[OpCase]:
        out = []
        for s in shapes:
            x = rng.standard_normal(s)
            if low is not None:
                x = np.abs(x) + low
            out.append(op_case(shapes_text(s), x))
        return out
    return make


def causal_mask_or_flag(q: Tensor, k: Tensor, mask: Any) -> dict:
    """The keywords of a causal row: is_causal=True alone, or with a mask the causal
    triangle folded into it (torch refuses attn_mask together with is_causal)."""
    if mask is None:
        return {"is_causal": True}
    causal = tensor(np.tri(q.shape[-2], k.shape[-2], dtype=bool), device=q.device)
    mask = mask if isinstance(mask, Tensor) else tensor(mask, device=q.device)
    return {"attn_mask": mask & causal}                       # on q's device, no host copy


def attention_ref(q, k, v, mask=None):
    scores = q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1])
    if mask is not None:
        scores = np.where(mask, scores, -np.inf)
    m = scores.max(-1, keepdims=True)
    m = np.where(np.isfinite(m), m, 0)
    e = np.exp(scores - m)
    total = e.sum(-1, keepdims=True)
    p = e / np.where(total == 0, 1, total)
    return p @ v


def attention_cases(rng: np.random.Generator) -> List[OpCase]:
    q, k, v = (rng.standard_normal((2, 2, 3, 4)), rng.standard_normal((2, 2, 5, 4)),
               rng.standard_normal((2, 2, 5, 3)))
    padding = np.ones((2, 1, 1, 5), dtype=bool)
    padding[1, :, :, 3:] = False
    fully_masked = np.ones((3, 5), dtype=bool)
    fully_masked[1] = False                      # query 1 may attend to nothing
    return [
        op_case(shapes_text(q.shape, k.shape, v.shape), q, k, v),
        op_case(shapes_text(q.shape, k.shape, v.shape) + " padding mask (2,1,1,5)",
                q, k, v, padding),
        op_case(shapes_text(q.shape, k.shape, v.shape) + " fully masked row",
                q, k, v, fully_masked),
    ]


INDEX = "roll-diagonal-and-other-index-ops"


PRODUCTS = "outer-dot-mv-addmm-and-lerp"


ACTIVATIONS = "activations-normalize-and-cosine-similarity"


def normal_inputs(*shapes: Tuple[int, ...]) -> Callable[..., List[Case]]:
    """One case with several inputs, one standard normal array per shape."""
    return lambda rng: [case_pair(shapes_label(*shapes),
                                  *(rng.standard_normal(s) for s in shapes))]


def case_pair(label: str, *arrays: np.ndarray) -> Case:
    return label, tuple(np.asarray(a) for a in arrays)


def shapes_label(*shapes: Any) -> str:
    return " ".join(str(tuple(s)) for s in shapes)


def normal_cases(*shapes: Tuple[int, ...], scale: float = 1.0) -> Callable[..., List[Case]]:
    return lambda rng: [case_pair(shapes_label(s), scale * rng.standard_normal(s)) for s in shapes]


def away_from_zero_cases(*shapes: Tuple[int, ...]) -> Callable[..., List[Case]]:
    def make(rng: np.random.Generator) -> List[Case]:
        out = []
        for s in shapes:
            x = rng.standard_normal(s)
            out.append(case_pair(shapes_label(s), x + np.sign(x) * 0.1))
        return out
    return make


def distinct_cases(*shapes: Tuple[int, ...]) -> Callable[..., List[Case]]:
    """Values without ties (and distinct magnitudes): max, min, sort, topk, inf-norm."""
    def make(rng: np.random.Generator) -> List[Case]:
        return [case_pair(shapes_label(s), (rng.permutation(int(np.prod(s))).reshape(s) + 1.0)
                   * rng.choice([-1.0, 1.0], size=s) / 4.0) for s in shapes]
    return make


def device_tensor(values: np.ndarray, like: Tensor) -> Tensor:
    """A constant (weights) on the device and in the dtype of the tensor under test."""
    return tensor(values.astype(like.dtype), device=like.device)


SCATTER_REDUCE = "scatter_reduce-index_fill-and-bincount"


def scatter_reduce_cases(rng: np.random.Generator) -> List[Case]:
    """self (3, 4), index (3, 4) along dim 0 with repeats, src (3, 4) of distinct values
    (no ties for amax / amin; no zeros for prod)."""
    index = np.array([[0, 2, 1, 0], [0, 0, 2, 0], [1, 2, 2, 2]])
    src = (rng.permutation(12).reshape(3, 4) + 1.0) * rng.choice([-1.0, 1.0], (3, 4)) / 5
    return [case_pair("(3, 4) dim 0 index (3, 4) with repeats src (3, 4)",
               rng.standard_normal((3, 4)) + 3.0, index, src)]


GRIDS = "meshgrid-diag-and-unique"


LONG_SEQUENCES_DOC = "long_sequences.md#"


def qkv_cases(shapes: Tuple[Tuple[int, ...], ...]) -> Callable[..., List[Case]]:
    """q, k, v of shape (B, h, S, d) for each (B, h, S, d) (v one narrower)."""
    def make(rng: np.random.Generator) -> List[Case]:
        cases = []
        for b, h, s, d in shapes:
            label = f"q, k ({b}, {h}, {s}, {d}) v ({b}, {h}, {s}, {d - 1})"
            cases.append((label, (rng.standard_normal((b, h, s, d)),
                                  rng.standard_normal((b, h, s, d)),
                                  rng.standard_normal((b, h, s, d - 1)))))
        return cases
    return make


def softmax_rows(scores: np.ndarray) -> np.ndarray:
    scores = scores - scores.max(axis=-1, keepdims=True)
    e = np.exp(scores)
    return e / e.sum(axis=-1, keepdims=True)
