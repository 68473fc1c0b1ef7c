"""``tinyattn.nn``: modules built from tinyattn's ops."""
from __future__ import annotations

from .module import Module, ModuleList, Parameter

__all__ = ["Module", "ModuleList", "Parameter"]
