"""The map from PyTorch's modules to tinyattn's: one row per torch module the runner provides.

A torch module's names are, in this order of precedence: its sub-modules in this table
(``torch.nn`` -> ``torch.nn.functional``), its ``shim_names`` (torch names implemented by the shim,
shim_names.py), its ``refused`` names (a clear error with the reason), and the public names
(``__all__``) of its tinyattn ``source`` module, except the ``hidden`` ones: tinyattn names
that PyTorch does not have under that module (tests/test_torch_runner.py checks, with torch
installed, that every name exposed here exists in torch). Any other name is an error that
names it and the script line that used it. A module missing from this table cannot be
imported (``import torch.fft``: the same error).
"""
from __future__ import annotations

from typing import Any, Dict, FrozenSet, NamedTuple, Optional

from .. import kernels
from ..nn import Parameter
from ..optim import lr_scheduler as _lr_scheduler
from ..utils import data as _data
from . import shim_names

__all__ = ["ModuleSpec", "MODULES", "ECOSYSTEM"]


class ModuleSpec(NamedTuple):
    source: Optional[str]                    # the tinyattn module that provides the names
    hidden: FrozenSet[str] = frozenset()     # tinyattn names torch lacks here: not exposed
    shim_names: Dict[str, Any] = {}              # names the shim itself provides
    refused: Dict[str, str] = {}             # names refused with a reason


_TOP_HIDDEN = frozenset({
    "Function", "detect_anomaly", "gradcheck", "gradcheck_report", "GradcheckError",
    "SavedDataWriteError", "CheckpointError", "backend", "cuda_is_available", "bool_", "viz",
    "functional", "ops",    # torch.functional and torch.ops exist but are other things
    "get_printoptions", "get_default_device", "testing",   # testing: a module of MODULES
    "models",               # tinyattn.models (pretrained BERT, GPT-2): no torch.models
    "strict_promotion", "set_strict_promotion", "is_strict_promotion",  # tinyattn's opt-in
})

_NN_HIDDEN = frozenset({
    "MultiHeadAttention", "KVCache", "FeedForward", "SwiGLU", "llama_hidden_dim",
    "causal_mask", "key_padding_mask", "sliding_window_mask", "combine_masks",
    "SinusoidalPositionalEncoding", "LearnedPositionalEmbedding", "RotaryEmbedding", "ALiBi",
    "sinusoidal_table", "alibi_slopes", "GPTConfig", "GPT", "Block", "torch_compat",
    "NonFiniteLogitsError",
    "random_block_mask", "global_tokens_mask", "LinformerSelfAttention", "RelativePositionBias",
    "VisionTransformer", "ViTBlock", "attention_rollout",
    "AdditiveAttention", "LuongAttention",
})

_QUANTIZATION_HIDDEN = frozenset({"DynamicQuantizedLinear", "choose_qparams", "quantize_weight",
                                  "default_reduce_range", "qint8", "quint8"})

_SCHEDULERS = frozenset({"WarmupCosineLR", "NoamLR"})

_TOP_REFUSED = {
    "jit": "tinyattn has no TorchScript; call the model itself",
}

# torch.utils.data.dataloader: the module minGPT's trainer imports DataLoader from
_DATALOADER_NAMES = {name: getattr(_data, name) for name in ("DataLoader", "default_collate")
                     if hasattr(_data, name)}

# torch.nn.modules.<file>: the classes torch defines in each file, as far as tinyattn.nn has
# them (a class another round adds to tinyattn.nn appears here by itself)
_NN_MODULE_FILES = {
    "activation": "Threshold ReLU RReLU Hardtanh ReLU6 Sigmoid Hardsigmoid Tanh SiLU Mish "
                  "Hardswish ELU CELU SELU GLU GELU Hardshrink LeakyReLU LogSigmoid Softplus "
                  "Softshrink MultiheadAttention PReLU Softsign Tanhshrink Softmin Softmax "
                  "Softmax2d LogSoftmax",
    "container": "Container Sequential ModuleList ModuleDict ParameterList ParameterDict",
    "dropout": "Dropout Dropout1d Dropout2d Dropout3d AlphaDropout FeatureAlphaDropout",
    "linear": "Identity Linear Bilinear LazyLinear NonDynamicallyQuantizableLinear",
    "normalization": "LocalResponseNorm CrossMapLRN2d LayerNorm GroupNorm RMSNorm",
    "instancenorm": "InstanceNorm1d InstanceNorm2d InstanceNorm3d",
    "sparse": "Embedding EmbeddingBag",
    "transformer": "Transformer TransformerEncoder TransformerDecoder "
                   "TransformerEncoderLayer TransformerDecoderLayer",
    "module": "Module",
    "loss": "L1Loss NLLLoss NLLLoss2d PoissonNLLLoss GaussianNLLLoss KLDivLoss MSELoss BCELoss "
            "BCEWithLogitsLoss HingeEmbeddingLoss MultiLabelMarginLoss SmoothL1Loss HuberLoss "
            "SoftMarginLoss CrossEntropyLoss MultiLabelSoftMarginLoss CosineEmbeddingLoss "
            "MarginRankingLoss MultiMarginLoss TripletMarginLoss TripletMarginWithDistanceLoss "
            "CTCLoss",
    "distance": "PairwiseDistance CosineSimilarity",
    "batchnorm": "BatchNorm1d BatchNorm2d BatchNorm3d LazyBatchNorm1d LazyBatchNorm2d "
                 "LazyBatchNorm3d "
                 "SyncBatchNorm",
    "flatten": "Flatten Unflatten",
    "conv": "Conv1d Conv2d Conv3d ConvTranspose1d ConvTranspose2d ConvTranspose3d LazyConv1d "
            "LazyConv2d LazyConv3d LazyConvTranspose1d LazyConvTranspose2d LazyConvTranspose3d",
    "pooling": "MaxPool1d MaxPool2d AvgPool1d AvgPool2d AdaptiveAvgPool1d AdaptiveAvgPool2d "
               "AdaptiveMaxPool1d AdaptiveMaxPool2d LPPool1d LPPool2d MaxPool3d AvgPool3d "
               "AdaptiveAvgPool3d AdaptiveMaxPool3d LPPool3d MaxUnpool1d MaxUnpool2d "
               "MaxUnpool3d FractionalMaxPool2d FractionalMaxPool3d",
    "rnn": "RNNBase RNN LSTM GRU RNNCellBase RNNCell LSTMCell GRUCell",
    "lazy": "LazyModuleMixin",
    "padding": "CircularPad1d CircularPad2d CircularPad3d ConstantPad1d ConstantPad2d "
               "ConstantPad3d ZeroPad1d ZeroPad2d ZeroPad3d ReflectionPad1d ReflectionPad2d "
               "ReflectionPad3d ReplicationPad1d ReplicationPad2d ReplicationPad3d",
    "upsampling": "Upsample UpsamplingNearest2d UpsamplingBilinear2d",
}


def _nn_file(names: str) -> ModuleSpec:
    from .. import nn                      # noqa: PLC0415 - the package's own nn
    from ..nn import layers
    found = {name: getattr(nn, name, None) or getattr(layers, name, None)
             for name in names.split()}
    return ModuleSpec(None, shim_names={k: v for k, v in found.items() if v is not None})


_DATA_FILES = {
    "torch.utils.data.dataset": "Dataset IterableDataset TensorDataset StackDataset "
                                "ConcatDataset ChainDataset Subset random_split",
    "torch.utils.data.sampler": "BatchSampler RandomSampler Sampler SequentialSampler "
                                "SubsetRandomSampler WeightedRandomSampler",
}

MODULES: Dict[str, ModuleSpec] = {
    "torch": ModuleSpec("tinyattn", _TOP_HIDDEN, shim_names.TORCH_SHIM_NAMES, _TOP_REFUSED),
    "torch.nn": ModuleSpec("tinyattn.nn", _NN_HIDDEN),
    "torch.nn.functional": ModuleSpec("tinyattn.functional",
                                      frozenset({"masked_fill", "where", "rope",
                                                 "local_attention", "performer_attention"})),
    "torch.nn.init": ModuleSpec("tinyattn.nn.init"),
    "torch.special": ModuleSpec("tinyattn.special"),
    "torch.distributions": ModuleSpec("tinyattn.distributions"),
    "torch.distributions.categorical": ModuleSpec("tinyattn.distributions"),
    "torch.linalg": ModuleSpec("tinyattn.linalg"),
    "torch.fft": ModuleSpec("tinyattn.fft"),
    "torch.signal": ModuleSpec("tinyattn.signal"),
    "torch.signal.windows": ModuleSpec("tinyattn.signal.windows", hidden=frozenset({
        "hann_window", "hamming_window", "blackman_window", "bartlett_window",
        "kaiser_window"})),             # torch's are top-level (torch.hann_window)
    "torch.nn.utils": ModuleSpec("tinyattn.nn.utils"),
    "torch.nn.utils.rnn": ModuleSpec("tinyattn.nn.utils.rnn"),
    "torch.nn.parameter": ModuleSpec(None, shim_names={"Parameter": Parameter}),
    "torch.optim": ModuleSpec("tinyattn.optim", _SCHEDULERS | {
        "LRScheduler", "LambdaLR", "StepLR", "MultiStepLR", "ExponentialLR", "LinearLR",
        "CosineAnnealingLR", "OneCycleLR", "ReduceLROnPlateau",   # torch.optim.lr_scheduler.*
        "ConstantLR", "PolynomialLR", "SequentialLR", "ChainedScheduler",
        "CosineAnnealingWarmRestarts", "CyclicLR",
        "clip_grad_norm_", "clip_grad_value_"},                   # torch.nn.utils.*
        refused={"SparseAdam": "SparseAdam updates from sparse gradients (nn.Embedding("
                               "sparse=True)), and tinyattn has no sparse tensors; use "
                               "torch.optim.Adam with dense gradients (it also decays the "
                               "moments of rows absent from a batch, which SparseAdam "
                               "leaves as they are)"}),
    "torch.optim.lr_scheduler": ModuleSpec("tinyattn.optim.lr_scheduler", _SCHEDULERS, {
        # torch's older, underscored name of the base class (tutorials subclass it)
        "_LRScheduler": _lr_scheduler._LRScheduler}),
    "torch.autograd": ModuleSpec("tinyattn.autograd", frozenset({
        "FunctionCtx", "VersionCounter", "is_grad_enabled", "run_backward", "unbroadcast",
        "is_anomaly_enabled", "names_node",
        "set_backward_hook", "set_current_module", "register_hook", "RemovableHandle",
        "keep_versions", "name_node"}),                   # tinyattn's own: torch has no such
        shim_names.AUTOGRAD_SHIM_NAMES),
    "torch.serialization": ModuleSpec(None, shim_names=shim_names.SERIALIZATION_SHIM_NAMES),
    "torch.utils.benchmark": ModuleSpec("tinyattn.utils.benchmark"),
    "torch.onnx": ModuleSpec(None, shim_names=shim_names.ONNX_SHIM_NAMES),
    "torch.utils": ModuleSpec(None),
    "torch.utils.data": ModuleSpec("tinyattn.utils.data"),
    "torch.utils.data.dataloader": ModuleSpec(None, shim_names=_DATALOADER_NAMES),
    **{name: ModuleSpec(None, shim_names={n: getattr(_data, n) for n in names.split()
                                          if hasattr(_data, n)})
       for name, names in _DATA_FILES.items()},
    "torch.nn.modules": ModuleSpec("tinyattn.nn", _NN_HIDDEN | {
        "init", "functional", "utils", "Parameter", "parameter", "UninitializedBuffer",
        "UninitializedParameter", "Buffer"}),
    **{f"torch.nn.modules.{file}": _nn_file(names) for file, names in _NN_MODULE_FILES.items()},
    "torch.testing": ModuleSpec("tinyattn.testing", frozenset({"default_tolerances"})),
    "torch.cuda": ModuleSpec(None, shim_names=shim_names.CUDA_SHIM_NAMES),
    "torch.accelerator": ModuleSpec(None, shim_names=shim_names.ACCELERATOR_SHIM_NAMES),
    "torch.backends": ModuleSpec(None),
    "torch.backends.mps": ModuleSpec(None, shim_names=shim_names.MPS_SHIM_NAMES),
    "torch.backends.cudnn": ModuleSpec(None, shim_names=shim_names.CUDNN_SHIM_NAMES),
    "torch.amp": ModuleSpec(None, shim_names=shim_names.AMP_SHIM_NAMES),
    "torch.cuda.amp": ModuleSpec(None, shim_names=shim_names.CUDA_AMP_SHIM_NAMES),
    "torch.cpu": ModuleSpec(None),
    "torch.cpu.amp": ModuleSpec(None, shim_names=shim_names.CPU_AMP_SHIM_NAMES),
    "torch.utils.checkpoint": ModuleSpec("tinyattn.utils.checkpoint"),
    "torch.profiler": ModuleSpec("tinyattn.profiler", frozenset({"LegacyProfile", "EventList",
                                                                 "FunctionEventAvg"})),
    "torch.autograd.profiler": ModuleSpec(None, shim_names=shim_names.AUTOGRAD_PROFILER_SHIM_NAMES),
    "torch.backends.cuda": ModuleSpec(None, shim_names=shim_names.BACKENDS_CUDA_SHIM_NAMES),
    "torch.nn.attention": ModuleSpec(None, shim_names={"sdpa_kernel": kernels.sdpa_kernel,
                                                   "SDPBackend": kernels.SDPBackend}),
    "torch.quantization": ModuleSpec("tinyattn.quantization", _QUANTIZATION_HIDDEN),
    "torch.ao": ModuleSpec(None),
    "torch.ao.quantization": ModuleSpec("tinyattn.quantization", _QUANTIZATION_HIDDEN),
    # several processes (docs/distributed.md): torch.distributed on MPI, DDP, the sampler
    "torch.distributed": ModuleSpec("tinyattn.distributed"),
    "torch.nn.parallel": ModuleSpec("tinyattn.nn.parallel"),
    "torch.utils.data.distributed": ModuleSpec("tinyattn.utils.data.distributed"),
    "torch.multiprocessing": ModuleSpec("tinyattn.multiprocessing"),
    "torch.multiprocessing.reductions": ModuleSpec("tinyattn.multiprocessing.reductions",
                                                   frozenset({"sharing_by_proc_path",
                                                              "ProcPathFd"})),
}

# Packages built on real PyTorch: they cannot run on the shim, so importing one is refused.
ECOSYSTEM = frozenset({"torchvision", "torchaudio", "torchtext", "torchdata", "functorch",
                       "torchmetrics", "lightning", "pytorch_lightning", "triton"})
