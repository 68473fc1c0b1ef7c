"""``nn.LazyConv1d/2d/3d`` and ``nn.LazyConvTranspose1d/2d/3d``: convolutions whose
in_channels is read from the first input (dim 1, or dim 0 of an unbatched input), as
PyTorch's (on the machinery of nn/lazy.py). Until then ``in_channels`` is 0 and the weight
and bias are ``UninitializedParameter``s; the first forward builds the layer as the
ordinary class would (same initialisation) and the module becomes that class."""
from __future__ import annotations

from typing import Any, Dict

from .. import backend
from ..tensor import Tensor
from .conv import Conv1d, Conv2d, Conv3d, ConvTranspose1d, ConvTranspose2d, ConvTranspose3d
from .lazy import UninitializedParameter, _fill, _LazyModule, _Uninitialized

__all__ = ["LazyConv1d", "LazyConv2d", "LazyConv3d", "LazyConvTranspose1d",
           "LazyConvTranspose2d", "LazyConvTranspose3d"]


_POSITIONAL = {False: ("stride", "padding", "dilation", "groups", "bias", "padding_mode",
                       "device", "dtype"),
               True: ("stride", "padding", "output_padding", "groups", "bias", "dilation",
                      "padding_mode", "device", "dtype")}


class _LazyConv(_LazyModule):
    def __init__(self, out_channels: int, kernel_size: Any, *args: Any, **options: Any
                 ) -> None:
        # torch's positional order after kernel_size: nn.LazyConv2d(96, 11, 4, 1) is
        # stride 4, padding 1 (d2l's NiN block); a transposed one has output_padding third
        names = _POSITIONAL[self.cls_to_become._transposed]
        if len(args) > len(names):
            raise TypeError(f"{type(self).__name__}() takes at most {len(names) + 2} "
                            f"positional arguments but {len(args) + 2} were given")
        for name, value in zip(names, args):
            if name in options:
                raise TypeError(f"{type(self).__name__}() got multiple values for argument "
                                f"{name!r}")
            options[name] = value
        self._options: Dict[str, Any] = dict(options, out_channels=out_channels,
                                             kernel_size=kernel_size)
        groups = options.get("groups", 1)
        dtype = options.get("dtype")
        # The template only lends its settings (stride, padding, ...); building it draws its
        # weights, which torch's lazy constructor does not: the draws are given back, so the
        # random stream after construction is torch's (d2l's LeNet of lazy layers).
        generator = backend.default_generator("cpu")
        drawn_from = generator.bit_generator.state
        try:
            template = self.cls_to_become(groups, out_channels, kernel_size, **{
                k: v for k, v in options.items() if k not in ("device", "dtype")})
        finally:
            generator.bit_generator.state = drawn_from
        for name, value in vars(template).items():
            if name not in ("weight", "bias", "_parameters", "_buffers", "_modules"):
                setattr(self, name, value)
        self.in_channels = 0
        self._device, self._dtype = options.get("device"), dtype
        self.weight = UninitializedParameter(dtype=dtype)
        self.bias = UninitializedParameter(dtype=dtype) if options.get("bias", True) else None

    def initialize_parameters(self, x: Tensor) -> None:
        dims = self.cls_to_become._dims
        if x.ndim not in (dims + 1, dims + 2):
            raise ValueError(f"{type(self).__name__}: expected a {dims + 1}D (unbatched) or "
                             f"{dims + 2}D input, got shape {x.shape}")
        in_channels = x.shape[0] if x.ndim == dims + 1 else x.shape[1]
        options = dict(self._options, dtype=self._dtype or x.dtype, device=self._device)
        made = self.cls_to_become(in_channels, options.pop("out_channels"),
                                  options.pop("kernel_size"), **options)
        self.in_channels = in_channels
        _fill(self.weight, made.weight)
        if self.bias is not None:
            _fill(self.bias, made.bias)

    def _infer_sizes(self) -> None:
        if not isinstance(self.weight, _Uninitialized):
            shape = self.weight.shape
            groups = self._options.get("groups", 1)
            self.in_channels = shape[0] if self.cls_to_become._transposed else shape[1] * groups

    def forward(self, *args: Any, **kwargs: Any) -> Tensor:
        return self.cls_to_become.forward(self, *args, **kwargs)

    def extra_repr(self) -> str:
        return self.cls_to_become.extra_repr(self)


def _lazy(cls: type, conv: type, doc: str) -> type:
    return type(cls, (_LazyConv,), {"cls_to_become": conv, "__doc__": doc,
                                     "__module__": __name__, "_dims": conv._dims,
                                     "_transposed": conv._transposed,
                                     "_function": conv._function})


LazyConv1d = _lazy("LazyConv1d", Conv1d, "``Conv1d`` with in_channels from the first input.")
LazyConv2d = _lazy("LazyConv2d", Conv2d, "``Conv2d`` with in_channels from the first input.")
LazyConv3d = _lazy("LazyConv3d", Conv3d, "``Conv3d`` with in_channels from the first input.")
LazyConvTranspose1d = _lazy("LazyConvTranspose1d", ConvTranspose1d,
                            "``ConvTranspose1d`` with in_channels from the first input.")
LazyConvTranspose2d = _lazy("LazyConvTranspose2d", ConvTranspose2d,
                            "``ConvTranspose2d`` with in_channels from the first input.")
LazyConvTranspose3d = _lazy("LazyConvTranspose3d", ConvTranspose3d,
                            "``ConvTranspose3d`` with in_channels from the first input.")
