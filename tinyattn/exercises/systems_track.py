"""The attention-systems track (exercises 21-26): what makes attention fit and run fast.

Online-softmax merging (tiled attention's forward), its backward from the log-sum-exp, a
KV-cache decoding step, dynamic loss scaling (GradScaler's rule), gradient checkpointing's
recompute, and the backward of local (sliding-window) attention. 22 and 26 are op parts
(a given forward, the learner's backward: full-Jacobian gradcheck and random upstream
gradients, as in the ops track); the others are probed like the engine track, scenario by
scenario against the reference, on seeded random inputs, smallest first. The known
mistakes (systems_mistakes.py) name what they recognise; otherwise the message shows
the smallest input where the learner's values differ, with both.
"""
from __future__ import annotations

import math
from typing import Any, Dict, List, Optional

import numpy as np

from .course import Case, Diagnosis, EnginePart, Exercise, Part, Scenario
from .engine_explain import show
from .engine_verify import array_problem
from .systems_mistakes import (CHECKPOINT_MISTAKES, FLASH_MISTAKES, KV_MISTAKES,
                               LOCAL_MISTAKES, MERGE_MISTAKES, SCALER_MISTAKES, TILED_MISTAKES,
                               UNSCALE_MISTAKES, UPDATE_MISTAKES)

__all__ = ["SYSTEMS_EXERCISES", "DOC"]

DOC = "docs/attention_systems.md"


def _agree(got: Any, want: Any) -> bool:
    """Equal shapes, the same non-finite entries, finite entries within 1e-9 relative (and
    1e-12 of the largest entry: round-off of a sum)."""
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


def agree_values(got: Dict[str, Any], want: Dict[str, Any]) -> bool:
    return isinstance(got, dict) and set(got) == set(want) and \
        all(_agree(got[k], want[k]) for k in want)


def verify_values(scenario: Scenario, got: Dict[str, Any], want: Dict[str, Any]
                  ) -> Optional[Diagnosis]:
    for key in sorted(want):
        if key == "forward_calls":
            continue
        g, w = got.get(key), want[key]
        if isinstance(w, np.ndarray):
            problem = array_problem(g, w, key)
            if problem and not (isinstance(g, np.ndarray) and g.shape == w.shape):
                return Diagnosis("shape", problem)
        if not _agree(g, w):
            return Diagnosis("wrong", f"{key} differs: yours {show(g)}, right {show(w)}.")
    return None


def verify_checkpoint(scenario: Scenario, got: Dict[str, Any], want: Dict[str, Any]
                      ) -> Optional[Diagnosis]:
    diagnosis = verify_values(scenario, got, want)
    if diagnosis is not None:
        return diagnosis
    calls, least = got.get("forward_calls"), float(want["forward_calls"])
    layers = len(scenario.data["weights"])
    if type(calls) not in (int, float):
        return Diagnosis("wrong", "the checker could not count your layer_forward calls")
    if float(calls) < least:
        return Diagnosis("no_recompute", (
            f"Right gradients, but layer_forward ran only {float(calls):.0f} times for "
            f"{layers} layers: you kept activations instead of recomputing them, which is "
            f"what checkpointing avoids. Keep only each segment's input; recompute the "
            f"segment's inner activations in backward ({least:.0f} calls in all)."))
    if float(calls) > 2 * layers:
        return Diagnosis("recompute_from_start", (
            f"Right gradients, but layer_forward ran {float(calls):.0f} times for {layers} "
            f"layers: you recompute from x (or more than once per segment); start each "
            f"segment's recompute from its own saved input: at most {2 * layers} calls."))
    return None


# ------------------------------------------------------------------ 21 online softmax
def _state(s: np.ndarray, v: np.ndarray):
    m = s.max(axis=-1)
    e = np.exp(s - np.where(np.isneginf(m), 0.0, m)[:, None])
    return [m, e.sum(axis=-1), e @ v]


def _merge_scenarios(rng: np.random.Generator) -> List[Scenario]:
    scenarios = []
    for k, (rows, t1, t2, d) in enumerate([(1, 1, 1, 1), (2, 3, 2, 2), (3, 2, 4, 3),
                                           (4, 3, 3, 2)]):
        spread = (1.0, 4.0, 300.0, 1000.0)[k]
        s1, s2 = rng.standard_normal((rows, t1)) * spread, rng.standard_normal((rows, t2))
        states = _state(s1, rng.standard_normal((t1, d))) + _state(
            s2 * spread - (500.0 if k == 3 else 0.0), rng.standard_normal((t2, d)))
        scenarios.append(Scenario(f"{rows} rows, blocks of {t1} and {t2} keys, scores up "
                                  f"to about {spread:g}", {"states": states}))
    empty = _state(np.full((2, 2), -np.inf), np.ones((2, 2)))
    scenarios.append(Scenario("a fully masked block (m = -inf) merged with a normal one",
                              {"states": empty + _state(rng.standard_normal((2, 3)),
                                                        rng.standard_normal((3, 2)))}))
    scenarios.append(Scenario("two fully masked blocks: l = 0, o = 0, m = -inf, no NaN",
                              {"states": empty + empty}))
    return scenarios


def _tiled_scenarios(rng: np.random.Generator) -> List[Scenario]:
    out = []
    for s_q, s_k, d, block, big in [(1, 1, 1, 1, 1.0), (2, 5, 2, 2, 1.0), (3, 7, 3, 3, 1.0),
                                    (2, 4, 2, 8, 1.0), (3, 9, 2, 4, 40.0)]:
        out.append(Scenario(f"S_q {s_q}, S_k {s_k}, d_k {d}, blocks of {block}" + (
            ", scores around 1,000" if big > 1 else ""), {
                "q": rng.standard_normal((s_q, d)) * big, "k": rng.standard_normal((s_k, d))
                * big, "v": rng.standard_normal((s_k, 2)), "block": block}))
    return out


# ------------------------------------------------------------------ 22, 26: op parts
def _flash_cases(rng: np.random.Generator) -> List[Case]:
    sizes = [(1, 1, 1, 1), (2, 3, 2, 2), (3, 4, 3, 2)]
    cases = [Case(f"S_q {a}, S_k {b}, d_k {c}, d_v {d}", {
        "q": rng.standard_normal((a, c)), "k": rng.standard_normal((b, c)),
        "v": rng.standard_normal((b, d))}, factors=[(math.sqrt(c), "sqrt(d_k)")],
        dims={"S_q": a, "S_k": b, "d_k": c, "d_v": d}) for a, b, c, d in sizes]
    cases.append(Case("scores around 20: p nearly one-hot", {
        "q": rng.standard_normal((2, 2)) * 6, "k": rng.standard_normal((3, 2)) * 6,
        "v": rng.standard_normal((3, 2))}, dims={"S_q": 2, "S_k": 3, "d_k": 2, "d_v": 2}))
    return cases


def _local_cases(rng: np.random.Generator) -> List[Case]:
    return [Case(f"S {s}, d_k {c}, window {w}", {
        "q": rng.standard_normal((s, c)), "k": rng.standard_normal((s, c)),
        "v": rng.standard_normal((s, 2))}, {"window": w}, factors=[(math.sqrt(c),
                                                                    "sqrt(d_k)")],
        dims={"S": s, "d_k": c, "window": w}) for s, c, w in [(1, 1, 1), (3, 2, 1),
                                                              (4, 2, 2), (5, 3, 3), (4, 2, 9)]]


# ------------------------------------------------------------------ 23 KV cache
def _kv_scenarios(rng: np.random.Generator) -> List[Scenario]:
    out = []
    for total, prompt, d in [(2, 1, 1), (4, 1, 2), (6, 3, 3), (8, 2, 4)]:
        spare = total + 2
        cache_k = rng.standard_normal((spare, d)) * 1e3       # garbage past the length
        cache_v = rng.standard_normal((spare, d)) * 1e3
        k, v = rng.standard_normal((total, d)), rng.standard_normal((total, d))
        cache_k[:prompt], cache_v[:prompt] = k[:prompt], v[:prompt]
        out.append(Scenario(f"a prompt of {prompt}, {total - prompt} decoding steps, d {d}, "
                            f"buffers of {spare} rows (garbage past the length)", {
                                "q": rng.standard_normal((total, d)), "k": k, "v": v,
                                "prompt": prompt, "cache_k": cache_k, "cache_v": cache_v}))
    return out


# ------------------------------------------------------------------ 24 loss scaling
def _unscale_scenarios(rng: np.random.Generator) -> List[Scenario]:
    out = []
    for label, bad in [("clean gradients", None), ("one inf", np.inf), ("one NaN", np.nan),
                       ("a -inf", -np.inf)]:
        grads = [rng.standard_normal(3) * 2.0 ** 16, rng.standard_normal((2, 2)) * 2.0 ** 16]
        if bad is not None:
            grads[1][1, 0] = bad
        out.append(Scenario(f"{label}, scale 65536", {"grads": grads, "scale": 65536.0}))
    return out


def _update_scenarios(rng: np.random.Generator) -> List[Scenario]:
    out = []
    for k in range(4):
        options = {"growth_factor": float(rng.uniform(1.5, 3.0)),
                   "backoff_factor": float(rng.uniform(0.25, 0.5)),
                   "growth_interval": int(rng.integers(1, 4))}
        flags = [bool(f) for f in rng.random(12) < 0.25]
        out.append(Scenario(f"12 steps, found_inf {''.join('X' if f else '.' for f in flags)}"
                            f", growth_interval {options['growth_interval']}",
                            {"scale": 65536.0, "found_inf": flags, "options": options}))
    out.append(Scenario("a scale of 1e308 that would grow to inf: it stays", {
        "scale": 1e308, "found_inf": [False] * 3, "options": {"growth_interval": 1}}))
    return out


def _scaler_scenarios(rng: np.random.Generator) -> List[Scenario]:
    out = []
    for k in range(3):
        steps = []
        for t in range(8):
            grads = [rng.standard_normal(3), rng.standard_normal((2, 2))]
            if rng.random() < 0.3:
                grads[int(rng.integers(2))].reshape(-1)[0] = (np.inf, np.nan)[t % 2]
            steps.append(grads)
        out.append(Scenario(f"8 steps with some inf/NaN gradients #{k + 1}", {
            "params": [rng.standard_normal(3), rng.standard_normal((2, 2))], "steps": steps,
            "scale": 1024.0, "lr": 0.1, "growth_interval": 2}))
    return out


# ------------------------------------------------------------------ 25 checkpointing
def _checkpoint_scenarios(rng: np.random.Generator) -> List[Scenario]:
    out = []
    for layers, segment, n, d in [(2, 1, 1, 2), (3, 2, 2, 2), (5, 2, 2, 3), (6, 3, 3, 2),
                                  (4, 4, 2, 2)]:
        out.append(Scenario(f"{layers} layers, segments of {segment}, x ({n}, {d})", {
            "x": rng.standard_normal((n, d)),
            "weights": [rng.standard_normal((d, d)) for _ in range(layers)],
            "seeds": [int(s) for s in rng.integers(0, 2**31, size=layers)],
            "grad": rng.standard_normal((n, d)), "segment": segment}))
    return out


def _part(name: str, functions, scenarios, mistakes=(), verify=verify_values) -> EnginePart:
    return EnginePart(name, tuple(functions), name, scenarios, verify, list(mistakes),
                      agree=agree_values)


SYSTEMS_EXERCISES: List[Exercise] = [
    Exercise(21, "online_softmax", "online softmax: merge two blocks (tiled attention)",
             f"{DOC}#online-softmax", [
                 _part("merge_blocks", ["merge_blocks"], _merge_scenarios, MERGE_MISTAKES),
                 _part("tiled_attention", ["tiled_attention"], _tiled_scenarios,
                       TILED_MISTAKES)], track="systems"),
    Exercise(22, "flash_backward", "tiled attention's backward from the log-sum-exp",
             f"{DOC}#the-backward-with-recomputed-probabilities", [
                 Part("flash_attention", ("q", "k", "v"), _flash_cases,
                      mistakes=FLASH_MISTAKES)], track="systems"),
    Exercise(23, "kv_cache", "one decoding step with a key/value cache",
             f"{DOC}#a-kv-cache-decoding-step", [
                 _part("decode_step", ["decode_step"], _kv_scenarios, KV_MISTAKES)],
             track="systems"),
    Exercise(24, "loss_scaling", "dynamic loss scaling (GradScaler's rule)",
             f"{DOC}#dynamic-loss-scaling", [
                 _part("unscale_grads", ["unscale_grads"], _unscale_scenarios,
                       UNSCALE_MISTAKES),
                 _part("update_scale", ["update_scale"], _update_scenarios, UPDATE_MISTAKES),
                 _part("scaler_step", ["scaler_step"], _scaler_scenarios, SCALER_MISTAKES)],
             track="systems"),
    Exercise(25, "checkpointing", "gradient checkpointing: recompute in backward",
             f"{DOC}#gradient-checkpointing", [
                 _part("checkpointed_backward", ["checkpointed_backward"],
                       _checkpoint_scenarios, CHECKPOINT_MISTAKES,
                       verify_checkpoint)], track="systems"),
    Exercise(26, "local_attention", "local (sliding-window) attention's backward",
             f"{DOC}#local-attention", [
                 Part("local_attention", ("q", "k", "v"), _local_cases,
                      mistakes=LOCAL_MISTAKES)], track="systems"),
]
