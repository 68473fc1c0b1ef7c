"""Judge the attention-systems track's probed parts (exercises 21, 23, 24, 25): the learner's
values against the reference's, and why they differ.

In order, for one scenario: the order of the returned values (a swapped pair is named as
such, not as a shape error), then each value in the order the function returns it (a wrong
running max is named before the sums it spoils), NaN or inf where the right value is finite
(an exp that overflowed or underflowed: the part's own hint), the first value that differs;
for scaler_step, a wrong unscale_grads or update_scale it calls is named first; for
checkpointing, the memory held at once (measured, not inferred from a count of calls) and
the count of recomputations.
"""
from __future__ import annotations

import math
from itertools import permutations
from typing import Any, Dict, Optional

import numpy as np

from .course import Diagnosis, Scenario
from .engine_explain import show
from .engine_verify import array_problem
from .probes_systems import RETURNS

__all__ = ["agree", "agree_values", "verifier", "verify_checkpoint", "memory_budget",
           "MEASURES"]

Values = Dict[str, Any]
MEASURES = ("forward_calls", "peak_activations")     # measured, never compared exactly
_HELPERS = ("helper_found", "helper_scales")

# hints for a value that differs, by (function, value)
_HINTS = {
    ("merge_blocks", "m"): "m is the running max of each row: np.maximum(m1, m2), element by "
                           "element (each row is a softmax of its own).",
    ("merge_blocks", "l"): "l = exp(m1 - m) l1 + exp(m2 - m) l2: both sums move to the common "
                           "max.",
    ("merge_blocks", "o"): "o = exp(m1 - m) o1 + exp(m2 - m) o2 (not divided by l: that happens "
                           "once, after the last block).",
    ("tiled_attention", "lse"): "lse is each row's log-sum-exp, m + log(l) after the last "
                                "block.",
    ("decode_step", "lengths"): "decode_step returns length + 1, the new number of filled "
                                "rows.",
    ("decode_step", "cache_k"): "the new key goes into row `length` of cache_k (in place); "
                                "no other row changes.",
    ("decode_step", "cache_v"): "the new value goes into row `length` of cache_v (in place); "
                                "no other row changes.",
    ("unscale_grads", "found_inf"): "found_inf is True when ANY element of ANY gradient is "
                                    "inf or NaN.",
}
_NONFINITE = {
    "merge_blocks": "exp(m_i - m) is NaN for a fully masked block (-inf - -inf) and a block's "
                    "rows can be masked independently: decide row by row, np.where(np."
                    "isneginf(m_i), 0, exp(m_i - m)); and never exp a score itself (exp(1000) "
                    "is inf, exp(-1000) is 0): only differences to the max, which are <= 0.",
    "tiled_attention": "exp of a score of 1,000 is inf, and in a row whose scores are all "
                       "about -1,000 every exp(s) is 0, so l = 0: subtract each row's running "
                       "max before exp, and start the running max at the first block's max "
                       "(or -inf), not at 0.",
    "decode_step": "exp of a score of 1,000 overflows to inf: subtract the largest score "
                   "before exp (s - s.max()).",
}


def agree(got: Any, want: Any) -> bool:
    """Equal shapes, the same non-finite entries, finite entries within 1e-9 relative (and
    1e-12 of the largest entry: round-off of a sum); anything else equal."""
    if not isinstance(want, np.ndarray):
        return type(got) is type(want) and got == want
    if not isinstance(got, np.ndarray) or got.shape != want.shape:
        return False
    finite = np.isfinite(want)
    if not np.array_equal(np.isfinite(got), finite) or not np.array_equal(
            got[~finite], want[~finite], equal_nan=True):
        return False
    g, w = got[finite], want[finite]
    scale = float(np.abs(w).max(initial=0.0))
    with np.errstate(over="ignore", invalid="ignore"):
        return bool(np.all(np.abs(g - w) <= 1e-9 * np.maximum(np.abs(g), np.abs(w))
                           + 1e-12 * scale))


def agree_values(got: Values, want: Values) -> bool:
    """The same values (measurements aside): a known mistake's replay against the learner."""
    return isinstance(got, dict) and set(got) == set(want) and \
        all(agree(got[k], want[k]) for k in want if k not in MEASURES)


def _order(function: str, got: Values, want: Values) -> Optional[Diagnosis]:
    """A swapped return order: the first call's values, permuted, are the right ones."""
    count = len([k for k in want if k.startswith("ret_")])
    if count < 2 or all(agree(got.get(f"ret_{i}"), want[f"ret_{i}"]) for i in range(count)):
        return None
    names = RETURNS.get(function, tuple(f"value {i}" for i in range(count)))
    for perm in permutations(range(count)):
        if perm != tuple(range(count)) and all(
                agree(got.get(f"ret_{perm[i]}"), want[f"ret_{i}"]) for i in range(count)):
            yours = [names[perm.index(i)] for i in range(count)]
            return Diagnosis("return_order", (
                f"{function} returns the right values in the wrong order: yours come as "
                f"({', '.join(yours)}), the checker reads ({', '.join(names)}), as the stub's "
                f"docstring says. Return them in that order."))
    return None


def _nonfinite(got: Any, want: Any) -> bool:
    return isinstance(got, np.ndarray) and isinstance(want, np.ndarray) and \
        got.shape == want.shape and bool(np.any(~np.isfinite(got) & np.isfinite(want)))


def _compare(function: str, got: Values, want: Values) -> Optional[Diagnosis]:
    order = _order(function, got, want)
    if order is not None:
        return order
    for key, w in want.items():
        if key.startswith("ret_") or key in MEASURES or key in _HELPERS:
            continue
        g = got.get(key)
        hint = _HINTS.get((function, key), "")
        if isinstance(w, np.ndarray):
            problem = array_problem(g, w, key)
            if problem and not (isinstance(g, np.ndarray) and g.shape == w.shape):
                return Diagnosis("shape", problem + (f". {hint}" if hint else ""))
        if _nonfinite(g, w) and function in _NONFINITE:
            return Diagnosis("overflow", f"{key} holds NaN or inf where the right value is "
                                         f"finite: {_NONFINITE[function]}")
        if not agree(g, w):
            return Diagnosis("wrong", f"{key} differs: yours {show(g)}, right {show(w)}."
                             + (f" {hint}" if hint else ""))
    return None


def verifier(function: str):
    """verify(scenario, got, want) for the part that probes ``function``."""
    def verify(scenario: Scenario, got: Values, want: Values) -> Optional[Diagnosis]:
        if function == "decode_step" and got.get("in_place") is False and want["in_place"]:
            return Diagnosis("kv_not_in_place", (
                "The buffers did not change: decode_step must write k_new and v_new into "
                "cache_k and cache_v themselves (cache_k[length] = k_new), not into a copy "
                "(np.append, np.concatenate, .copy() make new arrays): the buffers ARE the "
                "cache the next step reads."))
        diagnosis = _compare(function, got, want)
        if diagnosis is None or function != "scaler_step":
            return diagnosis
        for key, helper, what in (("helper_found", "unscale_grads", "found_inf"),
                                  ("helper_scales", "update_scale", "the new scale")):
            if key in want and not agree(got.get(key), want[key]):
                return Diagnosis(f"scaler_uses_wrong_{helper}", (
                    f"scaler_step is wrong because the {helper} it calls is: on these steps "
                    f"your {helper} gives {what} {show(got.get(key))} where the right one "
                    f"gives {show(want[key])}. Fix {helper} first (its own part says how); "
                    f"scaler_step may then be right as it is."))
        return diagnosis
    return verify


def memory_budget(reference_peak: float, segment: int) -> float:
    """Activations a checkpointed backward may hold at once: the reference's peak (each
    segment's input, one segment recomputed, the temporaries of layer_forward/backward), one
    more segment (a right answer may build the next segment's list before dropping the last
    one) and two more (its own temporaries). Keeping every activation holds far more."""
    return reference_peak + segment + 2


def _number(value: Any) -> float:
    if isinstance(value, np.ndarray) and value.shape == ():
        value = value[()]
    ok = isinstance(value, (int, float, np.number)) and not isinstance(value, bool)
    return float(value) if ok else 0.0


def verify_checkpoint(scenario: Scenario, got: Values, want: Values) -> Optional[Diagnosis]:
    diagnosis = _compare("checkpointed_backward", got, want)
    if diagnosis is not None:
        return diagnosis
    layers, segment = len(scenario.data["weights"]), int(scenario.data["segment"])
    calls = _number(got.get("forward_calls"))
    if "peak_activations" in want:
        peak = _number(got.get("peak_activations"))
        reference = _number(want["peak_activations"])
        if peak > memory_budget(reference, segment):
            held = (f"you held {peak:.0f} activations (arrays of one layer's output size) "
                    f"at once, for {layers} layers in segments of {segment}: checkpointing "
                    f"keeps each segment's input ({math.ceil(layers / segment)}) and one "
                    f"segment recomputed ({segment}), {reference:.0f} in all with the "
                    f"temporaries, as measured for the reference")
            if calls <= layers:
                return Diagnosis("no_recompute", (
                    f"Right gradients, but {held}, and layer_forward ran only {calls:.0f} "
                    f"times: you kept every activation instead of recomputing them, which is "
                    f"what checkpointing avoids. Keep only each segment's input; recompute "
                    f"the segment's inner activations in backward."))
            return Diagnosis("keeps_activations", (
                f"Right gradients, and you recompute ({calls:.0f} calls of layer_forward), "
                f"but {held}: recomputing saves memory only if the forward keeps no more than "
                f"each segment's input. Drop the other activations (do not store them in the "
                f"forward; free a segment's recomputed ones before the next segment)."))
    if calls > 2 * layers:
        return Diagnosis("recompute_from_start", (
            f"Right gradients, but layer_forward ran {calls:.0f} times for {layers} layers: "
            f"you recompute from x (or more than once per segment); start each segment's "
            f"recompute from its own saved input: at most {2 * layers} calls."))
    return None
