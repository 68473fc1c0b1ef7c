"""PyTorch-style custom functions: a ``Function`` subclass whose ``forward`` and ``backward``
are ``@staticmethod``s taking ``ctx`` (``ctx.save_for_backward(...)``, ``ctx.saved_tensors``)
is applied with ``MyFunction.apply(...)`` exactly as in ``torch.autograd.Function``.

``Function.apply`` hands such classes to ``_apply_pytorch_style`` (through the slot
``function._pytorch_style_apply``, filled at the end of this module): the user's forward runs
on Tensors, and a ``_PyTorchStyleNode`` joins the graph in its place.
"""
from __future__ import annotations

from typing import Any, Dict, List, Optional, Tuple

from . import function
from .function import Function, VersionCounter, _tensor_type
from .grad_mode import _state, no_grad

__all__ = ["FunctionCtx"]


class FunctionCtx:
    """The ``ctx`` a PyTorch-style ``forward(ctx, ...)`` and ``backward(ctx, ...)`` receive."""

    needs_input_grad: Tuple[bool, ...] = ()

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
        """Accepted for compatibility: tinyattn's custom functions have one output."""

    def set_materialize_grads(self, value: bool) -> None:
        """Accepted for compatibility: gradients reaching backward are always arrays."""


class _PyTorchStyleNode(Function):
    """The graph node of one call of a PyTorch-style Function: calls the user's static
    ``backward(ctx, grad_output)`` with Tensors and maps its results to the tensor inputs."""

    user_class: type = Function
    ctx: FunctionCtx
    arg_positions: Tuple[int, ...] = ()    # where each tensor input sat among forward's args
    num_args = 0

    def backward(self, grad: Any) -> Any:
        tensor_type = _tensor_type()
        with no_grad():
            result = self.user_class.backward(self.ctx, tensor_type._wrap(grad))
        results = result if isinstance(result, tuple) else (result,)
        name = self.user_class.__name__
        if len(results) > self.num_args and all(g is None for g in results[self.num_args:]):
            results = results[:self.num_args]   # extra trailing Nones are fine, as in PyTorch
        if len(results) != self.num_args:
            raise RuntimeError(f"{name}.backward returned {len(results)} gradient(s), but "
                               f"forward took {self.num_args} argument(s) after ctx: return "
                               f"one per argument (None for those without a gradient)")
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
    tensor_type = _tensor_type()
    if kwargs:
        raise TypeError(f"{cls.__name__}.apply takes positional arguments only (as in "
                        f"PyTorch), got keywords {sorted(kwargs)}")
    ctx = FunctionCtx()
    positions = tuple(i for i, a in enumerate(args) if isinstance(a, tensor_type))
    tensors = tuple(args[i] for i in positions)
    ctx.needs_input_grad = tuple(isinstance(a, tensor_type) and a.requires_grad for a in args)
    with no_grad():
        out = cls.forward(ctx, *args)
    if not isinstance(out, tensor_type):
        raise TypeError(f"{cls.__name__}.forward must return one Tensor in tinyattn, got "
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


function._pytorch_style_apply = _apply_pytorch_style
