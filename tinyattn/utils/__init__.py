"""``tinyattn.utils``: helpers above the tensor layer; ``tinyattn.utils.data`` holds datasets
and the ``DataLoader`` (PyTorch's ``torch.utils.data``); ``tinyattn.utils.checkpoint`` holds
gradient checkpointing (``torch.utils.checkpoint``), which ``nn.GPT`` uses."""
from . import checkpoint, data

__all__ = ["checkpoint", "data"]
