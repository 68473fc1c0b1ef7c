"""The engine track: build reverse-mode autograd yourself (exercises 14-20).

Each part's scenarios are graphs and calls chosen to expose one piece: diamonds and values used
twice (accumulation), a chain deeper than Python's recursion limit (the sort), broadcasting
shapes, nested and failing no_grad blocks, wrong gradients a gradcheck must reject. Each
``EngineMistake`` installs a typical wrong function into a fresh copy of the reference
module; a learner whose results equal that copy's gets the mistake named.
"""
from __future__ import annotations

from typing import Any, List

import numpy as np

from . import engine_random as rg
from . import engine_verify as v
from .course import DERIVATIONS, EngineMistake, EnginePart, Exercise, Scenario

__all__ = ["ENGINE_EXERCISES", "CHAIN_LENGTH"]

CHAIN_LENGTH = 3000                             # deeper than Python's 1,000-frame limit


# ------------------------------------------------------------------ 14 graph
def _random_shapes(op: str, rng: np.random.Generator) -> List[tuple]:
    size = [int(n) for n in rng.integers(1, 4, size=3)]
    if op == "matmul":
        return [((size[0], size[1]), (size[1], size[2])), ((1, size[1]), (size[1], 1))]
    shape = tuple(size[:int(rng.integers(1, 4))])
    return [(shape, shape), ((1,) * len(shape), (1,) * len(shape))][:2] if op in (
        "add", "mul") else [(shape,), ((1, 1),)]


def _op_scenarios(op: str, shapes: List[tuple], same: bool = False):
    def make(rng: np.random.Generator) -> List[Scenario]:
        scenarios = []
        if same:                                # first: it shows a set of parents at once
            x = rng.standard_normal((3,))
            scenarios.append(Scenario(f"{op}(x, x): one tensor as both inputs",
                                      {"op": op, "inputs": [x], "grad": rng.standard_normal(3),
                                       "same": True}))
        for k, shape in enumerate(shapes + _random_shapes(op, rng)):
            inputs = [rng.standard_normal(s) for s in shape]
            out = {"add": lambda a, b: a + b, "mul": lambda a, b: a * b,
                   "tanh": np.tanh, "matmul": lambda a, b: a @ b,
                   "sum_all": lambda a: np.asarray(a.sum())}[op](*inputs)
            grad = rng.standard_normal(np.shape(out)) if np.ndim(out) else \
                np.asarray(rng.uniform(0.3, 2.5) * rng.choice([-1.0, 1.0]))
            scale = (1.0, 1.0, 1e6, 0.0)[k % 4] if k >= len(shapes) else 1.0
            label = f"{op} of " + " and ".join(str(s) for s in shape) + \
                {1e6: ", an upstream gradient around 1e6", 0.0: ", a zero upstream gradient"
                 }.get(scale, "")
            scenarios.append(Scenario(label, {"op": op, "inputs": inputs,
                                              "grad": grad * scale}))
        return scenarios
    return make


def _install(name: str, make_fn):
    def install(module: Any) -> None:
        setattr(module, name, make_fn(module))
    return install


def _mul_swapped(m):
    def mul(a, b):
        return m.Tensor(a.data * b.data, (a, b), lambda g: (g * a.data, g * b.data), "mul")
    return mul


def _tanh_of_input(m):
    def tanh(a):
        return m.Tensor(np.tanh(a.data), (a,), lambda g: (g * (1 - a.data ** 2),), "tanh")
    return tanh


GRAPH_MISTAKES = [
    EngineMistake("swapped", "Swapped operands in mul: d(a * b)/da = b, so da = grad * b and "
                  "db = grad * a; you multiplied each gradient by its own input.",
                  _install("mul", _mul_swapped)),
    EngineMistake("tanh_input", "tanh' = 1 - tanh(a)^2, the OUTPUT squared: you used 1 - a^2, "
                  "the input squared.", _install("tanh", _tanh_of_input)),
]


# ------------------------------------------------------------------ 15 topological sort
def _graph(nodes: List[tuple], rng: np.random.Generator, label: str) -> Scenario:
    leaves = sum(1 for n in nodes if n[0] == "leaf")
    data = [rng.uniform(-1.0, 1.0, size=2) for _ in range(leaves)]
    return Scenario(label, {"nodes": nodes, "root": len(nodes) - 1, "leaf_data": data,
                            "grad": None})


def _random_graph(rng: np.random.Generator, size: int) -> List[tuple]:
    nodes: List[tuple] = [("leaf",), ("leaf",), ("leaf",)]
    for _ in range(size):
        i, j = (int(k) for k in rng.integers(0, len(nodes), size=2))
        nodes.append(("tanh", i) if rng.random() < 0.3 else (("add", "mul")[
            int(rng.integers(2))], i, j))
    nodes.append(("mul", len(nodes) - 1, len(nodes) - 4))
    return nodes


CHAIN = [("leaf",)] + [("tanh", i) for i in range(CHAIN_LENGTH)]
GRAPHS = [
    ("a single leaf: the root itself", [("leaf",)]),
    ("a chain: tanh(exp(tanh(x)))", [("leaf",), ("tanh", 0), ("exp", 1), ("tanh", 2)]),
    ("a diamond: y = tanh(x) * exp(x)", [("leaf",), ("tanh", 0), ("exp", 0), ("mul", 1, 2)]),
    ("x used twice by one op: y = x * x", [("leaf",), ("mul", 0, 0)]),
    ("paths of unequal length: y = tanh(tanh(x)) * x",
     [("leaf",), ("tanh", 0), ("tanh", 1), ("mul", 2, 0)]),
    ("two leaves, one shared middle: y = a * b + tanh(a * b)",
     [("leaf",), ("leaf",), ("mul", 0, 1), ("tanh", 2), ("add", 2, 3)]),
]


def _topo_scenarios(rng: np.random.Generator) -> List[Scenario]:
    scenarios = [_graph(nodes, rng, label) for label, nodes in GRAPHS]
    scenarios.append(_graph(_random_graph(rng, 14), rng, "a random graph of 15 ops"))
    for nodes in rg.random_graphs(rng, 8, 12):
        scenarios.append(_graph(nodes, rng, "a random graph: " + rg.describe(nodes)))
    scenarios.append(_graph(CHAIN, rng, f"a chain of {CHAIN_LENGTH:,} tanh ops, deeper "
                                        f"than Python's recursion limit"))
    return scenarios


# ------------------------------------------------------------------ 16 backward
def _backward_scenarios(rng: np.random.Generator) -> List[Scenario]:
    scenarios = []
    for (label, nodes), seed in zip(GRAPHS[1:], ("none", "random", "random", "random",
                                                  "random")):
        s = _graph(nodes, rng, label + (", grad=None" if seed == "none" else
                                        ", a random grad"))
        if seed == "random":
            s.data["grad"] = rng.standard_normal(2)
        scenarios.append(s)
    scalar = _graph([("leaf",), ("tanh", 0), ("mul", 1, 0), ("sum_all", 2)], rng,
                    "a 0-d root, sum(tanh(x) * x), with grad = 0.7")
    scalar.data["grad"] = np.asarray(0.7)
    method = _graph(GRAPHS[2][1], rng, "root.backward(grad), the method")
    method.data.update(grad=rng.standard_normal(2), method=True)
    twice = _graph(GRAPHS[5][1], rng, "backward twice on the same leaves: .grad adds up")
    twice.data.update(grad=rng.standard_normal(2), twice=True)
    return scenarios + [scalar, method, twice] + _backward_random(rng)


SEEDS = {"none": "grad=None", "random": "a random grad", "zeros": "a zero grad",
         "large": "a grad around 1e8"}


def _seeded(nodes: List[tuple], rng: np.random.Generator, label: str, seed: str,
            **flags: Any) -> Scenario:
    s = _graph(nodes, rng, f"{label}, {SEEDS[seed]}")
    s.data["grad"] = None if seed == "none" else rng.standard_normal(2) * {
        "random": 1.0, "zeros": 0.0, "large": 1e8}[seed]
    s.data.update(flags)
    return s


def _backward_random(rng: np.random.Generator) -> List[Scenario]:
    """A leaf as the root, two leaves added twice, backward twice on ONE graph, random
    graphs with every kind of seed, a deep chain, a ladder of 2^30 paths."""
    add = [("leaf",), ("leaf",), ("add", 0, 1)]
    scenarios = [_seeded([("leaf",)], rng, "a leaf alone is the root", "none"),
                 _seeded([("leaf",)], rng, "a leaf alone is the root", "random"),
                 _seeded(add, rng, "a + b, backward twice on new graphs", "random",
                         twice=True),
                 _seeded(add, rng, "a + b, backward twice on ONE graph", "none",
                         same_graph=True),
                 _seeded(GRAPHS[2][1], rng, "backward twice on ONE graph: " + GRAPHS[2][0],
                         "random", same_graph=True)]
    kinds = list(SEEDS)
    for k, nodes in enumerate(rg.random_graphs(rng, 8, 10)):
        scenarios.append(_seeded(nodes, rng, "a random graph: " + rg.describe(nodes),
                                 kinds[k % 4], same_graph=k % 3 == 2))
    scenarios.append(_seeded(rg.chain(CHAIN_LENGTH), rng, f"a chain of {CHAIN_LENGTH:,} tanh "
                             f"ops, deeper than Python's recursion limit", "none"))
    scenarios.append(_seeded(rg.ladder(30), rng, "x -> tanh(x + x) -> tanh(y + y) ... 30 "
                             "times: 2^30 paths from the root to x", "random"))
    return scenarios


def _backward_variant(assign: bool = False, leaf_assign: bool = False, ones: bool = False):
    def make(m):
        def backward(root, grad=None):
            grads = {id(root): np.ones_like(root.data) if grad is None or ones else grad}
            for node in reversed(m.topological_order(root)):
                node_grad = grads.pop(id(node), None)
                if node_grad is None:
                    continue
                if not node.parents:
                    keep = node.grad is None or leaf_assign
                    node.grad = node_grad.copy() if keep else node.grad + node_grad
                    continue
                for parent, parent_grad in zip(node.parents, node.backward_fn(node_grad)):
                    key = id(parent)
                    grads[key] = parent_grad if key not in grads or assign else \
                        grads[key] + parent_grad
        return backward
    return make


BACKWARD_MISTAKES = [
    EngineMistake("assign", "You assign grad instead of accumulating: a value used twice gets "
                  "only one path's gradient. When a tensor already has a gradient waiting, "
                  "add the new one to it.", _install("backward", _backward_variant(assign=True))),
    EngineMistake("leaf_assign", "Calling backward twice should ADD to .grad, as in PyTorch "
                  "(that is why training calls zero_grad): you replace leaf.grad instead.",
                  _install("backward", _backward_variant(leaf_assign=True))),
    EngineMistake("ignores_seed", "You ignore the grad passed to backward: it is dL/d root and "
                  "scales everything. Use np.ones_like(root.data) only when grad is None.",
                  _install("backward", _backward_variant(ones=True))),
]


# ------------------------------------------------------------------ 17 unbroadcast
DIRECT = [((2, 3), (2, 3)), ((2, 3, 4), (4,)), ((3, 4), (3, 1)), ((2, 3, 4), (3, 1)),
          ((5, 1, 4), (1, 1)), ((2, 3), ()), ((3, 3), (3,))]


def _unbroadcast_scenarios(rng: np.random.Generator) -> List[Scenario]:
    pairs = DIRECT + rg.random_unbroadcast_shapes(rng, 5)
    scenarios = [Scenario(f"unbroadcast(grad {g}, {s})",
                          {"kind": "direct", "grad": rng.standard_normal(g), "shape": s})
                 for g, s in pairs]
    for op, sa, sb in [("add", (2, 3), (3,)), ("mul", (3, 1), (1, 4)), ("mul", (2, 3), ())]:
        out = np.broadcast_shapes(sa, sb)
        scenarios.append(Scenario(
            f"backward of {op}({sa}, {sb}) -> {out}",
            {"kind": "engine", "nodes": [("leaf",), ("leaf",), (op, 0, 1)], "root": 2,
             "leaf_data": [rng.standard_normal(sa), rng.standard_normal(sb)],
             "grad": rng.standard_normal(out)}))
    return scenarios


def _unbroadcast_variant(kind: str):
    def make(m):
        def unbroadcast(grad, shape):
            extra = grad.ndim - len(shape)
            if kind == "left":                  # lines shapes up from the left
                return grad.sum(axis=tuple(range(len(shape), grad.ndim)))
            grad = grad.sum(axis=tuple(range(extra)))
            axes = tuple(i for i, n in enumerate(shape) if n == 1 and grad.shape[i] != 1)
            return grad.sum(axis=axes) if axes and kind == "no_keepdims" else grad
        return unbroadcast
    return make


UNBROADCAST_MISTAKES = [
    EngineMistake("unbroadcast_keepdims", "Axes where the input has size 1 must be summed with "
                  "keepdims=True, so the result keeps the input's shape ((3, 1), not (3,)).",
                  _install("unbroadcast", _unbroadcast_variant("no_keepdims"))),
    EngineMistake("unbroadcast_size1", "You sum the leading axes but not the axes where the "
                  "input has size 1: broadcasting copies along those too. Sum them with "
                  "keepdims=True.", _install("unbroadcast", _unbroadcast_variant("leading"))),
    EngineMistake("unbroadcast_left", "Broadcasting lines shapes up from the RIGHT: the axes "
                  "the input lacks are the LEADING ones. You summed trailing axes.",
                  _install("unbroadcast", _unbroadcast_variant("left"))),
]


# ------------------------------------------------------------------ 18 no_grad
def _no_grad_scenarios(rng: np.random.Generator) -> List[Scenario]:
    labels = {"initial": "before any block: ops record", "inside": "inside no_grad()",
              "exception": "an exception raised inside the block",
              "nested": "no_grad() inside no_grad()",
              "backward": "a block between forward and backward changes nothing recorded",
              "interrupt": "KeyboardInterrupt (Ctrl-C) inside the block",
              "deep": "three no_grad() blocks, one inside the other"}
    scenarios = [Scenario(text, {"kind": kind}) for kind, text in labels.items()]
    for k in range(4):
        scenarios.append(Scenario(f"random nested blocks #{k + 1}, some raising", {
            "kind": "program", "program": rg.random_no_grad_program(rng)}))
    return scenarios


# ------------------------------------------------------------------ 19 gradcheck
def _numeric_scenarios(rng: np.random.Generator) -> List[Scenario]:
    return [Scenario("f = sum(w * x^3), x (3,)", {"function": "cubic",
                                                  "x": rng.uniform(-1, 1, 3)}),
            Scenario("f = sum(sin(3x) exp(0.3x)), x (2, 3)",
                     {"function": "waves", "x": rng.uniform(-1, 1, (2, 3))}),
            Scenario("f couples neighbours, x (4,)", {"function": "coupled",
                                                      "x": rng.uniform(0.5, 1.5, 4)}),
            Scenario("a 0-d x", {"function": "cubic", "x": np.asarray(0.8)}),
            Scenario("f = sum(w * x^3), x (2, 1, 3)", {"function": "cubic",
                                                       "x": rng.uniform(-2, 2, (2, 1, 3))}),
            Scenario("f couples neighbours, x (1,)", {"function": "coupled",
                                                      "x": rng.uniform(0.5, 1.5, 1)})]


def _last_is_one(x: np.ndarray) -> np.ndarray:
    x.reshape(-1)[-1] = 1.0                     # the wrong element: 1.5% of 2, inside a
    return x                                    # norm's 1e-3 * |2x| ~ 0.04, outside rtol 1e-2


def _gradcheck_scenarios(rng: np.random.Generator) -> List[Scenario]:
    from .probes_training import GRADCHECK_CASES
    scenarios = []
    signs = lambda shape: rng.choice([-1.0, 1.0], size=shape)       # noqa: E731
    inputs = {"right_large": lambda: rng.uniform(290.0, 310.0, 3),
              "right_huge": lambda: rng.uniform(0.9e4, 1.1e4, (10, 10)),
              "right_matmul": lambda: rng.uniform(-1.0, 1.0, (3, 3)),
              "right_zero": lambda: np.zeros(3),
              "wrong_one_in_400": lambda: _last_is_one(rng.uniform(0.9, 1.1, (20, 20))
                                                       * signs((20, 20))),
              "wrong_half_percent": lambda: rng.uniform(0.5, 1.5, 4) * signs(4)}
    for case in GRADCHECK_CASES:
        x = inputs.get(case, lambda: rng.uniform(-1.0, 1.0, 4))()
        scenarios.append(Scenario(GRADCHECK_CASES[case][0], {"case": case, "x": x}))
    return scenarios


def _numeric_variant(kind: str):
    def make(m):
        def numeric_gradient(f, x, eps=1e-6):
            x = np.array(x, dtype=np.float64)
            grad = np.zeros_like(x)
            for i in np.ndindex(x.shape):
                saved = x[i]
                x[i] = saved + eps
                up = float(f(x))
                x[i] = saved if kind == "forward" else saved - eps
                down = float(f(x))
                x[i] = saved
                grad[i] = (up - down) / (eps if kind in ("forward", "one_eps") else 2 * eps)
            return grad
        return numeric_gradient
    return make


NUMERIC_MISTAKES = [
    EngineMistake("numeric_forward", "A one-sided difference (f(x + eps) - f(x)) / eps is only "
                  "accurate to O(eps); the central (f(x + eps) - f(x - eps)) / (2 eps) to "
                  "O(eps^2).", _install("numeric_gradient", _numeric_variant("forward"))),
    EngineMistake("numeric_factor", "Off by a factor 2: from x - eps to x + eps is 2 eps, so "
                  "divide by 2 eps.", _install("numeric_gradient", _numeric_variant("one_eps"))),
]


# ------------------------------------------------------------------ 20 train
def _param_data(rng: np.random.Generator, with_none: bool) -> dict:
    shapes = [(2, 3), (3,), (3, 1)]
    grads = [rng.standard_normal(s) for s in shapes]
    if with_none:
        grads[1] = None
    return {"data": [rng.standard_normal(s) for s in shapes], "grads": grads}


def _zero_grad_scenarios(rng: np.random.Generator) -> List[Scenario]:
    return [Scenario("three parameters with gradients", _param_data(rng, False))]


def _sgd_scenarios(rng: np.random.Generator) -> List[Scenario]:
    return [Scenario("lr 0.1", {**_param_data(rng, False), "lr": 0.1}),
            Scenario("lr 0.5, one parameter without a gradient (grad None: leave it)",
                     {**_param_data(rng, True), "lr": 0.5})]


def _train_scenarios(rng: np.random.Generator) -> List[Scenario]:
    return [Scenario("100 steps of SGD, lr 0.2, on 32 points of sin(x0) cos(x1)",
                     {"steps": 100, "lr": 0.2})]


def _train_variant(kind: str):
    def make(m):
        def train_step(model, x, y, lr):
            loss = m.mse_loss(model(m.Tensor(x)), m.Tensor(y))
            if kind == "zero_after":
                m.backward(loss)
                m.zero_grad(model.parameters())
            elif kind == "step_first":
                m.sgd_step(model.parameters(), lr)
                m.zero_grad(model.parameters())
                m.backward(loss)
                return float(loss.data)
            else:                               # "no_zero"
                m.backward(loss)
            m.sgd_step(model.parameters(), lr)
            return float(loss.data)
        return train_step
    return make


def _ascent(m):
    def sgd_step(params, lr):
        for p in params:
            if p.grad is not None:
                p.data = p.data + lr * p.grad
    return sgd_step


TRAIN_MISTAKES = [
    EngineMistake("no_zero_grad", "No zero_grad before backward: .grad accumulates, so each "
                  "step's gradient lands on top of every earlier one.",
                  _install("train_step", _train_variant("no_zero"))),
    EngineMistake("zero_after_backward", "zero_grad runs between backward and the step: the "
                  "step then sees no gradient and nothing moves. Clear before backward.",
                  _install("train_step", _train_variant("zero_after"))),
    EngineMistake("step_first", "The step comes before backward: each step uses the previous "
                  "step's gradients. Order: loss, zero_grad, backward, step.",
                  _install("train_step", _train_variant("step_first"))),
]
SGD_MISTAKES = [EngineMistake("ascent", "You step uphill: gradient DEScent is p.data - lr * "
                              "p.grad.", _install("sgd_step", _ascent))]


def _train_note(values: dict) -> str:
    losses = values.get("losses")
    if not isinstance(losses, np.ndarray) or losses.size < 2:
        return ""
    return (f"your MLP's loss went from {losses[0]:.3f} to {losses[-1]:.4f} in {losses.size} "
            f"steps, on an engine you wrote")


def _d(anchor: str) -> str:
    return f"{DERIVATIONS}#{anchor}"


def _ops(name: str, shapes: List[tuple], same: bool = False, mistakes=()) -> EnginePart:
    return EnginePart(name, (name,), "engine_op", _op_scenarios(name, shapes, same), v.verify_op,
                      [m for m in mistakes])


ENGINE_EXERCISES: List[Exercise] = [
    Exercise(14, "graph", "ops that record their parents and backward_fn", _d("autograd"), [
        _ops("add", [((2, 3), (2, 3)), ((4,), (4,))], same=True),
        _ops("mul", [((2, 3), (2, 3)), ((4,), (4,))], same=True, mistakes=GRAPH_MISTAKES[:1]),
        _ops("tanh", [((2, 3),), ((5,),)], mistakes=GRAPH_MISTAKES[1:]),
        _ops("matmul", [((3, 4), (4, 2)), ((1, 3), (3, 3))]),
        _ops("sum_all", [((2, 3),), ((4,),)])], track="engine"),
    Exercise(15, "topo_sort", "the topological order backward walks", _d("autograd"), [
        EnginePart("topological_order", ("topological_order",), "topo", _topo_scenarios,
                   v.verify_topo)], track="engine"),
    Exercise(16, "backward", "the backward pass: gradients that add up", _d("autograd"), [
        EnginePart("backward", ("backward",), "run_backward", _backward_scenarios,
                   v.verify_leaf_grads, BACKWARD_MISTAKES)], track="engine"),
    Exercise(17, "unbroadcast", "the unbroadcast rule for every binary op",
             _d("broadcasting"), [
                 EnginePart("unbroadcast", ("unbroadcast",), "unbroadcast",
                            _unbroadcast_scenarios, v.verify_unbroadcast,
                            UNBROADCAST_MISTAKES)], track="engine"),
    Exercise(18, "no_grad", "a no-grad switch", _d("autograd"), [
        EnginePart("no_grad", ("is_grad_enabled", "no_grad", "result"), "no_grad",
                   _no_grad_scenarios, v.verify_no_grad)], track="engine"),
    Exercise(19, "gradcheck", "finite differences: check your own engine",
             _d("gradient-checking"), [
                 EnginePart("numeric_gradient", ("numeric_gradient",), "numeric_gradient",
                            _numeric_scenarios, v.verify_numeric, NUMERIC_MISTAKES),
                 EnginePart("gradcheck", ("gradcheck",), "gradcheck", _gradcheck_scenarios,
                            v.verify_gradcheck)], track="engine"),
    Exercise(20, "train", "train a small network on your engine", "docs/optim.md#sgd", [
        EnginePart("zero_grad", ("zero_grad",), "zero_grad", _zero_grad_scenarios,
                   v.verify_zero_grad),
        EnginePart("sgd_step", ("sgd_step",), "sgd_step", _sgd_scenarios, v.verify_sgd,
                   SGD_MISTAKES),
        EnginePart("train_step", ("train_step",), "train_step", _train_scenarios,
                   v.verify_train, TRAIN_MISTAKES, note=_train_note)], track="engine"),
]
