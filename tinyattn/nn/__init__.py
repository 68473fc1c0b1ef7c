"""``tinyattn.nn``: modules built from tinyattn's ops (docs/nn.md)."""
from __future__ import annotations

from . import functional, init, parallel, torch_compat, utils
from .activation import (GELU, LeakyReLU, LogSoftmax, ReLU, Sigmoid, SiLU, Softmax, Softplus,
                         Tanh)
from .activation import (CELU, ELU, GLU, PReLU, ReLU6, RReLU, SELU, Hardshrink, Hardsigmoid,
                         Hardswish, Hardtanh, LogSigmoid, Mish, Softmin, Softshrink, Softsign,
                         Tanhshrink, Threshold)
from .attention import KVCache, MultiHeadAttention
from .batchnorm import BatchNorm1d, BatchNorm2d
from .channel_dropout import AlphaDropout, Dropout1d, Dropout2d, Dropout3d, FeatureAlphaDropout
from .conv import (Conv1d, Conv2d, Conv3d, ConvTranspose1d, ConvTranspose2d, ConvTranspose3d,
                   Fold, Unfold)
from .group_norm import GroupNorm
from .vit import VisionTransformer, ViTBlock, attention_rollout
from .pooling import (AdaptiveAvgPool1d, AdaptiveAvgPool2d, AdaptiveMaxPool1d,
                      AdaptiveMaxPool2d, AvgPool1d, AvgPool2d, MaxPool1d, MaxPool2d)
from .generation import NonFiniteLogitsError
from .containers import ModuleDict, ParameterDict, ParameterList, Sequential
from .gpt import GPT, Block, GPTConfig
from .layers import (Dropout, Embedding, FeedForward, Flatten, Identity, LayerNorm, Linear,
                     RMSNorm, Unflatten)
from .lazy import (LazyBatchNorm1d, LazyBatchNorm2d, LazyBatchNorm3d, LazyLinear,
                   LazyInstanceNorm1d, LazyInstanceNorm2d, LazyInstanceNorm3d,
                   UninitializedBuffer, UninitializedParameter)
from .loss import BCELoss, BCEWithLogitsLoss, CrossEntropyLoss, L1Loss, MSELoss, NLLLoss
from .loss import KLDivLoss
from .masks import causal_mask, combine_masks, key_padding_mask, sliding_window_mask
from .masks import global_tokens_mask, random_block_mask
from .long_attention import LinformerSelfAttention, RelativePositionBias
from .containers import ModuleList
from .module import Buffer, Module, Parameter
from .rnn import GRU, LSTM, RNN, GRUCell, LSTMCell, RNNBase, RNNCell, RNNCellBase
from .rnn_attention import AdditiveAttention, LuongAttention
from .positional import (ALiBi, LearnedPositionalEmbedding, RotaryEmbedding,
                         SinusoidalPositionalEncoding, alibi_slopes, sinusoidal_table)
from .swiglu import SwiGLU, llama_hidden_dim
from .torch_mha import MultiheadAttention
from .transformer import (Transformer, TransformerDecoder, TransformerDecoderLayer,
                          TransformerEncoder, TransformerEncoderLayer)

__all__ = [
    "Module", "ModuleList", "Parameter", "Buffer", "Sequential", "ModuleDict", "ParameterList",
    "ParameterDict",
    "Linear", "Embedding", "LayerNorm", "RMSNorm", "BatchNorm1d", "Dropout", "Identity", "Flatten",
    "Unflatten", "FeedForward", "SwiGLU", "llama_hidden_dim",
    "ReLU", "GELU", "Tanh", "Sigmoid", "SiLU", "LeakyReLU", "Softplus", "Softmax", "LogSoftmax",
    "ReLU6", "Hardsigmoid", "Hardswish", "Mish", "SELU", "CELU", "ELU", "Hardtanh",
    "Hardshrink", "Softshrink", "Tanhshrink", "Softsign", "LogSigmoid", "Threshold", "RReLU",
    "GLU", "Softmin", "PReLU",
    "CrossEntropyLoss", "NLLLoss", "MSELoss", "L1Loss", "BCELoss", "BCEWithLogitsLoss",
    "functional", "init", "utils",
    "causal_mask", "key_padding_mask", "sliding_window_mask", "combine_masks",
    "random_block_mask", "global_tokens_mask", "LinformerSelfAttention", "RelativePositionBias",
    "MultiHeadAttention", "MultiheadAttention", "KVCache",
    "SinusoidalPositionalEncoding", "LearnedPositionalEmbedding", "RotaryEmbedding", "ALiBi",
    "sinusoidal_table", "alibi_slopes",
    "TransformerEncoderLayer", "TransformerDecoderLayer", "TransformerEncoder",
    "TransformerDecoder", "Transformer",
    "GPTConfig", "GPT", "Block", "NonFiniteLogitsError", "torch_compat",
    "LazyLinear", "LazyBatchNorm1d", "LazyBatchNorm2d", "LazyBatchNorm3d",
    "LazyInstanceNorm1d", "LazyInstanceNorm2d", "LazyInstanceNorm3d",
    "UninitializedParameter", "UninitializedBuffer",
    "KLDivLoss",
    "Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d", "ConvTranspose2d", "ConvTranspose3d",
    "Unfold", "Fold", "MaxPool1d", "MaxPool2d", "AvgPool1d", "AvgPool2d", "AdaptiveAvgPool1d",
    "AdaptiveAvgPool2d", "AdaptiveMaxPool1d", "AdaptiveMaxPool2d", "BatchNorm2d", "GroupNorm",
    "Dropout1d", "Dropout2d", "Dropout3d", "AlphaDropout", "FeatureAlphaDropout",
    "VisionTransformer", "ViTBlock", "attention_rollout",
    "RNNBase", "RNN", "LSTM", "GRU", "RNNCellBase", "RNNCell", "LSTMCell", "GRUCell",
    "AdditiveAttention", "LuongAttention",
]


_REMOVED = {
    "padding_mask": "nn.padding_mask (True = real token) was replaced by nn.key_padding_mask, "
                    "which follows PyTorch's key_padding_mask: True = padding. "
                    "nn.key_padding_mask(lengths) == ~old_padding_mask(lengths)",
}


def __getattr__(name: str):
    if name in _REMOVED:
        raise AttributeError(_REMOVED[name])
    raise AttributeError(f"module 'tinyattn.nn' has no attribute {name!r}")
from .composed import (ChannelShuffle, CosineEmbeddingLoss, GaussianNLLLoss,
                       HingeEmbeddingLoss, MarginRankingLoss, MultiLabelSoftMarginLoss,
                       PairwiseDistance, PixelShuffle, PixelUnshuffle, PoissonNLLLoss,
                       SoftMarginLoss)
__all__ += ["ChannelShuffle", "CosineEmbeddingLoss", "GaussianNLLLoss", "HingeEmbeddingLoss",
            "MarginRankingLoss", "MultiLabelSoftMarginLoss", "PairwiseDistance", "PixelShuffle",
            "PixelUnshuffle", "PoissonNLLLoss", "SoftMarginLoss"]
from .composed import (CosineSimilarity, TripletMarginLoss,            # noqa: E402
                       TripletMarginWithDistanceLoss)
__all__ += ["CosineSimilarity", "TripletMarginLoss", "TripletMarginWithDistanceLoss"]
from .bilinear import Bilinear                                           # noqa: E402
from .activation import Softmax2d                                        # noqa: E402
from .loss import (HuberLoss, MultiLabelMarginLoss, MultiMarginLoss,     # noqa: E402
                   SmoothL1Loss)
from .padding import (CircularPad1d, CircularPad2d, CircularPad3d,       # noqa: E402
                      ConstantPad1d, ConstantPad2d, ConstantPad3d, ReflectionPad1d,
                      ReflectionPad2d, ReflectionPad3d, ReplicationPad1d, ReplicationPad2d,
                      ReplicationPad3d, ZeroPad1d, ZeroPad2d, ZeroPad3d)
__all__ += ["Bilinear", "Softmax2d", "HuberLoss", "SmoothL1Loss", "MultiMarginLoss",
            "MultiLabelMarginLoss", "ZeroPad1d", "ZeroPad2d", "ZeroPad3d", "ConstantPad1d",
            "ConstantPad2d", "ConstantPad3d", "ReflectionPad1d", "ReflectionPad2d",
            "ReflectionPad3d", "ReplicationPad1d", "ReplicationPad2d", "ReplicationPad3d",
            "CircularPad1d", "CircularPad2d", "CircularPad3d"]
from .upsampling import Upsample, UpsamplingBilinear2d, UpsamplingNearest2d  # noqa: E402
from .embedding_bag import EmbeddingBag                                   # noqa: E402
__all__ += ["EmbeddingBag"]
__all__ += ["Upsample", "UpsamplingNearest2d", "UpsamplingBilinear2d"]
from .batchnorm import BatchNorm3d                                        # noqa: E402
from .instancenorm import InstanceNorm1d, InstanceNorm2d, InstanceNorm3d  # noqa: E402
__all__ += ["BatchNorm3d", "InstanceNorm1d", "InstanceNorm2d", "InstanceNorm3d"]
from .lazy_conv import (LazyConv1d, LazyConv2d, LazyConv3d,              # noqa: E402
                        LazyConvTranspose1d, LazyConvTranspose2d, LazyConvTranspose3d)
__all__ += ["LazyConv1d", "LazyConv2d", "LazyConv3d", "LazyConvTranspose1d",
            "LazyConvTranspose2d", "LazyConvTranspose3d"]
from .pooling import LPPool1d, LPPool2d                                   # noqa: E402
__all__ += ["LPPool1d", "LPPool2d"]
from .pooling import (AdaptiveAvgPool3d, AdaptiveMaxPool3d, AvgPool3d,  # noqa: E402
                      LPPool3d, MaxPool3d)
__all__ += ["MaxPool3d", "AvgPool3d", "AdaptiveAvgPool3d", "AdaptiveMaxPool3d", "LPPool3d"]
from .pooling import MaxUnpool1d, MaxUnpool2d, MaxUnpool3d                # noqa: E402
__all__ += ["MaxUnpool1d", "MaxUnpool2d", "MaxUnpool3d"]
from .pooling import FractionalMaxPool2d, FractionalMaxPool3d             # noqa: E402
__all__ += ["FractionalMaxPool2d", "FractionalMaxPool3d"]
from .local_response_norm import LocalResponseNorm                       # noqa: E402
__all__ += ["LocalResponseNorm"]
from .linear_cross_entropy import (LinearCrossEntropyLoss,              # noqa: E402
                                   LinearCrossEntropyOptions)
__all__ += ["LinearCrossEntropyLoss", "LinearCrossEntropyOptions"]
from .ctc_loss import CTCLoss                                             # noqa: E402
__all__ += ["CTCLoss"]
