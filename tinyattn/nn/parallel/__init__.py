"""``tinyattn.nn.parallel``: torch's ``torch.nn.parallel`` (``DistributedDataParallel``)."""
from __future__ import annotations

from .distributed import DistributedDataParallel

__all__ = ["DistributedDataParallel"]
