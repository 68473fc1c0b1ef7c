"""Name the mistake behind a wrong engine-track result, when it can be recognised.

engine_verify.py decides right or wrong; these helpers, called once a value is wrong, look
for the story: a wrong seed, gradients written into shared arrays, a second backward that
counted stale gradients, a list in reverse, a numeric gradient with a bad step, a training
step in the wrong place. Each returns a Diagnosis or None; none of them judges on its own.
"""
from __future__ import annotations

from typing import Any, Dict, List, Optional

import numpy as np

from .course import Diagnosis, Scenario

__all__ = ["backward_story", "show", "topo_story", "numeric_story", "train_story"]

Values = Dict[str, Any]


def show(value: Any) -> str:
    """A short text of a value for a message: the numbers of a small array."""
    if isinstance(value, np.ndarray):
        text = np.array2string(value, precision=5, threshold=12, max_line_width=1000)
        return " ".join(text.split()) + ("" if value.ndim else " (0-d)")
    return str(value)


# ------------------------------------------------------------------ 16 backward
def backward_story(scenario: Scenario, got: Values, want: Values) -> Optional[Diagnosis]:
    data = scenario.data
    keys = [k for k in sorted(want) if k.startswith("grad_") and isinstance(want[k],
                                                                              np.ndarray)]
    if not isinstance(got.get("most_calls"), int) or isinstance(got.get("most_calls"), bool):
        return None
    if got["most_calls"] > want["most_calls"]:
        return Diagnosis("backward_paths", (
            f"A node's backward_fn ran {got['most_calls']} times in one backward (once is "
            f"enough): your pass follows every PATH from the root (recursion along parents); "
            f"a ladder of 30 diamonds has 2^30 of them. Walk reversed(topological_order"
            f"(root)) and call each backward_fn once, with the sum of what reached the node."))
    seed = data.get("grad")
    if isinstance(seed, np.ndarray) and not np.any(seed) and any(
            got.get(k) == "None" for k in keys):
        return Diagnosis("zero_grad_skipped", (
            "With a zero grad the leaves get no .grad at all: a zero gradient is still a "
            "gradient, and PyTorch stores zeros. Do not skip a node because its gradient "
            "is 0 (test `is None`, never the values)."))
    if data.get("grad") is None:
        shapes = [k for k in keys if isinstance(got.get(k), np.ndarray)
                  and got[k].shape != want[k].shape]
        if shapes:
            k = shapes[0]
            return Diagnosis("seed_shape", (
                f"With grad=None the seed must have root's shape: np.ones_like(root.data). "
                f"Yours has another shape (leaf #{k[5:]}'s .grad came out "
                f"{got[k].shape}, not {want[k].shape}); a 0-d 1.0 broadcasts away inside "
                f"most graphs, but not when the root is a leaf or an add."))
        zeros = [k for k in keys if isinstance(got.get(k), np.ndarray) and got[k].shape ==
                 want[k].shape and not np.any(got[k])]
        if keys and len(zeros) == len(keys) and any(np.any(want[k]) for k in keys):
            return Diagnosis("seed_zero", (
                "Every leaf got a zero gradient: with grad=None the seed is d root / d root "
                "= 1 for every element, np.ones_like(root.data), not zeros."))
    if got.get("seed_unchanged") is False or got.get("aliased") is True or (
            got.get("returned_unchanged") is False and want.get("returned_unchanged")):
        whose = ("the grad you were passed (the caller's array)" if got.get(
            "seed_unchanged") is False else "an array shared with another gradient")
        return Diagnosis("grad_shared", (
            f"Your backward wrote in place (+=) into {whose}: add's backward_fn returns the "
            f"SAME array for both parents, and the caller's grad is theirs, so += changes "
            f"every name for that array. Store a copy the first time (g.copy()), or add "
            f"with x = x + g, which makes a new array."))
    if data.get("same_graph"):
        first_right = all(isinstance(got.get("first_" + k), np.ndarray) and
                          got["first_" + k].shape == want["first_" + k].shape and
                          np.allclose(got["first_" + k], want["first_" + k], rtol=1e-9,
                                      atol=0) for k in keys)
        if first_right:
            return Diagnosis("intermediate_grads_kept", (
                "The first backward is right, the second on the SAME graph is not (PyTorch "
                "adds the same gradient again: 2x in all): something of the first call stayed "
                "behind, e.g. .grad kept on intermediate tensors and pushed again (3x). Keep "
                "the gradients on their way in a dict local to backward; only leaves keep "
                ".grad."))
    return None


# ------------------------------------------------------------------ 15 topological sort
def _valid(nodes: List[tuple], order: List[int]) -> bool:
    position = {i: k for k, i in enumerate(order)}
    return all(position[p] < position[i] for i in order for p in nodes[i][1:])


def _breadth_first(nodes: List[tuple], root: int, flip: bool) -> List[int]:
    order, seen, queue = [], set(), [root]
    while queue:
        i = queue.pop(0)
        if i not in seen:
            seen.add(i)
            order.append(i)
            parents = list(nodes[i][1:])
            queue.extend(parents[::-1] if flip else parents)
    return order[::-1]


def topo_story(nodes: List[tuple], root: int, order: List[int]) -> Optional[Diagnosis]:
    if _valid(nodes, order[::-1]):
        return Diagnosis("topo_reversed", (
            "Your list is a topological order backwards: root first. topological_order "
            "returns inputs first and root LAST (every tensor after its parents); backward "
            "then walks reversed(...). Return the list without reversing it."))
    if order in (_breadth_first(nodes, root, False), _breadth_first(nodes, root, True)):
        return Diagnosis("topo_bfs", (
            "Your order is breadth-first from the root, reversed: that is not a topological "
            "order when paths have unequal lengths (a node reached early by a short path is "
            "listed before a consumer on a longer one). Append a node only after all of its "
            "parents (depth-first post-order)."))
    return None


# ------------------------------------------------------------------ 19 numeric_gradient
def _central(f, x, eps, only_first=False, restore=True, one_sided=False, divide=2.0):
    x = np.array(x, dtype=np.float64)
    grad = np.zeros_like(x)
    for n, i in enumerate(np.ndindex(x.shape)):
        if only_first and n:
            break
        saved = x[i]
        x[i] = saved + eps
        up = float(f(x))
        x[i] = saved if one_sided else saved - eps
        down = float(f(x))
        if restore:
            x[i] = saved
        grad[i] = (up - down) / (eps if one_sided else divide * eps)
    return grad


_NUMERIC_STORIES = [
    ("numeric_first_only", dict(only_first=True), (
        "Only the first element of your numeric gradient is filled in: loop over EVERY "
        "element, for i in np.ndindex(x.shape).")),
    ("numeric_not_restored", dict(restore=False), (
        "An element is not restored: after f(x - eps e_i) you leave x[i] at x_i - eps, so "
        "every later element's difference is taken at a moved point. Put it back, x[i] = "
        "saved, before the next element.")),
    ("numeric_forward", dict(one_sided=True), (
        "A one-sided difference (f(x + eps) - f(x)) / eps is only accurate to O(eps); the "
        "central (f(x + eps) - f(x - eps)) / (2 eps) to O(eps^2).")),
    ("numeric_factor", dict(divide=1.0), (
        "Off by a factor 2: from x - eps to x + eps is 2 eps, so divide by 2 eps, not eps.")),
]


def numeric_story(function: Any, x: np.ndarray, got: np.ndarray) -> Optional[Diagnosis]:
    """Which wrong numeric gradient gives exactly ``got`` for f at x, if any."""
    def matches(candidate: np.ndarray) -> bool:
        scale = max(float(np.abs(candidate).max(initial=0.0)), 1e-300)
        return candidate.shape == got.shape and \
            float(np.abs(candidate - got).max(initial=0.0)) <= 1e-9 * scale
    right = _central(function, x, 1e-6)
    for kind, options, message in _NUMERIC_STORIES:
        candidate = _central(function, x, 1e-6, **options)
        if matches(candidate) and not matches(right):
            return Diagnosis(kind, message)
    for eps in (1e-1, 1e-2, 1e-3, 1e-4):
        if matches(_central(function, x, eps)):
            return Diagnosis("numeric_eps_large", (
                f"Your numeric gradient is a central difference with step eps = {eps:g}: "
                f"its error grows like eps^2 (truncation), here far above the 1e-8 this "
                f"check allows. Use eps = 1e-6 (examples/eps_sweep.py shows why)."))
    for eps in (1e-9, 1e-10, 1e-11, 1e-12, 1e-13, 1e-14):
        if matches(_central(function, x, eps)):
            return Diagnosis("numeric_eps_small", (
                f"Your numeric gradient is a central difference with step eps = {eps:g}: "
                f"f(x + eps) and f(x - eps) then agree in nearly all their 16 digits, and "
                f"round-off (about 1e-16 |f| / eps) swamps the difference. Use eps = 1e-6 "
                f"(examples/eps_sweep.py shows why)."))
    return None


# ------------------------------------------------------------------ 20 train
def train_story(got: Values, want: Values) -> Optional[Diagnosis]:
    events = got.get("first_step")
    if not isinstance(events, list) or not all(isinstance(e, str) for e in events):
        return None
    def first(prefix: str) -> int:
        return next((k for k, e in enumerate(events) if e.startswith(prefix)), -1)
    backward, step, zero = first("backward"), first("sgd_step"), first("zero_grad")
    if "backward of a loss with no graph" in events:
        return Diagnosis("forward_no_grad", (
            "The loss has no graph: the forward ran inside no_grad() (or on .data), so "
            "backward reaches no parameter and nothing moves. Compute the loss with grad "
            "enabled; only the update belongs in no_grad."))
    if step >= 0 and backward >= 0 and step < backward:
        return Diagnosis("step_before_backward", (
            "Your step comes before backward: the first step sees no gradient (and each later "
            "one the previous step's). Order: loss, zero_grad, backward, step."))
    if zero >= 0 and backward >= 0 and step >= 0 and backward < zero < step:
        return Diagnosis("zero_after_backward", (
            "zero_grad runs between backward and the step: the step then sees no gradient "
            "and nothing moves. Clear before backward."))
    if step >= 0 and "with gradients, moved nothing" in events[step]:
        return Diagnosis("step_rebinds", (
            "sgd_step ran with gradients present but changed no parameter the model holds: "
            "it rebinds a name (p = p - lr * p.grad, or a new Tensor) instead of assigning "
            "p.data = p.data - lr * p.grad."))
    if step < 0 and got.get("moved") is False and want.get("moved") is True:
        return Diagnosis("no_step", (
            "Your train_step never changes the parameters: there is no step. After "
            "backward, call sgd_step(model.parameters(), lr)."))
    return None
