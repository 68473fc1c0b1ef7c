"""Dynamic int8 quantization of ``nn.Linear`` (``torch.ao.quantization.quantize_dynamic``;
docs/precision_memory_time.md#dynamic-quantization).

A float x is stored as an integer q with a scale s and a zero point z: x ~ s (q - z).

- Weights, once, per tensor and symmetric (torch's default dynamic scheme, qint8):
  s_w = max|W| / 127.5 (the range [-max|W|, max|W|] spread over the 255 steps of
  [-128, 127]), z_w = 0, q_w = clamp(round(W / s_w), -128, 127).
- Activations, at every call, affine over the range observed in that call, widened to hold 0
  (so that 0, a padding or a ReLU's output, is exact): with [lo, hi] = [min(x, 0), max(x, 0)]
  and [0, Q] the integer range, s_x = (hi - lo) / Q and z_x = round(-lo / s_x), clamped to
  [0, Q] (the zero point closer in error, as fbgemm picks it). Q = 127 on x86 (torch's
  ``reduce_range``: fbgemm's int8 products are summed in pairs into int16 first, and 7-bit
  activations keep those pair sums from overflowing), 255 elsewhere.
  A scale below 6.1e-5 (an input of about 1e-4 and smaller) is raised to 6.1e-5 and the
  range widened to match, as torch's ChooseQuantizationParams does.
- The product, in integers: acc = sum_k (q_x - z_x) q_w, exact in int32, then
  y = s_x s_w acc + b in float32 (the bias stays float).
- An inf or NaN in the input: the range is taken over the finite values, and the non-finite
  ones multiply the (dequantized) weights in float, so an inf gives an infinite output and a
  NaN a NaN, in the rows that hold them. (torch gives inf there too, but its integer path
  makes every row of that call non-finite and ignores NaN: neither is a value to copy.)
Nothing here records a graph: quantized layers are for inference, as torch's.
"""
from __future__ import annotations

import copy
import platform
from typing import Any, Dict, Iterable, Optional, Set, Tuple

import numpy as np

from ..backend import to_device, to_host
from ..nn import Linear, Module, MultiheadAttention
from ..tensor import Tensor, as_tensor

__all__ = ["quantize_dynamic", "DynamicQuantizedLinear", "choose_qparams",
           "quantize_weight", "qint8", "quint8", "default_reduce_range"]

qint8, quint8 = "qint8", "quint8"
_FLOAT32_EPS = float(np.finfo(np.float32).eps)
_SMALL_SCALE = float(np.float32(6.1e-5))    # torch's SMALL_SCALE_THRESHOLD (QuantUtils.h)


def default_reduce_range() -> bool:
    """torch's x86 (fbgemm) engine quantizes activations to 7 bits; others (ARM's qnnpack)
    to 8."""
    return platform.machine().lower() in ("x86_64", "amd64", "i386", "i686")


def quantize_weight(weight: np.ndarray) -> Tuple[np.ndarray, float]:
    """W (out, in) float -> (q_w int8, s_w): per tensor, symmetric, zero point 0."""
    largest = float(max(-weight.min(initial=0.0), weight.max(initial=0.0)))
    scale = max(largest / ((127 - (-128)) / 2), _FLOAT32_EPS)
    inverse = np.float32(1.0) / np.float32(scale)
    q = np.clip(np.rint(weight.astype(np.float32) * inverse), -128, 127).astype(np.int8)
    return q, float(np.float32(scale))


def choose_qparams(low: float, high: float, reduce_range: bool) -> Tuple[float, int]:
    """(scale, zero_point) of an activation observed in [low, high], unsigned 8 or 7 bits."""
    q_min, q_max = 0, 127 if reduce_range else 255
    low, high = float(np.float32(min(low, 0.0))), float(np.float32(max(high, 0.0)))
    scale = (high - low) / (q_max - q_min)
    with np.errstate(divide="ignore", over="ignore"):
        if float(np.float32(scale)) == 0.0 or np.isinf(np.float32(1.0) / np.float32(scale)):
            scale = 0.1
    if scale < _SMALL_SCALE:           # torch cuts small scales off, widening the range
        scale, amplifier = _SMALL_SCALE, _SMALL_SCALE / scale
        if low == 0.0:
            high = _SMALL_SCALE * (q_max - q_min)
        elif high == 0.0:
            low = -_SMALL_SCALE * (q_max - q_min)
        else:
            low, high = low * amplifier, high * amplifier
    scale = float(np.float32(scale))
    from_low, from_high = q_min - low / scale, q_max - high / scale
    low_error, high_error = abs(q_min) - abs(low / scale), abs(q_max) - abs(high / scale)
    zero_point = from_low if low_error < high_error else from_high
    return scale, int(np.clip(np.rint(np.float32(zero_point)), q_min, q_max))


class DynamicQuantizedLinear(Module):
    """``nn.Linear`` with int8 weights; the input is quantized at each call (module doc).

    x (..., in_features) float32 -> y (..., out_features) float32. Buffers: ``weight``
    (out, in) int8, ``scale`` (s_w), ``zero_point`` (0), ``bias`` float32 (or None)."""

    def __init__(self, in_features: int, out_features: int, bias: bool = True,
                 dtype: str = qint8, reduce_range: Optional[bool] = None) -> None:
        if dtype != qint8:
            raise ValueError(f"DynamicQuantizedLinear: dtype must be qint8, got {dtype!r} "
                             f"(float16 dynamic quantization is not provided)")
        self.in_features, self.out_features = in_features, out_features
        self.reduce_range = default_reduce_range() if reduce_range is None else reduce_range
        self.register_buffer("weight", Tensor._wrap(np.zeros((out_features, in_features),
                                                             np.int8)))
        self.register_buffer("scale", Tensor._wrap(np.array(1.0, np.float64)))
        self.register_buffer("zero_point", Tensor._wrap(np.array(0, np.int64)))
        self.register_buffer("bias", Tensor._wrap(np.zeros(out_features, np.float32))
                             if bias else None)

    @classmethod
    def from_float(cls, linear: Linear, reduce_range: Optional[bool] = None
                   ) -> "DynamicQuantizedLinear":
        out_features, in_features = linear.weight.shape
        layer = cls(in_features, out_features, linear.bias is not None,
                    reduce_range=reduce_range)
        q, scale = quantize_weight(to_host(linear.weight._data))
        layer.weight = Tensor._wrap(q)
        layer.scale = Tensor._wrap(np.array(scale, np.float64))
        if linear.bias is not None:
            layer.bias = Tensor._wrap(to_host(linear.bias._data).astype(np.float32))
        return layer

    def dequantized_weight(self) -> np.ndarray:
        """s_w q_w: the float weights this layer multiplies by, in effect."""
        return self.weight._data.astype(np.float32) * np.float32(self.scale.item())

    def forward(self, x: Any) -> Tensor:
        x = as_tensor(x)
        data = to_host(x._data)
        if data.dtype != np.float32:
            raise TypeError(f"DynamicQuantizedLinear: expected a float32 input, got "
                            f"{data.dtype}; convert it with .float()")
        if data.shape[-1] != self.in_features:
            raise ValueError(f"DynamicQuantizedLinear: the input's last dimension is "
                             f"{data.shape[-1]}, but in_features={self.in_features}")
        # NumPy on the host (a GPU's input comes back to its device): the int32 sum is the
        # point here, not speed
        return Tensor._wrap(to_device(self._compute(data), x.device))

    def _compute(self, data: np.ndarray) -> np.ndarray:
        finite = np.isfinite(data)
        observed = data if finite.all() else np.where(finite, data, 0).astype(np.float32)
        scale, zero_point = choose_qparams(float(observed.min(initial=0.0)),
                                           float(observed.max(initial=0.0)), self.reduce_range)
        q_max = 127 if self.reduce_range else 255
        inverse = np.float32(1.0) / np.float32(scale)
        q_x = np.clip(np.rint(observed * inverse) + zero_point, 0, q_max).astype(np.int32)
        q_w = to_host(self.weight._data).astype(np.int32)
        acc = np.matmul(q_x - zero_point, q_w.T)           # (..., in) @ (in, out), int32
        out = acc.astype(np.float32) * np.float32(scale * self.scale.item())
        if not finite.all():          # inf / NaN inputs: their products, in float, as float
            with np.errstate(invalid="ignore", over="ignore"):
                out += np.matmul(np.where(finite, 0, data), self.dequantized_weight().T)
        if self.bias is not None:
            out += to_host(self.bias._data)
        return out

    def extra_repr(self) -> str:
        return (f"in_features={self.in_features}, out_features={self.out_features}, "
                f"dtype=torch.qint8, qscheme=torch.per_tensor_affine")


_TORCH_QUANTIZES = ("LSTM", "GRU", "LSTMCell", "GRUCell", "RNNCell")


def _types(spec: Any) -> Set[type]:
    """The module types to quantize: the Linear ones asked for. Other types are skipped, as
    torch skips types it has no dynamic version of; the recurrent ones torch would quantize
    are refused rather than silently left in float."""
    if spec is None:
        return {Linear}
    if isinstance(spec, dict):
        spec = [key for key in spec if isinstance(key, type)]
    types = set(spec)
    refused = [t.__name__ for t in types if getattr(t, "__name__", "") in _TORCH_QUANTIZES]
    if refused:
        raise ValueError(f"quantize_dynamic: tinyattn quantizes nn.Linear layers only; torch "
                         f"would also quantize {refused}, so leaving them in float would "
                         f"give other results. Pass {{nn.Linear}}")
    return {t for t in types if isinstance(t, type) and issubclass(t, Linear)}


def quantize_dynamic(model: Module, qconfig_spec: Optional[Iterable[Any]] = None,
                     dtype: Any = qint8, mapping: Optional[Dict[Any, Any]] = None,
                     inplace: bool = False) -> Module:
    """A copy of ``model`` (``inplace=True``: the model itself) with every sub-module of the
    types in ``qconfig_spec`` (default ``{nn.Linear}``) replaced by a
    ``DynamicQuantizedLinear`` (torch's ``quantize_dynamic``; see the module docstring)."""
    if str(dtype) != qint8:
        raise ValueError(f"quantize_dynamic: dtype must be qint8 (tinyattn.qint8), got "
                         f"{dtype!r}; float16 dynamic quantization is not provided")
    types = _types(qconfig_spec)
    if not inplace:
        model = copy.deepcopy(model)
    if type(model) in types:
        return DynamicQuantizedLinear.from_float(model)
    _swap_children(model, types)
    return model


def _swap_children(module: Module, types: Set[type]) -> None:
    for name, child in list(module.named_children()):
        if isinstance(module, MultiheadAttention) and name == "out_proj":
            continue      # torch's is a NonDynamicallyQuantizableLinear: left in float
        if type(child) in types:
            replacement = DynamicQuantizedLinear.from_float(child)
            if hasattr(module, "__setitem__") and name.isdigit():
                module[int(name)] = replacement
            else:
                setattr(module, name, replacement)
        else:
            _swap_children(child, types)
