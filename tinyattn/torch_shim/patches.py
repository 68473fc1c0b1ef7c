"""PyTorch's meanings for three Tensor attributes, while a PyTorch script runs on tinyattn.

tinyattn's own ``x.data`` is the array (NumPy or CuPy) and ``x.device`` a plain string; in
PyTorch ``x.data`` is a Tensor that shares x's memory outside the graph
(``w.data.uniform_(-r, r)``, ``p.data.norm()``) and ``x.device`` a ``torch.device`` with
``.type``. ``apply()`` gives Tensor those meanings, plus an error that names
``torch.Tensor.<name>`` and the script line for a method tinyattn lacks; ``restore()`` puts
tinyattn's back. tinyattn's own code reads ``._data`` and compares devices as strings, so it
works the same either way.
"""
from __future__ import annotations

import multiprocessing.spawn

from typing import Any, Dict

from .. import printing
from ..tensor import Tensor
from .shim_names import device, torch_dtype
from .missing import MissingTorchAttribute

__all__ = ["apply", "restore", "torch_module_name"]

_saved: Dict[str, Any] = {}
_renamed: Dict[type, str] = {}      # class -> its own __module__, while a script runs


def torch_module_name(value: Any, module: str) -> None:
    """A tinyattn class handed out as ``module.Name`` (``torch.optim.lr_scheduler``) reports
    that module as its ``__module__`` while the script runs, as torch's classes do: d2l tells
    its own schedulers from torch's by ``scheduler.__module__ == lr_scheduler.__name__``, and
    took torch's ``MultiStepLR`` for a function to call. The first torch module that hands the
    class out names it; ``restore()`` gives every class its own name back."""
    if not _saved:      # no script is running (apply() not called): a rename would outlive
        return          # it, and pickle would then look tinyattn's classes up in real torch
    if isinstance(value, type) and value not in _renamed \
            and str(getattr(value, "__module__", "")).startswith("tinyattn"):
        _renamed[value] = value.__module__
        value.__module__ = module


def _torch_data(self: Tensor) -> Tensor:
    """``x.data`` as in PyTorch: a Tensor on x's memory that records no graph. While a pending
    backward needs that memory it is read-only (writing raises tinyattn's error that explains
    why, where PyTorch would silently spoil the gradient)."""
    return Tensor._wrap(self._user_array())


def _set_data(self: Tensor, value: Any) -> None:
    _saved["data"].fset(self, value)


def _torch_device(self: Tensor) -> device:
    return device(_saved["device"].fget(self))


def _torch_dtype_of(self: Tensor) -> Any:
    """``x.dtype`` prints as ``torch.float32``; it still reads as NumPy's (shim_names.dtype)."""
    return torch_dtype(self._data.dtype)


def _missing_attribute(self: Tensor, name: str) -> Any:
    """Called only when ordinary lookup fails: a torch.Tensor method tinyattn lacks."""
    if name.startswith("_"):
        raise AttributeError(f"'{type(self).__name__}' object has no attribute {name!r}")
    raise MissingTorchAttribute(f"torch.Tensor.{name}",
                                "tinyattn's Tensor has no such attribute (if torch.Tensor "
                                "has none either, check the spelling)")


def apply() -> None:
    if _saved:
        return
    _saved["data"] = Tensor.__dict__["data"]
    _saved["device"] = Tensor.__dict__["device"]
    _saved["dtype"] = Tensor.__dict__["dtype"]
    Tensor.dtype = property(_torch_dtype_of)
    Tensor.data = property(_torch_data, _set_data, doc=_torch_data.__doc__)
    Tensor.device = property(_torch_device)
    Tensor.__getattr__ = _missing_attribute
    printing.options.torch_names = True        # torch.Size([2, 3]), dtype=torch.float64
    _saved["spawn_command"] = multiprocessing.spawn.get_command_line
    multiprocessing.spawn.get_command_line = _spawn_command_with_the_shim


_SHIM_FIRST = "from tinyattn.torch_shim.finder import install; install(); "


def _spawn_command_with_the_shim(**kwds):
    """Python's spawn command line (``python -c 'from multiprocessing.spawn import
    spawn_main; ...'``) with the shim installed first: a process started by the "spawn" method
    (``mp.get_context("spawn").Process``, ``DataLoader(multiprocessing_context="spawn")``)
    re-imports the script's ``__main__``, whose ``import torch`` must be tinyattn's there too
    (else it would import real PyTorch, or fail where it is absent)."""
    command = list(_saved["spawn_command"](**kwds))
    if "-c" in command:
        at = command.index("-c") + 1
        command[at] = _SHIM_FIRST + command[at]
    return command


def restore() -> None:
    if not _saved:
        return
    Tensor.data = _saved.pop("data")
    Tensor.device = _saved.pop("device")
    Tensor.dtype = _saved.pop("dtype")
    del Tensor.__getattr__
    printing.options.torch_names = False
    multiprocessing.spawn.get_command_line = _saved.pop("spawn_command")
    for cls, module in _renamed.items():
        cls.__module__ = module
    _renamed.clear()
