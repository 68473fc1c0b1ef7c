"""Tensor hooks: ``tensor.register_hook(hook)`` and the handle that removes it, and
``_run_hooks``, which the engine calls with a tensor's gradient (docs/derivations.md#autograd).
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, List

from .. import backend
from .function import _tensor_type
from .grad_mode import no_grad

if TYPE_CHECKING:
    from ..tensor import Tensor

__all__ = ["RemovableHandle", "register_hook", "register_post_accumulate_grad_hook"]

# How many post-accumulate hooks are registered anywhere: the engine counts a leaf's pending
# gradients (to call its hooks the moment it is complete) only while this is above zero.
_post_accumulate_registered = [0]


class RemovableHandle:
    """What ``register_hook`` returns: ``handle.remove()`` takes the hook off again."""

    def __init__(self, hooks: List[Any], hook: Any) -> None:
        self._hooks, self._hook = hooks, hook

    def remove(self) -> None:
        if any(h is self._hook for h in self._hooks):
            self._hooks.remove(self._hook)


def register_hook(tensor: "Tensor", hook: Any) -> RemovableHandle:
    """``tensor.register_hook(hook)``: during backward, call ``hook(grad)`` with the gradient
    of ``tensor`` (a Tensor of its shape); if it returns a Tensor, that replaces the gradient
    from there on (for the leaf's ``.grad`` too), as in PyTorch. For an intermediate tensor
    the hook sits on the Function that made it; a leaf's hooks run once per backward on the
    gradient summed over every path."""
    if not callable(hook):
        raise TypeError(f"register_hook: expected a function, got {type(hook).__name__}")
    if not tensor.requires_grad:
        raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient "
                           "(set requires_grad=True on the leaf first)")
    owner: Any = tensor if tensor._ctx is None else tensor._ctx
    if owner._hooks is None:
        owner._hooks = []
    owner._hooks.append(hook)
    return RemovableHandle(owner._hooks, hook)


class _PostAccumulateHandle(RemovableHandle):
    def remove(self) -> None:
        if any(h is self._hook for h in self._hooks):
            self._hooks.remove(self._hook)
            _post_accumulate_registered[0] -= 1


def register_post_accumulate_grad_hook(tensor: "Tensor", hook: Any) -> RemovableHandle:
    """``tensor.register_post_accumulate_grad_hook(hook)`` (PyTorch's): call ``hook(tensor)``
    once the backward has added this leaf's whole gradient into ``tensor.grad``, during the
    backward, as soon as no op left in the graph can add to it (data-parallel training
    starts averaging a gradient there, while the backward goes on). Leaves only; the hook
    returns None."""
    if not callable(hook):
        raise TypeError(f"register_post_accumulate_grad_hook: expected a function, got "
                        f"{type(hook).__name__}")
    if not tensor.requires_grad:
        raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient "
                           "(set requires_grad=True on the leaf first)")
    if tensor._ctx is not None:
        raise RuntimeError("post accumulate grad hooks cannot be registered on non-leaf "
                           "tensors (register it on the leaf, e.g. a parameter)")
    if tensor._post_accumulate_hooks is None:
        tensor._post_accumulate_hooks = []
    tensor._post_accumulate_hooks.append(hook)
    _post_accumulate_registered[0] += 1
    return _PostAccumulateHandle(tensor._post_accumulate_hooks, hook)


def _run_post_accumulate_hooks(leaf: "Tensor") -> None:
    for hook in list(leaf._post_accumulate_hooks or ()):
        with no_grad():
            result = hook(leaf)
        if result is not None:
            name = getattr(hook, "__name__", type(hook).__name__)
            raise RuntimeError(f"the post accumulate grad hook {name} returned a "
                               f"{type(result).__name__}; it must return None (change "
                               f"leaf.grad in place instead)")


def _run_hooks(hooks: List[Any], grad: Any) -> Any:
    tensor_type = _tensor_type()
    for hook in list(hooks):
        with no_grad():
            result = hook(tensor_type._wrap(grad))
        if result is None:
            continue
        name = getattr(hook, "__name__", type(hook).__name__)
        if not isinstance(result, tensor_type):
            raise TypeError(f"the hook {name} returned a {type(result).__name__}; a hook "
                            f"returns None or a Tensor (the new gradient)")
        if result.shape != tuple(grad.shape):
            raise RuntimeError(f"hook '{name}' has changed the size of value (it returned a "
                               f"gradient of shape {result.shape} for a tensor of shape "
                               f"{tuple(grad.shape)}; keep the shape)")
        device = backend.device_of(grad)
        if result.device != device:
            raise RuntimeError(f"the hook {name} returned a gradient on {result.device} for a "
                               f"tensor on {device}; return it on {device} "
                               f"(e.g. new_grad.to({device!r}))")
        if result.dtype != grad.dtype:      # torch refuses: an int gradient would truncate
            was = tensor_type._wrap(grad).type()
            raise RuntimeError(f"hook '{name}' has changed the type of value (was {was} got "
                               f"{result.type()})")
        grad = result._data
    return grad
