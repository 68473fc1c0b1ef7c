"""``nn.utils.fuse_conv_bn_eval`` / ``fuse_linear_bn_eval`` and their ``*_weights`` forms, as
torch's: an eval-mode convolution (or linear layer) followed by an eval-mode batch norm is one
affine map, so the pair folds into one layer (inference speed, quantization recipes).

With s = gamma / sqrt(running_var + eps) per output channel:
W' = W * s (over the output-channel dim: dim 0, or dim 1 when ``transpose`` for a transposed
convolution), b' = (b - running_mean) * s + beta (b = 0 when the layer has no bias; gamma = 1,
beta = 0 when the norm has no affine parameters). The new parameters keep the layer's dtypes
and requires_grad (a bias made from nothing does not require grad, as torch's)."""
from __future__ import annotations

import copy
from typing import Optional, Tuple

from ...tensor import Tensor
from ..module import Module, Parameter

__all__ = ["fuse_conv_bn_eval", "fuse_conv_bn_weights", "fuse_linear_bn_eval",
           "fuse_linear_bn_weights"]


def fuse_conv_bn_weights(conv_w: Tensor, conv_b: Optional[Tensor], bn_rm: Tensor,
                         bn_rv: Tensor, bn_eps: float, bn_w: Optional[Tensor],
                         bn_b: Optional[Tensor], transpose: bool = False
                         ) -> Tuple[Parameter, Parameter]:
    weight_dtype = conv_w.dtype
    bias_dtype = conv_b.dtype if conv_b is not None else weight_dtype
    conv_b = bn_rm.new_zeros(bn_rm.shape) if conv_b is None else conv_b
    bn_w = bn_rm.new_ones(bn_rm.shape) if bn_w is None else bn_w
    bn_b = bn_rm.new_zeros(bn_rm.shape) if bn_b is None else bn_b
    rsqrt = (bn_rv + bn_eps).rsqrt()
    shape = ([1, -1] if transpose else [-1, 1]) + [1] * (conv_w.ndim - 2)
    fused_w = (conv_w * (bn_w * rsqrt).reshape(shape)).to(weight_dtype)
    fused_b = ((conv_b - bn_rm) * rsqrt * bn_w + bn_b).to(bias_dtype)
    return (Parameter(fused_w.detach(), conv_w.requires_grad),
            Parameter(fused_b.detach(), conv_b.requires_grad))


def fuse_conv_bn_eval(conv: Module, bn: Module, transpose: bool = False) -> Module:
    """A copy of ``conv`` that computes ``bn(conv(x))`` (both in eval mode)."""
    if conv.training or bn.training:
        raise AssertionError("Fusion only for eval!")
    fused = copy.deepcopy(conv)
    if bn.running_mean is None or bn.running_var is None:
        raise AssertionError("fuse_conv_bn_eval needs the batch norm's running statistics "
                             "(track_running_stats=True)")
    fused.weight, fused.bias = fuse_conv_bn_weights(fused.weight, fused.bias, bn.running_mean,
                                                    bn.running_var, bn.eps, bn.weight,
                                                    bn.bias, transpose)
    return fused


def fuse_linear_bn_weights(linear_w: Tensor, linear_b: Optional[Tensor], bn_rm: Tensor,
                           bn_rv: Tensor, bn_eps: float, bn_w: Tensor, bn_b: Tensor
                           ) -> Tuple[Parameter, Parameter]:
    linear_b = bn_rm.new_zeros(bn_rm.shape) if linear_b is None else linear_b
    scale = bn_w * (bn_rv + bn_eps).rsqrt()
    fused_w = linear_w * scale.unsqueeze(-1)
    fused_b = (linear_b - bn_rm) * scale + bn_b
    return (Parameter(fused_w.detach(), linear_w.requires_grad),
            Parameter(fused_b.detach(), linear_b.requires_grad))


def fuse_linear_bn_eval(linear: Module, bn: Module) -> Module:
    """A copy of ``linear`` that computes ``bn(linear(x))`` (both in eval mode)."""
    if linear.training or bn.training:
        raise AssertionError("Fusion only for eval!")
    if not (linear.out_features == bn.num_features or bn.num_features == 1):
        raise AssertionError("To fuse, linear.out_features must equal bn.num_features OR "
                             "bn.num_features must equal 1")
    if bn.running_mean is None or bn.running_var is None:
        raise AssertionError("fuse_linear_bn_eval needs the batch norm's running statistics")
    fused = copy.deepcopy(linear)
    fused.weight, fused.bias = fuse_linear_bn_weights(fused.weight, fused.bias,
                                                      bn.running_mean, bn.running_var,
                                                      bn.eps, bn.weight, bn.bias)
    return fused
