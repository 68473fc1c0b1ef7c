"""Recognise the common ways a hand-written backward goes wrong (the ops track).

Three stages. ``diagnose_structure`` explains what was wrong with the returned objects (None,
the wrong number, not arrays: the child process reports these). ``diagnose_shape`` and
``diagnose_dtype`` look at the arrays that came back (a transposed shape, the output's shape
where an input was broadcast, float32). ``diagnose_values`` runs when the values are wrong: it
compares the learner's gradient ``got`` with the right one ``want`` (both for the same random
upstream gradient) and tries, in order: non-finite values, the part's known mistakes, leaks
into masked positions, all zeros, ignoring grad, a flipped sign, a constant factor (2, N,
sqrt(d_k), ...), a transpose or a permutation, only the diagonal of a row-coupled Jacobian,
errors confined to a region. ``explain_error`` turns an exception raised in the learner's code
into text, with the case's sizes in the exercise's letters for a shape error.
"""
from __future__ import annotations

import textwrap
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np

from .course import Case, Diagnosis, Part

__all__ = ["Diagnosis", "diagnose_structure", "diagnose_shape", "diagnose_dtype",
           "diagnose_values", "explain_error", "close", "broadcast_axes", "FLOAT64_WHY",
           "left_aligned", "MISALIGNED"]

FLOAT64_WHY = (
    "The checker compares your gradient with finite differences, and in float32 their "
    "round-off alone is about 1e-7 * |f| / eps, around 0.1 for eps = 1e-6: larger than most "
    "bugs (a forgotten 1/N on one path hides in it). The inputs are float64; keep every array "
    "float64 (no .astype(np.float32), no dtype=np.float32). examples/eps_sweep.py shows why.")


def close(got: np.ndarray, want: np.ndarray, rtol: float = 1e-7) -> bool:
    """True when two arrays agree to ``rtol`` relative to the larger norm."""
    if got.shape != want.shape:
        return False
    scale = max(float(np.linalg.norm(got)), float(np.linalg.norm(want)))
    return float(np.linalg.norm(got - want)) <= rtol * scale + 1e-12


def broadcast_axes(small: Tuple[int, ...], big: Tuple[int, ...]) -> Tuple[int, ...]:
    """The axes of ``big`` along which an array of shape ``small`` was copied."""
    extra = len(big) - len(small)
    return tuple(range(extra)) + tuple(extra + i for i, n in enumerate(small)
                                       if n == 1 and big[extra + i] != 1)


MISALIGNED = (
    "Broadcasting lines shapes up from the RIGHT: an input of shape {small} meets the LAST "
    "{n} axes of the output {big}, so the axes it lacks are the LEADING ones (sum axes {lead} "
    "away), and its size-1 axes are counted from the right too. Yours lines them up from "
    "the left: it summed trailing axes instead.")


def left_aligned(grad: np.ndarray, shape: Tuple[int, ...]) -> List[np.ndarray]:
    """``grad`` summed down to ``shape`` with the shapes lined up from the LEFT (the classic
    misaligned unbroadcast), with and without keepdims; [] when that cannot be done."""
    shape = tuple(shape)
    if grad.ndim <= len(shape):
        return []
    g = grad.sum(axis=tuple(range(len(shape), grad.ndim)))
    axes = tuple(i for i, n in enumerate(shape) if n == 1 and g.shape[i] != 1)
    if not axes:
        return [g]
    return [g.sum(axis=axes, keepdims=True), g.sum(axis=axes)]


def misaligned_message(small: Tuple[int, ...], big: Tuple[int, ...]) -> str:
    extra = len(big) - len(small)
    lead = "0" if extra == 1 else f"0 to {extra - 1}"
    return MISALIGNED.format(small=tuple(small), n=len(small), big=tuple(big), lead=lead)


def _broadcasts_to(small: Tuple[int, ...], big: Tuple[int, ...]) -> bool:
    try:
        return np.broadcast_shapes(small, big) == tuple(big)
    except ValueError:
        return False


def _expected(names: Sequence[str]) -> str:
    if len(names) == 1:
        return f"one array, d{names[0]}"
    return "a tuple (" + ", ".join(f"d{n}" for n in names) + ")"


def diagnose_structure(problem: Dict[str, Any], part: Part, case: Case) -> Diagnosis:
    """What the child reported about the returned objects (see runner._gradients)."""
    fn, names = part.backward_name, part.inputs
    kind = problem.get("kind")
    index = problem.get("input") if isinstance(problem.get("input"), int) else 0
    name = names[index] if 0 <= index < len(names) else names[0]
    want = case.inputs[name].shape
    if kind == "none_all":
        return Diagnosis("none", f"{fn} returned None: did you forget `return`? It must "
                                 f"return {_expected(names)}.")
    if kind == "count":
        return Diagnosis("count", f"{fn} returned {problem.get('count')} value(s) but must "
                                  f"return {_expected(names)}, in that order.")
    if kind == "none":
        return Diagnosis("none", f"{fn} returned None for d{name}; every input here needs its "
                                 f"gradient, an array of shape {want}.")
    return Diagnosis("type", f"{fn} returned {problem.get('got', 'something else')} for "
                             f"d{name}; return a NumPy array of shape {want}.")


def diagnose_shape(name: str, got: Tuple[int, ...], want: Tuple[int, ...],
                   transpose_hint: Optional[str] = None,
                   out_shape: Optional[Tuple[int, ...]] = None) -> Diagnosis:
    """d``name`` came back with shape ``got`` instead of ``want``; ``transpose_hint`` says
    which product gives the gradient the right way round (the part's own formula);
    ``out_shape`` (the output's) recognises an unbroadcast lined up from the left."""
    if out_shape is not None and len(out_shape) > len(want) and _broadcasts_to(want, out_shape):
        lefts = [a.shape for a in left_aligned(np.zeros(out_shape), want)]
        if tuple(got) in lefts:
            return Diagnosis("shape_misaligned", f"d{name} has shape {tuple(got)}, not "
                                                 f"{tuple(want)}. " + misaligned_message(
                                                     want, out_shape))
    if len(got) >= 2 and got[:-2] + got[-2:][::-1] == want:
        hint = transpose_hint or "for out = a @ b: db = a^T @ g, not g^T @ a"
        return Diagnosis("shape_transpose", (
            f"Off by a transpose: d{name} has shape {got}, the transpose of {name}'s shape "
            f"{want}. Swap the last two axes, or swap the operands of the product that makes "
            f"it ({hint})."))
    if _broadcasts_to(want, got):
        axes = broadcast_axes(want, got)
        return Diagnosis("shape_broadcast", (
            f"Missing sum over broadcast axes: d{name} has shape {got}, but {name} has shape "
            f"{want}. The forward copied {name} along axes {axes} of {got}; every copy sends "
            f"back a gradient, so sum d{name} over those axes (with keepdims=True for the "
            f"axes where {name} has size 1)."))
    if len(got) == len(want) and len(want) >= 2 and got[:-1] == want[:-1] and want[-1] != \
            got[-1] and got[-1] == want[-2]:
        return Diagnosis("shape_keepdims", (
            f"d{name} has shape {got}, not {want}: a row-sum without keepdims=True? A sum "
            f"over the last axis of {want} has shape {want[:-1]}, which NumPy lines up with "
            f"the LAST axis when it broadcasts; keepdims=True keeps it a column."))
    if len(got) < len(want) and got == tuple(n for n in want if n != 1):
        return Diagnosis("shape_keepdims", (
            f"d{name} has shape {got}, not {want}: the size-1 axes are gone. Sum with "
            f"keepdims=True where {name} has size 1, so the gradient keeps {name}'s shape."))
    return Diagnosis("shape", f"d{name} has shape {got}, but it must have {name}'s shape "
                              f"{want} (a gradient always has its input's shape).")


def diagnose_dtype(name: str, dtype: np.dtype) -> Diagnosis:
    if dtype == np.float32:
        return Diagnosis("float32", f"d{name} is float32; float64 is expected. {FLOAT64_WHY}")
    return Diagnosis("dtype", f"d{name} has dtype {dtype}; a gradient here is a float64 array "
                              f"(np.zeros(shape) is float64; np.zeros_like(ids) would copy "
                              f"the ids' integer dtype).")


def _factor_message(name: str, c: float, case: Case) -> Optional[str]:
    candidates = [(2.0, "2")] + [(v, d) for v, d in case.factors]
    for value, what in candidates:
        if abs(c - value) <= 1e-6 * value:
            return (f"A constant factor: your d{name} is {c:.6g} times the right gradient "
                    f"({what}). You multiply by it once too often, or forget to divide by it.")
        if abs(c * value - 1.0) <= 1e-6:
            return (f"A constant factor: your d{name} is 1/{value:.6g} of the right gradient "
                    f"({what}). You divide by it where the op does not, or forget to "
                    f"multiply by it.")
    return None


def _wrong_elements(got: np.ndarray, want: np.ndarray) -> np.ndarray:
    scale = max(float(np.abs(want).max(initial=0.0)), 1e-12)
    return np.abs(got - want) > 1e-7 * scale


def diagnose_values(part: Part, case: Case, name: str, got: np.ndarray, want: np.ndarray,
                    grad: np.ndarray, cache: Any,
                    diagonal: Optional[Callable[[], np.ndarray]] = None,
                    want_ones: Optional[np.ndarray] = None) -> Diagnosis:
    """Explain why ``got`` (the learner's d``name``) differs from ``want`` (the right one)."""
    regions = [r for r in case.regions if r.input == name]
    bad = ~np.isfinite(got)
    if bad.any():
        for region in regions:
            if region.kind == "fully_masked_row" and region.where[bad].all():
                return Diagnosis(region.kind, f"NaN or inf in d{name}. {region.message}")
        where = tuple(int(i) for i in np.argwhere(bad)[0])
        if case.nonfinite_hint:
            return Diagnosis("overflow", f"d{name} holds NaN or inf, first at {name}"
                                         f"{list(where)}: {case.nonfinite_hint}")
        return Diagnosis("nonfinite", f"d{name} holds NaN or inf, first at {name}{list(where)}:"
                                      f" a division by zero or a log of 0 in your formula?")
    for mistake in part.mistakes:
        if mistake.input != name:
            continue
        try:
            wrong = np.asarray(mistake.wrong(grad, cache))
        except (ValueError, IndexError):    # e.g. a mistake that needs square shapes
            continue
        if wrong.shape == got.shape and close(got, wrong) and not close(want, wrong):
            return Diagnosis(mistake.kind, mistake.message)
    for region in regions:
        if region.zero and np.abs(got[region.where]).max(initial=0.0) > 1e-12 \
                and np.abs(want[region.where]).max(initial=0.0) <= 1e-12:
            return Diagnosis(region.kind, region.message)
    if np.abs(got).max(initial=0.0) == 0.0:
        return Diagnosis("zero", f"Your d{name} is all zeros, but the right gradient is not.")
    if want_ones is not None and close(got, want_ones) and not close(want, want_ones):
        return Diagnosis("ignores_grad", (
            f"Your d{name} ignores grad, the incoming gradient: it is what the right answer "
            f"would be if grad were all ones. Multiply by grad (the chain rule): an op sits "
            f"in the middle of a graph, where grad is whatever flows in, and even for a "
            f"scalar loss the checker sends grad = {_grad_text(grad)}."))
    if close(got, -want):
        return Diagnosis("sign", f"Wrong sign: your d{name} is exactly minus the right "
                                 f"gradient. {part.sign_hint}")
    denom = float(np.vdot(want, want))
    if denom > 0.0:
        c = float(np.vdot(got, want)) / denom
        if abs(c - 1.0) > 1e-6 and close(got, c * want):
            message = _factor_message(name, c, case)
            if message:
                return Diagnosis("factor", message)
            return Diagnosis("factor", f"A constant factor: your d{name} is {c:.6g} times the "
                                       f"right gradient. Look for a scale you add or forget.")
    if got.ndim >= 2 and got.shape[-1] == got.shape[-2] and close(got, np.swapaxes(want, -1, -2)):
        return Diagnosis("transpose", f"Off by a transpose: your d{name} is the right gradient "
                                      f"with its last two axes swapped.")
    if close(np.sort(got, axis=None), np.sort(want, axis=None)):
        return Diagnosis("transpose", (
            f"Right numbers, wrong places: your d{name} holds exactly the values of the right "
            f"gradient in another order. Axes are swapped: a reshape does not move axes, so "
            f"undo the forward's transpose (swap the axes back) before reshaping."))
    if part.diagonal_hint and diagonal is not None:
        diag = diagonal()
        if diag is not None and diag.shape == got.shape and \
                close(got, diag * grad.reshape(got.shape)):
            return Diagnosis("diagonal", f"Only the diagonal of the Jacobian: your d{name} uses "
                                         f"d out_i / d {name}_i alone. {part.diagonal_hint}")
    wrong = _wrong_elements(got, want)
    for region in regions:
        if not region.zero and wrong.any() and region.where[wrong].all():
            return Diagnosis(region.kind, region.message)
    return Diagnosis("unknown", "No common mistake recognised. Work the smallest case by hand "
                                "and compare with the worst element above.")


def _wrap(text: str) -> str:
    return textwrap.fill(text, 92, initial_indent="    ", subsequent_indent="    ",
                         break_on_hyphens=False)


def _grad_text(grad: np.ndarray) -> str:
    return f"{float(grad):.3g}" if grad.ndim == 0 else "a random array"


# ------------------------------------------------------------------ exceptions
_SHAPE_HINTS = [
    (("core dimension", "not aligned", "matmul"),
     "For a @ b the last axis of a must equal the second-to-last axis of b. Write each "
     "array's shape in the letters above next to the failing line: which operand needs a "
     "transpose (np.swapaxes(x, -1, -2))?"),
    (("could not be broadcast",),
     "Elementwise ops line shapes up from the RIGHT. A sum that dropped an axis needs "
     "keepdims=True (or np.expand_dims) before it can broadcast back against the array it "
     "came from."),
    (("cannot reshape",),
     "A reshape keeps the number of elements; undo the forward's steps in reverse order."),
]


def _trace_lines(error: Dict[str, Any]) -> List[str]:
    lines = []
    for frame in error.get("trace", [])[-4:]:
        lines.append(f'    File "{frame.get("file")}", line {frame.get("line")}, in '
                     f'{frame.get("function")}')
        if frame.get("code"):
            lines.append(f"      {frame['code']}")
    lines.append(_wrap(f"{error.get('type')}: {error.get('message')}"))
    return lines


def explain_error(error: Dict[str, Any], case: Optional[Case]) -> Tuple[Diagnosis, List[str]]:
    """A diagnosis and text lines for an exception raised by (or through) learner code."""
    kind, message = str(error.get("type")), str(error.get("message"))
    lines = _trace_lines(error)
    if kind == "SystemExit":
        text = ("Your code called sys.exit() or exit() (SystemExit): the checker cannot check "
                "code that ends the program. Remove the call (a leftover after a debug "
                "print?).")
        return Diagnosis("exit", text), lines + [_wrap(text)]
    if kind == "KeyboardInterrupt":
        text = ("Your code raised KeyboardInterrupt itself (no key was pressed): remove the "
                "raise.")
        return Diagnosis("interrupt", text), lines + [_wrap(text)]
    if kind == "RecursionError":
        text = ("RecursionError: your code recursed once per node, and Python stops at 1,000 "
                "nested calls. Use an explicit stack: a list you append to and pop from.")
        return Diagnosis("recursion", text), lines + [_wrap(text)]
    if kind == "ValueError" and "read-only" in message:
        text = ("grad and the cached arrays are read-only here. Write into a copy "
                "(grad.copy(), np.zeros_like(x)) instead: in a real engine the same gradient "
                "array may feed other ops.")
        return Diagnosis("readonly", text), lines + [_wrap("hint: " + text)]
    if error.get("is_shape_error"):
        extra = []
        if case is not None and case.dims:
            extra.append(f"    sizes in this case: {case.legend()}")
        shapes = error.get("shapes") or {}
        if shapes:
            extra.append(_wrap("your arrays there: " + ", ".join(
                f"{name} {tuple(shape)}" for name, shape in list(shapes.items())[:12])))
        hint = next((h for words, h in _SHAPE_HINTS if any(w in message for w in words)),
                    _SHAPE_HINTS[0][1])
        extra.append(_wrap(f"hint: {hint}"))
        return Diagnosis("shape_error", "a shape error in your code: " + hint), lines + extra
    if not error.get("trace"):
        lines.append(_wrap("(raised while the checker used what your code returned: check "
                           "its type and shape)"))
    return Diagnosis("error", f"{kind}: {message}"), lines
