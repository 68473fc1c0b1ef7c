"""tinyattn.viz.draw_graph and build_graph: the right nodes, labels and gradient norms, a
readable picture, and a capped drawing of a big graph. Labels are read from matplotlib's text
artists, not from pixels."""
import sys

import numpy as np
import pytest

import tinyattn as ta
from tinyattn import nn
from tinyattn.viz import build_graph, draw_graph


def _small():
    """loss = sum(exp(h) * tanh(h)), h = x @ w + b: a diamond on h."""
    ta.manual_seed(0)
    x = ta.randn(2, 3, dtype="float64", requires_grad=True)
    w = ta.randn(3, 4, dtype="float64", requires_grad=True)
    b = ta.randn(4, dtype="float64", requires_grad=True)
    h = x @ w + b
    loss = (h.exp() * h.tanh()).sum()
    return loss, dict(x=x, w=w, b=b), h


def test_graph_has_every_op_and_leaf_with_shapes_and_names():
    loss, params, _ = _small()
    graph = build_graph(loss, params=params)
    ops = sorted(n.title for n in graph.ops)
    assert ops == sorted(["Sum", "Mul", "Exp", "Tanh", "Add", "Matmul"])
    assert graph.total_ops == 6 and graph.hidden_ops == 0
    leaves = {n.name: n for n in graph.nodes if n.kind == "leaf"}
    assert set(leaves) == {"x", "w", "b"}
    assert leaves["w"].shape == (3, 4) and leaves["w"].dtype == "float64"
    by_title = {n.title: n for n in graph.ops}
    assert by_title["Matmul"].shape == (2, 4) and by_title["Sum"].shape == ()
    assert by_title["Sum"].is_output and not by_title["Exp"].is_output
    # layers follow the longest path: Matmul, Add, then Exp/Tanh side by side, Mul, Sum
    depth = {title: node.depth for title, node in by_title.items()}
    assert depth == {"Matmul": 1, "Add": 2, "Exp": 3, "Tanh": 3, "Mul": 4, "Sum": 5}
    assert leaves["b"].depth == 1 and leaves["x"].depth == 0      # just left of first reader
    # every edge goes from a lower layer to a higher one
    assert all(graph.nodes[s].depth < graph.nodes[t].depth for s, t, _ in graph.edges)
    # the matmul's inputs keep their order (x is input 0, w input 1)
    matmul = by_title["Matmul"].index
    assert {(graph.nodes[s].name, p) for s, t, p in graph.edges if t == matmul} == {
        ("x", 0), ("w", 1)}


def test_gradient_norms_appear_after_backward_and_match_numpy():
    loss, params, h = _small()
    h.retain_grad()
    before = build_graph(loss, params=params)
    assert all(n.grad_norm is None for n in before.nodes)
    loss.backward()
    graph = build_graph(loss, params=dict(params, h=h))
    for node in graph.nodes:
        if node.kind == "leaf":
            expected = np.linalg.norm(params[node.name].grad.numpy())
            assert node.grad_norm == pytest.approx(expected, rel=1e-12)
    add = next(n for n in graph.ops if n.title == "Add")
    assert add.name == "h" and add.grad_norm == pytest.approx(np.linalg.norm(h.grad.numpy()))
    exp = next(n for n in graph.ops if n.title == "Exp")
    assert exp.grad_norm is None                  # a non-leaf that did not retain its grad


def test_a_model_names_its_parameters_and_inputs_are_marked_as_inputs():
    ta.manual_seed(0)
    layer = nn.Linear(3, 2)
    x = ta.randn(4, 3)                              # data: does not require grad
    graph = build_graph(layer(x).sum(), params=layer)
    kinds = {(n.kind, n.name) for n in graph.nodes if n.kind != "op"}
    assert kinds == {("leaf", "weight"), ("leaf", "bias"), ("input", None)}


def test_a_lone_leaf_is_one_node():
    x = ta.ones(3, requires_grad=True)
    graph = build_graph(x, params={"x": x})
    assert [(n.kind, n.name, n.is_output) for n in graph.nodes] == [("leaf", "x", True)]


def test_pytorch_style_function_shows_the_users_class_name():
    class Cube(ta.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x * x

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return 3 * x * x * g

    x = ta.ones(2, requires_grad=True)
    assert "Cube" in {n.title for n in build_graph(Cube.apply(x).sum()).ops}


def test_bad_arguments_say_what_to_do():
    loss, _, _ = _small()
    with pytest.raises(TypeError, match="Tensor"):
        build_graph(np.ones(3))
    with pytest.raises(ValueError, match="max_nodes"):
        build_graph(loss, max_nodes=1)
    with pytest.raises(TypeError, match="params"):
        build_graph(loss, params=42)
    with pytest.raises(TypeError, match=r"params\['w'\]"):
        build_graph(loss, params={"w": np.ones(3)})


def _gpt_loss():
    ta.manual_seed(0)
    model = nn.GPT(nn.GPTConfig(vocab_size=11, block_size=8, n_layer=3, n_head=2, d_model=16))
    ids = np.random.default_rng(0).integers(0, 11, size=(2, 8))
    _, loss = model(ids, ids)
    return model, loss


def test_a_big_graph_is_capped_keeping_the_ops_nearest_the_output():
    model, loss = _gpt_loss()
    full = build_graph(loss, params=model, max_nodes=None)
    capped = build_graph(loss, params=model, max_nodes=25)
    assert full.hidden_ops == 0 and full.total_ops > 40
    assert len(capped.nodes) <= 25
    cut = [n for n in capped.nodes if n.kind == "cut"]
    assert len(cut) == 1 and cut[0].hidden_ops == capped.hidden_ops
    assert len(capped.ops) + capped.hidden_ops == full.total_ops
    assert any(n.title == "CrossEntropy" and n.is_output for n in capped.ops)
    assert "tok_emb.weight" in {n.name for n in full.nodes}
    # negative control: without the cap, every op is there
    assert len(full.ops) == full.total_ops


pytest.importorskip("matplotlib")


def _texts(fig):
    return [t.get_text() for t in fig.axes[0].texts]


def test_draw_graph_writes_a_png_whose_boxes_say_op_shape_dtype_and_grad(tmp_path):
    from PIL import Image
    loss, params, _ = _small()
    loss.backward()
    path = tmp_path / "graph.png"
    fig = draw_graph(loss, str(path), params=params)
    texts = _texts(fig)
    norm_w = np.linalg.norm(params["w"].grad.numpy())
    assert f"w\n(3, 4) float64\n|grad| {norm_w:.3g}" in texts
    assert "Matmul\n(2, 4) float64" in texts
    assert f"Sum\n() float64\ndata {loss.item():.4g}" in texts           # micrograd's data
    assert sorted(t for t in texts if t in ("0", "1")) == ["0", "0", "0", "1", "1", "1"]
    assert "6 ops, 3 leaves" in fig._suptitle.get_text()
    width, height = Image.open(path).size
    assert 300 < width < 3000 and 150 < height < 2000
    assert len([p for p in fig.axes[0].patches]) + len(fig.axes[0].texts) > 0


def test_draw_graph_before_backward_has_no_grad_lines_and_writes_svg(tmp_path):
    loss, params, _ = _small()
    path = tmp_path / "graph.svg"
    fig = draw_graph(loss, str(path), params=params)
    assert not any("|grad|" in t for t in _texts(fig))
    assert path.read_text().lstrip().startswith("<?xml")
    assert draw_graph(loss) is not None                     # no path: the Figure only


def test_draw_graph_of_a_gpt_is_capped_and_says_so(tmp_path):
    from PIL import Image
    model, loss = _gpt_loss()
    loss.backward()
    fig = draw_graph(loss, str(tmp_path / "gpt.png"), params=model)      # max_nodes=60
    boxes = [t for t in _texts(fig) if "\n" in t]
    assert len(boxes) <= 60
    assert any(t.startswith("... ") and "earlier ops" in t for t in boxes)
    assert "max_nodes=60" in fig._suptitle.get_text()
    assert fig.get_size_inches()[1] > fig.get_size_inches()[0]      # deep: top to bottom
    width, height = Image.open(tmp_path / "gpt.png").size
    assert width < 4000 and height < 6000
    assert any("tok_emb.weight\n" in t for t in boxes)


def test_draw_graph_refuses_an_unknown_format_and_direction(tmp_path):
    loss, _, _ = _small()
    with pytest.raises(ValueError, match=r"\.png, \.svg, \.pdf"):
        draw_graph(loss, str(tmp_path / "graph.jpeg"))
    with pytest.raises(ValueError, match="direction"):
        draw_graph(loss, direction="up")
    assert not list(tmp_path.iterdir())


def test_without_matplotlib_draw_graph_says_how_to_install_it(monkeypatch):
    loss, _, _ = _small()
    monkeypatch.setitem(sys.modules, "matplotlib.figure", None)
    with pytest.raises(ImportError, match=r"\[viz\]"):
        draw_graph(loss)
