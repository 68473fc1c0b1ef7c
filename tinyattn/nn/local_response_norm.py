"""``nn.LocalResponseNorm``, as PyTorch's (docs/nn.md): no parameters; the op is
ops/local_response_norm.py, whose backward is derived by hand."""
from __future__ import annotations

from .. import functional as F
from ..tensor import Tensor
from .module import Module

__all__ = ["LocalResponseNorm"]


class LocalResponseNorm(Module):
    """(N, C, *) -> the same shape: x_c / (k + alpha / size * sum of x_j^2 over the ``size``
    channels around c) ** beta, AlexNet's normalisation across channels."""

    def __init__(self, size: int, alpha: float = 1e-4, beta: float = 0.75,
                 k: float = 1.0) -> None:
        super().__init__()
        self.size, self.alpha, self.beta, self.k = size, alpha, beta, k

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002 - torch's name
        return F.local_response_norm(input, self.size, self.alpha, self.beta, self.k)

    def extra_repr(self) -> str:
        return f"{self.size}, alpha={self.alpha}, beta={self.beta}, k={self.k}"
