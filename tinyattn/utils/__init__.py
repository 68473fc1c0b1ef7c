"""``tinyattn.utils``: helpers above the tensor layer; ``tinyattn.utils.data`` holds datasets
and the ``DataLoader`` (PyTorch's ``torch.utils.data``). Nothing in the library imports it."""
from . import data

__all__ = ["data"]
