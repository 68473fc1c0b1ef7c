"""draw_graph for a learner: inputs called inputs, micrograd-style values and gradients on
small tensors, a packed attention op opened into its parts, and a depth limit for deep
graphs. Read from build_graph's nodes and matplotlib's text artists, not pixels."""
import numpy as np
import pytest

import tinyattn as ta
import tinyattn.functional as F
from tinyattn import nn
from tinyattn.viz import build_graph, draw_graph


def _attention_loss(mask=True):
    ta.manual_seed(0)
    q, k, v = (ta.randn(1, 2, 4, 3, dtype="float64", requires_grad=True) for _ in range(3))
    out = F.scaled_dot_product_attention(q, k, v, is_causal=mask)
    return (out ** 2).sum(), dict(q=q, k=k, v=v)


def test_a_leaf_without_grad_is_an_input_and_says_so():
    ta.manual_seed(0)
    x = ta.randn(2, 3)
    w = ta.randn(3, 1, requires_grad=True)
    graph = build_graph((x @ w).sum(), params={"w": w, "x": x})
    kinds = {n.name: n.kind for n in graph.nodes if n.kind != "op"}
    assert kinds == {"w": "leaf", "x": "input"}
    pytest.importorskip("matplotlib")
    texts = [t.get_text() for t in draw_graph((x @ w).sum(), params={"w": w}).axes[0].texts]
    assert any(t.startswith("input\n(2, 3)") for t in texts)
    assert not any("constant" in t for t in texts)


def test_small_tensors_show_data_and_grad_like_micrograd():
    a = ta.tensor([2.0, -3.0], dtype="float64", requires_grad=True)
    b = ta.tensor([10.0, 1.0], dtype="float64", requires_grad=True)
    loss = (a * b).sum()
    loss.backward()
    graph = build_graph(loss, params={"a": a, "b": b}, values_up_to=4)
    node = {n.name: n for n in graph.nodes if n.name}
    np.testing.assert_array_equal(node["a"].values, [2.0, -3.0])
    np.testing.assert_array_equal(node["a"].grad_values, [10.0, 1.0])     # d(a.b)/da = b
    np.testing.assert_array_equal(node["b"].grad_values, [2.0, -3.0])
    pytest.importorskip("matplotlib")
    texts = [t.get_text() for t in draw_graph(loss, params={"a": a, "b": b}).axes[0].texts]
    assert "a\n(2,) float64\ndata [2, -3]\ngrad [10, 1]" in texts
    assert "Sum\n() float64\ndata 17" in texts
    quiet = [t.get_text() for t in draw_graph(loss, params={"a": a}, show_values=0).axes[0].texts]
    assert not any("data" in t for t in quiet) and "a\n(2,) float64\n|grad| 10" in quiet
    with pytest.raises(ValueError, match="show_values"):
        draw_graph(loss, show_values=-1)


def test_expand_opens_attention_into_its_parts_with_shapes():
    loss, params = _attention_loss()
    packed = build_graph(loss, params=params)
    assert [n.title for n in packed.ops].count("ScaledDotProductAttention") == 1
    graph = build_graph(loss, params=params, expand=True)
    parts = [n for n in graph.ops if n.part_of == "ScaledDotProductAttention"]
    assert [n.title for n in parts] == ["q * scale", "S = q k^T", "mask", "P = softmax(S)",
                                        "out = P v"]
    assert [n.shape for n in parts] == [(1, 2, 4, 3), (1, 2, 4, 4), (1, 2, 4, 4),
                                        (1, 2, 4, 4), (1, 2, 4, 3)]
    assert "12 of 32 scores masked" in parts[2].note        # causal 4x4: 6 per head, 2 heads
    assert graph.total_ops == packed.total_ops                  # still one op in the engine
    name = {n.index: n.name or n.title for n in graph.nodes}
    into = {(name[s], name[t]) for s, t, _ in graph.edges}
    assert {("q", "q * scale"), ("k", "S = q k^T"), ("v", "out = P v"),
            ("q * scale", "S = q k^T"), ("P = softmax(S)", "out = P v")} <= into
    unmasked = build_graph(_attention_loss(mask=False)[0], expand=True)
    assert "0 of 32 scores masked" in next(n for n in unmasked.ops if n.title == "mask").note


def test_expand_opens_the_packed_self_attention_of_a_model():
    ta.manual_seed(0)
    mha = nn.MultiHeadAttention(8, 2)
    out, _ = mha(ta.randn(1, 3, 8), need_weights=False)
    graph = build_graph(out.sum(), params=mha, expand=True)
    titles = [n.title for n in graph.ops if n.part_of]
    assert titles[0] == "split qkv -> q, k, v" and titles[-1] == "out = P v"


def test_max_depth_keeps_the_ops_nearest_the_output():
    ta.manual_seed(0)
    model = nn.GPT(nn.GPTConfig(vocab_size=11, block_size=8, n_layer=3, n_head=2, d_model=16))
    ids = np.random.default_rng(0).integers(0, 11, size=(2, 8))
    _, loss = model(ids, ids)
    full = build_graph(loss, params=model, max_nodes=None)
    shallow = build_graph(loss, params=model, max_nodes=None, max_depth=6)
    assert shallow.hidden_ops > 0 and len(shallow.ops) + shallow.hidden_ops == full.total_ops
    assert max(n.depth for n in shallow.ops) - min(n.depth for n in shallow.ops) <= 6
    assert any(n.title == "CrossEntropy" for n in shallow.ops)
    assert full.hidden_ops == 0                                  # negative control
    with pytest.raises(ValueError, match="max_depth"):
        build_graph(loss, max_depth=0)
    pytest.importorskip("matplotlib")
    fig = draw_graph(loss, params=model, max_depth=6)
    assert "max_depth=6" in fig._suptitle.get_text()
    deep = draw_graph(loss, params=model, max_nodes=None)        # 3 blocks: a long strip
    assert "layers deep: max_depth=12 draws only the last 12 ops" in " ".join(
        deep._suptitle.get_text().split())
    assert "layers deep" not in fig._suptitle.get_text()
    assert fig.get_size_inches()[1] < 12                        # not a 3,500-pixel strip
