"""``nn.EmbeddingBag``, as PyTorch's (docs/nn.md): a weight (num_embeddings, embedding_dim)
~ N(0, 1) (the padding row zeroed), calling ``F.embedding_bag`` (ops/embedding_bag.py, where
the backward is derived)."""
from __future__ import annotations

from typing import Any, Optional

from .. import functional as F
from ..ops.embedding import check_embedding_options, normalize_padding_idx
from ..tensor import Tensor
from .layers import _check_positive, _factory, embedding_weight
from .module import Module

__all__ = ["EmbeddingBag"]


class EmbeddingBag(Module):
    """Per bag of ids (rows of a 2-D input, or a 1-D input cut by ``offsets``) the sum, mean
    (the default) or max of their embedding rows: (B, embedding_dim)."""

    def __init__(self, num_embeddings: int, embedding_dim: int,
                 max_norm: Optional[float] = None, norm_type: float = 2.0,
                 scale_grad_by_freq: bool = False, mode: str = "mean", sparse: bool = False,
                 _weight: Optional[Tensor] = None, include_last_offset: bool = False,
                 padding_idx: Optional[int] = None, device: Any = None,
                 dtype: Any = None) -> None:
        super().__init__()
        _check_positive("EmbeddingBag", num_embeddings=num_embeddings,
                        embedding_dim=embedding_dim)
        check_embedding_options(max_norm, scale_grad_by_freq, sparse)
        self.num_embeddings, self.embedding_dim = num_embeddings, embedding_dim
        self.max_norm, self.norm_type = max_norm, norm_type
        self.scale_grad_by_freq, self.mode, self.sparse = scale_grad_by_freq, mode, sparse
        self.include_last_offset = include_last_offset
        self.padding_idx = normalize_padding_idx(padding_idx, num_embeddings)
        self.weight = embedding_weight(num_embeddings, embedding_dim, self.padding_idx,
                                       _weight)
        _factory(self, device, dtype)

    @classmethod
    def from_pretrained(cls, embeddings: Tensor, freeze: bool = True,
                        max_norm: Optional[float] = None, norm_type: float = 2.0,
                        scale_grad_by_freq: bool = False, mode: str = "mean",
                        sparse: bool = False, include_last_offset: bool = False,
                        padding_idx: Optional[int] = None) -> "EmbeddingBag":
        """An EmbeddingBag whose weight is ``embeddings`` (2-D), frozen unless
        ``freeze=False``."""
        if embeddings.ndim != 2:
            raise AssertionError("Embeddings parameter is expected to be 2-dimensional")
        rows, cols = embeddings.shape
        bag = cls(rows, cols, max_norm=max_norm, norm_type=norm_type,
                  scale_grad_by_freq=scale_grad_by_freq, mode=mode, sparse=sparse,
                  _weight=embeddings, include_last_offset=include_last_offset,
                  padding_idx=padding_idx)
        bag.weight.requires_grad = not freeze
        return bag

    def forward(self, input: Tensor, offsets: Optional[Tensor] = None,  # noqa: A002
                per_sample_weights: Optional[Tensor] = None) -> Tensor:
        return F.embedding_bag(input, self.weight, offsets, self.max_norm, self.norm_type,
                               self.scale_grad_by_freq, self.mode, self.sparse,
                               per_sample_weights, self.include_last_offset, self.padding_idx)

    def extra_repr(self) -> str:
        text = f"{self.num_embeddings}, {self.embedding_dim}"
        if self.max_norm is not None:
            text += f", max_norm={self.max_norm}"
        if self.norm_type != 2:
            text += f", norm_type={self.norm_type}"
        if self.scale_grad_by_freq is not False:
            text += f", scale_grad_by_freq={self.scale_grad_by_freq}"
        text += f", mode={self.mode!r}"
        if self.padding_idx is not None:
            text += f", padding_idx={self.padding_idx}"
        return text
