"""``nn.utils.weight_norm`` / ``spectral_norm`` and their ``remove_*``: torch's older forms
of the two reparametrizations (parametrizations.py has the formulas and the newer forms).

The tensor is replaced by its parts, kept as the module's own members, and a forward
pre-hook recomputes ``module.<name>`` (a plain tensor attribute) before each call:
- weight norm: parameters ``<name>_g`` and ``<name>_v`` (state-dict keys ``weight_g``,
  ``weight_v``); deprecated in torch (its FutureWarning too).
- spectral norm: the parameter ``<name>_orig`` (the same Parameter object) and the buffers
  ``<name>_u``, ``<name>_v`` drawn at random and normalised (no iterations at registration);
  each forward in training mode runs ``n_power_iterations`` updates v <- normalize(W^H u),
  u <- normalize(W v) (v first, as torch's older form) before sigma = u . (W v).
"""
from __future__ import annotations

import warnings
from typing import Any, Optional, Tuple

from ...autograd import no_grad
from ...tensor import Tensor
from .. import functional as F
from ..conv import ConvTranspose1d, ConvTranspose2d, ConvTranspose3d
from ..module import Module, Parameter
from .parametrizations import matrix_view, norm_except_dim, weight_norm_value

__all__ = ["weight_norm", "remove_weight_norm", "spectral_norm", "remove_spectral_norm",
           "WeightNorm", "SpectralNorm"]


class WeightNorm:
    """The forward pre-hook of ``weight_norm``: sets ``module.<name>`` from g and v."""

    def __init__(self, name: str, dim: Optional[int]) -> None:
        self.name, self.dim = name, -1 if dim is None else dim

    def compute_weight(self, module: Module) -> Tensor:
        return weight_norm_value(getattr(module, self.name + "_v"),
                                 getattr(module, self.name + "_g"), self.dim)

    def __call__(self, module: Module, inputs: Any) -> None:
        setattr(module, self.name, self.compute_weight(module))


class SpectralNorm:
    """The forward pre-hook of ``spectral_norm``: sets ``module.<name>`` to w / sigma."""

    def __init__(self, name: str, n_power_iterations: int, dim: int, eps: float) -> None:
        if n_power_iterations <= 0:
            raise ValueError(f"Expected n_power_iterations to be positive, but got "
                             f"n_power_iterations={n_power_iterations}")
        self.name, self.n_power_iterations, self.dim, self.eps = \
            name, n_power_iterations, dim, eps

    def compute_weight(self, module: Module, do_power_iteration: bool) -> Tensor:
        weight = getattr(module, self.name + "_orig")
        u, v = getattr(module, self.name + "_u"), getattr(module, self.name + "_v")
        matrix = matrix_view(weight, self.dim)
        if do_power_iteration:
            with no_grad():
                for _ in range(self.n_power_iterations):
                    v.copy_(F.normalize(matrix.t().mv(u), dim=0, eps=self.eps))
                    u.copy_(F.normalize(matrix.mv(v), dim=0, eps=self.eps))
                u, v = u.clone(), v.clone()
        sigma = u.dot(matrix.mv(v))
        return weight / sigma

    def __call__(self, module: Module, inputs: Any) -> None:
        setattr(module, self.name, self.compute_weight(module, module.training))


def _hooks_of(module: Module, kind: type, name: str) -> Tuple[Any, ...]:
    hooks = module.__dict__.get("_forward_pre_hooks") or {}
    return tuple(k for k, h in hooks.items() if isinstance(h, kind) and h.name == name)


def weight_norm(module: Module, name: str = "weight", dim: Optional[int] = 0) -> Module:
    """Replace ``module.<name>`` by ``<name>_g`` (its norm over every dim but ``dim``) and
    ``<name>_v`` (its direction); ``module.<name>`` is recomputed before each forward."""
    warnings.warn("`torch.nn.utils.weight_norm` is deprecated in favor of "
                  "`torch.nn.utils.parametrizations.weight_norm`.", FutureWarning,
                  stacklevel=2)
    if _hooks_of(module, WeightNorm, name):
        raise RuntimeError(f"Cannot register two weight_norm hooks on the same parameter "
                           f"{name}")
    hook = WeightNorm(name, dim)
    weight = getattr(module, name)
    if not isinstance(weight, Parameter):
        raise ValueError(f"weight_norm: '{name}' of {type(module).__name__} is not a "
                         f"parameter")
    delattr(module, name)
    module.register_parameter(name + "_g",
                              Parameter(norm_except_dim(weight, hook.dim).detach()))
    module.register_parameter(name + "_v", Parameter(weight.detach()))
    setattr(module, name, hook.compute_weight(module))
    module.register_forward_pre_hook(hook)
    return module


def remove_weight_norm(module: Module, name: str = "weight") -> Module:
    """Undo ``weight_norm``: ``module.<name>`` is a parameter again (its current value)."""
    keys = _hooks_of(module, WeightNorm, name)
    if not keys:
        raise ValueError(f"weight_norm of '{name}' not found in {module}")
    hooks = module.__dict__["_forward_pre_hooks"]
    weight = hooks[keys[0]].compute_weight(module)
    delattr(module, name)
    delattr(module, name + "_g")
    delattr(module, name + "_v")
    module.register_parameter(name, Parameter(weight.detach()))
    del hooks[keys[0]]
    return module


def spectral_norm(module: Module, name: str = "weight", n_power_iterations: int = 1,
                  eps: float = 1e-12, dim: Optional[int] = None) -> Module:
    """Replace ``module.<name>`` by ``<name>_orig`` and the power-iteration buffers
    ``<name>_u``, ``<name>_v``; ``module.<name>`` = w / sigma is recomputed before each
    forward."""
    if _hooks_of(module, SpectralNorm, name):
        raise RuntimeError(f"Cannot register two spectral_norm hooks on the same parameter "
                           f"{name}")
    if dim is None:
        dim = 1 if isinstance(module, (ConvTranspose1d, ConvTranspose2d,
                                       ConvTranspose3d)) else 0
    hook = SpectralNorm(name, n_power_iterations, dim, eps)
    weight = getattr(module, name)
    if not isinstance(weight, Parameter):
        raise ValueError(f"spectral_norm: '{name}' of {type(module).__name__} is not a "
                         f"parameter")
    with no_grad():
        h, w = matrix_view(weight, dim).shape
        u = F.normalize(weight.new_empty(h).normal_(0, 1), dim=0, eps=eps)
        v = F.normalize(weight.new_empty(w).normal_(0, 1), dim=0, eps=eps)
    delattr(module, name)
    module.register_parameter(name + "_orig", weight)
    setattr(module, name, weight.detach())
    module.register_buffer(name + "_u", u)
    module.register_buffer(name + "_v", v)
    module.register_forward_pre_hook(hook)
    return module


def remove_spectral_norm(module: Module, name: str = "weight") -> Module:
    """Undo ``spectral_norm``: ``module.<name>`` is a parameter again, w / sigma with the
    current u and v."""
    keys = _hooks_of(module, SpectralNorm, name)
    if not keys:
        raise ValueError(f"spectral_norm of '{name}' not found in {module}")
    hooks = module.__dict__["_forward_pre_hooks"]
    with no_grad():
        weight = hooks[keys[0]].compute_weight(module, do_power_iteration=False)
    delattr(module, name)
    delattr(module, name + "_orig")
    delattr(module, name + "_u")
    delattr(module, name + "_v")
    module.register_parameter(name, Parameter(weight.detach()))
    del hooks[keys[0]]
    return module
