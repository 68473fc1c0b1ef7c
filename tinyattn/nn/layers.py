"""Basic layers: Linear, Embedding, LayerNorm, RMSNorm, Dropout, Identity, Flatten, Unflatten
and FeedForward (the activations are in activation.py; ReLU and GELU are re-exported here).

Each layer holds its ``Parameter``s and calls one op from ``tinyattn.functional`` (whose
backward is hand-derived there); no layer re-derives a gradient. Parameter names and shapes
follow PyTorch, so state dicts move across (``Linear.weight`` is (out_features, in_features)).

Initialisation (docs/nn.md#initialisation), drawn from the default generator, so
``tinyattn.manual_seed(s)`` before building a model makes it reproducible:
- ``Linear``: weight and bias ~ U(-1/sqrt(in_features), 1/sqrt(in_features)) (PyTorch's).
- ``Embedding``: weight ~ N(0, 1) (PyTorch's).
- ``Embedding``: weight ~ N(0, 1) (PyTorch's), the ``padding_idx`` row zeroed.
- ``LayerNorm``, ``RMSNorm``: weight = 1, bias = 0.
Parameters are float32 unless ``dtype=`` says otherwise (PyTorch's factory keywords ``device=``
and ``dtype=``: the parameters are drawn, then moved and cast); ``model.double()`` (or
``.to(np.float64)``) converts them later.
"""
from __future__ import annotations

import contextlib
import math
from typing import Any, Iterator, Optional, Sequence, Tuple, Union

import numpy as np

from ..precision import get_default_dtype

from .. import functional as F
from ..autograd import no_grad
from ..ops.embedding import check_embedding_options, normalize_padding_idx
from ..ops.shape import ShapeError, _normalize_dim
from ..tensor import Tensor, ones, rand, randn, zeros
from .activation import GELU, ReLU
from .module import Module, Parameter

__all__ = ["Linear", "NonDynamicallyQuantizableLinear", "Embedding", "LayerNorm", "RMSNorm",
           "Dropout", "Identity", "Flatten",
           "Unflatten", "GELU", "ReLU", "FeedForward", "uniform_parameter", "normal_parameter",
           "make_activation", "skip_init"]

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
    """A Parameter of the default float dtype with entries ~ U(-bound, bound) from the
    default generator."""
    if _skip_init:
        return Parameter(np.empty(tuple(shape), dtype=get_default_dtype()))
    data = rand(*shape)._data                    # U(0, 1), the default float dtype
    return Parameter(data * (2.0 * bound) - bound)


def normal_parameter(shape: Sequence[int], std: float) -> Parameter:
    """A Parameter of the default float dtype with entries ~ N(0, std^2) from the default
    generator."""
    if _skip_init:
        return Parameter(np.empty(tuple(shape), dtype=get_default_dtype()))
    return Parameter(randn(*shape)._data * std)


def _factory(module: Module, device: Any, dtype: Any) -> None:
    """PyTorch's ``device=`` / ``dtype=`` constructor keywords: move and cast what was made."""
    if device is not None or dtype is not None:
        module.to(device=device, dtype=dtype)


class Linear(Module):
    """y = x W^T + b, with W (out_features, in_features): (..., in) -> (..., out)."""

    def __init__(self, in_features: int, out_features: int, bias: bool = True,
                 device: Optional[str] = None, dtype: Any = None):
        _check_positive("Linear", in_features=in_features, out_features=out_features)
        self.in_features, self.out_features = in_features, out_features
        bound = 1.0 / math.sqrt(in_features)
        self.weight = uniform_parameter((out_features, in_features), bound)
        self.bias = uniform_parameter((out_features,), bound) if bias else None
        _factory(self, device, dtype)

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002 - torch's name (input=x works)
        if input.shape[-1:] != (self.in_features,):
            rows = math.prod(input.shape[:-1]) if input.ndim else 1
            raise ShapeError(f"mat1 and mat2 shapes cannot be multiplied ({rows}x"
                             f"{input.shape[-1] if input.ndim else 1} and {self.in_features}x"
                             f"{self.out_features}) (Linear: input has "
                             f"{input.shape[-1] if input.ndim else 0} features (shape "
                             f"{input.shape}) but the layer expects in_features="
                             f"{self.in_features})")
        return F.linear(input, self.weight, self.bias)

    def extra_repr(self) -> str:
        return (f"in_features={self.in_features}, out_features={self.out_features}, "
                f"bias={self.bias is not None}")


class NonDynamicallyQuantizableLinear(Linear):
    """torch's class of ``MultiheadAttention.out_proj``: a Linear that ``quantize_dynamic``
    leaves in float (its name is what tells it apart; it prints under this name, as
    torch's)."""


class Identity(Module):
    """Returns its input unchanged (any constructor arguments are ignored, as PyTorch's)."""

    def __init__(self, *args: Any, **kwargs: Any):
        pass

    def forward(self, x: Any) -> Any:
        return x


def embedding_weight(num_embeddings: int, embedding_dim: int, padding_idx: Optional[int],
                     given: Optional[Tensor], requires_grad: bool = True) -> Parameter:
    """An embedding table's weight, as torch's Embedding and EmbeddingBag make it: N(0, 1)
    with the padding row zeroed, or ``given`` (``_weight=``) when its shape is (V, D); else
    torch's AssertionError (a ValueError too, as tinyattn raised it)."""
    if given is None:
        weight = normal_parameter((num_embeddings, embedding_dim), 1.0)
        if padding_idx is not None:
            with no_grad():
                weight[padding_idx] = 0.0
        weight.requires_grad_(requires_grad)
        return weight
    if tuple(given.shape) != (num_embeddings, embedding_dim):
        raise _WeightShapeError(f"Shape of weight does not match num_embeddings and "
                                f"embedding_dim (_weight has shape {tuple(given.shape)}, "
                                f"expected ({num_embeddings}, {embedding_dim}))")
    return Parameter(given, requires_grad=requires_grad)


class _WeightShapeError(AssertionError, ValueError):
    """torch asserts the ``_weight`` shape (AssertionError); tinyattn raised ValueError."""


class Embedding(Module):
    """A lookup table: integer ids (...) -> rows of ``weight`` (..., embedding_dim).

    ``padding_idx``: that row starts at zeros and never gets a gradient (as PyTorch's), for a
    padding token that should contribute nothing. ``Embedding.from_pretrained(weights)``
    wraps an existing (V, D) table, frozen unless ``freeze=False``.
    """

    def __init__(self, num_embeddings: int, embedding_dim: int,
                 padding_idx: Optional[int] = None, max_norm: Optional[float] = None,
                 norm_type: float = 2.0, scale_grad_by_freq: bool = False,
                 sparse: bool = False, _weight: Optional[Tensor] = None, _freeze: bool = False,
                 device: Optional[str] = None, dtype: Any = None):
        _check_positive("Embedding", num_embeddings=num_embeddings,
                        embedding_dim=embedding_dim)
        check_embedding_options(max_norm, scale_grad_by_freq, sparse)
        self.num_embeddings, self.embedding_dim = num_embeddings, embedding_dim
        self.padding_idx = normalize_padding_idx(padding_idx, num_embeddings)
        self.max_norm, self.scale_grad_by_freq, self.sparse = max_norm, scale_grad_by_freq, sparse
        self.norm_type = norm_type
        self.weight = embedding_weight(num_embeddings, embedding_dim, self.padding_idx,
                                       _weight, requires_grad=not _freeze)
        _factory(self, device, dtype)

    @classmethod
    def from_pretrained(cls, embeddings: Tensor, freeze: bool = True,
                        padding_idx: Optional[int] = None, max_norm: Optional[float] = None,
                        norm_type: float = 2.0, scale_grad_by_freq: bool = False,
                        sparse: bool = False) -> "Embedding":
        """An Embedding whose weight is ``embeddings`` (V, D), sharing its memory as PyTorch
        does; ``freeze=True`` (the default) means it gets no gradient. The padding row is
        left as given."""
        if not isinstance(embeddings, Tensor):
            raise TypeError(f"Embedding.from_pretrained expects a Tensor, got "
                            f"{type(embeddings).__name__}; wrap arrays with tinyattn.tensor()")
        if embeddings.ndim != 2:
            raise ValueError(f"Embedding.from_pretrained: embeddings must be 2-D "
                             f"(num_embeddings, embedding_dim), got shape {embeddings.shape}")
        rows, cols = embeddings.shape
        return cls(rows, cols, padding_idx=padding_idx, max_norm=max_norm, norm_type=norm_type,
                   scale_grad_by_freq=scale_grad_by_freq, sparse=sparse, _weight=embeddings,
                   _freeze=freeze)

    def forward(self, ids: Any) -> Tensor:
        return F.embedding(ids, self.weight, padding_idx=self.padding_idx,
                           max_norm=self.max_norm, norm_type=self.norm_type,
                           scale_grad_by_freq=self.scale_grad_by_freq, sparse=self.sparse)

    def extra_repr(self) -> str:
        extra = "" if self.padding_idx is None else f", padding_idx={self.padding_idx}"
        return f"{self.num_embeddings}, {self.embedding_dim}{extra}"


def _normalized_shape(layer: str, normalized_shape: Any) -> Tuple[int, ...]:
    shape = (normalized_shape,) if isinstance(normalized_shape, (int, np.integer)) \
        else tuple(normalized_shape)
    if not shape or any(isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1
                        for n in shape):
        raise ValueError(f"{layer}: normalized_shape must be positive sizes, got "
                         f"{normalized_shape!r}")
    return tuple(int(n) for n in shape)


class LayerNorm(Module):
    """Normalise the last dims to zero mean and unit variance, then scale and shift."""

    def __init__(self, normalized_shape: Union[int, Sequence[int]], eps: float = 1e-5,
                 elementwise_affine: bool = True, bias: bool = True,
                 device: Optional[str] = None, dtype: Any = None):
        shape = _normalized_shape("LayerNorm", normalized_shape)
        self.normalized_shape, self.eps = shape, eps
        self.weight = Parameter(ones(*shape)._data) if elementwise_affine else None
        self.bias = Parameter(zeros(*shape)._data) if elementwise_affine and bias else None
        _factory(self, device, dtype)

    def forward(self, x: Tensor) -> Tensor:
        return F.layer_norm(x, self.normalized_shape, self.weight, self.bias, self.eps)

    def extra_repr(self) -> str:
        return (f"{self.normalized_shape}, eps={self.eps}, "
                f"elementwise_affine={self.weight is not None}, bias={self.bias is not None}")


class RMSNorm(Module):
    """x / sqrt(mean(x^2) + eps) * weight over the last dims (``torch.nn.RMSNorm``; Llama's
    norm). No centring and no bias. ``eps=None`` means the machine epsilon of the input's
    dtype, as PyTorch's. The op's backward is derived in docs/derivations.md#rms-norm."""

    def __init__(self, normalized_shape: Union[int, Sequence[int]],
                 eps: Optional[float] = None, elementwise_affine: bool = True,
                 device: Optional[str] = None, dtype: Any = None):
        shape = _normalized_shape("RMSNorm", normalized_shape)
        self.normalized_shape, self.eps = shape, eps
        self.elementwise_affine = elementwise_affine
        self.weight = Parameter(ones(*shape)._data) if elementwise_affine else None
        _factory(self, device, dtype)

    def forward(self, x: Tensor) -> Tensor:
        return F.rms_norm(x, self.normalized_shape, self.weight, self.eps)

    def extra_repr(self) -> str:
        return (f"{self.normalized_shape}, eps={self.eps}, "
                f"elementwise_affine={self.elementwise_affine}")


class Dropout(Module):
    """Zero each element with probability p while training (scaling the rest by 1/(1-p));
    the identity after ``model.eval()``."""

    def __init__(self, p: float = 0.1, inplace: bool = False):
        if isinstance(p, bool) or not isinstance(p, (int, float)) or not 0.0 <= p <= 1.0:
            raise ValueError(f"Dropout: p must be a probability in [0, 1], got {p!r}")
        self.p, self.inplace = p, bool(inplace)

    def forward(self, x: Tensor) -> Tensor:
        return F.dropout(x, self.p, training=self.training, inplace=self.inplace)

    def extra_repr(self) -> str:
        return f"p={self.p}, inplace={self.inplace}"


class Flatten(Module):
    """Merge dims start_dim..end_dim into one: (N, C, H, W) -> (N, C*H*W) by default
    (PyTorch's defaults, start_dim=1: the batch dim is kept)."""

    def __init__(self, start_dim: int = 1, end_dim: int = -1):
        self.start_dim, self.end_dim = start_dim, end_dim

    def forward(self, x: Tensor) -> Tensor:
        return x.flatten(self.start_dim, self.end_dim)

    def extra_repr(self) -> str:
        return f"start_dim={self.start_dim}, end_dim={self.end_dim}"


class Unflatten(Module):
    """Split dim ``dim`` into ``unflattened_size`` (which may hold one -1):
    ``Unflatten(1, (2, 3))`` turns (N, 6) into (N, 2, 3)."""

    def __init__(self, dim: int, unflattened_size: Sequence[int]):
        sizes = tuple(unflattened_size)
        if not sizes or any(isinstance(n, bool) or not isinstance(n, (int, np.integer))
                            or (n < 1 and n != -1) for n in sizes) or sizes.count(-1) > 1:
            raise ValueError(f"Unflatten: unflattened_size must be positive ints (at most one "
                             f"-1), got {unflattened_size!r}")
        self.dim, self.unflattened_size = dim, sizes

    def forward(self, x: Tensor) -> Tensor:
        dim = _normalize_dim(self.dim, x.ndim, "Unflatten")
        sizes, n = self.unflattened_size, x.shape[dim]
        known = math.prod(s for s in sizes if s != -1)
        if (-1 in sizes and (known == 0 or n % known)) or (-1 not in sizes and known != n):
            raise ValueError(f"Unflatten: dim {self.dim} of the input has size {n} (shape "
                             f"{x.shape}), which cannot be split into {sizes}")
        return x.reshape(x.shape[:dim] + sizes + x.shape[dim + 1:])

    def extra_repr(self) -> str:
        return f"dim={self.dim}, unflattened_size={self.unflattened_size}"


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
