"""The ops track: write the backward of an op in NumPy (exercises 01-13).

Each ``Mistake`` here is a classic wrong formula, computed from the upstream gradient and the
reference solution's cache; when a learner's gradient equals one exactly, the checker names
it. The cases themselves are in ops_cases.py.
"""
from __future__ import annotations

from typing import Any, List

import numpy as np

from . import ops_cases as cases
from .course import DERIVATIONS, Exercise, Mistake, Part
from .diagnose import left_aligned

__all__ = ["OP_EXERCISES"]


def _unbroadcast(grad: np.ndarray, shape) -> np.ndarray:
    grad = grad.sum(axis=tuple(range(grad.ndim - len(shape))))
    axes = tuple(i for i, n in enumerate(shape) if n == 1 and grad.shape[i] != 1)
    return grad.sum(axis=axes, keepdims=True) if axes else grad


def _d(anchor: str) -> str:
    return f"{DERIVATIONS}#{anchor}"


# ------------------------------------------------------------------ 01 mul
_MUL_SWAPPED = ("Swapped operands: for out = a * b, d out / d a = b, so da = grad * b and "
                "db = grad * a; you multiplied each gradient by its own input.")
_MISALIGNED = ("Broadcasting lines shapes up from the RIGHT: an input with fewer axes meets "
               "the LAST axes of the output (b of shape (D,) in a (D, D) sum is copied along "
               "axis 0), so the axes it lacks are the LEADING ones: sum those away. Yours "
               "lines the shapes up from the left and sums the trailing axes, which has the "
               "right shape here only because the output is square.")


def _misaligned(gradient, shape) -> np.ndarray:
    """unbroadcast lined up from the left (ValueError: not possible for these shapes)."""
    lefts = [a for a in left_aligned(gradient, tuple(shape)) if a.shape == tuple(shape)]
    if not lefts:
        raise ValueError("not misaligned here")
    return lefts[0]


ADD_MISTAKES = [
    Mistake("a", "misaligned", _MISALIGNED, lambda g, c: _misaligned(g, c[0])),
    Mistake("b", "misaligned", _MISALIGNED, lambda g, c: _misaligned(g, c[1])),
]
MUL_MISTAKES = [
    Mistake("a", "swapped", _MUL_SWAPPED, lambda g, c: _unbroadcast(g * c[0], c[0].shape)),
    Mistake("b", "swapped", _MUL_SWAPPED, lambda g, c: _unbroadcast(g * c[1], c[1].shape)),
    Mistake("a", "misaligned", _MISALIGNED, lambda g, c: _misaligned(g * c[1], c[0].shape)),
    Mistake("b", "misaligned", _MISALIGNED, lambda g, c: _misaligned(g * c[0], c[1].shape)),
]


# ------------------------------------------------------------------ 05 gelu
def _gelu_no_norm(g, c):
    x, cdf = c
    return g * (cdf + x * np.exp(-0.5 * x * x))


GELU_MISTAKES = [
    Mistake("x", "product_rule",
            "You dropped the product rule's second term: out = x * Phi(x), so dx = g * (Phi(x) "
            "+ x * phi(x)), with phi the normal density exp(-x^2 / 2) / sqrt(2 pi).",
            lambda g, c: g * c[1]),
    Mistake("x", "density",
            "The density lacks its normalisation: phi(x) = exp(-x^2 / 2) / sqrt(2 pi), not "
            "exp(-x^2 / 2). (The derivative of a CDF is its density, which integrates to 1.)",
            _gelu_no_norm),
]


# ------------------------------------------------------------------ 06-08 softmax family
_AXIS = ("Summed over the wrong axis: softmax normalises each row along the LAST axis, so the "
         "row-sum in the backward is sum(grad * y, axis=-1, keepdims=True). Summing along "
         "another axis (or over everything) mixes rows that never met in the forward.")


def _softmax_with(axis):
    def wrong(g, c):
        y = c[0]
        return y * (g - (g * y).sum(axis=axis, keepdims=axis is not None))
    return wrong


def _log_softmax_with(axis):
    def wrong(g, c):
        return g - np.exp(c[0]) * g.sum(axis=axis, keepdims=axis is not None)
    return wrong


def _softmax_mistakes(name: str) -> List[Mistake]:
    return [Mistake(name, "softmax_axis", _AXIS, _softmax_with(0)),
            Mistake(name, "softmax_axis", _AXIS, _softmax_with(-2)),
            Mistake(name, "softmax_axis", _AXIS, _softmax_with(None)),
            Mistake(name, "missing_y",
                    "The leading factor y is missing: dx = y * (grad - sum(grad * y)). Every "
                    "term of the softmax Jacobian y_i (delta_ij - y_j) carries a y.",
                    lambda g, c: g - (g * c[0]).sum(axis=-1, keepdims=True))]


LOG_SOFTMAX_MISTAKES = [Mistake("x", "softmax_axis", _AXIS, _log_softmax_with(a))
                        for a in (0, -2, None)]
_SOFTMAX_DIAGONAL = ("For softmax, d y_i / d x_j = y_i (delta_ij - y_j): your formula keeps "
                     "only i = j, y_i (1 - y_i). Add the terms i != j, -y_i y_j: summed "
                     "against g they collapse to one row-sum.")
_LOG_SOFTMAX_DIAGONAL = ("For log_softmax, d out_i / d x_j = delta_ij - p_j: your formula keeps "
                         "only 1 - p_i. Every x_j also lowers every out_i through the "
                         "normaliser, by p_j each; sum those terms against g.")
_CE_SIGN = ("Check the sign of each term: the loss is -log p of the target, so the "
            "gradient lowers the target's logit: p - onehot, not onehot - p.")
_NLL_SIGN = ("Check the sign: the loss is -log p of the target (averaged), so raising that "
             "log p lowers the loss: its gradient is -1/N times grad, negative.")
_LOG_SOFTMAX_SIGN = ("Check the sign of each term: out_i = x_i - log sum_j exp(x_j), so x_j "
                     "raises out_j directly and lowers every out_i through the normaliser.")
KEEP_OR_FILL_MISTAKES = [
    Mistake("x", "inverted_mask",
            "The mask is inverted: you pass grad through where keep is False and zero it "
            "where keep is True. keep is True where x is KEPT (x reaches the output there), "
            "the opposite of F.masked_fill's mask: dx = np.where(keep, grad, 0).",
            lambda g, c: np.where(c[0], 0.0, g)),
]


# ------------------------------------------------------------------ 09 layer norm
def _layer_norm_variant(mu_scale: float, var_scale: float, use_weight: bool = True):
    """dx with the mu path times mu_scale and the var path times var_scale (D: a sum)."""
    def wrong(g, c):
        xhat, rstd, weight = c
        d = xhat.shape[-1]
        dxhat = g * weight if use_weight else g
        mu_path = dxhat.mean(axis=-1, keepdims=True) * (d if mu_scale == "D" else mu_scale)
        var_path = xhat * (dxhat * xhat).mean(axis=-1, keepdims=True) * (
            d if var_scale == "D" else var_scale)
        return rstd * (dxhat - mu_path - var_path)
    return wrong


_LN = "Each x_j reaches xhat three ways: directly, through mu and through var. "
LAYER_NORM_MISTAKES = [
    Mistake("x", "constant_stats",
            "You treated the mean and the variance as constants: dx = g * w * rstd is only "
            "the direct path. " + _LN + "The mu path adds -mean(dxhat) and the var path "
            "-xhat * mean(dxhat * xhat), both times rstd.", _layer_norm_variant(0, 0)),
    Mistake("x", "layer_norm_sum",
            "The 1/D is missing on both paths: d mu / d x_j = 1/D and d var / d x_j = "
            "2 (x_j - mu) / D, so both terms are MEANS over the row, not sums.",
            _layer_norm_variant("D", "D")),
    Mistake("x", "layer_norm_sum",
            "The 1/D is missing on the mean's path: d mu / d x_j = 1/D, so that term is "
            "-mean(dxhat), not -sum(dxhat).", _layer_norm_variant("D", 1)),
    Mistake("x", "layer_norm_sum",
            "The 1/D is missing on the variance's path: d var / d x_j = 2 (x_j - mu) / D, so "
            "that term is -xhat * mean(dxhat * xhat), not a sum.", _layer_norm_variant(1, "D")),
    Mistake("x", "layer_norm_path",
            "The variance's path is missing: " + _LN + "You have the direct and the mu path; "
            "add -xhat * mean(dxhat * xhat), times rstd.", _layer_norm_variant(1, 0)),
    Mistake("x", "layer_norm_path",
            "The mean's path is missing: " + _LN + "You have the direct and the var path; "
            "add -mean(dxhat), times rstd.", _layer_norm_variant(0, 1)),
    Mistake("x", "layer_norm_weight",
            "The weight is missing: the gradient reaching xhat is dxhat = grad * weight "
            "(out = xhat * weight + bias), and every path starts from dxhat.",
            _layer_norm_variant(1, 1, use_weight=False)),
]


# ------------------------------------------------------------------ 12 attention
def _attention_ds(grad, cache, rule):
    q, k, v, p, scale = cache
    dp = grad @ np.swapaxes(v, -1, -2)          # (..., S_q, d_v) @ (..., d_v, S_k)
    return q, k, p, scale, rule(dp, p)


def _attention_dq(rule):
    def wrong(grad, cache):
        q, k, p, scale, ds = _attention_ds(grad, cache, rule)
        return ds @ k * scale                   # (..., S_q, S_k) @ (..., S_k, d_k)
    return wrong


def _attention_dk(rule, transpose=True):
    def wrong(grad, cache):
        q, k, p, scale, ds = _attention_ds(grad, cache, rule)
        ds = np.swapaxes(ds, -1, -2) if transpose else ds
        return ds @ q * scale                   # (..., S_k, S_q) @ (..., S_q, d_k)
    return wrong


def _rule_right(dp, p):
    return p * (dp - (dp * p).sum(axis=-1, keepdims=True))


def _rule_diagonal(dp, p):
    return p * (1 - p) * dp


def _rule_no_p(dp, p):
    return dp - (dp * p).sum(axis=-1, keepdims=True)


def _unmasked(dq_or_dk: str):
    """dq, dk or dv computed with p recomputed WITHOUT the mask: gradient leaks."""
    def wrong(grad, cache):
        q, k, v, p, scale = cache
        s = q @ np.swapaxes(k, -1, -2) * scale  # (..., S_q, S_k), no mask
        e = np.exp(s - s.max(axis=-1, keepdims=True))
        p_all = e / e.sum(axis=-1, keepdims=True)
        if dq_or_dk == "v":
            return np.swapaxes(p_all, -1, -2) @ grad
        leaky = (q, k, v, p_all, scale)
        return (_attention_dq if dq_or_dk == "q" else _attention_dk)(_rule_right)(grad, leaky)
    return wrong


_DIAGONAL = ("Only the diagonal of the softmax Jacobian: dscores = p * (1 - p) * dp drops the "
             "coupling inside each row. Use dscores = p * (dp - sum(dp * p)) along the key "
             "axis.")
_NO_P = ("The softmax rule lost its * p: dscores = p * (dp - rowsum(dp * p)), not dp - "
         "rowsum(dp * p). The Jacobian p_i (delta_ij - p_j) multiplies every term by p.")
ATTENTION_MISTAKES = [
    Mistake("q", "diagonal", _DIAGONAL, _attention_dq(_rule_diagonal)),
    Mistake("k", "diagonal", _DIAGONAL, _attention_dk(_rule_diagonal)),
    Mistake("q", "attention_no_p", _NO_P, _attention_dq(_rule_no_p)),
    Mistake("k", "attention_no_p", _NO_P, _attention_dk(_rule_no_p)),
    Mistake("k", "transpose",
            "Off by a transpose: dk = dscores @ q only has the right shape when S_q == S_k. "
            "Keys index the columns of the scores, so dk = dscores^T @ q * scale.",
            _attention_dk(_rule_right, transpose=False)),
    Mistake("v", "attention_masked", cases.ATTENTION_LEAK, _unmasked("v")),
    Mistake("q", "attention_masked", cases.ATTENTION_LEAK, _unmasked("q")),
    Mistake("k", "attention_masked", cases.ATTENTION_LEAK, _unmasked("k")),
    Mistake("v", "transpose",
            "Off by a transpose: dv = p @ grad only has the right shape when S_q == S_k. "
            "Values are mixed by the columns of p, so dv = p^T @ grad.",
            lambda g, c: c[3] @ g),
]


# ------------------------------------------------------------------ 13 rope
def _rope_rotated_forward(grad, cache):
    cos, sin = cache
    out = np.empty_like(grad)
    out[..., 0::2] = grad[..., 0::2] * cos - grad[..., 1::2] * sin
    out[..., 1::2] = grad[..., 0::2] * sin + grad[..., 1::2] * cos
    return out


def _nll_cases(name: str, log_probs: bool) -> Any:
    return lambda rng: cases.nll_cases(rng, name, log_probs)


OP_EXERCISES: List[Exercise] = [
    Exercise(1, "broadcast", "broadcast add and mul", _d("broadcasting"),
             [Part("add", ("a", "b"), cases.binary_cases, mistakes=ADD_MISTAKES),
              Part("mul", ("a", "b"), cases.binary_cases, mistakes=MUL_MISTAKES)]),
    Exercise(2, "reductions", "sum and mean over axes", _d("reductions"),
             [Part("sum", ("x",), cases.reduce_cases),
              Part("mean", ("x",), cases.reduce_cases)]),
    Exercise(3, "matmul", "batched matrix product", _d("matmul"),
             [Part("matmul", ("a", "b"), cases.matmul_cases)]),
    Exercise(4, "linear", "linear layer x @ W^T + b", _d("linear"),
             [Part("linear", ("x", "weight", "bias"), cases.linear_cases,
                   transpose_hint="for out = x @ W^T with W of shape (out, in): dW = G^T @ X, "
                                  "of shape (out, in); X^T @ G is its transpose")]),
    Exercise(5, "gelu", "GELU activation (exact, with erf)", _d("gelu"),
             [Part("gelu", ("x",), cases.gelu_cases, mistakes=GELU_MISTAKES)]),
    Exercise(6, "softmax", "softmax along the last axis", _d("softmax"),
             [Part("softmax", ("x",), cases.row_cases, mistakes=_softmax_mistakes("x"),
                   diagonal_hint=_SOFTMAX_DIAGONAL)]),
    Exercise(7, "log_softmax_nll", "log_softmax, negative log-likelihood, cross-entropy",
             _d("cross-entropy"),
             [Part("log_softmax", ("x",), cases.row_cases, mistakes=LOG_SOFTMAX_MISTAKES,
                   diagonal_hint=_LOG_SOFTMAX_DIAGONAL, sign_hint=_LOG_SOFTMAX_SIGN),
              Part("nll", ("logp",), _nll_cases("logp", True), sign_hint=_NLL_SIGN),
              Part("cross_entropy", ("logits",), _nll_cases("logits", False),
                   sign_hint=_CE_SIGN)]),
    Exercise(8, "masked_softmax", "masking, and softmax with a fully masked row", _d("masking"),
             [Part("keep_or_fill", ("x",), cases.keep_or_fill_cases,
                   mistakes=KEEP_OR_FILL_MISTAKES),
              Part("masked_softmax", ("x",), cases.masked_softmax_cases,
                   mistakes=_softmax_mistakes("x"), diagonal_hint=_SOFTMAX_DIAGONAL)]),
    Exercise(9, "layer_norm", "layer normalisation", _d("layer-norm"),
             [Part("layer_norm", ("x", "weight", "bias"), cases.layer_norm_cases,
                   mistakes=LAYER_NORM_MISTAKES,
                   diagonal_hint="Each x_j also moves the mean and variance of its row.")]),
    Exercise(10, "embedding", "embedding lookup with repeated ids", _d("embedding"),
             [Part("embedding", ("weight",), cases.embedding_cases)]),
    Exercise(11, "heads", "splitting and merging attention heads", _d("shape-ops"),
             [Part("split_heads", ("x",), cases.split_cases),
              Part("merge_heads", ("x",), cases.merge_cases)]),
    Exercise(12, "attention", "scaled dot-product attention with a mask", _d("attention"),
             [Part("attention", ("q", "k", "v"), cases.attention_cases,
                   mistakes=ATTENTION_MISTAKES)]),
    Exercise(13, "rope", "rotary position embedding (RoPE)", "docs/nn.md#rope",
             [Part("rope", ("x",), cases.rope_cases, mistakes=[
                 Mistake("x", "transpose",
                         "Off by a transpose: you rotated grad by +angle, as the forward does. "
                         "The forward multiplies each pair by a rotation R; its backward "
                         "multiplies by R^T, the rotation by -angle (flip the sign of sin).",
                         _rope_rotated_forward)])]),
]
