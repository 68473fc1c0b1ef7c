"""``draw_graph``: a picture of a tensor's computation graph, with matplotlib only.

Like micrograd's ``draw_dot``, without the Graphviz binary: every op is a box with its
Function's name and the shape and dtype it produced, every leaf a box with its name (when
``params`` names it; a leaf that needs no gradient is an "input"), shape and dtype, and after
``backward()`` every tensor that has a ``.grad`` shows the gradient's 2-norm. A tensor of at
most ``show_values`` elements also shows its values and its gradient's, as ``draw_dot``
shows ``data`` and ``grad``. Arrows follow the forward pass, left to right, one layer per
topological depth (``graph.py``); the backward walks them right to left. ``expand=True``
opens a packed attention op into the parts of its forward; ``max_depth`` keeps a deep graph
(a GPT) to the ops nearest the output.
"""
from __future__ import annotations

import os
import textwrap
from typing import Any, Dict, List, Optional, Tuple

from ..atomic import atomic_write
from ..tensor import Tensor
from .graph import Graph, Node, build_graph

__all__ = ["draw_graph", "FORMATS"]

FORMATS = (".png", ".svg", ".pdf")
_COLOURS = {"op": "#d6e6f5", "leaf": "#fde0c5", "input": "#ececec", "constant": "#ececec",
            "cut": "#ffffff", "part": "#e8f3dc"}
_COLUMN_WIDTH, _ROW_HEIGHT, _MAX_INCHES = 2.0, 0.9, 300.0
_MAX_LR_LAYERS = 8
_DEEP_LAYERS = 24           # deeper than this: the title suggests max_depth
_FONT_SIZE = 7


def _figure_class() -> Any:
    try:
        from matplotlib.figure import Figure  # noqa: PLC0415 - optional extra
    except ImportError:
        raise ImportError('draw_graph needs matplotlib, which tinyattn does not require: '
                          'pip install -e ".[viz]" in a clone (or pip install matplotlib)'
                          ) from None
    return Figure


def _numbers(values: Any) -> str:
    flat = [f"{v:.4g}" for v in values.ravel()]
    return flat[0] if values.ndim == 0 else "[" + ", ".join(flat) + "]"


def _label(node: Node) -> str:
    shape = f"{node.shape} {node.dtype}"
    if node.kind == "cut":
        return f"... {node.hidden_ops} earlier ops\n(not drawn)"
    if node.kind == "op":
        head = f"{node.name} = {node.title}" if node.name else node.title
    elif node.kind in ("input", "constant"):
        head = f"input {node.name}" if node.name else "input"
    else:
        head = node.name or node.title
    lines = [head, shape] + ([node.note] if node.note else [])
    if node.values is not None:
        lines.append(f"data {_numbers(node.values)}")
    if node.grad_values is not None:
        lines.append(f"grad {_numbers(node.grad_values)}")
    elif node.grad_norm is not None:
        lines.append(f"|grad| {node.grad_norm:.3g}")
    return "\n".join(lines)


def _positions(graph: Graph, sweeps: int = 4) -> Dict[int, Tuple[float, float]]:
    """(layer, offset) of every node: the layer is its depth; within a layer, nodes are
    ordered by the mean offset of their neighbours (barycentre sweeps, forward and back),
    which removes most crossings in the small graphs a learner draws."""
    columns: Dict[int, List[int]] = {}
    for node in graph.nodes:
        columns.setdefault(node.depth, []).append(node.index)
    neighbours: Dict[int, List[int]] = {n.index: [] for n in graph.nodes}
    for source, target, _ in graph.edges:
        neighbours[source].append(target)
        neighbours[target].append(source)
    y: Dict[int, float] = {}

    def place(column: List[int]) -> None:
        middle = (len(column) - 1) / 2
        for row, index in enumerate(column):
            y[index] = middle - row

    for column in columns.values():
        place(column)
    depths = sorted(columns)
    for sweep in range(sweeps):
        for depth in (depths if sweep % 2 == 0 else depths[::-1]):
            side = depth - 1 if sweep % 2 == 0 else depth + 1

            def centre(index: int) -> float:
                near = [y[n] for n in neighbours[index] if graph.nodes[n].depth == side]
                return sum(near) / len(near) if near else y[index]
            columns[depth].sort(key=lambda index: -centre(index))
            place(columns[depth])
    return {n.index: (float(n.depth), y[n.index]) for n in graph.nodes}


def _title(graph: Graph, root: Tensor, max_nodes: Optional[int],
           max_depth: Optional[int] = None) -> str:
    leaves = sum(n.kind == "leaf" for n in graph.nodes)
    text = (f"computation graph of a {root.shape} {root.dtype} tensor: {graph.total_ops} ops, "
            f"{leaves} leaves that require grad")
    if graph.hidden_ops:
        drawn = graph.total_ops - graph.hidden_ops
        limits = f"max_nodes={max_nodes}" + (f", max_depth={max_depth}" if max_depth else "")
        text += (f"\nonly the {drawn} ops nearest the output are drawn; {graph.hidden_ops} "
                 f"earlier ones are not ({limits}; None draws all)")
    layers = len({n.depth for n in graph.nodes})
    if max_depth is None and layers > _DEEP_LAYERS:
        text += (f"\n{layers} layers deep: max_depth={_DEEP_LAYERS // 2} draws only the last "
                 f"{_DEEP_LAYERS // 2} ops before the output, a page instead of a strip")
    parts = sorted({n.part_of for n in graph.nodes if n.part_of})
    if parts:
        text += (f"\ngreen: the parts of {', '.join(parts)} (expand=True), one op and one "
                 f"backward in the engine")
    text += "\narrows: the forward pass (backward runs against them); |grad|: 2-norm of .grad"
    return text


def _orientation(direction: str, layers: int) -> str:
    if direction not in ("auto", "LR", "TB"):
        raise ValueError(f"draw_graph: direction must be 'auto', 'LR' (left to right) or 'TB' "
                         f"(top to bottom), got {direction!r}")
    if direction == "auto":                   # deep graphs read better scrolling down
        return "LR" if layers <= _MAX_LR_LAYERS else "TB"
    return direction


def draw_graph(tensor: Tensor, path: Optional[str] = None, params: Any = None,
               max_nodes: Optional[int] = 60, title: Optional[str] = None,
               direction: str = "auto", max_depth: Optional[int] = None,
               expand: bool = False, show_values: int = 4) -> Any:
    """Draw the graph that computed ``tensor``; save it to ``path`` (.png, .svg or .pdf) if
    given, and return the matplotlib Figure.

    params: names for the leaves, a model (its ``named_parameters()``) or ``{name: tensor}``
    (a name for an intermediate tensor labels the op that made it). max_nodes: at most this
    many boxes, keeping the ops nearest the output and one "... earlier ops" box for the rest
    (a GPT forward has hundreds of ops); None draws everything. direction: "LR" (the forward
    left to right), "TB" (top to bottom) or "auto" (LR up to 8 layers deep, else TB).
    max_depth: draw only the ops at most this many ops before the output (a GPT's last
    block, say; None: no limit). expand: draw packed attention ops as the parts of their
    forward (q * scale, q k^T, mask, softmax, P v). show_values: tensors of at most this
    many elements show their values ("data") and gradients ("grad"); 0 shows none.
    """
    if path is not None:
        suffix = os.path.splitext(str(path))[1].lower()
        if suffix not in FORMATS:
            raise ValueError(f"draw_graph: cannot write {path!r}; the file name must end in "
                             f"{', '.join(FORMATS)}")
    figure_class = _figure_class()
    if isinstance(show_values, bool) or not isinstance(show_values, int) or show_values < 0:
        raise ValueError(f"draw_graph: show_values is how many elements a tensor may have to "
                         f"show its values (0: none), got {show_values!r}")
    graph = build_graph(tensor, params=params, max_nodes=max_nodes, max_depth=max_depth,
                        expand=expand, values_up_to=show_values)
    where = _positions(graph)
    layers = int(max(layer for layer, _ in where.values())) + 1
    across = max(sum(1 for n in graph.nodes if n.depth == d)
                 for d in {n.depth for n in graph.nodes})
    half = (across - 1) / 2 + 0.6
    if _orientation(direction, layers) == "LR":
        xy = {i: (layer, offset) for i, (layer, offset) in where.items()}
        size = (_COLUMN_WIDTH * layers + 0.5, _ROW_HEIGHT * across + 1.2)
        limits = ((-0.6, layers - 0.4), (-half, half))
    else:
        xy = {i: (-offset, -layer) for i, (layer, offset) in where.items()}
        size = (_COLUMN_WIDTH * across + 0.5, _ROW_HEIGHT * layers + 1.2)
        limits = ((-half, half), (-layers + 0.5, 0.5))
    width = min(max(4.0, size[0]), _MAX_INCHES)
    height = min(max(2.5, size[1]), _MAX_INCHES)
    fig = figure_class(figsize=(width, height))
    ax = fig.add_axes((0.01, 0.01, 0.98, 0.98 - min(0.8 / height, 0.35)))
    ax.set_axis_off()
    ax.set_xlim(*limits[0])
    ax.set_ylim(*limits[1])
    boxes = {}
    for node in graph.nodes:
        x, y = xy[node.index]
        colour = _COLOURS["part" if node.part_of else node.kind]
        box = dict(boxstyle="round,pad=0.35", facecolor=colour,
                   edgecolor="crimson" if node.is_output else "0.35",
                   linewidth=1.8 if node.is_output else 0.8,
                   linestyle="--" if node.kind == "cut" else "-")
        boxes[node.index] = ax.text(x, y, _label(node), ha="center", va="center",
                                    fontsize=_FONT_SIZE, bbox=box, gid=f"node-{node.index}")
    positions: Dict[Tuple[int, int], List[str]] = {}
    for source, target, position in graph.edges:     # x * x: one arrow, labelled "0,1"
        positions.setdefault((source, target), []).append(str(position))
    for (source, target), inputs in positions.items():
        (x0, y0), (x1, y1) = xy[source], xy[target]
        ax.annotate("", xy=(x1, y1), xytext=(x0, y0),
                    arrowprops=dict(arrowstyle="-|>", color="0.4", linewidth=0.7,
                                    shrinkA=0, shrinkB=0, patchA=boxes[source].get_bbox_patch(),
                                    patchB=boxes[target].get_bbox_patch()))
        if graph.inputs_per_op.get(target, 1) > 1 and graph.nodes[source].kind != "cut":
            # which input of the op this is (the order matters for MatMul, Sub, Div, ...)
            ax.text(x0 + 0.72 * (x1 - x0), y0 + 0.72 * (y1 - y0), ",".join(inputs),
                    fontsize=_FONT_SIZE - 1, color="0.3", ha="center", va="center",
                    gid=f"input-{source}-{target}")
    heading = title or _title(graph, tensor, max_nodes, max_depth)
    wrap = max(40, int(width * 15))          # about 15 characters of 8 pt text per inch
    heading = "\n".join(textwrap.fill(line, wrap) for line in heading.split("\n"))
    fig.suptitle(heading, fontsize=_FONT_SIZE + 1)
    if path is not None:
        with atomic_write(str(path)) as f:
            fig.savefig(f, format=os.path.splitext(str(path))[1][1:].lower(), dpi=110,
                        bbox_inches="tight")
    return fig
