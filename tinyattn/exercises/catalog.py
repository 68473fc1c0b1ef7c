"""The exercises: their order, the inputs the checker feeds them, and known mistakes.

An exercise is a file ``NN_name.py`` with one or more parts; part ``softmax`` is the pair of
functions ``softmax_forward(*inputs, **consts) -> (out, cache)`` and
``softmax_backward(grad, cache) -> gradient(s)``. The learner's file never holds the test
inputs: they live here, as ``Case`` objects (float64 inputs that get gradients, constants
such as ids and masks that do not), several per part, simple ones first, edge cases after.

A ``Region`` marks input elements that matter for a diagnosis (masked positions, rows hit by
repeated ids); a ``Mistake`` is a typical wrong formula computed from the reference cache, so
the checker can say "you did exactly this".
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional, Tuple

import numpy as np

__all__ = ["Case", "Region", "Mistake", "Part", "Exercise", "EXERCISES", "find_exercise",
           "DERIVATIONS"]

DERIVATIONS = "docs/derivations.md"


@dataclass
class Region:
    """Elements of one input where a specific mistake shows up.

    ``zero=True``: the right gradient is exactly zero there (masked positions), so any
    non-zero value is a leak. ``zero=False``: errors confined to the region point to it.
    """

    input: str
    where: np.ndarray
    kind: str
    message: str
    zero: bool = False


@dataclass
class Case:
    label: str
    inputs: Dict[str, np.ndarray]               # float64, in the forward's argument order
    consts: Dict[str, Any] = field(default_factory=dict)
    regions: List[Region] = field(default_factory=list)
    factors: List[Tuple[float, str]] = field(default_factory=list)  # (value, what it is)

    def describe(self) -> str:
        shapes = ", ".join(f"{k} {v.shape}" for k, v in self.inputs.items())
        return f"{self.label} [{shapes}]"


@dataclass
class Mistake:
    """A known wrong answer for one input, computed from (grad, reference cache)."""

    input: str
    kind: str
    message: str
    wrong: Callable[[np.ndarray, Any], np.ndarray]


@dataclass
class Part:
    name: str                                   # functions NAME_forward and NAME_backward
    inputs: Tuple[str, ...]
    cases: Callable[[np.random.Generator], List[Case]]
    mistakes: List[Mistake] = field(default_factory=list)
    diagonal_hint: Optional[str] = None         # set for ops whose rows couple (softmax-like)

    @property
    def forward_name(self) -> str:
        return f"{self.name}_forward"

    @property
    def backward_name(self) -> str:
        return f"{self.name}_backward"


@dataclass
class Exercise:
    number: int
    name: str
    title: str
    read: str                                   # "docs/derivations.md#softmax"
    parts: List[Part]

    @property
    def filename(self) -> str:
        return f"{self.number:02d}_{self.name}.py"

    @property
    def label(self) -> str:
        return f"{self.number:02d} {self.name}"


def _randn(rng: np.random.Generator, *shape: int) -> np.ndarray:
    return rng.standard_normal(shape)


# ------------------------------------------------------------------ 01 broadcasting
def _copies(in_shape: Tuple[int, ...], out_shape: Tuple[int, ...]) -> int:
    return int(np.prod(out_shape)) // int(np.prod(in_shape))


def _binary_cases(rng: np.random.Generator) -> List[Case]:
    cases = []
    for label, sa, sb in [("same shapes", (2, 3), (2, 3)),
                          ("b along the last axis, (B, S, D) with (D,)", (2, 3, 4), (4,)),
                          ("both broadcast", (3, 1), (1, 4)),
                          ("a new leading axis and size-1 axes", (2, 1, 4), (3, 1))]:
        out = np.broadcast_shapes(sa, sb)
        factors = [(float(_copies(s, out)), f"the number of copies broadcasting made of {n}")
                   for n, s in (("a", sa), ("b", sb)) if _copies(s, out) > 2]
        cases.append(Case(label, {"a": _randn(rng, *sa), "b": _randn(rng, *sb)},
                          factors=factors))
    return cases


# ------------------------------------------------------------------ 02 reductions
def _reduce_cases(rng: np.random.Generator) -> List[Case]:
    specs = [("axis=1", (3, 4), 1, False),
             ("axis=(0, 2), keepdims=True", (2, 3, 4), (0, 2), True),
             ("square, axis=0: where the axis goes back matters", (4, 4), 0, False),
             ("axis=None: a 0-d output", (2, 3), None, False),
             ("axis=-1", (2, 3, 5), -1, False)]
    cases = []
    for label, shape, axis, keepdims in specs:
        axes = range(len(shape)) if axis is None else np.atleast_1d(axis)
        count = int(np.prod([shape[a] for a in axes]))
        cases.append(Case(label, {"x": _randn(rng, *shape)},
                          {"axis": axis, "keepdims": keepdims},
                          factors=[(float(count), f"N = {count}, the number of elements "
                                                  f"reduced into each output")]))
    return cases


# ------------------------------------------------------------------ 03 matmul, 04 linear
def _matmul_cases(rng: np.random.Generator) -> List[Case]:
    specs = [("matrices", (3, 4), (4, 2)),
             ("batched (B, M, K) @ (B, K, N)", (2, 3, 4), (2, 4, 5)),
             ("a 2-D b shared by the batch", (2, 3, 4), (4, 2)),
             ("square matrices", (2, 3, 3), (2, 3, 3)),
             ("both batch dims broadcast", (2, 1, 3, 4), (3, 4, 2))]
    return [Case(label, {"a": _randn(rng, *sa), "b": _randn(rng, *sb)})
            for label, sa, sb in specs]


def _linear_cases(rng: np.random.Generator) -> List[Case]:
    specs = [("rows (N, in)", (4, 3), 2),
             ("a sequence batch (B, S, in)", (2, 3, 4), 5),
             ("one row, square weight", (1, 3), 3)]
    cases = []
    for label, sx, out_features in specs:
        rows = int(np.prod(sx[:-1]))
        cases.append(Case(label, {"x": _randn(rng, *sx),
                                  "weight": _randn(rng, out_features, sx[-1]),
                                  "bias": _randn(rng, out_features)},
                          factors=[(float(rows), f"N = {rows}, the number of rows")]
                          if rows > 2 else []))
    return cases


# ------------------------------------------------------------------ 05 gelu
def _gelu_cases(rng: np.random.Generator) -> List[Case]:
    return [Case("values around 0", {"x": _randn(rng, 3, 4)}),
            Case("exactly 0 and large magnitudes where Phi saturates",
                 {"x": np.array([0.0, -6.0, -3.0, 3.0, 6.0, 0.5])}),
            Case("a batch", {"x": 2.0 * _randn(rng, 2, 3, 2)})]


# ------------------------------------------------------------------ 06 / 07 softmax family
def _row_cases(rng: np.random.Generator) -> List[Case]:
    return [Case("rows", {"x": _randn(rng, 3, 5)}),
            Case("a batch", {"x": _randn(rng, 2, 3, 4)}),
            Case("large logits: saturated rows", {"x": 30.0 * _randn(rng, 2, 4)}),
            Case("one class: the output is constant", {"x": _randn(rng, 3, 1)})]


def _nll_cases(rng: np.random.Generator, name: str, log_probs: bool) -> List[Case]:
    cases = []
    for label, n, c in [("4 rows, 3 classes", 4, 3), ("one row", 1, 5),
                        ("every row the same target", 3, 3)]:
        x = _randn(rng, n, c)
        if log_probs:
            x = x - np.log(np.exp(x).sum(axis=1, keepdims=True))
        target = np.zeros(n, dtype=np.int64) + 1 if "same" in label else \
            rng.integers(0, c, size=n)
        factors = [(float(n), f"N = {n}, the number of rows averaged")] if n > 2 else []
        cases.append(Case(label, {name: x}, {"target": target}, factors=factors))
    return cases


_SOFTMAX_DIAGONAL = ("For softmax, d y_i / d x_j = y_i (delta_ij - y_j): your formula keeps "
                     "only i = j, y_i (1 - y_i). Add the terms i != j, -y_i y_j: summed "
                     "against g they collapse to one row-sum.")
_LOG_SOFTMAX_DIAGONAL = ("For log_softmax, d out_i / d x_j = delta_ij - p_j: your formula keeps "
                         "only 1 - p_i. Every x_j also lowers every out_i through the "
                         "normaliser, by p_j each; sum those terms against g.")


# ------------------------------------------------------------------ 08 masking
def _keep_mask(rng: np.random.Generator, shape: Tuple[int, ...], full_row: bool) -> np.ndarray:
    keep = rng.random(shape) < 0.6
    keep[..., 0] = True                         # every row keeps something ...
    if full_row:
        keep[(0,) * (len(shape) - 2) + (1,)] = False   # ... except row 1: fully masked
    return keep


def _masked_regions(keep: np.ndarray, shape: Tuple[int, ...]) -> List[Region]:
    masked = ~np.broadcast_to(keep, shape)
    full = np.broadcast_to(masked.all(axis=-1, keepdims=True), shape)
    regions = []
    if full.any():
        regions.append(Region("x", full, "fully_masked_row",
                              "A row whose positions are all masked has y = 0 everywhere; its "
                              "gradient must be 0 too, not NaN: avoid dividing by a row sum "
                              "that is 0 there.", zero=True))
    regions.append(Region("x", masked, "masked",
                          "Gradient flows into masked positions. A masked position's input "
                          "never reaches the output (it was replaced), so its gradient is "
                          "exactly 0: zero those positions, e.g. np.where(keep, grad, 0).",
                          zero=True))
    return regions


def _masked_fill_cases(rng: np.random.Generator) -> List[Case]:
    cases = []
    for label, shape, keep_shape in [("a random mask", (3, 4), (3, 4)),
                                     ("one (3, 4) mask for the batch", (2, 3, 4), (3, 4)),
                                     ("a fully masked row", (3, 5), (3, 5))]:
        keep = _keep_mask(rng, keep_shape, full_row="fully" in label)
        cases.append(Case(label, {"x": _randn(rng, *shape)}, {"keep": keep, "value": -1.0},
                          regions=_masked_regions(keep, shape)))
    return cases


def _masked_softmax_cases(rng: np.random.Generator) -> List[Case]:
    cases = []
    for label, shape in [("a random mask", (3, 4)),
                         ("a fully masked row", (4, 5)),
                         ("a causal mask", (2, 3, 3))]:
        if "causal" in label:
            keep = np.broadcast_to(np.tri(3, 3, dtype=bool), shape)
        else:
            keep = _keep_mask(rng, shape, full_row="fully" in label)
        cases.append(Case(label, {"x": _randn(rng, *shape)}, {"keep": keep},
                          regions=_masked_regions(keep, shape)))
    return cases


# ------------------------------------------------------------------ 09 layer norm
def _layer_norm_cases(rng: np.random.Generator) -> List[Case]:
    specs = [("rows", (4, 5)), ("a batch", (2, 3, 4)),
             ("a constant row: var = 0, eps keeps it finite", (3, 4))]
    cases = []
    for label, shape in specs:
        x = _randn(rng, *shape)
        if "constant" in label:
            x[1] = 0.7
        d = shape[-1]
        rows = int(np.prod(shape[:-1]))
        cases.append(Case(label, {"x": x, "weight": 1.0 + 0.5 * _randn(rng, d),
                                  "bias": _randn(rng, d)},
                          factors=[(float(d), f"D = {d}, the number of features normalised")]
                          + ([(float(rows), f"the number of rows, {rows}")] if rows > 2
                             else [])))
    return cases


def _layer_norm_constant(grad: np.ndarray, cache: Any) -> np.ndarray:
    xhat, rstd, weight = cache
    return grad * weight * rstd


# ------------------------------------------------------------------ 10 embedding
def _embedding_cases(rng: np.random.Generator) -> List[Case]:
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
                          regions=[region]))
    return cases


# ------------------------------------------------------------------ 11 heads
def _split_cases(rng: np.random.Generator) -> List[Case]:
    return [Case("(B, S, D), 2 heads", {"x": _randn(rng, 2, 3, 4)},
                 {"num_heads": 2}),
            Case("3 heads", {"x": _randn(rng, 1, 4, 6)}, {"num_heads": 3}),
            Case("1 head", {"x": _randn(rng, 2, 2, 4)}, {"num_heads": 1})]


def _merge_cases(rng: np.random.Generator) -> List[Case]:
    return [Case("(B, h, S, d_k), 2 heads", {"x": _randn(rng, 2, 2, 3, 2)}),
            Case("3 heads", {"x": _randn(rng, 1, 3, 4, 2)})]


# ------------------------------------------------------------------ 12 attention
def _attention_cases(rng: np.random.Generator) -> List[Case]:
    factor = [(math.sqrt(3.0), "sqrt(d_k) = sqrt(3), the score scale")]
    causal = np.tri(3, 3, dtype=bool)
    padded = np.ones((2, 3, 4), dtype=bool)
    padded[0, :, 2:] = False                    # batch 0: the last two keys are padding
    padded[1, 2, :] = False                     # batch 1: query 2 may attend to nothing
    return [Case("one sequence, no mask, S_q != S_k",
                 {"q": _randn(rng, 2, 3), "k": _randn(rng, 4, 3), "v": _randn(rng, 4, 2)},
                 {"keep": None}, factors=factor),
            Case("causal mask, S_q == S_k",
                 {"q": _randn(rng, 2, 3, 3), "k": _randn(rng, 2, 3, 3),
                  "v": _randn(rng, 2, 3, 3)}, {"keep": causal}, factors=factor),
            Case("padding mask and a fully masked query row",
                 {"q": _randn(rng, 2, 3, 3), "k": _randn(rng, 2, 4, 3),
                  "v": _randn(rng, 2, 4, 3)}, {"keep": padded}, factors=factor)]


def _attention_dscores_diagonal(grad, cache):
    q, k, v, p, scale = cache
    dp = grad @ np.swapaxes(v, -1, -2)          # (..., S_q, d_v) @ (..., d_v, S_k)
    return (p * (1 - p) * dp) @ k * scale       # (..., S_q, S_k) @ (..., S_k, d_k)


def _attention_dk_untransposed(grad, cache):
    q, k, v, p, scale = cache
    dp = grad @ np.swapaxes(v, -1, -2)          # (..., S_q, d_v) @ (..., d_v, S_k)
    dscores = p * (dp - (dp * p).sum(axis=-1, keepdims=True))
    return dscores @ q * scale      # (..., S_q, S_k) @ (..., S_q, d_k): only if S_q == S_k


# ------------------------------------------------------------------ 13 rope
def _rope_cases(rng: np.random.Generator) -> List[Case]:
    return [Case("(B, S, D), positions 0..3", {"x": _randn(rng, 1, 4, 4)},
                 {"positions": np.arange(4)}),
            Case("positions 5..7 (as after a key/value cache)",
                 {"x": _randn(rng, 2, 3, 6)}, {"positions": np.arange(5, 8)}),
            Case("D = 2, base 100", {"x": _randn(rng, 3, 2)},
                 {"positions": np.array([0, 7, 2]), "base": 100.0})]


def _rope_rotated_forward(grad, cache):
    cos, sin = cache
    out = np.empty_like(grad)
    out[..., 0::2] = grad[..., 0::2] * cos - grad[..., 1::2] * sin
    out[..., 1::2] = grad[..., 0::2] * sin + grad[..., 1::2] * cos
    return out


def _d(anchor: str) -> str:
    return f"{DERIVATIONS}#{anchor}"


EXERCISES: List[Exercise] = [
    Exercise(1, "broadcast", "broadcast add and mul", _d("broadcasting"),
             [Part("add", ("a", "b"), _binary_cases), Part("mul", ("a", "b"), _binary_cases)]),
    Exercise(2, "reductions", "sum and mean over axes", _d("reductions"),
             [Part("sum", ("x",), _reduce_cases), Part("mean", ("x",), _reduce_cases)]),
    Exercise(3, "matmul", "batched matrix product", _d("matmul"),
             [Part("matmul", ("a", "b"), _matmul_cases)]),
    Exercise(4, "linear", "linear layer x @ W^T + b", _d("linear"),
             [Part("linear", ("x", "weight", "bias"), _linear_cases)]),
    Exercise(5, "gelu", "GELU activation (exact, with erf)", _d("gelu"),
             [Part("gelu", ("x",), _gelu_cases, mistakes=[
                 Mistake("x", "product_rule",
                         "You dropped the product rule's second term: out = x * Phi(x), so "
                         "dx = g * (Phi(x) + x * phi(x)), with phi the normal density "
                         "exp(-x^2 / 2) / sqrt(2 pi).",
                         lambda g, c: g * c[1])])]),
    Exercise(6, "softmax", "softmax along the last axis", _d("softmax"),
             [Part("softmax", ("x",), _row_cases, diagonal_hint=_SOFTMAX_DIAGONAL)]),
    Exercise(7, "log_softmax_nll", "log_softmax, negative log-likelihood, cross-entropy",
             _d("cross-entropy"),
             [Part("log_softmax", ("x",), _row_cases, diagonal_hint=_LOG_SOFTMAX_DIAGONAL),
              Part("nll", ("logp",), lambda rng: _nll_cases(rng, "logp", True)),
              Part("cross_entropy", ("logits",),
                   lambda rng: _nll_cases(rng, "logits", False))]),
    Exercise(8, "masked_softmax", "masking, and softmax with a fully masked row", _d("masking"),
             [Part("masked_fill", ("x",), _masked_fill_cases),
              Part("masked_softmax", ("x",), _masked_softmax_cases,
                   diagonal_hint=_SOFTMAX_DIAGONAL)]),
    Exercise(9, "layer_norm", "layer normalisation", _d("layer-norm"),
             [Part("layer_norm", ("x", "weight", "bias"), _layer_norm_cases, mistakes=[
                 Mistake("x", "constant_stats",
                         "You treated the mean and the variance as constants: dx = g * w * "
                         "rstd is only the direct path. Each x_j also moves mu and var of its "
                         "row, which adds -mean(dxhat) and -xhat * mean(dxhat * xhat), "
                         "both times rstd.", _layer_norm_constant)],
                  diagonal_hint="Each x_j also moves the mean and variance of its row.")]),
    Exercise(10, "embedding", "embedding lookup with repeated ids", _d("embedding"),
             [Part("embedding", ("weight",), _embedding_cases)]),
    Exercise(11, "heads", "splitting and merging attention heads", _d("shape-ops"),
             [Part("split_heads", ("x",), _split_cases), Part("merge_heads", ("x",),
                                                              _merge_cases)]),
    Exercise(12, "attention", "scaled dot-product attention with a mask", _d("attention"),
             [Part("attention", ("q", "k", "v"), _attention_cases, mistakes=[
                 Mistake("q", "diagonal",
                         "Only the diagonal of the softmax Jacobian: dscores = p * (1 - p) * dp "
                         "drops the coupling inside each row. Use dscores = p * (dp - "
                         "sum(dp * p)) along the key axis.", _attention_dscores_diagonal),
                 Mistake("k", "transpose",
                         "Off by a transpose: dk = dscores @ q only has the right shape when "
                         "S_q == S_k. Keys index the columns of the scores, so dk = "
                         "dscores^T @ q * scale.", _attention_dk_untransposed)])]),
    Exercise(13, "rope", "rotary position embedding (RoPE)", "docs/nn.md#rope",
             [Part("rope", ("x",), _rope_cases, mistakes=[
                 Mistake("x", "transpose",
                         "Off by a transpose: you rotated grad by +angle, as the forward does. "
                         "The forward multiplies each pair by a rotation R; its backward "
                         "multiplies by R^T, the rotation by -angle (flip the sign of sin).",
                         _rope_rotated_forward)])]),
]


def find_exercise(name: str) -> Exercise:
    """An exercise by number ('6', '06'), name ('softmax'), file name or part name ('nll')."""
    key = str(name).strip().lower()
    if key.endswith(".py"):
        key = key[:-3]
    for ex in EXERCISES:
        names = {ex.name, ex.filename[:-3], f"{ex.number:02d}", str(ex.number)}
        names |= {part.name for part in ex.parts}
        if key in names:
            return ex
    known = ", ".join(ex.name for ex in EXERCISES)
    raise ValueError(f"no exercise called {name!r}; choose one of: {known} (or its number, or "
                   f"'all'); 'python -m tinyattn.exercises list' shows them")
