"""``torch.normal``: normal samples with given means and standard deviations, in PyTorch's
four forms (docs/derivations.md#normal-samples):

    normal(mean_tensor, std_tensor)   normal(mean_tensor, std=1.0)
    normal(mean, std_tensor)          normal(mean, std, size)   (two numbers need a size)
"""
from __future__ import annotations

from typing import Any

import numpy as np

from .. import backend, factories, precision
from ..autograd import Function, name_node
from ..tensor import Tensor, normalize_dtype
from ..tensor.layout import check_layout, check_pin_memory
from ..precision import is_floating

__all__ = ["normal"]


class NormalSample(Function):
    """out = mean + std * eps, eps ~ N(0, 1) drawn in forward. PyTorch treats the draw as a
    sample, not a function of its parameters: the gradient it gives mean and std is 0, and so
    does this backward (write mean + std * torch.randn_like(std) for the reparameterised
    gradient, dmean = g and dstd = g * eps)."""

    def forward(self, mean, std, eps):
        self.save_for_backward(mean.shape, std.shape)
        return (mean + std * eps).astype(eps.dtype, copy=False)

    def backward(self, grad):
        mean_shape, std_shape = self.saved
        xp = backend.get_array_module(grad)
        return xp.zeros(mean_shape, dtype=grad.dtype), xp.zeros(std_shape, dtype=grad.dtype)


def _check_std(std: Any) -> None:
    low = float(backend.to_host(std._data).min()) if isinstance(std, Tensor) and std.numel() \
        else (std if not isinstance(std, Tensor) else 0.0)
    if low < 0:
        raise ValueError(f"normal expects std >= 0.0, but found std {low:g}")


def normal(mean: Any, std: Any = 1.0, size: Any = None, *, generator: Any = None,
           dtype: Any = None, device: Any = None, requires_grad: bool = False,
           layout: Any = None, pin_memory: bool = False) -> Tensor:
    """Samples of N(mean, std^2), elementwise; tensor means and stds broadcast. With two
    numbers, ``size`` gives the shape (float32 unless ``dtype`` says otherwise) and
    ``layout=``/``pin_memory=`` are a factory's (tensor/layout.py); torch takes them only
    there, so with a tensor mean or std they are its TypeError."""
    if not isinstance(mean, Tensor) and not isinstance(std, Tensor):
        check_layout(layout, "normal")
        check_pin_memory(pin_memory, "normal")
        if size is None:
            raise TypeError("normal(mean, std) with two numbers needs a size: "
                            "torch.normal(0.0, 1.0, size=(2, 3))")
        _check_std(std)
        eps = factories.randn(size, generator=generator, dtype=dtype, device=device)
        data = float(mean) + float(std) * eps._data
        return Tensor._wrap(data.astype(eps.dtype, copy=False), requires_grad)
    if size is not None:
        raise TypeError("normal: size is only for two numbers; with a tensor mean or std the "
                        "shape is theirs")
    if layout is not None or pin_memory:
        raise TypeError("normal(): layout= and pin_memory= are only for two numbers (mean "
                        "and std floats with a size); with a tensor mean or std leave them "
                        "out")
    for value in (mean, std):
        if isinstance(value, Tensor) and value.dtype.kind == "c":
            raise TypeError(f"normal: complex tensors ({value.dtype}) are not supported by "
                            f"this op in tinyattn (torch samples complex normals; here, "
                            f"draw the real and imaginary parts and use torch.complex)")
    like = mean if isinstance(mean, Tensor) else std
    want = normalize_dtype(dtype) or (like.dtype if is_floating(like.dtype)
                                     else precision.get_default_dtype())
    xp = backend.get_array_module(like._data)
    tensors = [m if isinstance(m, Tensor) else Tensor._wrap(xp.asarray(m, dtype=want))
               for m in (mean, std)]
    tensors = [t if t.dtype == want else t.to(want) for t in tensors]
    _check_std(tensors[1])
    try:
        shape = np.broadcast_shapes(tensors[0].shape, tensors[1].shape)
    except ValueError:
        raise RuntimeError(f"normal: the shapes of mean {tensors[0].shape} and std "
                           f"{tensors[1].shape} do not broadcast") from None
    eps = factories.randn(shape, generator=generator, dtype=want, device=like.device)
    # torch's overloads: normal(Tensor, float) 1, (float, Tensor) 2, (Tensor, Tensor) 3
    given = (isinstance(mean, Tensor), isinstance(std, Tensor))
    node = {(True, False): "NormalBackward1", (False, True): "NormalBackward2"}.get(
        given, "NormalBackward3")
    return name_node(NormalSample.apply(tensors[0], tensors[1], eps=eps._data), node)
