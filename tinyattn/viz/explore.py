"""``explore``: a tensor's computation graph as one self-contained HTML page, with a stepper
that replays the backward pass in the order tinyattn's engine ran it.

    import tinyattn as ta
    from tinyattn.viz import explore

    loss = model(x, targets=y)[1]          # anything that requires a gradient
    explore(loss, "graph.html", params=model)   # open graph.html in a browser, offline

The page holds everything inline (no CDN, no server). The graph is embedded as JSON in
``<script type="application/json" id="tinyattn-graph">`` in the format ``graph_data``
returns and docs/see_it.md#the-explorer-page-format documents; tests and other tools read it.

How it learns what it shows: the graph is the Function graph of tinyattn/autograd/ (each
Function's ``inputs``, ``parents``, and ``module``, the nn.Module whose forward made it).
The backward is run once more by ``tinyattn.autograd.grad`` with ``retain_graph=True``,
under ``autograd.set_backward_hook``, so the page records every gradient the engine sent
without touching any ``.grad``. A graph whose backward already ran without
``retain_graph=True`` has freed what it saved: the page then shows the forward and the
``.grad`` of the leaves, and says why it has no stepper.
"""
from __future__ import annotations

import html
import json
import math
import os
import re
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

import numpy as np

from .. import autograd, backend
from ..atomic import atomic_write
from ..tensor import Tensor
from .graph import op_name, tensor_names

__all__ = ["explore", "graph_data"]

FORMAT_VERSION = 1
SMALL = 256                 # tensors up to this many elements carry all their values
HEATMAP_SIDE = 32           # larger matrices show their first (rows, cols) corner, at most this
PICTURE_BUDGET = 250_000    # values drawn per page, at most (a big graph keeps its summaries)
_ASSETS = Path(__file__).with_name("explorer")
_DOCS = Path(__file__).resolve().parents[2] / "docs"
_DOC_LINK = re.compile(r"docs/([\w./-]+\.md)#([\w-]+)")


def _host(array: Any) -> np.ndarray:
    return np.asarray(backend.to_host(array)).astype(np.float64, copy=False)


def _summary(array: Any) -> Optional[Dict[str, float]]:
    """min, max, mean and 2-norm (float64, on the host); None for no array."""
    if array is None:
        return None
    a = _host(array)
    if a.size == 0:
        return {"min": None, "max": None, "mean": None, "norm": 0.0}
    finite = a[np.isfinite(a)]
    clean = lambda x: float(x) if math.isfinite(x) else None   # JSON has no inf/NaN
    return {"min": clean(a.min()), "max": clean(a.max()), "mean": clean(a.mean()),
            "norm": clean(float(np.linalg.norm(a.ravel()))),
            "nonfinite": int(a.size - finite.size)}


def _picture(array: Any, budget: List[int]) -> Optional[Dict[str, Any]]:
    """The values to draw: all of a small tensor, else a matrix corner of the last two axes
    at index 0 of the leading ones (an attention map: batch 0, head 0). ``budget`` is the
    count of values the page may still hold (one-element list, decremented)."""
    if array is None or budget[0] <= 0:
        return None
    a = _host(array)
    if a.ndim == 0:
        a, where = a.reshape(1, 1), "the value"
    elif a.ndim == 1:
        a, where = a[:HEATMAP_SIDE * HEATMAP_SIDE // 8][None, :], "[:]"
    else:
        lead = (0,) * (a.ndim - 2)
        a = a[lead][:HEATMAP_SIDE, :HEATMAP_SIDE]
        where = "[" + "0, " * len(lead) + ":, :]" if lead else "[:, :]"
    if a.size > SMALL and a.ndim == 2 and a.shape[0] == 1:
        a = a[:, :SMALL]
    budget[0] -= a.size
    values = [None if not math.isfinite(x) else float(f"{x:.4g}") for x in a.ravel()]
    return {"rows": int(a.shape[0]), "cols": int(a.shape[1]), "values": values,
            "where": where}


def _formula(fn: Any) -> str:
    """The op's docstring: tinyattn writes the forward and the backward derivation there."""
    cls = getattr(fn, "user_class", None) or type(fn)
    doc = cls.__doc__ or ""
    lines = doc.strip("\n").splitlines()
    indent = min((len(l) - len(l.lstrip()) for l in lines[1:] if l.strip()), default=0)
    return "\n".join([lines[0].strip()] + [l[indent:] for l in lines[1:]]) if lines else ""


def _derivation(fn: Any) -> Optional[str]:
    """'docs/file.md#anchor' named by the op's docstring or its module's, if any."""
    cls = getattr(fn, "user_class", None) or type(fn)
    import sys                                          # noqa: PLC0415
    module_doc = getattr(sys.modules.get(cls.__module__), "__doc__", None) or ""
    for text in (cls.__doc__ or "", module_doc):
        found = _DOC_LINK.search(text)
        if found:
            return f"docs/{found.group(1)}#{found.group(2)}"
    return None


def _module_paths(functions: List[Any], params: Any) -> Dict[int, str]:
    """id(module) -> dotted path, from ``params`` when it is a model, else from the
    outermost modules that made the graph's ops (their own path is "")."""
    roots = [params] if hasattr(params, "named_modules") else []
    if not roots:
        seen = {id(fn.module): fn.module for fn in functions if fn.module is not None}
        inner = {id(m) for m in seen.values() for _, m in list(m.named_modules())[1:]}
        roots = [m for key, m in seen.items() if key not in inner]
    paths: Dict[int, str] = {}
    for root in roots:
        prefix = "" if len(roots) == 1 else type(root).__name__
        for name, m in root.named_modules():
            full = ".".join(p for p in (prefix, name) if p)
            paths.setdefault(id(m), full)
    return paths


def _walk(output: Tensor) -> List[Any]:
    """Every Function behind ``output``, inputs' makers before their consumers."""
    order: List[Any] = []
    if output._ctx is None:
        return order
    done, stack = set(), [(output._ctx, False)]
    while stack:
        fn, expanded = stack.pop()
        if expanded:
            order.append(fn)
            continue
        if id(fn) in done:
            continue
        done.add(id(fn))
        stack.append((fn, True))
        for parent in reversed(fn.parents):
            if parent is not None and id(parent) not in done:
                stack.append((parent, False))
    return order


def _leaf_name(t: Tensor, role: str, reader: str, position: int) -> str:
    """A name for a leaf the caller did not name, from what it is and what reads it:
    'constant 0.5', 'targets for CrossEntropy#41', 'mask for MaskedFill#7', 'input 0 of
    Linear#3' (never a bare number)."""
    kind = np.dtype(t.dtype).kind if not isinstance(t.dtype, str) else "f"
    of = f" of {reader}" if reader else ""
    if int(np.prod(t.shape)) == 1 and kind in "fc":
        value = float(_host(t._data).reshape(-1)[0])
        return f"constant {value:.4g}"
    if kind == "b":
        return f"mask for {reader}" if reader else "mask"
    if kind in "iu":
        return (f"{'targets' if position > 0 else 'ids'} for {reader}" if reader
                else "ids")
    return f"{'leaf' if role == 'leaf' else 'input'} {position}{of}" if reader else role


def _record_backward(output: Tensor, leaves: List[Tensor]
                     ) -> Tuple[List[Tuple[Any, Any, Tuple[Any, ...]]], Dict[int, Any], str]:
    """Run the backward again, keeping what each op received and sent. Returns the calls,
    id(leaf) -> gradient array, and '' or why there is no recording."""
    calls: List[Tuple[Any, Any, Tuple[Any, ...]]] = []
    hook = lambda fn, grad, sent: calls.append((fn, grad, tuple(sent)))
    previous = autograd.set_backward_hook(hook)
    try:
        grads = autograd.grad([output], leaves, grad_outputs=[Tensor._wrap(
            backend.get_array_module(output._data).ones_like(output._data))],
            retain_graph=True, allow_unused=True)
    except RuntimeError as error:
        why = (f"the backward could not be replayed ({error}); call explore() before "
               f"backward(), or backward(retain_graph=True)")
        return [], {id(t): (t._grad._data if t._grad is not None else None)
                    for t in leaves}, why
    finally:
        autograd.set_backward_hook(previous)
    return calls, {id(t): (None if g is None else g._data) for t, g in zip(leaves, grads)}, ""


def graph_data(output: Tensor, params: Any = None, title: Optional[str] = None
               ) -> Dict[str, Any]:
    """The page's data (docs/see_it.md#the-explorer-page-format): nodes, edges, the
    engine's backward order and what each step received and sent."""
    if not isinstance(output, Tensor):
        raise TypeError(f"explore: expected a tinyattn Tensor, got {type(output).__name__}")
    functions = _walk(output)
    names = tensor_names(params)
    paths = _module_paths(functions, params)
    nodes: List[Dict[str, Any]] = []
    tensor_ids: Dict[int, str] = {}
    tensors: Dict[str, Tensor] = {}
    fn_ids: Dict[int, str] = {}
    edges: List[List[str]] = []
    budget = [PICTURE_BUDGET]

    def module_of(fn: Any) -> Optional[str]:
        return None if fn is None or fn.module is None else paths.get(id(fn.module))

    def add_tensor(t: Tensor, role: str, maker: Any = None, reader: Any = None,
                   position: int = 0) -> str:
        if id(t) in tensor_ids:
            return tensor_ids[id(t)]
        node_id = f"t{len(tensor_ids)}"
        tensor_ids[id(t)], tensors[node_id] = node_id, t
        name = names.get(id(t))
        module = module_of(maker)
        if name is not None:
            role = "parameter"
            module = name.rpartition(".")[0] if hasattr(params, "named_modules") else None
        label = name or (f"{fn_labels[id(maker)]} out" if maker is not None else
                         _leaf_name(t, role, fn_labels.get(id(reader), ""), position))
        nodes.append({"id": node_id, "kind": "tensor", "op": role, "name": label,
                      "module": module, "shape": list(t.shape), "dtype": str(t.dtype),
                      "requires_grad": bool(t.requires_grad),
                      "value_summary": _summary(t._data), "values": _picture(t._data, budget),
                      "grad_summary": None, "grad_values": None})
        return node_id

    fn_labels = {id(fn): f"{op_name(fn)}#{i + 1}" for i, fn in enumerate(functions)}
    made_by: Dict[int, Any] = {}         # id(Function) -> its output tensor
    for fn in functions:
        for t in fn.inputs:
            if t._ctx is not None:
                made_by[id(t._ctx)] = t
    if output._ctx is not None:
        made_by[id(output._ctx)] = output
    for fn in functions:
        for position, (t, parent) in enumerate(zip(fn.inputs, fn.parents)):
            if parent is None:
                add_tensor(t, "leaf" if t.requires_grad else "input", reader=fn,
                           position=position)
        node_id = f"f{len(fn_ids)}"
        fn_ids[id(fn)] = node_id
        nodes.append({"id": node_id, "kind": "function", "op": op_name(fn),
                      "name": fn_labels[id(fn)], "module": module_of(fn),
                      "shape": list(made_by[id(fn)].shape), "dtype": str(made_by[id(fn)].dtype),
                      "value_summary": _summary(made_by[id(fn)]._data), "grad_summary": None,
                      "formula": _formula(fn), "derivation": _derivation(fn)})
        for t in fn.inputs:
            edges.append([tensor_ids[id(t)], node_id])
        out = made_by[id(fn)]
        edges.append([node_id, add_tensor(out, "output" if out is output else "intermediate",
                                          fn)])
    if output._ctx is None:
        add_tensor(output, "output")
    by_id = {n["id"]: n for n in nodes}
    leaves = [t for t in (tensors[i] for i in sorted(tensors, key=lambda s: int(s[1:])))
              if t._ctx is None and t.requires_grad]
    calls, leaf_grads, why = ([], {}, "the output does not require a gradient") \
        if not output.requires_grad else _record_backward(output, leaves)
    steps = []
    arrivals: Dict[str, int] = {}
    for fn, grad, sent in calls:
        if id(fn) not in fn_ids:
            continue
        out_id = tensor_ids[id(made_by[id(fn)])]
        by_id[fn_ids[id(fn)]]["grad_summary"] = by_id[out_id]["grad_summary"] = _summary(grad)
        by_id[out_id]["grad_values"] = _picture(grad, budget)
        sends = []
        for position, t in enumerate(fn.inputs):
            g = sent[position] if position < len(sent) else None
            to = tensor_ids[id(t)]
            if g is not None and fn.needs_input_grad[position]:
                arrivals[to] = arrivals.get(to, 0) + 1
            sends.append({"position": position, "to": to,
                          "grad_summary": _summary(g) if fn.needs_input_grad[position]
                          else None})
        steps.append({"function": fn_ids[id(fn)], "received": out_id,
                      "grad_summary": _summary(grad), "sends": sends})
    for t in leaves:
        g = leaf_grads.get(id(t))
        node = by_id[tensor_ids[id(t)]]
        node["grad_summary"], node["grad_values"] = _summary(g), _picture(g, budget)
    for node in nodes:
        node["uses"] = arrivals.get(node["id"], 0)
    return {"format": FORMAT_VERSION, "title": title or "tinyattn graph",
            "output": tensor_ids[id(output)], "nodes": nodes, "edges": edges,
            "backward_order": [s["function"] for s in steps], "backward_steps": steps,
            "backward_note": why, "docs": _DOCS.as_uri() if _DOCS.is_dir() else None}


def _inline_json(data: Dict[str, Any]) -> str:
    """JSON safe inside <script>: no '</' can end the element early."""
    return json.dumps(data, separators=(",", ":"), allow_nan=False).replace("</", "<\\/")


def explore(output: Tensor, path: str = "graph.html", params: Any = None,
            title: Optional[str] = None) -> str:
    """Write the explorer page for ``output``'s graph to ``path`` (one HTML file, everything
    inline); return the path. ``params``: a model (or ``{name: tensor}``) to name the
    parameters and group the ops by module path. See docs/see_it.md#the-graph-explorer."""
    if not str(path).endswith((".html", ".htm")):
        raise ValueError(f"explore: path must end in .html (a web page), got {path!r}")
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        raise FileNotFoundError(f"explore: the folder {folder!r} does not exist; create it or "
                                f"choose another path")
    data = graph_data(output, params=params, title=title)
    page = (_ASSETS / "page.html").read_text(encoding="utf-8")
    page = (page.replace("{{TITLE}}", html.escape(data["title"]))
                .replace("{{CSS}}", (_ASSETS / "explorer.css").read_text(encoding="utf-8"))
                .replace("{{JS}}", (_ASSETS / "explorer.js").read_text(encoding="utf-8"))
                .replace("{{GRAPH}}", _inline_json(data)))
    # never a half-written page under the real name, and no fixed temporary name (a link
    # planted there would be written through; two runs on one page would collide)
    with atomic_write(str(path), "w") as f:
        f.write(page)
    return str(path)
