"""torch's top-level names that are second names or thin wrappers of ops tinyattn has.

Three kinds, each exactly as torch defines it:

- aliases torch keeps for NumPy's and the array API's spelling: ``torch.multiply`` is
  ``torch.mul``, ``torch.concatenate`` is ``torch.cat``, ``torch.moveaxis`` is
  ``torch.movedim``, ``torch.arctan2`` is ``torch.atan2``;
- the nn.functional ops torch also puts at the top level with the same arguments
  (``torch.conv2d``, ``torch.layer_norm``, ``torch.pixel_shuffle``);
- the top-level ones whose arguments differ from nn.functional's, wrapped to torch's order:
  ``torch.embedding(weight, indices)`` (F.embedding takes indices first),
  ``torch.batch_norm(input, weight, bias, running_mean, running_var, training, momentum, eps,
  cudnn_enabled)``, ``torch.dropout(input, p, train)``;
- and a few questions about a tensor (``torch.is_floating_point(x)``, ``torch.numel(x)``).

The loss functions torch exposes at the top level take an integer ``reduction`` enum there;
they are not here (use nn.functional's, which take torch's strings).
"""
from __future__ import annotations

from typing import Any, Optional

from . import functional as F
from . import ops
from .tensor import Tensor

# torch name -> tinyattn top-level (ops) name
ALIASES = {
    "absolute": "abs", "arccos": "acos", "arcsin": "asin", "arctan": "atan",
    "arctan2": "atan2", "multiply": "mul", "divide": "div", "subtract": "sub",
    "greater": "gt", "greater_equal": "ge", "less": "lt", "less_equal": "le",
    "not_equal": "ne", "negative": "neg", "fix": "trunc",
    "moveaxis": "movedim", "ger": "outer",
}

# nn.functional ops torch also has at the top level, with the same arguments
SAME_AS_FUNCTIONAL = (
    "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d",
    "pixel_shuffle", "pixel_unshuffle", "channel_shuffle", "cosine_similarity",
    "pairwise_distance", "selu", "celu", "threshold", "hardshrink", "rrelu", "prelu",
    "rms_norm", "max_pool1d", "max_pool2d", "max_pool3d", "avg_pool1d", "adaptive_avg_pool1d",
)


def concatenate(tensors: Any, axis: int = 0, *, dim: Optional[int] = None,
                out: Optional[Tensor] = None) -> Tensor:
    """``torch.concatenate(tensors, axis=0)``: ``torch.cat`` under NumPy's names (torch's
    parser takes ``dim=`` too)."""
    axis = axis if dim is None else dim
    return ops.cat(tensors, axis, out=out) if out is not None else ops.cat(tensors, axis)


def swapaxes(input: Tensor, axis0: int, axis1: int) -> Tensor:  # noqa: A002
    """``torch.swapaxes(input, axis0, axis1)``: ``torch.transpose`` under NumPy's names."""
    return ops.transpose(input, axis0, axis1)


def matrix_exp(input: Tensor) -> Tensor:  # noqa: A002
    """``torch.matrix_exp(input)``: ``torch.linalg.matrix_exp`` (ops/linalg_solvers.py)."""
    return ops.matrix_exp(input)


def layer_norm(input: Tensor, normalized_shape: Any, weight: Optional[Tensor] = None,  # noqa: A002
               bias: Optional[Tensor] = None, eps: float = 1e-5,
               cudnn_enable: bool = True, *, cudnn_enabled: bool = True) -> Tensor:
    """``torch.layer_norm``: F.layer_norm (cudnn_enable, or the overrides table's
    cudnn_enabled, is accepted and changes nothing)."""
    return F.layer_norm(input, normalized_shape, weight, bias, eps)


def group_norm(input: Tensor, num_groups: int, weight: Optional[Tensor] = None,  # noqa: A002
               bias: Optional[Tensor] = None, eps: float = 1e-5,
               cudnn_enabled: bool = True) -> Tensor:
    """``torch.group_norm``: F.group_norm (cudnn_enabled is accepted and changes nothing)."""
    return F.group_norm(input, num_groups, weight, bias, eps)


def batch_norm(input: Tensor, weight: Optional[Tensor], bias: Optional[Tensor],  # noqa: A002
               running_mean: Optional[Tensor], running_var: Optional[Tensor], training: bool,
               momentum: float, eps: float, cudnn_enabled: bool) -> Tensor:
    """``torch.batch_norm``: F.batch_norm with torch's top-level argument order (weight and
    bias before the running statistics; every argument required)."""
    return F.batch_norm(input, running_mean, running_var, weight, bias, training, momentum,
                        eps)


def embedding(weight: Tensor, input: Tensor, padding_idx: int = -1,  # noqa: A002
              scale_grad_by_freq: bool = False, sparse: bool = False,
              max_norm: Optional[float] = None, norm_type: float = 2.0) -> Tensor:
    """``torch.embedding(weight, input)``: the table first (F.embedding takes the indices
    first); padding_idx -1 means none, as in torch's top-level op."""
    return F.embedding(input, weight, padding_idx=None if padding_idx == -1 else padding_idx,
                       max_norm=max_norm, norm_type=norm_type,
                       scale_grad_by_freq=scale_grad_by_freq, sparse=sparse)


def dropout(input: Tensor, p: float, train: bool) -> Tensor:  # noqa: A002
    """``torch.dropout(input, p, train)``: F.dropout with ``train`` required."""
    return F.dropout(input, p, training=train)


def is_floating_point(input: Tensor) -> bool:  # noqa: A002
    return input.is_floating_point()


def is_complex(input: Tensor) -> bool:  # noqa: A002
    return input.is_complex()


def is_nonzero(input: Tensor) -> bool:  # noqa: A002
    return input.is_nonzero()


def is_signed(input: Tensor) -> bool:  # noqa: A002
    return input.is_signed()


def is_same_size(input: Tensor, other: Tensor) -> bool:  # noqa: A002
    return input.is_same_size(other)


def t(input: Tensor) -> Tensor:  # noqa: A002
    return input.t()


def detach(input: Tensor) -> Tensor:  # noqa: A002
    return input.detach()


def constant_pad_nd(input: Tensor, pad: Any, value: float = 0) -> Tensor:  # noqa: A002
    """``torch.constant_pad_nd(input, pad, value=0)``: ``F.pad(input, pad, "constant",
    value)`` (pads from the last dim backward; negative pads crop)."""
    return F.pad(input, pad, "constant", value)


def names() -> dict:
    """Every name above, as the package namespace adds them."""
    table = {alias: getattr(ops, name) for alias, name in ALIASES.items()}
    table.update({name: getattr(F, name) for name in SAME_AS_FUNCTIONAL})
    table.update({f.__name__: f for f in (layer_norm, group_norm, batch_norm, embedding,
                                          dropout, is_floating_point, is_complex, is_nonzero,
                                          is_signed, is_same_size, t, detach, concatenate,
                                          swapaxes, matrix_exp, constant_pad_nd)})
    return table
