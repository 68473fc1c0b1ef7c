"""Probes for the engine track: drive a module's tiny autograd engine, report plain values.

A probe takes a module (the learner's, in the child process; the reference solution, in the
checker's) and a scenario's data, runs the engine, and returns a dict of plain values: numbers,
strings, lists of ints, and NumPy arrays. The checker compares the learner's dict with the
reference's. Nothing of the learner's leaves the child but such values: a node of a graph is
reported by its index in the graph the probe built, an unexpected object by a description.

Imports nothing but NumPy and the standard library (the child loads it by path).
"""
from __future__ import annotations

from typing import Any, Dict, List

import numpy as np

__all__ = ["engine_op", "topo", "run_backward", "unbroadcast", "no_grad", "numeric_gradient",
           "gradcheck", "zero_grad", "sgd_step", "train_step", "build", "GRADCHECK_CASES",
           "FUNCTIONS", "train_data"]

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
def run_backward(module: Any, data: Values) -> Values:
    """backward(root, grad) on a graph; the leaves' .grad (twice: a second graph on the same
    leaves, to see gradients add up across calls as in PyTorch)."""
    specs = data["nodes"]
    nodes = build(module, specs, data["leaf_data"])
    grad = None if data["grad"] is None else data["grad"].copy()
    if data.get("method"):
        nodes[data["root"]].backward(grad)
    else:
        module.backward(nodes[data["root"]], grad)
    if data.get("twice"):
        leaves = [n for n, s in zip(nodes, specs) if s[0] == "leaf"]
        again = build(module, specs, data["leaf_data"], leaves=leaves)
        module.backward(again[data["root"]], None if grad is None else grad.copy())
    return _leaf_grads(specs, nodes)


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
    y = module.mul(x, x)                        # "backward": a block in between changes
    with module.no_grad():                      # nothing about the recorded graph
        module.mul(y, y)
    module.backward(y, np.array([1.0, 2.0, 3.0]))
    return {"grad": _array(x.grad)}


# ------------------------------------------------------------------ 19 gradcheck
def _cubic(x: np.ndarray) -> float:
    return float((x ** 3 * np.linspace(0.5, 1.5, x.size).reshape(x.shape)).sum())


def _waves(x: np.ndarray) -> float:
    return float(np.sum(np.sin(3.0 * x) * np.exp(0.3 * x)))


def _coupled(x: np.ndarray) -> float:
    flat = x.reshape(-1)
    return float(np.sum(flat * np.roll(flat, 1)) + np.sum(flat ** 2) ** 1.5)


FUNCTIONS = {"cubic": _cubic, "waves": _waves, "coupled": _coupled}


def numeric_gradient(module: Any, data: Values) -> Values:
    x = data["x"].copy()
    before = x.copy()
    shapes_ok = [True]

    def f(array: Any) -> float:
        array = np.asarray(array)
        shapes_ok[0] = shapes_ok[0] and array.shape == before.shape
        return FUNCTIONS[data["function"]](array.astype(np.float64))

    grad = module.numeric_gradient(f, x)
    return {"grad": _array(grad), "x_unchanged": bool(np.array_equal(x, before)),
            "shapes_ok": shapes_ok[0]}


def _square_op(module: Any, t: Any, factor: float, last: float) -> Any:
    """t * t with a hand-made backward: 2 t g * factor, the last element's times ``last``."""
    def backward_fn(grad):
        d = 2.0 * t.data * grad * factor
        d.reshape(-1)[-1] *= last
        return (d,)
    return module.Tensor(t.data * t.data, (t,), backward_fn, "square")


# name -> (description, builder of f(t)); the reference says which ones are right
GRADCHECK_CASES = {
    "right_tanh": ("sum(tanh(x) * x), built from your engine's ops",
                   lambda m, t: m.sum_all(m.mul(m.tanh(t), t))),
    "right_matmul": ("sum((x @ W) * (x @ W)) for a fixed W",
                     lambda m, t: m.sum_all(m.mul(m.matmul(t, m.Tensor(_W)),
                                                 m.matmul(t, m.Tensor(_W))))),
    "right_large": ("sum(x * x) for x around 300, where the numeric gradient's round-off is "
                    "larger but still far inside rtol",
                    lambda m, t: m.sum_all(_square_op(m, t, 1.0, 1.0))),
    "wrong_factor": ("x * x whose backward lacks the 2 of d(x^2)/dx = 2x",
                     lambda m, t: m.sum_all(_square_op(m, t, 0.5, 1.0))),
    "wrong_sign": ("x * x whose backward has the wrong sign",
                   lambda m, t: m.sum_all(_square_op(m, t, -1.0, 1.0))),
    "wrong_small": ("x * x whose backward is 2% too large",
                    lambda m, t: m.sum_all(_square_op(m, t, 1.02, 1.0))),
    "wrong_last": ("x * x whose backward is wrong in the LAST element only",
                   lambda m, t: m.sum_all(_square_op(m, t, 1.0, 3.0))),
}
_W = np.array([[0.7, -1.2], [0.4, 0.9], [-0.3, 0.5]])


def gradcheck(module: Any, data: Values) -> Values:
    f = GRADCHECK_CASES[data["case"]][1]
    verdict = module.gradcheck(lambda t: f(module, t), data["x"].copy())
    if isinstance(verdict, (bool, np.bool_)):
        return {"verdict": bool(verdict)}
    return {"verdict": _describe(verdict)}


# ------------------------------------------------------------------ 20 train
def _params(module: Any, data: Values) -> List[Any]:
    params = [module.Tensor(x.copy()) for x in data["data"]]
    for p, g in zip(params, data["grads"]):
        p.grad = None if g is None else g.copy()
    return params


def zero_grad(module: Any, data: Values) -> Values:
    params = _params(module, data)
    module.zero_grad(params)
    states = []
    for p in params:
        g = p.grad
        zero = isinstance(g, np.ndarray) and g.shape == p.data.shape and not np.any(g)
        states.append("cleared" if g is None or zero else _describe(g))
    return {"states": states}


def sgd_step(module: Any, data: Values) -> Values:
    params = _params(module, data)
    kept = list(params)
    module.sgd_step(params, data["lr"])
    values: Values = {"same_objects": all(p is q for p, q in zip(params, kept))}
    for i, p in enumerate(kept):
        values[f"data_{i}"] = _array(p.data)
    return values


def train_data() -> Any:
    rng = np.random.default_rng(3)
    x = rng.uniform(-2.0, 2.0, size=(32, 2))
    y = np.sin(x[:, :1]) * np.cos(x[:, 1:])     # (32, 1)
    return x, y


def train_step(module: Any, data: Values) -> Values:
    x, y = train_data()
    model = module.MLP(hidden=8, seed=0)
    losses = []
    for _ in range(data["steps"]):
        loss = module.train_step(model, x.copy(), y.copy(), data["lr"])
        value = loss.data if isinstance(loss, module.Tensor) else loss
        losses.append(float(np.asarray(value)))
    values: Values = {"losses": np.array(losses)}
    for i, p in enumerate(model.parameters()):
        values[f"param_{i}"] = _array(p.data)
    return values
