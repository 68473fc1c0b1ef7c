"""``SGD``: stochastic gradient descent with optional momentum, Nesterov and weight decay.

The update, exactly as ``torch.optim.SGD`` (see docs/optim.md#sgd), for gradient g_t of
parameter theta at step t::

    g   = -g_t if maximize else g_t                         (climb instead of descend)
    g   = g + weight_decay * theta                         (L2 penalty, if weight_decay > 0)
    b_t = g                           at the first step     (momentum buffer, if momentum > 0)
    b_t = momentum * b_{t-1} + (1 - dampening) * g         afterwards
    d   = g + momentum * b_t  if nesterov  else  b_t       (d = g when momentum == 0)
    theta <- theta - lr * d
"""
from __future__ import annotations

from typing import Any, Callable, Dict, Optional

from .. import backend
from ..tensor import Tensor
from .optimizer import Optimizer, ParamsT, check_hyperparameter

__all__ = ["SGD"]


class SGD(Optimizer):
    """Stochastic gradient descent, with PyTorch's signature and arithmetic.

    Args:
        params: ``model.parameters()``, or a list of dicts (parameter groups) whose keys
            override the defaults below for their parameters.
        lr: learning rate (>= 0).
        momentum: momentum factor (>= 0); 0 means plain SGD.
        dampening: scales the new gradient's share of the momentum buffer by
            ``1 - dampening``.
        weight_decay: L2 penalty coefficient, added to the gradient as
            ``weight_decay * theta``.
        nesterov: use Nesterov momentum (needs ``momentum > 0`` and ``dampening == 0``).
        maximize: climb the objective instead of descending it (the gradient's sign flips
            before everything else, as in PyTorch).
        foreach, fused: PyTorch's choices of kernel, with the same arithmetic; accepted and
            ignored (tinyattn has one implementation).
    """

    _late_defaults = {"maximize": False}      # absent from older checkpoints

    def __init__(self, params: ParamsT, lr: float = 1e-3, momentum: float = 0,
                 dampening: float = 0, weight_decay: float = 0, nesterov: bool = False,
                 *, maximize: bool = False, foreach: Optional[bool] = None,
                 differentiable: bool = False, fused: Optional[bool] = None):
        defaults = dict(lr=lr, momentum=momentum, dampening=dampening,
                        weight_decay=weight_decay, nesterov=nesterov, maximize=bool(maximize),
                        foreach=foreach, differentiable=bool(differentiable), fused=fused)
        super().__init__(params, defaults)
        self._kernel_options(foreach, fused, differentiable=differentiable)

    def _check_group(self, group: Dict[str, Any]) -> Dict[str, Any]:
        group["lr"] = check_hyperparameter("lr (learning rate)", group["lr"], nan_ok=True)
        group["momentum"] = check_hyperparameter("momentum", group["momentum"], nan_ok=True)
        group["dampening"] = check_hyperparameter("dampening", group["dampening"],
                                                  low=-float("inf"))
        group["weight_decay"] = check_hyperparameter("weight_decay", group["weight_decay"],
                                                     nan_ok=True)
        group["nesterov"] = bool(group["nesterov"])
        group["maximize"] = bool(group["maximize"])
        if group["nesterov"] and (group["momentum"] <= 0 or group["dampening"] != 0):
            raise ValueError(f"Nesterov momentum needs momentum > 0 and dampening == 0, got "
                             f"momentum={group['momentum']} and dampening={group['dampening']}")
        return group

    def _torch_writes(self, group: Dict[str, Any], first: bool) -> Dict[str, int]:
        """How many in-place writes torch's step makes into each state tensor and into the parameter
        ({key: count}, "param"), so their ``_version`` goes on as torch's (optimizer.py:
        _count_writes_as_torch): ``buf.mul_(momentum).add_(grad)`` after the first step, whose
        buffer is a clone of the gradient; ``param.add_``."""
        return {"momentum_buffer": 0 if first else 2, "param": 1}

    def step(self, closure: Optional[Callable[[], Any]] = None) -> Any:
        """One update of every parameter that has a gradient; returns the closure's loss."""
        loss = self._evaluate(closure)
        for group in self.param_groups:
            lr, momentum = float(group["lr"]), group["momentum"]  # a user may have set a NumPy lr
            dampening, weight_decay = group["dampening"], group["weight_decay"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                grad = -p.grad._data if group["maximize"] else p.grad._data
                if weight_decay != 0:
                    grad = grad + weight_decay * p._data  # a new array: p.grad stays as it was
                if momentum != 0:
                    state = self.state.setdefault(p, {})
                    held = state.get("momentum_buffer")
                    if held is None:
                        # first step: the buffer is (a copy of) the gradient itself; an array
                        # even for a 0-d parameter, where NumPy arithmetic gives scalars; a
                        # Tensor in the state, as torch's, sharing the array
                        buf = backend.get_array_module(grad).array(grad, copy=True)
                        state["momentum_buffer"] = Tensor._wrap(buf)
                    else:
                        buf = held._data
                        buf *= momentum
                        buf += (1.0 - dampening) * grad
                    grad = grad + momentum * buf if group["nesterov"] else buf
                p._data -= lr * grad
                p._bump_version()   # in place: a graph that saved p now refuses to backward
        return loss
