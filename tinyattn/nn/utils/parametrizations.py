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

Orthogonal (``orthogonal``): a matrix (or batch) X of shape (n, k), taken transposed when
n < k, is mapped to a matrix with orthonormal columns: ``matrix_exp``: exp(A) for the
skew-symmetric A = L - L^H (L the lower triangle of X, padded to n x n), its first k columns;
``cayley``: (I - A/2)^-1 (I + A/2); ``householder``: the product of the reflections
I - tau_i v_i v_i^H (v_i: column i of X below the diagonal with a 1 on it,
tau_i = 2 / (1 + |v_i|^2)), its columns scaled by the integer part of X's diagonal (torch's
rule). With ``use_trivialization`` (the default) the result is multiplied by the buffer
``base``: at registration (and on assignment) ``base`` is the orthogonalised weight
(Q of its QR with diag(R) >= 0; for n > k the weight's columns completed by random normal
columns) and ``original`` is -I, which every map sends to the identity, so the weight starts
as the orthogonalised weight.
"""
from __future__ import annotations

from typing import Any, Optional, Tuple

import numpy as np

from ... import backend, linalg
from ...autograd import no_grad
from ...factories import eye, randn
from ...ops.shape import cat
from ...precision import finfo
from ...tensor import Tensor
from .. import functional as F
from ..conv import ConvTranspose1d, ConvTranspose2d, ConvTranspose3d
from ..module import Module
from . import parametrize

__all__ = ["weight_norm", "spectral_norm", "orthogonal", "norm_except_dim", "weight_norm_value",
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


def _householder_product(reflectors: Tensor, tau: Tensor) -> Tensor:
    """The first k columns of H_0 H_1 ... H_{k-1}, H_i = I - tau_i v_i v_i^H, v_i the i-th
    column of ``reflectors`` (n x k) below the diagonal with a 1 on it (LAPACK's form, torch's
    ``linalg.householder_product``), as differentiable matrix products."""
    n, k = reflectors.shape[-2], reflectors.shape[-1]
    unit = eye(n, k, dtype=reflectors.dtype, device=reflectors.device)
    vectors = reflectors.tril(diagonal=-1) + unit
    q = unit.expand(*reflectors.shape)
    for i in reversed(range(k)):
        v = vectors[..., :, i:i + 1]
        q = q - (tau[..., i:i + 1].unsqueeze(-1) * v) @ (v.mH @ q)
    return q


def _make_orthogonal(a: Tensor) -> Tensor:
    """Q of a = QR (a tall) with diag(R) >= 0."""
    q, r = linalg.qr(a)
    return q * r.diagonal(dim1=-2, dim2=-1).sgn().unsqueeze(-2)


def _is_orthogonal(q: Tensor) -> bool:
    n, k = q.shape[-2], q.shape[-1]
    identity = eye(k, dtype=q.dtype, device=q.device)
    return bool((q.mH @ q).allclose(identity, atol=10.0 * n * finfo(q.dtype).eps))


def _reflectors(q: Tensor) -> Tensor:
    """LAPACK's geqrf of each (tall) matrix of ``q`` (host NumPy, no gradient): the
    reflectors below the diagonal, and on it the signs of R's diagonal (negated where tau is
    0), which the householder map's integer diagonal turns back into q's columns."""
    host = backend.to_host(q.detach()._data)
    flat = host.reshape((-1,) + host.shape[-2:])
    out = np.empty_like(flat)
    for index, matrix in enumerate(flat):
        h, tau = np.linalg.qr(matrix, mode="raw")
        reflectors = h.T.copy()
        diagonal = np.sign(np.diagonal(reflectors)).copy()
        diagonal[tau == 0.0] *= -1
        np.fill_diagonal(reflectors, diagonal)
        out[index] = reflectors
    return Tensor._wrap(backend.to_device(out.reshape(host.shape).astype(host.dtype),
                                          q.device))


_ORTHOGONAL_MAPS = ("matrix_exp", "cayley", "householder")


class _Orthogonal(Module):
    def __init__(self, weight: Tensor, orthogonal_map: str, *,
                 use_trivialization: bool = True) -> None:
        super().__init__()
        if weight.is_complex() and orthogonal_map == "householder":
            raise ValueError("The householder parametrization does not support complex "
                             "tensors.")
        self.shape = weight.shape
        self.orthogonal_map = orthogonal_map
        self._trivialization = use_trivialization
        if use_trivialization:
            self.register_buffer("base", None)

    def forward(self, x: Tensor) -> Tensor:
        n, k = x.shape[-2], x.shape[-1]
        transposed = n < k
        if transposed:
            x = x.mT
            n, k = k, n
        if self.orthogonal_map in ("matrix_exp", "cayley"):
            x = x.tril()
            if n != k:
                x = cat([x, x.new_zeros((n, n - k)).expand(*x.shape[:-2], n, n - k)], dim=-1)
            a = x - x.mH
            if self.orthogonal_map == "matrix_exp":
                q = a.matrix_exp()
            else:
                identity = eye(n, dtype=a.dtype, device=a.device)
                q = linalg.solve(identity - 0.5 * a, identity + 0.5 * a)
            if n != k:
                q = q[..., :k]
        else:
            a = x.tril(diagonal=-1)
            tau = 2.0 / (1.0 + (a * a).sum(dim=-2))
            q = _householder_product(a, tau)
            q = q * x.diagonal(dim1=-2, dim2=-1).int().unsqueeze(-2)
        if self._trivialization:
            q = self.base @ q
        if transposed:
            q = q.mT
        return q

    def right_inverse(self, q: Tensor) -> Tensor:
        with no_grad():
            if q.shape != self.shape:
                raise ValueError(f"Expected a matrix or batch of matrices of shape "
                                 f"{self.shape}. Got a tensor of shape {q.shape}.")
            q_init = q
            n, k = q.shape[-2], q.shape[-1]
            transpose = n < k
            if transpose:
                q = q.mT
                n, k = k, n
            if not self._trivialization:
                if self.orthogonal_map in ("cayley", "matrix_exp"):
                    raise NotImplementedError(
                        "It is not possible to assign to the matrix exponential or the "
                        "Cayley parametrizations when use_trivialization=False.")
                a = _reflectors(q)
                return a.mT if transpose else a
            if n == k:
                q = _make_orthogonal(q) if not _is_orthogonal(q) else q.clone()
            else:
                extra = randn(*(tuple(q.shape[:-2]) + (n, n - k)), dtype=q.dtype,
                              device=q.device)
                q = _make_orthogonal(cat([q, extra], dim=-1))
            self.base = q
            return -eye(q_init.shape[-2], q_init.shape[-1], dtype=q_init.dtype,
                        device=q_init.device).expand(*q_init.shape).contiguous()


def orthogonal(module: Module, name: str = "weight", orthogonal_map: Optional[str] = None,
               *, use_trivialization: bool = True) -> Module:
    """Reparametrize the matrix (or batch of matrices) ``module.<name>`` to have orthonormal
    columns (rows when wide); see the module docstring."""
    weight = getattr(module, name, None)
    if not isinstance(weight, Tensor):
        raise ValueError(f"Module '{module}' has no parameter or buffer with name '{name}'")
    if weight.ndim < 2:
        raise ValueError(f"Expected a matrix or batch of matrices. Got a tensor of "
                         f"{weight.ndim} dimensions.")
    if orthogonal_map is None:
        orthogonal_map = "matrix_exp" if weight.shape[-2] == weight.shape[-1] or \
            weight.is_complex() else "householder"
    if orthogonal_map not in _ORTHOGONAL_MAPS:
        raise ValueError('orthogonal_map has to be one of "matrix_exp", "cayley", '
                         f'"householder". Got: {orthogonal_map}')
    parametrize.register_parametrization(
        module, name, _Orthogonal(weight, orthogonal_map, use_trivialization=use_trivialization),
        unsafe=True)
    return module
