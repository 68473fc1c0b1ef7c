"""Gradient checkpointing: ``torch.utils.checkpoint``'s ``checkpoint`` and
``checkpoint_sequential`` (docs/precision_memory_time.md#gradient-checkpointing).

A checkpointed segment ``out = function(*args)`` keeps none of its activations: its forward
runs, its graph is dropped at once, and one graph node, ``CheckpointFunction``, stands for the
whole segment. That node remembers only what is needed to run the segment again: the function,
its arguments, the random state, and the tensors the segment read that need a gradient (its
"outer inputs": the arguments and every parameter or other tensor it reached, found by
watching the ops it ran). In the backward it recomputes the segment with the graph recorded,
the random state replayed (so dropout draws the same masks), and backpropagates the incoming
gradient through it to its outer inputs. Memory: activations of one segment at a time, plus
each segment's inputs; time: one more forward.

The forward records (and drops) the graph rather than running under ``no_grad()``: some
tinyattn ops take a faster path without a graph whose last bits differ, and the values that
leave the segment must be exactly those the recomputation reproduces, so that every gradient
equals the plain model's bit for bit.
"""
from __future__ import annotations

import contextlib
import warnings
from typing import Any, Callable, Dict, List, Sequence, Tuple

import numpy as np

from .. import autograd, backend
from ..amp import dispatch as _amp_dispatch
from ..amp.autocast_mode import autocast as _autocast
from ..autograd import Function, enable_grad
from ..tensor import Tensor

__all__ = ["checkpoint", "checkpoint_sequential", "CheckpointFunction"]

_REENTRANT_WARNING = (
    "torch.utils.checkpoint: the use_reentrant parameter should be passed explicitly. "
    "Starting in PyTorch 2.9, calling checkpoint without use_reentrant will raise an "
    "exception. use_reentrant=False is recommended, but if you need to preserve the current "
    "default behavior, you can pass use_reentrant=True. Refer to docs for more details on "
    "the differences between the two variants.")
_SEQUENTIAL_WARNING = (
    "torch.utils.checkpoint.checkpoint_sequential: the use_reentrant parameter should be "
    "passed explicitly. In version 2.9 we will raise an exception if use_reentrant is not "
    "passed. use_reentrant=False is recommended, but if you need to preserve the current "
    "default behavior, you can pass use_reentrant=True. Refer to docs for more details on "
    "the differences between the two variants.")


class _OuterInputRecorder:
    """An op observer (autograd.set_op_observer) that lists, in first-use order, the tensors
    needing a gradient that a segment's ops read but did not make."""

    def __init__(self, below: Any) -> None:
        self.below = below                       # the observer this one replaced (or None)
        self.made: set = set()                   # ids of tensors made inside the segment
        self.outer: Dict[int, Tensor] = {}
        self.unsaved_draws: List[str] = []       # devices drawn on whose state is not saved

    def apply(self, cls: type, inputs: Tuple[Any, ...], options: Dict[str, Any]) -> Any:
        probability = options.get("dropout_p", options.get("p", 1.0))
        if "generator" in options and options["generator"] is None and probability > 0:
            device = inputs[0].device           # a random op (dropout) on the default one
            if not _state_is_saved(device):
                self.unsaved_draws.append(device)
        for t in inputs:
            if isinstance(t, Tensor) and t.requires_grad and id(t) not in self.made:
                self.outer.setdefault(id(t), t)
        mine = autograd.set_op_observer(self.below)
        try:
            out = cls.apply(*inputs, **options)
        finally:
            autograd.set_op_observer(mine)
        self.note_made(out)
        return out

    def backward(self, fn: Function, grad: Any) -> Any:
        return fn.backward(grad) if self.below is None else self.below.backward(fn, grad)

    def note_made(self, out: Any) -> None:
        if isinstance(out, Tensor):
            self.made.add(id(out))


def _state_is_saved(device: str) -> bool:
    """Whether ``backend.get_rng_state`` saves the default generator of ``device`` (NumPy's
    are saved; CuPy keeps its generator's state on the GPU, out of reach)."""
    return isinstance(backend.default_generator(device), np.random.Generator)


class CheckpointFunction(Function):
    """The graph node of one checkpointed segment (made by ``checkpoint``, not by apply).

    Forward (in ``checkpoint``): out = function(*args), graph dropped; saved: function, args,
    random state, the outer inputs u_1..u_n and the versions of every tensor it will reread.
    Backward: set the random state saved, run out' = function(*args) again with a graph whose
    leaves are u_1..u_n (out' == out bit for bit: same ops, same inputs, same random draws),
    then d loss/d u_i = the backward of that graph from g = d loss/d out. Each u_i gets the
    gradient it would get without checkpointing, because the recomputed graph is that graph.
    A segment with one output that needs a gradient makes it. One with several makes a hidden
    0-d anchor tensor, and each of those outputs hangs off the anchor through a
    ``_SegmentOutput`` node, which the engine visits first, leaving its g_k in ``slots``: the
    recomputed graph is then walked from exactly the outputs a gradient came to, so a
    parameter only an unused output reads keeps ``grad=None``, as without checkpointing.
    (``use_reentrant=True`` gives the outputs no gradient reached a zero one, as torch's
    reentrant variant: there that parameter gets zeros, as in torch.) An output that needed no
    gradient in the forward (an argmax, a detached value) comes back detached, as torch's.
    """

    function: Callable[..., Any]
    args: Tuple[Any, ...] = ()
    kwargs: Dict[str, Any] = {}
    rng_state: Any = None
    autocast_dtypes: Dict[str, Any] = {}
    watched: Tuple[Tensor, ...] = ()      # the outer inputs and the tensor arguments
    output_meta: Tuple[Tuple[Tuple[int, ...], Any], ...] = ()
    slots: List[Any] = []                 # g_k of outputs k (None: no gradient came)
    anchor: int = 0                       # the output this node makes (-1: a hidden anchor)
    needs_grad: Tuple[bool, ...] = ()     # which outputs needed a gradient in the forward
    keeps_input_tensors = True            # its backward reruns the segment from them
    zero_fill: bool = False               # use_reentrant=True: unreached outputs get zeros

    def backward(self, grad: Any) -> Any:
        for t, version in zip(self.watched, self.saved[0]):
            if t._version_counter().value != version:
                raise RuntimeError(
                    f"checkpoint: a tensor the checkpointed segment read (shape {t.shape}, "
                    f"{t.dtype}) was modified by an inplace operation after the forward (it "
                    f"is at version {t._version_counter().value}; expected {version}); the "
                    f"backward recomputes the segment from it and would get another gradient. "
                    f"Change a copy instead, or update it after backward()")
        outputs = self._recompute()
        if self.anchor >= 0:                  # one output needs a gradient: this node made it
            self.slots[self.anchor] = grad
        xp = backend.get_array_module(grad)
        starts = [(out, xp.zeros(out.shape, dtype=out.dtype) if g is None else g)
                  for out, g, needed in zip(outputs, self.slots, self.needs_grad)
                  if needed and (g is not None or self.zero_fill)]
        self.slots[:] = [None] * len(self.slots)
        capture: Dict[int, Any] = {id(t): None for t in self.inputs}
        starts = [(out, g) for out, g in starts if out.requires_grad]
        if starts:
            autograd._run_backward_from(starts, False, capture, {})
        return tuple(capture[id(t)] for t in self.inputs)

    def _recompute(self) -> List[Tensor]:
        """Run the segment again with a graph that stops at the outer inputs: each is made a
        leaf for the while (its own history and hooks belong to the outer graph, whose
        engine sends the gradient on), then given back its history."""
        outer = self.inputs
        kept = [(t._ctx, t._hooks) for t in outer]
        here = backend.get_rng_state() if self.rng_state is not None else None
        try:
            for t in outer:
                t._ctx, t._hooks = None, None
            if self.rng_state is not None:
                backend.set_rng_state(self.rng_state)
            with enable_grad(), _autocast_as(self.autocast_dtypes):
                outputs = _tensors_of(self.function(*self.args, **self.kwargs))
        finally:
            for t, (ctx, hooks) in zip(outer, kept):
                t._ctx, t._hooks = ctx, hooks
            if here is not None:
                backend.set_rng_state(here)
        meta = tuple((t.shape, t.dtype) for t in outputs)
        if meta != self.output_meta:
            raise RuntimeError(
                f"checkpoint: the recomputed segment returned tensors of (shape, dtype) {meta}"
                f", but the forward returned {self.output_meta}; the checkpointed function "
                f"must compute the same thing each time it is called")
        return outputs


class _SegmentOutput(Function):
    """Output k of a segment that returns several tensors needing a gradient: a node reading
    the segment's hidden 0-d anchor, which leaves g_k in the segment node's ``slots[k]``.
    Backward: out_k does not depend on the anchor, so the anchor gets 0 (which still makes
    the engine visit the segment's node when only out_k reaches the loss)."""

    promotes_inputs = False    # passes each output through as it is: never cast one

    def backward(self, grad: Any) -> Any:
        slots, k, anchor = self.saved
        slots[k] = grad if slots[k] is None else slots[k] + grad
        return backend.get_array_module(anchor).zeros_like(anchor)


def checkpoint(function: Callable[..., Any], *args: Any, use_reentrant: Any = None,
               preserve_rng_state: bool = True, **kwargs: Any) -> Any:
    """``function(*args, **kwargs)`` without keeping its activations: they are recomputed in
    the backward (as ``torch.utils.checkpoint.checkpoint``; see the module docstring).

    ``use_reentrant`` not given: torch's warning, then ``True`` (torch 2.13's default).
    ``use_reentrant=True`` refuses keyword arguments, and when no tensor argument requires a
    gradient it warns and returns outputs that need none, as torch's does; ``False`` passes
    keyword arguments on and lets parameters alone carry the gradient.
    ``preserve_rng_state=False`` skips saving the random state (dropout then draws new
    masks in the recomputation, and the gradients are those of other masks).
    """
    if use_reentrant is None:
        warnings.warn(_REENTRANT_WARNING, UserWarning, stacklevel=2)
        use_reentrant = True
    if use_reentrant and kwargs:
        raise ValueError("Unexpected keyword arguments: " + ",".join(kwargs))
    if not callable(function):
        raise TypeError(f"checkpoint: function must be callable, got {type(function).__name__}")
    tensor_args = [a for a in args if isinstance(a, Tensor)]
    if use_reentrant and not any(t.requires_grad for t in tensor_args):
        warnings.warn("None of the inputs have requires_grad=True. Gradients will be None",
                      UserWarning, stacklevel=2)
        with autograd.no_grad():
            return function(*args)
    if not autograd.is_grad_enabled():
        return function(*args, **kwargs)          # nothing is recorded: nothing to save
    rng_state = backend.get_rng_state() if preserve_rng_state else None
    recorder = _OuterInputRecorder(autograd.set_op_observer(None))
    autograd.set_op_observer(recorder)
    try:
        result = function(*args, **kwargs)
    finally:
        autograd.set_op_observer(recorder.below)
    if preserve_rng_state and recorder.unsaved_draws:
        raise RuntimeError(
            f"checkpoint: the segment draws random numbers (dropout) on "
            f"{recorder.unsaved_draws[0]}, whose generator state tinyattn cannot save (CuPy "
            f"keeps it on the GPU), so the recomputation would draw other masks and the "
            f"gradients would be wrong. Use dropout 0 in checkpointed segments there, or pass "
            f"preserve_rng_state=False to accept new masks in the backward")
    outer = list(recorder.outer.values())
    return _link_outputs(result, outer, function, args, kwargs, rng_state, use_reentrant)


@contextlib.contextmanager
def _autocast_as(dtypes: Dict[str, Any]) -> Any:
    """The autocast state the forward ran under (device -> dtype; off elsewhere), as torch's
    checkpoint recomputes: the same casts, so the same graph and the same gradients."""
    with contextlib.ExitStack() as stack:
        for device in set(dtypes) | set(_amp_dispatch.autocast_state.dtypes):
            if device in dtypes:
                stack.enter_context(_autocast(device, dtype=dtypes[device]))
            else:
                stack.enter_context(_autocast(device, enabled=False))
        yield


def _link_outputs(result: Any, outer: List[Tensor], function: Callable[..., Any],
                  args: Tuple[Any, ...], kwargs: Dict[str, Any], rng_state: Any,
                  reentrant: bool = False) -> Any:
    """Replace the segment's output tensors (and their graph) by tensors made by one
    ``CheckpointFunction`` node (and a ``_SegmentOutput`` for each further tensor)."""
    outputs = _tensors_of(result)
    needing = [k for k, t in enumerate(outputs) if t.requires_grad]
    if not outer or not needing:
        return _replace_tensors(result, [t.detach() for t in outputs])
    node = CheckpointFunction()
    node.function, node.args, node.kwargs, node.rng_state = function, args, kwargs, rng_state
    node.autocast_dtypes = dict(_amp_dispatch.autocast_state.dtypes)   # replayed in backward
    node.inputs = tuple(outer)
    node.parents = tuple(t._ctx for t in outer)
    node.needs_input_grad = (True,) * len(outer)
    node.output_meta = tuple((t.shape, t.dtype) for t in outputs)
    node.watched = tuple(outer) + tuple(a for a in args if isinstance(a, Tensor))
    node.saved = (tuple(t._version_counter().value for t in node.watched),)
    node.slots = [None] * len(outputs)
    node.needs_grad = tuple(t.requires_grad for t in outputs)
    node.zero_fill = bool(reentrant)
    node.anchor = needing[0] if len(needing) == 1 else -1
    if node.anchor >= 0:
        first = Tensor._wrap(outputs[node.anchor]._data, requires_grad=True)
    else:
        xp = backend.get_array_module(outputs[needing[0]]._data)
        first = Tensor._wrap(xp.zeros((), dtype=outputs[needing[0]].dtype), requires_grad=True)
    first._ctx = node
    linked = []
    for k, t in enumerate(outputs):
        if k == node.anchor:
            linked.append(first)
            continue
        if not t.requires_grad:               # no gradient in the forward: none here either
            linked.append(t.detach())
            continue
        reader = _SegmentOutput()
        reader.inputs, reader.parents, reader.needs_input_grad = (first,), (node,), (True,)
        reader.saved = (node.slots, k, first._data)
        out = Tensor._wrap(t._data, requires_grad=True)
        out._ctx = reader
        linked.append(out)
    observer = autograd.function._op_observer   # a checkpoint around this one: made here
    if isinstance(observer, _OuterInputRecorder):
        for t in linked:
            observer.note_made(t)
    return _replace_tensors(result, linked)


def _tensors_of(result: Any) -> List[Tensor]:
    """The tensors of an output structure (tensor, tuple, list, dict, nested), in order."""
    if isinstance(result, Tensor):
        return [result]
    if isinstance(result, (tuple, list)):
        return [t for item in result for t in _tensors_of(item)]
    if isinstance(result, dict):
        return [t for item in result.values() for t in _tensors_of(item)]
    return []


def _replace_tensors(result: Any, linked: Sequence[Tensor]) -> Any:
    """``result`` with its tensors, in order, replaced by ``linked``."""
    queue = list(linked)

    def swap(item: Any) -> Any:
        if isinstance(item, Tensor):
            return queue.pop(0)
        if isinstance(item, tuple) and hasattr(item, "_fields"):     # a namedtuple
            return type(item)(*(swap(x) for x in item))
        if isinstance(item, (tuple, list)):
            return type(item)(swap(x) for x in item)
        if isinstance(item, dict):
            copy = item.copy()
            for key, x in item.items():
                copy[key] = swap(x)
            return copy
        return item
    return swap(result)


def checkpoint_sequential(functions: Any, segments: int, input: Tensor,  # noqa: A002
                          use_reentrant: Any = None, **kwargs: Any) -> Tensor:
    """Run ``functions`` (an ``nn.Sequential`` or a list of modules/functions) in order, in
    ``segments`` chunks, checkpointing every chunk but the last (as torch's: the last chunk's
    activations are needed at once by the backward, so recomputing them would only cost)."""
    if use_reentrant is None:
        warnings.warn(_SEQUENTIAL_WARNING, UserWarning, stacklevel=2)
        use_reentrant = True
    preserve = kwargs.pop("preserve_rng_state", True)
    if kwargs:
        raise ValueError("Unexpected keyword arguments: " + ",".join(kwargs))
    if hasattr(functions, "children") and not isinstance(functions, (list, tuple)):
        functions = list(functions.children())
    functions = list(functions)
    if not isinstance(segments, int) or segments < 1:
        raise ValueError(f"checkpoint_sequential: segments must be a positive int, got "
                         f"{segments!r}")

    def run(start: int, end: int) -> Callable[[Tensor], Tensor]:
        def forward(x: Tensor) -> Tensor:
            for j in range(start, end + 1):
                x = functions[j](x)
            return x
        return forward

    size = len(functions) // segments
    end = -1
    for start in range(0, size * (segments - 1), size):
        end = start + size - 1
        input = checkpoint(run(start, end), input, use_reentrant=use_reentrant,
                           preserve_rng_state=preserve)
    return run(end + 1, len(functions) - 1)(input)
