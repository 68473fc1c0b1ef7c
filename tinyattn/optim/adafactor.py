"""``Adafactor`` (Shazeer & Stern, 2018) as torch 2.13's ``torch.optim.Adafactor``
(docs/optim.md#adafactor): second moments kept as a row factor and a column factor for a
matrix (memory O(n + m) instead of O(n m)), a relative step size, and update clipping.

For step t, gradient G (-G with maximize), parameter theta (its last two dims factored)::

    beta2_hat = 1 - t^beta2_decay,   rho = min(lr, 1 / sqrt(t))
    alpha = max(eps2, RMS(theta)) * rho                  (RMS before weight decay)
    theta <- theta * (1 - lr * weight_decay)
    matrix: R <- lerp(R, mean(G^2, last dim), 1 - beta2_hat)      (row_var, (..., n, 1))
            C <- lerp(C, mean(G^2, dim -2), 1 - beta2_hat)        (col_var, (..., 1, m))
            V = R C / max(mean(R, dim -2), eps1)
    vector: V <- lerp(V, G^2, 1 - beta2_hat)                       (variance)
    U = G / sqrt(max(V, eps1^2)),   theta <- theta - alpha U / max(1, RMS(U) / d)

eps1 = None means the machine epsilon of the (first) parameter's dtype, as torch.
"""
from __future__ import annotations

import math
from typing import Any, Callable, Dict, Optional, Tuple

import numpy as np

from .. import backend
from ..tensor import Tensor
from .optimizer import Optimizer, ParamsT, check_hyperparameter

__all__ = ["Adafactor"]


class Adafactor(Optimizer):
    """Adafactor with torch's signature, state (``step``, ``row_var`` and ``col_var`` for
    parameters of 2 or more dims, ``variance`` for vectors) and arithmetic."""

    _shapeless_state = frozenset({"row_var", "col_var"})

    _tensor_scalar_state = ("step",)                # torch's 0-d float32 tensor

    def __init__(self, params: ParamsT, lr: float = 1e-2, beta2_decay: float = -0.8,
                 eps: Tuple[Optional[float], float] = (None, 1e-3), d: float = 1.0,
                 weight_decay: float = 0.0, *, foreach: Optional[bool] = None,
                 maximize: bool = False):
        defaults = dict(lr=lr, beta2_decay=beta2_decay, eps=eps, d=d,
                        weight_decay=weight_decay, foreach=foreach, maximize=bool(maximize))
        super().__init__(params, defaults)

    def _check_group(self, group: Dict[str, Any]) -> Dict[str, Any]:
        group["lr"] = check_hyperparameter("lr (learning rate)", group["lr"])
        beta2_decay = float(group["beta2_decay"])
        if not 0.0 >= beta2_decay:
            raise ValueError(f"beta2_decay should be <= 0 but is: {beta2_decay}")
        group["beta2_decay"] = beta2_decay
        eps = group["eps"]
        if not isinstance(eps, (tuple, list)) or len(eps) != 2:
            raise ValueError(f"eps must be a pair (eps1 or None, eps2), got {eps!r}")
        eps1 = None if eps[0] is None else check_hyperparameter("epsilon1", eps[0])
        group["eps"] = (eps1, check_hyperparameter("epsilon2", eps[1]))
        group["d"] = check_hyperparameter("clipping threshold d", group["d"], low=1.0)
        group["weight_decay"] = check_hyperparameter("weight_decay", group["weight_decay"])
        return group

    def _torch_writes(self, group: Dict[str, Any], first: bool) -> Dict[str, int]:
        """How many in-place writes torch's step makes into each state tensor and into the parameter
        ({key: count}, "param"), so their ``_version`` goes on as torch's (optimizer.py:
        _count_writes_as_torch): ``row_var``/``col_var`` (or ``variance``) ``lerp_``, ``param.add_``
        (and ``param.mul_`` for weight decay)."""
        decay = 1 if group.get("weight_decay") else 0
        return {"row_var": 1, "col_var": 1, "variance": 1, "param": 1 + decay}

    def step(self, closure: Optional[Callable[[], Any]] = None) -> Any:
        """One update of every parameter that has a gradient; returns the closure's loss."""
        loss = self._evaluate(closure)
        for group in self.param_groups:
            lr, d, weight_decay = float(group["lr"]), group["d"], group["weight_decay"]
            eps1, eps2 = group["eps"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                xp = backend.get_array_module(p._data)
                grad = -p.grad._data if group.get("maximize") else p.grad._data
                state = self.state.setdefault(p, {})
                if not state:
                    state["step"] = 0
                    # Tensors, as torch's state holds (sharing the arrays updated below)
                    if grad.ndim > 1:
                        state["row_var"] = Tensor._wrap(
                            xp.zeros(grad.shape[:-1] + (1,), grad.dtype))
                        state["col_var"] = Tensor._wrap(
                            xp.zeros(grad.shape[:-2] + (1,) + grad.shape[-1:], grad.dtype))
                    else:
                        state["variance"] = Tensor._wrap(xp.zeros_like(grad))
                if eps1 is None:            # torch: set once, from the first parameter
                    eps1 = float(np.finfo(p._data.dtype).eps)
                state["step"] = t = int(state["step"]) + 1
                weight = 1.0 * t ** group["beta2_decay"]            # 1 - beta2_hat
                rho = min(lr, 1 / math.sqrt(t))
                size = max(p._data.size, 1)
                alpha = max(eps2, float(xp.linalg.norm(p._data.ravel())) / size ** 0.5) * rho
                if weight_decay != 0:
                    p._data *= 1 - lr * weight_decay
                if grad.ndim > 1:
                    row_var, col_var = state["row_var"]._data, state["col_var"]._data
                    row_var += weight * ((grad * grad).mean(-1, keepdims=True) - row_var)
                    col_var += weight * ((grad * grad).mean(-2, keepdims=True) - col_var)
                    estimate = (row_var @ col_var) / xp.maximum(
                        row_var.mean(-2, keepdims=True), eps1)
                else:
                    variance = state["variance"]._data
                    variance += weight * (grad * grad - variance)
                    estimate = variance.copy()
                update = grad / xp.sqrt(xp.maximum(estimate, eps1 * eps1))
                rms = float(xp.linalg.norm(update.ravel())) / (max(update.size, 1) ** 0.5 * d)
                p._data -= (alpha / max(1.0, rms)) * update
                p._bump_version()
        return loss
