"""The references the checkers trust, against independent computations on random inputs
(hypothesis): the engine's backward on the random graphs the checker generates against
tinyattn's own autograd, and the systems track's solutions against plain dense attention,
a stored-activation backward and PyTorch's autograd (skipped without torch)."""
from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import tinyattn as ta
from tinyattn.exercises import load_file
from tinyattn.exercises.checker import SOLUTIONS_DIR
from tinyattn.exercises.engine_random import random_graph

ENGINE = load_file(SOLUTIONS_DIR / "16_backward.py")
SYSTEMS = {name: load_file(SOLUTIONS_DIR / f"{name}.py") for name in (
    "21_online_softmax", "23_kv_cache", "25_checkpointing", "22_flash_backward")}
FAST = settings(max_examples=25, deadline=None)


def _dense(q, k, v, keep=None):
    s = q @ k.T / math.sqrt(q.shape[-1])
    if keep is not None:
        s = np.where(keep, s, -np.inf)
    p = np.exp(s - s.max(-1, keepdims=True))
    return p / p.sum(-1, keepdims=True) @ v, np.log(np.exp(s - s.max(-1, keepdims=True))
                                                    .sum(-1)) + s.max(-1)


@FAST
@given(st.integers(0, 2**32 - 1), st.integers(1, 12), st.integers(1, 3))
def test_the_reference_engine_matches_tinyattn_on_random_graphs(seed, ops, leaves):
    rng = np.random.default_rng(seed)
    nodes = random_graph(rng, ops, leaves)
    data = iter([rng.uniform(-1, 1, 2) for _ in range(leaves)])
    grad = rng.standard_normal(2)
    theirs = {"add": lambda x, y: x + y, "mul": lambda x, y: x * y, "tanh": lambda x: x.tanh()}
    built, mirror, leaf_pairs = [], [], []
    for spec in nodes:
        if spec[0] == "leaf":
            x = next(data)
            built.append(ENGINE.Tensor(x.copy()))
            mirror.append(ta.tensor(x.copy(), requires_grad=True))
            leaf_pairs.append((built[-1], mirror[-1]))
        else:
            built.append(getattr(ENGINE, spec[0])(*[built[i] for i in spec[1:]]))
            mirror.append(theirs[spec[0]](*[mirror[i] for i in spec[1:]]))
    ENGINE.backward(built[-1], grad.copy())
    mirror[-1].backward(ta.tensor(grad))
    for node, leaf in leaf_pairs:
        if leaf.grad is None:
            assert node.grad is None
        else:
            np.testing.assert_allclose(node.grad, leaf.grad.numpy(), rtol=1e-10, atol=1e-12)


@FAST
@given(st.integers(0, 2**32 - 1), st.integers(1, 4), st.integers(1, 9), st.integers(1, 5),
       st.sampled_from([1.0, 30.0]))
def test_tiled_attention_equals_dense_for_any_block(seed, s_q, s_k, block, size):
    rng = np.random.default_rng(seed)
    q, k, v = (rng.standard_normal(sh) * f for sh, f in [((s_q, 3), size), ((s_k, 3), size),
                                                         ((s_k, 2), 1.0)])
    out, lse = SYSTEMS["21_online_softmax"].tiled_attention(q, k, v, block)
    want_out, want_lse = _dense(q, k, v)
    np.testing.assert_allclose(out, want_out, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(lse, want_lse, rtol=1e-12)


@FAST
@given(st.integers(0, 2**32 - 1), st.integers(1, 6), st.integers(1, 4))
def test_decoding_steps_equal_the_rows_of_causal_attention(seed, total, d):
    rng = np.random.default_rng(seed)
    q, k, v = (rng.standard_normal((total, d)) for _ in range(3))
    cache_k, cache_v = rng.standard_normal((total + 2, d)) * 1e3, np.zeros((total + 2, d))
    length, rows = 0, []
    for t in range(total):
        out, length = SYSTEMS["23_kv_cache"].decode_step(cache_k, cache_v, length, q[t], k[t],
                                                         v[t])
        rows.append(out)
    want, _ = _dense(q, k, v, np.tri(total, dtype=bool))
    np.testing.assert_allclose(np.stack(rows), want, rtol=1e-10, atol=1e-12)


@FAST
@given(st.integers(0, 2**32 - 1), st.integers(1, 6), st.integers(1, 6))
def test_checkpointed_backward_equals_the_stored_one(seed, layers, segment):
    m = SYSTEMS["25_checkpointing"]
    rng = np.random.default_rng(seed)
    x, grad = rng.standard_normal((2, 3)), rng.standard_normal((2, 3))
    ws = [rng.standard_normal((3, 3)) for _ in range(layers)]
    seeds = [int(s) for s in rng.integers(0, 1000, layers)]
    acts = [x]
    for w, s in zip(ws, seeds):
        acts.append(m.layer_forward(acts[-1], w, s))
    g, dws = grad, [None] * layers
    for i in reversed(range(layers)):
        g, dws[i] = m.layer_backward(acts[i], ws[i], seeds[i], g)
    dx, got = m.checkpointed_backward(x, ws, seeds, grad, segment)
    np.testing.assert_allclose(dx, g, rtol=1e-12)
    for a, b in zip(got, dws):
        np.testing.assert_allclose(a, b, rtol=1e-12)


def test_the_flash_backward_is_torchs():
    torch = pytest.importorskip("torch")
    m = SYSTEMS["22_flash_backward"]
    rng = np.random.default_rng(5)
    q, k, v, g = (rng.standard_normal(sh) for sh in [(3, 4), (5, 4), (5, 2), (3, 2)])
    out, cache = m.flash_attention_forward(q, k, v)
    ours = m.flash_attention_backward(g, cache)
    tq, tk, tv = (torch.tensor(a, requires_grad=True) for a in (q, k, v))
    torch.nn.functional.scaled_dot_product_attention(tq, tk, tv).backward(torch.tensor(g))
    for a, t in zip(ours, (tq, tk, tv)):
        np.testing.assert_allclose(a, t.grad.numpy(), rtol=1e-10, atol=1e-12)
