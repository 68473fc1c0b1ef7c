"""Pooling layers, as PyTorch's: ``MaxPool1d/2d/3d``, ``AvgPool1d/2d/3d``,
``AdaptiveAvgPool1d/2d/3d``, ``AdaptiveMaxPool1d/2d/3d``, ``LPPool1d/2d/3d``
(docs/nn.md#convolution-and-pooling). No parameters: each calls one
op of ops/pool.py, whose backward routes the gradient through the pooling windows."""
from __future__ import annotations

from typing import Any, Optional

from .. import functional as F
from ..ops.conv import as_tuple
from ..tensor import Tensor
from .module import Module

__all__ = ["MaxPool1d", "MaxPool2d", "MaxPool3d", "AvgPool1d", "AvgPool2d", "AvgPool3d",
           "AdaptiveAvgPool1d", "AdaptiveAvgPool2d", "AdaptiveAvgPool3d", "AdaptiveMaxPool1d",
           "AdaptiveMaxPool2d", "AdaptiveMaxPool3d", "LPPool1d", "LPPool2d", "LPPool3d",
           "MaxUnpool1d", "MaxUnpool2d", "MaxUnpool3d", "FractionalMaxPool2d",
           "FractionalMaxPool3d"]


class _MaxPoolNd(Module):
    _function: Any = None

    def __init__(self, kernel_size: Any, stride: Any = None, padding: Any = 0,
                 dilation: Any = 1, return_indices: bool = False, ceil_mode: bool = False):
        self.kernel_size = kernel_size
        self.stride = stride if stride is not None else kernel_size
        self.padding, self.dilation = padding, dilation
        self.return_indices, self.ceil_mode = return_indices, ceil_mode

    def forward(self, input: Tensor) -> Any:  # noqa: A002 - torch's name
        return type(self)._function(input, self.kernel_size, self.stride, self.padding,
                                    self.dilation, ceil_mode=self.ceil_mode,
                                    return_indices=self.return_indices)

    def extra_repr(self) -> str:
        return (f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}, "
                f"dilation={self.dilation}, ceil_mode={self.ceil_mode}")


class MaxPool1d(_MaxPoolNd):
    """(N, C, L) -> (N, C, L_out): the max of each window of kernel_size (stride defaults
    to kernel_size); ``return_indices=True`` also returns where each max was."""
    _function = staticmethod(F.max_pool1d)


class MaxPool2d(_MaxPoolNd):
    """(N, C, H, W) -> (N, C, H_out, W_out), H_out = floor((H + 2 padding - dilation
    (kernel_size - 1) - 1) / stride) + 1 (ceil with ceil_mode=True)."""
    _function = staticmethod(F.max_pool2d)


class MaxPool3d(_MaxPoolNd):
    """(N, C, D, H, W) -> (N, C, D_out, H_out, W_out): the max of each (kD, kH, kW) window."""
    _function = staticmethod(F.max_pool3d)


class AvgPool1d(Module):
    """(N, C, L) -> (N, C, L_out): the mean of each window."""

    def __init__(self, kernel_size: Any, stride: Any = None, padding: Any = 0,
                 ceil_mode: bool = False, count_include_pad: bool = True):
        self.kernel_size = as_tuple(kernel_size, 1, "kernel_size", "AvgPool1d")
        self.stride = as_tuple(stride if stride is not None else kernel_size, 1, "stride",
                               "AvgPool1d")
        self.padding = as_tuple(padding, 1, "padding", "AvgPool1d")
        self.ceil_mode, self.count_include_pad = ceil_mode, count_include_pad

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002 - torch's name
        return F.avg_pool1d(input, self.kernel_size, self.stride, self.padding, self.ceil_mode,
                            self.count_include_pad)

    def extra_repr(self) -> str:
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class AvgPool2d(Module):
    """(N, C, H, W) -> (N, C, H_out, W_out): the mean of each window (divided by
    divisor_override when given; padding counted unless count_include_pad=False)."""
    _function: Any = staticmethod(F.avg_pool2d)

    def __init__(self, kernel_size: Any, stride: Any = None, padding: Any = 0,
                 ceil_mode: bool = False, count_include_pad: bool = True,
                 divisor_override: Optional[int] = None):
        self.kernel_size = kernel_size
        self.stride = stride if stride is not None else kernel_size
        self.padding, self.ceil_mode = padding, ceil_mode
        self.count_include_pad, self.divisor_override = count_include_pad, divisor_override

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002 - torch's name
        return type(self)._function(input, self.kernel_size, self.stride, self.padding,
                                    self.ceil_mode, self.count_include_pad,
                                    self.divisor_override)

    def extra_repr(self) -> str:
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class AvgPool3d(AvgPool2d):
    """(N, C, D, H, W) -> (N, C, D_out, H_out, W_out): the mean of each window (float32,
    float64 and int64, as torch's CPU kernel)."""
    _function = staticmethod(F.avg_pool3d)


class _AdaptivePool(Module):
    _function: Any = None

    def __init__(self, output_size: Any):
        self.output_size = output_size

    def forward(self, input: Tensor) -> Any:  # noqa: A002 - torch's name
        return type(self)._function(input, self.output_size)

    def extra_repr(self) -> str:
        return f"output_size={self.output_size}"


class AdaptiveAvgPool1d(_AdaptivePool):
    """(N, C, L) -> (N, C, output_size): means over output_size near-equal bins."""
    _function = staticmethod(F.adaptive_avg_pool1d)


class AdaptiveAvgPool2d(_AdaptivePool):
    """(N, C, H, W) -> (N, C, *output_size); ``AdaptiveAvgPool2d(1)`` is global average
    pooling, the head of ResNet-style networks."""
    _function = staticmethod(F.adaptive_avg_pool2d)


class AdaptiveAvgPool3d(_AdaptivePool):
    """(N, C, D, H, W) -> (N, C, *output_size): means over near-equal boxes."""
    _function = staticmethod(F.adaptive_avg_pool3d)


class _AdaptiveMaxPool(_AdaptivePool):
    def __init__(self, output_size: Any, return_indices: bool = False):
        self.output_size, self.return_indices = output_size, return_indices

    def forward(self, input: Tensor) -> Any:  # noqa: A002 - torch's name
        return type(self)._function(input, self.output_size, self.return_indices)


class AdaptiveMaxPool1d(_AdaptiveMaxPool):
    """(N, C, L) -> (N, C, output_size): maxima over near-equal bins."""
    _function = staticmethod(F.adaptive_max_pool1d)


class AdaptiveMaxPool2d(_AdaptiveMaxPool):
    """(N, C, H, W) -> (N, C, *output_size): maxima over near-equal boxes."""
    _function = staticmethod(F.adaptive_max_pool2d)


class AdaptiveMaxPool3d(_AdaptiveMaxPool):
    """(N, C, D, H, W) -> (N, C, *output_size): maxima over near-equal boxes."""
    _function = staticmethod(F.adaptive_max_pool3d)


class _LPPoolNd(Module):
    _function: Any = None

    def __init__(self, norm_type: float, kernel_size: Any, stride: Any = None,
                 ceil_mode: bool = False) -> None:
        super().__init__()
        self.norm_type, self.kernel_size = norm_type, kernel_size
        self.stride, self.ceil_mode = stride, ceil_mode

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002 - torch's name
        return type(self)._function(input, float(self.norm_type), self.kernel_size,
                                    self.stride, self.ceil_mode)

    def extra_repr(self) -> str:
        return (f"norm_type={self.norm_type}, kernel_size={self.kernel_size}, "
                f"stride={self.stride}, ceil_mode={self.ceil_mode}")


class LPPool1d(_LPPoolNd):
    """(N, C, L) -> the p-norm (sum of x^p)^(1/p) of each window; p = inf is max pooling."""
    _function = staticmethod(F.lp_pool1d)


class LPPool2d(_LPPoolNd):
    """(N, C, H, W) -> the p-norm of each window."""
    _function = staticmethod(F.lp_pool2d)


class LPPool3d(_LPPoolNd):
    """(N, C, D, H, W) -> the p-norm of each window."""
    _function = staticmethod(F.lp_pool3d)


class _MaxUnpoolNd(Module):
    _function: Any = None
    _dims = 0

    def __init__(self, kernel_size: Any, stride: Any = None, padding: Any = 0) -> None:
        super().__init__()
        name = type(self).__name__
        self.kernel_size = as_tuple(kernel_size, self._dims, "kernel_size", name)
        self.stride = as_tuple(stride if stride is not None else kernel_size, self._dims,
                               "stride", name)
        self.padding = as_tuple(padding, self._dims, "padding", name)

    def forward(self, input: Tensor, indices: Tensor,  # noqa: A002 - torch's name
                output_size: Optional[Any] = None) -> Tensor:
        return type(self)._function(input, indices, self.kernel_size, self.stride,
                                    self.padding, output_size)

    def extra_repr(self) -> str:
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class MaxUnpool1d(_MaxUnpoolNd):
    """(N, C, L) and max_pool1d's indices -> (N, C, L_out): each value back at its index,
    zeros elsewhere; output_size picks among the sizes that pool to L."""
    _function = staticmethod(F.max_unpool1d)
    _dims = 1


class MaxUnpool2d(_MaxUnpoolNd):
    """(N, C, H, W) and max_pool2d's indices -> (N, C, H_out, W_out)."""
    _function = staticmethod(F.max_unpool2d)
    _dims = 2


class MaxUnpool3d(_MaxUnpoolNd):
    """(N, C, D, H, W) and max_pool3d's indices -> (N, C, D_out, H_out, W_out)."""
    _function = staticmethod(F.max_unpool3d)
    _dims = 3


class _FractionalMaxPoolNd(Module):
    """torch's FractionalMaxPool: ``_random_samples`` (when given) is a buffer, so the
    windows are the same at every call; otherwise they are drawn at each call."""
    _dims = 2

    def __init__(self, kernel_size: Any, output_size: Any = None, output_ratio: Any = None,
                 return_indices: bool = False, _random_samples: Optional[Tensor] = None):
        name, dims = type(self).__name__, self._dims
        self.kernel_size = as_tuple(kernel_size, dims, "kernel_size", name)
        self.return_indices = return_indices
        self.register_buffer("_random_samples", _random_samples)
        self.output_size = None if output_size is None else \
            as_tuple(output_size, dims, "output_size", name)
        self.output_ratio = None if output_ratio is None else (
            tuple(output_ratio) if isinstance(output_ratio, (tuple, list))
            else (output_ratio,) * dims)
        if output_size is None and output_ratio is None:
            raise ValueError(f"{name} requires specifying either an output size, or a "
                             f"pooling ratio")
        if output_size is not None and output_ratio is not None:
            raise ValueError("only one of output_size and output_ratio may be specified")
        if self.output_ratio is not None and not all(0 < r < 1 for r in self.output_ratio):
            raise ValueError(f"output_ratio must be between 0 and 1 (got {output_ratio})")

    def forward(self, input: Tensor) -> Any:  # noqa: A002 - torch's name
        function = F.fractional_max_pool2d if self._dims == 2 else F.fractional_max_pool3d
        return function(input, self.kernel_size, self.output_size, self.output_ratio,
                        self.return_indices, _random_samples=self._random_samples)


class FractionalMaxPool2d(_FractionalMaxPoolNd):
    """(N, C, H, W) -> (N, C, *output_size): the max of kernel_size windows at
    pseudo-random positions (ops/fractional_pool.py)."""
    _dims = 2


class FractionalMaxPool3d(_FractionalMaxPoolNd):
    """(N, C, T, H, W) -> (N, C, *output_size), as FractionalMaxPool2d."""
    _dims = 3
