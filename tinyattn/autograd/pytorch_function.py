"""PyTorch-style custom functions: a ``Function`` subclass whose ``forward`` and ``backward``
are ``@staticmethod``s taking ``ctx`` (``ctx.save_for_backward(...)``, ``ctx.saved_tensors``)
is applied with ``MyFunction.apply(...)`` exactly as in ``torch.autograd.Function``.

``Function.apply`` hands such classes to ``_apply_pytorch_style`` (through the slot
``function._pytorch_style_apply``, filled at the end of this module): the user's forward runs
on Tensors, and a ``_PyTorchStyleNode`` joins the graph in its place.
"""
from __future__ import annotations

import functools
import inspect
from typing import Any, Callable, Dict, List, Optional, Tuple

from .. import backend
from . import function
from .function import Function, VersionCounter, _tensor_type
from .grad_mode import _state, no_grad

__all__ = ["FunctionCtx", "once_differentiable"]


def once_differentiable(backward: Callable[..., Any]) -> Callable[..., Any]:
    """``torch.autograd.function.once_differentiable``: marks a ``backward`` that is not
    itself differentiable. tinyattn runs every backward without recording (``create_graph``
    is refused), so the decorator only makes sure of that."""
    @functools.wraps(backward)
    def wrapper(ctx: Any, *grads: Any) -> Any:
        with no_grad():
            return backward(ctx, *grads)
    return wrapper


class FunctionCtx:
    """The ``ctx`` a PyTorch-style ``forward(ctx, ...)`` and ``backward(ctx, ...)`` receive."""

    needs_input_grad: Tuple[bool, ...] = ()
    _materialize_grads = True

    def __init__(self) -> None:
        self._saved: Optional[Tuple[Any, ...]] = ()
        self._saved_versions: List[Tuple[Any, VersionCounter, int]] = []

    def save_for_backward(self, *tensors: Any) -> None:
        """Keep tensors (or None) for backward; changing one in place afterwards is detected."""
        tensor_type = _tensor_type()
        for i, t in enumerate(tensors):
            if t is not None and not isinstance(t, tensor_type):
                raise TypeError(f"save_for_backward takes tensors (or None), but argument {i} "
                                f"is a {type(t).__name__}; keep other values as ctx "
                                f"attributes (ctx.scale = scale)")
        self._saved = tensors
        self._saved_versions = [(t, t._version_counter(), t._version_counter().value)
                                for t in tensors if t is not None]

    @property
    def saved_tensors(self) -> Tuple[Any, ...]:
        if self._saved is None:
            raise RuntimeError("trying to backward through the graph a second time: the "
                               "saved tensors were freed by the first backward. Pass "
                               "retain_graph=True to the first .backward() to call it twice")
        for t, counter, expected in self._saved_versions:
            if counter.value != expected:
                raise RuntimeError(
                    f"one of the tensors saved with ctx.save_for_backward (shape {t.shape}) "
                    f"has been modified by an inplace operation: it is at version "
                    f"{counter.value}; expected version {expected}")
        return self._saved

    def mark_dirty(self, *tensors: Any) -> None:
        raise NotImplementedError(
            "ctx.mark_dirty: custom Functions that change their inputs in place are not "
            "supported by tinyattn; compute the result into a new tensor (x * 2, not "
            "x.mul_(2)) and return that")

    def mark_non_differentiable(self, *tensors: Any) -> None:
        """Outputs that get no gradient (an argmax, a mask): they come back with
        ``requires_grad=False`` and their backward argument is zeros, as torch's."""
        self._non_differentiable = {id(t) for t in tensors}

    def set_materialize_grads(self, value: bool) -> None:
        """False: backward gets None (not zeros, torch's default) for an output of several
        that no gradient reached."""
        self._materialize_grads = bool(value)


class _PyTorchStyleNode(Function):
    """The graph node of one call of a PyTorch-style Function: calls the user's static
    ``backward(ctx, grad_output)`` with Tensors and maps its results to the tensor inputs."""

    user_class: type = Function
    ctx: FunctionCtx
    arg_positions: Tuple[int, ...] = ()    # where each tensor input sat among forward's args
    num_args = 0
    keeps_input_tensors = True             # built here, not by apply (see Function)

    slots: Optional[List[Any]] = None      # several outputs: g_k of each (None: none came)
    output_meta: Tuple[Any, ...] = ()      # (shape, dtype) of each output; None: not a tensor

    def backward(self, grad: Any) -> Any:
        tensor_type = _tensor_type()
        if self.slots is None:
            grads_out = (tensor_type._wrap(grad),)
        else:   # one gradient per output: zeros where none came (torch's), or None when
            # ctx.set_materialize_grads(False); None for an output that is not a tensor
            xp = backend.get_array_module(grad)
            materialize = self.ctx._materialize_grads
            grads_out = tuple(
                None if meta is None else tensor_type._wrap(g) if g is not None else
                tensor_type._wrap(xp.zeros(meta[0], dtype=meta[1])) if materialize else None
                for g, meta in zip(self.slots, self.output_meta))
            self.slots[:] = [None] * len(self.slots)
        with no_grad():
            result = self.user_class.backward(self.ctx, *grads_out)
        results = result if isinstance(result, tuple) else (result,)
        name = self.user_class.__name__
        if len(results) > self.num_args and all(g is None for g in results[self.num_args:]):
            results = results[:self.num_args]   # extra trailing Nones are fine, as in PyTorch
        if len(results) != self.num_args:
            raise RuntimeError(f"{name}.backward returned {len(results)} gradient(s), but "
                               f"forward took {self.num_args} argument(s) after ctx: return "
                               f"one per argument (None for those without a gradient)")
        for position, g in enumerate(results):
            if g is not None and position not in self.arg_positions:
                raise RuntimeError(f"function {name}Backward returned a gradient different "
                                   f"than None at position {position + 1}, but the "
                                   f"corresponding forward input was not a Tensor: return "
                                   f"None there")
        grads = []
        for i, position in enumerate(self.arg_positions):
            g = results[position]
            if g is None:
                grads.append(None)
                continue
            if not isinstance(g, tensor_type):
                raise TypeError(f"{name}.backward returned a {type(g).__name__} for argument "
                                f"{position}; return a Tensor or None")
            if g.shape != self.inputs[i].shape:
                raise RuntimeError(f"{name}.backward returned a gradient of shape {g.shape} "
                                   f"for argument {position} of shape {self.inputs[i].shape}")
            # As torch: a gradient takes its input's dtype (a float64 one would otherwise turn
            # a float32 parameter's .grad into float64).
            grads.append(g._data.astype(self.inputs[i].dtype, copy=False))
        return tuple(grads)


def _apply_pytorch_style(cls: type, args: Tuple[Any, ...], kwargs: Dict[str, Any]) -> Any:
    """``cls.apply(*args, **kwargs)`` as torch's: with a ``setup_context``, ``forward(*args)``
    takes no ctx and keywords (and defaults) are bound to positions first, so each argument
    can have a gradient; without one, ``forward(ctx, *args, **kwargs)`` and only the
    positional arguments have gradients."""
    tensor_type = _tensor_type()
    setup = getattr(cls, "setup_context", None)
    if setup is not None:
        bound = inspect.signature(cls.forward).bind(*args, **kwargs)
        bound.apply_defaults()
        args, kwargs = tuple(bound.args), dict(bound.kwargs)
    ctx = FunctionCtx()
    positions = tuple(i for i, a in enumerate(args) if isinstance(a, tensor_type))
    tensors = tuple(args[i] for i in positions)
    ctx.needs_input_grad = tuple(isinstance(a, tensor_type) and a.requires_grad for a in args)
    with no_grad():
        if setup is not None:
            out = cls.forward(*args, **kwargs)
            setup(ctx, args, out)
        else:
            out = cls.forward(ctx, *args, **kwargs)
    if isinstance(out, tuple):
        return _several_outputs(cls, ctx, args, positions, tensors, out)
    if not isinstance(out, tensor_type):
        raise TypeError(f"{cls.__name__}.forward must return a Tensor or a tuple of them, got "
                        f"{type(out).__name__}")
    track = _state.grad_enabled and any(t.requires_grad for t in tensors)
    if any(out is t for t in tensors):
        out = tensor_type._wrap(out._data)   # returning an input unchanged: a new node
    else:
        out._ctx = None
    out._requires_grad = track
    if track:
        node = _PyTorchStyleNode()
        node.user_class, node.ctx, node.arg_positions = cls, ctx, positions
        node.num_args = len(args)
        node.inputs = tensors
        node.parents = tuple(t._ctx for t in tensors)
        node.needs_input_grad = tuple(t.requires_grad for t in tensors)
        node.saved = (ctx,)
        out._ctx = node
    return out


class _FunctionOutput(Function):
    """Output k of a custom Function that returned several tensors: a node reading the
    call's hidden 0-d anchor, which leaves g_k in the call node's ``slots[k]``. Backward: the
    anchor gets 0, which still brings the engine to the call node when only out_k is used."""

    def backward(self, grad: Any) -> Any:
        slots, k, anchor = self.saved
        slots[k] = grad if slots[k] is None else slots[k] + grad
        return backend.get_array_module(anchor).zeros_like(anchor)


def _several_outputs(cls: type, ctx: FunctionCtx, args: Tuple[Any, ...],
                     positions: Tuple[int, ...], tensors: Tuple[Any, ...],
                     outs: Tuple[Any, ...]) -> Tuple[Any, ...]:
    """``forward`` returned a tuple: each tensor in it is an output with its own gradient,
    and ``backward(ctx, *grads)`` gets one per output (zeros for an unused one, as torch)."""
    tensor_type = _tensor_type()
    track = _state.grad_enabled and any(t.requires_grad for t in tensors)
    fresh = [tensor_type._wrap(o._data) if isinstance(o, tensor_type) else o for o in outs]
    if not track:
        return tuple(fresh)
    skip = getattr(ctx, "_non_differentiable", set())
    node = _PyTorchStyleNode()
    node.user_class, node.ctx, node.arg_positions = cls, ctx, positions
    node.num_args = len(args)
    node.inputs = tensors
    node.parents = tuple(t._ctx for t in tensors)
    node.needs_input_grad = tuple(t.requires_grad for t in tensors)
    node.saved = (ctx,)
    kept = [o for o in outs if isinstance(o, tensor_type)]
    node.slots = [None] * len(outs)
    node.output_meta = tuple((o.shape, o._data.dtype) if isinstance(o, tensor_type) else None
                             for o in outs)
    xp = backend.get_array_module(kept[0]._data) if kept else None
    anchor = tensor_type._wrap(xp.zeros((), dtype=kept[0]._data.dtype)) if kept else None
    if anchor is not None:
        anchor._requires_grad, anchor._ctx = True, node
    result = []
    for k, (original, out) in enumerate(zip(outs, fresh)):
        if not isinstance(original, tensor_type):
            result.append(out)
            continue
        differentiable = id(original) not in skip and out._data.dtype.kind in "fc" or \
            out._data.dtype.name == "bfloat16" and id(original) not in skip
        if differentiable:
            reader = _FunctionOutput()
            reader.inputs, reader.parents, reader.needs_input_grad = (anchor,), (node,), (True,)
            reader.saved = (node.slots, k, anchor._data)
            out._requires_grad, out._ctx = True, reader
        result.append(out)
    return tuple(result)


function._pytorch_style_apply = _apply_pytorch_style
function.once_differentiable = once_differentiable   # torch.autograd.function's name
