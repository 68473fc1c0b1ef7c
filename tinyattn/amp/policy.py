"""torch's autocast op lists (CPU and CUDA), and which tinyattn op answers to which name.

Inside ``autocast`` an op is one of:

- ``LOWER``: its floating inputs (float32, float16, bfloat16; never float64) are cast to the
  autocast dtype (bfloat16 on the CPU, float16 on CUDA by default): matmuls, linear layers,
  convolutions, attention. These are where lower precision is fast and safe enough.
- ``FP32``: its half inputs are cast to float32: ops whose range or accumulation float16
  cannot hold (softmax and log_softmax on CUDA, exp, log, pow, sums, the losses, ...).
- ``PROMOTE``: mixed floating inputs are cast to the widest of them (cat, stack, ...).
- ``BANNED`` (CUDA's binary_cross_entropy): refused with torch's message.
- anything else runs on the dtypes it is given. Where those mix (a bfloat16 matmul output
  plus a float32 bias), torch's type promotion gives the widest dtype, except for the
  normalisation layers, whose output keeps the input's dtype (``FOLLOW_INPUT``).

The names and lists are torch's (``aten/src/ATen/autocast_mode.cpp`` and the "Autocast Op
Reference" of the torch.amp docs), restricted to the ops tinyattn has; the CPU lists were
checked against torch 2.13 running on a CPU (tests/test_amp_autocast.py).
"""
from __future__ import annotations

from typing import Dict, FrozenSet

__all__ = ["LOWER", "FP32", "PROMOTE", "FOLLOW_INPUT", "BANNED", "BANNED_MESSAGE", "OP_NAMES",
           "CPU_LISTS", "CUDA_LISTS", "cast_kind", "kind_of_name"]

LOWER, FP32, PROMOTE, FOLLOW_INPUT = "lower", "fp32", "promote", "follow_input"
BANNED = "banned"

# torch's lists (the ops tinyattn has, under torch's op names)
_CPU_LOWER = frozenset({"conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d",
                        "conv_transpose3d", "bmm", "mm", "baddbmm", "addmm", "addbmm",
                        "linear", "matmul", "prelu", "scaled_dot_product_attention",
                        "_native_multi_head_attention",
                        "lstm",      # torch's CPU nn.LSTM runs mkldnn_rnn_layer, on this list
                        "rnn_tanh", "rnn_relu",   # not listed, but each step's two linears
                        # are, so torch's CPU RNN runs in the low dtype throughout
                        "einsum"})   # not listed for the CPU, but torch's einsum is a bmm
_CPU_FP32 = frozenset({"binary_cross_entropy", "prod", "trace", "mse_loss", "nll_loss",
                       "grid_sampler",
                       "smooth_l1_loss", "cross_entropy_loss", "l1_loss", "huber_loss",
                       "kl_div", "binary_cross_entropy_with_logits", "cosine_embedding_loss",
                       "hinge_embedding_loss", "poisson_nll_loss", "margin_ranking_loss",
                       "soft_margin_loss", "triplet_margin_loss", "multi_margin_loss",
                       "multilabel_margin_loss",
                       "reflection_pad", "replication_pad",   # torch's *_pad1d/2d/3d
                       "linalg_inv", "linalg_solve", "linalg_svdvals", "linalg_eigvalsh",
                       # ops/decompositions.py, ops/linalg_solvers.py (as torch's CPU list)
                       "linalg_cholesky", "linalg_cholesky_ex", "cholesky", "linalg_qr", "qr",
                       "linalg_eigh", "linalg_svd", "svd", "pinverse", "linalg_matrix_rank",
                       "triangular_solve", "linalg_lstsq", "linalg_cond",
                       # 3-d pooling, max unpooling and CTC (ops/pool.py, unpool.py, ctc_loss.py)
                       "max_pool3d", "avg_pool3d", "adaptive_avg_pool3d",
                       "adaptive_max_pool3d", "max_unpool2d", "max_unpool3d", "ctc_loss",
                       # ops/distances.py, ops/order_stats.py
                       "cdist", "quantile", "nanquantile"})
_CPU_PROMOTE = frozenset({"cat", "stack", "index_copy"})

_CUDA_LOWER = frozenset({"matmul", "addbmm", "addmm", "addmv", "addr", "baddbmm", "bmm",
                         "chain_matmul", "linalg_multi_dot", "conv1d", "conv2d", "conv3d",
                         "conv_transpose1d", "conv_transpose2d", "conv_transpose3d",
                         "linear", "mm", "mv", "prelu", "einsum", "linalg_vecdot",
                         "scaled_dot_product_attention", "lstm_cell", "gru_cell",
                         # cuDNN's RNNs: torch's AutocastRNN.cpp casts _cudnn_rnn's inputs
                         "lstm", "gru", "rnn_tanh", "rnn_relu"})
# torch's "fp32", "fp32_set_opt_dtype" (softmax, sums, ...) and "fp32_append_dtype" (norm)
_CUDA_FP32 = frozenset({"acos", "asin", "cosh", "erfinv", "exp", "expm1", "log", "log10",
                        "log2", "log1p", "reciprocal", "rsqrt", "sinh", "tan", "pow",
                        "softplus", "layer_norm", "group_norm", "frobenius_norm",
                        "cosine_similarity", "poisson_nll_loss", "cosine_embedding_loss",
                        "nll_loss", "hinge_embedding_loss", "kl_div", "l1_loss",
                        "smooth_l1_loss", "huber_loss", "mse_loss", "margin_ranking_loss",
                        "multilabel_margin_loss", "soft_margin_loss", "triplet_margin_loss",
                        "multi_margin_loss", "binary_cross_entropy_with_logits", "dist",
                        "pdist", "cdist", "renorm", "logsumexp", "prod", "softmax",
                        "log_softmax", "cumprod", "cumsum", "linalg_vector_norm", "sum",
                        "norm", "cross_entropy_loss"})   # (a log_softmax + nll_loss in torch)
_CUDA_PROMOTE = frozenset({"addcdiv", "addcmul", "atan2", "bilinear", "cross", "dot",
                           "grid_sampler", "index_put", "tensordot", "scatter_add",
                           "cat", "stack"})    # cat and stack promote by themselves in torch
# CUDA autocast refuses binary_cross_entropy (after a sigmoid, float16 probabilities lose
# what BCE needs); torch's message, word for word
BANNED_MESSAGE = (
    "torch.nn.functional.binary_cross_entropy and torch.nn.BCELoss are unsafe to autocast.\n"
    "Many models use a sigmoid layer right before the binary cross entropy layer.\n"
    "In this case, combine the two layers using "
    "torch.nn.functional.binary_cross_entropy_with_logits\n"
    "or torch.nn.BCEWithLogitsLoss.  binary_cross_entropy_with_logits and BCEWithLogits are\n"
    "safe to autocast.")
_CUDA_BANNED = frozenset({"binary_cross_entropy"})

CPU_LISTS: Dict[str, FrozenSet[str]] = {LOWER: _CPU_LOWER, FP32: _CPU_FP32,
                                        PROMOTE: _CPU_PROMOTE}
CUDA_LISTS: Dict[str, FrozenSet[str]] = {LOWER: _CUDA_LOWER, FP32: _CUDA_FP32,
                                         PROMOTE: _CUDA_PROMOTE, BANNED: _CUDA_BANNED}

# tinyattn's Function classes, by class name, under torch's op names. A class not listed
# runs as given (torch's fallthrough); composite functions are made of listed ops.
OP_NAMES: Dict[str, str] = {
    "Matmul": "matmul", "Linear": "linear", "Einsum": "einsum",
    "ScaledDotProductAttention": "scaled_dot_product_attention",
    "PackedSelfAttention": "scaled_dot_product_attention",
    "TiledAttention": "scaled_dot_product_attention",
    "Softmax": "softmax", "LogSoftmax": "log_softmax", "LayerNorm": "layer_norm",
    "CrossEntropy": "cross_entropy_loss", "NLLLoss": "nll_loss", "MseLoss": "mse_loss",
    "L1Loss": "l1_loss", "BCEWithLogits": "binary_cross_entropy_with_logits",
    "BCE": "binary_cross_entropy", "SmoothL1": "smooth_l1_loss", "KlDiv": "kl_div",
    "Exp": "exp", "Log": "log", "Log1p": "log1p", "Expm1": "expm1", "Rsqrt": "rsqrt",
    "Reciprocal": "reciprocal", "Softplus": "softplus", "Pow": "pow", "PowTensor": "pow",
    "RPow": "pow",
    "LogSumExp": "logsumexp", "Sum": "sum", "Prod": "prod", "Cumsum": "cumsum",
    "Cumprod": "cumprod", "Norm": "norm",
    "Concat": "cat", "Stack": "stack", "ScatterAdd": "scatter_add",
    "Convolution": "conv2d",      # one class for conv1d/2d/3d, all three on the lists
    "ConvolutionTranspose": "conv_transpose2d",
    "GroupNorm": "group_norm",
    "Prelu": "prelu", "Erfinv": "erfinv", "AddcMul": "addcmul", "AddcDiv": "addcdiv",
    "Inv": "linalg_inv", "Solve": "linalg_solve", "Svdvals": "linalg_svdvals",
    "Eigvalsh": "linalg_eigvalsh",
    # the recurrent layers' sequence ops (one per layer direction) and cells' pointwise halves
    "LSTMSequence": "lstm", "GRUSequence": "gru", "RNNSequence": "rnn_tanh",  # (or rnn_relu:
    "LSTMCellUpdate": "lstm_cell",                               # the same lists)
    "GRUCellUpdate": "gru_cell",
    "MultiMargin": "multi_margin_loss", "MultiLabelMargin": "multilabel_margin_loss",
    "GridSample": "grid_sampler",       # promoted on CUDA (input and grid to the wider)
}

# ops outside the lists whose output keeps the first (input) tensor's dtype when the
# others (weights, values written in) differ: torch's CPU layer_norm of a bfloat16 input
# with float32 weights is bfloat16
_FOLLOW_INPUT = frozenset({"LayerNorm", "RMSNorm", "BatchNorm", "GroupNorm", "SetItem", "Scatter",
                           "IndexAdd", "Gather", "MaskedFill"})


_FOLLOW_INPUT_NAMES = frozenset({"layer_norm", "rms_norm", "batch_norm", "group_norm"})


def kind_of_name(device_type: str, op_name: str) -> str:
    """LOWER, FP32, PROMOTE, FOLLOW_INPUT or "" (as given) for a torch op name."""
    lists = CPU_LISTS if device_type == "cpu" else CUDA_LISTS
    for kind, names in lists.items():
        if op_name in names:
            return kind
    return FOLLOW_INPUT if op_name in _FOLLOW_INPUT_NAMES else ""


def cast_kind(device_type: str, class_name: str) -> str:
    """The cast kind of a tinyattn Function class on a device (see ``kind_of_name``).

    ``torch.log2`` and ``torch.log10`` are one tinyattn class (LogBase) and float32 on CUDA;
    the CPU lists have neither."""
    if class_name == "LogBase":
        return FP32 if device_type != "cpu" else ""
    name = OP_NAMES.get(class_name)
    kind = kind_of_name(device_type, name) if name is not None else ""
    if not kind and class_name in _FOLLOW_INPUT:
        return FOLLOW_INPUT
    return kind
