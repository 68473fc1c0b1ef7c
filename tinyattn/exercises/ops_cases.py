"""The inputs the checker feeds the ops track: several cases per part, simple ones first.

Each builder takes a seeded generator and returns ``Case``s: float64 inputs, constants, the
sizes in the exercise's letters (``dims``, for explaining a shape error), factors a
diagnosis may name (N averaged, sqrt(d_k), ...) and regions (masked positions, repeated ids).
"""
from __future__ import annotations

import math
from typing import List, Tuple

import numpy as np

from .course import Case, Region

__all__ = ["binary_cases", "reduce_cases", "matmul_cases", "linear_cases", "gelu_cases",
           "row_cases", "nll_cases", "keep_or_fill_cases", "masked_softmax_cases",
           "layer_norm_cases", "embedding_cases", "split_cases", "merge_cases",
           "attention_cases", "rope_cases", "ATTENTION_LEAK"]


def _randn(rng: np.random.Generator, *shape: int) -> np.ndarray:
    return rng.standard_normal(shape)


def _copies(in_shape: Tuple[int, ...], out_shape: Tuple[int, ...]) -> int:
    return math.prod(out_shape) // math.prod(in_shape)


# ------------------------------------------------------------------ 01 broadcasting
def binary_cases(rng: np.random.Generator) -> List[Case]:
    cases = []
    for label, sa, sb in [("same shapes", (2, 3), (2, 3)),
                          ("b along the last axis, (B, S, D) with (D,)", (2, 3, 4), (4,)),
                          ("both broadcast", (3, 1), (1, 4)),
                          ("a new leading axis and size-1 axes", (2, 1, 4), (3, 1)),
                          ("square: b (D,) lines up with the LAST axis of (D, D)", (4, 4),
                           (4,))]:
        out = np.broadcast_shapes(sa, sb)
        factors = [(float(_copies(s, out)), f"the number of copies broadcasting made of {n}")
                   for n, s in (("a", sa), ("b", sb)) if _copies(s, out) > 2]
        cases.append(Case(label, {"a": _randn(rng, *sa), "b": _randn(rng, *sb)},
                          factors=factors, dims={"a": sa, "b": sb, "out": out}))
    return cases


# ------------------------------------------------------------------ 02 reductions
def reduce_cases(rng: np.random.Generator) -> List[Case]:
    specs = [("axis=1", (3, 4), 1, False),
             ("axis=(0, 2), keepdims=True", (2, 3, 4), (0, 2), True),
             ("square, axis=0: where the axis goes back matters", (4, 4), 0, False),
             ("axis=None: a 0-d output", (2, 3), None, False),
             ("axis=-1", (2, 3, 5), -1, False)]
    cases = []
    for label, shape, axis, keepdims in specs:
        axes = range(len(shape)) if axis is None else np.atleast_1d(axis)
        count = math.prod(shape[a] for a in axes)
        out = np.sum(np.zeros(shape), axis=axis, keepdims=keepdims).shape
        cases.append(Case(label, {"x": _randn(rng, *shape)},
                          {"axis": axis, "keepdims": keepdims},
                          factors=[(float(count), f"N = {count}, the number of elements "
                                                  f"reduced into each output")],
                          dims={"x": shape, "out": out}))
    return cases


# ------------------------------------------------------------------ 03 matmul, 04 linear
def matmul_cases(rng: np.random.Generator) -> List[Case]:
    specs = [("matrices", (3, 4), (4, 2)),
             ("batched (B, M, K) @ (B, K, N)", (2, 3, 4), (2, 4, 5)),
             ("a 2-D b shared by the batch", (2, 3, 4), (4, 2)),
             ("square matrices", (2, 3, 3), (2, 3, 3)),
             ("both batch dims broadcast", (2, 1, 3, 4), (3, 4, 2))]
    return [Case(label, {"a": _randn(rng, *sa), "b": _randn(rng, *sb)},
                 dims={"M": sa[-2], "K": sa[-1], "N": sb[-1]})
            for label, sa, sb in specs]


def linear_cases(rng: np.random.Generator) -> List[Case]:
    specs = [("rows (N, in)", (4, 3), 2),
             ("a sequence batch (B, S, in)", (2, 3, 4), 5),
             ("one row, square weight", (1, 3), 3)]
    cases = []
    for label, sx, out_features in specs:
        rows = math.prod(sx[:-1])
        cases.append(Case(label, {"x": _randn(rng, *sx),
                                  "weight": _randn(rng, out_features, sx[-1]),
                                  "bias": _randn(rng, out_features)},
                          factors=[(float(rows), f"N = {rows}, the number of rows")]
                          if rows > 2 else [],
                          dims={"N (rows)": rows, "in": sx[-1], "out": out_features}))
    return cases


# ------------------------------------------------------------------ 05 gelu
def gelu_cases(rng: np.random.Generator) -> List[Case]:
    return [Case("values around 0", {"x": _randn(rng, 3, 4)}),
            Case("exactly 0 and large magnitudes where Phi saturates",
                 {"x": np.array([0.0, -6.0, -3.0, 3.0, 6.0, 0.5])}),
            Case("a batch", {"x": 2.0 * _randn(rng, 2, 3, 2)})]


# ------------------------------------------------------------------ 06 / 07 softmax family
def row_cases(rng: np.random.Generator) -> List[Case]:
    return [Case("rows", {"x": _randn(rng, 3, 5)}, dims={"N (rows)": 3, "C": 5}),
            Case("a batch", {"x": _randn(rng, 2, 3, 4)}, dims={"C": 4}),
            Case("large logits: saturated rows", {"x": 30.0 * _randn(rng, 2, 4)},
                 dims={"C": 4}),
            Case("one class: the output is constant", {"x": _randn(rng, 3, 1)},
                 dims={"N (rows)": 3, "C": 1})]


def nll_cases(rng: np.random.Generator, name: str, log_probs: bool) -> List[Case]:
    cases = []
    for label, n, c in [("4 rows, 3 classes", 4, 3), ("one row", 1, 5),
                        ("every row the same target", 3, 3)]:
        x = _randn(rng, n, c)
        if log_probs:
            x = x - np.log(np.exp(x).sum(axis=1, keepdims=True))
        target = np.zeros(n, dtype=np.int64) + 1 if "same" in label else \
            rng.integers(0, c, size=n)
        factors = [(float(n), f"N = {n}, the number of rows averaged")] if n > 2 else []
        cases.append(Case(label, {name: x}, {"target": target}, factors=factors,
                          dims={"N": n, "C": c}))
    return cases


# ------------------------------------------------------------------ 08 masking
def _keep_mask(rng: np.random.Generator, shape: Tuple[int, ...], full_row: bool) -> np.ndarray:
    keep = rng.random(shape) < 0.6
    keep[..., 0] = True                         # every row keeps something ...
    if full_row:
        keep[(0,) * (len(shape) - 2) + (1,)] = False   # ... except row 1: fully masked
    return keep


_LEAK = ("Gradient flows into masked positions. A masked position's input never reaches the "
         "output (it was replaced), so its gradient is exactly 0: zero those positions, e.g. "
         "np.where(keep, grad, 0).")


def _masked_regions(keep: np.ndarray, shape: Tuple[int, ...]) -> List[Region]:
    masked = ~np.broadcast_to(keep, shape)
    full = np.broadcast_to(masked.all(axis=-1, keepdims=True), shape)
    regions = []
    if full.any():
        regions.append(Region("x", full, "fully_masked_row",
                              "A row whose positions are all masked has y = 0 everywhere; its "
                              "gradient must be 0 too, not NaN: avoid dividing by a row sum "
                              "that is 0 there.", zero=True))
    regions.append(Region("x", masked, "masked", _LEAK, zero=True))
    return regions


def keep_or_fill_cases(rng: np.random.Generator) -> List[Case]:
    cases = []
    for label, shape, keep_shape in [("a random mask", (3, 4), (3, 4)),
                                     ("one (3, 4) mask for the batch", (2, 3, 4), (3, 4)),
                                     ("a fully masked row", (3, 5), (3, 5))]:
        keep = _keep_mask(rng, keep_shape, full_row="fully" in label)
        cases.append(Case(label, {"x": _randn(rng, *shape)}, {"keep": keep, "value": -1.0},
                          regions=_masked_regions(keep, shape)))
    return cases


def masked_softmax_cases(rng: np.random.Generator) -> List[Case]:
    cases = []
    for label, shape in [("a random mask", (3, 4)),
                         ("a fully masked row", (4, 5)),
                         ("a causal mask", (2, 3, 3))]:
        if "causal" in label:
            keep = np.broadcast_to(np.tri(3, 3, dtype=bool), shape)
        else:
            keep = _keep_mask(rng, shape, full_row="fully" in label)
        cases.append(Case(label, {"x": _randn(rng, *shape)}, {"keep": keep},
                          regions=_masked_regions(keep, shape), dims={"C": shape[-1]}))
    return cases


# ------------------------------------------------------------------ 09 layer norm
def layer_norm_cases(rng: np.random.Generator) -> List[Case]:
    specs = [("rows", (4, 5)), ("a batch", (2, 3, 4)),
             ("a constant row: var = 0, eps keeps it finite", (3, 4))]
    cases = []
    for label, shape in specs:
        x = _randn(rng, *shape)
        if "constant" in label:
            x[1] = 0.7
        d = shape[-1]
        rows = math.prod(shape[:-1])
        cases.append(Case(label, {"x": x, "weight": 1.0 + 0.5 * _randn(rng, d),
                                  "bias": _randn(rng, d)},
                          factors=[(float(d), f"D = {d}, the number of features normalised")]
                          + ([(float(rows), f"the number of rows, {rows}")] if rows > 2
                             else []), dims={"N (rows)": rows, "D": d}))
    return cases


# ------------------------------------------------------------------ 10 embedding
def embedding_cases(rng: np.random.Generator) -> List[Case]:
    cases = []
    for label, vocab, dim, ids in [
            ("ids (2, 3) with repeated ids", 5, 3, np.array([[1, 3, 1], [0, 4, 3]])),
            ("the same id everywhere", 4, 2, np.array([2, 2, 2, 2])),
            ("some rows never used", 6, 2, np.array([[5, 0], [0, 5]]))]:
        counts = np.bincount(ids.reshape(-1), minlength=vocab)
        repeated = np.broadcast_to((counts > 1)[:, None], (vocab, dim))
        region = Region("weight", repeated, "repeated_ids",
                        "Only the rows of repeated ids are wrong. Each occurrence of an id "
                        "adds its gradient row; dweight[ids] = grad (or += grad) keeps only "
                        "one of them, because NumPy's fancy-index assignment does not "
                        "accumulate. Use np.add.at(dweight, ids, rows).")
        cases.append(Case(label, {"weight": _randn(rng, vocab, dim)}, {"ids": ids},
                          regions=[region], dims={"V": vocab, "D": dim,
                                                  "ids": tuple(ids.shape)}))
    return cases


# ------------------------------------------------------------------ 11 heads
def split_cases(rng: np.random.Generator) -> List[Case]:
    return [Case("(B, S, D), 2 heads", {"x": _randn(rng, 2, 3, 4)}, {"num_heads": 2},
                 dims={"B": 2, "S": 3, "D": 4, "h": 2, "d_k": 2}),
            Case("3 heads", {"x": _randn(rng, 1, 4, 6)}, {"num_heads": 3},
                 dims={"B": 1, "S": 4, "D": 6, "h": 3, "d_k": 2}),
            Case("1 head", {"x": _randn(rng, 2, 2, 4)}, {"num_heads": 1},
                 dims={"B": 2, "S": 2, "D": 4, "h": 1, "d_k": 4})]


def merge_cases(rng: np.random.Generator) -> List[Case]:
    return [Case("(B, h, S, d_k), 2 heads", {"x": _randn(rng, 2, 2, 3, 2)},
                 dims={"B": 2, "h": 2, "S": 3, "d_k": 2, "D": 4}),
            Case("3 heads", {"x": _randn(rng, 1, 3, 4, 2)},
                 dims={"B": 1, "h": 3, "S": 4, "d_k": 2, "D": 6})]


# ------------------------------------------------------------------ 12 attention
ATTENTION_LEAK = (
    "Gradient leaks into masked positions: a key that no query may attend to must get "
    "dk = 0 and dv = 0, and a query that may attend to nothing gets dq = 0. Masked entries "
    "have p = 0, so dv = p^T @ g and dS = p * (dP - rowsum(dP * p)) are 0 there: use the "
    "masked p from the cache (not a softmax recomputed without the mask), and keep the * p "
    "in dS.")


def _attention_regions(keep: np.ndarray, q_shape, k_shape) -> List[Region]:
    dead_keys = ~keep.any(axis=-2)              # (..., S_k): no query may attend to them
    dead_queries = ~keep.any(axis=-1)           # (..., S_q): they attend to nothing
    return [Region(name, np.broadcast_to(dead[..., None], shape), "attention_masked",
                   ATTENTION_LEAK, zero=True)
            for name, dead, shape in (("k", dead_keys, k_shape), ("v", dead_keys, k_shape),
                                      ("q", dead_queries, q_shape))]


def attention_cases(rng: np.random.Generator) -> List[Case]:
    factor = [(math.sqrt(3.0), "sqrt(d_k) = sqrt(3), the score scale")]
    causal = np.tri(3, 3, dtype=bool)
    padded = np.ones((2, 3, 4), dtype=bool)
    padded[0, :, 2:] = False                    # batch 0: the last two keys are padding
    padded[1, 2, :] = False                     # batch 1: query 2 may attend to nothing
    return [Case("one sequence, no mask, S_q == S_k",
                 {"q": _randn(rng, 3, 3), "k": _randn(rng, 3, 3), "v": _randn(rng, 3, 2)},
                 {"keep": None}, factors=factor,
                 dims={"S_q": 3, "S_k": 3, "d_k": 3, "d_v": 2}),
            Case("one sequence, no mask, S_q != S_k",
                 {"q": _randn(rng, 2, 3), "k": _randn(rng, 4, 3), "v": _randn(rng, 4, 2)},
                 {"keep": None}, factors=factor,
                 dims={"S_q": 2, "S_k": 4, "d_k": 3, "d_v": 2}),
            Case("causal mask, S_q == S_k",
                 {"q": _randn(rng, 2, 3, 3), "k": _randn(rng, 2, 3, 3),
                  "v": _randn(rng, 2, 3, 3)}, {"keep": causal}, factors=factor,
                 dims={"batch": 2, "S_q": 3, "S_k": 3, "d_k": 3, "d_v": 3}),
            Case("padding mask and a fully masked query row",
                 {"q": _randn(rng, 2, 3, 3), "k": _randn(rng, 2, 4, 3),
                  "v": _randn(rng, 2, 4, 3)}, {"keep": padded}, factors=factor,
                 regions=_attention_regions(padded, (2, 3, 3), (2, 4, 3)),
                 dims={"batch": 2, "S_q": 3, "S_k": 4, "d_k": 3, "d_v": 3})]


# ------------------------------------------------------------------ 13 rope
def rope_cases(rng: np.random.Generator) -> List[Case]:
    return [Case("(B, S, D), positions 0..3", {"x": _randn(rng, 1, 4, 4)},
                 {"positions": np.arange(4)}, dims={"S": 4, "D": 4}),
            Case("positions 5..7 (as after a key/value cache)",
                 {"x": _randn(rng, 2, 3, 6)}, {"positions": np.arange(5, 8)},
                 dims={"S": 3, "D": 6}),
            Case("D = 2, base 100", {"x": _randn(rng, 3, 2)},
                 {"positions": np.array([0, 7, 2]), "base": 100.0}, dims={"S": 3, "D": 2})]
