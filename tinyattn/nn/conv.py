"""Convolution layers: ``Conv1d``, ``Conv2d``, ``Conv3d``, ``ConvTranspose1d/2d/3d``, ``Unfold``
and ``Fold``, as PyTorch's (docs/nn.md#convolution-and-pooling).

Each layer holds ``weight`` and ``bias`` under torch's names and shapes and calls one op of
ops/conv.py (im2col and one matrix product; the backward is derived there). Shapes:
    Conv{n}d:          weight (out_channels, in_channels / groups, *kernel_size)
    ConvTranspose{n}d: weight (in_channels, out_channels / groups, *kernel_size)
    bias (out_channels,) in both.
Initialisation, torch's: weight and bias ~ U(-1/sqrt(fan_in), 1/sqrt(fan_in)) with fan_in =
weight.shape[1] * prod(kernel_size) (kaiming_uniform_ with a = sqrt(5) gives that bound).
``padding_mode`` "reflect", "replicate" or "circular" pads with ``F.pad`` first, then runs the
convolution with no padding, as torch does.
"""
from __future__ import annotations

import math
from typing import Any, Optional, Sequence, Tuple

import numpy as np

from .. import functional as F
from ..ops.conv import as_tuple
from ..tensor import Tensor
from .layers import uniform_parameter
from .module import Module

__all__ = ["Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d", "ConvTranspose2d",
           "ConvTranspose3d", "Unfold", "Fold"]

_PADDING_MODES = ("zeros", "reflect", "replicate", "circular")


class _ConvNd(Module):
    """What Conv{n}d and ConvTranspose{n}d share: checks, parameters, init and printout."""

    _dims = 0
    _transposed = False

    def __init__(self, in_channels: int, out_channels: int, kernel_size: Any, stride: Any,
                 padding: Any, dilation: Any, groups: int, bias: bool, padding_mode: str,
                 output_padding: Any = 0, device: Optional[str] = None, dtype: Any = None):
        name, dims = type(self).__name__, self._dims
        for arg, value in (("in_channels", in_channels), ("out_channels", out_channels)):
            if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 0:
                raise ValueError(f"{name}: {arg} must be a non-negative integer, got {value!r}")
        if isinstance(groups, bool) or not isinstance(groups, (int, np.integer)) or groups <= 0:
            raise ValueError("groups must be a positive integer")
        if in_channels % groups:
            raise ValueError("in_channels must be divisible by groups")
        if out_channels % groups:
            raise ValueError("out_channels must be divisible by groups")
        if padding_mode not in _PADDING_MODES:
            raise ValueError(f"padding_mode must be one of {list(_PADDING_MODES)}, but got "
                             f"padding_mode='{padding_mode}'")
        self.in_channels, self.out_channels = int(in_channels), int(out_channels)
        self.kernel_size = as_tuple(kernel_size, dims, "kernel_size", name)
        self.stride = as_tuple(stride, dims, "stride", name)
        self.dilation = as_tuple(dilation, dims, "dilation", name)
        if isinstance(padding, str):
            if padding not in ("same", "valid"):
                raise ValueError(f"Invalid padding string {padding!r}, should be one of "
                                 f"{{'valid', 'same'}}")
            if padding == "same" and any(s != 1 for s in self.stride):
                raise ValueError("padding='same' is not supported for strided convolutions")
            self.padding = padding
        else:
            self.padding = as_tuple(padding, dims, "padding", name)
        self.output_padding = as_tuple(output_padding, dims, "output_padding", name)
        self.groups, self.padding_mode, self.transposed = int(groups), padding_mode, \
            self._transposed
        self._reversed_padding_repeated_twice = self._pad_amounts()
        if self._transposed:
            shape = (in_channels, out_channels // groups) + self.kernel_size
        else:
            shape = (out_channels, in_channels // groups) + self.kernel_size
        fan_in = shape[1] * math.prod(self.kernel_size)
        bound = 1.0 / math.sqrt(fan_in) if fan_in > 0 else 0.0
        self.weight = uniform_parameter(shape, bound)
        self.bias = uniform_parameter((out_channels,), bound) if bias else None
        if device is not None or dtype is not None:
            self.to(device=device, dtype=dtype)

    def _pad_amounts(self) -> Tuple[int, ...]:
        """F.pad's amounts (last dim first) for the non-zeros padding modes."""
        amounts = []
        for i in reversed(range(self._dims)):
            if self.padding == "valid":
                amounts += [0, 0]
            elif self.padding == "same":
                total = self.dilation[i] * (self.kernel_size[i] - 1)
                amounts += [total // 2, total - total // 2]
            else:
                amounts += [self.padding[i], self.padding[i]]
        return tuple(amounts)

    def extra_repr(self) -> str:
        s = (f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, "
             f"stride={self.stride}")
        if self.padding != (0,) * len(self.padding):
            s += f", padding={self.padding}"
        if self.dilation != (1,) * self._dims:
            s += f", dilation={self.dilation}"
        if self.output_padding != (0,) * self._dims:
            s += f", output_padding={self.output_padding}"
        if self.groups != 1:
            s += f", groups={self.groups}"
        if self.bias is None:
            s += ", bias=False"
        if self.padding_mode != "zeros":
            s += f", padding_mode={self.padding_mode}"
        return s


class _Conv(_ConvNd):
    _function: Any = None

    def __init__(self, in_channels: int, out_channels: int, kernel_size: Any, stride: Any = 1,
                 padding: Any = 0, dilation: Any = 1, groups: int = 1, bias: bool = True,
                 padding_mode: str = "zeros", device: Optional[str] = None, dtype: Any = None):
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation,
                         groups, bias, padding_mode, 0, device, dtype)

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002 - torch's name
        return self._conv_forward(input, self.weight, self.bias)

    def _conv_forward(self, input: Tensor, weight: Tensor,  # noqa: A002
                      bias: Optional[Tensor]) -> Tensor:
        conv = type(self)._function
        if self.padding_mode != "zeros":
            padded = F.pad(input, self._reversed_padding_repeated_twice,
                           mode=self.padding_mode)
            return conv(padded, weight, bias, self.stride, 0, self.dilation, self.groups)
        return conv(input, weight, bias, self.stride, self.padding, self.dilation, self.groups)


class Conv1d(_Conv):
    """(N, C_in, L) or (C_in, L) -> (N, C_out, L_out),
    L_out = floor((L + 2 padding - dilation (kernel_size - 1) - 1) / stride) + 1."""
    _dims, _function = 1, staticmethod(F.conv1d)


class Conv2d(_Conv):
    """(N, C_in, H, W) or (C_in, H, W) -> (N, C_out, H_out, W_out), each spatial size as
    Conv1d's L_out. ``padding="same"`` keeps H and W (stride 1 only)."""
    _dims, _function = 2, staticmethod(F.conv2d)


class Conv3d(_Conv):
    """(N, C_in, D, H, W) -> (N, C_out, D_out, H_out, W_out)."""
    _dims, _function = 3, staticmethod(F.conv3d)


class _ConvTranspose(_ConvNd):
    _function: Any = None
    _transposed = True

    def __init__(self, in_channels: int, out_channels: int, kernel_size: Any, stride: Any = 1,
                 padding: Any = 0, output_padding: Any = 0, groups: int = 1, bias: bool = True,
                 dilation: Any = 1, padding_mode: str = "zeros", device: Optional[str] = None,
                 dtype: Any = None):
        if padding_mode != "zeros":
            raise ValueError(f'Only "zeros" padding mode is supported for '
                             f'{type(self).__name__}')
        if isinstance(padding, str):
            raise ValueError(f"{type(self).__name__}: padding must be an int or a tuple of "
                             f"ints, got {padding!r} ('same' and 'valid' are for Conv)")
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation,
                         groups, bias, padding_mode, output_padding, device, dtype)

    def forward(self, input: Tensor,  # noqa: A002 - torch's name
                output_size: Optional[Sequence[int]] = None) -> Tensor:
        extra = self._output_padding(input, output_size)
        return type(self)._function(input, self.weight, self.bias, self.stride, self.padding,
                                    extra, self.groups, self.dilation)

    def _output_padding(self, input: Tensor,  # noqa: A002
                        output_size: Optional[Sequence[int]]) -> Tuple[int, ...]:
        """torch's rule: output_size (the last dims, or with N and C) picks output_padding
        within [0, stride) so that the output has exactly that size."""
        if output_size is None:
            return self.output_padding
        dims = self._dims
        sizes = list(output_size.tolist() if isinstance(output_size, Tensor) else output_size)
        if len(sizes) == dims + 2 or (len(sizes) == dims + 1 and input.ndim == dims + 1):
            sizes = sizes[-dims:]
        if len(sizes) != dims:
            raise ValueError(f"ConvTranspose{dims}D: for {input.ndim}D input, output_size "
                             f"must have {dims} or {dims + 2} elements (got {len(sizes)})")
        extra = []
        for i in range(dims):
            n = input.shape[input.ndim - dims + i]
            least = ((n - 1) * self.stride[i] - 2 * self.padding[i]
                     + self.dilation[i] * (self.kernel_size[i] - 1) + 1)
            if not least <= sizes[i] <= least + self.stride[i] - 1:
                raise ValueError(f"requested an output size of {sizes}, but valid sizes range "
                                 f"from {least} to {least + self.stride[i] - 1} (for an input "
                                 f"of {list(input.shape[2:])})")
            extra.append(sizes[i] - least)
        return tuple(extra)


class ConvTranspose1d(_ConvTranspose):
    """(N, C_in, L) -> (N, C_out, L_out), L_out = (L - 1) stride - 2 padding
    + dilation (kernel_size - 1) + output_padding + 1: the gradient of Conv1d w.r.t. its
    input, run forward (a learned upsampling)."""
    _dims, _function = 1, staticmethod(F.conv_transpose1d)


class ConvTranspose2d(_ConvTranspose):
    """(N, C_in, H, W) -> (N, C_out, H_out, W_out), each size as ConvTranspose1d's L_out."""
    _dims, _function = 2, staticmethod(F.conv_transpose2d)


class ConvTranspose3d(_ConvTranspose):
    """(N, C_in, D, H, W) -> (N, C_out, D_out, H_out, W_out)."""
    _dims, _function = 3, staticmethod(F.conv_transpose3d)


class Unfold(Module):
    """``F.unfold`` as a layer: (N, C, H, W) -> (N, C * prod(kernel_size), L)."""

    def __init__(self, kernel_size: Any, dilation: Any = 1, padding: Any = 0, stride: Any = 1):
        self.kernel_size, self.dilation = kernel_size, dilation
        self.padding, self.stride = padding, stride

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002 - torch's name
        return F.unfold(input, self.kernel_size, self.dilation, self.padding, self.stride)

    def extra_repr(self) -> str:
        return (f"kernel_size={self.kernel_size}, dilation={self.dilation}, "
                f"padding={self.padding}, stride={self.stride}")


class Fold(Module):
    """``F.fold`` as a layer: (N, C * prod(kernel_size), L) -> (N, C, *output_size)."""

    def __init__(self, output_size: Any, kernel_size: Any, dilation: Any = 1, padding: Any = 0,
                 stride: Any = 1):
        self.output_size, self.kernel_size = output_size, kernel_size
        self.dilation, self.padding, self.stride = dilation, padding, stride

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002 - torch's name
        return F.fold(input, self.output_size, self.kernel_size, self.dilation, self.padding,
                      self.stride)

    def extra_repr(self) -> str:
        return (f"output_size={self.output_size}, kernel_size={self.kernel_size}, "
                f"dilation={self.dilation}, padding={self.padding}, stride={self.stride}")
