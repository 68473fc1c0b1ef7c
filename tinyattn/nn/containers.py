"""Containers with PyTorch's names and behaviour: ``ModuleList``, ``Sequential``,
``ModuleDict``, ``ParameterList`` and ``ParameterDict``.

Each keeps its items as attributes named by their keys (``"0"``, ``"1"``, ... for the
sequences), so ``named_parameters()`` and ``state_dict()`` give PyTorch's dotted keys:
``Sequential(Linear(4, 8), ReLU())`` has ``0.weight``, ``0.bias``.
"""
from __future__ import annotations

from collections import OrderedDict
from typing import Any, Iterable, Iterator, List, Mapping, Optional, Tuple, Union

import numpy as np

from ..tensor import Tensor
from .module import Module, Parameter, _check_name, _checked_index
from ..precision import is_floating

__all__ = ["ModuleList", "Sequential", "ModuleDict", "ParameterList", "ParameterDict"]


def _children(owner: Module) -> List[Tuple[str, Module]]:
    """The one record of a container's modules: its Module-valued attributes, in the order
    they were first assigned (torch's ``_modules``). ``add_module``, ``register_module``,
    ``owner.name = layer``, ``append`` and item assignment all write there, so ``len``,
    iteration, indexing and ``forward`` see every child."""
    return [(key, value) for key, value in vars(owner).items() if isinstance(value, Module)]


def _renumber(owner: Module, modules: List[Module]) -> None:
    """Replace every child by ``modules`` under the keys 0..n-1 (torch renumbers the same way
    after a delete)."""
    for key, _ in _children(owner):
        object.__delattr__(owner, key)
    for i, module in enumerate(modules):
        object.__setattr__(owner, str(i), module)


def _checked_module(owner: Module, value: Any) -> Module:
    if not isinstance(value, Module):
        raise TypeError(f"{type(owner).__name__} holds Modules, got {type(value).__name__}")
    return value


def _checked_insert_index(owner: Module, index: int, length: int) -> int:
    if not -length <= index <= length:
        raise IndexError(f"{type(owner).__name__}.insert: index {index} is out of range for "
                         f"length {length}")
    return index


class ModuleList(Module):
    """A list of modules whose parameters are found (named ``0``, ``1``, ...), as
    ``torch.nn.ModuleList``: indexing (a slice gives a ModuleList), ``len``, iteration,
    ``append``, ``extend``, ``insert``, ``del``, assignment and ``+=``. A module added by
    ``add_module`` or ``mlist.name = module`` is an item too, as in torch."""

    def __init__(self, modules: Optional[Iterable[Module]] = None):
        if modules is not None:
            self.extend(modules)

    def _key(self, index: Any) -> str:
        """torch's rule: item ``i`` is the child named ``str(i)``."""
        key = str(_checked_index(index, len(self), type(self).__name__))
        if not isinstance(self.__dict__.get(key), Module):
            raise KeyError(f"{type(self).__name__} has no item {key!r}: its children are "
                           f"{[k for k, _ in _children(self)]}")
        return key

    def append(self, module: Module) -> "ModuleList":
        setattr(self, str(len(self)), _checked_module(self, module))
        return self

    def extend(self, modules: Iterable[Module]) -> "ModuleList":
        if isinstance(modules, Module) and not isinstance(modules, ModuleList):
            raise TypeError(f"ModuleList.extend takes an iterable of Modules, got one "
                            f"{type(modules).__name__}; use append")
        for module in list(modules):
            self.append(module)
        return self

    def insert(self, index: int, module: Module) -> None:
        modules = list(self)
        modules.insert(_checked_insert_index(self, index, len(modules)),
                       _checked_module(self, module))
        _renumber(self, modules)

    def pop(self, index: int = -1) -> Module:
        module = self[index]
        del self[index]
        return module

    def __getitem__(self, index: Union[int, slice]) -> Any:
        if isinstance(index, slice):
            return type(self)(list(self)[index])
        return self.__dict__[self._key(index)]

    def __setitem__(self, index: int, module: Module) -> None:
        setattr(self, str(_checked_index(index, len(self), type(self).__name__)),
                _checked_module(self, module))

    def __delitem__(self, index: Union[int, slice]) -> None:
        modules = list(self)
        if isinstance(index, slice):
            del modules[index]
        else:
            del modules[_checked_index(index, len(modules), type(self).__name__)]
        _renumber(self, modules)

    def __iadd__(self, modules: Iterable[Module]) -> "ModuleList":
        return self.extend(modules)

    def __add__(self, other: Iterable[Module]) -> "ModuleList":
        return type(self)(list(self) + list(other))

    def __len__(self) -> int:
        return len(_children(self))

    def __iter__(self) -> Iterator[Module]:
        return iter([module for _, module in _children(self)])

    def _printout(self, counts: bool) -> str:
        """torch's ModuleList printout: a run of consecutive items that print the same is
        one line, ``(0-11): 12 x Block(...)`` (a GPT's stack of blocks), each other item
        ``(i): item``."""
        runs: List[List[Any]] = []          # [first index, last index, printout]
        for index, (_, child) in enumerate(_children(self)):
            text = child._printout(counts)
            if runs and runs[-1][2] == text:
                runs[-1][1] = index
            else:
                runs.append([index, index, text])
        lines = []
        for first, last, text in runs:
            head = f"({first}): " if first == last else \
                f"({first}-{last}): {last - first + 1} x "
            lines.append(head + text.replace("\n", "\n  "))
        body = "\n  " + "\n  ".join(lines) + "\n" if lines else ""
        text = f"{type(self).__name__}({body})"
        if counts and Module.num_parameters(self):
            first, _, rest = text.partition("\n")
            text = f"{first}  # {Module.num_parameters(self):,} params\n{rest}"
        return text

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError("ModuleList has no forward: iterate over it in your own "
                                  "forward (for layer in self.layers: x = layer(x)), or use "
                                  "nn.Sequential")


class Sequential(Module):
    """Modules applied one after the other: ``Sequential(a, b, c)(x) == c(b(a(x)))``.

    ``Sequential(OrderedDict([("fc", Linear(4, 8)), ("act", ReLU())]))`` names them, and so do
    ``add_module("fc", layer)`` and ``seq.fc = layer`` (an empty ``Sequential()`` filled that
    way runs every layer, in the order added). Indexing gives a module by position (a slice
    gives a Sequential); ``append``, ``extend``, ``insert``, ``pop``, ``del`` and item
    assignment change it in place (as PyTorch, ``insert`` and ``del`` renumber the keys 0..n-1).
    """

    def __init__(self, *modules: Any):
        if len(modules) == 1 and isinstance(modules[0], OrderedDict):
            for key, module in modules[0].items():
                self.add_module(key, _checked_module(self, module))
        else:
            for i, module in enumerate(modules):
                self.add_module(str(i), _checked_module(self, module))

    def forward(self, x: Any) -> Any:
        for module in self:
            x = module(x)
        return x

    def __getitem__(self, index: Union[int, slice]) -> Any:
        pairs = _children(self)
        if isinstance(index, slice):
            return type(self)(OrderedDict(pairs[index]))
        return pairs[_checked_index(index, len(pairs), "Sequential")][1]

    def __setitem__(self, index: int, module: Module) -> None:
        pairs = _children(self)
        key = pairs[_checked_index(index, len(pairs), "Sequential")][0]
        setattr(self, key, _checked_module(self, module))

    def __delitem__(self, index: Union[int, slice]) -> None:
        modules = list(self)
        if isinstance(index, slice):
            del modules[index]
        else:
            del modules[_checked_index(index, len(modules), "Sequential")]
        _renumber(self, modules)

    def __len__(self) -> int:
        return len(_children(self))

    def __iter__(self) -> Iterator[Module]:
        return iter([module for _, module in _children(self)])

    def append(self, module: Module) -> "Sequential":
        self.add_module(str(len(self)), _checked_module(self, module))
        return self

    def extend(self, modules: Iterable[Module]) -> "Sequential":
        for module in list(modules):
            self.append(module)
        return self

    def insert(self, index: int, module: Module) -> "Sequential":
        modules = list(self)
        modules.insert(_checked_insert_index(self, index, len(modules)),
                       _checked_module(self, module))
        _renumber(self, modules)
        return self

    def pop(self, index: int = -1) -> Module:
        module = self[index]
        del self[index]
        return module

    def __add__(self, other: "Sequential") -> "Sequential":
        if not isinstance(other, Sequential):
            raise TypeError(f"Sequential + {type(other).__name__}: add another Sequential")
        return type(self)(*list(self), *list(other))


class _Keyed(Module):
    """Items stored as attributes under their keys, in the order of ``_keys`` (the parameter
    containers: torch keeps their keys apart from the registered parameters too, so
    ``pdict.name = p`` registers a parameter that is not a key)."""

    _kind = "parameter"

    def _check_value(self, value: Any) -> Any:
        return _as_parameter(value, type(self).__name__)

    def _put(self, key: str, value: Any) -> None:
        _check_name(self._kind, key)
        value = self._check_value(value)
        if key not in self._keys:
            if key in self.__dict__ or hasattr(type(self), key):
                raise KeyError(f"attribute '{key}' already exists on {type(self).__name__}; "
                               f"choose another key")
            self._keys.append(key)
        object.__setattr__(self, key, value)

    def _rebuild(self, pairs: Iterable[Tuple[str, Any]]) -> None:
        pairs = list(pairs)
        for key in self._keys:
            object.__delattr__(self, key)
        self._keys = []
        for key, value in pairs:
            self._put(key, value)

    def _pairs(self) -> List[Tuple[str, Any]]:
        return [(key, self.__dict__[key]) for key in self._keys]

    def extra_repr(self) -> str:
        """torch's printout, a line per item: ``(0): Parameter containing: [torch.float32 of
        size 2x3]`` (a ParameterDict names the legacy type, ``torch.FloatTensor``)."""
        lines = []
        for key, value in self._pairs():
            if not isinstance(value, Tensor):
                lines.append(f"  ({key}): Object of type: {type(value).__name__}")
                continue
            kind = "Parameter" if isinstance(value, Parameter) else "Tensor"
            dtype = value.type() if isinstance(self, ParameterDict) else \
                f"torch.{np.dtype(value.dtype).name}"
            size = "x".join(str(n) for n in value.shape)
            device = f" ({value.device})" if str(value.device).startswith("cuda") else ""
            lines.append(f"  ({key}): {kind} containing: [{dtype} of size {size}{device}]")
        return "\n".join(lines)

    def __len__(self) -> int:
        return len(self._keys)


class _DictMethods:
    """The dict interface shared by ModuleDict and ParameterDict, over ``_pairs()``."""

    def __iter__(self) -> Iterator[str]:
        return iter(self.keys())

    def keys(self) -> List[str]:
        return [key for key, _ in self._pairs()]

    def values(self) -> List[Any]:
        return [value for _, value in self._pairs()]

    def items(self) -> List[Tuple[str, Any]]:
        return self._pairs()

    def __contains__(self, key: object) -> bool:
        return key in self.keys()

    def __getitem__(self, key: str) -> Any:
        pairs = dict(self._pairs())
        if key not in pairs:
            raise KeyError(f"{type(self).__name__} has no key {key!r}; keys: {self.keys()}")
        return pairs[key]

    def pop(self, key: str) -> Any:
        value = self[key]
        del self[key]
        return value

    def update(self, items: Any) -> None:
        pairs = items.items() if hasattr(items, "items") else items
        for pair in pairs:
            if not isinstance(pair, (tuple, list)) or len(pair) != 2:
                raise TypeError(f"{type(self).__name__}.update takes a mapping or (key, value) "
                                f"pairs, got an element {pair!r}")
            self[pair[0]] = pair[1]

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError(f"{type(self).__name__} has no forward: pick its items "
                                  f"by key in your own forward")


class ModuleDict(_DictMethods, Module):
    """A dict of modules (string keys), registered so their parameters are found:
    ``ModuleDict({"enc": Linear(4, 4)})["enc"]``. Keys keep their insertion order; a module
    added by ``add_module`` or ``mdict.name = module`` is a key too, as in torch."""

    def __init__(self, modules: Optional[Union[Mapping[str, Module],
                                               Iterable[Tuple[str, Module]]]] = None):
        if modules is not None:
            self.update(modules)

    def _pairs(self) -> List[Tuple[str, Any]]:
        return _children(self)

    def __setitem__(self, key: str, value: Any) -> None:
        self.add_module(key, _checked_module(self, value))

    def __delitem__(self, key: str) -> None:
        self[key]                                   # KeyError with the keys if absent
        delattr(self, key)

    def __len__(self) -> int:
        return len(_children(self))

    def clear(self) -> None:
        _renumber(self, [])


class ParameterDict(_DictMethods, _Keyed):
    """A dict of Parameters (a Tensor is wrapped into a Parameter, as PyTorch does)."""

    def __init__(self, parameters: Optional[Union[Mapping[str, Any],
                                                  Iterable[Tuple[str, Any]]]] = None):
        self._keys: List[str] = []
        if parameters is not None:
            self.update(parameters)

    def __setitem__(self, key: str, value: Any) -> None:
        self._put(key, value)

    def update(self, items: Any) -> None:
        """As torch: a plain mapping (a ``dict``) is added in sorted key order; an
        OrderedDict, another ParameterDict or an iterable of pairs keeps its order. The order
        is that of ``parameters()``, so of an optimizer's state, and of the state dict."""
        if (isinstance(items, Mapping) and not isinstance(items, OrderedDict)
                and not isinstance(items, ParameterDict)):
            items = sorted(items.items())
        super().update(items)

    def __delitem__(self, key: str) -> None:
        self[key]                                   # KeyError with the keys if absent
        self._keys.remove(key)
        object.__delattr__(self, key)

    def clear(self) -> None:
        self._rebuild([])


class ParameterList(_Keyed):
    """A list of Parameters (named ``0``, ``1``, ...); Tensors are wrapped into Parameters."""

    def __init__(self, values: Optional[Iterable[Any]] = None):
        self._keys: List[str] = []
        if values is not None:
            self.extend(values)

    def __getitem__(self, index: Union[int, slice]) -> Any:
        values = [v for _, v in self._pairs()]
        if isinstance(index, slice):
            return type(self)(values[index])
        return values[_checked_index(index, len(values), type(self).__name__)]

    def __setitem__(self, index: int, value: Any) -> None:
        self._put(self._keys[_checked_index(index, len(self._keys), type(self).__name__)],
                  value)

    def __iter__(self) -> Iterator[Parameter]:
        return iter([v for _, v in self._pairs()])

    def append(self, value: Any) -> "ParameterList":
        self._put(str(len(self._keys)), value)
        return self

    def extend(self, values: Iterable[Any]) -> "ParameterList":
        if isinstance(values, Tensor):
            raise TypeError("ParameterList.extend takes an iterable of tensors, got one "
                            "Tensor; use append")
        for value in list(values):
            self.append(value)
        return self

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError("ParameterList has no forward: use its items in your own "
                                  "forward")


def _as_parameter(value: Any, owner: str) -> Parameter:
    if isinstance(value, Parameter):
        return value
    if isinstance(value, Tensor):
        return Parameter(value, requires_grad=is_floating(value.dtype))
    raise TypeError(f"{owner} holds Parameters (or Tensors, which it wraps), got "
                    f"{type(value).__name__}")
