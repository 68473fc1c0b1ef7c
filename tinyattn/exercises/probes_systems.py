"""Probes for the attention-systems track (exercises 21, 23, 24, 25): call the learner's
functions on a scenario's data and report plain values (numbers, strings, NumPy arrays).

Like probes.py: the same code runs on the learner's module in the child process and on the
reference solution in the checker's; only plain values come back, in the order the checker
reads them (the first value a function returns is judged first). Every probe also reports
what the FIRST call returned, position by position (``ret_0``, ``ret_1``, ...), so the
checker can tell a swapped return order from a wrong value. Inputs are fresh copies: a
learner may write into them (torch's unscale works in place). Imports nothing but NumPy
and the standard library (the child loads it by path).
"""
from __future__ import annotations

import sys
import tracemalloc
from typing import Any, Dict, List

import numpy as np

__all__ = ["merge_blocks", "tiled_attention", "decode_step", "unscale_grads",
           "update_scale", "scaler_step", "checkpointed_backward", "RETURNS"]

Values = Dict[str, Any]

# what each function returns, in order (the stubs' docstrings say the same)
RETURNS = {"merge_blocks": ("m", "l", "o"), "tiled_attention": ("out", "lse"),
           "decode_step": ("out", "length + 1"), "unscale_grads": ("grads", "found_inf"),
           "update_scale": ("scale", "growth_tracker"),
           "scaler_step": ("scale", "growth_tracker", "skipped"),
           "checkpointed_backward": ("dx", "dws")}


def _plain(value: Any) -> Any:
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, np.ndarray) and value.dtype.kind in "biufc":
        return np.array(value, dtype=np.float64, copy=True, subok=False)
    if isinstance(value, (float, int, np.floating, np.integer)):
        return np.asarray(value, dtype=np.float64)
    return f"a {type(value).__name__}" if value is not None else "None"


def _flag(value: Any) -> Any:
    """A yes/no answer: a bool, a NumPy bool, 0 or 1 (a 0-d array too); else described."""
    if isinstance(value, np.ndarray) and value.shape == ():
        value = value[()]
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, (int, float, np.integer, np.floating)) and value in (0, 1):
        return bool(value)
    return _plain(value)


def _fingerprint(value: Any) -> Any:
    """One returned value as something comparable: an array (a list of arrays: all their
    numbers in a row), a bool, or a description."""
    if isinstance(value, (list, tuple)):
        try:
            return np.concatenate([np.asarray(v, dtype=np.float64).ravel() for v in value]
                                  ) if value else "an empty list"
        except (TypeError, ValueError):
            return f"a {type(value).__name__} of {len(value)}"
    return _flag(value) if isinstance(value, (bool, np.bool_)) else _plain(value)


def _returned(returned: Any, count: int, values: Values) -> List[Any]:
    if not isinstance(returned, (tuple, list)) or len(returned) != count:
        raise TypeError(f"it must return {count} values, a tuple; it returned "
                        f"{type(returned).__name__}"
                        + (f" of {len(returned)}" if isinstance(returned, (tuple, list))
                           else ""))
    if "ret_0" not in values:
        for i, value in enumerate(returned):
            values[f"ret_{i}"] = _fingerprint(value)
    return list(returned)


def _copy(array: np.ndarray) -> np.ndarray:
    return np.array(array, dtype=np.float64, copy=True)


# ------------------------------------------------------------------ 21 online softmax
def merge_blocks(module: Any, data: Values) -> Values:
    first: Values = {}
    m, l, o = _returned(module.merge_blocks(*[_copy(a) for a in data["states"]]), 3, first)
    return {"m": _plain(m), "l": _plain(l), "o": _plain(o), **first}


def tiled_attention(module: Any, data: Values) -> Values:
    first: Values = {}
    out, lse = _returned(module.tiled_attention(_copy(data["q"]), _copy(data["k"]),
                                                _copy(data["v"]), data["block"]), 2, first)
    return {"out": _plain(out), "lse": _plain(lse), **first}


# ------------------------------------------------------------------ 23 KV cache
def decode_step(module: Any, data: Values) -> Values:
    """Decode every token after the prompt, one step each, on buffers whose rows past the
    prompt hold garbage; report each step's output, the lengths and the buffers."""
    cache_k, cache_v = data["cache_k"].copy(), data["cache_v"].copy()
    garbage_k = cache_k.copy()
    length = int(data["prompt"])
    outs, lengths, first = [], [], {}
    for t in range(length, data["q"].shape[0]):
        out, length = _returned(module.decode_step(cache_k, cache_v, length, _copy(
            data["q"][t]), _copy(data["k"][t]), _copy(data["v"][t])), 2, first)
        outs.append(_plain(out))
        length = int(length) if isinstance(length, (int, np.integer)) else -1
        lengths.append(length)
        if length < 0:
            break
    values: Values = {}
    if outs and all(isinstance(o, np.ndarray) and o.shape == outs[0].shape for o in outs):
        values["outs"] = np.stack(outs)
    else:
        values["outs"] = "outputs of changing shapes or types"
    written = int(data["prompt"]) < data["q"].shape[0]
    values.update({"lengths": np.array(lengths, dtype=np.float64),
                   "cache_k": cache_k.copy(), "cache_v": cache_v.copy(),
                   "in_place": bool(not written or not np.array_equal(
                       cache_k[data["prompt"]], garbage_k[data["prompt"]])), **first})
    return values


# ------------------------------------------------------------------ 24 loss scaling
def unscale_grads(module: Any, data: Values) -> Values:
    first: Values = {}
    grads, found_inf = _returned(module.unscale_grads([_copy(g) for g in data["grads"]],
                                                      data["scale"]), 2, first)
    values: Values = {"found_inf": _flag(found_inf)}
    for i, g in enumerate(list(grads) if isinstance(grads, (list, tuple)) else [grads]):
        values[f"grad_{i}"] = _plain(g)
    return {**values, **first}


def update_scale(module: Any, data: Values) -> Values:
    scale, tracker, first = data["scale"], 0, {}
    scales, trackers = [], []
    for found_inf in data["found_inf"]:
        scale, tracker = _returned(module.update_scale(scale, tracker, bool(found_inf),
                                                       **data["options"]), 2, first)
        scales.append(float(scale))
        trackers.append(float(tracker))
    return {"scales": np.array(scales), "trackers": np.array(trackers), **first}


def _helpers(module: Any, data: Values) -> Values:
    """What the learner's unscale_grads and update_scale say on this scenario's steps: when
    scaler_step is wrong because one of them is, the checker names that one."""
    found = [_flag(module.unscale_grads([g * data["scale"] for g in grads],
                                        data["scale"])[1]) for grads in data["steps"]]
    scale, tracker, scales = data["scale"], 0, []
    for flag in [not all(np.isfinite(g).all() for g in grads) for grads in data["steps"]]:
        scale, tracker = module.update_scale(scale, tracker, flag,
                                             growth_interval=data["growth_interval"])
        scales.append(float(scale))
    return {"helper_found": np.array([1.0 if f is True else 0.0 if f is False else -1.0
                                      for f in found]), "helper_scales": np.array(scales)}


def scaler_step(module: Any, data: Values) -> Values:
    params = [p.copy() for p in data["params"]]
    scale, tracker, first = data["scale"], 0, {}
    scales, skipped = [], []
    for grads in data["steps"]:
        scale, tracker, skip = _returned(module.scaler_step(
            params, [g * scale for g in grads], scale, tracker, data["lr"],
            growth_interval=data["growth_interval"]), 3, first)
        scales.append(float(scale))
        skipped.append(1.0 if skip else 0.0)
    values: Values = {"scales": np.array(scales), "skipped": np.array(skipped)}
    for i, p in enumerate(params):
        values[f"param_{i}"] = _plain(p)
    try:
        values.update(_helpers(module, data))
    except Exception:  # a helper that raises: scaler_step's own values decide
        pass
    return {**values, **first}


# ------------------------------------------------------------------ 25 checkpointing
def checkpointed_backward(module: Any, data: Values) -> Values:
    """The gradients; how often layer_forward ran (counted by its code, so an alias or a
    default argument counts too); with ``measure``, the most memory held at once, in
    activations (one layer's output), as tracemalloc sees NumPy's allocations."""
    code = getattr(getattr(module, "layer_forward", None), "__code__", None)
    calls = [0]

    def profile(frame: Any, event: str, arg: Any) -> None:
        if event == "call" and frame.f_code is code:
            calls[0] += 1

    x = _copy(data["x"])
    weights, grad = [_copy(w) for w in data["weights"]], _copy(data["grad"])
    seeds = list(data["seeds"])
    measure = bool(data.get("measure"))
    started = measure and not tracemalloc.is_tracing()
    if started:
        tracemalloc.start()
    previous = sys.getprofile()
    try:
        if measure:
            tracemalloc.reset_peak()
            base = tracemalloc.get_traced_memory()[0]
        sys.setprofile(profile)
        try:
            returned = module.checkpointed_backward(x, weights, seeds, grad, data["segment"])
        finally:
            sys.setprofile(previous)
        if measure:
            peak = tracemalloc.get_traced_memory()[1] - base
    finally:
        if started:
            tracemalloc.stop()
    first: Values = {}
    dx, dws = _returned(returned, 2, first)
    values: Values = {"dx": _plain(dx)}
    for i, dw in enumerate(list(dws) if isinstance(dws, (list, tuple)) else [dws]):
        values[f"dw_{i}"] = _plain(dw)
    values["forward_calls"] = float(calls[0])
    if measure:
        values["peak_activations"] = round(peak / max(x.nbytes, 1), 1)
    return {**values, **first}
