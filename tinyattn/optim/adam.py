"""``Adam`` and ``AdamW``: adaptive moment estimation, with L2 or decoupled weight decay.

The update, exactly as ``torch.optim.Adam`` / ``AdamW`` (see docs/optim.md#adam), for
gradient g_t of parameter theta at step t = 1, 2, ...::

    theta <- theta * (1 - lr * weight_decay)               (AdamW only: decoupled decay)
    g     = g_t + weight_decay * theta                     (Adam only: L2 in the gradient)
    m_t   = beta1 * m_{t-1} + (1 - beta1) * g              (first moment, m_0 = 0)
    v_t   = beta2 * v_{t-1} + (1 - beta2) * g * g          (second moment, v_0 = 0)
    theta <- theta - lr / (1 - beta1^t) * m_t / (sqrt(v_t) / sqrt(1 - beta2^t) + eps)
"""
from __future__ import annotations

import math
from typing import Any, Callable, Dict, Optional, Tuple

from .. import backend
from .optimizer import Optimizer, ParamsT, check_hyperparameter
from ..tensor import Tensor

__all__ = ["Adam", "AdamW", "check_adam_group"]


def check_adam_group(group: Dict[str, Any]) -> Dict[str, Any]:
    """Validate and normalize the hyperparameters the Adam family shares: lr, betas, eps,
    weight_decay (and the flags maximize, amsgrad, decoupled_weight_decay if present)."""
    group["lr"] = check_hyperparameter("lr (learning rate)", group["lr"])
    betas = group["betas"]
    if not isinstance(betas, (tuple, list)) or len(betas) != 2:
        raise ValueError(f"betas must be a pair (beta1, beta2) such as (0.9, 0.999), "
                         f"got {betas!r}")
    group["betas"] = (
        check_hyperparameter("betas[0]", betas[0], high=1.0, high_inclusive=False),
        check_hyperparameter("betas[1]", betas[1], high=1.0, high_inclusive=False),
    )
    group["eps"] = check_hyperparameter("eps", group["eps"])
    group["weight_decay"] = check_hyperparameter("weight_decay", group["weight_decay"])
    for flag in ("maximize", "amsgrad", "decoupled_weight_decay"):
        if flag in group:
            group[flag] = bool(group[flag])
    return group


class Adam(Optimizer):
    """Adam (Kingma & Ba, 2015), with PyTorch's signature and arithmetic.

    Args:
        params: ``model.parameters()`` or a list of parameter-group dicts.
        lr: learning rate (>= 0).
        betas: decay rates of the first and second moment averages, each in [0, 1).
        eps: added to the denominator for numerical safety (>= 0).
        weight_decay: L2 penalty coefficient, added to the gradient (>= 0). For weight decay
            that does not pass through the adaptive scaling, use ``AdamW``.
        amsgrad: divide by the largest second moment seen so far instead of the current one
            (Reddi et al., 2018), as PyTorch's ``amsgrad=True``.
        maximize: climb the objective instead of descending it.
        foreach, fused: PyTorch's choices of kernel, with the same arithmetic; accepted and
            ignored (tinyattn has one implementation).
    """

    decoupled_weight_decay = False

    _tensor_scalar_state = ("step",)                # torch's 0-d float32 tensor

    def __init__(self, params: ParamsT, lr: float = 1e-3,
                 betas: Tuple[float, float] = (0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0, amsgrad: bool = False, *,
                 foreach: Optional[bool] = None, maximize: bool = False,
                 capturable: bool = False, differentiable: bool = False,
                 fused: Optional[bool] = None, decoupled_weight_decay: bool = False):
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay,
                        amsgrad=bool(amsgrad), maximize=bool(maximize), foreach=foreach,
                        capturable=bool(capturable), differentiable=bool(differentiable),
                        fused=fused, decoupled_weight_decay=bool(decoupled_weight_decay))
        if foreach and not capturable and isinstance(lr, Tensor):
            raise ValueError("lr as a Tensor is not supported for capturable=False and "
                             "foreach=True")
        super().__init__(params, defaults)
        self._kernel_options(foreach, fused, capturable, differentiable)

    _late_defaults = {"amsgrad": False, "maximize": False}  # absent from older checkpoints

    def _check_group(self, group: Dict[str, Any]) -> Dict[str, Any]:
        return check_adam_group(group)

    def _torch_writes(self, group: Dict[str, Any], first: bool) -> Dict[str, int]:
        """How many in-place writes torch's step makes into each state tensor and into the parameter
        ({key: count}, "param"), so their ``_version`` goes on as torch's (optimizer.py:
        _count_writes_as_torch): ``exp_avg.lerp_``, ``exp_avg_sq.mul_().addcmul_()``,
        ``torch.maximum(..., out=max_exp_avg_sq)``, ``param.addcdiv_`` (and ``param.mul_`` for
        decoupled weight decay)."""
        decoupled = group.get("decoupled_weight_decay") or getattr(self, "decoupled_weight_decay",
                                                                     False)
        decay = 1 if group.get("weight_decay") and decoupled else 0
        return {"exp_avg": 1, "exp_avg_sq": 2, "max_exp_avg_sq": 1, "param": 1 + decay}

    def step(self, closure: Optional[Callable[[], Any]] = None) -> Any:
        """One update of every parameter that has a gradient; returns the closure's loss."""
        loss = self._evaluate(closure)
        for group in self.param_groups:
            lr, eps, weight_decay = float(group["lr"]), group["eps"], group["weight_decay"]
            beta1, beta2 = group["betas"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                xp = backend.get_array_module(p._data)
                state = self.state.setdefault(p, {})
                if not state:  # first step: moments start at zero, on p's device and dtype
                    state["step"] = 0
                    # Tensors, as torch's state holds (sharing the arrays updated below)
                    state["exp_avg"] = Tensor._wrap(xp.zeros_like(p._data))
                    state["exp_avg_sq"] = Tensor._wrap(xp.zeros_like(p._data))
                if group.get("amsgrad") and "max_exp_avg_sq" not in state:
                    state["max_exp_avg_sq"] = Tensor._wrap(xp.zeros_like(p._data))
                state["step"] = t = int(state["step"]) + 1
                grad = -p.grad._data if group.get("maximize") else p.grad._data
                if weight_decay != 0:
                    if group.get("decoupled_weight_decay", self.decoupled_weight_decay):
                        p._data *= 1.0 - lr * weight_decay  # AdamW: shrink theta directly
                    else:
                        grad = grad + weight_decay * p._data  # Adam: L2 term in the gradient
                m, v = state["exp_avg"]._data, state["exp_avg_sq"]._data
                m *= beta1
                m += (1.0 - beta1) * grad
                v *= beta2
                v += (1.0 - beta2) * (grad * grad)
                # Bias corrections in Python floats: they never touch the arrays' dtype.
                step_size = lr / (1.0 - beta1 ** t)
                if group.get("amsgrad"):    # the largest second moment so far
                    v_max = state["max_exp_avg_sq"]._data
                    xp.maximum(v_max, v, out=v_max)
                    v = v_max
                denom = xp.sqrt(v) / math.sqrt(1.0 - beta2 ** t) + eps
                p._data -= step_size * m / denom
                p._bump_version()   # in place: a graph that saved p now refuses to backward
        return loss


class AdamW(Adam):
    """AdamW (Loshchilov & Hutter, 2019): Adam with decoupled weight decay.

    Same arguments as ``Adam``, but ``weight_decay`` (default 1e-2) shrinks the parameters
    directly, ``theta <- theta * (1 - lr * weight_decay)``, instead of being added to the
    gradient, so the decay is not divided by the adaptive denominator. docs/optim.md says why.
    """

    decoupled_weight_decay = True

    def __init__(self, params: ParamsT, lr: float = 1e-3,
                 betas: Tuple[float, float] = (0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 1e-2, amsgrad: bool = False, *, maximize: bool = False,
                 foreach: Optional[bool] = None, capturable: bool = False,
                 differentiable: bool = False, fused: Optional[bool] = None):
        super().__init__(params, lr=lr, betas=betas, eps=eps, weight_decay=weight_decay,
                         amsgrad=amsgrad, maximize=maximize, foreach=foreach,
                         capturable=capturable, differentiable=differentiable, fused=fused,
                         decoupled_weight_decay=True)
