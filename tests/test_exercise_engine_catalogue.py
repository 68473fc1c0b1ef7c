"""The engine track's planted mistakes and right solutions that must pass.

Every entry edits one reference solution as a learner would (old text -> new text; the old
text must be in the file, so the catalogue cannot go stale silently). A wrong entry names the
part that must fail and the diagnosis kinds that count as naming the mistake; a right entry
(a negative control: micrograd's ``p.grad = 0``, allclose with sensible tolerances, ...) must
pass. Judged with ``check_module`` (the same verdict code, in this process: fast); one
mistake of each exercise also runs through the isolated ``check``.
"""
from __future__ import annotations

import sys

import pytest

from tinyattn.exercises import check, check_module, find_exercise, load_file
from tinyattn.exercises.checker import SOLUTIONS_DIR

SEED = "grads = {id(root): np.ones_like(root.data) if grad is None else np.asarray(grad)}"
LEAF_ACC = "node.grad = node_grad.copy() if node.grad is None else node.grad + node_grad"
PENDING_ACC = "grads[key] = parent_grad if key not in grads else grads[key] + parent_grad"
BACKWARD_BODY = (SEED + "\n    for node in reversed(topological_order(root)):  # every consumer "
                 "before its inputs\n")
UNBROADCAST_TAIL = ("    axes = tuple(i for i, n in enumerate(shape) if n == 1 and grad.shape[i]"
                    " != 1)\n    return grad.sum(axis=axes, keepdims=True) if axes else grad  "
                    "# its size-1 axes\n")
NO_GRAD_BODY = ("    global _grad_enabled\n    previous = _grad_enabled\n    _grad_enabled = "
                "False\n    try:\n        yield\n    finally:                            # "
                "restore even when the block raises\n        _grad_enabled = previous\n")
VERDICT = "return bool(np.all(np.abs(analytic - numeric) <= atol + rtol * np.abs(numeric)))"
STEP = ("    zero_grad(model.parameters())           # .grad accumulates: start from nothing\n"
        "    backward(loss)\n    sgd_step(model.parameters(), lr)\n")
LOSS = "    loss = mse_loss(model(Tensor(x)), Tensor(y))\n"
TOPO_RIGHT = "                    stack.append((parent, False))\n    return order\n"

# (exercise, failing part, diagnosis kinds that name it, old text, new text)
WRONG = [
    # 14: parents kept in a set drop x from x + x
    ("graph", "add", {"parents_set"}, "return Tensor(a.data + b.data, (a, b), backward_fn",
     "return Tensor(a.data + b.data, {a, b}, backward_fn"),
    ("graph", "mul", {"parents_set"}, "return Tensor(a.data * b.data, (a, b), backward_fn",
     "return Tensor(a.data * b.data, set([a, b]), backward_fn"),
    # 15: a right order returned reversed (root first)
    ("topo_sort", "topological_order", {"topo_reversed"}, TOPO_RIGHT,
     TOPO_RIGHT.replace("return order", "return order[::-1]")),
    # 16 backward
    ("backward", "backward", {"seed_shape"}, SEED,
     SEED.replace("np.ones_like(root.data)", "np.asarray(1.0)")),
    ("backward", "backward", {"seed_zero"}, SEED,
     SEED.replace("np.ones_like(root.data)", "np.zeros_like(root.data)")),
    ("backward", "backward", {"intermediate_grads_kept"}, BACKWARD_BODY + """\
        node_grad = grads.pop(id(node), None)
""", """\
root.grad = np.ones_like(root.data) if grad is None else np.asarray(grad)
    grads = {}
    for node in reversed(topological_order(root)):
        if node.parents and node.grad is not None:
            for parent, parent_grad in zip(node.parents, node.backward_fn(node.grad)):
                parent.grad = parent_grad.copy() if parent.grad is None else \\
                    parent.grad + parent_grad
    for node in []:
        node_grad = grads.pop(id(node), None)
"""),
    ("backward", "backward", {"grad_shared"}, LEAF_ACC,
     "node.grad = node_grad if node.grad is None else node.grad.__iadd__(node_grad)"),
    ("backward", "backward", {"grad_shared"}, PENDING_ACC, """\
if key not in grads:
                grads[key] = parent_grad
            else:
                grads[key] += parent_grad"""),
    ("backward", "backward", {"recursion", "backward_paths"}, BACKWARD_BODY + """\
        node_grad = grads.pop(id(node), None)
""", """\
def push(node, g):
        if not node.parents:
            node.grad = g.copy() if node.grad is None else node.grad + g
            return
        for parent, parent_grad in zip(node.parents, node.backward_fn(g)):
            push(parent, parent_grad)
    push(root, np.ones_like(root.data) if grad is None else np.asarray(grad))
    for node in []:
        node_grad = grads.pop(id(node), None)
"""),
    ("backward", "backward", {"zero_grad_skipped"}, "        if node_grad is None:\n"
     "            continue\n", "        if node_grad is None or not np.any(node_grad):\n"
     "            continue\n"),
    # 17: returns after summing the first size-1 axis
    ("unbroadcast", "unbroadcast", {"unbroadcast_some_axes"}, UNBROADCAST_TAIL, """\
    for i, n in enumerate(shape):
        if n == 1 and grad.shape[i] != 1:
            return grad.sum(axis=i, keepdims=True)
    return grad
"""),
    # 18 no_grad
    ("no_grad", "no_grad", {"no_grad_interrupt"}, NO_GRAD_BODY, NO_GRAD_BODY.replace(
        "    finally:                            # restore even when the block raises\n"
        "        _grad_enabled = previous\n",
        "    except Exception:\n        _grad_enabled = previous\n        raise\n"
        "    _grad_enabled = previous\n")),
    ("no_grad", "no_grad", {"no_grad_toggle"}, NO_GRAD_BODY, """\
    global _grad_enabled
    _grad_enabled = not _grad_enabled
    try:
        yield
    finally:
        _grad_enabled = not _grad_enabled
"""),
    # 19 gradcheck: the tolerance
    ("gradcheck", "gradcheck", {"gradcheck_no_atol"}, VERDICT,
     "return bool(np.all(np.abs(analytic - numeric) <= rtol * np.abs(numeric)))"),
    ("gradcheck", "gradcheck", {"gradcheck_norm"}, VERDICT,
     "return bool(np.linalg.norm(analytic - numeric) <= atol + rtol * "
     "np.linalg.norm(numeric))"),
    ("gradcheck", "gradcheck", {"gradcheck_tight"}, VERDICT,
     "return bool(np.allclose(analytic, numeric))"),
    ("gradcheck", "gradcheck", {"gradcheck_loose"}, VERDICT,
     "return bool(np.all(np.abs(analytic - numeric) <= atol + 1e-2 * np.abs(numeric)))"),
    # 19 numeric_gradient, each named as what it is
    ("gradcheck", "numeric_gradient", {"numeric_eps_small"}, "def numeric_gradient(f, x, "
     "eps=1e-6):", "def numeric_gradient(f, x, eps=1e-12):"),
    ("gradcheck", "numeric_gradient", {"numeric_eps_large"}, "def numeric_gradient(f, x, "
     "eps=1e-6):", "def numeric_gradient(f, x, eps=1e-2):"),
    ("gradcheck", "numeric_gradient", {"numeric_first_only"}, "    for i in np.ndindex("
     "x.shape):\n        saved", "    for i in list(np.ndindex(x.shape))[:1]:\n        saved"),
    ("gradcheck", "numeric_gradient", {"numeric_not_restored"},
     "        x[i] = saved                    # put it back before the next element\n", ""),
    # ... and a wrong numeric_gradient is not blamed on gradcheck's tolerance
    ("gradcheck", "gradcheck", {"gradcheck_numeric"}, "grad[i] = (up - down) / (2.0 * eps)",
     "grad[i] = (up - down) / eps"),
    ("gradcheck", "gradcheck", {"gradcheck_numeric"}, "def numeric_gradient(f, x, eps=1e-6):",
     "def numeric_gradient(f, x, eps=1e-12):"),
    # 20 train: parameters that never move, told apart
    ("train", "train_step", {"step_before_backward"}, STEP,
     "    zero_grad(model.parameters())\n    sgd_step(model.parameters(), lr)\n"
     "    backward(loss)\n"),
    ("train", "train_step", {"no_step"}, STEP,
     "    zero_grad(model.parameters())\n    backward(loss)\n"),
    ("train", "train_step", {"forward_no_grad"}, LOSS,
     "    with no_grad():\n        loss = mse_loss(model(Tensor(x)), Tensor(y))\n"),
    ("train", "train_step", {"step_rebinds"}, "            p.data = p.data - lr * p.grad",
     "            p = p - Tensor(lr * p.grad)"),
    ("train", "train_step", {"zero_after_backward"}, STEP,
     "    backward(loss)\n    zero_grad(model.parameters())\n    sgd_step(model.parameters(), "
     "lr)\n"),
]

# (exercise, what it is, old text, new text): right solutions written another way
RIGHT = [
    ("graph", "parents as a list", "return Tensor(a.data + b.data, (a, b), backward_fn",
     "return Tensor(a.data + b.data, [a, b], backward_fn"),
    ("topo_sort", "recursive depth-first sort that raises the recursion limit",
     "    order, visited = [], set()\n    stack = [(root, False)]",
     "    import sys\n    sys.setrecursionlimit(max(sys.getrecursionlimit(), 20000))\n"
     "    order, visited = [], set()\n\n    def visit(node):\n        if id(node) in visited:\n"
     "            return\n        visited.add(id(node))\n        for parent in node.parents:\n"
     "            visit(parent)\n        order.append(node)\n    visit(root)\n    return order\n"
     "    stack = [(root, False)]"),
    ("backward", "in-place += after a first copy", LEAF_ACC,
     "node.grad = node_grad.copy() if node.grad is None else node.grad.__iadd__(node_grad)"),
    ("backward", "pending gradients added in place into a copy", PENDING_ACC, """\
if key not in grads:
                grads[key] = np.array(parent_grad, dtype=np.float64)
            else:
                grads[key] += parent_grad"""),
    ("unbroadcast", "a loop over axes that sums every one", UNBROADCAST_TAIL, """\
    for i, n in enumerate(shape):
        if n == 1 and grad.shape[i] != 1:
            grad = grad.sum(axis=i, keepdims=True)
    return grad
"""),
    ("no_grad", "a class with __enter__ and __exit__", "@contextlib.contextmanager\n"
     "def no_grad():", "class no_grad:\n    def __enter__(self):\n        global _grad_enabled\n"
     "        self.previous = _grad_enabled\n        _grad_enabled = False\n\n"
     "    def __exit__(self, *exc):\n        global _grad_enabled\n"
     "        _grad_enabled = self.previous\n        return False\n\n\n"
     "@contextlib.contextmanager\ndef no_grad_generator():"),
    ("gradcheck", "np.allclose with rtol=1e-3, atol=1e-5", VERDICT,
     "return bool(np.allclose(analytic, numeric, rtol=1e-3, atol=1e-5))"),
    ("gradcheck", "rtol 1e-4, atol 1e-8", VERDICT,
     "return bool(np.all(np.abs(analytic - numeric) <= 1e-8 + 1e-4 * np.abs(numeric)))"),
    ("gradcheck", "a central difference with eps 1e-5", "def numeric_gradient(f, x, eps=1e-6):",
     "def numeric_gradient(f, x, eps=1e-5):"),
    ("train", "micrograd's zero_grad: p.grad = 0", "    for p in params:\n        p.grad = None",
     "    for p in params:\n        p.grad = 0"),
    ("train", "zero_grad with zeros arrays", "    for p in params:\n        p.grad = None",
     "    for p in params:\n        p.grad = np.zeros_like(p.data)"),
    ("train", "loss.backward() and an inline step", STEP,
     "    for p in model.parameters():\n        p.grad = None\n    loss.backward()\n"
     "    for p in model.parameters():\n        p.data -= lr * p.grad\n"),
]


def _planted(name: str, old: str, new: str, tmp_path, tag: str):
    exercise = find_exercise(name)
    source = (SOLUTIONS_DIR / exercise.filename).read_text()
    assert source.count(old) >= 1, f"{exercise.filename}: {old!r} is not in the solution"
    folder = tmp_path / tag
    folder.mkdir()
    (folder / exercise.filename).write_text(source.replace(old, new, 1))
    return exercise, folder


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
@pytest.mark.parametrize("index", range(len(WRONG)),
                         ids=[f"{w[0]}-{w[1]}-{sorted(w[2])[0]}" for w in WRONG])
def test_a_wrong_engine_never_passes_and_its_mistake_is_named(index, tmp_path):
    name, part, kinds, old, new = WRONG[index]
    exercise, folder = _planted(name, old, new, tmp_path, "wrong")
    result = check_module(exercise, load_file(folder / exercise.filename))
    assert not result.passed, f"a wrong engine PASSED:\n{result.text}"
    failed = {p.part: p for p in result.parts if not p.passed}
    assert part in failed, result.text
    assert failed[part].diagnosis.kind in kinds, failed[part].text


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
@pytest.mark.parametrize("index", range(len(RIGHT)), ids=[r[1] for r in RIGHT])
def test_a_right_engine_written_another_way_passes(index, tmp_path):
    name, what, old, new = RIGHT[index]
    exercise, folder = _planted(name, old, new, tmp_path, "right")
    limit = sys.getrecursionlimit()             # the recursive sort raises it: in THIS
    try:                                        # process (check_module), so put it back
        result = check_module(exercise, load_file(folder / exercise.filename))
    finally:
        sys.setrecursionlimit(limit)
    assert result.passed, f"a right solution ({what}) was REJECTED:\n{result.text}"


@pytest.mark.parametrize("name", ["backward", "no_grad", "gradcheck"])
def test_the_isolated_check_agrees(name, tmp_path):
    """The subprocess path gives the same verdict (KeyboardInterrupt, RecursionError there)."""
    entry = next(w for w in WRONG if w[0] == name and w[1] != "gradcheck"
                 and w[2] & {"recursion", "backward_paths", "no_grad_interrupt",
                             "numeric_eps_small"})
    exercise, folder = _planted(entry[0], entry[3], entry[4], tmp_path, "isolated")
    result = check(exercise, folder, timeout=60)
    failed = {p.part: p for p in result.parts if not p.passed}
    assert entry[1] in failed and failed[entry[1]].diagnosis.kind in entry[2], result.text


def _text(name: str, old: str, new: str, tmp_path) -> str:
    exercise, folder = _planted(name, old, new, tmp_path, "message")
    return " ".join(check_module(exercise, load_file(folder / exercise.filename)).text.split())


def test_a_transposed_linear_weight_gradient_is_told_g_transpose_x(tmp_path):
    text = _text("linear", "dweight = g2.T @ x2", "dweight = x2.T @ g2", tmp_path)
    assert "dW = G^T @ X" in text and "db = a^T @ g" not in text, text


def test_a_scalar_output_is_written_out_not_out_0(tmp_path):
    text = _text("log_softmax_nll", "dlogp[np.arange(n), target] = -grad / n",
                 "dlogp[np.arange(n), target] = -grad / n * 1.3", tmp_path)
    assert "d out / d logp[" in text and "out[0]" not in text, text


def test_the_train_solution_says_how_many_steps_the_checker_runs():
    from tinyattn.exercises.probes_training import train_step  # noqa: F401 (the probe)
    from tinyattn.exercises.engine_track import ENGINE_EXERCISES
    steps = next(p for p in ENGINE_EXERCISES[-1].parts if p.name == "train_step").scenarios(
        __import__("numpy").random.default_rng(0))[0].data["steps"]
    assert f"runs {steps} steps" in (SOLUTIONS_DIR / "20_train.py").read_text()


def test_the_random_scenarios_cover_what_the_issue_lists():
    """Seeded (the same every run) and covering: shared subexpressions, a value used twice,
    two leaves added, a leaf as root, a deep chain, several size-1 axes, interrupted and
    nested no_grad, zero and large seeds, backward twice on one graph."""
    import numpy as np
    from tinyattn.exercises.engine_track import ENGINE_EXERCISES
    parts = {p.name: (ex, p) for ex in ENGINE_EXERCISES for p in ex.parts}

    def scenarios(name):
        ex, part = parts[name]
        return part.scenarios(np.random.default_rng(ex.number * 100))
    backward = [s.data for s in scenarios("backward")]
    assert [s.label for s in scenarios("backward")] == [s.label for s in scenarios("backward")]
    graphs = [d["nodes"] for d in backward]
    assert any(len(g) == 1 for g in graphs)                                  # leaf as root
    assert any(g == [("leaf",), ("leaf",), ("add", 0, 1)] for g in graphs)   # two leaves added
    assert any(len(g) > 3000 for g in graphs)                                # deep chain
    assert any(spec[1:] and len(set(spec[1:])) < len(spec[1:]) for g in graphs for spec in g)
    readers = [sum(i in spec[1:] for spec in g) for g in graphs
               for i in range(len(g))]
    assert max(readers) >= 2                                                 # shared
    grads = [d["grad"] for d in backward if d["grad"] is not None]
    assert any(not np.any(g) for g in grads) and any(np.abs(g).max() > 1e6 for g in grads)
    assert any(d.get("same_graph") for d in backward)
    shapes = [d["shape"] for d in (s.data for s in scenarios("unbroadcast"))
              if d["kind"] == "direct"]
    assert any(sum(n == 1 for n in shape) >= 2 for shape in shapes)
    kinds = {s.data["kind"] for s in scenarios("no_grad")}
    assert {"interrupt", "nested", "deep", "program"} <= kinds
