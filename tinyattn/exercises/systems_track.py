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
from typing import List

import numpy as np

from .course import Case, EnginePart, Exercise, Part, Scenario
from .systems_verify import agree_values, verifier, verify_checkpoint
from .systems_mistakes import (CHECKPOINT_MISTAKES, FLASH_MISTAKES, KV_MISTAKES,
                               LOCAL_MISTAKES, MERGE_MISTAKES, SCALER_MISTAKES, TILED_MISTAKES,
                               UNSCALE_MISTAKES, UPDATE_MISTAKES)

__all__ = ["SYSTEMS_EXERCISES", "DOC"]

DOC = "docs/attention_systems.md"


# ------------------------------------------------------------------ shared
def _aligned(rng: np.random.Generator, s_q: int, s_k: int, d: int, level: float):
    """q (s_q, d), k (s_k, d) whose scores q k^T / sqrt(d) are all near ``level`` (1,000 or
    -1,000) and still differ by a few units: an unstabilised exp overflows (or underflows
    to 0 in every entry of a row) while the softmax itself is an ordinary distribution."""
    u = rng.standard_normal(d)
    u /= np.linalg.norm(u)
    size = math.sqrt(abs(level) * math.sqrt(d))
    k = u * size + 0.05 * rng.standard_normal((s_k, d))
    q = math.copysign(1.0, level) * u * size + 0.05 * rng.standard_normal((s_q, d))
    return q, k


_BIG = ("exp of a score here overflows (exp(1000) is inf) or underflows (exp(-1000) is 0): "
        "never exp a score itself, only its difference to the row's max or log-sum-exp "
        "(p = exp(s - lse)), which is <= 0.")


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
    low = _state(rng.standard_normal((3, 2)) - 1000.0, rng.standard_normal((2, 2))) + \
        _state(rng.standard_normal((3, 3)) - 1300.0, rng.standard_normal((3, 2)))
    scenarios.append(Scenario("3 rows whose scores are all about -1,000 (exp(s) is 0)",
                              {"states": low}))
    partial = rng.standard_normal((4, 3))
    partial[[0, 2]] = -np.inf                   # rows 0 and 2 masked in block 1 only
    other = rng.standard_normal((4, 2)) * 3.0
    other[[2, 3]] = -np.inf                     # row 2 masked in both, row 3 in block 2
    scenarios.append(Scenario("a block masked for some rows but not others (rows 0, 2 in the "
                              "first, 2, 3 in the second: row 2 in both)", {
                                  "states": _state(partial, rng.standard_normal((3, 2)))
                                  + _state(other, rng.standard_normal((2, 2)))}))
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
    for level in (-1000.0, 1000.0):
        q, k = _aligned(rng, 3, 7, 2, level)
        out.append(Scenario(f"S_q 3, S_k 7, blocks of 3, every score about {level:,.0f}", {
            "q": q, "k": k, "v": rng.standard_normal((7, 2)), "block": 3}))
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
    for level in (1000.0, -1000.0):
        q, k = _aligned(rng, 2, 3, 2, level)
        cases.append(Case(f"every score about {level:,.0f}", {
            "q": q, "k": k, "v": rng.standard_normal((3, 2))},
            dims={"S_q": 2, "S_k": 3, "d_k": 2, "d_v": 2}, nonfinite_hint=_BIG))
    return cases


def _local_cases(rng: np.random.Generator) -> List[Case]:
    cases = [Case(f"S {s}, d_k {c}, window {w}", {
        "q": rng.standard_normal((s, c)), "k": rng.standard_normal((s, c)),
        "v": rng.standard_normal((s, 2))}, {"window": w}, factors=[(math.sqrt(c),
                                                                    "sqrt(d_k)")],
        dims={"S": s, "d_k": c, "window": w}) for s, c, w in [(1, 1, 1), (3, 2, 1),
                                                              (4, 2, 2), (5, 3, 3), (4, 2, 9)]]
    for level in (1000.0, -1000.0):
        q, k = _aligned(rng, 4, 4, 2, level)
        cases.append(Case(f"S 4, d_k 2, window 2, every score about {level:,.0f}", {
            "q": q, "k": k, "v": rng.standard_normal((4, 2))}, {"window": 2},
            dims={"S": 4, "d_k": 2, "window": 2}, nonfinite_hint=_BIG))
    return cases


# ------------------------------------------------------------------ 23 KV cache
def _kv_scenario(rng: np.random.Generator, total: int, prompt: int, d: int, d_v: int,
                 level: float = 0.0) -> Scenario:
    spare = total + 2
    cache_k = rng.standard_normal((spare, d)) * 1e3       # garbage past the length
    cache_v = rng.standard_normal((spare, d_v)) * 1e3
    if level:
        q, k = _aligned(rng, total, total, d, level)
    else:
        q, k = rng.standard_normal((total, d)), rng.standard_normal((total, d))
    v = rng.standard_normal((total, d_v))
    cache_k[:prompt], cache_v[:prompt] = k[:prompt], v[:prompt]
    label = (f"a prompt of {prompt}" if prompt else "an empty cache (length 0)") + \
        f", {total - prompt} decoding steps, d_k {d}, d_v {d_v}, buffers of {spare} rows" + \
        (f", scores about {level:,.0f}" if level else " (garbage past the length)")
    return Scenario(label, {"q": q, "k": k, "v": v, "prompt": prompt, "cache_k": cache_k,
                            "cache_v": cache_v})


def _kv_scenarios(rng: np.random.Generator) -> List[Scenario]:
    out = [_kv_scenario(rng, total, prompt, d, d) for total, prompt, d in
           [(2, 1, 1), (4, 1, 2), (6, 3, 3), (8, 2, 4)]]
    out.append(_kv_scenario(rng, 3, 0, 2, 2))
    out.append(_kv_scenario(rng, 5, 2, 2, 3))
    out += [_kv_scenario(rng, 5, 1, 2, 2, level) for level in (1000.0, -1000.0)]
    return out


# ------------------------------------------------------------------ 24 loss scaling
def _unscale_scenarios(rng: np.random.Generator) -> List[Scenario]:
    out = []
    for label, bads in [("clean gradients", []), ("an inf in the first of three",
                                                   [(0, np.inf)]),
                        ("a NaN in the middle one", [(1, np.nan)]),
                        ("a -inf in the last one", [(2, -np.inf)]),
                        ("an inf in the first and a NaN in the last", [(0, np.inf),
                                                                      (2, np.nan)])]:
        grads = [rng.standard_normal(3) * 2.0 ** 16, rng.standard_normal((2, 2)) * 2.0 ** 16,
                 rng.standard_normal(4) * 2.0 ** 16]
        for index, bad in bads:
            grads[index].reshape(-1)[int(rng.integers(grads[index].size))] = bad
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
    for k in range(4):
        steps = []
        for t in range(8):
            grads = [rng.standard_normal(3), rng.standard_normal((2, 2))]
            if (k == 3 and t % 3 == 1) or (k < 3 and rng.random() < 0.3):
                index = 0 if k == 3 else int(rng.integers(2))
                grads[index].reshape(-1)[0] = (np.inf, np.nan)[t % 2]
            steps.append(grads)
        label = "inf/NaN in the first gradient" if k == 3 else "some inf/NaN gradients"
        out.append(Scenario(f"8 steps with {label} #{k + 1}", {
            "params": [rng.standard_normal(3), rng.standard_normal((2, 2))], "steps": steps,
            "scale": 1024.0, "lr": 0.1, "growth_interval": 2}))
    return out


# ------------------------------------------------------------------ 25 checkpointing
def _checkpoint_scenarios(rng: np.random.Generator) -> List[Scenario]:
    out = []
    for layers, segment, n, d in [(1, 1, 1, 2), (2, 1, 1, 2), (3, 2, 2, 2), (5, 2, 2, 3),
                                  (6, 3, 3, 2), (4, 4, 2, 2), (3, 5, 2, 2), (32, 4, 256, 16)]:
        measure = layers >= 16
        label = f"{layers} layers, segments of {segment}" + (
            " (longer than the stack)" if segment > layers else "") + f", x ({n}, {d})" + (
            ": the memory held at once is measured" if measure else "")
        out.append(Scenario(label, {
            "x": rng.standard_normal((n, d)),
            "weights": [rng.standard_normal((d, d)) / math.sqrt(d) for _ in range(layers)],
            "seeds": [int(s) for s in rng.integers(0, 2**31, size=layers)],
            "grad": rng.standard_normal((n, d)), "segment": segment, "measure": measure}))
    return out


def _part(name: str, functions, scenarios, mistakes=(), verify=None) -> EnginePart:
    return EnginePart(name, tuple(functions), name, scenarios, verify or verifier(name),
                      list(mistakes), agree=agree_values)


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
