"""``import torch`` answered by tinyattn: a ``sys.meta_path`` finder and the module objects.

``install()`` puts ``TorchFinder`` first on ``sys.meta_path``, so ``import torch``,
``import torch.nn as nn`` and ``from torch.utils.data import DataLoader`` build
``TorchModule`` objects that look names up in the table of names.py, lazily, on first use.
It also gives ``Tensor`` three of PyTorch's meanings for as long as the shim is installed
(patches.py). ``uninstall()`` undoes all of it.
"""
from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import os
import sys
import types
from typing import Any, List, Optional

from . import patches
from .missing import MissingTorchAttribute, MissingTorchModule
from .names import ECOSYSTEM, MODULES, ModuleSpec

__all__ = ["TorchModule", "TorchFinder", "install", "uninstall", "installed",
           "exposed_names"]


def _public_names(source: Any) -> List[str]:
    names = getattr(source, "__all__", None)
    return list(names) if names is not None else [n for n in vars(source) if n[0] != "_"]


def _import_source(spec: ModuleSpec, torch_name: str) -> Any:
    try:
        return importlib.import_module(spec.source)
    except ImportError as exc:
        raise MissingTorchAttribute(torch_name, f"{spec.source} cannot be imported ({exc})"
                                    ) from None


class TorchModule(types.ModuleType):
    """One torch module (``torch``, ``torch.nn``, ...) whose names come from names.py."""

    def __init__(self, name: str, spec: ModuleSpec):
        super().__init__(name, f"PyTorch's {name}, answered by tinyattn "
                               f"(python -m tinyattn run-torch)")
        self.__path__: List[str] = []        # a package, so its sub-modules can be imported
        self._spec = spec
        if name == "torch":
            from .. import __version__    # noqa: PLC0415 - the package above is loaded
            self.__version__ = f"{__version__}+tinyattn"

    def __getattr__(self, name: str) -> Any:
        """Called only for names not set yet: resolve, remember, return (or refuse)."""
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(f"module {self.__name__!r} has no attribute {name!r}")
        value = self._resolve(name)
        setattr(self, name, value)
        return value

    def _resolve(self, name: str) -> Any:
        full = f"{self.__name__}.{name}"
        spec = self._spec
        if full in MODULES:
            return importlib.import_module(full)
        if name in spec.shim_names:
            return spec.shim_names[name]
        if name in spec.refused:
            raise MissingTorchAttribute(full, spec.refused[name])
        if spec.source is not None and name not in spec.hidden and not name.startswith("_"):
            source = _import_source(spec, full)
            if name in _public_names(source):
                value = getattr(source, name)
                patches.torch_module_name(value, self.__name__)
                return value
        raise MissingTorchAttribute(full)

    def __dir__(self) -> List[str]:
        return sorted(set(super().__dir__()) | set(exposed_names(self.__name__)))


def exposed_names(module: str) -> List[str]:
    """Every name ``module`` (a key of MODULES) answers without an error."""
    spec = MODULES[module]
    names = set(spec.shim_names)
    names |= {key[len(module) + 1:] for key in MODULES
              if key.startswith(module + ".") and "." not in key[len(module) + 1:]}
    if spec.source is not None:
        try:
            source = importlib.import_module(spec.source)
        except ImportError:
            source = None
        if source is not None:
            names |= {n for n in _public_names(source)
                      if n not in spec.hidden and n not in spec.refused and n[0] != "_"}
    return sorted(names)


def _probing() -> bool:
    """True when the search comes from ``importlib.util.find_spec`` (a library asking whether
    an optional package is installed), not from an ``import`` statement."""
    frame = sys._getframe(2)
    for _ in range(8):
        if frame is None:
            return False
        code = frame.f_code
        if code.co_name == "find_spec" and (code.co_filename == "<frozen importlib.util>"
                                            or code.co_filename.endswith(
                                                os.path.join("importlib", "util.py"))):
            return True
        frame = frame.f_back
    return False


class TorchFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Answers every ``torch`` and ``torch.*`` import; refuses packages built on torch."""

    def find_spec(self, fullname: str, path: Any = None, target: Any = None
                  ) -> Optional[importlib.machinery.ModuleSpec]:
        root = fullname.partition(".")[0]
        if (root in ECOSYSTEM or (root == "torch" and fullname not in MODULES)) \
                and _probing():
            return None         # importlib.util.find_spec: "not installed", so callers go on
        if root in ECOSYSTEM:
            raise MissingTorchModule(fullname, f"{root} is built on real PyTorch; tinyattn "
                                               f"provides torch, torch.nn, torch.optim, "
                                               f"torch.autograd and torch.utils.data")
        if fullname == "safetensors.torch":     # the real one needs torch's complex dtypes
            return importlib.util.spec_from_loader(fullname, _SafetensorsTorchLoader())
        if root != "torch":
            return None
        if fullname not in MODULES:
            raise MissingTorchModule(fullname)
        return importlib.util.spec_from_loader(fullname, self, is_package=True)

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> TorchModule:
        return TorchModule(spec.name, MODULES[spec.name])

    def exec_module(self, module: types.ModuleType) -> None:
        """Nothing to run: names are resolved on first use."""


class _SafetensorsTorchLoader(importlib.abc.Loader):
    """``import safetensors.torch``: tinyattn's own (torch_shim/safetensors_torch.py)."""

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType:
        from . import safetensors_torch      # noqa: PLC0415 - only scripts that import it
        return safetensors_torch

    def exec_module(self, module: types.ModuleType) -> None:
        """Already run: it is tinyattn's module."""


_finder: Optional[TorchFinder] = None


def installed() -> bool:
    return _finder is not None


def install() -> None:
    """Answer ``import torch`` with tinyattn from now on (in this process)."""
    global _finder
    if _finder is not None:
        return
    real = [name for name, module in sys.modules.items()
            if name.partition(".")[0] == "torch" and not isinstance(module, TorchModule)]
    if real:
        raise RuntimeError("real PyTorch is already imported in this process, so `import "
                           "torch` cannot be answered by tinyattn; run the script in a fresh "
                           "process: python -m tinyattn run-torch script.py")
    _finder = TorchFinder()
    sys.meta_path.insert(0, _finder)
    patches.apply()


def uninstall() -> None:
    """Undo ``install()``: forget the torch modules, restore ``Tensor``."""
    global _finder
    if _finder is None:
        return
    sys.meta_path.remove(_finder)
    _finder = None
    for name in [n for n, m in sys.modules.items() if isinstance(m, TorchModule)]:
        del sys.modules[name]
    patches.restore()
