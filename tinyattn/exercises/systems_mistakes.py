"""The known mistakes of the attention-systems track (exercises 21-26), each a wrong function
installed into a fresh copy of the reference solution (EngineMistake) or a wrong gradient
computed from the reference's cache (Mistake, for the op parts 22 and 26). A learner whose
values equal a mistake's in every scenario gets its message.
"""
from __future__ import annotations

import math
from typing import Any, Callable, List

import numpy as np

from .course import EngineMistake, Mistake

__all__ = ["MERGE_MISTAKES", "TILED_MISTAKES", "FLASH_MISTAKES", "LOCAL_MISTAKES",
           "KV_MISTAKES", "UNSCALE_MISTAKES", "UPDATE_MISTAKES", "SCALER_MISTAKES",
           "CHECKPOINT_MISTAKES"]


def _install(name: str, make: Callable[[Any], Callable]) -> Callable[[Any], None]:
    def install(module: Any) -> None:
        setattr(module, name, make(module))
    return install


def _merge_variant(kind: str):
    def make(m):
        def merge_blocks(m1, l1, o1, m2, l2, o2):
            mx = m1 if kind == "wrong_max" else np.maximum(m1, m2)
            with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
                if kind == "plain":
                    a1, a2 = np.exp(m1 - mx), np.exp(m2 - mx)
                elif kind == "unstable":                # exp(m_i) / exp(m): 0/0, inf/inf
                    a1, a2 = np.exp(m1) / np.exp(mx), np.exp(m2) / np.exp(mx)
                elif kind == "block_masked":            # a whole block masked, or none
                    a1, a2 = [np.zeros_like(mi) if np.isneginf(mi).all() else
                              np.exp(mi - mx) for mi in (m1, m2)]
                elif kind == "inverted":            # exp(m - m_i), empty blocks still 0
                    a1, a2 = [np.where(np.isneginf(mi), 0.0, np.exp(np.where(
                        np.isneginf(mi), 0.0, mx) - mi)) for mi in (m1, m2)]
                else:
                    a1, a2 = m._weight(m1, mx), m._weight(m2, mx)
                if kind == "o_unscaled":
                    return mx, a1 * l1 + a2 * l2, o1 + o2
                if kind == "l_unscaled":
                    return mx, l1 + l2, a1[:, None] * o1 + a2[:, None] * o2
                o = a1[:, None] * o1 + a2[:, None] * o2
                if kind == "o_normalised":
                    return mx, a1 * l1 + a2 * l2, o / (a1 * l1 + a2 * l2)[:, None]
                return mx, a1 * l1 + a2 * l2, o
        return merge_blocks
    return make


def _tiled_variant(kind: str):
    def make(m):
        def tiled_attention(q, k, v, block):
            if kind == "running_max_from_zero":     # the state starts at (0, 0, 0)
                scale = 1.0 / math.sqrt(q.shape[-1])
                state = (np.zeros(q.shape[0]), np.zeros(q.shape[0]),
                         np.zeros((q.shape[0], v.shape[-1])))
                with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
                    for start in range(0, k.shape[0], block):
                        state = m.merge_blocks(*state, *m.block_state(
                            q, k[start:start + block], v[start:start + block], scale))
                    mx, l, o = state
                    return o / l[:, None], mx + np.log(l)
            out, lse = m.__dict__["_tiled_right"](q, k, v, block)
            if kind == "lse_no_max":
                s = q @ k.T / math.sqrt(q.shape[-1])
                return out, lse - s.max(axis=-1)
            return out, lse
        return tiled_attention
    return make


MERGE_MISTAKES = [
    EngineMistake("merge_wrong_max", "m is the running max of BOTH blocks, np.maximum(m1, m2) "
                  "row by row: yours keeps m1. Then exp(m2 - m) can be far above 1 (it "
                  "overflows for scores of 1,000), and m is not the row's max for the next "
                  "block.", _install("merge_blocks", _merge_variant("wrong_max"))),
    EngineMistake("merge_o_unscaled", "You move l to the common max but not o: both sums were "
                  "taken relative to their own block's max, so o1 and o2 need the same factors "
                  "exp(m_i - m) as l1 and l2.", _install("merge_blocks", _merge_variant(
                      "o_unscaled"))),
    EngineMistake("merge_l_unscaled", "You move o to the common max but not l: l1 and l2 were "
                  "taken relative to their own block's max too, so l = exp(m1 - m) l1 + "
                  "exp(m2 - m) l2.", _install("merge_blocks", _merge_variant("l_unscaled"))),
    EngineMistake("merge_o_normalised", "o stays unnormalised (sum exp(s - m) v, not divided "
                  "by l) until after the LAST block: dividing in every merge divides the "
                  "earlier blocks' part again at each later merge.",
                  _install("merge_blocks", _merge_variant("o_normalised"))),
    EngineMistake("merge_inverted", "The rescaling factor is upside down: a block's sums are "
                  "relative to its own max m_i, and moving them to m = max(m1, m2) multiplies "
                  "by exp(m_i - m) <= 1, not exp(m - m_i).",
                  _install("merge_blocks", _merge_variant("inverted"))),
    EngineMistake("merge_masked_nan", "A fully masked block has m = -inf, and exp(-inf - "
                  "(-inf)) is NaN: give such a block the weight 0 (np.where(np.isneginf(m_i), "
                  "0, ...)).", _install("merge_blocks", _merge_variant("plain"))),
    EngineMistake("merge_masked_rows", "Masking is per ROW: a block can be fully masked for "
                  "some queries and not for others, so decide row by row (np.where(np.isneginf"
                  "(m_i), 0, exp(m_i - m)), element by element), not once for the whole block.",
                  _install("merge_blocks", _merge_variant("block_masked"))),
    EngineMistake("merge_unstable", "exp(m_i) / exp(m) is exp(m_i - m) on paper, but exp(1000) "
                  "is inf and exp(-1000) is 0 in floating point (inf / inf and 0 / 0 are NaN): "
                  "compute exp(m_i - m), whose exponent is <= 0.",
                  _install("merge_blocks", _merge_variant("unstable"))),
]


def _flash_wrong(kind: str):
    def wrong(grad, cache):
        q, k, v, out, lse = cache
        scale = 1.0 / math.sqrt(q.shape[-1])
        s = q @ k.T * scale
        p = np.exp(s) if kind == "unnormalised" else np.exp(s - lse[:, None])
        d = grad.sum(axis=-1) if kind == "d_no_out" else (grad * out).sum(axis=-1)
        ds = p * (grad @ v.T - d[:, None])
        return p.T @ grad if kind == "unnormalised" else ds @ k * scale
    return wrong


def _ds(grad, q, k, v, p):
    """The right ds of attention from its probabilities p: p * (dp - rowsum(dp * p))."""
    dp = grad @ v.T
    return p * (dp - (dp * p).sum(axis=-1, keepdims=True))


def _flash_p(cache):
    q, k, v, out, lse = cache
    return np.exp(q @ k.T / math.sqrt(q.shape[-1]) - lse[:, None])


_NO_ROWSUM = ("Softmax's backward is p * (dp - D), D = rowsum(dp * p) (= rowsum(grad * out)): "
              "the row term is missing (every score in a row moves the others through the "
              "normalisation).")
_DS_NOT_TRANSPOSED = ("dk = ds^T q scale: key j collects from every query i that scored it, "
                      "column j of ds; ds @ q mixes the rows instead (its shape is right only "
                      "because S_q = S_k here).")

FLASH_MISTAKES = [
    Mistake("q", "attention_no_rowsum", _NO_ROWSUM, lambda grad, c: (
        _flash_p(c) * (grad @ c[2].T)) @ c[1] / math.sqrt(c[0].shape[-1])),
    Mistake("k", "attention_no_rowsum", _NO_ROWSUM, lambda grad, c: (
        _flash_p(c) * (grad @ c[2].T)).T @ c[0] / math.sqrt(c[0].shape[-1])),
    Mistake("q", "flash_d_no_out", "D is rowsum(grad * out), softmax's row term rowsum(dp * p) "
            "in disguise: you summed grad alone.", _flash_wrong("d_no_out")),
    Mistake("v", "flash_unnormalised", "The recomputed p is exp(s - lse), normalised by the "
            "row's log-sum-exp: exp(s) alone is not a probability.", _flash_wrong(
                "unnormalised")),
]


LOCAL_MISTAKES = [
    Mistake("q", "attention_no_rowsum", _NO_ROWSUM,
            lambda grad, c: (c[3] * (grad @ c[2].T)) @ c[1] * c[4]),
    Mistake("k", "attention_no_rowsum", _NO_ROWSUM,
            lambda grad, c: (c[3] * (grad @ c[2].T)).T @ c[0] * c[4]),
    Mistake("k", "ds_not_transposed", _DS_NOT_TRANSPOSED,
            lambda grad, c: _ds(grad, c[0], c[1], c[2], c[3]) @ c[0] * c[4]),
    Mistake("v", "transpose", "dv = p^T grad: keys index the columns of p, so each key "
            "collects from the queries that attended to it (a column), not a row.",
            lambda grad, c: c[3] @ grad),
]


def _kv_variant(kind: str):
    def make(m):
        def decode_step(cache_k, cache_v, length, q_new, k_new, v_new):
            cache_k[length], cache_v[length] = k_new, v_new
            stop = {"whole": cache_k.shape[0], "exclusive": max(length, 1)}.get(kind,
                                                                                 length + 1)
            s = cache_k[:stop] @ q_new / (1.0 if kind == "no_scale" else
                                          math.sqrt(q_new.shape[-1]))
            with np.errstate(over="ignore", invalid="ignore"):
                p = np.exp(s) if kind == "unstable" else np.exp(s - s.max())
                return p @ cache_v[:stop] / p.sum(), length + 1
        return decode_step
    return make


KV_MISTAKES = [
    EngineMistake("kv_reads_past_length", "You attend over the whole buffer: rows past the "
                  "length hold garbage (or future tokens). Use cache_k[:length + 1].",
                  _install("decode_step", _kv_variant("whole"))),
    EngineMistake("kv_excludes_new", "The new token must attend to itself: after writing it "
                  "at row length, attend over rows 0..length INCLUSIVE (cache_k[:length + 1]).",
                  _install("decode_step", _kv_variant("exclusive"))),
    EngineMistake("kv_no_scale", "The scores are q k / sqrt(d_k), as in full attention.",
                  _install("decode_step", _kv_variant("no_scale"))),
    EngineMistake("kv_unstable", "exp of a score of 1,000 is inf (and of -1,000 is 0, so p "
                  "sums to 0): subtract the largest score before exp, p = exp(s - s.max()).",
                  _install("decode_step", _kv_variant("unstable"))),
]


def _unscale_variant(kind: str):
    def make(m):
        def unscale_grads(grads, scale):
            unscaled = [g * scale if kind == "multiply" else g / scale for g in grads]
            test = np.isinf if kind == "isinf" else (lambda g: ~np.isfinite(g))
            if kind == "overwritten":
                found_inf = False
                for g in unscaled:
                    found_inf = bool(np.any(test(g)))
                return unscaled, found_inf
            return unscaled, any(bool(np.any(test(g))) for g in unscaled)
        return unscale_grads
    return make


def _update_variant(kind: str):
    def make(m):
        def update_scale(scale, growth_tracker, found_inf, growth_factor=2.0,
                         backoff_factor=0.5, growth_interval=2000):
            if found_inf:
                return scale * backoff_factor, (growth_tracker if kind == "keep" else 0)
            if kind == "late" and growth_tracker >= growth_interval:
                return scale * growth_factor, 0
            growth_tracker += 1
            if kind != "late" and growth_tracker == growth_interval:
                grown = scale * growth_factor
                return (grown if kind == "inf" or np.isfinite(grown) else scale), 0
            return scale, growth_tracker
        return update_scale
    return make


def _scaler_no_skip(m):
    def scaler_step(params, scaled_grads, scale, growth_tracker, lr, growth_interval=2000):
        grads, found_inf = m.unscale_grads(scaled_grads, scale)
        for p, g in zip(params, grads):
            p -= lr * g
        scale, growth_tracker = m.update_scale(scale, growth_tracker, found_inf,
                                               growth_interval=growth_interval)
        return scale, growth_tracker, found_inf
    return scaler_step


UNSCALE_MISTAKES = [
    EngineMistake("unscale_overwritten", "found_inf is set again for every gradient in your "
                  "loop, so only the LAST gradient counts: an inf in an earlier one is "
                  "forgotten. Combine them: found_inf = found_inf or ..., or any(... for g in "
                  "unscaled).", _install("unscale_grads", _unscale_variant("overwritten"))),
    EngineMistake("unscale_isinf", "found_inf must catch NaN too: np.isinf(NaN) is False. "
                  "Use not np.all(np.isfinite(g)).", _install("unscale_grads",
                                                              _unscale_variant("isinf"))),
    EngineMistake("unscale_multiply", "Unscaling divides by the scale: the loss was "
                  "multiplied by it, so every gradient is scale times too large.",
                  _install("unscale_grads", _unscale_variant("multiply"))),
]


UPDATE_MISTAKES = [
    EngineMistake("scale_tracker_kept", "After an inf/NaN step the count of clean steps "
                  "starts again: growth_tracker = 0 as well as scale * backoff_factor.",
                  _install("update_scale", _update_variant("keep"))),
    EngineMistake("scale_grows_late", "Grow when the count of clean steps REACHES "
                  "growth_interval (count this step first, then compare): yours grows a step "
                  "late.", _install("update_scale", _update_variant("late"))),
    EngineMistake("scale_to_inf", "torch grows the scale only if the grown value is finite: "
                  "an inf scale would make every later gradient inf.",
                  _install("update_scale", _update_variant("inf"))),
]


SCALER_MISTAKES = [
    EngineMistake("scaler_no_skip", "A step with inf/NaN gradients must be SKIPPED: the "
                  "parameters keep their values (and the scale backs off).",
                  _install("scaler_step", _scaler_no_skip)),
]


def _checkpoint_fresh_seed(m):
    """Recompute (every layer_forward call after the first pass) with other seeds."""
    right = m.__dict__["_checkpointed_right"]

    def checkpointed_backward(x, weights, seeds, grad, segment):
        given, calls = m.layer_forward, [0]

        def forward(h, w, seed):
            calls[0] += 1
            return given(h, w, seed + (calls[0] > len(weights)))
        m.layer_forward = forward
        try:
            return right(x, weights, seeds, grad, segment)
        finally:
            m.layer_forward = given
    return checkpointed_backward


CHECKPOINT_MISTAKES = [
    EngineMistake("checkpoint_rng", "The recomputed activations used other dropout masks "
                  "than the forward: replay the randomness (recompute layer i with seeds[i]; "
                  "torch.utils.checkpoint saves and restores the RNG state).",
                  _install("checkpointed_backward", _checkpoint_fresh_seed)),
]


def _keep(name: str):
    """Mistakes that wrap the right function need it under a second name."""
    def install(module: Any) -> None:
        module.__dict__[f"_{name.split('_')[0]}_right"] = getattr(module, name)
    return install


def _with_right(mistakes: List[EngineMistake], name: str) -> List[EngineMistake]:
    keep = _keep(name)
    return [EngineMistake(m.kind, m.message, (lambda install: lambda module: (
        keep(module), install(module)))(m.install)) for m in mistakes]


TILED_MISTAKES = _with_right([EngineMistake(
    "tiled_lse", "lse is the log-sum-exp of the row's scores, m + log(l): the max m belongs "
    "in it (log(l) alone is relative to m).", _install("tiled_attention",
                                                        _tiled_variant("lse_no_max"))),
    EngineMistake("tiled_running_max_from_zero", "Your running max starts at 0: in a row whose "
                  "scores are all about -1,000 every exp(s - 0) is 0, so l = 0 and out is NaN. "
                  "Start from the first block's state (or m = -inf, l = 0, o = 0, which "
                  "merge_blocks handles), so m is a real score.",
                  _install("tiled_attention", _tiled_variant("running_max_from_zero")))],
    "tiled_attention")

CHECKPOINT_MISTAKES = _with_right(CHECKPOINT_MISTAKES, "checkpointed_backward")
