"""Recognise the common ways a hand-written backward goes wrong.

Two stages. ``diagnose_structure`` looks at what the learner's backward returned before any
gradient check (None, the wrong number of arrays, a wrong shape: transposed, or the output's
shape where an input was broadcast). ``diagnose_values`` runs when the values are wrong: it
compares the learner's gradient ``got`` with the right one ``want`` (both for the same random
upstream gradient) and tries, in order: non-finite values, leaks into masked positions, the
part's known mistakes, a flipped sign, a constant factor (2, N, sqrt(d_k), ...), a transpose or
a permutation, only the diagonal of a row-coupled Jacobian, errors confined to a region.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Optional, Sequence, Tuple

import numpy as np

from .catalog import Case, Part

__all__ = ["Diagnosis", "diagnose_structure", "diagnose_values", "close", "broadcast_axes"]


@dataclass
class Diagnosis:
    kind: str       # e.g. "shape_broadcast", "transpose", "factor", "diagonal", "masked"
    message: str


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


def _broadcasts_to(small: Tuple[int, ...], big: Tuple[int, ...]) -> bool:
    try:
        return np.broadcast_shapes(small, big) == tuple(big)
    except ValueError:
        return False


def diagnose_structure(grads: Any, part: Part, case: Case) -> Tuple[Optional[Diagnosis], list]:
    """Check the returned gradients' count, types and shapes. Returns (problem, grads list)."""
    fn, names = part.backward_name, part.inputs
    if grads is None:
        return Diagnosis("none", f"{fn} returned None: did you forget `return`? It must "
                                 f"return {_expected(names)}."), []
    if len(names) == 1 and not isinstance(grads, (tuple, list)):
        grads = (grads,)
    if not isinstance(grads, (tuple, list)) or len(grads) != len(names):
        count = len(grads) if isinstance(grads, (tuple, list)) else 1
        return Diagnosis("count", f"{fn} returned {count} value(s) but must return "
                                  f"{_expected(names)}, in that order."), []
    grads = list(grads)
    for name, g in zip(names, grads):
        want = case.inputs[name].shape
        if g is None:
            return Diagnosis("none", f"{fn} returned None for d{name}; every input here needs "
                                     f"its gradient, an array of shape {want}."), grads
        if np.isscalar(g) and want == ():
            continue
        if not isinstance(g, np.ndarray):
            return Diagnosis("type", f"{fn} returned a {type(g).__name__} for d{name}; return "
                                     f"a NumPy array of shape {want}."), grads
        got = tuple(g.shape)
        if got == want:
            continue
        if len(got) >= 2 and got[:-2] + got[-2:][::-1] == want:
            return Diagnosis("shape_transpose", (
                f"Off by a transpose: d{name} has shape {got}, the transpose of {name}'s "
                f"shape {want}. Swap the last two axes, or swap the operands of the product "
                f"that makes it (for out = a @ b: db = a^T @ g, not g^T @ a).")), grads
        if _broadcasts_to(want, got):
            axes = broadcast_axes(want, got)
            return Diagnosis("shape_broadcast", (
                f"Missing sum over broadcast axes: d{name} has shape {got}, but {name} has "
                f"shape {want}. The forward copied {name} along axes {axes} of {got}; every "
                f"copy sends back a gradient, so sum d{name} over those axes (with "
                f"keepdims=True for the axes where {name} has size 1).")), grads
        return Diagnosis("shape", f"d{name} has shape {got}, but it must have {name}'s shape "
                                  f"{want} (a gradient always has its input's shape)."), grads
    return None, grads


def _expected(names: Sequence[str]) -> str:
    if len(names) == 1:
        return f"one array, d{names[0]}"
    return "a tuple (" + ", ".join(f"d{n}" for n in names) + ")"


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
                    diagonal: Optional[Callable[[], np.ndarray]] = None) -> Diagnosis:
    """Explain why ``got`` (the learner's d``name``) differs from ``want`` (the right one)."""
    regions = [r for r in case.regions if r.input == name]
    bad = ~np.isfinite(got)
    if bad.any():
        for region in regions:
            if region.kind == "fully_masked_row" and region.where[bad].all():
                return Diagnosis(region.kind, f"NaN or inf in d{name}. {region.message}")
        where = tuple(int(i) for i in np.argwhere(bad)[0])
        return Diagnosis("nonfinite", f"d{name} holds NaN or inf, first at {name}{list(where)}:"
                                      f" a division by zero or a log of 0 in your formula?")
    for region in regions:
        if region.zero and np.abs(got[region.where]).max(initial=0.0) > 1e-12 \
                and np.abs(want[region.where]).max(initial=0.0) <= 1e-12:
            return Diagnosis(region.kind, region.message)
    if np.abs(got).max(initial=0.0) == 0.0:
        return Diagnosis("zero", f"Your d{name} is all zeros, but the right gradient is not.")
    for mistake in part.mistakes:
        if mistake.input != name:
            continue
        try:
            wrong = np.asarray(mistake.wrong(grad, cache))
        except (ValueError, IndexError):    # e.g. a mistake that needs square shapes
            continue
        if close(got, wrong):
            return Diagnosis(mistake.kind, mistake.message)
    if close(got, -want):
        return Diagnosis("sign", f"Wrong sign: your d{name} is exactly minus the right "
                                 f"gradient. Check the sign of each term (for a loss -log p, "
                                 f"the gradient pushes log p up).")
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
        if diag.shape == got.shape and close(got, diag * grad.reshape(got.shape)):
            return Diagnosis("diagonal", f"Only the diagonal of the Jacobian: your d{name} uses "
                                         f"d out_i / d {name}_i alone. {part.diagonal_hint}")
    wrong = _wrong_elements(got, want)
    for region in regions:
        if not region.zero and wrong.any() and region.where[wrong].all():
            return Diagnosis(region.kind, region.message)
    return Diagnosis("unknown", "No common mistake recognised. Work the smallest case by hand "
                                "and compare with the worst element above.")
