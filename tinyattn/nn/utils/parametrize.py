"""``tinyattn.nn.utils.parametrize``: PyTorch's parametrizations of a module's tensors.

``register_parametrization(module, "weight", p)`` makes ``module.weight`` a computed value,
``p(original)``, recomputed on each read (or once per ``with cached():`` block), so that a
constraint holds (symmetric, orthogonal, normalised...) while the optimiser trains the
unconstrained ``original``. As torch's:

- the module's class becomes ``Parametrized<Class>`` (a subclass, so ``isinstance`` holds)
  with a property for the name; ``module.parametrizations[name]`` is a ``ParametrizationList``
  holding the parametrizations (applied in order) and the tensor(s) they start from:
  ``original`` (the same Parameter object as before), or ``original0``, ``original1``...
  when the first parametrization's ``right_inverse`` returns several tensors. So the state
  dict key of a parametrized weight is ``parametrizations.weight.original``.
- at registration ``original`` is set to ``right_inverse(weight)`` when the parametrization
  has one (else the weight is kept); assigning ``module.weight = X`` sets ``original`` to the
  right inverses of X through the list, last first (a parametrization without one raises).
- unless ``unsafe=True`` the parametrized value must keep the tensor's dtype and shape.
- ``remove_parametrizations(module, name, leave_parametrized=True)`` puts a plain parameter
  back (with the parametrized values, or the original ones), and the class when none is left.
"""
from __future__ import annotations

import copy
from contextlib import contextmanager
from typing import Any, Dict, Iterator, Optional, Sequence, Tuple, Union

from ...autograd import no_grad
from ...tensor import Tensor
from ..containers import ModuleDict, ModuleList
from ..module import Module, Parameter

__all__ = ["register_parametrization", "remove_parametrizations", "is_parametrized",
           "cached", "type_before_parametrizations", "ParametrizationList"]

_cache_depth = [0]
_cache: Dict[Tuple[int, str], Tensor] = {}


@contextmanager
def cached() -> Iterator[None]:
    """Inside the block each parametrized tensor is computed once, on its first read, and
    the same tensor is returned after (e.g. a weight used at every step of an RNN)."""
    _cache_depth[0] += 1
    try:
        yield
    finally:
        _cache_depth[0] -= 1
        if not _cache_depth[0]:
            _cache.clear()


def _set_values(target: Tensor, value: Tensor) -> None:
    """torch's ``original.set_(value)`` under no_grad: the same tensor object, now holding
    ``value``'s values (shape and dtype included)."""
    target._data = value.detach()._data
    target._bump_version()


def _register_tensor(module: Module, name: str, value: Tensor) -> None:
    if isinstance(value, Parameter):
        module.register_parameter(name, value)
    else:
        module.register_buffer(name, value)


class ParametrizationList(ModuleList):
    """The parametrizations of one tensor, applied in order, and the tensor(s) they start
    from (``original``, or ``original0``, ``original1``...)."""

    def __init__(self, modules: Sequence[Module], original: Tensor, unsafe: bool = False):
        if len(modules) == 0:
            raise ValueError("ParametrizationList requires one or more modules.")
        super().__init__(modules)
        self.unsafe = unsafe
        original_shape, original_dtype = original.shape, original.dtype
        with no_grad():
            new: Any = original
            for module in reversed(list(self)):
                if hasattr(module, "right_inverse"):
                    try:
                        new = module.right_inverse(new)
                    except NotImplementedError:
                        pass
        if not isinstance(new, Tensor) and not isinstance(new, (list, tuple)):
            raise ValueError("'right_inverse' must return a Tensor or a Sequence of tensors "
                             f"(list, tuple...). Got {type(new).__name__}")
        self.is_tensor = isinstance(new, Tensor)
        self.ntensors = 1 if self.is_tensor else len(new)
        if self.is_tensor:
            if not unsafe and (new.dtype != original_dtype or new.shape != original_shape):
                raise ValueError(
                    "When `right_inverse` outputs one tensor, it may not change the "
                    f"dtype or shape.\noriginal.dtype: {original_dtype}\n"
                    f"right_inverse(original).dtype: {new.dtype}\n"
                    f"original.shape: {original_shape}\n"
                    f"right_inverse(original).shape: {new.shape}\n")
            if new is not original:
                _set_values(original, new)
            _register_tensor(self, "original", original)
        else:
            for i, value in enumerate(new):
                if not isinstance(value, Tensor):
                    raise ValueError(f"'right_inverse' must return a Tensor or a Sequence of "
                                     f"tensors (list, tuple...). Got element {i} of the "
                                     f"sequence with type {type(value).__name__}.")
                if isinstance(original, Parameter):
                    value = Parameter(value.detach(), original.requires_grad)
                else:
                    value = value.detach()
                _register_tensor(self, f"original{i}", value)
        if not unsafe:
            z = self()
            if not isinstance(z, Tensor):
                raise ValueError(f"A parametrization must return a tensor. Got "
                                 f"{type(z).__name__}.")
            if z.dtype != original_dtype:
                raise ValueError(
                    "Registering a parametrization may not change the dtype of the tensor, "
                    f"unless `unsafe` flag is enabled.\nunparametrized dtype: "
                    f"{original_dtype}\nparametrized dtype: {z.dtype}")
            if z.shape != original_shape:
                raise ValueError(
                    "Registering a parametrization may not change the shape of the tensor, "
                    f"unless `unsafe` flag is enabled.\nunparametrized shape: "
                    f"{original_shape}\nparametrized shape: {z.shape}")

    def _originals(self) -> Tuple[Tensor, ...]:
        if self.is_tensor:
            return (self.original,)
        return tuple(getattr(self, f"original{i}") for i in range(self.ntensors))

    def right_inverse(self, value: Union[Tensor, Sequence[Tensor]]) -> None:
        """Set the original(s) so that the parametrized tensor is ``value``: the right
        inverses of the parametrizations, last first."""
        with no_grad():
            for module in reversed(list(self)):
                if not hasattr(module, "right_inverse"):
                    raise RuntimeError(f"parametrization {type(module).__name__} does not "
                                       f"implement right_inverse.")
                value = module.right_inverse(value)
            if self.is_tensor:
                if not isinstance(value, Tensor):
                    raise ValueError(f"`right_inverse` should return a tensor. Got "
                                     f"{type(value).__name__}")
                if value.dtype != self.original.dtype:
                    raise ValueError(f"The tensor returned by `right_inverse` has dtype "
                                     f"{value.dtype} while `original` has dtype "
                                     f"{self.original.dtype}")
                _set_values(self.original, value)
            else:
                if not isinstance(value, (list, tuple)) or len(value) != self.ntensors:
                    raise ValueError(f"'right_inverse' must return a sequence of tensors of "
                                     f"length {self.ntensors}. Got {type(value).__name__}")
                for original, part in zip(self._originals(), value):
                    _set_values(original, part)

    def forward(self) -> Tensor:  # type: ignore[override]
        modules = list(self)
        x = modules[0](*self._originals())
        for module in modules[1:]:
            x = module(x)
        return x


def is_parametrized(module: Module, tensor_name: Optional[str] = None) -> bool:
    """True if ``module`` has a parametrization (on ``tensor_name``, when given)."""
    parametrizations = module.__dict__.get("parametrizations")
    if not isinstance(parametrizations, ModuleDict):
        return False
    if tensor_name is None:
        return len(parametrizations) > 0
    return tensor_name in parametrizations


def type_before_parametrizations(module: Module) -> type:
    """The module's class before ``register_parametrization`` changed it."""
    if is_parametrized(module):
        return type(module).__bases__[0]
    return type(module)


def _parametrized_getstate(self: Module) -> Any:
    raise RuntimeError("Serialization of parametrized modules is only supported through "
                       "state_dict(). See: https://pytorch.org/tutorials/beginner/"
                       "saving_loading_models.html#saving-loading-a-general-checkpoint-for-"
                       "inference-and-or-resuming-training")


def _parametrized_deepcopy(self: Module, memo: Dict[int, Any]) -> Module:
    new = type(self).__new__(type(self))
    memo[id(self)] = new
    for key, value in self.__dict__.items():
        object.__setattr__(new, key, copy.deepcopy(value, memo))
    return new


def _inject_class(module: Module) -> None:
    cls = type(module)
    param_cls = type(f"Parametrized{cls.__name__}", (cls,),
                     {"__getstate__": _parametrized_getstate,
                      "__deepcopy__": _parametrized_deepcopy,
                      "__module__": cls.__module__})
    module.__class__ = param_cls


def _inject_property(module: Module, tensor_name: str) -> None:
    def getter(self: Module) -> Tensor:
        parametrization = self.parametrizations[tensor_name]
        if not _cache_depth[0]:
            return parametrization()
        key = (id(self), tensor_name)
        if key not in _cache:
            _cache[key] = parametrization()
        return _cache[key]

    def setter(self: Module, value: Tensor) -> None:
        self.parametrizations[tensor_name].right_inverse(value)

    setattr(type(module), tensor_name, property(getter, setter))


def register_parametrization(module: Module, tensor_name: str, parametrization: Module, *,
                             unsafe: bool = False) -> Module:
    """Make ``module.<tensor_name>`` the value ``parametrization(original)`` (see the module
    docstring); a second call on the same name appends to its list. Returns ``module``."""
    parametrization.train(module.training)
    if is_parametrized(module, tensor_name):
        if not unsafe:
            y = getattr(module, tensor_name)
            x = parametrization(y)
            if not isinstance(x, Tensor):
                raise ValueError(f"A parametrization must return a tensor. Got "
                                 f"{type(x).__name__}.")
            if x.dtype != y.dtype:
                raise ValueError(
                    "Registering a parametrization may not change the dtype of the tensor, "
                    f"unless the `unsafe` flag is enabled.\nmodule.{tensor_name}.dtype: "
                    f"{y.dtype}\nparametrization(module.{tensor_name}).dtype: {x.dtype}")
            if x.shape != y.shape:
                raise ValueError(
                    "Registering a parametrization may not change the shape of the tensor, "
                    f"unless the `unsafe` flag is enabled.\nmodule.{tensor_name}.shape: "
                    f"{y.shape}\nparametrization(module.{tensor_name}).shape: {x.shape}")
        plist = module.parametrizations[tensor_name]
        plist.append(parametrization)
        plist.unsafe = plist.unsafe or unsafe
    elif tensor_name in module._parameters or tensor_name in module._buffers:
        original = getattr(module, tensor_name)
        if original is None:
            raise ValueError(f"Module '{module}' has '{tensor_name}' set to None: there is "
                             f"no tensor to parametrize")
        plist = ParametrizationList([parametrization], original, unsafe=unsafe)
        delattr(module, tensor_name)
        if not is_parametrized(module):
            _inject_class(module)
            module.parametrizations = ModuleDict()
        _inject_property(module, tensor_name)
        module.parametrizations[tensor_name] = plist
    else:
        raise ValueError(f"Module '{module}' does not have a parameter, a buffer, or a "
                         f"parametrized element with name '{tensor_name}'")
    return module


def remove_parametrizations(module: Module, tensor_name: str,
                            leave_parametrized: bool = True) -> Module:
    """Undo ``register_parametrization`` on ``tensor_name``: the tensor becomes a plain
    parameter (or buffer) again, holding the parametrized values (``leave_parametrized``)
    or the original ones. The module gets its class back when nothing is parametrized."""
    if not is_parametrized(module, tensor_name):
        raise ValueError(f"Module {module} does not have a parametrization on "
                         f"{tensor_name}")
    plist = module.parametrizations[tensor_name]
    if plist.is_tensor:
        original = plist.original
        if leave_parametrized:
            with no_grad():
                _set_values(original, getattr(module, tensor_name))
    else:
        if not leave_parametrized:
            raise ValueError("Cannot leave unparametrized (`leave_parametrized=False`) a "
                             "tensor that is parametrized in terms of a sequence of tensors.")
        value = getattr(module, tensor_name)
        original = Parameter(value.detach(), value.requires_grad) \
            if isinstance(plist.original0, Parameter) else value.detach()
    delattr(type(module), tensor_name)
    del module.parametrizations[tensor_name]
    _register_tensor(module, tensor_name, original)
    if not is_parametrized(module):
        delattr(module, "parametrizations")
        module.__class__ = type(module).__bases__[0]
    return module
