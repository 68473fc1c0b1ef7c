"""Containers with PyTorch's names and behaviour: ``ModuleList``, ``Sequential``,
``ModuleDict``, ``ParameterList`` and ``ParameterDict``.

Each keeps its items as attributes named by their keys (``"0"``, ``"1"``, ... for the
sequences), so ``named_parameters()`` and ``state_dict()`` give PyTorch's dotted keys:
``Sequential(Linear(4, 8), ReLU())`` has ``0.weight``, ``0.bias``.
"""
from __future__ import annotations

from collections import OrderedDict
from typing import Any, Iterable, Iterator, List, Mapping, Optional, Tuple, Union

from ..tensor import Tensor
from .module import Module, Parameter, _check_name, _checked_index
from ..precision import is_floating

__all__ = ["ModuleList", "Sequential", "ModuleDict", "ParameterList", "ParameterDict"]


class ModuleList(Module):
    """A list of modules whose parameters are found (named ``0``, ``1``, ...), as
    ``torch.nn.ModuleList``: indexing (a slice gives a ModuleList), ``len``, iteration,
    ``append``, ``extend``, ``insert``, ``del``, assignment and ``+=``."""

    def __init__(self, modules: Optional[Iterable[Module]] = None):
        self._items: List[Module] = []
        if modules is not None:
            self.extend(modules)

    def _sync(self) -> None:
        """Rename the attributes to 0..n-1 in list order (after an insert or a delete)."""
        for key in [k for k in vars(self) if k.isdigit()]:
            object.__delattr__(self, key)
        for i, module in enumerate(self._items):
            object.__setattr__(self, str(i), module)

    @staticmethod
    def _checked(module: Any) -> Module:
        if not isinstance(module, Module):
            raise TypeError(f"ModuleList holds Modules, got {type(module).__name__}")
        return module

    def append(self, module: Module) -> "ModuleList":
        self._items.append(self._checked(module))
        object.__setattr__(self, str(len(self._items) - 1), module)
        return self

    def extend(self, modules: Iterable[Module]) -> "ModuleList":
        if isinstance(modules, Module) and not isinstance(modules, ModuleList):
            raise TypeError(f"ModuleList.extend takes an iterable of Modules, got one "
                            f"{type(modules).__name__}; use append")
        for module in list(modules):
            self.append(module)
        return self

    def insert(self, index: int, module: Module) -> None:
        self._items.insert(index, self._checked(module))
        self._sync()

    def pop(self, index: int = -1) -> Module:
        module = self._items.pop(index)
        self._sync()
        return module

    def __getitem__(self, index: Union[int, slice]) -> Any:
        if isinstance(index, slice):
            return type(self)(self._items[index])
        return self._items[_checked_index(index, len(self._items), type(self).__name__)]

    def __setitem__(self, index: int, module: Module) -> None:
        i = _checked_index(index, len(self._items), type(self).__name__)
        self._items[i] = self._checked(module)
        object.__setattr__(self, str(i), module)

    def __delitem__(self, index: Union[int, slice]) -> None:
        if isinstance(index, slice):
            del self._items[index]
        else:
            del self._items[_checked_index(index, len(self._items), type(self).__name__)]
        self._sync()

    def __iadd__(self, modules: Iterable[Module]) -> "ModuleList":
        return self.extend(modules)

    def __add__(self, other: Iterable[Module]) -> "ModuleList":
        return type(self)(list(self._items) + list(other))

    def __len__(self) -> int:
        return len(self._items)

    def __iter__(self) -> Iterator[Module]:
        return iter(list(self._items))

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError("ModuleList has no forward: iterate over it in your own "
                                  "forward (for layer in self.layers: x = layer(x)), or use "
                                  "nn.Sequential")


class _Keyed(Module):
    """Items stored as attributes under their keys, in the order of ``_keys``."""

    _kind = "module"

    def _check_value(self, value: Any) -> Any:
        if not isinstance(value, Module):
            raise TypeError(f"{type(self).__name__} holds Modules, got {type(value).__name__}")
        return value

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

    def __len__(self) -> int:
        return len(self._keys)


class Sequential(_Keyed):
    """Modules applied one after the other: ``Sequential(a, b, c)(x) == c(b(a(x)))``.

    ``Sequential(OrderedDict([("fc", Linear(4, 8)), ("act", ReLU())]))`` names them. Indexing
    gives a module (a slice gives a Sequential); ``append``, ``extend``, ``insert``, ``pop``,
    ``del`` and item assignment change it in place (as PyTorch, ``insert`` and ``del`` renumber
    the keys 0..n-1).
    """

    def __init__(self, *modules: Any):
        self._keys: List[str] = []
        if len(modules) == 1 and isinstance(modules[0], OrderedDict):
            for key, module in modules[0].items():
                self._put(key, module)
        else:
            for i, module in enumerate(modules):
                self._put(str(i), module)

    def forward(self, x: Any) -> Any:
        for _, module in self._pairs():
            x = module(x)
        return x

    def __getitem__(self, index: Union[int, slice]) -> Any:
        pairs = self._pairs()
        if isinstance(index, slice):
            return type(self)(OrderedDict(pairs[index]))
        return pairs[_checked_index(index, len(pairs), "Sequential")][1]

    def __setitem__(self, index: int, module: Module) -> None:
        key = self._keys[_checked_index(index, len(self._keys), "Sequential")]
        self._put(key, module)

    def __delitem__(self, index: Union[int, slice]) -> None:
        modules = [m for _, m in self._pairs()]
        if isinstance(index, slice):
            del modules[index]
        else:
            del modules[_checked_index(index, len(modules), "Sequential")]
        self._rebuild((str(i), m) for i, m in enumerate(modules))

    def __iter__(self) -> Iterator[Module]:
        return iter([m for _, m in self._pairs()])

    def append(self, module: Module) -> "Sequential":
        self._put(str(len(self._keys)), module)
        return self

    def extend(self, modules: Iterable[Module]) -> "Sequential":
        for module in list(modules):
            self.append(module)
        return self

    def insert(self, index: int, module: Module) -> "Sequential":
        modules = [m for _, m in self._pairs()]
        if not -len(modules) <= index <= len(modules):
            raise IndexError(f"Sequential.insert: index {index} is out of range for length "
                             f"{len(modules)}")
        modules.insert(index, self._check_value(module))
        self._rebuild((str(i), m) for i, m in enumerate(modules))
        return self

    def pop(self, index: int = -1) -> Module:
        module = self[index]
        del self[index]
        return module

    def __add__(self, other: "Sequential") -> "Sequential":
        if not isinstance(other, Sequential):
            raise TypeError(f"Sequential + {type(other).__name__}: add another Sequential")
        return type(self)(*list(self), *list(other))


class ModuleDict(_Keyed):
    """A dict of modules (string keys), registered so their parameters are found:
    ``ModuleDict({"enc": Linear(4, 4)})["enc"]``. Keys keep their insertion order."""

    def __init__(self, modules: Optional[Union[Mapping[str, Module],
                                               Iterable[Tuple[str, Module]]]] = None):
        self._keys: List[str] = []
        if modules is not None:
            self.update(modules)

    def __getitem__(self, key: str) -> Module:
        if key not in self._keys:
            raise KeyError(f"{type(self).__name__} has no key {key!r}; keys: {self._keys}")
        return self.__dict__[key]

    def __setitem__(self, key: str, value: Any) -> None:
        self._put(key, value)

    def __delitem__(self, key: str) -> None:
        self[key]                                   # KeyError with the keys if absent
        self._keys.remove(key)
        object.__delattr__(self, key)

    def __contains__(self, key: object) -> bool:
        return key in self._keys

    def __iter__(self) -> Iterator[str]:
        return iter(list(self._keys))

    def keys(self) -> List[str]:
        return list(self._keys)

    def values(self) -> List[Any]:
        return [value for _, value in self._pairs()]

    def items(self) -> List[Tuple[str, Any]]:
        return self._pairs()

    def pop(self, key: str) -> Any:
        value = self[key]
        del self[key]
        return value

    def clear(self) -> None:
        self._rebuild([])

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


class ParameterDict(ModuleDict):
    """A dict of Parameters (a Tensor is wrapped into a Parameter, as PyTorch does)."""

    _kind = "parameter"

    def _check_value(self, value: Any) -> Any:
        return _as_parameter(value, type(self).__name__)


class ParameterList(_Keyed):
    """A list of Parameters (named ``0``, ``1``, ...); Tensors are wrapped into Parameters."""

    _kind = "parameter"

    def __init__(self, values: Optional[Iterable[Any]] = None):
        self._keys: List[str] = []
        if values is not None:
            self.extend(values)

    def _check_value(self, value: Any) -> Any:
        return _as_parameter(value, type(self).__name__)

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
