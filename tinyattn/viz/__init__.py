"""See the engine work: ``draw_graph`` (a picture of a tensor's computation graph) and
``trace_backward`` (the backward pass, op by op, as the engine runs it).

    import tinyattn as ta
    from tinyattn.viz import draw_graph, trace_backward

    loss = ...                                   # any scalar tensor
    with trace_backward():                       # prints each op's backward as it runs
        loss.backward()
    draw_graph(loss, "graph.png", params=model)  # after backward: with gradient norms
    explore(loss, "graph.html", params=model)    # a page to click through, backward stepper

This package reads the autograd structures (tinyattn/autograd/) and sits just above the
tensor layer; nothing below imports it. ``draw_graph`` needs matplotlib (the ``viz`` extra);
``trace_backward`` and ``build_graph`` need nothing more than tinyattn. See docs/see_it.md.
"""
from __future__ import annotations

from .draw import draw_graph
from .explore import explore, graph_data
from .graph import Graph, Node, build_graph
from .trace import BackwardTrace, TraceStep, trace_backward

__all__ = ["draw_graph", "explore", "graph_data", "build_graph", "Graph", "Node", "trace_backward",
           "BackwardTrace", "TraceStep"]
