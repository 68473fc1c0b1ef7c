"""``tinyattn.functional`` (import as ``F``): the ops with PyTorch's names and signatures.

    import tinyattn.functional as F
    F.softmax(x, dim=-1); F.linear(x, weight, bias); F.cross_entropy(logits, target)
"""
from __future__ import annotations

from .ops import (binary_cross_entropy, binary_cross_entropy_with_logits, cross_entropy,
                  dropout, embedding, gelu, l1_loss, layer_norm, leaky_relu, linear,
                  log_softmax, masked_fill, mse_loss, nll_loss, one_hot, pad, relu,
                  scaled_dot_product_attention, sigmoid, silu, softmax, softplus, tanh, where)
from .ops import (cosine_similarity, elu, hardtanh, huber_loss, kl_div, logsigmoid, normalize,
                  smooth_l1_loss, softsign)
from .ops.batch_norm import batch_norm
from .ops import rms_norm
from .ops.rope import rope
from .ops.local_attention import local_attention
from .ops.performer import performer_attention
from .ops.more_activations import (relu6, hardsigmoid, hardswish, hardshrink, softshrink,
                                   tanhshrink, threshold, mish, celu, selu, rrelu, glu, prelu,
                                   softmin)
from .ops.conv import (conv1d, conv2d, conv3d, conv_transpose1d, conv_transpose2d,
                       conv_transpose3d, fold, unfold)
from .ops.group_norm import group_norm
from .ops.channel_dropout import dropout1d, dropout2d, dropout3d
from .ops.pool import (adaptive_avg_pool1d, adaptive_avg_pool2d, adaptive_max_pool1d,
                       adaptive_max_pool2d, avg_pool1d, avg_pool2d, max_pool1d, max_pool2d)
from .ops.pool import (adaptive_avg_pool3d, adaptive_max_pool3d, avg_pool3d, max_pool3d)
from .ops.compositions import (channel_shuffle, cosine_embedding_loss, gaussian_nll_loss,
                                hinge_embedding_loss, margin_ranking_loss,
                                multilabel_soft_margin_loss, pairwise_distance, pixel_shuffle,
                                pixel_unshuffle, poisson_nll_loss, soft_margin_loss)

from .ops.torch_keywords import out_same_dtype as _out_same_dtype
from .ops.torch_keywords import with_torch_keywords as _kw

# torch's out= (issue 30, stream out39; ops/torch_keywords.py write_out applies it), in the
# result's own dtype as torch's kernels of these want it
hardshrink, softshrink, avg_pool2d, avg_pool3d = (
    _out_same_dtype(_kw(fn, input=True, out=True))
    for fn in (hardshrink, softshrink, avg_pool2d, avg_pool3d))

__all__ = ["softmax", "log_softmax", "relu", "gelu", "tanh", "linear", "layer_norm", "dropout",
           "embedding", "cross_entropy", "masked_fill", "where", "scaled_dot_product_attention",
           "rope", "sigmoid", "silu", "softplus", "leaky_relu", "pad", "one_hot", "mse_loss",
           "l1_loss", "binary_cross_entropy", "binary_cross_entropy_with_logits", "nll_loss",
           "rms_norm", "normalize", "cosine_similarity", "logsigmoid", "elu", "hardtanh",
           "softsign", "smooth_l1_loss", "huber_loss", "kl_div", "batch_norm",
           "local_attention", "performer_attention",
           "relu6", "hardsigmoid", "hardswish", "hardshrink", "softshrink", "tanhshrink",
           "threshold", "mish", "celu", "selu", "rrelu", "glu", "prelu", "softmin",
           "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d",
           "conv_transpose3d", "unfold", "fold", "max_pool1d", "max_pool2d", "avg_pool1d",
           "avg_pool2d", "adaptive_avg_pool1d", "adaptive_avg_pool2d", "adaptive_max_pool1d",
           "adaptive_max_pool2d", "group_norm", "dropout1d", "dropout2d", "dropout3d",
           "channel_shuffle", "cosine_embedding_loss", "gaussian_nll_loss",
           "hinge_embedding_loss", "margin_ranking_loss", "multilabel_soft_margin_loss",
           "pairwise_distance", "pixel_shuffle", "pixel_unshuffle", "poisson_nll_loss",
           "soft_margin_loss"]

# the in-place activations (F.relu_(x), F.elu_(x), ...) and the noise ops built of others
from .ops.activation_in_place import (celu_, elu_, hardtanh_, leaky_relu_, relu_,  # noqa: E402
                                      rrelu_, selu_, threshold_)
__all__ += ["relu_", "elu_", "leaky_relu_", "hardtanh_", "selu_", "celu_", "threshold_",
            "rrelu_"]
from .ops.alpha_dropout import alpha_dropout, feature_alpha_dropout, gumbel_softmax  # noqa: E402
__all__ += ["alpha_dropout", "feature_alpha_dropout", "gumbel_softmax"]
from .ops.bilinear import bilinear                                        # noqa: E402
from .ops.margin_loss import multi_margin_loss, multilabel_margin_loss      # noqa: E402
__all__ += ["bilinear", "multi_margin_loss", "multilabel_margin_loss"]
from .ops.grid_sample import grid_sample, affine_grid  # noqa: E402
__all__ += ["grid_sample", "affine_grid"]
from .ops.embedding_bag import embedding_bag  # noqa: E402
__all__ += ["embedding_bag"]
from .ops.interpolate import (interpolate, upsample, upsample_bilinear,  # noqa: E402
                              upsample_nearest)
__all__ += ["interpolate", "upsample", "upsample_nearest", "upsample_bilinear"]
from .ops.instance_norm import instance_norm                               # noqa: E402
__all__ += ["instance_norm"]
from .ops.lp_pool import lp_pool1d, lp_pool2d, lp_pool3d                 # noqa: E402
from .ops.fractional_pool import (fractional_max_pool2d,                 # noqa: E402
                                  fractional_max_pool2d_with_indices, fractional_max_pool3d,
                                  fractional_max_pool3d_with_indices)
__all__ += ["fractional_max_pool2d", "fractional_max_pool3d",
            "fractional_max_pool2d_with_indices", "fractional_max_pool3d_with_indices"]
__all__ += ["lp_pool1d", "lp_pool2d", "lp_pool3d", "max_pool3d", "avg_pool3d",
            "adaptive_avg_pool3d", "adaptive_max_pool3d"]
from .ops.unpool import max_unpool1d, max_unpool2d, max_unpool3d            # noqa: E402
__all__ += ["max_unpool1d", "max_unpool2d", "max_unpool3d"]
from .ops.local_response_norm import local_response_norm                 # noqa: E402
__all__ += ["local_response_norm"]
from .ops.linear_cross_entropy import linear_cross_entropy               # noqa: E402
__all__ += ["linear_cross_entropy"]
from .ops.ctc_loss import ctc_loss                                        # noqa: E402
__all__ += ["ctc_loss"]
from .ops.distances import pdist                                           # noqa: E402
__all__ += ["pdist"]
from .ops.compositions import (triplet_margin_loss,                      # noqa: E402
                                triplet_margin_with_distance_loss)
__all__ += ["triplet_margin_loss", "triplet_margin_with_distance_loss"]
