"""``Module`` and ``Parameter``: the containers that hold a model's weights.

A ``Parameter`` is a leaf ``Tensor`` that requires a gradient. A ``Module`` finds its
parameters and sub-modules by looking at its attributes (lists of modules go in a
``ModuleList``), so ``named_parameters()`` gives PyTorch-style dotted keys such as
``blocks.0.attn.q_proj.weight`` and state dicts move between tinyattn and PyTorch.
"""
from __future__ import annotations

from collections import OrderedDict
from typing import Any, Dict, Iterator, List, Optional, Tuple

import numpy as np

from .. import backend
from ..tensor import Tensor, tensor

__all__ = ["Parameter", "Module", "ModuleList"]


class Parameter(Tensor):
    """A trainable tensor: a leaf with ``requires_grad=True``. Like ``torch.nn.Parameter`` it
    shares the memory of the tensor (or array) it is made from and keeps its dtype."""

    def __init__(self, data: Any = None, requires_grad: bool = True):
        if data is None:
            data = np.zeros((0,), dtype=np.float32)
        array = data._data if isinstance(data, Tensor) else data
        if not hasattr(array, "dtype"):                 # a list or a number
            array = tensor(array)._data
        elif isinstance(array, np.generic):
            array = np.asarray(array)
        self._data = array
        if requires_grad:
            self.requires_grad_(True)

    def __repr__(self) -> str:
        return "Parameter(" + super().__repr__() + ")"


class Module:
    """Base class of every layer and model. Subclasses set attributes in ``__init__`` and
    implement ``forward``; calling the module calls ``forward``."""

    training: bool = True

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.forward(*args, **kwargs)

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError(f"{type(self).__name__} must implement forward()")

    # ---------------------------------------------------------------- traversal
    def named_children(self) -> Iterator[Tuple[str, "Module"]]:
        for name, value in vars(self).items():
            if isinstance(value, Module):
                yield name, value

    def named_modules(self, prefix: str = "") -> Iterator[Tuple[str, "Module"]]:
        yield prefix, self
        for name, child in self.named_children():
            yield from child.named_modules(f"{prefix}.{name}" if prefix else name)

    def modules(self) -> Iterator["Module"]:
        for _, module in self.named_modules():
            yield module

    def named_parameters(self, prefix: str = "") -> Iterator[Tuple[str, Parameter]]:
        seen = set()
        for module_name, module in self.named_modules(prefix):
            for name, value in vars(module).items():
                if isinstance(value, Parameter) and id(value) not in seen:
                    seen.add(id(value))  # a tied weight is listed once, under its first name
                    yield (f"{module_name}.{name}" if module_name else name), value

    def parameters(self) -> List[Parameter]:
        return [p for _, p in self.named_parameters()]

    def num_parameters(self) -> int:
        return sum(p.numel() for p in self.parameters())

    # ---------------------------------------------------------------- modes and devices
    def train(self, mode: bool = True) -> "Module":
        for module in self.modules():
            module.training = mode
        return self

    def eval(self) -> "Module":
        return self.train(False)

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Forget every parameter's gradient: None (default, as torch) or zeros in place."""
        for p in self.parameters():
            if set_to_none or p.grad is None:
                p.grad = None
            else:
                p.grad.zero_()

    def to(self, device: Optional[str] = None, dtype: Any = None) -> "Module":
        """Move (or cast) every parameter and buffer in place; returns self."""
        if device is not None:
            try:
                device = backend.normalize_device(device)
            except ValueError:
                device, dtype = None, device
        for module in self.modules():
            for name, value in list(vars(module).items()):
                if isinstance(value, Tensor):
                    data = value._data if device is None else backend.to_device(value._data, device)
                    if dtype is not None and np.issubdtype(value.dtype, np.floating):
                        data = data.astype(dtype)
                    value._data = data
                    value.grad = None
        return self

    def double(self) -> "Module":
        return self.to(np.float64)

    def float(self) -> "Module":
        return self.to(np.float32)

    # ---------------------------------------------------------------- state
    def state_dict(self) -> "OrderedDict[str, np.ndarray]":
        """Parameters as host NumPy arrays, keyed by dotted names. Fixed tables (the
        sinusoidal encoding) are rebuilt from the config, so they are not saved."""
        state: "OrderedDict[str, np.ndarray]" = OrderedDict()
        for name, p in self.named_parameters():
            state[name] = p.numpy().copy()
        return state

    def load_state_dict(self, state: Dict[str, Any], strict: bool = True) -> None:
        """Copy arrays into the parameters. Every check runs before anything is written, so a
        bad state dict leaves the module untouched."""
        targets = dict(self.named_parameters())
        missing = [k for k in targets if k not in state]
        unexpected = [k for k in state if k not in targets]
        if strict and (missing or unexpected):
            raise KeyError(f"load_state_dict: missing keys {missing}, unexpected keys "
                           f"{unexpected} (pass strict=False to load the keys that match)")
        for key, value in state.items():
            if key in targets:
                shape = tuple(np.shape(value._data if isinstance(value, Tensor) else value))
                if shape != targets[key].shape:
                    raise ValueError(f"load_state_dict: {key} has shape {shape} in the state "
                                     f"dict but {targets[key].shape} in the model")
        for key, value in state.items():
            if key in targets:
                _copy_into(targets[key], value)

    # ---------------------------------------------------------------- display
    def extra_repr(self) -> str:
        return ""

    def __repr__(self) -> str:
        children = list(self.named_children())
        own = sum(p.numel() for n, p in vars(self).items() if isinstance(p, Parameter))
        head = f"{type(self).__name__}({self.extra_repr()})"
        count = self.num_parameters()
        if not children:
            return f"{head}  # {count:,} params" if own else head
        lines = [f"{head[:-1]}  # {count:,} params"]
        for name, child in children:
            body = repr(child).replace("\n", "\n  ")
            lines.append(f"  ({name}): {body}")
        lines.append(")")
        return "\n".join(lines)


def _copy_into(target: Tensor, value: Any) -> None:
    """Write ``value`` into ``target``'s own array (as torch's ``param.copy_``), counting a
    version, so every holder of the parameter sees the new values."""
    host = backend.to_host(value._data if isinstance(value, Tensor) else value)
    converted = backend.to_device(np.array(host, dtype=target.dtype), target.device)
    xp = backend.get_array_module(target._data)
    if isinstance(target._data, np.ndarray) and not target._data.flags.writeable:
        target._data = converted        # e.g. a read-only memory map: replace it
    else:
        xp.copyto(target._data, converted)
        target._bump_version()


class ModuleList(Module):
    """A list of modules whose parameters are found (named ``0``, ``1``, ...)."""

    def __init__(self, modules: Optional[List[Module]] = None):
        self._items: List[Module] = []
        for module in modules or []:
            self.append(module)

    def append(self, module: Module) -> None:
        setattr(self, str(len(self._items)), module)
        self._items.append(module)

    def __getitem__(self, index: int) -> Module:
        return self._items[index]

    def __len__(self) -> int:
        return len(self._items)

    def __iter__(self) -> Iterator[Module]:
        return iter(self._items)
