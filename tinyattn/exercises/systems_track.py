"""The attention-systems track (exercises 21-26): what makes attention fit and run fast.

Online-softmax merging (tiled attention's forward), its backward from the log-sum-exp, a
KV-cache decoding step, dynamic loss scaling (GradScaler's rule), gradient checkpointing's
recompute, and the backward of local (sliding-window) attention. 22 and 26 are op parts
(a given forward, the learner's backward: full-Jacobian gradcheck and random upstream
gradients, as in the ops track); the others are probed like the engine track, scenario by
scenario against the reference, on seeded random inputs, smallest first. Each known
mistake is installed into a fresh copy of the reference to name it when the learner's
values equal its values.
"""
from __future__ import annotations

import math
from typing import Any, Callable, Dict, List, Optional

import numpy as np

from .course import (Case, Diagnosis, EngineMistake, EnginePart, Exercise, Mistake, Part,
                     Scenario)
from .engine_explain import show
from .engine_verify import array_problem

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


def _install(name: str, make: Callable[[Any], Callable]) -> Callable[[Any], None]:
    def install(module: Any) -> None:
        setattr(module, name, make(module))
    return install


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


def _merge_variant(kind: str):
    def make(m):
        def merge_blocks(m1, l1, o1, m2, l2, o2):
            mx = np.maximum(m1, m2)
            if kind == "plain":
                a1, a2 = np.exp(m1 - mx), np.exp(m2 - mx)
            elif kind == "inverted":            # exp(m - m_i), empty blocks still 0
                a1, a2 = [np.where(np.isneginf(mi), 0.0, np.exp(np.where(np.isneginf(mi),
                                                                         0.0, mx) - mi))
                          for mi in (m1, m2)]
            else:
                a1, a2 = m._weight(m1, mx), m._weight(m2, mx)
            if kind == "o_unscaled":
                return mx, a1 * l1 + a2 * l2, o1 + o2
            return mx, a1 * l1 + a2 * l2, a1[:, None] * o1 + a2[:, None] * o2
        return merge_blocks
    return make


def _tiled_variant(kind: str):
    def make(m):
        def tiled_attention(q, k, v, block):
            out, lse = m.__dict__["_tiled_right"](q, k, v, block)
            if kind == "lse_no_max":
                s = q @ k.T / math.sqrt(q.shape[-1])
                return out, lse - s.max(axis=-1)
            return out, lse
        return tiled_attention
    return make


MERGE_MISTAKES = [
    EngineMistake("merge_o_unscaled", "You move l to the common max but not o: both sums were "
                  "taken relative to their own block's max, so o1 and o2 need the same factors "
                  "exp(m_i - m) as l1 and l2.", _install("merge_blocks", _merge_variant(
                      "o_unscaled"))),
    EngineMistake("merge_inverted", "The rescaling factor is upside down: a block's sums are "
                  "relative to its own max m_i, and moving them to m = max(m1, m2) multiplies "
                  "by exp(m_i - m) <= 1, not exp(m - m_i).",
                  _install("merge_blocks", _merge_variant("inverted"))),
    EngineMistake("merge_masked_nan", "A fully masked block has m = -inf, and exp(-inf - "
                  "(-inf)) is NaN: give such a block the weight 0 (np.where(np.isneginf(m_i), "
                  "0, ...)).", _install("merge_blocks", _merge_variant("plain"))),
]


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


FLASH_MISTAKES = [
    Mistake("q", "flash_d_no_out", "D is rowsum(grad * out), softmax's row term rowsum(dp * p) "
            "in disguise: you summed grad alone.", _flash_wrong("d_no_out")),
    Mistake("v", "flash_unnormalised", "The recomputed p is exp(s - lse), normalised by the "
            "row's log-sum-exp: exp(s) alone is not a probability.", _flash_wrong(
                "unnormalised")),
]


def _local_cases(rng: np.random.Generator) -> List[Case]:
    return [Case(f"S {s}, d_k {c}, window {w}", {
        "q": rng.standard_normal((s, c)), "k": rng.standard_normal((s, c)),
        "v": rng.standard_normal((s, 2))}, {"window": w}, factors=[(math.sqrt(c),
                                                                    "sqrt(d_k)")],
        dims={"S": s, "d_k": c, "window": w}) for s, c, w in [(1, 1, 1), (3, 2, 1),
                                                              (4, 2, 2), (5, 3, 3), (4, 2, 9)]]


LOCAL_MISTAKES = [
    Mistake("q", "attention_no_rowsum", "Softmax's backward is p * (dp - rowsum(dp * p)): the "
            "row term is missing (every score in a row moves the others through the "
            "normalisation).", lambda grad, c: (c[3] * (grad @ c[2].T)) @ c[1] * c[4]),
    Mistake("v", "transpose", "dv = p^T grad: keys index the columns of p, so each key "
            "collects from the queries that attended to it (a column), not a row.",
            lambda grad, c: c[3] @ grad),
]


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


def _kv_variant(kind: str):
    def make(m):
        def decode_step(cache_k, cache_v, length, q_new, k_new, v_new):
            cache_k[length], cache_v[length] = k_new, v_new
            stop = {"whole": cache_k.shape[0], "exclusive": max(length, 1)}.get(kind,
                                                                                 length + 1)
            s = cache_k[:stop] @ q_new / (1.0 if kind == "no_scale" else
                                          math.sqrt(q_new.shape[-1]))
            p = np.exp(s - s.max())
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
]


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


def _unscale_variant(kind: str):
    def make(m):
        def unscale_grads(grads, scale):
            unscaled = [g * scale if kind == "multiply" else g / scale for g in grads]
            test = np.isinf if kind == "isinf" else (lambda g: ~np.isfinite(g))
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


def _part(name: str, functions, scenarios, mistakes=(), verify=verify_values) -> EnginePart:
    return EnginePart(name, tuple(functions), name, scenarios, verify, list(mistakes),
                      agree=agree_values)


TILED_MISTAKES = _with_right([EngineMistake(
    "tiled_lse", "lse is the log-sum-exp of the row's scores, m + log(l): the max m belongs "
    "in it (log(l) alone is relative to m).", _install("tiled_attention",
                                                        _tiled_variant("lse_no_max")))],
    "tiled_attention")

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
                       _checkpoint_scenarios, _with_right(CHECKPOINT_MISTAKES,
                                                          "checkpointed_backward"),
                       verify_checkpoint)], track="systems"),
    Exercise(26, "local_attention", "local (sliding-window) attention's backward",
             f"{DOC}#local-attention", [
                 Part("local_attention", ("q", "k", "v"), _local_cases,
                      mistakes=LOCAL_MISTAKES)], track="systems"),
]
