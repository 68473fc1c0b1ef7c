"""Run PyTorch scripts unchanged on tinyattn: ``python -m tinyattn run-torch script.py``.

``import torch`` then gives tinyattn: ``torch.nn`` is ``tinyattn.nn``, ``torch.optim`` is
``tinyattn.optim``, and so on (names.py holds the whole map), so a PyTorch tutorial runs on
tinyattn's hand-derived forward and backward passes. A torch name tinyattn lacks is an error
that names it and the script line that used it; nothing falls back silently.

This package sits above every other layer (it maps names onto nn, optim, utils); nothing in
tinyattn imports it except the command line. docs/pytorch.md explains what it maps.
"""
from __future__ import annotations

from .shim_names import Size, device
from .finder import exposed_names, install, installed, uninstall
from .missing import MissingTorchAttribute, MissingTorchFeature, MissingTorchModule
from .names import ECOSYSTEM, MODULES
from .runner import main, run_script

__all__ = ["run_script", "main", "install", "uninstall", "installed", "exposed_names",
           "MODULES", "ECOSYSTEM", "MissingTorchFeature", "MissingTorchAttribute",
           "MissingTorchModule", "device", "Size"]
