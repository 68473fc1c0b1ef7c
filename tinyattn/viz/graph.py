"""The computation graph of a tensor as plain data: nodes, edges and layers, for drawing.

The autograd graph is a graph of Functions (tinyattn/autograd/): ``t._ctx`` is the Function
that made ``t``; ``fn.inputs[i]`` is its i-th input (a leaf's tensor, or the
``InputRecord`` of a tensor another op made) and ``fn.parents[i]`` the Function that made
that input (None for a leaf: a parameter, data, a constant). ``build_graph`` walks
it from the output back and returns one node per Function ("op"), per leaf that requires a
gradient ("leaf": a parameter), per leaf that does not ("input": data, targets, a mask), and,
when the graph has more than ``max_nodes`` nodes or is deeper than ``max_depth`` ops, one
"cut" node standing for every earlier op left out (the last layers of the forward, nearest
the output, are kept: that is where a loss's story ends, and where its backward starts).

``expand=True`` draws a packed attention op (``ScaledDotProductAttention``,
``PackedSelfAttention``: one Function, one backward) as the parts of its forward, q * scale,
q k^T, the mask, softmax, dropout and P v, each with its shape (op nodes with ``part_of``
set; the last part is the op itself). Small tensors (``values_up_to`` elements) carry
their values and gradients, as micrograd's ``draw_dot`` shows ``data`` and ``grad``.

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
from ..ops.attention import probabilities_from_logsumexp
from ..tensor import Tensor

__all__ = ["Node", "Graph", "build_graph", "tensor_names", "op_name", "grad_norm",
           "ATTENTION_OPS"]

ATTENTION_OPS = ("ScaledDotProductAttention", "PackedSelfAttention")   # expand=True opens


@dataclass
class Node:
    """One box of the drawing."""

    index: int
    kind: str                       # "op", "leaf", "input" or "cut"
    title: str                      # op name ("MatMul"), parameter name, "leaf" or "input"
    shape: Tuple[int, ...] = ()     # of the op's output / of the leaf
    dtype: str = ""
    grad_norm: Optional[float] = None    # of .grad, when the tensor has one
    name: Optional[str] = None      # the user's name for this tensor, if given in params
    is_output: bool = False
    depth: int = 0
    hidden_ops: int = 0             # for the "cut" node: how many ops it stands for
    values: Optional[np.ndarray] = None      # the tensor's values, when it is small
    grad_values: Optional[np.ndarray] = None  # its .grad's values, when it is small
    part_of: Optional[str] = None   # expand=True: the packed op this part belongs to
    note: str = ""                  # one more line for the box (a part's detail)


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


def _small_values(array: Any, limit: int) -> Optional[np.ndarray]:
    if array is None or limit <= 0 or int(np.prod(array.shape)) > limit:
        return None
    return np.asarray(backend.to_host(array), dtype=np.float64).copy()


def _attention_parts(fn: Any) -> List[Tuple[str, Tuple[int, ...], str]]:
    """(title, shape, note) of the parts of a packed attention op's forward, in order, the
    last being the op itself (its output). Shapes come from the inputs; whether a mask hid
    any scores comes from the saved probabilities when the graph still holds them (P = 0
    where softmax of the unmasked scores is not)."""
    packed = op_name(fn) == "PackedSelfAttention"
    q_shape = tuple(fn.inputs[0].shape[1:] if packed else fn.inputs[0].shape)
    k_shape = tuple(fn.inputs[0].shape[1:] if packed else fn.inputs[1].shape)
    v_shape = tuple(fn.inputs[0].shape[1:] if packed else fn.inputs[2].shape)
    scores = q_shape[:-1] + (k_shape[-2],)                     # (..., S_q, S_k)
    parts = [("split qkv -> q, k, v", q_shape, "3 views of one tensor")] if packed else []
    mask_note, dropout = "where(mask, S, -inf): a mask, if any", False
    saved = getattr(fn, "saved", None)
    if saved:
        q, k, _, probs, _, keep, _, scale, lse, mask, bias = saved[:11]
        if probs is None:                       # the op keeps lse, not P: recompute P
            probs = probabilities_from_logsumexp(q, k, scale, mask, bias, lse)
        q_scaled, k, probs = (backend.to_host(a) for a in (q * scale, k, probs))
        raw = q_scaled @ np.swapaxes(k, -1, -2)
        raw = np.exp(raw - raw.max(axis=-1, keepdims=True))
        masked = int(((probs == 0) & (raw > 0)).sum())
        mask_note = f"where(mask, S, -inf): {masked} of {probs.size} scores masked"
        dropout = keep is not None
    scale = saved[7] if saved and len(saved) > 7 else None
    parts += [("q * scale", q_shape, f"scale {scale:.4g}" if scale else "scale 1/sqrt(d_k)"),
              ("S = q k^T", scores, "(.., S_q, d_k) @ (.., d_k, S_k)"),
              ("mask", scores, mask_note),
              ("P = softmax(S)", scores, "per row")]
    if dropout:
        parts.append(("dropout(P)", scores, "keep / (1 - p)"))
    parts.append(("out = P v", q_shape[:-1] + (v_shape[-1],), f"{op_name(fn)}: one op, "
                  f"one backward"))
    return parts


def build_graph(root: Tensor, params: Any = None,
                max_nodes: Optional[int] = 60, max_depth: Optional[int] = None,
                expand: bool = False, values_up_to: int = 0) -> Graph:
    """The graph that computed ``root`` (see the module docstring). ``params`` names tensors
    (see ``tensor_names``); ``max_nodes`` (None: no limit) caps the nodes drawn;
    ``max_depth`` (None: no limit) keeps only the ops at most that many ops before the
    output; ``expand`` opens packed attention ops into their parts; tensors of at most
    ``values_up_to`` elements carry their values and gradients."""
    if max_depth is not None and (isinstance(max_depth, bool) or not isinstance(max_depth, int)
                                  or max_depth < 1):
        raise ValueError(f"max_depth must be a whole number >= 1 (or None for no limit), got "
                         f"{max_depth!r}")
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
                    names.get(id(t)), is_output,
                    values=_small_values(t._data, values_up_to),
                    grad_values=_small_values(None if t._grad is None else t._grad._data,
                                              values_up_to))
        nodes.append(node)
        return node

    if root._ctx is None:      # a lone leaf: nothing was computed
        kind = "leaf" if root.requires_grad else "input"
        tensor_node(root, kind, names.get(id(root), kind), is_output=True)
        return Graph(nodes, edges, total_ops=0)

    fns = _walk(root._ctx)
    outputs = {id(root._ctx): root}        # id(fn) -> the tensor it made
    for fn in fns:
        for t, parent in zip(fn.inputs, fn.parents):
            if parent is not None:      # after backward(): the tensor, if the program holds it
                outputs.setdefault(id(parent), getattr(t, "still_held", lambda: t)())
    budget = math.inf if max_nodes is None else max_nodes
    op_nodes: Dict[int, Node] = {}
    leaf_nodes: Dict[int, Node] = {}
    kept = []
    depth = _op_depths(fns)
    first: Dict[int, List[Node]] = {}       # id(fn) -> its part nodes, when expanded
    deepest = depth[id(root._ctx)]
    # Deepest first: every op an op feeds is deeper, so what is kept always reaches the output.
    for fn in sorted(fns, key=lambda f: -depth[id(f)]):
        new_leaves = {id(t) for t, p in zip(fn.inputs, fn.parents)
                      if p is None and id(t) not in leaf_nodes}
        parts = _attention_parts(fn) if expand and op_name(fn) in ATTENTION_OPS else []
        extra = max(len(parts) - 1, 0)
        if kept and len(nodes) + 1 + extra + len(new_leaves) > budget - 1:   # -1: cut node
            break
        if max_depth is not None and deepest - depth[id(fn)] >= max_depth:
            break
        out = outputs[id(fn)]
        before = None
        for title, shape, note in parts[:-1]:
            part = Node(len(nodes), "op", title, shape, str(out.dtype), part_of=op_name(fn),
                        note=note)
            nodes.append(part)
            first.setdefault(id(fn), []).append(part)
            if before is not None:
                edges.append((before.index, part.index, 0))
            before = part
        node = tensor_node(out, "op", op_name(fn), is_output=fn is root._ctx)
        if parts:
            node.title, node.part_of, node.note = parts[-1][0], op_name(fn), parts[-1][2]
            edges.append((before.index, node.index, 0))
            split = first[id(fn)][0]
            if split.title.startswith("split"):        # k to the scores, v to P v
                score = next(n for n in first[id(fn)] if n.title == "S = q k^T")
                edges += [(split.index, score.index, 1), (split.index, node.index, 2)]
        op_nodes[id(fn)] = node
        kept.append(fn)
        for t, parent in zip(fn.inputs, fn.parents):
            if parent is None and id(t) not in leaf_nodes:
                kind = "leaf" if t.requires_grad else "input"
                leaf_nodes[id(t)] = tensor_node(t, kind, names.get(id(t), kind))
    hidden = len(fns) - len(kept)
    cut = None
    if hidden:
        cut = Node(len(nodes), "cut", "earlier ops", hidden_ops=hidden)
        nodes.append(cut)
    inputs_per_op = {}
    for fn in kept:
        target = op_nodes[id(fn)]
        inputs_per_op[target.index] = 1 if id(fn) in first else len(fn.inputs)
        linked = set()
        for position, (t, parent) in enumerate(zip(fn.inputs, fn.parents)):
            if parent is None:
                source = leaf_nodes[id(t)]
            else:
                source = op_nodes.get(id(parent), cut)
            reader = target
            if id(fn) in first:       # expanded: q and k feed their parts, v the last one
                reader = first[id(fn)][0] if position == 0 else target
                if position == 1:
                    reader = next(n for n in first[id(fn)] if n.title == "S = q k^T")
            if source is cut and (cut.index, reader.index) in linked:
                continue          # several hidden inputs: one arrow from the cut node
            linked.add((source.index, reader.index))
            edges.append((source.index, reader.index, position))
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
