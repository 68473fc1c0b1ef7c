"""``Adadelta``, ``Rprop`` and ``ASGD``, exactly as ``torch.optim``'s
(docs/optim.md#adadelta-rprop-and-asgd).

For gradient g_t of parameter theta (g_t is -g_t with maximize=True)::

    Adadelta: g = g_t + weight_decay * theta
              v_t = rho v_{t-1} + (1 - rho) g^2                       (square_avg, v_0 = 0)
              delta = sqrt(u_{t-1} + eps) / sqrt(v_t + eps) * g
              u_t = rho u_{t-1} + (1 - rho) delta^2                   (acc_delta, u_0 = 0)
              theta <- theta - lr * delta
    Rprop:    s = sign(g_t * prev)       (prev: the last gradient used, 0 at first)
              step_size <- clamp(step_size * (etaplus if s > 0, etaminus if s < 0, 1 if 0),
                                 step_size_min, step_size_max)        (step_size_0 = lr)
              g = 0 where s < 0 (a sign flip: no move this step), g_t elsewhere
              theta <- theta - sign(g) * step_size,  prev <- g
    ASGD:     g = g_t + weight_decay * theta
              theta <- theta (1 - lambd eta) - eta g
              ax <- theta if mu = 1, else ax + mu (theta - ax)       (the running average)
              eta <- lr / (1 + lambd lr t)^alpha,  mu <- 1 / max(1, t - t0)
ASGD keeps eta and mu as torch does, in float32 (torch's 0-d state tensors; float64 under a
float64 default dtype).
"""
from __future__ import annotations

from typing import Any, Callable, Dict, Optional, Tuple

from .. import backend
from ..tensor import Tensor
from .optimizer import Optimizer, ParamsT, check_hyperparameter, scalar_dtype

__all__ = ["Adadelta", "Rprop", "ASGD"]


def _gradient(p: Any, group: Dict[str, Any]) -> Any:
    return -p.grad._data if group.get("maximize") else p.grad._data


class Adadelta(Optimizer):
    """Adadelta (Zeiler, 2012): the step is the ratio of two running root mean squares,
    of past updates and of gradients, so it needs no learning rate of its own (lr=1)."""

    _tensor_scalar_state = ("step",)                # torch's 0-d float32 tensor

    def __init__(self, params: ParamsT, lr: float = 1.0, rho: float = 0.9, eps: float = 1e-6,
                 weight_decay: float = 0, foreach: Optional[bool] = None, *,
                 capturable: bool = False, maximize: bool = False,
                 differentiable: bool = False):
        defaults = dict(lr=lr, rho=rho, eps=eps, weight_decay=weight_decay,
                        maximize=bool(maximize), capturable=bool(capturable),
                        foreach=foreach, differentiable=bool(differentiable))
        super().__init__(params, defaults)

    _late_defaults = {"maximize": False}

    def _check_group(self, group: Dict[str, Any]) -> Dict[str, Any]:
        group["lr"] = check_hyperparameter("lr (learning rate)", group["lr"])
        group["rho"] = check_hyperparameter("rho", group["rho"], high=1.0)
        group["eps"] = check_hyperparameter("eps", group["eps"])
        group["weight_decay"] = check_hyperparameter("weight_decay", group["weight_decay"])
        return group

    def _torch_writes(self, group: Dict[str, Any], first: bool) -> Dict[str, int]:
        """How many in-place writes torch's step makes into each state tensor and into the parameter
        ({key: count}, "param"), so their ``_version`` goes on as torch's (optimizer.py:
        _count_writes_as_torch): ``square_avg.mul_().addcmul_()``, ``acc_delta.mul_().addcmul_()``,
        ``param.add_``."""
        return {"square_avg": 2, "acc_delta": 2, "param": 1}

    def step(self, closure: Optional[Callable[[], Any]] = None) -> Any:
        """One update of every parameter that has a gradient; returns the closure's loss."""
        loss = self._evaluate(closure)
        for group in self.param_groups:
            lr, rho, eps = float(group["lr"]), group["rho"], group["eps"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                xp = backend.get_array_module(p._data)
                state = self.state.setdefault(p, {})
                if not state:
                    state["step"] = 0
                    # Tensors, as torch's state holds (sharing the arrays updated below)
                    state["square_avg"] = Tensor._wrap(xp.zeros_like(p._data))
                    state["acc_delta"] = Tensor._wrap(xp.zeros_like(p._data))
                state["step"] = int(state["step"]) + 1
                grad = _gradient(p, group)
                if group["weight_decay"] != 0:
                    grad = grad + group["weight_decay"] * p._data
                square_avg, acc_delta = state["square_avg"]._data, state["acc_delta"]._data
                square_avg *= rho
                square_avg += (1 - rho) * (grad * grad)
                delta = xp.sqrt(acc_delta + eps) / xp.sqrt(square_avg + eps) * grad
                acc_delta *= rho
                acc_delta += (1 - rho) * (delta * delta)
                p._data -= lr * delta
                p._bump_version()
        return loss


def _pair(name: str, value: Any) -> Tuple[float, float]:
    if not isinstance(value, (tuple, list)) or len(value) != 2:
        raise ValueError(f"{name} must be a pair of numbers, got {value!r}")
    # a Python int stays an int, as torch keeps step_sizes=(1e-6, 50)
    first, second = (v if type(v) is int else float(v) for v in value)
    return first, second


class Rprop(Optimizer):
    """Resilient backpropagation (Riedmiller & Braun, 1993): each element moves by its own
    step size in the direction of -sign(gradient); the step grows by etaplus while the sign
    holds and shrinks by etaminus when it flips."""

    _tensor_scalar_state = ("step",)                # torch's 0-d float32 tensor

    def __init__(self, params: ParamsT, lr: float = 1e-2,
                 etas: Tuple[float, float] = (0.5, 1.2),
                 step_sizes: Tuple[float, float] = (1e-6, 50), *, capturable: bool = False,
                 foreach: Optional[bool] = None, maximize: bool = False,
                 differentiable: bool = False):
        defaults = dict(lr=lr, etas=etas, step_sizes=step_sizes, foreach=foreach,
                        maximize=bool(maximize), differentiable=bool(differentiable),
                        capturable=bool(capturable))
        super().__init__(params, defaults)

    _late_defaults = {"maximize": False}

    def _check_group(self, group: Dict[str, Any]) -> Dict[str, Any]:
        group["lr"] = check_hyperparameter("lr (learning rate)", group["lr"])
        etaminus, etaplus = group["etas"] = _pair("etas", group["etas"])
        if not 0.0 < etaminus < 1.0 < etaplus:
            raise ValueError(f"Invalid eta values: {etaminus}, {etaplus}; etas = (etaminus, "
                             f"etaplus) needs 0 < etaminus < 1 < etaplus")
        group["step_sizes"] = _pair("step_sizes", group["step_sizes"])
        return group

    def _torch_writes(self, group: Dict[str, Any], first: bool) -> Dict[str, int]:
        """How many in-place writes torch's step makes into each state tensor and into the parameter
        ({key: count}, "param"), so their ``_version`` goes on as torch's (optimizer.py:
        _count_writes_as_torch): ``step_size.mul_().clamp_()``, ``prev.copy_``,
        ``param.addcmul_``."""
        return {"prev": 1, "step_size": 2, "param": 1}

    def step(self, closure: Optional[Callable[[], Any]] = None) -> Any:
        """One update of every parameter that has a gradient; returns the closure's loss."""
        loss = self._evaluate(closure)
        for group in self.param_groups:
            etaminus, etaplus = group["etas"]
            smallest, largest = group["step_sizes"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                xp = backend.get_array_module(p._data)
                state = self.state.setdefault(p, {})
                if not state:
                    state["step"] = 0
                    state["prev"] = Tensor._wrap(xp.zeros_like(p._data))
                    state["step_size"] = Tensor._wrap(xp.full_like(p._data, float(group["lr"])))
                state["step"] = int(state["step"]) + 1
                grad = _gradient(p, group)
                prev = state["prev"]._data
                sign = xp.sign(grad * prev)
                factor = xp.where(sign > 0, etaplus, xp.where(sign < 0, etaminus, 1.0))
                step_size = state["step_size"]._data
                step_size *= factor.astype(step_size.dtype)
                xp.clip(step_size, smallest, largest, out=step_size)
                grad = xp.where(sign < 0, 0, grad).astype(p._data.dtype)
                p._data -= xp.sign(grad) * step_size
                prev[...] = grad
                p._bump_version()
        return loss


class ASGD(Optimizer):
    """Averaged stochastic gradient descent (Polyak & Juditsky, 1992): SGD with a decaying
    step eta, which also keeps ``state["ax"]``, the average of the iterates after step t0."""

    def __init__(self, params: ParamsT, lr: float = 1e-2, lambd: float = 1e-4,
                 alpha: float = 0.75, t0: float = 1e6, weight_decay: float = 0,
                 foreach: Optional[bool] = None, maximize: bool = False,
                 differentiable: bool = False, capturable: bool = False):
        defaults = dict(lr=lr, lambd=lambd, alpha=alpha, t0=t0, weight_decay=weight_decay,
                        foreach=foreach, maximize=bool(maximize),
                        differentiable=bool(differentiable), capturable=bool(capturable))
        super().__init__(params, defaults)

    _late_defaults = {"maximize": False}
    _tensor_scalar_state = ("step", "eta", "mu")    # torch's 0-d float32 tensors

    def _check_group(self, group: Dict[str, Any]) -> Dict[str, Any]:
        group["lr"] = check_hyperparameter("lr (learning rate)", group["lr"])
        group["weight_decay"] = check_hyperparameter("weight_decay", group["weight_decay"])
        for name in ("lambd", "alpha", "t0"):    # a Python int stays an int, as in torch
            value = group[name]
            group[name] = value if type(value) is int else float(value)
        return group

    def _torch_writes(self, group: Dict[str, Any], first: bool) -> Dict[str, int]:
        """How many in-place writes torch's step makes into each state tensor and into the parameter
        ({key: count}, "param"), so their ``_version`` goes on as torch's (optimizer.py:
        _count_writes_as_torch): ``param.mul_().add_()``, ``ax`` once (``add_`` or ``copy_``)."""
        return {"ax": 1, "param": 2}

    def step(self, closure: Optional[Callable[[], Any]] = None) -> Any:
        """One update of every parameter that has a gradient; returns the closure's loss."""
        loss = self._evaluate(closure)
        for group in self.param_groups:
            lr, lambd, alpha, t0 = (float(group[k]) for k in ("lr", "lambd", "alpha", "t0"))
            for p in group["params"]:
                if p.grad is None:
                    continue
                xp = backend.get_array_module(p._data)
                state = self.state.setdefault(p, {})
                if not state:
                    state["step"] = 0
                    state["eta"] = float(scalar_dtype().type(lr))   # torch's 0-d tensors
                    state["mu"] = 1.0
                    state["ax"] = Tensor._wrap(xp.zeros_like(p._data))
                state["step"] = t = int(state["step"]) + 1
                grad = _gradient(p, group)
                if group["weight_decay"] != 0:
                    grad = grad + group["weight_decay"] * p._data
                eta = state["eta"]
                p._data *= 1 - lambd * eta
                p._data -= eta * grad
                ax = state["ax"]._data
                if state["mu"] != 1:
                    ax += state["mu"] * (p._data - ax)
                else:
                    ax[...] = p._data
                rounded = scalar_dtype().type     # float32 (float64 under a float64 default)
                state["eta"] = float(rounded(lr / ((1 + lambd * lr * t) ** alpha)))
                state["mu"] = float(rounded(1 / max(1, t - t0)))
                p._bump_version()
        return loss
