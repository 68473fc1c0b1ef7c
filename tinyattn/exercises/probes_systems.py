"""Probes for the attention-systems track (exercises 21, 23, 24, 25): call the learner's
functions on a scenario's data and report plain values (numbers, strings, NumPy arrays).

Like probes.py: the same code runs on the learner's module in the child process and on the
reference solution in the checker's; only plain values come back. Imports nothing but
NumPy and the standard library (the child loads it by path).
"""
from __future__ import annotations

from typing import Any, Dict, List

import numpy as np

__all__ = ["merge_blocks", "tiled_attention", "decode_step", "unscale_grads",
           "update_scale", "scaler_step", "checkpointed_backward"]

Values = Dict[str, Any]


def _plain(value: Any) -> Any:
    if isinstance(value, np.ndarray) and value.dtype.kind in "biufc":
        return np.array(value, dtype=np.float64, copy=True, subok=False)
    if isinstance(value, (float, int, np.floating, np.integer)) and not isinstance(
            value, (bool, np.bool_)):
        return np.asarray(value, dtype=np.float64)
    return f"a {type(value).__name__}" if value is not None else "None"


def _readonly(array: np.ndarray) -> np.ndarray:
    view = np.array(array, copy=True).view()
    view.flags.writeable = False
    return view


def _pair(returned: Any, count: int) -> List[Any]:
    if not isinstance(returned, (tuple, list)) or len(returned) != count:
        raise TypeError(f"it must return {count} values, a tuple; it returned "
                        f"{type(returned).__name__}")
    return list(returned)


# ------------------------------------------------------------------ 21 online softmax
def merge_blocks(module: Any, data: Values) -> Values:
    m, l, o = _pair(module.merge_blocks(*[_readonly(a) for a in data["states"]]), 3)
    return {"m": _plain(m), "l": _plain(l), "o": _plain(o)}


def tiled_attention(module: Any, data: Values) -> Values:
    out, lse = _pair(module.tiled_attention(_readonly(data["q"]), _readonly(data["k"]),
                                            _readonly(data["v"]), data["block"]), 2)
    return {"out": _plain(out), "lse": _plain(lse)}


# ------------------------------------------------------------------ 23 KV cache
def decode_step(module: Any, data: Values) -> Values:
    """Decode every token after the prompt, one step each, on buffers whose rows past the
    prompt hold garbage; report each step's output, the lengths and the buffers."""
    cache_k, cache_v = data["cache_k"].copy(), data["cache_v"].copy()
    length = int(data["prompt"])
    outs, lengths = [], []
    for t in range(length, data["q"].shape[0]):
        out, length = _pair(module.decode_step(cache_k, cache_v, length, _readonly(
            data["q"][t]), _readonly(data["k"][t]), _readonly(data["v"][t])), 2)
        outs.append(_plain(out))
        lengths.append(int(length) if isinstance(length, (int, np.integer)) else -1)
    values: Values = {"lengths": np.array(lengths, dtype=np.float64),
                      "cache_k": cache_k.copy(), "cache_v": cache_v.copy()}
    if all(isinstance(o, np.ndarray) and o.shape == outs[0].shape for o in outs):
        values["outs"] = np.stack(outs)
    else:
        values["outs"] = "outputs of changing shapes or types"
    return values


# ------------------------------------------------------------------ 24 loss scaling
def unscale_grads(module: Any, data: Values) -> Values:
    grads, found_inf = _pair(module.unscale_grads([_readonly(g) for g in data["grads"]],
                                                  data["scale"]), 2)
    values: Values = {"found_inf": bool(found_inf) if isinstance(found_inf, (bool, np.bool_))
                      else _plain(found_inf)}
    for i, g in enumerate(list(grads)):
        values[f"grad_{i}"] = _plain(g)
    return values


def update_scale(module: Any, data: Values) -> Values:
    scale, tracker = data["scale"], 0
    scales, trackers = [], []
    for found_inf in data["found_inf"]:
        scale, tracker = _pair(module.update_scale(scale, tracker, bool(found_inf),
                                                   **data["options"]), 2)
        scales.append(float(scale))
        trackers.append(float(tracker))
    return {"scales": np.array(scales), "trackers": np.array(trackers)}


def scaler_step(module: Any, data: Values) -> Values:
    params = [p.copy() for p in data["params"]]
    scale, tracker = data["scale"], 0
    scales, skipped = [], []
    for grads in data["steps"]:
        scale, tracker, skip = _pair(module.scaler_step(
            params, [_readonly(g * scale) for g in grads], scale, tracker, data["lr"],
            growth_interval=data["growth_interval"]), 3)
        scales.append(float(scale))
        skipped.append(1.0 if skip else 0.0)
    values: Values = {"scales": np.array(scales), "skipped": np.array(skipped)}
    for i, p in enumerate(params):
        values[f"param_{i}"] = _plain(p)
    return values


# ------------------------------------------------------------------ 25 checkpointing
def checkpointed_backward(module: Any, data: Values) -> Values:
    """The gradients, and how often layer_forward ran (the module's own, wrapped)."""
    calls = [0]
    given = module.layer_forward

    def counted(x, w, seed):
        calls[0] += 1
        return given(x, w, seed)

    module.layer_forward = counted
    try:
        dx, dws = _pair(module.checkpointed_backward(
            _readonly(data["x"]), [_readonly(w) for w in data["weights"]],
            list(data["seeds"]), _readonly(data["grad"]), data["segment"]), 2)
    finally:
        module.layer_forward = given
    values: Values = {"dx": _plain(dx), "forward_calls": float(calls[0])}
    for i, dw in enumerate(list(dws)):
        values[f"dw_{i}"] = _plain(dw)
    return values
