"""``Module`` and ``Parameter``: the classes that hold a model's weights.

A ``Parameter`` is a leaf ``Tensor`` that requires a gradient. A ``Module`` finds its
parameters and sub-modules by looking at its attributes (lists of modules go in a
``ModuleList``), so ``named_parameters()`` gives PyTorch-style dotted keys such as
``blocks.0.attn.q_proj.weight`` and state dicts move between tinyattn and PyTorch. Tensors
that are state but not trained (running statistics, fixed tables) are *buffers*:
``register_buffer(name, tensor, persistent=True)``; they move with ``.to()``, are saved in
the state dict when persistent, and are never in ``parameters()``.

The API follows ``torch.nn.Module`` (docs/nn.md#modules). Deliberate differences:
- ``super().__init__()`` is optional: a module's registries are created on first use.
- ``load_state_dict`` also takes a state dict that names a tied weight once (tinyattn's
  checkpoints before tied weights were listed under every name, as torch lists them).
"""
from __future__ import annotations

from collections import OrderedDict
from collections.abc import MutableMapping
from types import MappingProxyType
from typing import (Any, Callable, Dict, Iterable, Iterator, List, NamedTuple, Optional, Set,
                    Tuple)

import numpy as np

from ..precision import get_default_dtype

from .. import backend
from ..autograd import set_current_module
from ..tensor import Tensor, normalize_dtype, tensor
from ..precision import is_floating
from ..printing import Size
from . import module_hooks

__all__ = ["Parameter", "Buffer", "Module", "StateDictKeyError", "StateDictShapeError"]


_UNINITIALIZED = ("UninitializedParameter", "UninitializedBuffer")   # nn/lazy.py


class Parameter(Tensor):
    """A trainable tensor: a leaf with ``requires_grad=True``. Like ``torch.nn.Parameter`` it
    shares the memory of the tensor (or array) it is made from and keeps its dtype."""

    def __init__(self, data: Any = None, requires_grad: bool = True):
        if data is None:
            data = np.zeros((0,), dtype=get_default_dtype())
        array = data._data if isinstance(data, Tensor) else data
        if not hasattr(array, "dtype"):                 # a list or a number
            array = tensor(array)._data
        elif isinstance(array, np.generic):
            array = np.asarray(array)
        self._data = array
        if requires_grad:
            self.requires_grad_(True)

    def __repr__(self) -> str:
        return "Parameter containing:\n" + super().__repr__()


class _BufferMeta(type):
    def __instancecheck__(cls, instance: Any) -> bool:
        return isinstance(instance, Tensor) and getattr(instance, "_is_buffer", False)


class Buffer(metaclass=_BufferMeta):
    """``nn.Buffer(tensor, persistent=True)``, as torch's: a tensor marked so that assigning
    it to a module attribute (``self.mask = nn.Buffer(m)``) registers it as a buffer
    (``register_buffer(name, tensor, persistent)``). It is the tensor itself, detached."""

    def __new__(cls, data: Any = None, *, persistent: bool = True) -> Any:  # type: ignore[misc]
        if data is None:
            data = tensor(np.zeros((0,), dtype=get_default_dtype()))
        marked = data.detach().requires_grad_(data.requires_grad)
        marked.persistent = persistent
        marked._is_buffer = True
        return marked


class StateDictKeyError(KeyError, RuntimeError):
    """``load_state_dict(strict=True)`` with missing or unexpected keys. A KeyError (as
    tinyattn always raised) and a RuntimeError (as PyTorch raises)."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


class StateDictShapeError(ValueError, RuntimeError):
    """``load_state_dict`` with an array whose shape differs from the model's."""


def _key_messages(missing: List[str], unexpected: List[str]) -> List[str]:
    """torch's lines for keys that do not match (missing first, as torch inserts them)."""
    msgs = []
    if missing:
        msgs.append("Missing key(s) in state_dict: "
                    + ", ".join(f'"{k}"' for k in missing) + ". ")
    if unexpected:
        msgs.append("Unexpected key(s) in state_dict: "
                    + ", ".join(f'"{k}"' for k in unexpected) + ". ")
    return msgs


def _raise_load_errors(module: Any, key_msgs: List[str], other_msgs: List[str]) -> None:
    """torch's message, ``Error(s) in loading state_dict for Linear:`` and one tab-indented
    line per problem; a StateDictKeyError when keys do not match, a StateDictShapeError when
    only shapes differ (both RuntimeErrors, as torch's)."""
    text = (f"Error(s) in loading state_dict for {type(module).__name__}:"
            + "".join("\n\t" + m for m in key_msgs + other_msgs))
    if key_msgs:
        raise StateDictKeyError(text + "\n(strict=False loads the keys that match)")
    if any(m.startswith("size mismatch") for m in other_msgs):
        raise StateDictShapeError(text)
    raise RuntimeError(text)


class _ExtraState:
    """A module's ``_extra_state`` entry while state dicts are built or loaded."""

    def __init__(self, module: Any):
        self.module = module


class IncompatibleKeys(NamedTuple):
    """What ``load_state_dict`` returns, as PyTorch's: keys it could not match."""

    missing_keys: List[str]
    unexpected_keys: List[str]

    def __repr__(self) -> str:
        # torch prints this line when every key matched (``print(model.load_state_dict(sd))``
        # in notebooks), and its class is ``_IncompatibleKeys`` otherwise.
        if not self.missing_keys and not self.unexpected_keys:
            return "<All keys matched successfully>"
        return (f"_IncompatibleKeys(missing_keys={self.missing_keys!r}, "
                f"unexpected_keys={self.unexpected_keys!r})")

    __str__ = __repr__


def _check_name(kind: str, name: Any) -> None:
    if not isinstance(name, str):
        raise TypeError(f"{kind} name should be a string, got {type(name).__name__}")
    if name == "" or "." in name:
        raise KeyError(f"{kind} name can't be empty or contain '.', got {name!r}")


class _OwnMembers(MutableMapping):
    """``module._parameters``, ``_buffers``, ``_modules``: PyTorch's dicts of a module's own
    members (d2l's ``init_seq2seq`` reads ``gru._parameters[name]``), as a live view of the
    attributes tinyattn keeps them in. Writes go through the module's own checks."""

    def __init__(self, module: "Module", kind: str) -> None:
        self._module, self._kind = module, kind

    def _names(self) -> List[str]:
        module = self._module
        if self._kind == "buffers":
            return [n for n, _ in Module._own_buffers(module)]
        wanted = Parameter if self._kind == "parameters" else Module
        return [n for n, v in vars(module).items() if isinstance(v, wanted)]

    def __getitem__(self, name: str) -> Any:
        if name not in self._names():
            raise KeyError(name)
        return self._module.__dict__[name]

    def __setitem__(self, name: str, value: Any) -> None:
        module = self._module
        if name in self._names() or value is None:
            setattr(module, name, value)
        elif self._kind == "parameters":
            module.register_parameter(name, value)
        elif self._kind == "buffers":
            module.register_buffer(name, value)
        else:
            module.add_module(name, value)

    def __delitem__(self, name: str) -> None:
        if name not in self._names():
            raise KeyError(name)
        delattr(self._module, name)

    def __iter__(self) -> Iterator[str]:
        return iter(self._names())

    def __len__(self) -> int:
        return len(self._names())

    def __repr__(self) -> str:
        return repr(dict(self.items()))


class Module:
    """Base class of every layer and model. Subclasses set attributes in ``__init__`` and
    implement ``forward``; calling the module calls ``forward``."""

    training: bool = True

    def __init__(self) -> None:
        """Optional (tinyattn's layers do not call it); PyTorch code calls it, which is fine."""

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        previous = set_current_module(self)    # ops made here know their module (viz.explore)
        try:
            d = self.__dict__
            if d.get("_forward_hooks") or d.get("_forward_pre_hooks") or \
                    d.get("_backward_hooks") or d.get("_backward_pre_hooks"):
                return module_hooks.call_with_hooks(self, self.forward, args, kwargs)
            return self.forward(*args, **kwargs)
        finally:
            set_current_module(previous)

    # ---------------------------------------------------------------- hooks (module_hooks.py)
    # Empty until a hook is registered (then the instance holds its own OrderedDict).
    _forward_hooks: Any = MappingProxyType({})
    _forward_pre_hooks: Any = MappingProxyType({})
    _backward_hooks: Any = MappingProxyType({})
    _backward_pre_hooks: Any = MappingProxyType({})

    def register_forward_pre_hook(self, hook: Callable[..., Any], *, prepend: bool = False,
                                  with_kwargs: bool = False) -> "module_hooks.RemovableHandle":
        """``hook(module, args)`` (``hook(module, args, kwargs)`` with ``with_kwargs``) before
        each forward; it may return new args (new ``(args, kwargs)``)."""
        return module_hooks.register(self, "forward_pre_hooks", hook, prepend, with_kwargs)

    def register_forward_hook(self, hook: Callable[..., Any], *, prepend: bool = False,
                              with_kwargs: bool = False, always_call: bool = False
                              ) -> "module_hooks.RemovableHandle":
        """``hook(module, args, output)`` after each forward; it may return a new output."""
        return module_hooks.register(self, "forward_hooks", hook, prepend, with_kwargs,
                                     always_call)

    def register_full_backward_pre_hook(self, hook: Callable[..., Any], prepend: bool = False
                                        ) -> "module_hooks.RemovableHandle":
        """``hook(module, grad_output)`` when the gradients of the outputs are known; it may
        return a replacement grad_output."""
        return module_hooks.register(self, "backward_pre_hooks", hook, prepend)

    def register_full_backward_hook(self, hook: Callable[..., Any], prepend: bool = False
                                    ) -> "module_hooks.RemovableHandle":
        """``hook(module, grad_input, grad_output)`` when the gradients of the module's
        positional tensor arguments are known; it may return a replacement grad_input."""
        return module_hooks.register(self, "backward_hooks", hook, prepend)

    def compile(self, *args: Any, **kwargs: Any) -> None:
        """torch's Module.compile(): compiles the module's call in place. tinyattn runs every
        op eagerly, so after torch's argument checks nothing changes (nn/compiled.py)."""
        from .compiled import compile as compile_
        compile_(self, *args, **kwargs)

    # state-dict hooks (module_hooks.py runs them), as torch's
    _state_dict_pre_hooks: Any = MappingProxyType({})
    _state_dict_hooks: Any = MappingProxyType({})
    _load_state_dict_pre_hooks: Any = MappingProxyType({})
    _load_state_dict_post_hooks: Any = MappingProxyType({})
    _version: int = 1

    def register_state_dict_pre_hook(self, hook: Callable[..., Any]
                                     ) -> "module_hooks.RemovableHandle":
        """``hook(module, prefix, keep_vars)`` before ``state_dict`` saves this module."""
        return module_hooks.register(self, "state_dict_pre_hooks", hook)

    def register_state_dict_post_hook(self, hook: Callable[..., Any]
                                      ) -> "module_hooks.RemovableHandle":
        """``hook(module, state_dict, prefix, local_metadata)`` after ``state_dict`` saved
        this module and its children; it edits ``state_dict`` in place and returns None."""
        return module_hooks.register(self, "state_dict_hooks", hook,
                                     flag="state_dict_hooks_public")

    def _register_state_dict_hook(self, hook: Callable[..., Any]
                                  ) -> "module_hooks.RemovableHandle":
        """torch's older form: as ``register_state_dict_post_hook``, and a value it returns
        replaces the state dict this module's ``state_dict`` call returns."""
        return module_hooks.register(self, "state_dict_hooks", hook)

    def register_load_state_dict_pre_hook(self, hook: Callable[..., Any]
                                          ) -> "module_hooks.RemovableHandle":
        """``hook(module, state_dict, prefix, local_metadata, strict, missing_keys,
        unexpected_keys, error_msgs)`` before ``load_state_dict`` loads this module (it may
        rename or change the entries of ``state_dict``, a copy of the caller's)."""
        return module_hooks.register(self, "load_state_dict_pre_hooks", hook,
                                     flag="load_state_dict_pre_hooks_with_module")

    def _register_load_state_dict_pre_hook(self, hook: Callable[..., Any],
                                           with_module: bool = False
                                           ) -> "module_hooks.RemovableHandle":
        """torch's older form: the hook gets the arguments without the module unless
        ``with_module``."""
        return module_hooks.register(self, "load_state_dict_pre_hooks", hook,
                                     flag="load_state_dict_pre_hooks_with_module"
                                     if with_module else None)

    def register_load_state_dict_post_hook(self, hook: Callable[..., Any]
                                           ) -> "module_hooks.RemovableHandle":
        """``hook(module, incompatible_keys)`` after ``load_state_dict`` loaded; it may edit
        ``incompatible_keys.missing_keys`` / ``unexpected_keys`` in place (before the strict
        check) and must return None."""
        return module_hooks.register(self, "load_state_dict_post_hooks", hook)

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError(f"{type(self).__name__} must implement forward()")

    def __setstate__(self, state: Any) -> None:
        """Unpickling: tinyattn keeps a module's members as plain attributes. PyTorch pickles
        a whole module (``torch.save(model)``) as its ``_parameters``/``_buffers``/``_modules``
        dicts, which tinyattn's classes cannot take: the module would come back without its
        layers. Refuse that layout with what to do instead."""
        if isinstance(state, dict) and isinstance(state.get("_modules"), dict) \
                and isinstance(state.get("_parameters"), dict):
            import pickle
            raise pickle.UnpicklingError(
                f"load: this file holds a whole {type(self).__name__} module pickled by "
                f"PyTorch (torch.save(model)); tinyattn cannot rebuild PyTorch's module "
                f"objects. In PyTorch save its weights, torch.save(model.state_dict(), path), "
                f"then build the model here and call "
                f"model.load_state_dict(torch.load(path)).")
        slots = None
        if isinstance(state, tuple) and len(state) == 2:      # (dict, slots), as pickle
            state, slots = state
        if state:
            self.__dict__.update(state)
        for key, value in (slots or {}).items():
            object.__setattr__(self, key, value)

    # ---------------------------------------------------------------- registration
    def _buffer_flags(self) -> Dict[str, bool]:
        """name -> persistent, for every registered buffer (created on first use)."""
        flags = self.__dict__.get("_buffer_persistence")
        if flags is None:
            flags = {}
            object.__setattr__(self, "_buffer_persistence", flags)
        return flags

    def __setattr__(self, name: str, value: Any) -> None:
        """PyTorch's rules: a parameter can only be replaced by a Parameter (or None), a
        buffer by a Tensor (or None); a Parameter or a Module assigned to a buffer's name
        takes its place."""
        if isinstance(value, Tensor) and getattr(value, "_is_buffer", False):
            self.__dict__.pop(name, None)       # torch: an nn.Buffer takes the name over
            self.register_buffer(name, value, persistent=getattr(value, "persistent", True))
            return
        current = self.__dict__.get(name)
        flags = self.__dict__.get("_buffer_persistence") or {}
        if isinstance(current, Parameter) and value is not None \
                and not isinstance(value, Parameter):
            raise TypeError(
                f"cannot assign {type(value).__name__} as parameter '{name}' of "
                f"{type(self).__name__} (a Parameter or None expected): the parameter would "
                f"silently stop being trained. Wrap it, self.{name} = nn.Parameter(value), or "
                f"change the values in place: with tinyattn.no_grad(): "
                f"self.{name}.copy_(value)")
        if name in flags:
            if isinstance(value, (Parameter, Module)):
                del flags[name]                 # it becomes a parameter / sub-module
            elif value is not None and not isinstance(value, Tensor):
                raise TypeError(f"cannot assign {type(value).__name__} as buffer '{name}' of "
                                f"{type(self).__name__} (a Tensor or None expected)")
        object.__setattr__(self, name, value)

    def __delattr__(self, name: str) -> None:
        (self.__dict__.get("_buffer_persistence") or {}).pop(name, None)
        object.__delattr__(self, name)

    def register_buffer(self, name: str, tensor: Optional[Tensor],
                        persistent: bool = True) -> None:
        """Keep ``tensor`` as state that is not trained: moved by ``.to()``, saved in the state
        dict when ``persistent``, never in ``parameters()``. Read it as ``self.<name>``."""
        _check_name("buffer", name)
        if name in self.__dict__ and name not in self._buffer_flags():
            raise KeyError(f"attribute '{name}' already exists on {type(self).__name__}; "
                           f"delete it first or choose another buffer name")
        if hasattr(type(self), name):
            raise KeyError(f"'{name}' is a method or class attribute of "
                           f"{type(self).__name__}; choose another buffer name")
        if tensor is not None and not isinstance(tensor, Tensor):
            raise TypeError(f"cannot assign {type(tensor).__name__} object to buffer '{name}' "
                            f"(a Tensor or None required); wrap arrays with tinyattn.tensor()")
        if isinstance(tensor, Parameter):
            raise TypeError(f"register_buffer('{name}', ...) got a Parameter: use "
                            f"register_parameter for trainable tensors")
        self._buffer_flags()[name] = bool(persistent)
        object.__setattr__(self, name, tensor)

    def register_parameter(self, name: str, param: Optional[Parameter]) -> None:
        """``self.<name> = param``, checked as PyTorch does (a Parameter or None)."""
        _check_name("parameter", name)
        if param is not None and not isinstance(param, Parameter):
            raise TypeError(f"cannot assign {type(param).__name__} object to parameter "
                            f"'{name}' (a Parameter or None required); wrap it: "
                            f"nn.Parameter(tensor)")
        current = self.__dict__.get(name, None)
        if (name in self.__dict__ and current is not None and not isinstance(current, Parameter)) \
                or hasattr(type(self), name):
            raise KeyError(f"attribute '{name}' already exists on {type(self).__name__}")
        setattr(self, name, param)

    def add_module(self, name: str, module: Optional["Module"]) -> None:
        """``self.<name> = module``, checked as PyTorch does."""
        _check_name("module", name)
        if module is not None and not isinstance(module, Module):
            raise TypeError(f"{type(module).__name__} is not a Module subclass")
        if hasattr(type(self), name) or (name in self.__dict__ and not isinstance(
                self.__dict__[name], (Module, type(None)))):
            raise KeyError(f"attribute '{name}' already exists on {type(self).__name__}")
        setattr(self, name, module)

    register_module = add_module

    @property
    def _parameters(self) -> _OwnMembers:
        return _OwnMembers(self, "parameters")

    @property
    def _buffers(self) -> _OwnMembers:
        return _OwnMembers(self, "buffers")

    @property
    def _modules(self) -> _OwnMembers:
        return _OwnMembers(self, "modules")

    # ---------------------------------------------------------------- traversal
    def named_children(self) -> Iterator[Tuple[str, "Module"]]:
        """The direct sub-modules, each once, in the order they were assigned."""
        seen: Set[int] = set()
        for name, value in list(vars(self).items()):
            if isinstance(value, Module) and id(value) not in seen:
                seen.add(id(value))
                yield name, value

    def children(self) -> Iterator["Module"]:
        for _, module in self.named_children():
            yield module

    def named_modules(self, memo: Optional[Set[int]] = None, prefix: str = "",
                      remove_duplicate: bool = True) -> Iterator[Tuple[str, "Module"]]:
        """This module and every sub-module (depth first, parents before children), each once
        unless ``remove_duplicate=False``."""
        if memo is None:
            memo = set()
        if remove_duplicate:
            if id(self) in memo:
                return
            memo.add(id(self))
        yield prefix, self
        for name, value in list(vars(self).items()):
            if isinstance(value, Module):
                yield from value.named_modules(memo, f"{prefix}.{name}" if prefix else name,
                                               remove_duplicate)

    def modules(self) -> Iterator["Module"]:
        for _, module in self.named_modules():
            yield module

    def get_submodule(self, target: str) -> "Module":
        """The sub-module at a dotted path, e.g. ``model.get_submodule("blocks.0.attn")``."""
        module: Module = self
        for part in target.split(".") if target else []:
            child = module.__dict__.get(part)
            if not isinstance(child, Module):
                raise AttributeError(f"{type(module).__name__} has no sub-module '{part}' "
                                     f"(looking for '{target}')")
            module = child
        return module

    def set_submodule(self, target: str, module: "Module", strict: bool = False) -> None:
        """Put ``module`` at a dotted path, ``model.set_submodule("1.0", nn.Tanh())``
        (torch's): the modules on the way must exist; the last name may be new unless
        ``strict``, and an existing attribute there must be a module."""
        if target == "":
            raise ValueError("Cannot set the submodule without a target name!")
        if not isinstance(module, Module):
            raise ValueError(f"`module` is not an nn.Module, found {type(module)}")
        *path, last = target.split(".")
        owner: Module = self
        for part in path:
            if not hasattr(owner, part):
                raise AttributeError(f"{type(owner).__name__} has no attribute `{part}`")
            child = getattr(owner, part)
            if not isinstance(child, Module):
                raise AttributeError(f"`{part}` is not an nn.Module")
            owner = child
        if not hasattr(owner, last):
            if strict:
                raise AttributeError(f"{type(owner).__name__} has no attribute `{last}`")
        elif not isinstance(getattr(owner, last), Module):
            raise AttributeError(f"`{last}` is not an nn.Module")
        setattr(owner, last, module)

    def get_parameter(self, target: str) -> Parameter:
        """The parameter at a dotted path, ``model.get_parameter("0.bias")`` (torch's)."""
        module_path, _, name = target.rpartition(".")
        module = self.get_submodule(module_path)
        value = module.__dict__.get(name)
        if not isinstance(value, Parameter):
            raise AttributeError(f"`{name}` is not an nn.Parameter" if name in module.__dict__
                                 else f"{type(module).__name__} has no attribute `{name}`")
        return value

    def get_buffer(self, target: str) -> Tensor:
        """The buffer at a dotted path, ``model.get_buffer("bn.running_mean")`` (torch's)."""
        module_path, _, name = target.rpartition(".")
        module = self.get_submodule(module_path)
        if name not in dict(Module._own_buffers(module)):
            raise AttributeError(f"`{name}` is not a buffer" if name in module.__dict__
                                 else f"{type(module).__name__} has no attribute `{name}`")
        return module.__dict__[name]

    def _named_members(self, pick: Callable[["Module"], Iterable[Tuple[str, Any]]],
                       prefix: str, recurse: bool, remove_duplicate: bool
                       ) -> Iterator[Tuple[str, Any]]:
        seen: Set[int] = set()
        modules = self.named_modules(prefix=prefix, remove_duplicate=remove_duplicate) \
            if recurse else [(prefix, self)]
        for module_name, module in modules:
            for name, value in pick(module):
                if remove_duplicate:
                    if id(value) in seen:
                        continue  # a tied weight is listed once, under its first name
                    seen.add(id(value))
                yield (f"{module_name}.{name}" if module_name else name), value

    @staticmethod
    def _own_parameters(module: "Module") -> List[Tuple[str, Parameter]]:
        return [(n, v) for n, v in vars(module).items() if isinstance(v, Parameter)]

    @staticmethod
    def _own_buffers(module: "Module", persistent_only: bool = False
                     ) -> List[Tuple[str, Tensor]]:
        flags = module.__dict__.get("_buffer_persistence") or {}
        return [(n, module.__dict__[n]) for n, keep in flags.items()
                if isinstance(module.__dict__.get(n), Tensor) and (keep or not persistent_only)]

    def named_parameters(self, prefix: str = "", recurse: bool = True,
                         remove_duplicate: bool = True) -> Iterator[Tuple[str, Parameter]]:
        """(dotted name, Parameter) pairs; a shared Parameter once, under its first name."""
        return self._named_members(self._own_parameters, prefix, recurse, remove_duplicate)

    def parameters(self, recurse: bool = True) -> Iterator[Parameter]:
        """A generator over the parameters, as PyTorch's: it is used up by one pass, so write
        ``params = list(model.parameters())`` to go over them twice."""
        for _, p in self.named_parameters(recurse=recurse):
            yield p

    def named_buffers(self, prefix: str = "", recurse: bool = True,
                      remove_duplicate: bool = True) -> Iterator[Tuple[str, Tensor]]:
        return self._named_members(self._own_buffers, prefix, recurse, remove_duplicate)

    def buffers(self, recurse: bool = True) -> Iterator[Tensor]:
        for _, b in self.named_buffers(recurse=recurse):
            yield b

    def num_parameters(self) -> int:
        return sum(p.numel() for p in self.parameters()
                   if type(p).__name__ not in _UNINITIALIZED)   # a lazy layer's: none yet

    def apply(self, fn: Callable[["Module"], Any]) -> "Module":
        """Call ``fn`` on every sub-module, then on this module (PyTorch's order); returns self.
        For custom initialisation: ``model.apply(init_weights)``."""
        for child in list(self.children()):
            child.apply(fn)
        fn(self)
        return self

    # ---------------------------------------------------------------- modes and devices
    def train(self, mode: bool = True) -> "Module":
        if not isinstance(mode, bool):
            raise ValueError(f"train(mode): mode is expected to be a bool, got {mode!r}")
        for module in self.modules():
            module.training = mode
        return self

    def eval(self) -> "Module":
        return self.train(False)

    def requires_grad_(self, requires_grad: bool = True) -> "Module":
        """Switch gradients on or off for every parameter (e.g. to freeze a part)."""
        for p in self.parameters():
            p.requires_grad_(requires_grad)
        return self

    def share_memory(self) -> "Module":
        """Every parameter and buffer into shared memory (``Tensor.share_memory_``), so the
        processes this module is sent to train the same numbers (torch's Hogwild pattern)."""
        for tensor in list(self.parameters()) + list(self.buffers()):
            tensor.share_memory_()
        return self

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Forget every parameter's gradient: None (default, as torch) or zeros in place."""
        for p in self.parameters():
            if set_to_none or p.grad is None:
                p.grad = None
            else:
                p.grad.zero_()

    def to(self, *args: Any, device: Any = None, dtype: Any = None,
           non_blocking: bool = False) -> "Module":
        """Move and/or cast every parameter and buffer in place, as ``torch.nn.Module.to``:
        ``.to("cuda")``, ``.to(tinyattn.float64)``, ``.to("cuda", "float64")``,
        ``.to(other_tensor)`` or the keywords. Only floating tensors change dtype (token-id
        buffers stay integers); gradients move and cast with their parameters. Returns self."""
        for arg in args:
            if isinstance(arg, Tensor):
                device, dtype = arg.device, arg.dtype
            elif _is_device(arg):
                device = arg
            else:
                dtype = arg
        device = None if device is None else backend.normalize_device(device)
        dtype = normalize_dtype(dtype)
        if dtype is not None and not is_floating(dtype):
            raise TypeError(f"Module.to only accepts floating-point dtypes, got {dtype}; "
                            f"integer tensors (token ids) are converted one by one")
        for module in self.modules():
            note = getattr(module, "_note_lazy_move", None)
            if note is not None:              # a lazy module before its first forward
                note(device, dtype)
            for value in list(vars(module).values()):
                if isinstance(value, Tensor) and not getattr(value, "_is_uninitialized", False):
                    value._data = _moved(value._data, device, dtype)
                    if value._grad is not None:
                        value._grad._data = _moved(value._grad._data, device, dtype)
        return self

    def to_empty(self, *, device: Any, recurse: bool = True) -> "Module":
        """Every parameter and buffer replaced by an uninitialised tensor of its shape and
        dtype on ``device`` (the same Parameter objects, as torch's); initialise them
        afterwards (``reset_parameters`` or ``load_state_dict``). Returns self."""
        device = backend.normalize_device(device)
        xp = backend.array_module_for(device)
        for module in (self.modules() if recurse else [self]):
            for value in list(vars(module).values()):
                if isinstance(value, Tensor) and not getattr(value, "_is_uninitialized", False):
                    value._data = xp.empty(value.shape, dtype=value._data.dtype)
                    value._grad = None
        return self

    def cpu(self) -> "Module":
        return self.to("cpu")

    def cuda(self) -> "Module":
        return self.to("cuda")

    def double(self) -> "Module":
        return self.to(np.float64)

    def float(self) -> "Module":
        return self.to(np.float32)

    def half(self) -> "Module":
        return self.to(np.float16)

    def bfloat16(self) -> "Module":
        return self.to("bfloat16")

    def type(self, dst_type: Any) -> "Module":  # noqa: A003 - torch's name
        """``Module.type(dst_type)``, as torch's: every parameter and buffer (and gradient)
        cast to ``dst_type`` in place, integer buffers too (unlike ``.to``/``.double()``,
        which change only floating tensors); ``dst_type`` is a dtype or a legacy name such
        as ``'torch.DoubleTensor'``. A dtype that is not floating (or complex) is refused
        while a parameter requires grad, with torch's error. Returns self."""
        from ..tensor.conversion import legacy_type_target  # noqa: PLC0415 - same layer
        device, dtype = legacy_type_target(dst_type)
        device = None if device is None else backend.normalize_device(device)
        dtype = normalize_dtype(dtype)
        tensors = [value for module in self.modules() for value in list(vars(module).values())
                   if isinstance(value, Tensor) and not getattr(value, "_is_uninitialized",
                                                                  False)]
        if not (is_floating(dtype) or np.dtype(dtype).kind == "c") and any(
                t.requires_grad for t in tensors):
            raise RuntimeError("data set to a tensor that requires gradients must be floating "
                               "point or complex dtype (Module.type casts every parameter: "
                               "convert integer buffers one by one instead)")
        for value in tensors:
            for target in (value, value._grad):
                if target is None:
                    continue
                data = target._data if device is None else backend.to_device(target._data,
                                                                                device)
                target._data = data if data.dtype == dtype else data.astype(dtype)
        return self

    def register_backward_hook(self, hook: Callable[..., Any]) -> Any:
        """torch's deprecated non-full backward hook, refused loudly rather than imitated:
        torch passes it the gradients of the inputs of the *last autograd node* inside the
        module (for Linear, AddmmBackward's bias, input and weight.T), a detail of torch's
        own graph that tinyattn's nodes do not reproduce, so the hook would see other
        tensors than under torch."""
        raise RuntimeError(
            f"{type(self).__name__}.register_backward_hook (torch's deprecated non-full "
            f"backward hook) is not supported by tinyattn: its grad_input holds the gradients "
            f"of the inputs of the last autograd node inside the module (for Linear, torch's "
            f"AddmmBackward0: bias, input, weight.T), which tinyattn's graph does not "
            f"reproduce. Use register_full_backward_hook(hook) instead (hook(module, "
            f"grad_input, grad_output) with the gradients of the module's inputs), as torch's "
            f"own deprecation warning advises")

    # ---------------------------------------------------------------- state
    def _state_items(self) -> List[Tuple[str, Tensor]]:
        """What the state dict holds: for each module, its parameters, then its persistent
        buffers (PyTorch's order); a tensor shared under several names (a tied weight, a
        module used twice) appears under each of them, as in torch's state dict."""
        def own(module: Module) -> List[Tuple[str, Any]]:
            items: List[Tuple[str, Any]] = (self._own_parameters(module)
                                            + self._own_buffers(module, True))
            if type(module).get_extra_state is not Module.get_extra_state:
                items.append(("_extra_state", _ExtraState(module)))   # torch's key, last
            return items
        return list(self._named_members(own, "", True, False))

    def get_extra_state(self) -> Any:
        """Override (with ``set_extra_state``) to keep any picklable value in the state dict
        under ``<prefix>_extra_state``, after the module's parameters and buffers, as torch."""
        raise RuntimeError("Reached a code path in Module.get_extra_state() that should never "
                           "be called: define get_extra_state() in your module to return the "
                           "extra state to save")

    def set_extra_state(self, state: Any) -> None:
        """Receives what ``get_extra_state`` returned, from ``load_state_dict``."""
        raise RuntimeError("Reached a code path in Module.set_extra_state() that should never "
                           "be called: define set_extra_state() in your module to load the "
                           "extra state that get_extra_state() saved")

    def state_dict(self, *, prefix: str = "", keep_vars: bool = False
                   ) -> "OrderedDict[str, Any]":
        """Parameters and persistent buffers keyed by dotted names, as torch's: each value is
        the tensor detached (``keep_vars=True``: the tensor itself), sharing its memory, so
        writing into ``state["fc.weight"]`` writes the parameter. Copy what you keep while
        training goes on (``{k: v.clone() for k, v in model.state_dict().items()}``)."""
        hooked = module_hooks.state_dict_hooks_present(self)
        if hooked:
            module_hooks.run_state_dict_pre_hooks(self, prefix, keep_vars)
        state: "OrderedDict[str, Any]" = OrderedDict()
        for name, value in self._state_items():
            if isinstance(value, _ExtraState):
                state[prefix + name] = value.module.get_extra_state()
                continue
            if type(value).__name__ in _UNINITIALIZED:    # lazy: kept as is, as in torch
                state[prefix + name] = value
                continue
            state[prefix + name] = value if keep_vars else value.detach()
        if hooked:
            state = module_hooks.run_state_dict_post_hooks(self, state, prefix)
        return state

    def load_state_dict(self, state: Dict[str, Any], strict: bool = True,
                        assign: bool = False) -> IncompatibleKeys:
        """Copy arrays into the parameters and buffers. Every check runs before anything is
        written, so a bad state dict leaves the module untouched. Returns the missing and
        unexpected keys (PyTorch's named tuple); with ``strict`` they raise instead."""
        if not hasattr(state, "items"):
            raise TypeError(f"load_state_dict expects a mapping of names to arrays, got "
                            f"{type(state).__name__}")
        hooked = module_hooks.load_hooks_present(self)
        error_msgs: List[str] = []
        if hooked:        # the hooks may edit the state dict: a copy, as torch's
            metadata = getattr(state, "_metadata", None)
            state = state.copy() if hasattr(state, "copy") else OrderedDict(state)
            if metadata is not None:
                state._metadata = metadata
            missing_from_hooks: List[str] = []
            unexpected_from_hooks: List[str] = []
            module_hooks.run_load_pre_hooks(self, state, strict, missing_from_hooks,
                                            unexpected_from_hooks, error_msgs)
        from .lazy import materialize_from_state  # noqa: PLC0415 - lazy.py builds on this
        materialize_from_state(self, state)            # lazy parameters take the state's shape
        targets = dict(self._state_items())
        given = {id(targets[k]) for k in state if k in targets}
        missing = [k for k in targets if k not in state]      # reported as torch reports them
        # a tied weight named once (an older tinyattn checkpoint) is loaded through its other
        # name: strict loading accepts it (torch refuses: a strict extension, docs/pytorch.md)
        tied_once = {k for k in missing if id(targets[k]) in given}
        unexpected = [k for k in state if k not in targets]
        if hooked:
            missing += [k for k in missing_from_hooks if k not in missing]
            unexpected += [k for k in unexpected_from_hooks if k not in unexpected]
        post_hooks = hooked and module_hooks.load_post_hooks_present(self)
        key_msgs = _key_messages([k for k in missing if k not in tied_once], unexpected) \
            if strict and not post_hooks else []
        both_lazy = {k for k in state if k in targets and
                     getattr(state[k], "_is_uninitialized", False) and
                     getattr(targets[k], "_is_uninitialized", False)}   # nothing to copy yet
        for key, value in state.items():
            if key in targets and key not in both_lazy and \
                    not isinstance(targets[key], _ExtraState):
                shape = tuple(np.shape(value._data if isinstance(value, Tensor) else value))
                if shape != targets[key].shape:
                    error_msgs.append(
                        f"size mismatch for {key}: copying a param with shape {Size(shape)} "
                        f"from checkpoint, the shape in current model is "
                        f"{Size(targets[key].shape)}.")
        if key_msgs or error_msgs:
            _raise_load_errors(self, key_msgs, error_msgs)
        owners = _state_owners(self) if assign else {}
        for key, value in state.items():
            if isinstance(targets.get(key), _ExtraState):
                targets[key].module.set_extra_state(value)
            elif key in targets and key not in both_lazy:
                if assign:
                    _assign_into(owners[key], targets[key], value)
                else:
                    _copy_into(targets[key], value)
        result = IncompatibleKeys([k for k in missing if not (strict and k in tied_once)],
                                  unexpected)
        if post_hooks:            # they may clear keys before the strict check, as torch's
            module_hooks.run_load_post_hooks(self, result)
            still_missing = [k for k in result.missing_keys if k not in tied_once]
            if strict and (still_missing or result.unexpected_keys):
                _raise_load_errors(self, _key_messages(still_missing,
                                                       result.unexpected_keys), [])
        return result

    # ---------------------------------------------------------------- display
    def extra_repr(self) -> str:
        return ""

    def _get_name(self) -> str:
        """The class name, as torch's printout uses it."""
        return type(self).__name__

    def __repr__(self) -> str:
        """torch's printout, line for line (learners compare the two): extra_repr's lines,
        then ``(name): child`` for each child, indented by two. The parameter counts are in
        ``summary()`` and ``num_parameters()``, not here (torch prints none)."""
        return self._printout(False)

    def summary(self) -> str:
        """The printout with each module's parameter count: ``Linear(...)  # 6 params``."""
        return self._printout(True)

    def _printout(self, counts: bool) -> str:
        extra = self.extra_repr()
        extra_lines = extra.split("\n") if extra else []
        # Every entry of ``_modules``, a module held twice included (torch's printout walks
        # ``_modules``, not ``named_children()``, which lists each module once).
        child_lines = [f"({name}): " + child._printout(counts).replace("\n", "\n  ")
                       for name, child in list(vars(self).items())
                       if isinstance(child, Module)]
        text = type(self).__name__ + "("
        if len(extra_lines) == 1 and not child_lines:
            text += extra_lines[0]
        elif extra_lines or child_lines:
            text += "\n  " + "\n  ".join(extra_lines + child_lines) + "\n"
        text += ")"
        if counts and Module.num_parameters(self):
            first, _, rest = text.partition("\n")
            text = (f"{first}  # {Module.num_parameters(self):,} params"
                    + ("\n" + rest if rest else ""))
        return text


def _is_device(value: Any) -> bool:
    if not isinstance(value, str):
        return False
    try:
        normalize_dtype(value)
    except TypeError:
        return True
    return False


def _moved(data: Any, device: Optional[str], dtype: Optional[np.dtype]) -> Any:
    if device is not None:
        data = backend.to_device(data, device)
    if dtype is not None and is_floating(data.dtype) and data.dtype != dtype:
        data = data.astype(dtype)
    return data


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


def _state_owners(root: Module) -> Dict[str, Tuple[Module, str]]:
    """state-dict key -> (module, attribute name), for ``load_state_dict(assign=True)``."""
    owners: Dict[str, Tuple[Module, str]] = {}
    for prefix, module in root.named_modules(remove_duplicate=False):
        for name, _ in Module._own_parameters(module) + Module._own_buffers(module, True):
            owners[f"{prefix}.{name}" if prefix else name] = (module, name)
    return owners


def _assign_into(owner: Tuple[Module, str], target: Tensor, value: Any) -> None:
    """``assign=True``: the state dict's tensor itself takes the place of ``target`` (its
    dtype and device kept, as torch's); a parameter stays a Parameter with the module's
    requires_grad."""
    module, name = owner
    if not isinstance(value, Tensor):
        value = tensor(np.asarray(backend.to_host(value)))
    if isinstance(target, Parameter):
        if not isinstance(value, Parameter):
            value = Parameter(value.detach(), requires_grad=target.requires_grad)
        object.__setattr__(module, name, value)
    else:
        object.__setattr__(module, name, value)


def _checked_index(index: Any, length: int, owner: str) -> int:
    if isinstance(index, bool) or not isinstance(index, (int, np.integer)):
        raise TypeError(f"{owner} indices must be integers or slices, got "
                        f"{type(index).__name__}")
    if not -length <= index < length:
        raise IndexError(f"index {index} is out of range for a {owner} of length {length}")
    return int(index) % length

