"""The error for a torch name that tinyattn does not implement, and where the script used it.

The message always has the same shape, so a learner sees at once what is missing and where:
``tinyattn does not implement torch.fft.rfft (train.py line 12)``, plus a reason or a way
around it when there is one. The error is an ``AttributeError`` for a missing attribute and an
``ImportError`` for a missing module (``hasattr(torch, "fft")`` is then False and
``try: import torch.fft / except ImportError`` works, as with a PyTorch that lacks them).
"""
from __future__ import annotations

import os
import sys
from typing import Optional, Tuple

__all__ = ["MissingTorchFeature", "MissingTorchAttribute", "MissingTorchModule",
           "script_location", "describe_location"]

_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
_RUNPY = os.path.splitext(os.path.abspath(__import__("runpy").__file__))[0]


def _is_internal(filename: str) -> bool:
    """Frames of tinyattn itself, of the import machinery and of runpy are not the script's."""
    if filename.startswith("<"):            # <frozen importlib._bootstrap>, <string>, <stdin>
        return filename.startswith("<frozen")
    path = os.path.abspath(filename)
    return path.startswith(_PACKAGE_DIR) or os.path.splitext(path)[0] == _RUNPY


def script_location() -> Optional[Tuple[str, int]]:
    """(file, line) of the innermost frame that belongs to the user's code (the script or a
    module of its own), or None when there is none (the call came from tinyattn itself)."""
    frame = sys._getframe(1)
    while frame is not None:
        if not _is_internal(frame.f_code.co_filename):
            return frame.f_code.co_filename, frame.f_lineno
        frame = frame.f_back
    return None


def describe_location(location: Optional[Tuple[str, int]]) -> str:
    """'train.py line 12' (relative to the working directory when the file is below it)."""
    if location is None:
        return "called from inside tinyattn"
    filename, line = location
    if not filename.startswith("<"):
        relative = os.path.relpath(os.path.abspath(filename))
        filename = filename if relative.startswith("..") else relative
    return f"{filename} line {line}"


class MissingTorchFeature(Exception):
    """A torch name the script used that tinyattn does not implement."""

    def __init__(self, torch_name: str, reason: str = ""):
        self.torch_name = torch_name
        self.reason = reason
        self.location = script_location()
        text = f"tinyattn does not implement {torch_name} ({describe_location(self.location)})"
        super().__init__(f"{text}: {reason}" if reason else text)

    def __str__(self) -> str:
        return str(self.args[0])


class MissingTorchAttribute(MissingTorchFeature, AttributeError):
    """``torch.<name>`` (or ``torch.nn.<name>``, ...) that tinyattn lacks."""


class MissingTorchModule(MissingTorchFeature, ImportError):
    """``import torch.<module>`` for a module tinyattn lacks. An ImportError, not a
    ModuleNotFoundError, so that ``from torch import fft`` reports it instead of Python's
    generic 'cannot import name'."""
