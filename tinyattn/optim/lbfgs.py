"""``LBFGS``: limited-memory BFGS with torch's algorithm (docs/optim.md#lbfgs), one
parameter group, flattened into one vector x with gradient g.

Each ``step(closure)`` runs up to ``max_iter`` iterations. An iteration takes the direction
d = -H g, where H is the inverse Hessian estimated from the last ``history_size`` pairs
s = x_{k+1} - x_k, y = g_{k+1} - g_k (only pairs with y.s > 1e-10 are kept), applied by the
two-loop recursion with H_0 = (y.s / y.y) I (the latest pair's). The step length is ``lr``
(min(1, 1 / sum|g|) lr on the very first iteration), or, with line_search_fn="strong_wolfe",
the length a cubic-interpolation line search finds that satisfies the strong Wolfe
conditions f(x + t d) <= f + c1 t g.d and |g(x + t d).d| <= c2 |g.d| (c1 = 1e-4, c2 = 0.9).
It stops on a small gradient (max|g| <= tolerance_grad), a small change of x or of the loss
(tolerance_change), or at max_iter iterations / max_eval closure calls.
"""
from __future__ import annotations

from typing import Any, Callable, Dict, List, Optional, Tuple

import numpy as np

from .. import backend
from ..autograd import enable_grad, no_grad
from ..tensor import Tensor
from .optimizer import Optimizer, ParamsT, check_hyperparameter

__all__ = ["LBFGS"]


def _cubic_minimum(x1: float, f1: float, g1: float, x2: float, f2: float, g2: float,
                   bounds: Optional[Tuple[float, float]] = None) -> float:
    """The minimiser of the cubic through (x1, f1) and (x2, f2) with slopes g1, g2, clamped
    to ``bounds`` (default: between x1 and x2); the middle when the cubic has none."""
    low, high = bounds if bounds is not None else (min(x1, x2), max(x1, x2))
    d1 = g1 + g2 - 3 * (f1 - f2) / (x1 - x2)
    d2_square = d1 * d1 - g1 * g2
    if d2_square < 0:
        return (low + high) / 2.0
    d2 = d2_square ** 0.5
    if x1 <= x2:
        position = x2 - (x2 - x1) * ((g2 + d2 - d1) / (g2 - g1 + 2 * d2))
    else:
        position = x1 - (x1 - x2) * ((g1 + d2 - d1) / (g1 - g2 + 2 * d2))
    return min(max(position, low), high)


def _strong_wolfe(evaluate: Callable[[float], Tuple[float, Any]], t: float, d: Any, f: float,
                  g: Any, gtd: float, c1: float = 1e-4, c2: float = 0.9,
                  tolerance_change: float = 1e-9, max_ls: int = 25
                  ) -> Tuple[float, Any, float, int]:
    """A step t along d meeting the strong Wolfe conditions: first widen until a bracket
    holds a minimum (or the conditions hold), then shrink it by cubic interpolation.
    Returns (loss, gradient, t, closure calls)."""
    d_norm = float(abs(d).max())
    f_new, g_new = evaluate(t)
    calls, gtd_new = 1, float(g_new.dot(d))
    t_prev, f_prev, g_prev, gtd_prev = 0.0, f, g.copy(), gtd
    done, iteration = False, 0
    bracket: List[float] = []
    while iteration < max_ls:                     # 1. find a bracket
        if f_new > f + c1 * t * gtd or (iteration > 1 and f_new >= f_prev):
            bracket, values = [t_prev, t], [f_prev, f_new]
            grads, slopes = [g_prev, g_new.copy()], [gtd_prev, gtd_new]
            break
        if abs(gtd_new) <= -c2 * gtd:
            bracket, values, grads, slopes = [t], [f_new], [g_new], [gtd_new]
            done = True
            break
        if gtd_new >= 0:
            bracket, values = [t_prev, t], [f_prev, f_new]
            grads, slopes = [g_prev, g_new.copy()], [gtd_prev, gtd_new]
            break
        low_step, high_step = t + 0.01 * (t - t_prev), t * 10
        t_prev, t = t, _cubic_minimum(t_prev, f_prev, gtd_prev, t, f_new, gtd_new,
                                      bounds=(low_step, high_step))
        f_prev, g_prev, gtd_prev = f_new, g_new.copy(), gtd_new
        f_new, g_new = evaluate(t)
        calls, gtd_new = calls + 1, float(g_new.dot(d))
        iteration += 1
    if iteration == max_ls:
        bracket, values, grads, slopes = [0.0, t], [f, f_new], [g, g_new], [gtd, gtd_new]
    insufficient = False
    low, high = (0, 1) if values[0] <= values[-1] else (1, 0)
    while not done and iteration < max_ls:        # 2. zoom into the bracket
        if abs(bracket[1] - bracket[0]) * d_norm < tolerance_change:
            break
        t = _cubic_minimum(bracket[0], values[0], slopes[0], bracket[1], values[1], slopes[1])
        margin = 0.1 * (max(bracket) - min(bracket))
        if min(max(bracket) - t, t - min(bracket)) < margin:    # too close to an end
            if insufficient or t >= max(bracket) or t <= min(bracket):
                t = max(bracket) - margin if abs(t - max(bracket)) < abs(t - min(bracket)) \
                    else min(bracket) + margin
                insufficient = False
            else:
                insufficient = True
        else:
            insufficient = False
        f_new, g_new = evaluate(t)
        calls, gtd_new = calls + 1, float(g_new.dot(d))
        iteration += 1
        if f_new > f + c1 * t * gtd or f_new >= values[low]:
            bracket[high], values[high], grads[high], slopes[high] = t, f_new, g_new.copy(), \
                gtd_new
            low, high = (0, 1) if values[0] <= values[1] else (1, 0)
        else:
            if abs(gtd_new) <= -c2 * gtd:
                done = True
            elif gtd_new * (bracket[high] - bracket[low]) >= 0:
                bracket[high], values[high] = bracket[low], values[low]
                grads[high], slopes[high] = grads[low], slopes[low]
            bracket[low], values[low], grads[low], slopes[low] = t, f_new, g_new.copy(), gtd_new
    return values[low], grads[low], bracket[low], calls


def _number(t: Any, dtype: Any) -> Any:
    """A step length as the arithmetic uses it: a tensor or NumPy one as a NumPy scalar of
    the gradient's ``dtype`` (torch's 0-d tensor does not widen a float32 direction), a
    Python number as it is."""
    if isinstance(t, Tensor):
        t = backend.to_host(t._data)
    if hasattr(t, "dtype"):
        return np.asarray(t, dtype=dtype).reshape(())[()]
    return t


def _value(loss: Any) -> float:
    """The closure's loss as a float, without torch's warning about converting a tensor that
    requires grad (torch's L-BFGS reads it without one)."""
    return float(loss.detach()) if isinstance(loss, Tensor) else float(loss)


class LBFGS(Optimizer):
    """L-BFGS with torch's signature, one parameter group, and ``step(closure)`` (the
    closure clears the gradients, computes the loss, calls backward and returns the loss).
    Its state lives under the first parameter, with torch's keys (``func_evals``,
    ``n_iter``, ``d``, ``t``, ``old_dirs``, ``old_stps``, ``ro``, ``H_diag``,
    ``prev_flat_grad``, ``prev_loss``, ``al``)."""

    _shapeless_state = frozenset({"d", "prev_flat_grad", "old_dirs", "old_stps", "ro", "al"})
    # the step works on arrays: these entries are Tensors between steps, as torch's
    _state_as_arrays = frozenset({"d", "prev_flat_grad", "old_dirs", "old_stps", "ro", "al",
                                  "H_diag"})

    def __init__(self, params: ParamsT, lr: float = 1, max_iter: int = 20,
                 max_eval: Optional[int] = None, tolerance_grad: float = 1e-7,
                 tolerance_change: float = 1e-9, history_size: int = 100,
                 line_search_fn: Optional[str] = None):
        if max_eval is None:
            max_eval = max_iter * 5 // 4
        defaults = dict(lr=lr, max_iter=max_iter, max_eval=max_eval,
                        tolerance_grad=tolerance_grad, tolerance_change=tolerance_change,
                        history_size=history_size, line_search_fn=line_search_fn)
        super().__init__(params, defaults)
        if len(self.param_groups) != 1:
            raise ValueError("LBFGS doesn't support per-parameter options (parameter groups)")
        self._params = self.param_groups[0]["params"]

    def _check_group(self, group: Dict[str, Any]) -> Dict[str, Any]:
        group["lr"] = check_hyperparameter("lr (learning rate)", group["lr"])
        if group["line_search_fn"] not in (None, "strong_wolfe"):
            raise ValueError(f"LBFGS: line_search_fn must be None or 'strong_wolfe', got "
                             f"{group['line_search_fn']!r}")
        return group

    def add_param_group(self, param_group: Dict[str, Any]) -> None:
        if self.param_groups:
            raise ValueError("LBFGS doesn't support per-parameter options (parameter groups)")
        super().add_param_group(param_group)

    def _flat_grad(self) -> Any:
        xp = backend.get_array_module(self._params[0]._data)
        return xp.concatenate([(p.grad._data if p.grad is not None
                                else xp.zeros(p._data.shape, p._data.dtype)).reshape(-1)
                               for p in self._params])

    def _add(self, step: float, direction: Any) -> None:
        offset = 0
        for p in self._params:
            size = p._data.size
            p._data += (step * direction[offset:offset + size]).reshape(p._data.shape).astype(
                p._data.dtype, copy=False)
            p._bump_version()
            offset += size

    def _set(self, values: List[Any]) -> None:
        for p, value in zip(self._params, values):
            p._data[...] = value
            p._bump_version()

    def step(self, closure: Callable[[], Any]) -> Any:  # type: ignore[override]
        """Up to max_iter L-BFGS iterations; returns the closure's first loss."""
        if closure is None:
            raise RuntimeError("LBFGS.step needs a closure that recomputes the loss: "
                               "optimizer.step(closure), as in PyTorch")
        group = self.param_groups[0]
        lr_value, max_iter, max_eval = group["lr"], group["max_iter"], group["max_eval"]
        lr = float(lr_value)
        tolerance_grad, tolerance_change = group["tolerance_grad"], group["tolerance_change"]
        history_size = group["history_size"]

        def evaluate() -> Any:
            with enable_grad():
                return closure()

        state = self.state.setdefault(self._params[0], {})
        state.setdefault("func_evals", 0)
        state.setdefault("n_iter", 0)
        first_loss = evaluate()
        loss = _value(first_loss)
        evals = 1
        state["func_evals"] += 1
        flat_grad = self._flat_grad()
        if abs(flat_grad).max() <= tolerance_grad:
            return first_loss
        d, t = state.get("d"), state.get("t")
        t_typed, t = t, (None if t is None else _number(t, flat_grad.dtype))
        lr_dtype = lr_value.dtype if isinstance(lr_value, Tensor) else None

        def computed(value: Any) -> Any:
            """A step length computed from the gradient: a 0-d tensor of the gradient's
            dtype (promoted with a Tensor lr's), as torch's."""
            dtype = flat_grad.dtype if lr_dtype is None else np.promote_types(
                flat_grad.dtype, lr_dtype)
            xp = backend.get_array_module(flat_grad)
            return Tensor._wrap(xp.asarray(float(value), dtype=dtype))
        old_dirs, old_stps, ro = state.get("old_dirs"), state.get("old_stps"), state.get("ro")
        h_diag, prev_flat_grad = state.get("H_diag"), state.get("prev_flat_grad")
        prev_loss = state.get("prev_loss")
        iteration = 0
        with no_grad():
            while iteration < max_iter:
                iteration += 1
                state["n_iter"] += 1
                if state["n_iter"] == 1:                   # steepest descent
                    d, old_dirs, old_stps, ro, h_diag = -flat_grad, [], [], [], 1
                else:
                    y, s = flat_grad - prev_flat_grad, d * t
                    ys = y.dot(s)
                    if ys > 1e-10:                          # keep the pair (curvature > 0)
                        if len(old_dirs) == history_size:
                            old_dirs.pop(0), old_stps.pop(0), ro.pop(0)
                        old_dirs.append(y), old_stps.append(s), ro.append(1.0 / ys)
                        h_diag = ys / y.dot(y)
                    if "al" not in state:
                        state["al"] = [None] * history_size
                    al = state["al"]
                    q = -flat_grad                          # two-loop recursion: d = -H g
                    for i in range(len(old_dirs) - 1, -1, -1):
                        al[i] = old_stps[i].dot(q) * ro[i]
                        q = q - al[i] * old_dirs[i]
                    d = q * h_diag
                    for i in range(len(old_dirs)):
                        be_i = old_dirs[i].dot(d) * ro[i]
                        d = d + (al[i] - be_i) * old_stps[i]
                prev_flat_grad = flat_grad.copy()
                prev_loss = loss
                # torch's t keeps its type: lr itself (an int, a float or the Tensor lr),
                # 1.0 * lr, or a 0-d tensor where it is computed from the gradient
                if state["n_iter"] == 1:
                    ratio = float(abs(flat_grad).sum())
                    ratio = 1.0 / ratio if ratio else float("inf")
                    if ratio < 1.0:
                        t_typed = computed(ratio * lr)
                    else:
                        t_typed = 1.0 * lr if lr_dtype is None else Tensor._wrap(
                            backend.get_array_module(flat_grad).asarray(lr, dtype=lr_dtype))
                else:
                    t_typed = lr_value
                t = _number(t_typed, flat_grad.dtype)
                gtd = flat_grad.dot(d)
                if gtd > -tolerance_change:                 # not a descent direction
                    break
                calls = 0
                if group["line_search_fn"] is not None:
                    start = [p._data.copy() for p in self._params]

                    def along(step: float) -> Tuple[float, Any]:
                        self._add(step, d)
                        value = _value(evaluate())
                        grad_there = self._flat_grad()
                        self._set(start)
                        return value, grad_there
                    loss, flat_grad, t_found, calls = _strong_wolfe(
                        along, float(t), d, loss, flat_grad, float(gtd),
                        max_ls=max_eval - evals)
                    if t_found == 0:        # no better point: back at the start, torch's 0
                        t_typed = 0
                        t = 0
                    elif t_found != float(t):               # the search moved it
                        t_typed = computed(t_found)
                        t = _number(t_typed, flat_grad.dtype)
                    self._add(t, d)
                    converged = abs(flat_grad).max() <= tolerance_grad
                else:
                    self._add(t, d)
                    converged = False
                    if iteration != max_iter:
                        loss = _value(evaluate())
                        flat_grad = self._flat_grad()
                        converged = abs(flat_grad).max() <= tolerance_grad
                        calls = 1
                evals += calls
                state["func_evals"] += calls
                if iteration == max_iter or evals >= max_eval or converged:
                    break
                if abs(d * t).max() <= tolerance_change or abs(loss - prev_loss) < \
                        tolerance_change:
                    break
        state.update(d=d, t=t_typed, old_dirs=old_dirs, old_stps=old_stps, ro=ro, H_diag=h_diag,
                     prev_flat_grad=prev_flat_grad, prev_loss=prev_loss)
        return first_loss
