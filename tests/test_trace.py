"""tinyattn.viz.trace_backward: the engine's walk, op by op, with the right gradients."""
import io
import threading

import numpy as np
import pytest

import tinyattn as ta
from tinyattn import autograd
from tinyattn.viz import trace_backward


def test_a_chain_is_traced_from_the_output_back_with_shapes_and_norms():
    x = ta.tensor([[1.0, -2.0, 0.5]], dtype="float64", requires_grad=True)
    y = x.exp()
    loss = (y * 3.0).sum()
    out = io.StringIO()
    with trace_backward(file=out, params={"x": x}) as trace:
        loss.backward()
    assert trace.ops() == ["Sum#1", "Mul#2", "Exp#3"]
    first, _, last = trace.steps
    assert first.grad_shape == () and first.grad_norm == 1.0
    assert first.flows[0].to == "Mul#2" and first.flows[0].shape == (1, 3)
    assert first.flows[0].norm == pytest.approx(np.sqrt(3))        # ones(1, 3)
    expected = 3 * np.exp(np.array([1.0, -2.0, 0.5]))
    assert last.grad_norm == pytest.approx(np.linalg.norm(np.full(3, 3.0)))
    assert last.flows[0].to == "leaf x (.grad)"
    assert last.flows[0].norm == pytest.approx(np.linalg.norm(expected))
    printed = out.getvalue().splitlines()
    assert printed[0].split()[:3] == ["step", "backward", "of"]
    assert "Exp#3" in printed[-1] and "-> leaf x (.grad)" in printed[-1]
    assert str(trace) == out.getvalue().rstrip("\n")


def test_a_diamond_calls_the_shared_op_once_with_the_summed_gradient():
    """h feeds two branches; the engine must wait for both and call h's op once."""
    a = ta.tensor([0.3, -0.6, 0.1], dtype="float64", requires_grad=True)
    h = a * 2.0                                      # Mul: the shared node
    loss = (h.exp() + h.tanh()).sum()
    with trace_backward(echo=False) as trace:
        loss.backward()
    labels = [s.op for s in trace.steps]
    assert labels.count("Mul") == 1                  # once, not once per path
    shared = next(s for s in trace.steps if s.op == "Mul")
    assert shared.contributions == 2
    assert labels.index("Mul") > labels.index("Exp") and labels.index("Mul") > labels.index(
        "Tanh")                                      # after both consumers
    h_value = 2.0 * np.array([0.3, -0.6, 0.1])
    from_exp, from_tanh = np.exp(h_value), 1 - np.tanh(h_value) ** 2
    assert shared.grad_norm == pytest.approx(np.linalg.norm(from_exp + from_tanh), rel=1e-12)
    # negative control: either path alone has a different norm, so a per-path call would fail
    assert abs(np.linalg.norm(from_exp) - shared.grad_norm) > 0.1
    assert abs(np.linalg.norm(from_tanh) - shared.grad_norm) > 0.1
    assert shared.flows[0].norm == pytest.approx(np.linalg.norm(a.grad.numpy()))


def test_inputs_without_grad_are_listed_as_receiving_nothing():
    w = ta.ones(2, 2, requires_grad=True)
    data = ta.ones(2, 2)
    with trace_backward(echo=False) as trace:
        (data @ w).sum().backward()
    matmul = trace.steps[-1]
    assert [f.norm is None for f in matmul.flows] == [True, False]
    assert "none (does not require grad)" in str(trace)


def test_the_hook_is_off_after_the_block_even_after_an_error():
    x = ta.ones(2, requires_grad=True)
    y = x.exp()
    loss = y.sum()
    y.add_(1)                                        # makes the backward raise
    with pytest.raises(RuntimeError, match="inplace"):
        with trace_backward(echo=False):
            loss.backward()
    assert autograd._state.backward_hook is None
    with trace_backward(echo=False) as trace:
        pass
    (x * 2).sum().backward()
    assert trace.steps == []                         # traced nothing outside the block


def test_tracing_is_per_thread_and_covers_autograd_grad():
    x = ta.ones(3, requires_grad=True)
    other = []
    with trace_backward(echo=False) as trace:
        thread = threading.Thread(target=lambda: (x * 3).sum().backward())
        thread.start()
        thread.join()
        other.extend(trace.steps)
        (g,) = autograd.grad((x * x).sum(), x)
    assert other == []                               # the other thread's backward: untraced
    assert trace.ops() == ["Sum#1", "Mul#2"]
    assert np.allclose(g.numpy(), 2.0)


def test_two_backward_passes_in_one_trace_count_contributions_per_pass():
    x = ta.ones(3, requires_grad=True)
    h = x * 2
    loss = (h + h).sum()
    with trace_backward(echo=False) as trace:
        loss.backward(retain_graph=True)
        loss.backward()
    muls = [s for s in trace.steps if s.op == "Mul"]
    assert [s.contributions for s in muls] == [2, 2]
    assert [s.label for s in muls] == ["Mul#3", "Mul#3"]     # same op, same label


def test_the_example_in_docs_see_it_prints_what_the_doc_shows(tmp_path, capsys):
    pytest.importorskip("matplotlib")               # the example also draws the graph
    import pathlib
    import re
    text = (pathlib.Path(__file__).resolve().parent.parent / "docs" / "see_it.md").read_text()
    code = re.search(r"<!-- example: trace -->\n```python\n(.*?)```", text, re.S).group(1)
    shown = re.search(r"<!-- output: trace -->\n```text\n(.*?)```", text, re.S).group(1)
    code = code.replace('"graph.png"', repr(str(tmp_path / "graph.png")))
    exec(compile(code, "docs/see_it.md", "exec"), {})
    assert capsys.readouterr().out == shown
    assert (tmp_path / "graph.png").stat().st_size > 1000


def test_tinyattn_viz_is_there_after_import_tinyattn():
    import tinyattn
    assert tinyattn.viz.trace_backward is trace_backward
    assert "viz" in tinyattn.__all__
