"""The attention-systems track (exercises 21-26): reference solutions pass, stubs are tasks,
every planted mistake fails (named where the checker knows it), right variants pass, and
the reference rules agree with PyTorch where PyTorch has them (GradScaler's update).

Planted mistakes edit a reference solution as a learner would (old text -> new text; the
old text must be in the file). Judged with ``check_module`` (fast); one per exercise also
runs through the isolated ``check``.
"""
from __future__ import annotations

import numpy as np
import pytest

from tinyattn.exercises import EXERCISES, check, check_module, find_exercise, load_file
from tinyattn.exercises.checker import SOLUTIONS_DIR, STUBS_DIR

SYSTEMS = [ex for ex in EXERCISES if ex.track == "systems"]
WEIGHT = "    return np.where(empty, 0.0, np.exp(m_i - np.where(empty, 0.0, m)))"
MERGED = "return m, a1 * l1 + a2 * l2, a1[:, None] * o1 + a2[:, None] * o2"
FLASH_D = "d = (grad * out).sum(axis=-1)               # (S_q,)"
FLASH_P = "p = np.exp(q @ k.T * scale - lse[:, None])  # (S_q, S_k), recomputed"
KV_ROWS = "keys, values = cache_k[:length + 1], cache_v[:length + 1]"
UPDATE_INF = "    if found_inf:\n        return scale * backoff_factor, 0"
GROW = "    growth_tracker += 1\n    if growth_tracker == growth_interval:"
RECOMPUTE = "inputs.append(layer_forward(inputs[-1], weights[i], seeds[i]))"
LOCAL_DS = "ds = p * (dp - (dp * p).sum(axis=-1, keepdims=True))"

# (exercise, failing part, diagnosis kinds that name it (None: any failure), old, new)
WRONG = [
    ("online_softmax", "merge_blocks", {"merge_o_unscaled"}, MERGED,
     "return m, a1 * l1 + a2 * l2, o1 + o2"),
    ("online_softmax", "merge_blocks", {"merge_inverted"}, WEIGHT,
     "    return np.where(empty, 0.0, np.exp(np.where(empty, 0.0, m) - m_i))"),
    ("online_softmax", "merge_blocks", {"merge_masked_nan"}, WEIGHT,
     "    return np.exp(m_i - m)"),
    ("online_softmax", "merge_blocks", None, "    m = np.maximum(m1, m2)\n",
     "    m = m1\n"),
    ("online_softmax", "tiled_attention", {"tiled_lse"}, "return o / l[:, None], m + "
     "np.log(l)", "return o / l[:, None], np.log(l)"),
    ("online_softmax", "tiled_attention", None, "    m, l, o = state\n",
     "    m, l, o = state\n    o = o / l[:, None] * l[:, None] ** 0.0 + 0.0 * o\n"
     "    l = l * 1.0000001\n"),
    ("online_softmax", "tiled_attention", None, "        part = block_state(q, k[start:start "
     "+ block], v[start:start + block], scale)", "        part = block_state(q, k[start:start "
     "+ block], v[start:start + block], 1.0)"),
    ("flash_backward", "flash_attention", {"flash_d_no_out"}, FLASH_D,
     "d = grad.sum(axis=-1)"),
    ("flash_backward", "flash_attention", {"flash_unnormalised"}, FLASH_P,
     "p = np.exp(q @ k.T * scale)"),
    ("flash_backward", "flash_attention", {"factor"}, "return ds @ k * scale, ds.T @ q * scale"
     ", dv", "return ds @ k, ds.T @ q * scale, dv"),
    ("kv_cache", "decode_step", {"kv_reads_past_length"}, KV_ROWS,
     "keys, values = cache_k, cache_v"),
    ("kv_cache", "decode_step", {"kv_excludes_new"}, KV_ROWS,
     "keys, values = cache_k[:max(length, 1)], cache_v[:max(length, 1)]"),
    ("kv_cache", "decode_step", {"kv_no_scale"}, "s = keys @ q_new / math.sqrt(q_new.shape"
     "[-1])", "s = keys @ q_new"),
    ("kv_cache", "decode_step", None, "    return p @ values / p.sum(), length + 1",
     "    return p @ values / p.sum(), length"),
    ("kv_cache", "decode_step", None, "    cache_k[length] = k_new\n",
     "    cache_k[length + 1 if length + 1 < len(cache_k) else length] = k_new\n"),
    ("loss_scaling", "unscale_grads", {"unscale_isinf"}, "found_inf = any(not np.all("
     "np.isfinite(g)) for g in unscaled)", "found_inf = any(bool(np.any(np.isinf(g))) "
     "for g in unscaled)"),
    ("loss_scaling", "unscale_grads", {"unscale_multiply"}, "unscaled = [g / scale for g in "
     "grads]", "unscaled = [g * scale for g in grads]"),
    ("loss_scaling", "update_scale", {"scale_tracker_kept"}, UPDATE_INF,
     "    if found_inf:\n        return scale * backoff_factor, growth_tracker"),
    ("loss_scaling", "update_scale", {"scale_grows_late"}, GROW,
     "    if growth_tracker >= growth_interval:\n        return scale * growth_factor, 0\n"
     "    growth_tracker += 1\n    if False:"),
    ("loss_scaling", "update_scale", {"scale_to_inf"},
     "return (grown if np.isfinite(grown) else scale), 0", "return grown, 0"),
    ("loss_scaling", "update_scale", None, UPDATE_INF,
     "    if found_inf:\n        return scale, 0"),
    ("loss_scaling", "scaler_step", {"scaler_no_skip"}, "    if not found_inf:\n"
     "        for p, g in zip(params, grads):", "    if True:\n"
     "        for p, g in zip(params, grads):"),
    ("loss_scaling", "scaler_step", None, "            p -= lr * g", "            p = p - lr * g"),
    ("checkpointing", "checkpointed_backward", {"checkpoint_rng"}, RECOMPUTE,
     "inputs.append(layer_forward(inputs[-1], weights[i], seeds[i] + 1))"),
    ("checkpointing", "checkpointed_backward", {"no_recompute"}, "    saved = {}\n    h = x\n",
     "    acts = [x]\n    for w, seed in zip(weights, seeds):\n"
     "        acts.append(layer_forward(acts[-1], w, seed))\n    dws = [None] * len(weights)\n"
     "    for i in reversed(range(len(weights))):\n        grad, dws[i] = layer_backward("
     "acts[i], weights[i], seeds[i], grad)\n    return grad, dws\n"),
    ("checkpointing", "checkpointed_backward", {"recompute_from_start"},
     "        inputs = [saved[start]]\n        for i in range(start, stop - 1):",
     "        inputs = [x]\n        for i in range(0, start):\n"
     "            inputs = [layer_forward(inputs[-1], weights[i], seeds[i])]\n"
     "        for i in range(start, stop - 1):"),
    ("checkpointing", "checkpointed_backward", None,
     "            grad, dws[i] = layer_backward(inputs[i - start], weights[i], seeds[i], grad)",
     "            grad, dws[i] = layer_backward(inputs[0], weights[i], seeds[i], grad)"),
    ("local_attention", "local_attention", {"attention_no_rowsum"}, LOCAL_DS, "ds = p * dp"),
    ("local_attention", "local_attention", {"transpose", "shape_transpose"},
     "dv = p.T @ grad ", "dv = p @ grad "),
    ("local_attention", "local_attention", None, LOCAL_DS,
     "ds = np.tril(p * (dp - (dp * p).sum(axis=-1, keepdims=True)), 1) + np.triu(np.ones_like("
     "p), 1) * 1e-3"),
]

# (exercise, what it is, old, new): right solutions written another way
RIGHT = [
    ("online_softmax", "one-row-at-a-time loops", MERGED, "return m, np.array([a1[r] * l1[r] + "
     "a2[r] * l2[r] for r in range(len(m))]), np.stack([a1[r] * o1[r] + a2[r] * o2[r] for r in "
     "range(len(m))])"),
    ("flash_backward", "D from the recomputed p: rowsum(dp * p)", FLASH_D,
     "d = ((grad @ v.T) * np.exp(q @ k.T * scale - lse[:, None])).sum(axis=-1)"),
    ("kv_cache", "np.concatenate of the rows instead of slices", KV_ROWS,
     "keys, values = np.concatenate([cache_k[:length], k_new[None]]), np.concatenate(["
     "cache_v[:length], v_new[None]])"),
    ("loss_scaling", "np.isnan or np.isinf", "found_inf = any(not np.all(np.isfinite(g)) for g "
     "in unscaled)", "found_inf = any(bool(np.any(np.isnan(g) | np.isinf(g))) for g in "
     "unscaled)"),
    ("checkpointing", "recompute every layer of the segment (one call more)",
     "for i in range(start, stop - 1):", "for i in range(start, stop):"),
    ("local_attention", "the mask rebuilt from the shapes", LOCAL_DS,
     "i, j = np.indices(p.shape)\n    ds = np.where(p > 0, p * (dp - (dp * p).sum(axis=-1, "
     "keepdims=True)), 0.0)"),
]


def _planted(name, old, new, tmp_path, tag):
    exercise = find_exercise(name)
    source = (SOLUTIONS_DIR / exercise.filename).read_text()
    assert source.count(old) >= 1, f"{exercise.filename}: {old!r} is not in the solution"
    folder = tmp_path / tag
    folder.mkdir()
    (folder / exercise.filename).write_text(source.replace(old, new, 1))
    return exercise, folder


def test_six_exercises_each_tied_to_a_docs_section():
    assert [ex.number for ex in SYSTEMS] == list(range(21, 27))
    from pathlib import Path
    root = Path(__file__).resolve().parents[1]
    for ex in SYSTEMS:
        page, anchor = ex.read.split("#")
        text = (root / page).read_text()
        assert any(line.startswith("#") and anchor == "-".join(
            "".join(c for c in line.lstrip("#").strip().lower() if c.isalnum() or c in " -")
            .split(" ")) for line in text.splitlines()), (ex.name, ex.read)


@pytest.mark.parametrize("exercise", SYSTEMS, ids=lambda ex: ex.name)
def test_the_reference_passes_and_the_stub_is_a_task(exercise):
    assert check(exercise, SOLUTIONS_DIR, timeout=60).passed
    stub = check(exercise, STUBS_DIR, timeout=60)
    assert not stub.passed and stub.parts[0].status == "not_implemented", stub.text


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
@pytest.mark.parametrize("index", range(len(WRONG)),
                         ids=[f"{w[0]}-{w[1]}-{i}" for i, w in enumerate(WRONG)])
def test_a_planted_mistake_never_passes(index, tmp_path):
    name, part, kinds, old, new = WRONG[index]
    exercise, folder = _planted(name, old, new, tmp_path, "wrong")
    result = check_module(exercise, load_file(folder / exercise.filename))
    assert not result.passed, f"a wrong answer PASSED:\n{result.text}"
    failed = {p.part: p for p in result.parts if not p.passed}
    assert part in failed, result.text
    if kinds is not None:
        assert failed[part].diagnosis.kind in kinds, failed[part].text


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
@pytest.mark.parametrize("index", range(len(RIGHT)), ids=[r[1] for r in RIGHT])
def test_a_right_variant_passes(index, tmp_path):
    name, what, old, new = RIGHT[index]
    exercise, folder = _planted(name, old, new, tmp_path, "right")
    result = check_module(exercise, load_file(folder / exercise.filename))
    assert result.passed, f"a right solution ({what}) was REJECTED:\n{result.text}"


def test_one_mistake_per_exercise_fails_in_the_isolated_check_too(tmp_path):
    seen = set()
    for k, (name, part, kinds, old, new) in enumerate(WRONG):
        if name in seen:
            continue
        seen.add(name)
        exercise, folder = _planted(name, old, new, tmp_path, f"isolated{k}")
        result = check(exercise, folder, timeout=60)
        failed = {p.part: p for p in result.parts if not p.passed}
        assert part in failed, result.text
        assert kinds is None or failed[part].diagnosis.kind in kinds, result.text
    assert seen == {ex.name for ex in SYSTEMS}


def test_the_update_rule_is_torchs(torch_or_skip=None):
    torch = pytest.importorskip("torch")
    update = load_file(SOLUTIONS_DIR / "24_loss_scaling.py").update_scale
    rng = np.random.default_rng(0)
    scale_t = torch.full((1,), 1024.0)
    tracker_t = torch.zeros((1,), dtype=torch.int32)
    scale, tracker = 1024.0, 0
    for found in rng.random(40) < 0.3:
        torch._amp_update_scale_(scale_t, tracker_t, torch.full((1,), float(found)), 2.0,
                                 0.5, 3)
        scale, tracker = update(scale, tracker, bool(found), 2.0, 0.5, 3)
        assert (scale, tracker) == (float(scale_t), int(tracker_t))
