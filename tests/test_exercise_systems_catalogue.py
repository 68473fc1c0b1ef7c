"""A broad catalogue of planted learner mistakes for the attention-systems track (exercises
21-26), and of right answers written differently: every mistake fails, named where the
checker knows its cause, and no right answer is rejected.

The kinds of input this catalogue was written to cover (issue 35): a block masked for some
rows but not others; rows whose scores are all very negative; an empty cache; a segment
longer than the stack; scores of about 1,000 for the flash backward, the KV-cache decode and
local attention; a checkpointing answer that keeps every activation and recomputes too
(memory is measured); an unscale_grads whose inf check is overwritten in a loop (named
there, not in scaler_step); swapped return orders (named as such); a right answer that calls
layer_forward through another name; a wrong running max (named as the max); every wrong
gradient of a case reported at once. Each entry edits a reference solution as a learner
would (old text -> new text; the old text must be in the file), judged with check_module.
"""
from __future__ import annotations

import pytest

from tinyattn.exercises import check_module, find_exercise, load_file
from tinyattn.exercises.checker import SOLUTIONS_DIR

MERGE = "    m = np.maximum(m1, m2)\n    a1, a2 = _weight(m1, m), _weight(m2, m)\n" \
        "    return m, a1 * l1 + a2 * l2, a1[:, None] * o1 + a2[:, None] * o2"
WEIGHT = "    return np.where(empty, 0.0, np.exp(m_i - np.where(empty, 0.0, m)))"
TILED = ("    state = None\n    for start in range(0, k.shape[0], block):\n"
         "        part = block_state(q, k[start:start + block], v[start:start + block], scale)\n"
         "        state = part if state is None else merge_blocks(*state, *part)\n"
         "    m, l, o = state\n    return o / l[:, None], m + np.log(l)")
FLASH = ("    p = np.exp(q @ k.T * scale - lse[:, None])  # (S_q, S_k), recomputed\n"
         "    d = (grad * out).sum(axis=-1)               # (S_q,)\n"
         "    dv = p.T @ grad                             # (S_k, S_q) @ (S_q, d_v)\n"
         "    ds = p * (grad @ v.T - d[:, None])          # (S_q, S_k)\n"
         "    return ds @ k * scale, ds.T @ q * scale, dv")
KV = ("    cache_k[length] = k_new\n    cache_v[length] = v_new\n"
      "    keys, values = cache_k[:length + 1], cache_v[:length + 1]   # (t + 1, d_k), (t + 1, "
      "d_v)\n    s = keys @ q_new / math.sqrt(q_new.shape[-1])               # (t + 1,)\n"
      "    p = np.exp(s - s.max())\n    return p @ values / p.sum(), length + 1")
UNSCALE = ("    unscaled = [g / scale for g in grads]\n"
           "    found_inf = any(not np.all(np.isfinite(g)) for g in unscaled)\n"
           "    return unscaled, found_inf")
UPDATE = ("    if found_inf:\n        return scale * backoff_factor, 0\n"
          "    growth_tracker += 1\n    if growth_tracker == growth_interval:\n"
          "        grown = scale * growth_factor\n"
          "        return (grown if np.isfinite(grown) else scale), 0\n"
          "    return scale, growth_tracker")
SCALER = ("    grads, found_inf = unscale_grads(scaled_grads, scale)\n    if not found_inf:\n"
          "        for p, g in zip(params, grads):\n            p -= lr * g\n"
          "    scale, growth_tracker = update_scale(scale, growth_tracker, found_inf,\n"
          "                                         growth_interval=growth_interval)\n"
          "    return scale, growth_tracker, found_inf")
CHECKPOINT = (
    "    saved = {}\n    h = x\n    for i, (w, seed) in enumerate(zip(weights, seeds)):\n"
    "        if i % segment == 0:\n            saved[i] = h\n"
    "        h = layer_forward(h, w, seed)\n    dws = [None] * len(weights)\n"
    "    for start in reversed(sorted(saved)):\n"
    "        stop = min(start + segment, len(weights))\n        inputs = [saved[start]]\n"
    "        for i in range(start, stop - 1):        # the segment's inner activations, again\n"
    "            inputs.append(layer_forward(inputs[-1], weights[i], seeds[i]))\n"
    "        for i in reversed(range(start, stop)):\n"
    "            grad, dws[i] = layer_backward(inputs[i - start], weights[i], seeds[i], grad)\n"
    "    return grad, dws")
LOCAL = ("    dv = p.T @ grad                             # (S, S) @ (S, d_v)\n"
         "    dp = grad @ v.T                             # (S, d_v) @ (d_v, S)\n"
         "    ds = p * (dp - (dp * p).sum(axis=-1, keepdims=True))\n"
         "    return ds @ k * scale, ds.T @ q * scale, dv")

KEEP_ALL = CHECKPOINT.replace("    saved = {}\n", "    saved, kept = {}, []\n").replace(
    "        h = layer_forward(h, w, seed)\n",
    "        h = layer_forward(h, w, seed)\n        kept.append(h)\n")


# (exercise, failing part, diagnosis kinds that name it (None: any failure), old, new)
WRONG = [
    # ---- 21 merge_blocks
    ("online_softmax", "merge_blocks", {"merge_wrong_max"}, "    m = np.maximum(m1, m2)\n",
     "    m = m1\n"),
    ("online_softmax", "merge_blocks", {"merge_wrong_max", "wrong", "shape"},
     "    m = np.maximum(m1, m2)\n", "    m = np.maximum(m1.max(), m2.max()) + 0 * m1\n"),
    ("online_softmax", "merge_blocks", {"merge_wrong_max", "wrong"},
     "    m = np.maximum(m1, m2)\n", "    m = np.minimum(m1, m2)\n"),
    ("online_softmax", "merge_blocks", {"merge_l_unscaled"}, "a1 * l1 + a2 * l2, a1[:, None]",
     "l1 + l2, a1[:, None]"),
    ("online_softmax", "merge_blocks", {"merge_o_unscaled"}, "a1[:, None] * o1 + a2[:, None] * o2",
     "o1 + o2"),
    ("online_softmax", "merge_blocks", {"merge_o_normalised"},
     "return m, a1 * l1 + a2 * l2, a1[:, None] * o1 + a2[:, None] * o2",
     "l = a1 * l1 + a2 * l2\n    return m, l, (a1[:, None] * o1 + a2[:, None] * o2) / l[:, None]"),
    ("online_softmax", "merge_blocks", None, "a1 * l1 + a2 * l2, a1[:, None]",
     "a1 * l1 + l2, a1[:, None]"),
    ("online_softmax", "merge_blocks", {"merge_masked_rows", "overflow"}, WEIGHT,
     "    if np.all(empty):\n        return np.zeros_like(m_i)\n    return np.exp(m_i - m)"),
    ("online_softmax", "merge_blocks", {"merge_masked_rows", "overflow", "wrong"}, WEIGHT,
     "    if np.any(empty):\n        return np.zeros_like(m_i)\n    return np.exp(m_i - m)"),
    ("online_softmax", "merge_blocks", {"merge_unstable", "overflow"}, WEIGHT,
     "    return np.where(empty, 0.0, np.exp(m_i) / np.exp(np.where(empty, 0.0, m)))"),
    ("online_softmax", "merge_blocks", {"merge_masked_nan", "overflow"}, WEIGHT,
     "    return np.exp(m_i - m)"),
    ("online_softmax", "merge_blocks", {"return_order"},
     "return m, a1 * l1 + a2 * l2, a1[:, None] * o1 + a2[:, None] * o2",
     "return m, a1[:, None] * o1 + a2[:, None] * o2, a1 * l1 + a2 * l2"),
    ("online_softmax", "merge_blocks", {"return_order"},
     "return m, a1 * l1 + a2 * l2, a1[:, None] * o1 + a2[:, None] * o2",
     "return a1 * l1 + a2 * l2, m, a1[:, None] * o1 + a2[:, None] * o2"),
    # ---- 21 tiled_attention
    ("online_softmax", "tiled_attention", {"tiled_lse"}, "m + np.log(l)", "np.log(l)"),
    ("online_softmax", "tiled_attention", None, "return o / l[:, None], m", "return o, m"),
    ("online_softmax", "tiled_attention", {"return_order"},
     "return o / l[:, None], m + np.log(l)", "return m + np.log(l), o / l[:, None]"),
    ("online_softmax", "tiled_attention", None, "for start in range(0, k.shape[0], block):",
     "for start in range(0, k.shape[0] - block + 1, block):"),
    ("online_softmax", "tiled_attention", None, "for start in range(0, k.shape[0], block):",
     "for start in range(0, k.shape[0] // block * block, block):"),
    ("online_softmax", "tiled_attention", {"tiled_running_max_from_zero", "overflow"},
     "    state = None\n", "    state = (np.zeros(q.shape[0]), np.zeros(q.shape[0]), "
     "np.zeros((q.shape[0], v.shape[-1])))\n"),
    ("online_softmax", "tiled_attention", {"overflow", "wrong"}, TILED,
     "    s = q @ k.T * scale\n    e = np.exp(s)\n    l = e.sum(axis=-1)\n"
     "    return e @ v / l[:, None], np.log(l)"),
    ("online_softmax", "tiled_attention", {"overflow", "wrong"}, TILED,
     "    m = l = o = None\n    for start in range(0, k.shape[0], block):\n"
     "        s = q @ k[start:start + block].T * scale\n        e = np.exp(s)\n"
     "        bl, bo = e.sum(axis=-1), e @ v[start:start + block]\n"
     "        l = bl if l is None else l + bl\n        o = bo if o is None else o + bo\n"
     "    return o / l[:, None], np.log(l)"),
    ("online_softmax", "tiled_attention", None, "scale = 1.0 / math.sqrt(q.shape[-1])",
     "scale = 1.0 / q.shape[-1]"),
    # ---- 22 flash backward
    ("flash_backward", "flash_attention", {"factor"}, "return ds @ k * scale, ds.T @ q * scale",
     "return ds @ k, ds.T @ q"),
    ("flash_backward", "flash_attention", {"return_order"}, "return ds @ k * scale, ds.T @ q * "
     "scale, dv", "return ds.T @ q * scale, ds @ k * scale, dv"),
    ("flash_backward", "flash_attention", {"return_order", "shape"}, "return ds @ k * scale, "
     "ds.T @ q * scale, dv", "return ds @ k * scale, dv, ds.T @ q * scale"),
    ("flash_backward", "flash_attention", {"overflow", "flash_unnormalised"},
     "p = np.exp(q @ k.T * scale - lse[:, None])",
     "p = np.exp(q @ k.T * scale) / np.exp(lse[:, None])"),
    ("flash_backward", "flash_attention", {"overflow"},
     "p = np.exp(q @ k.T * scale - lse[:, None])",
     "e = np.exp(q @ k.T * scale)\n    p = e / e.sum(axis=-1, keepdims=True)"),
    ("flash_backward", "flash_attention", None, "p = np.exp(q @ k.T * scale - lse[:, None])",
     "p = np.exp(q @ k.T - lse[:, None])"),
    ("flash_backward", "flash_attention", {"flash_d_no_out"}, "d = (grad * out).sum(axis=-1)",
     "d = grad.sum(axis=-1)"),
    ("flash_backward", "flash_attention", {"attention_no_rowsum"},
     "ds = p * (grad @ v.T - d[:, None])", "ds = p * (grad @ v.T)"),
    ("flash_backward", "flash_attention", {"shape_transpose", "transpose"}, "dv = p.T @ grad ",
     "dv = (grad.T @ p).T.T "),
    ("flash_backward", "flash_attention", None, "d = (grad * out).sum(axis=-1)",
     "d = (grad * out).sum(axis=0).mean() + 0 * out[:, 0]"),
    # ---- 23 KV cache
    ("kv_cache", "decode_step", {"kv_reads_past_length"}, "cache_k[:length + 1], cache_v[:length "
     "+ 1]", "cache_k, cache_v"),
    ("kv_cache", "decode_step", {"kv_excludes_new", "wrong", "overflow", "shape"},
     "cache_k[:length + 1], cache_v[:length + 1]", "cache_k[:length], cache_v[:length]"),
    ("kv_cache", "decode_step", {"kv_no_scale"}, "s = keys @ q_new / math.sqrt(q_new.shape[-1])",
     "s = keys @ q_new"),
    ("kv_cache", "decode_step", None, "s = keys @ q_new / math.sqrt(q_new.shape[-1])",
     "s = keys @ q_new / math.sqrt(values.shape[-1])"),
    ("kv_cache", "decode_step", {"kv_unstable", "overflow"}, "p = np.exp(s - s.max())",
     "p = np.exp(s)"),
    ("kv_cache", "decode_step", {"return_order"}, "return p @ values / p.sum(), length + 1",
     "return length + 1, p @ values / p.sum()"),
    ("kv_cache", "decode_step", None, "return p @ values / p.sum(), length + 1",
     "return p @ values, length + 1"),
    ("kv_cache", "decode_step", None, "    cache_v[length] = v_new\n", ""),
    ("kv_cache", "decode_step", {"kv_not_in_place"}, "    cache_k[length] = k_new\n    "
     "cache_v[length] = v_new\n", "    cache_k = cache_k.copy()\n    cache_v = cache_v.copy()"
     "\n    cache_k[length] = k_new\n    cache_v[length] = v_new\n"),
    ("kv_cache", "decode_step", {"kv_not_in_place"}, KV,
     "    keys = np.concatenate([cache_k[:length], k_new[None]])\n"
     "    values = np.concatenate([cache_v[:length], v_new[None]])\n"
     "    s = keys @ q_new / math.sqrt(q_new.shape[-1])\n    p = np.exp(s - s.max())\n"
     "    return p @ values / p.sum(), length + 1"),
    ("kv_cache", "decode_step", None, KV,     # breaks on an empty cache
     "    cache_k[length] = k_new\n    cache_v[length] = v_new\n"
     "    old = cache_k[:length] @ q_new / math.sqrt(q_new.shape[-1])\n"
     "    new = float(k_new @ q_new / math.sqrt(q_new.shape[-1]))\n"
     "    top = max(old.max(), new)\n"
     "    p = np.exp(np.append(old, new) - top)\n"
     "    return p @ cache_v[:length + 1] / p.sum(), length + 1"),
    ("kv_cache", "decode_step", None, "    cache_k[length] = k_new\n",
     "    cache_k[max(length - 1, 0)] = k_new\n    cache_k[length] = k_new\n"),
    # ---- 24 unscale_grads
    ("loss_scaling", "unscale_grads", {"unscale_overwritten"}, UNSCALE,
     "    unscaled = [g / scale for g in grads]\n    for g in unscaled:\n"
     "        found_inf = not np.all(np.isfinite(g))\n    return unscaled, found_inf"),
    ("loss_scaling", "unscale_grads", {"unscale_isinf"},
     "found_inf = any(not np.all(np.isfinite(g)) for g in unscaled)",
     "found_inf = any(bool(np.isinf(g).any()) for g in unscaled)"),
    ("loss_scaling", "unscale_grads", None,
     "found_inf = any(not np.all(np.isfinite(g)) for g in unscaled)",
     "found_inf = any(bool(np.isnan(g).any()) for g in unscaled)"),
    ("loss_scaling", "unscale_grads", None,
     "found_inf = any(not np.all(np.isfinite(g)) for g in unscaled)",
     "found_inf = not np.all(np.isfinite(unscaled[0]))"),
    ("loss_scaling", "unscale_grads", {"unscale_multiply"}, "unscaled = [g / scale for g in "
     "grads]", "unscaled = [g * scale for g in grads]"),
    ("loss_scaling", "unscale_grads", {"return_order"}, "    return unscaled, found_inf\n\n\n"
     "def update_scale", "    return found_inf, unscaled\n\n\ndef update_scale"),
    ("loss_scaling", "unscale_grads", None, "found_inf = any(not np.all(np.isfinite(g)) for g "
     "in unscaled)", "found_inf = all(not np.all(np.isfinite(g)) for g in unscaled)"),
    # ---- 24 update_scale
    ("loss_scaling", "update_scale", {"scale_tracker_kept"}, "return scale * backoff_factor, 0",
     "return scale * backoff_factor, growth_tracker"),
    ("loss_scaling", "update_scale", None, "return scale * backoff_factor, 0",
     "return scale / 2, 0"),
    ("loss_scaling", "update_scale", None, "grown = scale * growth_factor", "grown = scale * 2"),
    ("loss_scaling", "update_scale", None, "return (grown if np.isfinite(grown) else scale), 0",
     "return (grown if np.isfinite(grown) else scale), growth_tracker"),
    ("loss_scaling", "update_scale", {"scale_to_inf"}, "return (grown if np.isfinite(grown) "
     "else scale), 0", "return grown, 0"),
    ("loss_scaling", "update_scale", {"return_order"}, UPDATE,
     UPDATE.replace("return scale * backoff_factor, 0", "return 0, scale * backoff_factor")
     .replace("return (grown if np.isfinite(grown) else scale), 0",
              "return 0, (grown if np.isfinite(grown) else scale)")
     .replace("return scale, growth_tracker", "return growth_tracker, scale")),
    ("loss_scaling", "update_scale", None, "    growth_tracker += 1\n    if growth_tracker == "
     "growth_interval:", "    if growth_tracker == growth_interval:"),
    # ---- 24 scaler_step
    ("loss_scaling", "scaler_step", {"scaler_no_skip"}, "    if not found_inf:\n",
     "    if True:\n"),
    ("loss_scaling", "scaler_step", None, "            p -= lr * g", "            p -= lr * g * "
     "scale"),
    ("loss_scaling", "scaler_step", None, "grads, found_inf = unscale_grads(scaled_grads, scale)",
     "grads, found_inf = scaled_grads, any(not np.all(np.isfinite(g)) for g in scaled_grads)"),
    ("loss_scaling", "scaler_step", None, "    return scale, growth_tracker, found_inf",
     "    return scale, growth_tracker, not found_inf"),
    ("loss_scaling", "scaler_step", None, "growth_interval=growth_interval)", ")"),
    ("loss_scaling", "scaler_step", {"return_order"}, "    return scale, growth_tracker, "
     "found_inf", "    return growth_tracker, scale, found_inf"),
    # ---- 25 checkpointing
    ("checkpointing", "checkpointed_backward", {"checkpoint_rng"},
     "inputs.append(layer_forward(inputs[-1], weights[i], seeds[i]))",
     "inputs.append(layer_forward(inputs[-1], weights[i], seeds[i] + 1))"),
    ("checkpointing", "checkpointed_backward", {"no_recompute"}, CHECKPOINT,
     "    acts = [x]\n    for w, seed in zip(weights, seeds):\n"
     "        acts.append(layer_forward(acts[-1], w, seed))\n    dws = [None] * len(weights)\n"
     "    for i in reversed(range(len(weights))):\n"
     "        grad, dws[i] = layer_backward(acts[i], weights[i], seeds[i], grad)\n"
     "    return grad, dws"),
    ("checkpointing", "checkpointed_backward", {"keeps_activations"}, CHECKPOINT, KEEP_ALL),
    ("checkpointing", "checkpointed_backward", {"keeps_activations"}, CHECKPOINT,
     "    acts = [x]\n    for w, seed in zip(weights, seeds):\n"
     "        acts.append(layer_forward(acts[-1], w, seed))\n    dws = [None] * len(weights)\n"
     "    for i in reversed(range(len(weights))):\n"
     "        again = layer_forward(acts[i], weights[i], seeds[i])\n"
     "        grad, dws[i] = layer_backward(acts[i], weights[i], seeds[i], grad)\n"
     "    return grad, dws"),
    ("checkpointing", "checkpointed_backward", {"recompute_from_start"},
     "        inputs = [saved[start]]\n        for i in range(start, stop - 1):",
     "        inputs = [x]\n        for i in range(0, start):\n"
     "            inputs = [layer_forward(inputs[-1], weights[i], seeds[i])]\n"
     "        for i in range(start, stop - 1):"),
    ("checkpointing", "checkpointed_backward", None, "        if i % segment == 0:\n",
     "        if i % segment == 0 and i + segment <= len(weights):\n"),
    ("checkpointing", "checkpointed_backward", None, CHECKPOINT,     # no segment when longer
     "    count = len(weights) // segment\n    starts = [s * segment for s in range(count)]\n"
     "    saved, h = {}, x\n    for i, (w, seed) in enumerate(zip(weights, seeds)):\n"
     "        if i in starts:\n            saved[i] = h\n        h = layer_forward(h, w, seed)\n"
     "    dws = [None] * len(weights)\n    for start in reversed(starts):\n"
     "        inputs = [saved[start]]\n        for i in range(start, start + segment - 1):\n"
     "            inputs.append(layer_forward(inputs[-1], weights[i], seeds[i]))\n"
     "        for i in reversed(range(start, start + segment)):\n"
     "            grad, dws[i] = layer_backward(inputs[i - start], weights[i], seeds[i], grad)\n"
     "    return grad, dws"),
    ("checkpointing", "checkpointed_backward", None, "        for i in reversed(range(start, "
     "stop)):", "        for i in range(start, stop):"),
    ("checkpointing", "checkpointed_backward", None, "inputs[i - start], weights[i]",
     "inputs[-1], weights[i]"),
    ("checkpointing", "checkpointed_backward", {"return_order"}, "    return grad, dws",
     "    return dws, grad"),
    ("checkpointing", "checkpointed_backward", None, "    return grad, dws",
     "    return grad, dws[::-1]"),
    # ---- 26 local attention
    ("local_attention", "local_attention", {"attention_no_rowsum"},
     "ds = p * (dp - (dp * p).sum(axis=-1, keepdims=True))", "ds = p * dp"),
    ("local_attention", "local_attention", {"transpose", "shape_transpose"}, "dv = p.T @ grad ",
     "dv = p @ grad "),
    ("local_attention", "local_attention", {"factor"}, "return ds @ k * scale, ds.T @ q * scale",
     "return ds @ k * scale, ds.T @ q"),
    ("local_attention", "local_attention", {"return_order"}, "return ds @ k * scale, ds.T @ q "
     "* scale, dv", "return ds.T @ q * scale, ds @ k * scale, dv"),
    ("local_attention", "local_attention", {"overflow"}, LOCAL,     # recomputed, no max
     "    S = q.shape[0]\n    window = int((p[-1] > 0).sum())\n"
     "    i, j = np.indices((S, S))\n    keep = (j <= i) & (j > i - window)\n"
     "    e = np.where(keep, np.exp(q @ k.T * scale), 0.0)\n"
     "    p = e / e.sum(axis=-1, keepdims=True)\n    dv = p.T @ grad\n    dp = grad @ v.T\n"
     "    ds = p * (dp - (dp * p).sum(axis=-1, keepdims=True))\n"
     "    return ds @ k * scale, ds.T @ q * scale, dv"),
    ("local_attention", "local_attention", None, LOCAL,     # recomputed with the causal mask
     "    S = q.shape[0]\n    s = np.where(np.tri(S, dtype=bool), q @ k.T * scale, -np.inf)\n"
     "    e = np.exp(s - s.max(axis=-1, keepdims=True))\n"
     "    p = e / e.sum(axis=-1, keepdims=True)\n    dv = p.T @ grad\n    dp = grad @ v.T\n"
     "    ds = p * (dp - (dp * p).sum(axis=-1, keepdims=True))\n"
     "    return ds @ k * scale, ds.T @ q * scale, dv"),
    ("local_attention", "local_attention", {"ds_not_transposed"}, "ds.T @ q * scale, dv",
     "ds @ q * scale, dv"),
]

# (exercise, what it is, old, new): right answers written another way
RIGHT = [
    ("online_softmax", "np.nan_to_num of the NaN weights", WEIGHT,
     "    with np.errstate(invalid='ignore'):\n        return np.nan_to_num(np.exp(m_i - m))"),
    ("online_softmax", "the masked test on the merged max", WEIGHT,
     "    return np.where(np.isneginf(m), 0.0, np.exp(m_i - np.where(np.isneginf(m), 0.0, m)))"),
    ("online_softmax", "in-place updates of the inputs", MERGE,
     "    m = np.maximum(m1, m2)\n    a1, a2 = _weight(m1, m), _weight(m2, m)\n"
     "    l1 *= a1\n    l1 += a2 * l2\n    o1 *= a1[:, None]\n    o1 += a2[:, None] * o2\n"
     "    return m, l1, o1"),
    ("online_softmax", "a loop over rows", MERGE,
     "    m, l, o = np.maximum(m1, m2), np.zeros_like(l1), np.zeros_like(o1)\n"
     "    for r in range(len(m)):\n"
     "        w1 = 0.0 if m1[r] == -np.inf else math.exp(m1[r] - m[r])\n"
     "        w2 = 0.0 if m2[r] == -np.inf else math.exp(m2[r] - m[r])\n"
     "        l[r] = w1 * l1[r] + w2 * l2[r]\n        o[r] = w1 * o1[r] + w2 * o2[r]\n"
     "    return m, l, o"),
    ("online_softmax", "a state started at (-inf, 0, 0)", "    state = None\n",
     "    state = (np.full(q.shape[0], -np.inf), np.zeros(q.shape[0]), "
     "np.zeros((q.shape[0], v.shape[-1])))\n"),
    ("online_softmax", "np.logaddexp-style lse and a list of states", TILED,
     "    states = [block_state(q, k[s:s + block], v[s:s + block], scale)\n"
     "              for s in range(0, k.shape[0], block)]\n    state = states[0]\n"
     "    for part in states[1:]:\n        state = merge_blocks(*state, *part)\n"
     "    m, l, o = state\n    return o / l[:, None], np.log(l) + m"),
    ("online_softmax", "a list returned instead of a tuple",
     "    return o / l[:, None], m + np.log(l)", "    return [o / l[:, None], m + np.log(l)]"),
    ("flash_backward", "D from the recomputed p", "d = (grad * out).sum(axis=-1)",
     "d = ((grad @ v.T) * np.exp(q @ k.T * scale - lse[:, None])).sum(axis=-1)"),
    ("flash_backward", "einsum and a scale folded into q", FLASH,
     "    qs = q * scale\n    p = np.exp(np.einsum('id,jd->ij', qs, k) - lse[:, None])\n"
     "    dv = np.einsum('ij,ie->je', p, grad)\n"
     "    ds = p * (grad @ v.T - np.einsum('ie,ie->i', grad, out)[:, None])\n"
     "    return ds @ k * scale, ds.T @ qs, dv"),
    ("flash_backward", "a list of gradients", "    return ds @ k * scale, ds.T @ q * scale, dv",
     "    return [ds @ k * scale, ds.T @ q * scale, dv]"),
    ("kv_cache", "concatenated keys after the in-place write", "keys, values = cache_k[:length "
     "+ 1], cache_v[:length + 1]", "keys = np.concatenate([cache_k[:length], k_new[None]])\n"
     "    values = np.concatenate([cache_v[:length], v_new[None]])"),
    ("kv_cache", "a softmax through log-sum-exp", "    p = np.exp(s - s.max())\n    return p @ "
     "values / p.sum(), length + 1", "    lse = s.max() + np.log(np.exp(s - s.max()).sum())\n"
     "    return np.exp(s - lse) @ values, length + 1"),
    ("kv_cache", "an np.int64 length", "return p @ values / p.sum(), length + 1",
     "return p @ values / p.sum(), np.int64(length) + 1"),
    ("loss_scaling", "isnan or isinf, accumulated in a loop", UNSCALE,
     "    unscaled, found_inf = [], False\n    for g in grads:\n        g = g / scale\n"
     "        found_inf = found_inf or bool(np.isnan(g).any() or np.isinf(g).any())\n"
     "        unscaled.append(g)\n    return unscaled, found_inf"),
    ("loss_scaling", "in-place unscaling as torch does, an np.bool_ flag", UNSCALE,
     "    for g in grads:\n        g /= scale\n"
     "    return grads, np.any([~np.isfinite(g).all() for g in grads])"),
    ("loss_scaling", "found_inf checked on the scaled gradients", UNSCALE,
     "    found_inf = not all(np.isfinite(g).all() for g in grads)\n"
     "    return [g / scale for g in grads], found_inf"),
    ("loss_scaling", ">= instead of == after counting", "if growth_tracker == growth_interval:",
     "if growth_tracker >= growth_interval:"),
    ("loss_scaling", "the update written with one return", UPDATE,
     "    if found_inf:\n        scale, growth_tracker = scale * backoff_factor, 0\n"
     "    else:\n        growth_tracker += 1\n"
     "        if growth_tracker == growth_interval:\n"
     "            if np.isfinite(scale * growth_factor):\n"
     "                scale = scale * growth_factor\n            growth_tracker = 0\n"
     "    return scale, growth_tracker"),
    ("loss_scaling", "scaler_step written inline", SCALER,
     "    found_inf = any(not np.isfinite(g).all() for g in scaled_grads)\n"
     "    if not found_inf:\n        for i in range(len(params)):\n"
     "            params[i][...] = params[i] - lr * scaled_grads[i] / scale\n"
     "    scale, growth_tracker = update_scale(scale, growth_tracker, found_inf, "
     "growth_interval=growth_interval)\n    return scale, growth_tracker, found_inf"),
    ("checkpointing", "layer_forward through another name (an alias)", "def checkpointed_"
     "backward(x, weights, seeds, grad, segment):", "run_layer = layer_forward\n\n\n"
     "def checkpointed_backward(x, weights, seeds, grad, segment):"),
    ("checkpointing", "layer_forward as a default argument", "def checkpointed_backward(x, "
     "weights, seeds, grad, segment):\n", "def checkpointed_backward(x, weights, seeds, grad, "
     "segment, forward=layer_forward):\n    global layer_forward\n"),
    ("checkpointing", "layer_forward's body copied inline", CHECKPOINT,
     "    def run(h, w, seed):\n"
     "        mask = np.random.default_rng(seed).random(h.shape[:-1] + (w.shape[1],)) >= 0.25\n"
     "        return np.tanh(h @ w) * mask / 0.75\n"
     "    starts = list(range(0, len(weights), segment))\n    saved, h = [], x\n"
     "    for i in range(len(weights)):\n        if i in starts:\n            saved.append(h)\n"
     "        h = run(h, weights[i], seeds[i])\n    dws = [None] * len(weights)\n"
     "    for start, first in reversed(list(zip(starts, saved))):\n"
     "        stop = min(start + segment, len(weights))\n        inputs = [first]\n"
     "        for i in range(start, stop - 1):\n"
     "            inputs.append(run(inputs[-1], weights[i], seeds[i]))\n"
     "        for i in reversed(range(start, stop)):\n"
     "            grad, dws[i] = layer_backward(inputs[i - start], weights[i], seeds[i], grad)\n"
     "    return grad, dws"),
    ("checkpointing", "recompute every layer of the segment", "for i in range(start, stop - 1):",
     "for i in range(start, stop):"),
    ("checkpointing", "segments in a list, a while loop", CHECKPOINT,
     "    bounds, start = [], 0\n    while start < len(weights):\n"
     "        bounds.append((start, min(start + segment, len(weights))))\n"
     "        start += segment\n    firsts, h = [], x\n    for a, b in bounds:\n"
     "        firsts.append(h)\n        for i in range(a, b):\n"
     "            h = layer_forward(h, weights[i], seeds[i])\n    del h\n"
     "    dws = [None] * len(weights)\n    while bounds:\n        a, b = bounds.pop()\n"
     "        acts = [firsts.pop()]\n        for i in range(a, b - 1):\n"
     "            acts.append(layer_forward(acts[-1], weights[i], seeds[i]))\n"
     "        for i in range(b - 1, a - 1, -1):\n"
     "            grad, dws[i] = layer_backward(acts.pop(), weights[i], seeds[i], grad)\n"
     "    return grad, tuple(dws)"),
    ("local_attention", "the band rebuilt from p", LOCAL,
     "    dv = p.T @ grad\n    dp = grad @ v.T\n    inside = p > 0\n"
     "    ds = np.where(inside, p * (dp - (dp * p).sum(axis=-1, keepdims=True)), 0.0)\n"
     "    return ds @ k * scale, ds.T @ q * scale, dv"),
    ("local_attention", "einsum", LOCAL,
     "    dv = np.einsum('ij,id->jd', p, grad)\n    dp = np.einsum('id,jd->ij', grad, v)\n"
     "    ds = p * (dp - np.einsum('ij,ij->i', dp, p)[:, None])\n"
     "    return np.einsum('ij,jd->id', ds, k) * scale, np.einsum('ij,id->jd', ds, q) * scale"
     ", dv"),
]


def _planted(name, old, new, tmp_path, tag):
    exercise = find_exercise(name)
    source = (SOLUTIONS_DIR / exercise.filename).read_text()
    assert source.count(old) >= 1, f"{exercise.filename}: {old!r} is not in the solution"
    folder = tmp_path / tag
    folder.mkdir()
    (folder / exercise.filename).write_text(source.replace(old, new, 1))
    return exercise, folder


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_every_planted_mistake_fails_and_is_named(tmp_path):
    problems = []
    for index, (name, part, kinds, old, new) in enumerate(WRONG):
        exercise, folder = _planted(name, old, new, tmp_path, f"wrong{index}")
        result = check_module(exercise, load_file(folder / exercise.filename))
        failed = {p.part: p for p in result.parts if not p.passed}
        if part not in failed:
            problems.append(f"#{index} {name}/{part} {new[:60]!r} PASSED:\n{result.text}")
        elif kinds is not None and getattr(failed[part].diagnosis, "kind", None) not in kinds:
            problems.append(f"#{index} {name}/{part} {new[:60]!r}: named "
                            f"{failed[part].diagnosis.kind!r}, not {sorted(kinds)}:\n"
                            f"{failed[part].text}")
    assert not problems, "\n\n".join(problems)


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_no_right_answer_is_rejected(tmp_path):
    problems = []
    for index, (name, what, old, new) in enumerate(RIGHT):
        exercise, folder = _planted(name, old, new, tmp_path, f"right{index}")
        result = check_module(exercise, load_file(folder / exercise.filename))
        if not result.passed:
            problems.append(f"{what} was REJECTED:\n{result.text}")
    assert not problems, "\n\n".join(problems)


def test_the_catalogue_covers_every_part_and_the_issues_kinds():
    parts = {(name, part) for name, part, *_ in WRONG}
    from tinyattn.exercises import EXERCISES
    wanted = {(ex.name, p.name) for ex in EXERCISES if ex.track == "systems" for p in ex.parts}
    assert parts == wanted
    kinds = {k for *_, kinds, _, _ in WRONG if kinds for k in kinds}
    for kind in ("return_order", "overflow", "keeps_activations", "unscale_overwritten",
                 "merge_wrong_max", "merge_masked_rows", "kv_not_in_place"):
        assert kind in kinds, kind


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_a_wrong_unscale_is_named_in_scaler_step_too(tmp_path):
    """scaler_step calls unscale_grads: the overwritten loop is named as unscale_grads' fault
    in both parts, never blamed on scaler_step itself."""
    exercise, folder = _planted("loss_scaling", UNSCALE, "    unscaled = [g / scale for g in "
                                "grads]\n    for g in unscaled:\n        found_inf = not "
                                "np.all(np.isfinite(g))\n    return unscaled, found_inf",
                                tmp_path, "unscale")
    result = check_module(exercise, load_file(folder / exercise.filename))
    failed = {p.part: p for p in result.parts if not p.passed}
    assert failed["unscale_grads"].diagnosis.kind == "unscale_overwritten"
    assert failed["scaler_step"].diagnosis.kind == "scaler_uses_wrong_unscale_grads", \
        failed["scaler_step"].text
    assert "Fix unscale_grads first" in failed["scaler_step"].text


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_a_missing_scale_is_reported_for_every_gradient_at_once(tmp_path):
    exercise, folder = _planted("flash_backward", "return ds @ k * scale, ds.T @ q * scale",
                                "return ds @ k, ds.T @ q", tmp_path, "scale")
    text = check_module(exercise, load_file(folder / exercise.filename)).text
    assert "2 of the 3 gradients are wrong" in text
    assert "the gradient of q is wrong" in text and "the gradient of k is wrong" in text
    assert "the gradient of v is wrong" not in text


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_memory_is_measured_not_inferred_from_calls(tmp_path):
    """The keep-everything answer that also recomputes: the same call count as the right one,
    twice the memory. The message names the memory, with the two numbers."""
    exercise, folder = _planted("checkpointing", CHECKPOINT, KEEP_ALL, tmp_path, "memory")
    result = check_module(exercise, load_file(folder / exercise.filename))
    part = result.parts[0]
    assert part.diagnosis.kind == "keeps_activations"
    assert "memory held at once is measured" in part.text and "activations" in part.text
