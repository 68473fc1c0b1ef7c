"""torch's names answered by tinyattn, as ``python -m tinyattn run-torch`` answers them.

The harness never asks tinyattn for a name directly: it asks the shim's name table
(tinyattn/torch_shim/names.py), so what is checked is exactly what a PyTorch script sees.
Real torch is imported in the same process (it is the oracle), so the shim cannot be
installed as ``import torch``; ``SHIM_TORCH`` is the shim's ``torch`` module object built by
hand, whose sub-modules (``torch.nn.functional``, ``torch.linalg``, ...) are shim modules too.

A few OpInfo entries call their op through a small function written in torch's test
database (``lambda x, shape: x.view(shape)``); ``rebind`` runs such a function with its
``torch`` answered by the shim, so ``x.view`` and ``torch.where`` reach tinyattn.
"""
from __future__ import annotations

import types
from typing import Any, Callable, Optional

import tinyattn
from tinyattn.torch_shim.finder import TorchModule
from tinyattn.torch_shim.missing import MissingTorchFeature
from tinyattn.torch_shim.names import MODULES

__all__ = ["SHIM_TORCH", "resolve", "tensor_method", "rebind", "TORCH_TEST_MODULES"]


class _ShimModule(TorchModule):
    """A shim module whose sub-modules are shim modules (never the real torch's)."""

    def _resolve(self, name: str) -> Any:
        full = f"{self.__name__}.{name}"
        if full in MODULES:
            return _ShimModule(full, MODULES[full])
        return super()._resolve(name)


SHIM_TORCH = _ShimModule("torch", MODULES["torch"])

# the modules of torch's test database whose small functions may be rebound to the shim
TORCH_TEST_MODULES = ("torch.testing._internal.common_methods_invocations",
                      "torch.testing._internal.opinfo.definitions")


def resolve(dotted: str) -> Optional[Any]:
    """``torch.<dotted>`` under run-torch (``"nn.functional.gelu"``), or None when the shim
    does not answer it."""
    value: Any = SHIM_TORCH
    for part in dotted.split("."):
        if not part:
            return None
        try:
            value = getattr(value, part)
        except (MissingTorchFeature, AttributeError):
            return None
    return value


def tensor_method(name: str) -> Optional[Callable[..., Any]]:
    """tinyattn's ``Tensor.<name>`` (defined by Tensor or a base class, not by its type:
    ``type.__ror__`` is not a Tensor method), or None."""
    if name.startswith("_") and not (name.startswith("__") and name.endswith("__")):
        return None
    for klass in tinyattn.Tensor.__mro__[:-1]:         # object's slots are not ops either
        if name in vars(klass):
            return getattr(tinyattn.Tensor, name)
    return None


def rebind(function: Any) -> Optional[Callable[..., Any]]:
    """``function`` (a Python function of torch's test database) with its global ``torch``
    answered by the shim; None for anything else."""
    if not isinstance(function, types.FunctionType):
        return None
    if not function.__module__.startswith(TORCH_TEST_MODULES):
        return None
    namespace = dict(function.__globals__)
    namespace["torch"] = SHIM_TORCH
    rebound = types.FunctionType(function.__code__, namespace, function.__name__,
                                 function.__defaults__, function.__closure__)
    rebound.__kwdefaults__ = function.__kwdefaults__
    return rebound
