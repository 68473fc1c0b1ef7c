"""Probes for the engine track: drive a module's tiny autograd engine, report plain values.

A probe takes a module (the learner's, in the child process; the reference solution, in the
checker's) and a scenario's data, runs the engine, and returns a dict of plain values: numbers,
strings, lists of ints, and NumPy arrays. The checker compares the learner's dict with the
reference's. Nothing of the learner's leaves the child but such values: a node of a graph is
reported by its index in the graph the probe built, an unexpected object by a description.

Exercises 14-18 here; 19-20 (gradcheck, training) in probes_training.py. Imports nothing but
NumPy and the standard library (the child loads it by path).
"""
from __future__ import annotations

from typing import Any, Dict, List

import numpy as np

__all__ = ["engine_op", "topo", "run_backward", "unbroadcast", "no_grad", "build"]

Values = Dict[str, Any]


def _describe(value: Any) -> str:
    try:
        if value is None:
            return "None"
        if isinstance(value, np.ndarray):
            return f"an array of shape {tuple(value.shape)}, dtype {value.dtype}"
        return f"a {type(value).__name__}"
    except Exception:
        return "an object that could not be described"


def _array(value: Any) -> Any:
    """A numeric array as a plain copy; anything else as a description (a string)."""
    if isinstance(value, np.ndarray) and value.dtype.kind in "biufc":
        return np.array(value, copy=True, subok=False)
    if isinstance(value, (float, int, np.floating, np.integer)) and not isinstance(value, bool):
        return np.asarray(value, dtype=np.float64)
    return _describe(value)


def _readonly(array: np.ndarray) -> np.ndarray:
    view = np.array(array, copy=True).view()
    view.flags.writeable = False
    return view


def _index(node: Any, nodes: List[Any]) -> int:
    for i, known in enumerate(nodes):
        if node is known:
            return i
    return -1


def build(module: Any, specs: List[tuple], leaf_data: List[np.ndarray],
          leaves: Any = None) -> List[Any]:
    """The graph of ``specs`` built with the module's ops: ("leaf",), ("add", i, j), ...
    ``leaves`` reuses existing leaf tensors (to call backward twice on one set of leaves)."""
    nodes: List[Any] = []
    k = 0
    for spec in specs:
        if spec[0] == "leaf":
            nodes.append(leaves[k] if leaves is not None else
                         module.Tensor(leaf_data[k].copy()))
            k += 1
        else:
            nodes.append(getattr(module, spec[0])(*[nodes[i] for i in spec[1:]]))
    return nodes


def _leaf_grads(specs: List[tuple], nodes: List[Any]) -> Values:
    return {f"grad_{i}": _array(nodes[i].grad) for i, s in enumerate(specs) if s[0] == "leaf"}


# ------------------------------------------------------------------ 14 graph
def engine_op(module: Any, data: Values) -> Values:
    """One op on leaves: its output, the parents it recorded, what its backward_fn returns."""
    leaves = [module.Tensor(x.copy()) for x in data["inputs"]]
    args = [leaves[0], leaves[0]] if data.get("same") else leaves
    out = getattr(module, data["op"])(*args)
    if not isinstance(out, module.Tensor):
        return {"returned": _describe(out)}
    values: Values = {"returned": "Tensor", "data": _array(out.data),
                      "parents": [_index(p, leaves) for p in tuple(out.parents)],
                      "has_backward_fn": callable(out.backward_fn)}
    if not callable(out.backward_fn):
        return values
    for name, grad in (("grads", data["grad"]), ("ones", np.ones_like(data["grad"]))):
        returned = out.backward_fn(_readonly(grad))
        if not isinstance(returned, (tuple, list)):
            values["backward_returned"] = _describe(returned)
            return values
        values[f"{name}_count"] = len(returned)
        for i, item in enumerate(returned):
            values[f"{name}_{i}"] = _array(item)
    return values


# ------------------------------------------------------------------ 15 topological sort
def topo(module: Any, data: Values) -> Values:
    nodes = build(module, data["nodes"], data["leaf_data"])
    order = module.topological_order(nodes[data["root"]])
    index = {id(node): i for i, node in enumerate(nodes)}   # nodes stay alive: ids are safe
    return {"order": [index.get(id(node), -1) for node in list(order)]}


# ------------------------------------------------------------------ 16 backward
class _TooManyCalls(BaseException):
    """Raised by the probe when one node's backward_fn runs far more often than once per
    backward: an engine that follows every path (2^levels of them in a ladder)."""


def _count_calls(nodes: List[Any], specs: List[tuple], limit: int = 16):
    """Wrap every op node's backward_fn: count its calls, keep what it returned (and a copy,
    to see later whether the engine wrote into it)."""
    counts = [0] * len(nodes)
    returned: List[Any] = []
    for i, (node, spec) in enumerate(zip(nodes, specs)):
        inner = getattr(node, "backward_fn", None)
        if spec[0] == "leaf" or not callable(inner):
            continue

        def counted(grad, i=i, inner=inner):
            counts[i] += 1
            if counts[i] > limit:
                raise _TooManyCalls(f"backward_fn of node #{i} ran {counts[i]} times")
            out = inner(grad)
            if isinstance(out, (tuple, list)) and len(returned) < 400:
                returned.extend((a, a.copy()) for a in out if isinstance(a, np.ndarray))
            return out
        node.backward_fn = counted
    return counts, returned


def _call_backward(module: Any, root: Any, grad: Any, method: bool) -> None:
    if method:
        root.backward(grad)
    else:
        module.backward(root, grad)


def _aliased(specs: List[tuple], nodes: List[Any]) -> bool:
    grads = [nodes[i].grad for i, s in enumerate(specs) if s[0] == "leaf"]
    grads = [g for g in grads if isinstance(g, np.ndarray)]
    return any(np.shares_memory(a, b) for k, a in enumerate(grads) for b in grads[k + 1:])


def run_backward(module: Any, data: Values) -> Values:
    """backward(root, grad) on a graph; the leaves' .grad. ``twice``: a second graph on the
    same leaves (gradients add up across calls, as in PyTorch); ``same_graph``: backward
    again on the very same graph. Also: the most calls of one backward_fn, whether the
    caller's grad and the arrays backward_fn returned were written into."""
    specs = data["nodes"]
    nodes = build(module, specs, data["leaf_data"])
    counts, returned = _count_calls(nodes, specs)
    grad = None if data["grad"] is None else data["grad"].copy()
    seed = None if grad is None else grad.copy()
    root, method = nodes[data["root"]], bool(data.get("method"))
    values: Values = {}
    try:
        _call_backward(module, root, grad, method)
        if data.get("same_graph"):
            values.update({f"first_{k}": v for k, v in _leaf_grads(specs, nodes).items()})
            _call_backward(module, root, None if seed is None else seed.copy(), method)
        if data.get("twice"):
            leaves = [n for n, s in zip(nodes, specs) if s[0] == "leaf"]
            again = build(module, specs, data["leaf_data"], leaves=leaves)
            module.backward(again[data["root"]], None if seed is None else seed.copy())
    except _TooManyCalls:
        pass
    values.update(_leaf_grads(specs, nodes))
    values["most_calls"] = max(counts)
    values["seed_unchanged"] = grad is None or bool(np.array_equal(grad, seed))
    values["returned_unchanged"] = all(bool(np.array_equal(a, c)) for a, c in returned)
    values["aliased"] = _aliased(specs, nodes)
    return values


# ------------------------------------------------------------------ 17 unbroadcast
def unbroadcast(module: Any, data: Values) -> Values:
    if data["kind"] == "direct":
        out = module.unbroadcast(_readonly(data["grad"]), tuple(data["shape"]))
        return {"out": _array(out)}
    return run_backward(module, data)


# ------------------------------------------------------------------ 18 no_grad
class _Planted(Exception):
    """Raised inside a no_grad block by the probe."""


def _recorded(y: Any) -> bool:
    return bool(tuple(y.parents)) or y.backward_fn is not None


def no_grad(module: Any, data: Values) -> Values:
    x = module.Tensor(np.array([1.0, -2.0, 0.5]))
    kind = data["kind"]
    if kind == "initial":
        return {"enabled": bool(module.is_grad_enabled()),
                "recorded": _recorded(module.mul(x, x))}
    if kind == "inside":
        with module.no_grad():
            enabled = bool(module.is_grad_enabled())
            y = module.mul(x, x)
        return {"enabled_inside": enabled, "recorded": _recorded(y), "data": _array(y.data),
                "enabled_after": bool(module.is_grad_enabled())}
    if kind == "exception":
        propagated = False
        try:
            with module.no_grad():
                raise _Planted("raised inside no_grad by the checker")
        except _Planted:
            propagated = True
        return {"propagated": propagated, "enabled_after": bool(module.is_grad_enabled()),
                "recorded_after": _recorded(module.mul(x, x))}
    if kind == "nested":
        with module.no_grad():
            with module.no_grad():
                pass
            inner = bool(module.is_grad_enabled())
            y = module.mul(x, x)
        return {"enabled_after_inner": inner, "recorded_between": _recorded(y),
                "enabled_after_outer": bool(module.is_grad_enabled())}
    if kind == "interrupt":
        return _interrupted(module, x)
    if kind == "deep":
        with module.no_grad():
            with module.no_grad():
                inner = bool(module.is_grad_enabled())
                with module.no_grad():
                    innermost = bool(module.is_grad_enabled())
                middle = bool(module.is_grad_enabled())
        return {"enabled_inside_inner": inner, "enabled_inside_innermost": innermost,
                "enabled_after_innermost": middle,
                "enabled_after_outer": bool(module.is_grad_enabled())}
    if kind == "program":
        trace: List[str] = []
        _run_program(module, x, data["program"], trace, "top level")
        return {"trace": trace}
    y = module.mul(x, x)                        # "backward": a block in between changes
    with module.no_grad():                      # nothing about the recorded graph
        module.mul(y, y)
    module.backward(y, np.array([1.0, 2.0, 3.0]))
    return {"grad": _array(x.grad)}


def _interrupted(module: Any, x: Any) -> Values:
    """Ctrl-C inside a block: KeyboardInterrupt is a BaseException, not an Exception."""
    propagated = False
    try:
        with module.no_grad():
            raise KeyboardInterrupt("raised inside no_grad by the checker")
    except KeyboardInterrupt:
        propagated = True
    return {"propagated_interrupt": propagated,
            "enabled_after_interrupt": bool(module.is_grad_enabled()),
            "recorded_after_interrupt": _recorded(module.mul(x, x))}


def _run_program(module: Any, x: Any, items: list, trace: List[str], where: str) -> None:
    """Run nested blocks; each check appends 'where: on/off' (on = ops record)."""
    for item in items:
        if item[0] == "check":
            state = "on" if _recorded(module.mul(x, x)) and module.is_grad_enabled() else "off"
            trace.append(f"{where}: {state}")
            continue
        _, children, ending = item
        inside = "inside a block" if where == "top level" else f"{where} > a nested block"
        try:
            with module.no_grad():
                _run_program(module, x, children, trace, inside)
                if ending == "error":
                    raise _Planted("raised inside no_grad by the checker")
                if ending == "interrupt":
                    raise KeyboardInterrupt("raised inside no_grad by the checker")
        except (_Planted, KeyboardInterrupt):
            pass
        if ending:
            trace.append(f"{where}, after a block that raised "
                         f"{'KeyboardInterrupt' if ending == 'interrupt' else 'ValueError'}: "
                         f"{'on' if module.is_grad_enabled() else 'off'}")
