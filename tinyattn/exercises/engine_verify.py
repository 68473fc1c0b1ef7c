"""Compare what a learner's engine did with what the reference engine did, and say why not.

Every ``verify_*`` takes (scenario, got, want): ``got`` the learner's probe values as they came
back from the child process (already decoded, but of any type: nothing is trusted), ``want``
the reference's, computed in the checker's own process. It returns None when ``got`` is
right, else a ``Diagnosis``; kind "wrong" means "no specific mistake recognised" (the checker
then tries the part's known mistakes).
"""
from __future__ import annotations

from typing import Any, Dict, List, Optional, Set

import numpy as np

from .course import Diagnosis, Scenario
from .diagnose import left_aligned, misaligned_message
from .engine_random import partial_unbroadcasts
from .engine_explain import backward_story, numeric_story, show, topo_story, train_story

__all__ = ["same", "same_values", "verify_op", "verify_topo", "verify_leaf_grads",
           "verify_unbroadcast", "verify_no_grad", "verify_numeric", "verify_gradcheck",
           "verify_zero_grad", "verify_sgd", "verify_train", "array_problem"]

Values = Dict[str, Any]


def _close(got: np.ndarray, want: np.ndarray, rtol: float) -> bool:
    scale = max(float(np.linalg.norm(want)), float(np.linalg.norm(got)))
    return bool(np.isfinite(got).all()) and \
        float(np.linalg.norm(got - want)) <= rtol * scale + 1e-12


def same(got: Any, want: Any, rtol: float = 1e-9) -> bool:
    """Equal values: arrays of the same shape and dtype, close; anything else identical."""
    if isinstance(want, np.ndarray):
        return isinstance(got, np.ndarray) and got.shape == want.shape \
            and got.dtype == want.dtype and _close(got, want, rtol)
    return type(got) is type(want) and got == want


def same_values(got: Values, want: Values, rtol: float = 1e-9) -> bool:
    return isinstance(got, dict) and set(got) == set(want) and \
        all(same(got[k], want[k], rtol) for k in want)


def array_problem(got: Any, want: np.ndarray, what: str) -> Optional[str]:
    """Why ``got`` cannot be compared with ``want`` (not an array, shape, dtype), or None."""
    if isinstance(got, str):
        return f"{what} is {got}, not an array"
    if not isinstance(got, np.ndarray):
        return f"{what} is not an array"
    if got.shape != want.shape:
        return (f"{what} has shape {got.shape}, but it must have shape {want.shape} (a "
                f"gradient always has the shape of what it is the gradient of)")
    if got.dtype != want.dtype:
        return (f"{what} is {got.dtype}; the engine works in float64 (finite differences "
                f"and these comparisons need its 16 digits)")
    return None


def _wrong(message: str) -> Diagnosis:
    return Diagnosis("wrong", message)


# ------------------------------------------------------------------ 14 graph
def _grad_diagnosis(got: np.ndarray, want: np.ndarray, ones: Any, which: str) -> Diagnosis:
    if isinstance(ones, np.ndarray) and ones.shape == got.shape and _close(got, ones, 1e-9) \
            and not _close(want, ones, 1e-9):
        return Diagnosis("ignores_grad", (
            f"backward_fn ignores grad: the gradient for {which} is what it would be if "
            f"grad were all ones. Multiply by grad, the gradient that reached out (chain "
            f"rule): an op sits in the middle of a graph, where grad is anything."))
    if _close(got, -want, 1e-9):
        return Diagnosis("sign", f"The gradient for {which} has the wrong sign.")
    return _wrong(f"The gradient backward_fn returns for {which} is wrong: yours {show(got)}, "
                  f"right {show(want)}.")


def verify_op(scenario: Scenario, got: Values, want: Values) -> Optional[Diagnosis]:
    op = scenario.data["op"]
    returned = got.get("returned")
    if returned != "Tensor":
        return Diagnosis("not_tensor", (
            f"{op} returned {returned if isinstance(returned, str) else 'something else'}; "
            f"it must return a Tensor(data, parents, backward_fn, op), so that backward can "
            f"walk back through it."))
    problem = array_problem(got.get("data"), want["data"], "out.data")
    if problem or not same(got["data"], want["data"]):
        return Diagnosis("data", problem or f"out.data is wrong: it is not {op}'s forward value.")
    parents, expected = got.get("parents"), want["parents"]
    if parents != expected:
        count = len(expected)
        names = "(a, b)" if count == 2 else "(a,)"
        if parents == []:
            return Diagnosis("parents_missing", (
                f"out.parents is empty: {op} did not record its inputs, so backward could "
                f"never reach them. Pass parents={names}."))
        if isinstance(parents, list) and set(parents) == set(expected) and \
                len(parents) < len(expected):
            return Diagnosis("parents_set", (
                f"out.parents lost a duplicate: for {op}(x, x) the parents are (x, x), two "
                f"entries, and backward sends a gradient along each. A set keeps x once (and "
                f"has no order): keep a tuple, parents=(a, b)."))
        if isinstance(parents, list) and sorted(parents) == sorted(expected):
            return Diagnosis("parents_order", (
                "out.parents is (b, a): backward_fn's gradients are paired with the parents "
                "by position, so keep the inputs' order in a tuple, (a, b) (a set has no "
                "order)."))
        return Diagnosis("parents", (
            f"out.parents must be the input tensors themselves, {names}: yours holds "
            f"something else (their .data, copies, or the wrong number of them)."))
    if got.get("has_backward_fn") is not True:
        return Diagnosis("no_backward_fn", (
            "out.backward_fn is not set (or not callable): backward needs it to turn the "
            "gradient of out into gradients of the parents."))
    if "backward_returned" in got:
        return Diagnosis("backward_tuple", (
            f"backward_fn returned {got['backward_returned']}, not a tuple: return one "
            f"gradient per parent as a tuple, (da, db), or (da,) for one parent (note the "
            f"comma)."))
    if got.get("grads_count") != want["grads_count"]:
        return Diagnosis("count", (
            f"backward_fn returned {got.get('grads_count')} gradient(s) for "
            f"{want['grads_count']} parent(s): one per parent, in the parents' order."))
    for i in range(want["grads_count"]):
        which = "a" if i == 0 else "b"
        key = f"grads_{i}"
        problem = array_problem(got.get(key), want[key], f"the gradient for {which}")
        if problem:
            return Diagnosis("shape", problem)
        if not same(got[key], want[key]):
            return _grad_diagnosis(got[key], want[key], got.get(f"ones_{i}"), which)
    return None


# ------------------------------------------------------------------ 15 topological sort
def _reachable(nodes: List[tuple], root: int) -> Set[int]:
    seen, stack = set(), [root]
    while stack:
        i = stack.pop()
        if i not in seen:
            seen.add(i)
            stack.extend(nodes[i][1:])
    return seen


def _name(nodes: List[tuple], i: int) -> str:
    return f"#{i} ({nodes[i][0]})"


def verify_topo(scenario: Scenario, got: Values, want: Values) -> Optional[Diagnosis]:
    nodes, root = scenario.data["nodes"], scenario.data["root"]
    order = got.get("order")
    if not isinstance(order, list) or not all(type(i) is int for i in order):
        return _wrong("topological_order must return a list of tensors.")
    if -1 in order:
        return Diagnosis("topo_foreign", (
            "Your order holds things that are not tensors of this graph (their .data, "
            "copies, or tuples?): return the Tensor objects themselves."))
    counts: Dict[int, int] = {}
    for i in order:
        counts[i] = counts.get(i, 0) + 1
    twice = [i for i, n in counts.items() if n > 1]
    if twice:
        return Diagnosis("topo_duplicate", (
            f"Tensor {_name(nodes, twice[0])} appears {counts[twice[0]]} times: it is reached "
            f"along several paths (a value used twice, a diamond). Keep a set of the nodes "
            f"you have seen (id(node)) and add each one once."))
    missing = sorted(_reachable(nodes, root) - set(order))
    if missing:
        return Diagnosis("topo_missing", (
            f"Your order misses tensor {_name(nodes, missing[0])}, which root was computed "
            f"from: follow .parents all the way to the leaves (root included)."))
    position = {i: k for k, i in enumerate(order)}
    for i in order:
        for parent in nodes[i][1:]:
            if position[parent] > position[i]:
                return topo_story(nodes, root, order) or Diagnosis("topo_order", (
                    f"Your sort visits a node before all its consumers: walking your list "
                    f"from the end, as backward does, {_name(nodes, parent)} comes before "
                    f"{_name(nodes, i)}, which uses it, so {_name(nodes, parent)} would pass "
                    f"its gradient on before {_name(nodes, i)} has added its share. Append a "
                    f"node only after all of its parents (depth-first post-order), not when "
                    f"it is first reached (pre-order), reversed or not."))
    return None


# ------------------------------------------------------------------ 16, 17 backward
def verify_leaf_grads(scenario: Scenario, got: Values, want: Values) -> Optional[Diagnosis]:
    diagnosis = _leaf_grads_diagnosis(scenario, got, want)
    calls, most = got.get("most_calls"), want.get("most_calls")
    if diagnosis is None and not (type(calls) is int and type(most) is int and calls > most):
        return None
    return backward_story(scenario, got, want) or diagnosis


def _leaf_grads_diagnosis(scenario: Scenario, got: Values, want: Values
                          ) -> Optional[Diagnosis]:
    keys = [k for k in sorted(want) if k.startswith("grad_") or k.startswith("first_grad_")]
    for key in sorted(keys, key=lambda k: not k.startswith("first_")):
        leaf = key.split("_")[-1]
        if isinstance(want[key], str):          # the reference leaves it without a gradient
            if not same(got.get(key), want[key]):
                return _wrong(f"leaf #{leaf} should get no gradient here (.grad stays None).")
            continue
        if same(got.get(key), "None"):
            return Diagnosis("no_grad_stored", (
                f"leaf #{leaf} has no gradient (.grad is None). Either the leaves never keep "
                f"what reaches them (a leaf, a tensor with no parents, adds it to .grad), or "
                f"you walk the order from the start, so a leaf's turn comes before anything "
                f"has reached it: walk reversed(topological_order(root))."))
        problem = array_problem(got.get(key), want[key], f"leaf #{leaf}'s .grad")
        if problem:
            return Diagnosis("shape", problem)
        if not same(got[key], want[key]):
            when = " after the first backward" if key.startswith("first_") else ""
            return _wrong(f"leaf #{leaf}'s .grad is wrong{when}: yours {show(got[key])}, "
                          f"right {show(want[key])}.")
    return None


def verify_unbroadcast(scenario: Scenario, got: Values, want: Values) -> Optional[Diagnosis]:
    if scenario.data["kind"] != "direct":
        return verify_leaf_grads(scenario, got, want)
    shape = tuple(scenario.data["shape"])
    out = got.get("out")
    if isinstance(out, np.ndarray) and not same(out, want["out"]):
        for partial, story in partial_unbroadcasts(scenario.data["grad"], shape):
            if partial.shape == out.shape and _close(out, partial, 1e-9):
                return Diagnosis("unbroadcast_some_axes", (
                    f"unbroadcast(grad of shape {scenario.data['grad'].shape}, {shape}): "
                    f"{story}. Every axis where the input has size 1 (and the output not) "
                    f"must be summed, not only the first: collect all of them, then sum "
                    f"once (or keep looping; do not return inside the loop)."))
    grad = scenario.data["grad"]
    if isinstance(out, np.ndarray) and not same(out, want["out"]) and any(
            out.shape == left.shape and (out.shape != want["out"].shape or _close(
                out, left, 1e-9)) for left in left_aligned(grad, shape)):
        return Diagnosis("unbroadcast_left", f"unbroadcast(grad of shape {grad.shape}, "
                                             f"{shape}): " + misaligned_message(shape,
                                                                                grad.shape))
    problem = array_problem(got.get("out"), want["out"], f"unbroadcast(grad, {shape})")
    if problem:
        return Diagnosis("shape", problem)
    if not same(got["out"], want["out"]):
        return _wrong(f"unbroadcast(grad of shape {scenario.data['grad'].shape}, {shape}) "
                      f"has the right shape but the wrong values: which axes do you sum? "
                      f"Yours {show(got['out'])}, right {show(want['out'])}.")
    return None


# ------------------------------------------------------------------ 18 no_grad
_NO_GRAD_CHECKS = [
    ("enabled", True, "is_grad_enabled() is False before any no_grad block: the switch "
                      "starts on."),
    ("recorded", True, "An op outside no_grad() recorded nothing: result() must return a "
                       "Tensor with parents and backward_fn when grad is enabled."),
    ("enabled_inside", False, "is_grad_enabled() is still True inside no_grad(): the block "
                              "must turn the switch off."),
    ("recorded", False, "An op inside no_grad() still recorded its parents: result() must "
                        "return a plain Tensor(data, op=op) when grad is disabled."),
    ("propagated", True, "Your no_grad() swallows an exception raised inside the block: let "
                         "it propagate (do not catch it; a generator-based context manager "
                         "gets it back at its yield)."),
    ("enabled_after", True, "After the no_grad() block the switch is still off (after an "
                            "exception inside it, in this scenario): restore the previous "
                            "value in a finally clause."),
    ("recorded_after", True, "After a no_grad() block that raised, ops record nothing any "
                             "more: restore the switch in a finally clause."),
    ("enabled_after_inner", False, "Nested blocks: leaving an inner no_grad() turned grad "
                                   "back on inside the outer one. Save the previous value on "
                                   "entry and restore it, instead of setting True."),
    ("recorded_between", False, "Nested blocks: after an inner no_grad() ended, ops inside "
                                "the outer one recorded again. Restore the previous value, "
                                "not True."),
    ("enabled_after_outer", True, "After nested no_grad() blocks, grad stays off: each block "
                                  "must restore the value it found."),
    ("propagated_interrupt", True, "Your no_grad() swallows a KeyboardInterrupt (Ctrl-C) "
                                   "raised inside the block: let it propagate."),
    ("enabled_after_interrupt", True, "After a KeyboardInterrupt (Ctrl-C) inside the block "
                                      "the switch stayed off: `except Exception` does not "
                                      "catch KeyboardInterrupt (a BaseException). Restore the "
                                      "previous value in `finally`, which runs however the "
                                      "block ends."),
    ("recorded_after_interrupt", True, "After a KeyboardInterrupt inside the block ops record "
                                       "nothing any more: restore the switch in `finally`."),
]
_NO_GRAD_KINDS = {"enabled_after_interrupt": "no_grad_interrupt",
                  "recorded_after_interrupt": "no_grad_interrupt",
                  "enabled_inside_inner": "no_grad_toggle",
                  "enabled_inside_innermost": "no_grad_toggle"}
_TOGGLE = ("Inside a nested no_grad() block grad came back on: your block flips the switch "
           "(enabled = not enabled) instead of turning it off. Set it to False on entry and "
           "restore the value saved on entry when the block ends.")


def verify_no_grad(scenario: Scenario, got: Values, want: Values) -> Optional[Diagnosis]:
    checks = _NO_GRAD_CHECKS + [(key, False, _TOGGLE) for key in (
        "enabled_inside_inner", "enabled_inside_innermost")] + [
        ("enabled_after_innermost", False, _NO_GRAD_CHECKS[7][2])]
    for key, value, message in checks:
        if key in want and want[key] is value and got.get(key) is not value:
            return Diagnosis(_NO_GRAD_KINDS.get(key, "no_grad"), message)
    if "trace" in want:
        return _trace_diagnosis(got.get("trace"), want["trace"])
    for key in ("data", "grad"):
        if key in want and not same(got.get(key), want[key]):
            return _wrong(f"The computed {key} is wrong.")
    return None


def _trace_diagnosis(got: Any, want: List[str]) -> Optional[Diagnosis]:
    if got == want:
        return None
    if not isinstance(got, list) or len(got) != len(want):
        return _wrong("Your no_grad() changed how the checker's nested blocks ran (an "
                      "exception swallowed?).")
    k = next(i for i, (a, b) in enumerate(zip(got, want)) if a != b)
    where, right = want[k].rsplit(": ", 1)
    kind = "no_grad_interrupt" if "KeyboardInterrupt" in where else \
        "no_grad_toggle" if "nested" in where and right == "off" else "no_grad"
    return Diagnosis(kind, (
        f"Nested no_grad() blocks, check {k + 1}: {where}, grad must be {right} but yours "
        f"is {got[k].rsplit(': ', 1)[-1]}. Each block sets the switch off on entry and "
        f"restores the value it found, in `finally`."))


# ------------------------------------------------------------------ 19 gradcheck
def verify_numeric(scenario: Scenario, got: Values, want: Values) -> Optional[Diagnosis]:
    if got.get("x_unchanged") is not True:
        return Diagnosis("numeric_changes_x", (
            "numeric_gradient changed the x it was given: perturb a copy (np.array(x, "
            "dtype=np.float64)), or put each element back after perturbing it."))
    if got.get("shapes_ok") is not True:
        return Diagnosis("numeric_shape", "f was called with an array of another shape than x.")
    problem = array_problem(got.get("grad"), want["grad"], "numeric_gradient's result")
    if problem:
        return Diagnosis("shape", problem)
    if not same(got["grad"], want["grad"], rtol=1e-8):
        from .probes_training import FUNCTIONS
        story = numeric_story(FUNCTIONS[scenario.data["function"]], scenario.data["x"],
                              got["grad"])
        return story or _wrong(
            f"numeric_gradient is not the central difference (f(x + eps e_i) - f(x - eps "
            f"e_i)) / (2 eps) of each element, eps = 1e-6. At x = {show(scenario.data['x'])}"
            f" yours is {show(got['grad'])}, the right one {show(want['grad'])}.")
    return None


def verify_gradcheck(scenario: Scenario, got: Values, want: Values) -> Optional[Diagnosis]:
    from .probes_training import GRADCHECK_CASES
    what = GRADCHECK_CASES[scenario.data["case"]][0]
    verdict = got.get("verdict")
    if not isinstance(verdict, bool):
        return Diagnosis("gradcheck_type", f"gradcheck must return True or False, not {verdict}.")
    if verdict == want["verdict"]:
        return None
    numeric = got.get("numeric")
    if isinstance(numeric, str) or (isinstance(numeric, np.ndarray) and (
            numeric.shape != want["numeric"].shape or not np.all(
                np.abs(numeric - want["numeric"]) <= 1e-6 + 1e-4 * np.abs(want["numeric"])))):
        return Diagnosis("gradcheck_numeric", (
            f"Your gradcheck's verdict is wrong ({what}), and so is the numeric gradient it "
            f"rests on: numeric_gradient gives {show(numeric)} where finite differences give "
            f"{show(want['numeric'])}. Fix numeric_gradient first (its own part says how); "
            f"the tolerance may be fine."))
    story = _GRADCHECK_STORIES.get(scenario.data["case"])
    if story:
        verdict = "rejects a right" if want["verdict"] else "passes a wrong"
        return Diagnosis(story[0], f"Your gradcheck {verdict} gradient: {what}. {story[1]}")
    if want["verdict"]:
        return Diagnosis("gradcheck_rejects", (
            f"Your gradcheck rejects a right gradient: {what}. Compare element by element "
            f"with a tolerance that grows with the numbers, atol + rtol * |numeric|."))
    return Diagnosis("gradcheck_passes", (
        f"Your gradcheck passes a wrong gradient: {what}. Compare EVERY element, each with "
        f"|analytic - numeric| <= atol + rtol * |numeric| (rtol = 1e-3)."))


_GRADCHECK_STORIES = {
    "right_zero": ("gradcheck_no_atol", "A relative tolerance alone is zero where the right "
                   "gradient is zero, and the numeric one is never exactly zero (eps^2 here): "
                   "add an absolute one, |analytic - numeric| <= atol + rtol * |numeric| "
                   "(atol = 1e-5)."),
    "right_huge": ("gradcheck_tight", "Around 1e4 the numeric gradient carries round-off of "
                   "about 1e-5 relative: np.allclose's defaults (rtol 1e-5, atol 1e-8) are "
                   "tighter than finite differences can be. Use rtol = 1e-3, atol = 1e-5."),
    "right_large": ("gradcheck_tight", "Around 300 the numeric gradient carries round-off: "
                    "your tolerance is tighter than finite differences can be. Use rtol = "
                    "1e-3, atol = 1e-5."),
    "wrong_one_in_400": ("gradcheck_norm", "Comparing norms (or means, or sums) lets one wrong "
                         "element hide among 399 right ones: compare every element, each "
                         "against atol + rtol * |numeric|."),
    "wrong_small": ("gradcheck_loose", "Your tolerance is too loose: finite differences with "
                    "eps = 1e-6 are good to far better than 0.1%, so rtol = 1e-3 catches a "
                    "2% error."),
    "wrong_half_percent": ("gradcheck_loose", "Your tolerance is too loose: a finite "
                           "difference with eps = 1e-6 is good to far better than 0.1%, so "
                           "rtol = 1e-3 catches a 0.5% error that rtol = 1e-2 lets through."),
}


# ------------------------------------------------------------------ 20 train
def verify_zero_grad(scenario: Scenario, got: Values, want: Values) -> Optional[Diagnosis]:
    states = got.get("states")
    if states != want["states"]:
        return Diagnosis("zero_grad", (
            "After zero_grad every parameter's .grad must be None (or zeros of its shape, or "
            f"the number 0); yours are: {states}."))
    return None


def verify_sgd(scenario: Scenario, got: Values, want: Values) -> Optional[Diagnosis]:
    if got.get("same_objects") is not True:
        return Diagnosis("sgd_replaced", (
            "sgd_step replaced the Tensors in the list: the model holds the originals and "
            "would never see the change. Update p.data of each parameter instead."))
    for key in sorted(k for k in want if k.startswith("data_")):
        problem = array_problem(got.get(key), want[key], f"parameter {key[5:]}'s data")
        if problem:
            return Diagnosis("shape", problem)
        before = scenario.data["data"][int(key[5:])]
        if not same(want[key], before) and same(got[key], before):
            return Diagnosis("sgd_no_change", (
                f"sgd_step did not change parameter {key[5:]}: assigning to the loop variable "
                f"(p = ...) or making a new Tensor changes nothing the model sees. Assign "
                f"p.data = p.data - lr * p.grad."))
        if not same(got[key], want[key]):
            return _wrong(f"parameter {key[5:]} did not move by -lr * grad.")
    return None


def verify_train(scenario: Scenario, got: Values, want: Values) -> Optional[Diagnosis]:
    problem = array_problem(got.get("losses"), want["losses"], "the losses")
    if problem:
        return Diagnosis("shape", problem)
    wrong = not same(got["losses"], want["losses"], rtol=1e-7) or any(
        not same(got.get(k), want[k], rtol=1e-7) for k in want if k.startswith("param_"))
    if wrong and train_story(got, want) is not None:
        return train_story(got, want)
    if not same(got["losses"], want["losses"], rtol=1e-7):
        bad = int(np.argmax(~np.isclose(got["losses"], want["losses"], rtol=1e-7)))
        return _wrong(f"The training run differs from the reference from step {bad + 1} on: "
                      f"loss {got['losses'][bad]:.6g} instead of {want['losses'][bad]:.6g}.")
    for key in sorted(k for k in want if k.startswith("param_")):
        if not same(got.get(key), want[key], rtol=1e-7):
            return _wrong(f"After training, parameter {key[6:]} differs from the reference.")
    return None
