"""``tinyattn.nn.utils.parametrizations``: torch's ready-made parametrizations,
``weight_norm`` and ``spectral_norm`` (built on ``parametrize.register_parametrization``;
``nn.utils.weight_norm`` / ``spectral_norm`` in norm_hooks.py are torch's older hook forms).

Weight normalisation (Salimans and Kingma, 2016): w = g * v / ||v||, the norm taken over
every dim except ``dim`` (over the whole tensor when ``dim`` is None or -1, as torch's
``norm_except_dim``), so g holds each output's length and v its direction. State-dict keys
``parametrizations.weight.original0`` (g) and ``original1`` (v); a state dict saved with the
older ``weight_g`` / ``weight_v`` keys loads too (torch's compatibility hook).

Spectral normalisation (Miyato et al., 2018): w / sigma, sigma the largest singular value of
w seen as a matrix (``dim`` first, the rest flattened: dim 1 for ConvTranspose, else 0),
estimated by power iteration: in training mode each forward updates the buffers
u <- normalize(W v), v <- normalize(W^H u) ``n_power_iterations`` times (15 at registration),
then sigma = u . (W v) with u and v held constant (no gradient through them). A 1-D tensor is
simply normalised. The buffers start from random draws (tinyattn's generator, not torch's).
"""
from __future__ import annotations

from typing import Any, Optional, Tuple

from ...autograd import no_grad
from ...tensor import Tensor
from .. import functional as F
from ..conv import ConvTranspose1d, ConvTranspose2d, ConvTranspose3d
from ..module import Module
from . import parametrize

__all__ = ["weight_norm", "spectral_norm", "norm_except_dim", "weight_norm_value",
           "matrix_view"]


def norm_except_dim(v: Tensor, dim: Optional[int]) -> Tensor:
    """The 2-norm of ``v`` over every dim but ``dim``, keeping ``v``'s number of dims (size
    1 except at ``dim``); over all of ``v`` (a 0-d tensor) when ``dim`` is None or -1."""
    if dim is None or dim == -1:
        return v.norm()
    dim = dim % v.ndim
    others = tuple(d for d in range(v.ndim) if d != dim)
    return v.norm(2, dim=others, keepdim=True) if others else v.abs()


def weight_norm_value(v: Tensor, g: Tensor, dim: Optional[int]) -> Tensor:
    """w = v * (g / ||v||) (torch's ``_weight_norm``)."""
    return v * (g / norm_except_dim(v, dim))


def matrix_view(weight: Tensor, dim: int) -> Tensor:
    """``weight`` as a matrix: ``dim`` first, the other dims flattened into columns."""
    if dim != 0:
        weight = weight.permute(dim, *[d for d in range(weight.ndim) if d != dim])
    return weight.reshape(weight.shape[0], -1)


class _WeightNorm(Module):
    def __init__(self, dim: Optional[int] = 0) -> None:
        super().__init__()
        self.dim = -1 if dim is None else dim

    def forward(self, weight_g: Tensor, weight_v: Tensor) -> Tensor:
        return weight_norm_value(weight_v, weight_g, self.dim)

    def right_inverse(self, weight: Tensor) -> Tuple[Tensor, Tensor]:
        return norm_except_dim(weight, self.dim), weight


def weight_norm(module: Module, name: str = "weight", dim: Optional[int] = 0) -> Module:
    """Reparametrize ``module.<name>`` as g * v / ||v|| (see the module docstring)."""
    parametrize.register_parametrization(module, name, _WeightNorm(dim), unsafe=True)

    def old_keys(state: Any, prefix: str, *rest: Any) -> None:
        g_key, v_key = f"{prefix}{name}_g", f"{prefix}{name}_v"
        if g_key in state and v_key in state:
            state[f"{prefix}parametrizations.{name}.original0"] = state.pop(g_key)
            state[f"{prefix}parametrizations.{name}.original1"] = state.pop(v_key)

    module._register_load_state_dict_pre_hook(old_keys)
    return module


class _SpectralNorm(Module):
    def __init__(self, weight: Tensor, n_power_iterations: int = 1, dim: int = 0,
                 eps: float = 1e-12) -> None:
        super().__init__()
        ndim = weight.ndim
        if dim >= ndim or dim < -ndim:
            raise IndexError(f"Dimension out of range (expected to be in range of "
                             f"[-{ndim}, {ndim - 1}] but got {dim})")
        if n_power_iterations <= 0:
            raise ValueError(f"Expected n_power_iterations to be positive, but got "
                             f"n_power_iterations={n_power_iterations}")
        self.dim = dim if dim >= 0 else dim + ndim
        self.eps = eps
        if ndim > 1:
            self.n_power_iterations = n_power_iterations
            with no_grad():
                matrix = matrix_view(weight, self.dim)
                h, w = matrix.shape
                u = weight.new_empty(h).normal_(0, 1)
                v = weight.new_empty(w).normal_(0, 1)
                self.register_buffer("_u", F.normalize(u, dim=0, eps=self.eps))
                self.register_buffer("_v", F.normalize(v, dim=0, eps=self.eps))
                self._power_method(matrix, 15)

    def _power_method(self, matrix: Tensor, n_power_iterations: int) -> None:
        """u <- normalize(W v), v <- normalize(W^H u), written into the buffers."""
        with no_grad():
            for _ in range(n_power_iterations):
                self._u.copy_(F.normalize(matrix.mv(self._v), dim=0, eps=self.eps))
                self._v.copy_(F.normalize(matrix.H.mv(self._u), dim=0, eps=self.eps))

    def forward(self, weight: Tensor) -> Tensor:
        if weight.ndim == 1:
            return F.normalize(weight, dim=0, eps=self.eps)
        matrix = matrix_view(weight, self.dim)
        if self.training:
            self._power_method(matrix, self.n_power_iterations)
        u, v = self._u.clone(), self._v.clone()
        sigma = u.conj().dot(matrix.mv(v))          # torch.vdot(u, W v)
        return weight / sigma

    def right_inverse(self, value: Tensor) -> Tensor:
        return value


def spectral_norm(module: Module, name: str = "weight", n_power_iterations: int = 1,
                  eps: float = 1e-12, dim: Optional[int] = None) -> Module:
    """Reparametrize ``module.<name>`` as w / sigma(w) (see the module docstring)."""
    weight = getattr(module, name, None)
    if not isinstance(weight, Tensor):
        raise ValueError(f"Module '{module}' has no parameter or buffer with name '{name}'")
    if dim is None:
        dim = 1 if isinstance(module, (ConvTranspose1d, ConvTranspose2d,
                                       ConvTranspose3d)) else 0
    parametrize.register_parametrization(
        module, name, _SpectralNorm(weight, n_power_iterations, dim, eps))
    return module
