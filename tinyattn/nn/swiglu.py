"""The SwiGLU feed-forward of Llama (Shazeer, "GLU Variants Improve Transformer", 2020;
docs/nn.md#swiglu).

    out = w2( silu(w1 x) * w3 x ),    x (..., D) -> hidden (..., H) -> out (..., D)

``silu(w1 x)`` is a smooth gate, computed from the input, that scales each hidden feature of
``w3 x`` elementwise; ``w2`` projects back. Three matrices instead of the classic MLP's two,
so Llama shrinks the hidden width to 2/3 of 4D to keep the parameter count
(``llama_hidden_dim``). No biases, as in Llama. The names ``w1``, ``w2``, ``w3`` are Meta's
(Hugging Face calls them ``gate_proj``, ``down_proj``, ``up_proj``). Every gradient comes
from the ops used (linear, silu, mul), each with its own derivation.
"""
from __future__ import annotations

from typing import Any, Optional

from .. import functional as F
from ..tensor import Tensor
from .layers import Dropout, Linear
from .module import Module

__all__ = ["SwiGLU", "llama_hidden_dim"]


def llama_hidden_dim(dim: int, multiple_of: int = 256,
                     ffn_dim_multiplier: Optional[float] = None) -> int:
    """Llama's hidden width: int(2 * 4 dim / 3), times ``ffn_dim_multiplier`` if given,
    rounded up to a multiple of ``multiple_of`` (dim=4096 gives 11008, Llama-2 7B's)."""
    for name, value in (("dim", dim), ("multiple_of", multiple_of)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"llama_hidden_dim: {name} must be a positive int, got {value!r}")
    hidden = int(2 * (4 * dim) / 3)
    if ffn_dim_multiplier is not None:
        hidden = int(ffn_dim_multiplier * hidden)
    return multiple_of * ((hidden + multiple_of - 1) // multiple_of)


class SwiGLU(Module):
    """w2(silu(w1 x) * w3 x): (..., dim) -> (..., dim).

    Args:
        dim: D, the width of input and output.
        hidden_dim: H (default ``llama_hidden_dim(dim, multiple_of)``).
        multiple_of: rounding of the default H (Llama: 256).
        bias: biases on the three projections (Llama: none).
        dropout: applied to the output, while training.
        device, dtype: where and in which dtype to make the weights (PyTorch's keywords).
    """

    def __init__(self, dim: int, hidden_dim: Optional[int] = None, multiple_of: int = 256,
                 bias: bool = False, dropout: float = 0.0, device: Optional[str] = None,
                 dtype: Any = None):
        hidden = llama_hidden_dim(dim, multiple_of) if hidden_dim is None else hidden_dim
        self.w1 = Linear(dim, hidden, bias=bias, device=device, dtype=dtype)   # gate
        self.w2 = Linear(hidden, dim, bias=bias, device=device, dtype=dtype)   # down
        self.w3 = Linear(dim, hidden, bias=bias, device=device, dtype=dtype)   # up
        self.dropout = Dropout(dropout)

    def forward(self, x: Tensor) -> Tensor:
        gate = F.silu(self.w1(x))                    # (..., D) -> (..., H)
        return self.dropout(self.w2(gate * self.w3(x)))   # (..., H) -> (..., D)

    def extra_repr(self) -> str:
        return f"dim={self.w1.in_features}, hidden_dim={self.w1.out_features}"
