"""``NAdam``, ``RAdam`` and ``Adamax``: three variations on Adam, with PyTorch's signatures
and arithmetic (docs/optim.md#nadam-radam-and-adamax). For gradient g_t of parameter theta at
step t = 1, 2, ..., after ``g = -g_t if maximize`` and weight decay (L2 in the gradient, or
with ``decoupled_weight_decay`` theta <- theta * (1 - lr * weight_decay) as AdamW)::

    m_t = beta1 m_{t-1} + (1 - beta1) g,   v_t = beta2 v_{t-1} + (1 - beta2) g^2   (as Adam)

    NAdam:   mu_t = beta1 (1 - 0.5 * 0.96^(t psi))            (psi = momentum_decay)
             d = sqrt(v_t / (1 - beta2^t)) + eps
             theta <- theta - lr (1 - mu_t) / (1 - prod_{i<=t} mu_i) * g / d
                            - lr mu_{t+1} / (1 - prod_{i<=t+1} mu_i) * m_t / d
    RAdam:   rho_inf = 2 / (1 - beta2) - 1,  rho_t = rho_inf - 2 t beta2^t / (1 - beta2^t)
             m_hat = m_t / (1 - beta1^t)
             rho_t > 5:  r = sqrt((rho_t-4)(rho_t-2) rho_inf / ((rho_inf-4)(rho_inf-2) rho_t))
                         theta <- theta - lr m_hat r sqrt(1 - beta2^t) / (sqrt(v_t) + eps)
             else:       theta <- theta - lr m_hat                  (SGD with momentum)
    Adamax:  u_t = max(beta2 u_{t-1}, |g| + eps)                   (instead of v_t)
             theta <- theta - lr / (1 - beta1^t) * m_t / u_t
"""
from __future__ import annotations

from typing import Any, Callable, Dict, Optional, Tuple

from .. import backend
from ..tensor import Tensor
from .adam import check_adam_group
from .optimizer import Optimizer, ParamsT, check_hyperparameter, scalar_dtype

__all__ = ["NAdam", "RAdam", "Adamax"]


def _moments(optimizer: Optimizer, p: Any, group: Dict[str, Any], second: str
             ) -> Tuple[Dict[str, Any], Any]:
    """p's state (created at the first step), its step count advanced, and the gradient
    with maximize and weight decay applied (decoupled decay shrinks p itself)."""
    xp = backend.get_array_module(p._data)
    state = optimizer.state.setdefault(p, {})
    if not state:
        state["step"] = 0
        if "momentum_decay" in group:
            state["mu_product"] = 1.0
        # Tensors, as torch's state holds (sharing the arrays the steps update in place)
        state["exp_avg"] = Tensor._wrap(xp.zeros_like(p._data))
        state[second] = Tensor._wrap(xp.zeros_like(p._data))
    state["step"] = int(state["step"]) + 1
    grad = -p.grad._data if group["maximize"] else p.grad._data
    lr, weight_decay = float(group["lr"]), group["weight_decay"]
    if weight_decay != 0:
        if group.get("decoupled_weight_decay"):
            p._data *= 1.0 - lr * weight_decay
        else:
            grad = grad + weight_decay * p._data
    exp_avg = state["exp_avg"]._data
    exp_avg += (1.0 - group["betas"][0]) * (grad - exp_avg)   # torch's lerp
    return state, grad


class NAdam(Optimizer):
    """Adam with Nesterov momentum (Dozat, 2016), with PyTorch's signature and arithmetic:
    the step uses the momentum of the *next* step, and ``momentum_decay`` (psi) warms beta1
    up over the first few hundred steps. ``decoupled_weight_decay=True`` is NAdamW. The
    product of the mu's is a Python float (float64); PyTorch keeps it in a float32 tensor
    unless its default dtype is float64."""

    def __init__(self, params: ParamsT, lr: float = 2e-3,
                 betas: Tuple[float, float] = (0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0, momentum_decay: float = 4e-3,
                 decoupled_weight_decay: bool = False, *, foreach: Optional[bool] = None,
                 maximize: bool = False, capturable: bool = False,
                 differentiable: bool = False):
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay,
                        momentum_decay=momentum_decay,
                        decoupled_weight_decay=decoupled_weight_decay, maximize=maximize,
                        foreach=foreach, capturable=bool(capturable),
                        differentiable=bool(differentiable))
        super().__init__(params, defaults)
        self._kernel_options(foreach, None, capturable, differentiable)

    _tensor_scalar_state = ("step", "mu_product")   # torch's 0-d float32 tensors

    def _check_group(self, group: Dict[str, Any]) -> Dict[str, Any]:
        group["momentum_decay"] = check_hyperparameter("momentum_decay",
                                                       group["momentum_decay"])
        return check_adam_group(group)

    def _torch_writes(self, group: Dict[str, Any], first: bool) -> Dict[str, int]:
        """How many in-place writes torch's step makes into each state tensor and into the parameter
        ({key: count}, "param"), so their ``_version`` goes on as torch's (optimizer.py:
        _count_writes_as_torch): ``exp_avg.lerp_``, ``exp_avg_sq.mul_().addcmul_()``, two
        ``param.addcdiv_`` (and ``param.mul_`` for decoupled weight decay)."""
        decoupled = group.get("decoupled_weight_decay") or getattr(self, "decoupled_weight_decay",
                                                                     False)
        decay = 1 if group.get("weight_decay") and decoupled else 0
        return {"exp_avg": 1, "exp_avg_sq": 2, "param": 2 + decay}

    def step(self, closure: Optional[Callable[[], Any]] = None) -> Any:
        """One update of every parameter that has a gradient; returns the closure's loss."""
        loss = self._evaluate(closure)
        for group in self.param_groups:
            lr, eps, psi = float(group["lr"]), group["eps"], group["momentum_decay"]
            beta1, beta2 = group["betas"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                xp = backend.get_array_module(p._data)
                state, grad = _moments(self, p, group, "exp_avg_sq")
                t = state["step"]
                v = state["exp_avg_sq"]._data
                v *= beta2
                v += (1.0 - beta2) * (grad * grad)
                mu = beta1 * (1.0 - 0.5 * 0.96 ** (t * psi))
                mu_next = beta1 * (1.0 - 0.5 * 0.96 ** ((t + 1) * psi))
                # torch keeps mu_product as a float32 0-d tensor (float64 under a float64
                # default dtype) and multiplies it in that dtype
                # (mu rounded to float32 first); the same rounding here keeps the trajectory
                # torch's and lets a float32 state dict resume it bit for bit
                rounded = scalar_dtype().type     # float32 (float64 under a float64 default)
                mu_product = float(rounded(state["mu_product"]) * rounded(mu))
                state["mu_product"] = mu_product
                denom = xp.sqrt(v / (1.0 - beta2 ** t)) + eps
                p._data += (-lr * (1.0 - mu) / (1.0 - mu_product)) * (grad / denom)
                p._data += (-lr * mu_next / (1.0 - mu_product * mu_next)) * (
                    state["exp_avg"]._data / denom)
                p._bump_version()
        return loss


class RAdam(Optimizer):
    """Rectified Adam (Liu et al., 2020), with PyTorch's signature and arithmetic: while the
    variance estimate is too young to trust (rho_t <= 5, the first ~6 steps with beta2 =
    0.999) it takes a plain momentum step; then Adam's step times the rectification r.
    ``decoupled_weight_decay=True`` decays as AdamW."""

    _tensor_scalar_state = ("step",)                # torch's 0-d float32 tensor

    def __init__(self, params: ParamsT, lr: float = 1e-3,
                 betas: Tuple[float, float] = (0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0, decoupled_weight_decay: bool = False, *,
                 foreach: Optional[bool] = None, maximize: bool = False,
                 capturable: bool = False, differentiable: bool = False):
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay,
                        maximize=maximize, foreach=foreach, capturable=bool(capturable),
                        decoupled_weight_decay=decoupled_weight_decay,
                        differentiable=bool(differentiable))
        super().__init__(params, defaults)
        self._kernel_options(foreach, None, capturable, differentiable)

    def _check_group(self, group: Dict[str, Any]) -> Dict[str, Any]:
        return check_adam_group(group)

    def _torch_writes(self, group: Dict[str, Any], first: bool) -> Dict[str, int]:
        """How many in-place writes torch's step makes into each state tensor and into the parameter
        ({key: count}, "param"), so their ``_version`` goes on as torch's (optimizer.py:
        _count_writes_as_torch): ``exp_avg.lerp_``, ``exp_avg_sq.mul_().addcmul_()``, one write into
        the parameter (and ``param.mul_`` for decoupled weight decay)."""
        decoupled = group.get("decoupled_weight_decay") or getattr(self, "decoupled_weight_decay",
                                                                     False)
        decay = 1 if group.get("weight_decay") and decoupled else 0
        return {"exp_avg": 1, "exp_avg_sq": 2, "param": 1 + decay}

    def step(self, closure: Optional[Callable[[], Any]] = None) -> Any:
        """One update of every parameter that has a gradient; returns the closure's loss."""
        loss = self._evaluate(closure)
        for group in self.param_groups:
            lr, eps = float(group["lr"]), group["eps"]
            beta1, beta2 = group["betas"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                xp = backend.get_array_module(p._data)
                state, grad = _moments(self, p, group, "exp_avg_sq")
                t = state["step"]
                v = state["exp_avg_sq"]._data
                v *= beta2
                v += (1.0 - beta2) * (grad * grad)
                bias_correction2 = 1.0 - beta2 ** t
                m_hat = state["exp_avg"]._data / (1.0 - beta1 ** t)
                rho_inf = 2.0 / (1.0 - beta2) - 1.0
                rho_t = rho_inf - 2.0 * t * beta2 ** t / bias_correction2
                if rho_t > 5.0:
                    rect = ((rho_t - 4) * (rho_t - 2) * rho_inf
                            / ((rho_inf - 4) * (rho_inf - 2) * rho_t)) ** 0.5
                    adaptive = bias_correction2 ** 0.5 / (xp.sqrt(v) + eps)
                    p._data -= m_hat * lr * adaptive * rect
                else:
                    p._data -= m_hat * lr
                p._bump_version()
        return loss


class Adamax(Optimizer):
    """Adamax (Kingma & Ba, 2015, section 7.1), with PyTorch's signature and arithmetic: Adam
    with the second moment replaced by an exponentially weighted infinity norm u_t, which
    needs no bias correction. ``weight_decay`` is L2, added to the gradient."""

    _tensor_scalar_state = ("step",)                # torch's 0-d float32 tensor

    def __init__(self, params: ParamsT, lr: float = 2e-3,
                 betas: Tuple[float, float] = (0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0, foreach: Optional[bool] = None, *,
                 maximize: bool = False, differentiable: bool = False,
                 capturable: bool = False):
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay,
                        foreach=foreach, maximize=maximize, differentiable=bool(differentiable),
                        capturable=bool(capturable))
        super().__init__(params, defaults)
        self._kernel_options(foreach, None, capturable, differentiable)

    def _check_group(self, group: Dict[str, Any]) -> Dict[str, Any]:
        return check_adam_group(group)

    def _torch_writes(self, group: Dict[str, Any], first: bool) -> Dict[str, int]:
        """How many in-place writes torch's step makes into each state tensor and into the parameter
        ({key: count}, "param"), so their ``_version`` goes on as torch's (optimizer.py:
        _count_writes_as_torch): ``exp_avg.lerp_``, ``exp_inf`` twice (``mul_``, then ``amax(...,
        out=)``), ``param.addcdiv_``."""
        return {"exp_avg": 1, "exp_inf": 2, "param": 1}

    def step(self, closure: Optional[Callable[[], Any]] = None) -> Any:
        """One update of every parameter that has a gradient; returns the closure's loss."""
        loss = self._evaluate(closure)
        for group in self.param_groups:
            lr, eps = float(group["lr"]), group["eps"]
            beta1, beta2 = group["betas"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                xp = backend.get_array_module(p._data)
                state, grad = _moments(self, p, group, "exp_inf")
                exp_inf = state["exp_inf"]._data
                exp_inf *= beta2
                xp.maximum(exp_inf, xp.abs(grad) + eps, out=exp_inf)
                clr = lr / (1.0 - beta1 ** state["step"])
                p._data += -clr * (state["exp_avg"]._data / exp_inf)
                p._bump_version()
        return loss
