"""The computation graph of a tensor as plain data: nodes, edges and layers, for drawing.

The autograd graph is a graph of Functions (tinyattn/autograd/): ``t._ctx`` is the Function
that made ``t``; ``fn.inputs[i]`` is its i-th input tensor and ``fn.parents[i]`` the Function
that made that input (None for a leaf: a parameter, data, a constant). ``build_graph`` walks
it from the output back and returns one node per Function ("op"), per leaf that requires a
gradient ("leaf"), per input that does not ("constant"), and, when the graph has more than
``max_nodes`` nodes, one "cut" node standing for every earlier op left out (the last layers
of the forward, nearest the output, are kept: that is where a loss's story ends, and where
its backward starts).

Layers (``Node.depth``) are topological: an op sits one layer right of its deepest input op,
and a leaf or constant sits just left of the first op that reads it, so an arrow from a
weight used late in the graph does not cross the whole picture.
"""
from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Tuple

import numpy as np

from .. import backend
from ..tensor import Tensor

__all__ = ["Node", "Graph", "build_graph", "tensor_names", "op_name", "grad_norm"]


@dataclass
class Node:
    """One box of the drawing."""

    index: int
    kind: str                       # "op", "leaf", "constant" or "cut"
    title: str                      # op name ("MatMul"), parameter name, or "leaf"
    shape: Tuple[int, ...] = ()     # of the op's output / of the leaf
    dtype: str = ""
    grad_norm: Optional[float] = None    # of .grad, when the tensor has one
    name: Optional[str] = None      # the user's name for this tensor, if given in params
    is_output: bool = False
    depth: int = 0
    hidden_ops: int = 0             # for the "cut" node: how many ops it stands for


@dataclass
class Graph:
    nodes: List[Node]
    edges: List[Tuple[int, int, int]]   # (from node, to node, input position at the op)
    total_ops: int                      # ops in the whole graph
    hidden_ops: int = 0                 # ops left out (max_nodes)
    inputs_per_op: Dict[int, int] = field(default_factory=dict)

    @property
    def ops(self) -> List[Node]:
        return [n for n in self.nodes if n.kind == "op"]


def op_name(fn: Any) -> str:
    """The class name of a Function (a PyTorch-style Function: the user's class name)."""
    user_class = getattr(fn, "user_class", None)
    return user_class.__name__ if user_class is not None else type(fn).__name__


def grad_norm(t: Tensor) -> Optional[float]:
    """The 2-norm of ``t.grad`` (computed in float64 on the host), or None without one."""
    g = t._grad
    if g is None:
        return None
    return float(np.linalg.norm(backend.to_host(g._data).astype(np.float64).ravel()))


def tensor_names(params: Any) -> Dict[int, str]:
    """id(tensor) -> name, from a model (anything with ``named_parameters()``), a mapping
    ``{name: tensor}`` or an iterable of ``(name, tensor)`` pairs."""
    if params is None:
        return {}
    if hasattr(params, "named_parameters"):
        pairs = list(params.named_parameters())
    elif isinstance(params, dict):
        pairs = list(params.items())
    else:
        try:
            pairs = [(name, t) for name, t in params]
        except (TypeError, ValueError):
            raise TypeError(f"params must be a model (with named_parameters()), a dict "
                            f"{{name: tensor}} or (name, tensor) pairs; got "
                            f"{type(params).__name__}") from None
    names: Dict[int, str] = {}
    for name, t in pairs:
        if not isinstance(t, Tensor):
            raise TypeError(f"params[{name!r}] is a {type(t).__name__}, not a Tensor")
        names.setdefault(id(t), str(name))
    return names


def _walk(root_fn: Any) -> List[Any]:
    """Every Function reachable from ``root_fn``, in breadth-first order (nearest first)."""
    order, seen = [root_fn], {id(root_fn)}
    queue = deque([root_fn])
    while queue:
        fn = queue.popleft()
        for parent in fn.parents:
            if parent is not None and id(parent) not in seen:
                seen.add(id(parent))
                order.append(parent)
                queue.append(parent)
    return order


def _op_depths(fns: List[Any]) -> Dict[int, int]:
    """id(fn) -> 1 + the longest chain of ops before it (Kahn's topological order)."""
    waiting = {id(fn): 0 for fn in fns}
    readers: Dict[int, List[Any]] = {}
    for fn in fns:
        for parent in fn.parents:
            if parent is not None:
                waiting[id(fn)] += 1
                readers.setdefault(id(parent), []).append(fn)
    depth = {id(fn): 1 for fn in fns}
    ready = deque(fn for fn in fns if waiting[id(fn)] == 0)
    while ready:
        fn = ready.popleft()
        for reader in readers.get(id(fn), []):
            depth[id(reader)] = max(depth[id(reader)], depth[id(fn)] + 1)
            waiting[id(reader)] -= 1
            if waiting[id(reader)] == 0:
                ready.append(reader)
    return depth


def build_graph(root: Tensor, params: Any = None,
                max_nodes: Optional[int] = 60) -> Graph:
    """The graph that computed ``root`` (see the module docstring). ``params`` names tensors
    (see ``tensor_names``); ``max_nodes`` (None: no limit) caps the nodes drawn."""
    if not isinstance(root, Tensor):
        raise TypeError(f"draw a Tensor's graph; got {type(root).__name__}")
    if max_nodes is not None and (isinstance(max_nodes, bool) or not isinstance(max_nodes, int)
                                  or max_nodes < 2):
        raise ValueError(f"max_nodes must be a whole number >= 2 (or None for no limit), got "
                         f"{max_nodes!r}")
    names = tensor_names(params)
    nodes: List[Node] = []
    edges: List[Tuple[int, int, int]] = []

    def tensor_node(t: Tensor, kind: str, title: str, is_output: bool = False) -> Node:
        node = Node(len(nodes), kind, title, tuple(t.shape), str(t.dtype), grad_norm(t),
                    names.get(id(t)), is_output)
        nodes.append(node)
        return node

    if root._ctx is None:      # a lone leaf: nothing was computed
        kind = "leaf" if root.requires_grad else "constant"
        tensor_node(root, kind, names.get(id(root), kind), is_output=True)
        return Graph(nodes, edges, total_ops=0)

    fns = _walk(root._ctx)
    outputs = {id(root._ctx): root}        # id(fn) -> the tensor it made
    for fn in fns:
        for t, parent in zip(fn.inputs, fn.parents):
            if parent is not None:
                outputs.setdefault(id(parent), t)
    budget = math.inf if max_nodes is None else max_nodes
    op_nodes: Dict[int, Node] = {}
    leaf_nodes: Dict[int, Node] = {}
    kept = []
    depth = _op_depths(fns)
    # Deepest first: every op an op feeds is deeper, so what is kept always reaches the output.
    for fn in sorted(fns, key=lambda f: -depth[id(f)]):
        new_leaves = {id(t) for t, p in zip(fn.inputs, fn.parents)
                      if p is None and id(t) not in leaf_nodes}
        if kept and len(nodes) + 1 + len(new_leaves) > budget - 1:   # -1: the cut node
            break
        out = outputs[id(fn)]
        node = tensor_node(out, "op", op_name(fn), is_output=fn is root._ctx)
        op_nodes[id(fn)] = node
        kept.append(fn)
        for t, parent in zip(fn.inputs, fn.parents):
            if parent is None and id(t) not in leaf_nodes:
                kind = "leaf" if t.requires_grad else "constant"
                leaf_nodes[id(t)] = tensor_node(t, kind, names.get(id(t), kind))
    hidden = len(fns) - len(kept)
    cut = None
    if hidden:
        cut = Node(len(nodes), "cut", "earlier ops", hidden_ops=hidden)
        nodes.append(cut)
    inputs_per_op = {}
    for fn in kept:
        target = op_nodes[id(fn)]
        inputs_per_op[target.index] = len(fn.inputs)
        linked = set()
        for position, (t, parent) in enumerate(zip(fn.inputs, fn.parents)):
            if parent is None:
                source = leaf_nodes[id(t)]
            else:
                source = op_nodes.get(id(parent), cut)
            if source is cut and (cut.index, target.index) in linked:
                continue          # several hidden inputs: one arrow from the cut node
            linked.add((source.index, target.index))
            edges.append((source.index, target.index, position))
    graph = Graph(nodes, edges, total_ops=len(fns), hidden_ops=hidden,
                  inputs_per_op=inputs_per_op)
    _assign_depths(graph)
    return graph


def _assign_depths(graph: Graph) -> None:
    """Ops: 1 + the deepest op among their inputs (a longest path, by Kahn's topological
    order); leaves, constants and the cut node: one left of the first op that reads them."""
    is_op = {n.index for n in graph.ops}
    op_edges = [(s, t) for s, t, _ in graph.edges if s in is_op]
    waiting = {i: 0 for i in is_op}           # op inputs not yet placed, per op
    readers: Dict[int, List[int]] = {}
    for source, target in op_edges:
        waiting[target] += 1
        readers.setdefault(source, []).append(target)
    ready = deque(i for i, count in waiting.items() if count == 0)
    for i in ready:
        graph.nodes[i].depth = 1
    while ready:
        source = ready.popleft()
        for target in readers.get(source, []):
            node = graph.nodes[target]
            node.depth = max(node.depth, graph.nodes[source].depth + 1)
            waiting[target] -= 1
            if waiting[target] == 0:
                ready.append(target)
    first_reader: Dict[int, int] = {}
    for source, target, _ in graph.edges:
        depth = graph.nodes[target].depth
        first_reader[source] = min(first_reader.get(source, depth), depth)
    for node in graph.nodes:
        if node.index not in is_op:
            node.depth = first_reader.get(node.index, 1) - 1
