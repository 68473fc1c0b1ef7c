"""``RMSprop`` and ``Adagrad``: a learning rate per element, from the gradients' squares.

The updates, exactly as ``torch.optim.RMSprop`` / ``Adagrad`` (docs/optim.md#rmsprop-and-adagrad),
for gradient g_t of parameter theta::

    RMSprop:  g = g_t + weight_decay * theta     (g_t is -g_t with maximize=True, both)
              s_t = alpha * s_{t-1} + (1 - alpha) * g * g             (s_0 = 0)
              centered: a_t = a_{t-1} + (1 - alpha) * (g - a_{t-1}),   d = sqrt(s_t - a_t^2) + eps
              else:     d = sqrt(s_t) + eps
              momentum: b_t = momentum * b_{t-1} + g / d,  theta <- theta - lr * b_t
              else:     theta <- theta - lr * g / d
    Adagrad:  g = g_t + weight_decay * theta,  clr = lr / (1 + (t - 1) * lr_decay)
              S_t = S_{t-1} + g * g   (S_0 = initial_accumulator_value)
              theta <- theta - clr * g / (sqrt(S_t) + eps)
"""
from __future__ import annotations

from typing import Any, Callable, Dict, Optional

from .. import backend
from ..tensor import Tensor
from .optimizer import Optimizer, ParamsT, check_hyperparameter

__all__ = ["RMSprop", "Adagrad"]


class RMSprop(Optimizer):
    """RMSprop (Hinton's lecture 6e), with PyTorch's signature and arithmetic: each element's
    step is divided by a running root mean square of its gradients."""

    _tensor_scalar_state = ("step",)                # torch's 0-d float32 tensor

    def __init__(self, params: ParamsT, lr: float = 1e-2, alpha: float = 0.99,
                 eps: float = 1e-8, weight_decay: float = 0, momentum: float = 0,
                 centered: bool = False, capturable: bool = False,
                 foreach: Optional[bool] = None, maximize: bool = False,
                 differentiable: bool = False):
        defaults = dict(lr=lr, momentum=momentum, alpha=alpha, eps=eps, centered=centered,
                        weight_decay=weight_decay, capturable=bool(capturable),
                        foreach=foreach, maximize=bool(maximize),
                        differentiable=bool(differentiable))
        super().__init__(params, defaults)
        self._kernel_options(foreach, None, capturable, differentiable)

    _late_defaults = {"maximize": False}      # absent from older checkpoints

    def _check_group(self, group: Dict[str, Any]) -> Dict[str, Any]:
        group["lr"] = check_hyperparameter("lr (learning rate)", group["lr"])
        group["alpha"] = check_hyperparameter("alpha", group["alpha"], high=1.0)
        for name in ("eps", "weight_decay", "momentum"):
            group[name] = check_hyperparameter(name, group[name])
        group["centered"] = bool(group["centered"])
        return group

    def _torch_writes(self, group: Dict[str, Any], first: bool) -> Dict[str, int]:
        """How many in-place writes torch's step makes into each state tensor and into the parameter
        ({key: count}, "param"), so their ``_version`` goes on as torch's (optimizer.py:
        _count_writes_as_torch): ``square_avg.mul_().addcmul_()``, ``grad_avg.lerp_`` (centered),
        ``buf.mul_().addcdiv_()`` (momentum), one write into the parameter."""
        return {"square_avg": 2, "grad_avg": 1, "momentum_buffer": 2, "param": 1}

    def step(self, closure: Optional[Callable[[], Any]] = None) -> Any:
        """One update of every parameter that has a gradient; returns the closure's loss."""
        loss = self._evaluate(closure)
        for group in self.param_groups:
            lr, alpha, eps = float(group["lr"]), group["alpha"], group["eps"]
            weight_decay, momentum = group["weight_decay"], group["momentum"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                xp = backend.get_array_module(p._data)
                state = self.state.setdefault(p, {})
                if not state:
                    state["step"] = 0
                    # Tensors, as torch's state holds (sharing the arrays updated below)
                    state["square_avg"] = Tensor._wrap(xp.zeros_like(p._data))
                    if momentum > 0:
                        state["momentum_buffer"] = Tensor._wrap(xp.zeros_like(p._data))
                    if group["centered"]:
                        state["grad_avg"] = Tensor._wrap(xp.zeros_like(p._data))
                state["step"] = int(state["step"]) + 1
                grad = -p.grad._data if group.get("maximize") else p.grad._data
                if weight_decay != 0:
                    grad = grad + weight_decay * p._data
                square_avg = state["square_avg"]._data
                square_avg *= alpha
                square_avg += (1.0 - alpha) * (grad * grad)
                if group["centered"]:
                    grad_avg = state["grad_avg"]._data
                    grad_avg += (1.0 - alpha) * (grad - grad_avg)
                    denom = xp.sqrt(square_avg - grad_avg * grad_avg) + eps
                else:
                    denom = xp.sqrt(square_avg) + eps
                if momentum > 0:
                    buf = state["momentum_buffer"]._data
                    buf *= momentum
                    buf += grad / denom
                    p._data -= lr * buf
                else:
                    p._data -= lr * (grad / denom)
                p._bump_version()
        return loss


class Adagrad(Optimizer):
    """Adagrad (Duchi et al., 2011), with PyTorch's signature and arithmetic: each element's
    step is divided by the root of the sum of all its squared gradients so far."""

    _tensor_scalar_state = ("step",)                # torch's 0-d float32 tensor

    def __init__(self, params: ParamsT, lr: float = 1e-2, lr_decay: float = 0,
                 weight_decay: float = 0, initial_accumulator_value: float = 0,
                 eps: float = 1e-10, foreach: Optional[bool] = None, *,
                 maximize: bool = False, differentiable: bool = False,
                 fused: Optional[bool] = None):
        defaults = dict(lr=lr, lr_decay=lr_decay, eps=eps, weight_decay=weight_decay,
                        initial_accumulator_value=initial_accumulator_value,
                        foreach=foreach, maximize=bool(maximize),
                        differentiable=bool(differentiable), fused=fused)
        super().__init__(params, defaults)
        self._kernel_options(foreach, fused, differentiable=differentiable)
        # torch's Adagrad fills its state when it is built, not at the first step:
        # opt.state[p]["sum"] and state_dict() hold the accumulators before any step
        for group in self.param_groups:
            for p in group["params"]:
                xp = backend.get_array_module(p._data)
                self.state[p].update(step=0, sum=Tensor._wrap(
                    xp.full_like(p._data, group["initial_accumulator_value"])))
        self._numbers_as_scalars({})

    _late_defaults = {"maximize": False}      # absent from older checkpoints

    def _check_group(self, group: Dict[str, Any]) -> Dict[str, Any]:
        for name in ("lr", "lr_decay", "weight_decay", "initial_accumulator_value", "eps"):
            group[name] = check_hyperparameter(name, group[name])
        return group

    def _torch_writes(self, group: Dict[str, Any], first: bool) -> Dict[str, int]:
        """How many in-place writes torch's step makes into each state tensor and into the parameter
        ({key: count}, "param"), so their ``_version`` goes on as torch's (optimizer.py:
        _count_writes_as_torch): ``state_sum.addcmul_``, ``param.addcdiv_``."""
        return {"sum": 1, "param": 1}

    def step(self, closure: Optional[Callable[[], Any]] = None) -> Any:
        """One update of every parameter that has a gradient; returns the closure's loss."""
        loss = self._evaluate(closure)
        for group in self.param_groups:
            lr, lr_decay, eps = float(group["lr"]), group["lr_decay"], group["eps"]
            weight_decay = group["weight_decay"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                xp = backend.get_array_module(p._data)
                state = self.state.setdefault(p, {})
                if not state:
                    state["step"] = 0
                    state["sum"] = Tensor._wrap(
                        xp.full_like(p._data, group["initial_accumulator_value"]))
                state["step"] = t = int(state["step"]) + 1
                grad = -p.grad._data if group.get("maximize") else p.grad._data
                if weight_decay != 0:
                    grad = grad + weight_decay * p._data
                clr = lr / (1 + (t - 1) * lr_decay)
                total = state["sum"]._data
                total += grad * grad
                p._data -= clr * (grad / (xp.sqrt(total) + eps))
                p._bump_version()
        return loss
