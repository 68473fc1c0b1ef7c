"""``tinyattn.func``: torch.func's ``functional_call`` (nn/utils/stateless.py). The
function transforms (``grad``, ``vmap``, ``jacrev``) are not implemented."""
from __future__ import annotations

from .nn.utils.stateless import functional_call

__all__ = ["functional_call"]
