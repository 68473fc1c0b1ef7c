"""``tinyattn.ao``: PyTorch's ``torch.ao`` spelling; ``tinyattn.ao.quantization`` holds the
names of ``tinyattn.quantization``."""
from . import quantization

__all__ = ["quantization"]
