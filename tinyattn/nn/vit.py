"""A vision transformer (ViT, Dosovitskiy et al. 2020) built from tinyattn's parts, and the
attention rollout that shows where its class token looks (docs/nn.md#vision-transformer).

Shapes: B batch, C image channels, H = W image side, P patch side, N = (H / P)^2 patches,
S = N + 1 tokens (the class token first), D = d_model, h = num_heads.

    images (B, C, H, W) -> patch_embed: Conv2d(C, D, kernel_size=P, stride=P) (B, D, H/P, W/P)
        -> flatten, transpose (B, N, D) -> [class token; patches] (B, S, D) + pos_embed (1, S, D)
        -> depth pre-LN blocks -> LayerNorm -> head(x[:, 0]) -> logits (B, num_classes)

A convolution with kernel = stride = P is exactly "cut into P x P patches, flatten each, and
apply one Linear": the windows do not overlap, so each output position sees one patch.
Initialisation: class token and positions ~ N(0, 0.02^2) (timm's), the rest as the layers'.
"""
from __future__ import annotations

from typing import List, Optional

import numpy as np

from ..ops.shape import cat
from ..tensor import Tensor
from .attention import MultiHeadAttention
from .containers import ModuleList
from .conv import Conv2d
from .layers import Dropout, FeedForward, LayerNorm, Linear, normal_parameter
from .module import Module

__all__ = ["VisionTransformer", "ViTBlock", "attention_rollout"]


class ViTBlock(Module):
    """x = x + attn(ln1(x));  x = x + mlp(ln2(x)). With ``keep_attention`` set, the block
    keeps the last attention weights it computed, (B, h, S, S), detached, in ``attention``."""

    def __init__(self, d_model: int, num_heads: int, mlp_ratio: float = 2.0,
                 dropout: float = 0.0):
        self.ln1 = LayerNorm(d_model)
        self.attn = MultiHeadAttention(d_model, num_heads, dropout=dropout)
        self.ln2 = LayerNorm(d_model)
        self.mlp = FeedForward(d_model, int(d_model * mlp_ratio), dropout=dropout,
                               activation="gelu")
        self.keep_attention = False
        self.attention: Optional[Tensor] = None

    def forward(self, x: Tensor) -> Tensor:
        h = self.ln1(x)
        if self.keep_attention:
            out, self.attention = self.attn(h, need_weights=True,
                                            average_attn_weights=False)   # (B, h, S, S)
        else:
            out = self.attn(h, need_weights=False)
            out = out[0] if isinstance(out, tuple) else out
        x = x + out
        return x + self.mlp(self.ln2(x))


class VisionTransformer(Module):
    """``VisionTransformer(image_size=8, patch_size=2, in_channels=1, num_classes=10)``:
    images (B, C, H, W) -> logits (B, num_classes), classified from the class token."""

    def __init__(self, image_size: int = 8, patch_size: int = 2, in_channels: int = 1,
                 num_classes: int = 10, d_model: int = 64, depth: int = 4,
                 num_heads: int = 4, mlp_ratio: float = 2.0, dropout: float = 0.0):
        if image_size % patch_size:
            raise ValueError(f"VisionTransformer: image_size {image_size} must be a multiple "
                             f"of patch_size {patch_size} (the patches tile the image)")
        self.image_size, self.patch_size = image_size, patch_size
        self.grid = image_size // patch_size                     # patches per side
        num_patches = self.grid ** 2
        self.patch_embed = Conv2d(in_channels, d_model, kernel_size=patch_size,
                                  stride=patch_size)
        self.cls_token = normal_parameter((1, 1, d_model), 0.02)
        self.pos_embed = normal_parameter((1, num_patches + 1, d_model), 0.02)
        self.drop = Dropout(dropout)
        self.blocks = ModuleList([ViTBlock(d_model, num_heads, mlp_ratio, dropout)
                                  for _ in range(depth)])
        self.norm = LayerNorm(d_model)
        self.head = Linear(d_model, num_classes)

    def tokens(self, images: Tensor) -> Tensor:
        """(B, C, H, W) -> (B, S, D): patch embeddings after the class token, plus positions."""
        if images.ndim != 4 or images.shape[-1] != self.image_size \
                or images.shape[-2] != self.image_size:
            raise ValueError(f"VisionTransformer: expected images (B, C, {self.image_size}, "
                             f"{self.image_size}), got shape {images.shape}")
        patches = self.patch_embed(images)                      # (B, D, H/P, W/P)
        patches = patches.flatten(2).transpose(1, 2)            # (B, N, D)
        cls = self.cls_token.expand(images.shape[0], -1, -1)    # (B, 1, D)
        return self.drop(cat([cls, patches], dim=1) + self.pos_embed)   # (B, S, D)

    def forward(self, images: Tensor) -> Tensor:
        x = self.tokens(images)
        for block in self.blocks:
            x = block(x)
        return self.head(self.norm(x)[:, 0])                    # (B, D) -> (B, classes)

    def attention_maps(self, images: Tensor) -> List[Tensor]:
        """Run the model once and return each block's attention, (B, h, S, S) per layer."""
        for block in self.blocks:
            block.keep_attention = True
        try:
            self.forward(images)
            return [block.attention for block in self.blocks]
        finally:
            for block in self.blocks:
                block.keep_attention, block.attention = False, None


def attention_rollout(maps: List[Tensor], residual: bool = True) -> np.ndarray:
    """Abnar & Zuidema's attention rollout: how much each token's final state draws on each
    input token, through every layer. Per layer, average the heads, add the identity for the
    residual connection (``residual``) and renormalise the rows; then multiply the layers'
    matrices in order. Returns (B, S, S) with rows summing to 1; row 0 over columns 1: is the
    class token's attention over the patches."""
    rollout = None
    for weights in maps:
        a = np.asarray(weights.detach().numpy(), dtype=np.float64).mean(axis=1)  # (B, S, S)
        if residual:
            a = a + np.eye(a.shape[-1])
        a = a / a.sum(axis=-1, keepdims=True)
        rollout = a if rollout is None else a @ rollout     # later layers act on earlier
    if rollout is None:
        raise ValueError("attention_rollout: no attention maps given")
    return rollout
