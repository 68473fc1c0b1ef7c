"""``tinyattn.quantization`` (also ``tinyattn.ao.quantization``): dynamic int8 quantization of
the linear layers, as ``torch.ao.quantization.quantize_dynamic``
(docs/precision_memory_time.md#dynamic-quantization)."""
from .dynamic import (DynamicQuantizedLinear, choose_qparams, default_reduce_range, qint8,
                      quantize_dynamic, quantize_weight, quint8)

__all__ = ["quantize_dynamic", "DynamicQuantizedLinear", "choose_qparams", "quantize_weight",
           "default_reduce_range", "qint8", "quint8"]
