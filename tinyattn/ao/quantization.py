"""``tinyattn.ao.quantization``: the same names as ``tinyattn.quantization``."""
from ..quantization import (DynamicQuantizedLinear, choose_qparams, default_reduce_range, qint8,
                            quantize_dynamic, quantize_weight, quint8)

__all__ = ["quantize_dynamic", "DynamicQuantizedLinear", "choose_qparams", "quantize_weight",
           "default_reduce_range", "qint8", "quint8"]
