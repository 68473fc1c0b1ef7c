"""Module hooks as ``torch.nn.Module`` has them: ``register_forward_pre_hook``,
``register_forward_hook``, ``register_full_backward_pre_hook`` and
``register_full_backward_hook``, and the call that runs them (``Module.__call__`` comes
here only when a module has a hook, so a module without one pays a dict lookup).

Order of one call, as torch's: the forward pre-hooks (each may return new positional
arguments; a value that is not a tuple becomes a 1-tuple), then the backward-hook wrapper
of the tensor arguments, ``forward``, the forward hooks (each may return a new output), and
the wrapper of the output tensors.

Backward hooks: the tensor arguments (when one requires grad) go through one identity
Function, and so do the output tensors. The output identity's backward receives
``grad_output`` (the backward pre-hooks may replace it); the input identity's backward
receives ``grad_input``, the gradients with respect to the arguments as this module used
them (not those of other users of the same tensor), and calls
``hook(module, grad_input, grad_output)``, whose tuple, if it returns one, replaces
``grad_input``. Identity: d input = d output, so the wrapper changes no value.
"""
from __future__ import annotations

import warnings
from collections import OrderedDict
from typing import Any, Callable, Dict, List, Optional, Tuple

from ..autograd import Function, is_grad_enabled
from ..tensor import Tensor

__all__ = ["RemovableHandle", "register", "call_with_hooks"]

_next_id = [0]


class RemovableHandle:
    """What a ``register_*_hook`` returns: ``handle.remove()`` (or leaving a ``with``
    block) takes the hook off; ``handle.id`` is its key in the module's hook dict."""

    def __init__(self, *dicts: Dict[int, Any]) -> None:
        self.id = _next_id[0]
        _next_id[0] += 1
        self._dicts = dicts

    def remove(self) -> None:
        for d in self._dicts:
            d.pop(self.id, None)

    def __enter__(self) -> "RemovableHandle":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.remove()


def _hook_dict(module: Any, name: str) -> "OrderedDict[int, Any]":
    hooks = module.__dict__.get(name)
    if hooks is None:
        hooks = OrderedDict()
        object.__setattr__(module, name, hooks)
    return hooks


def register(module: Any, kind: str, hook: Callable[..., Any], prepend: bool = False,
             with_kwargs: bool = False, always_call: bool = False,
             flag: Optional[str] = None) -> RemovableHandle:
    """Add ``hook`` to the module's dict ``_<kind>`` (``forward_hooks``, ...); the
    flags go in companion dicts keyed by the handle's id, as torch keeps them."""
    if not callable(hook):
        raise TypeError(f"register_{kind[:-1]}: expected a function, got "
                        f"{type(hook).__name__}")
    hooks = _hook_dict(module, f"_{kind}")
    extra: List[Dict[int, Any]] = []
    handle_dicts: List[Dict[int, Any]] = [hooks]
    if with_kwargs:
        flags = _hook_dict(module, f"_{kind}_with_kwargs")
        extra.append(flags)
    if always_call:
        extra.append(_hook_dict(module, f"_{kind}_always_called"))
    if flag is not None:
        extra.append(_hook_dict(module, f"_{flag}"))
    handle = RemovableHandle(*(handle_dicts + extra))
    hooks[handle.id] = hook
    for flags in extra:
        flags[handle.id] = True
    if prepend:
        hooks.move_to_end(handle.id, last=False)
    if kind.startswith("backward"):
        module.__dict__.setdefault("_has_backward_hooks", True)
    return handle


class _BackwardHookIdentity(Function):
    """out_i = x_i; d x_i = g_i, after ``on_grads`` has seen (and may replace) the g_i.
    ``materialize``: an unused x_i's g_i is zeros (the arguments' grad_input, as torch's)
    or None (the outputs' grad_output, as torch's)."""

    @staticmethod
    def forward(ctx: Any, on_grads: Callable[..., Any], materialize: bool, *tensors: Any) -> Any:
        ctx.on_grads = on_grads
        ctx.set_materialize_grads(materialize)
        return tensors[0] if len(tensors) == 1 else tuple(tensors)

    @staticmethod
    def backward(ctx: Any, *grads: Any) -> Any:
        return (None, None) + tuple(ctx.on_grads(grads))


def _tensor_positions(values: Tuple[Any, ...]) -> List[int]:
    return [i for i, v in enumerate(values) if isinstance(v, Tensor)]


def _wrap(values: Tuple[Any, ...], on_grads: Callable[..., Any],
          materialize: bool = True) -> Optional[Tuple[Any, ...]]:
    """``values`` with its tensors through one identity node, or None when no tensor needs
    a gradient (then there is no backward to watch)."""
    positions = _tensor_positions(values)
    if not is_grad_enabled() or not any(values[i].requires_grad for i in positions):
        return None
    outs = _BackwardHookIdentity.apply(on_grads, materialize, *(values[i] for i in positions))
    outs = (outs,) if len(positions) == 1 else outs
    wrapped = list(values)
    for i, out in zip(positions, outs):
        wrapped[i] = out
    return tuple(wrapped)


def _check_replacement(name: str, new: Any, old: Tuple[Any, ...]) -> Tuple[Any, ...]:
    new = tuple(new) if isinstance(new, (tuple, list)) else (new,)
    if len(new) != len(old):
        raise RuntimeError(f"backward hook '{name}' has returned an incorrect number of values "
                           f"(got {len(new)}, but expected {len(old)})")
    return new


class _BackwardState:
    """The grad_output of one call, kept until its input identity's backward runs."""

    def __init__(self, module: Any, n_args: int) -> None:
        self.module, self.n_args = module, n_args
        self.input_positions: Optional[List[int]] = None
        # per tensor argument: did it require grad? One that did not gets zeros in
        # grad_input, as torch's (the identity's output for it requires grad, so a real
        # gradient reaches it; torch's hook never reports that one)
        self.input_requires_grad: List[bool] = []
        self.output_positions: List[int] = []
        self.n_outputs = 0
        self.grad_output: Optional[Tuple[Any, ...]] = None

    def _full_hooks(self) -> List[Any]:
        return list((self.module.__dict__.get("_backward_hooks") or {}).values())

    def on_output_grads(self, tensor_grads: Tuple[Any, ...]) -> Tuple[Any, ...]:
        full: List[Any] = [None] * self.n_outputs      # None where an output is no tensor
        for i, g in zip(self.output_positions, tensor_grads):
            full[i] = g
        grads = tuple(full)
        for hook in list((self.module.__dict__.get("_backward_pre_hooks") or {}).values()):
            result = hook(self.module, grads)
            if result is not None:
                grads = _check_replacement(getattr(hook, "__name__", "hook"), result, grads)
        self.grad_output = grads
        if self.input_positions is None and self._full_hooks():   # no argument needs grad
            warnings.warn("Full backward hook is firing when gradients are computed with "
                          "respect to module outputs since no inputs require gradients. See "
                          "https://docs.pytorch.org/docs/main/generated/torch.nn.Module.html"
                          "#torch.nn.Module.register_full_backward_hook for more details.",
                          UserWarning, stacklevel=2)
            for hook in self._full_hooks():
                result = hook(self.module, (None,) * self.n_args, grads)
                if result is not None and not (isinstance(result, tuple) and
                                               all(r is None for r in result)):
                    raise RuntimeError("Backward hook for Modules where no input requires "
                                       "gradient should always return None or None for all "
                                       "gradients.")
        return tuple(grads[i] for i in self.output_positions)

    def on_input_grads(self, grads: Tuple[Any, ...]) -> Tuple[Any, ...]:
        positions = self.input_positions or []
        full: List[Any] = [None] * self.n_args
        for i, g, needed in zip(positions, grads, self.input_requires_grad):
            full[i] = g if needed or g is None else g.new_zeros(g.shape)
        grad_input = tuple(full)
        grad_output = self.grad_output if self.grad_output is not None else ()
        for hook in self._full_hooks():
            result = hook(self.module, grad_input, grad_output)
            if result is not None:
                grad_input = _check_replacement(getattr(hook, "__name__", "hook"), result,
                                                grad_input)
        return tuple(grad_input[i] for i in positions)


def call_with_hooks(module: Any, forward: Callable[..., Any], args: Tuple[Any, ...],
                    kwargs: Dict[str, Any]) -> Any:
    d = module.__dict__
    pre_kwargs = d.get("_forward_pre_hooks_with_kwargs") or {}
    for key, hook in list((d.get("_forward_pre_hooks") or {}).items()):
        if key in pre_kwargs:
            result = hook(module, args, kwargs)
            if result is not None:
                if not (isinstance(result, tuple) and len(result) == 2):
                    raise RuntimeError("forward pre-hook must return None or a tuple of "
                                       f"(new_args, new_kwargs), but got {result}.")
                args, kwargs = result
        else:
            result = hook(module, args)
            if result is not None:
                args = result if isinstance(result, tuple) else (result,)
    backward = bool(d.get("_backward_hooks") or d.get("_backward_pre_hooks"))
    state = None
    if backward:
        state = _BackwardState(module, len(args))
        wrapped = _wrap(args, state.on_input_grads)
        if wrapped is not None:
            state.input_positions = _tensor_positions(args)
            state.input_requires_grad = [args[i].requires_grad for i in state.input_positions]
            args = wrapped
    hooks = d.get("_forward_hooks") or {}
    with_kwargs = d.get("_forward_hooks_with_kwargs") or {}
    always = d.get("_forward_hooks_always_called") or {}
    called = set()
    try:
        output = forward(*args, **kwargs)
        for key, hook in list(hooks.items()):
            called.add(key)
            result = (hook(module, args, kwargs, output) if key in with_kwargs
                      else hook(module, args, output))
            if result is not None:
                output = result
    except Exception:
        for key, hook in list(hooks.items()):
            if key in always and key not in called:
                try:
                    if key in with_kwargs:
                        hook(module, args, kwargs, None)
                    else:
                        hook(module, args, None)
                except Exception:
                    pass
        raise
    if state is not None:
        outputs = output if isinstance(output, tuple) else (output,)
        state.n_outputs, state.output_positions = len(outputs), _tensor_positions(outputs)
        # an output the loss did not use: None in grad_output, as torch's
        wrapped_out = _wrap(outputs, state.on_output_grads, materialize=False)
        if wrapped_out is not None:
            output = wrapped_out if isinstance(output, tuple) else wrapped_out[0]
    return output


# ------------------------------------------------------------------- state-dict hooks
def _hooks(module: Any, kind: str) -> List[Tuple[int, Any]]:
    return list((module.__dict__.get(f"_{kind}") or {}).items())


def _flags(module: Any, name: str) -> Dict[int, Any]:
    return module.__dict__.get(f"_{name}") or {}


def _any(root: Any, kinds: Tuple[str, ...]) -> bool:
    return any(module.__dict__.get(f"_{kind}") for module in root.modules() for kind in kinds)


def state_dict_hooks_present(root: Any) -> bool:
    return _any(root, ("state_dict_pre_hooks", "state_dict_hooks"))


def load_hooks_present(root: Any) -> bool:
    return _any(root, ("load_state_dict_pre_hooks", "load_state_dict_post_hooks"))


def load_post_hooks_present(root: Any) -> bool:
    return _any(root, ("load_state_dict_post_hooks",))


def _prefixed(root: Any, prefix: str) -> List[Tuple[str, Any]]:
    """(prefix of its keys, module), parents first, a shared module under each name (the
    order of torch's recursive ``state_dict``)."""
    return [((prefix + name + ".") if name else prefix, module)
            for name, module in root.named_modules(remove_duplicate=False)]


def _postorder(root: Any, prefix: str) -> List[Tuple[str, Any]]:
    """As ``_prefixed``, each module after its children (where torch's recursive calls end)."""
    from .module import Module  # noqa: PLC0415 - module.py imports this file
    out: List[Tuple[str, Any]] = []

    def visit(module: Any, module_prefix: str) -> None:
        for name, value in list(vars(module).items()):
            if isinstance(value, Module):
                visit(value, module_prefix + name + ".")
        out.append((module_prefix, module))
    visit(root, prefix)
    return out


def run_state_dict_pre_hooks(root: Any, prefix: str, keep_vars: bool) -> None:
    for module_prefix, module in _prefixed(root, prefix):
        for _, hook in _hooks(module, "state_dict_pre_hooks"):
            hook(module, module_prefix, keep_vars)


def run_state_dict_post_hooks(root: Any, state: Any, prefix: str) -> Any:
    """Children before their parent (torch's hooks run when a module's ``state_dict`` call
    ends). A value returned by an old-style hook replaces the state dict only where the
    call returns it, i.e. at the root, as torch's; a public post-hook must return None."""
    for module_prefix, module in _postorder(root, prefix):
        public = _flags(module, "state_dict_hooks_public")
        for key, hook in _hooks(module, "state_dict_hooks"):
            result = hook(module, state, module_prefix, {"version": module._version})
            if result is None:
                continue
            if key in public:
                raise RuntimeError("state_dict post-hook must return None")
            if module is root:
                state = result
    return state


def run_load_pre_hooks(root: Any, state: Any, strict: bool, missing: List[str],
                       unexpected: List[str], error_msgs: List[str]) -> None:
    metadata = getattr(state, "_metadata", None) or {}
    for module_prefix, module in _prefixed(root, ""):
        local = metadata.get(module_prefix[:-1], {})
        with_module = _flags(module, "load_state_dict_pre_hooks_with_module")
        for key, hook in _hooks(module, "load_state_dict_pre_hooks"):
            # torch hands every module's load strict=True, whatever the caller passed
            args = (state, module_prefix, local, True, missing, unexpected, error_msgs)
            if key in with_module:
                hook(module, *args)
            else:
                hook(*args)


def run_load_post_hooks(root: Any, incompatible_keys: Any) -> None:
    for _, module in _postorder(root, ""):
        for _, hook in _hooks(module, "load_state_dict_post_hooks"):
            if hook(module, incompatible_keys) is not None:
                raise AssertionError(
                    "Hooks registered with ``register_load_state_dict_post_hook`` are not "
                    "expected to return new values, if incompatible_keys need to be modified, "
                    "it should be done inplace.")
