"""``tinyattn.signal``: torch.signal's window functions (``tinyattn.signal.windows``)."""
from __future__ import annotations

from . import windows

__all__ = ["windows"]
