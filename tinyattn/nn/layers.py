"""Basic layers: Linear, Embedding, LayerNorm, Dropout, GELU, ReLU and FeedForward.

Each layer holds its ``Parameter``s and calls one op from ``tinyattn.functional`` (whose
backward is hand-derived there); no layer re-derives a gradient. Parameter names and shapes
follow PyTorch, so state dicts move across (``Linear.weight`` is (out_features, in_features)).

Initialisation (docs/nn.md#initialisation), drawn from the default generator, so
``tinyattn.manual_seed(s)`` before building a model makes it reproducible:
- ``Linear``: weight and bias ~ U(-1/sqrt(in_features), 1/sqrt(in_features)) (PyTorch's).
- ``Embedding``: weight ~ N(0, 1) (PyTorch's).
- ``LayerNorm``: weight = 1, bias = 0.
Parameters are float32; ``model.double()`` (or ``.to(np.float64)``) converts them.
"""
from __future__ import annotations

import contextlib
import math
from typing import Any, Iterator, Optional, Sequence, Union

import numpy as np

from .. import functional as F
from ..tensor import Tensor, ones, rand, randn, zeros
from .module import Module, Parameter

__all__ = ["Linear", "Embedding", "LayerNorm", "Dropout", "GELU", "ReLU", "FeedForward",
           "uniform_parameter", "normal_parameter", "make_activation", "skip_init"]

_skip_init = False


@contextlib.contextmanager
def skip_init() -> Iterator[None]:
    """Inside this block, layers get uninitialised float32 weights (``np.empty``: no random
    draws, and no memory is touched until written), for models whose every weight is about
    to be replaced by a checkpoint's (``from_pretrained``). Like ``torch.nn.utils.skip_init``;
    the generator's state is left as it was."""
    global _skip_init
    previous, _skip_init = _skip_init, True
    try:
        yield
    finally:
        _skip_init = previous


def uniform_parameter(shape: Sequence[int], bound: float) -> Parameter:
    """A float32 Parameter with entries ~ U(-bound, bound) from the default generator."""
    if _skip_init:
        return Parameter(np.empty(tuple(shape), dtype=np.float32))
    data = rand(*shape)._data                    # U(0, 1), float32
    return Parameter(data * (2.0 * bound) - bound)


def normal_parameter(shape: Sequence[int], std: float) -> Parameter:
    """A float32 Parameter with entries ~ N(0, std^2) from the default generator."""
    if _skip_init:
        return Parameter(np.empty(tuple(shape), dtype=np.float32))
    return Parameter(randn(*shape)._data * std)


class Linear(Module):
    """y = x W^T + b, with W (out_features, in_features): (..., in) -> (..., out)."""

    def __init__(self, in_features: int, out_features: int, bias: bool = True):
        _check_positive("Linear", in_features=in_features, out_features=out_features)
        self.in_features, self.out_features = in_features, out_features
        bound = 1.0 / math.sqrt(in_features)
        self.weight = uniform_parameter((out_features, in_features), bound)
        self.bias = uniform_parameter((out_features,), bound) if bias else None

    def forward(self, x: Tensor) -> Tensor:
        if x.shape[-1] != self.in_features:
            raise ValueError(f"Linear: input has {x.shape[-1]} features (shape {x.shape}) but "
                             f"the layer expects in_features={self.in_features}")
        return F.linear(x, self.weight, self.bias)

    def extra_repr(self) -> str:
        return (f"in_features={self.in_features}, out_features={self.out_features}, "
                f"bias={self.bias is not None}")


class Embedding(Module):
    """A lookup table: integer ids (...) -> rows of ``weight`` (..., embedding_dim)."""

    def __init__(self, num_embeddings: int, embedding_dim: int):
        _check_positive("Embedding", num_embeddings=num_embeddings,
                        embedding_dim=embedding_dim)
        self.num_embeddings, self.embedding_dim = num_embeddings, embedding_dim
        self.weight = normal_parameter((num_embeddings, embedding_dim), 1.0)

    def forward(self, ids: Any) -> Tensor:
        return F.embedding(ids, self.weight)

    def extra_repr(self) -> str:
        return f"{self.num_embeddings}, {self.embedding_dim}"


class LayerNorm(Module):
    """Normalise the last dims to zero mean and unit variance, then scale and shift."""

    def __init__(self, normalized_shape: Union[int, Sequence[int]], eps: float = 1e-5,
                 elementwise_affine: bool = True, bias: bool = True):
        shape = (normalized_shape,) if isinstance(normalized_shape, int) \
            else tuple(normalized_shape)
        if not shape or any(not isinstance(n, int) or n < 1 for n in shape):
            raise ValueError(f"LayerNorm: normalized_shape must be positive sizes, got "
                             f"{normalized_shape!r}")
        self.normalized_shape, self.eps = shape, eps
        self.weight = Parameter(ones(*shape)._data) if elementwise_affine else None
        self.bias = Parameter(zeros(*shape)._data) if elementwise_affine and bias else None

    def forward(self, x: Tensor) -> Tensor:
        return F.layer_norm(x, self.normalized_shape, self.weight, self.bias, self.eps)

    def extra_repr(self) -> str:
        return f"{self.normalized_shape}, eps={self.eps}"


class Dropout(Module):
    """Zero each element with probability p while training (scaling the rest by 1/(1-p));
    the identity after ``model.eval()``."""

    def __init__(self, p: float = 0.1):
        if not 0.0 <= p <= 1.0:
            raise ValueError(f"Dropout: p must be a probability in [0, 1], got {p}")
        self.p = p

    def forward(self, x: Tensor) -> Tensor:
        return F.dropout(x, self.p, training=self.training)

    def extra_repr(self) -> str:
        return f"p={self.p}"


class GELU(Module):
    """x * Phi(x) (``approximate="tanh"`` for the tanh approximation GPT-2 used)."""

    def __init__(self, approximate: str = "none"):
        if approximate not in ("none", "tanh"):
            raise ValueError(f"GELU: approximate must be 'none' or 'tanh', got {approximate!r}")
        self.approximate = approximate

    def forward(self, x: Tensor) -> Tensor:
        return F.gelu(x, approximate=self.approximate)


class ReLU(Module):
    def forward(self, x: Tensor) -> Tensor:
        return F.relu(x)


def make_activation(name: str) -> Module:
    """'relu', 'gelu' or 'gelu_tanh' as a module."""
    table = {"relu": ReLU, "gelu": GELU, "gelu_tanh": lambda: GELU("tanh")}
    if name not in table:
        raise ValueError(f"activation must be one of {sorted(table)}, got {name!r}")
    return table[name]()


class FeedForward(Module):
    """The transformer's position-wise MLP: linear2(dropout(act(linear1(x)))), D -> d_ff -> D."""

    def __init__(self, d_model: int, d_ff: Optional[int] = None, dropout: float = 0.0,
                 activation: str = "gelu", bias: bool = True):
        d_ff = 4 * d_model if d_ff is None else d_ff
        self.linear1 = Linear(d_model, d_ff, bias=bias)
        self.activation = make_activation(activation)
        self.dropout = Dropout(dropout)
        self.linear2 = Linear(d_ff, d_model, bias=bias)

    def forward(self, x: Tensor) -> Tensor:
        return self.linear2(self.dropout(self.activation(self.linear1(x))))


def _check_positive(layer: str, **sizes: Any) -> None:
    for name, value in sizes.items():
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
            raise ValueError(f"{layer}: {name} must be a positive int, got {value!r}")
