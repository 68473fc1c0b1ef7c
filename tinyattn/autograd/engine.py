"""The backward engine: ``run_backward`` (behind ``tensor.backward()``) and ``grad``
(``torch.autograd.grad``) (docs/derivations.md#autograd).

Read ``backward_walk`` first: it is the whole algorithm, as micrograd's ``Value.backward``
is. It sorts the Functions topologically with an explicit stack (a chain of 10,000 ops
needs no recursion), then visits them from the output back to the leaves, calling each
one's backward once its gradient is complete, summing the gradients that reach a Function
along several paths and handing each leaf its share.

Everything else is attached from outside the walk, in the two functions it is handed:
``call`` (``_backward_call``: the saved arrays' checks, the profiler and the trace hook,
freeing what was saved unless ``retain_graph=True``, the shape and anomaly checks; wrapped
by ``_with_tensor_hooks`` for ``register_hook`` and ``retain_grad``, and by ``_capturing``
for ``autograd.grad``) and ``deliver`` (``accumulate_grad``: ``leaf.grad +=`` under a
lock, so backward passes in several threads add up exactly; leaves with hooks are held
until the end, so their hooks see the whole gradient once; a leaf's post-accumulate hooks
run as soon as the last op that feeds it has delivered, ``_PendingLeaves``).
"""
from __future__ import annotations

import sys
import threading
from typing import TYPE_CHECKING, Any, Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np

from . import function
from .function import Function, _is_finite, _tensor_type
from .grad_mode import _UNKNOWN_LINE, _anomaly_enabled, _state
from .hooks import _post_accumulate_registered, _run_hooks, _run_post_accumulate_hooks

if TYPE_CHECKING:
    from ..tensor import Tensor

__all__ = ["run_backward", "backward_walk", "grad", "accumulate_grad", "refuse_create_graph"]

_grad_lock = threading.Lock()      # leaf gradients are added under it (threads share leaves)


def _topological_order(roots: Sequence[Function]) -> List[Function]:
    """Functions reachable from ``roots``, every one after all the Functions it reads from."""
    order: List[Function] = []
    visited = set()
    stack: List[Tuple[Function, bool]] = [(root, False) for root in reversed(roots)]
    while stack:
        fn, children_done = stack.pop()
        if children_done:
            order.append(fn)
            continue
        if id(fn) in visited:
            continue
        visited.add(id(fn))
        stack.append((fn, True))
        for parent, needed in zip(fn.parents, fn.needs_input_grad):
            if parent is not None and needed and id(parent) not in visited:
                stack.append((parent, False))
    return order


def _as_tuple(grads: Any) -> tuple:
    return grads if isinstance(grads, tuple) else (grads,)


def _as_array(grad: Any) -> Any:
    """NumPy reductions return scalars (np.float32(...)): gradients are always arrays, so a
    0-d parameter's ``.grad`` can be updated in place like any other."""
    return np.asarray(grad) if isinstance(grad, np.generic) else grad


def accumulate_grad(leaf: "Tensor", grad: Any, unshared: bool = False) -> None:
    """``leaf.grad += grad``, thread-safely. When the leaf has no gradient yet, ``.grad``
    becomes grad itself if ``unshared`` (nothing else refers to it: torch's AccumulateGrad
    takes such a gradient over too), else a copy, so two leaves never share one gradient
    array (in-place clipping or an optimizer writing into one must not change the other)."""
    with _grad_lock:
        if leaf._grad is None:
            leaf._grad = _tensor_type()._wrap(grad if unshared else grad.copy())
        elif _writable(leaf._grad._data):
            leaf._grad._data += grad
            leaf._grad._bump_version()
        else:       # a user-assigned read-only grad (expand()ed): a new sum, as torch does
            leaf._grad = _tensor_type()._wrap(leaf._grad._data + grad)


def _writable(array: Any) -> bool:
    """False for read-only memory and for broadcast views (a stride of 0 repeats an element:
    adding into it would add many times into one place)."""
    if not getattr(array.flags, "writeable", True):
        return False
    return not any(step == 0 and n > 1 for step, n in zip(array.strides, array.shape))


def run_backward(root: "Tensor", grad: Any, retain_graph: bool = False,
                 capture: Optional[Dict[int, Any]] = None,
                 captured_fns: Optional[Dict[int, int]] = None) -> None:
    """Push ``grad`` (d loss / d root) back to every leaf that requires a gradient.

    With ``capture`` (``{id(tensor): None}``), the gradients of those tensors are stored in
    the dict instead of being added into ``.grad`` (for ``tinyattn.autograd.grad``);
    ``captured_fns`` maps id(Function that made a captured non-leaf) -> id(that tensor)."""
    _run_backward_from([(root, grad)], retain_graph, capture, captured_fns)


# ------------------------------------------------------------------ the walk
def backward_walk(roots: Sequence[Function], grads: Dict[int, Any],
                  call: Callable[[Function, Any], Sequence[Any]],
                  deliver: Callable[["Tensor", Any], None]) -> None:
    """The whole algorithm. ``grads`` holds d loss / d output of the ``roots``, by id of the
    Function that made it; ``call(fn, grad)`` runs fn's backward and returns one gradient per
    input (None: none needed); ``deliver(leaf, grad)`` keeps a leaf's share."""
    for fn in reversed(_topological_order(roots)):  # every consumer before its producer
        fn_grad = grads.pop(id(fn), None)
        if fn_grad is None:
            continue                                # no gradient reached this op
        for t, parent, g in zip(fn.inputs, fn.parents, call(fn, fn_grad)):
            if g is None:
                continue                            # this input needs no gradient
            if parent is None:
                deliver(t, g)                       # a leaf: its share of d loss / d t
            else:                                   # an op's output: add up the paths
                key = id(parent)
                grads[key] = g if key not in grads else grads[key] + g


# ------------------------------------------------------------------ around the walk
def _run_backward_from(starts: Sequence[Tuple["Tensor", Any]], retain_graph: bool,
                       capture: Optional[Dict[int, Any]],
                       captured_fns: Optional[Dict[int, int]]) -> None:
    """One backward pass from several (output, d loss / d output) pairs at once, so that
    outputs sharing a graph send their gradients through it together (each Function runs
    once, with the sum), as ``torch.autograd.grad([y, z], ...)`` does. The walk is
    ``backward_walk``; what this adds is attached to the two functions it is handed."""
    grads: Dict[int, Any] = {}
    held: Dict[int, Tuple["Tensor", Any]] = {}     # leaves with hooks: their summed gradient
    roots: List[Function] = []
    deliver = lambda leaf, g: _deliver_or_hold(leaf, g, capture, held)   # noqa: E731
    pending = None
    if capture is None and _post_accumulate_registered[0] > 0:
        pending = _PendingLeaves([r._ctx for r, _ in starts if r._ctx is not None], held,
                                 deliver)
        deliver = pending.deliver
    for root, grad in starts:
        if root._ctx is None:
            deliver(root, grad)
            continue
        key = id(root._ctx)
        if key not in grads:
            roots.append(root._ctx)
        grads[key] = grad if key not in grads else grads[key] + grad
    if roots:
        call = _backward_call(retain_graph, function._op_observer, _state.backward_hook,
                              _anomaly_enabled())
        call = _with_tensor_hooks(call) if capture is None else \
            _capturing(call, roots, capture, captured_fns or {})
        with np.errstate(all="ignore"):    # inf/NaN gradients quietly, as torch (backend.py)
            backward_walk(roots, grads, call, deliver)
    for leaf, grad in held.values():       # a leaf's hooks see its whole gradient, once
        _deliver(leaf, _run_hooks(leaf._hooks, grad), capture)
    if pending is not None:
        pending.finish()


class _PendingLeaves:
    """When is a leaf's gradient complete? When every edge of the graph that leads to it has
    delivered: the leaves with post-accumulate hooks are counted before the walk, each
    delivery counts down, and at zero the hooks run (DistributedDataParallel starts
    averaging there, while the walk goes on). Leaves still waiting at the end (an op that
    got no gradient, a leaf held for its ``register_hook`` hooks) run theirs then."""

    def __init__(self, roots: Sequence[Function], held: Dict[int, Any],
                 deliver: Callable[["Tensor", Any], None]):
        self.left: Dict[int, int] = {}
        self.received: Dict[int, "Tensor"] = {}
        self.held, self._deliver = held, deliver
        for fn in _topological_order(roots):
            for t, parent, needed in zip(fn.inputs, fn.parents, fn.needs_input_grad):
                if parent is None and needed and t._post_accumulate_hooks:
                    self.left[id(t)] = self.left.get(id(t), 0) + 1

    def deliver(self, leaf: "Tensor", grad: Any) -> None:
        self._deliver(leaf, grad)
        if not leaf._post_accumulate_hooks:
            return
        self.received[id(leaf)] = leaf
        self.left[id(leaf)] = self.left.get(id(leaf), 1) - 1
        if self.left[id(leaf)] == 0 and id(leaf) not in self.held:
            del self.received[id(leaf)]
            _run_post_accumulate_hooks(leaf)

    def finish(self) -> None:
        for leaf in self.received.values():
            _run_post_accumulate_hooks(leaf)


def _backward_call(retain_graph: bool, observer: Any, trace: Any, anomaly: bool
                   ) -> Callable[[Function, Any], Tuple[Any, ...]]:
    """``fn.backward(grad)`` with what the engine checks around it: the saved arrays are
    still there and unchanged, the profiler (``set_op_observer``) and the trace hook
    (``set_backward_hook``) see the call, the saved arrays are freed after it (unless
    ``retain_graph``), each gradient has its input's shape (and, under ``detect_anomaly``,
    no NaN or Inf). Returns one gradient per input, None where none is needed."""
    def call(fn: Function, grad: Any) -> Tuple[Any, ...]:
        if fn.saved is None:
            raise RuntimeError(
                f"trying to backward through the graph a second time (at "
                f"{type(fn).__name__}): its saved arrays were freed by the first backward. "
                f"Pass retain_graph=True to the first .backward() if you need to call it twice")
        if fn._versions:
            fn._check_versions()
        if observer is None:
            input_grads = _as_tuple(fn.backward(grad))
        else:                               # the profiler watches (set_op_observer)
            input_grads = _as_tuple(observer.backward(fn, grad))
        if trace is not None:
            trace(fn, grad, input_grads)
        checked = tuple(_checked(fn, t, g, anomaly) if needed and g is not None else None
                        for t, needed, g in zip(fn.inputs, fn.needs_input_grad, input_grads))
        if not retain_graph:
            # as torch: a node that saved no array (Add keeps only shapes) can run backward
            # again; one that saved arrays frees them, and a second backward raises
            if fn.saved is None or fn.keeps_input_tensors or \
                    any(hasattr(item, "dtype") for item in fn.saved):
                fn.saved = None
            if fn.keeps_input_tensors:      # built outside apply: its inputs go now
                function.release_inputs(fn)
        return checked
    return call


def _checked(fn: Function, t: "Tensor", g: Any, anomaly: bool) -> Any:
    g = _as_array(g)
    if g.shape != t.shape:
        raise RuntimeError(
            f"internal error: {type(fn).__name__}.backward returned a gradient of "
            f"shape {g.shape} for an input of shape {t.shape}")
    if g.dtype.kind == "c" and t.dtype.kind != "c":
        raise RuntimeError(        # an op's backward forgot to take the real part: loud
            f"internal error: {type(fn).__name__}.backward returned a complex gradient "
            f"({g.dtype}) for a real input ({t.dtype})")
    if anomaly and not _is_finite(g):
        raise FloatingPointError(
            f"anomaly: the backward of {type(fn).__name__} produced NaN or Inf "
            f"(op created at {fn.created_at or _UNKNOWN_LINE})")
    return g


def _with_tensor_hooks(call: Callable) -> Callable:
    """Before an op's backward: its output's ``register_hook`` hooks (they may replace the
    gradient), then ``retain_grad`` (the output keeps the gradient, hooks applied)."""
    def hooked(fn: Function, grad: Any) -> Tuple[Any, ...]:
        if fn._hooks:
            grad = _run_hooks(fn._hooks, grad)
        if fn._retained is not None:
            output = fn._retained()
            if output is not None and output._ctx is fn:
                accumulate_grad(output, grad)
        return call(fn, grad)
    return hooked


def _capturing(call: Callable, roots: Sequence[Function], capture: Dict[int, Any],
               captured_fns: Dict[int, int]) -> Callable:
    """``autograd.grad``: run only the backwards that lead to an asked-for tensor (as
    PyTorch's engine does; a branch that does not is skipped, hooks and all, even one already
    freed), and store the gradient of each asked-for non-leaf when its op is reached (after
    its hooks)."""
    leading = _leading_to_captured(_topological_order(roots), capture, captured_fns)

    def store(fn: Function, grad: Any) -> Tuple[Any, ...]:
        if id(fn) in captured_fns:
            capture[captured_fns[id(fn)]] = grad
        return call(fn, grad) if id(fn) in leading else ()

    hooked = _with_tensor_hooks(store)

    def capturing(fn: Function, grad: Any) -> Tuple[Any, ...]:
        if id(fn) not in leading and id(fn) not in captured_fns:
            return ()               # nothing asked for lies at or below it
        return hooked(fn, grad)
    return capturing


def _deliver_or_hold(leaf: "Tensor", grad: Any, capture: Optional[Dict[int, Any]],
                     held: Dict[int, Tuple["Tensor", Any]]) -> None:
    """Deliver a leaf's gradient now, or, when the leaf has hooks, add it to ``held`` so its
    hooks run once on the sum of every path's share (as PyTorch's do)."""
    if not leaf._hooks or (capture is not None and id(leaf) not in capture):
        _deliver(leaf, grad, capture)     # autograd.grad() skips leaves it was not asked for
        return
    key = id(leaf)
    held[key] = (leaf, grad if key not in held else held[key][1] + grad)


def _leading_to_captured(order: Sequence[Function], capture: Dict[int, Any],
                         captured_fns: Dict[int, int]) -> set:
    """ids of the Functions whose backward reaches a tensor ``autograd.grad`` asked for. As
    in PyTorch's engine, only these run, and a retain_grad() output is filled when its
    Function runs (or is itself asked for). ``order`` lists producers first."""
    leading: set = set()
    for fn in order:
        for t, parent, needed in zip(fn.inputs, fn.parents, fn.needs_input_grad):
            if needed and (id(t) in capture if parent is None
                           else id(parent) in leading or id(parent) in captured_fns):
                leading.add(id(fn))
                break
    return leading


def _deliver(leaf: "Tensor", grad: Any, capture: Optional[Dict[int, Any]]) -> None:
    if capture is None:
        accumulate_grad(leaf, grad, _unshared(grad))
    elif id(leaf) in capture:
        previous = capture[id(leaf)]
        capture[id(leaf)] = grad if previous is None else previous + grad


# How many references a gradient that nothing else holds has when _unshared counts them on
# the walk's usual path: the tuple call() returned, zip's result tuple and the loop variable
# in backward_walk, the deliver lambda, _deliver_or_hold, _deliver (and its argument already
# pushed for accumulate_grad), _unshared, getrefcount's own argument. Measured, and checked by
# tests/test_autograd_memory.py (a gradient taken over, shared ones copied). CPython before
# 3.14 only: 3.14 borrows references on its stack, so there the count would prove nothing
# and every first gradient is copied, as before.
_UNSHARED_REFS = 9 if sys.implementation.name == "cpython" and sys.version_info < (3, 14) \
    else -1


def _unshared(grad: Any) -> bool:
    """May ``.grad`` take this array over instead of a copy? Only a writable, C-contiguous
    NumPy array that owns its memory (not a view: a view's base may be shared) and that
    nothing outside the engine's own call chain refers to: not a tensor, not an array an op
    saved (a retained graph), not another leaf's share of the same gradient, not a cache.
    Any other path to here holds more references, so it gets a copy, which is always safe."""
    return (type(grad) is np.ndarray and grad.base is None and grad.flags.writeable
            and grad.flags.c_contiguous and sys.getrefcount(grad) == _UNSHARED_REFS)


def refuse_create_graph(create_graph: bool) -> None:
    if create_graph:
        raise NotImplementedError(
            "create_graph=True (gradients of gradients) is not supported by tinyattn: each "
            "backward is hand-written on arrays and records no graph of its own. Compute "
            "second derivatives by finite differences of autograd.grad, or in PyTorch")


def grad(outputs: Any, inputs: Any, grad_outputs: Any = None, retain_graph: Optional[bool] = None,
         create_graph: bool = False, only_inputs: bool = True, allow_unused: Optional[bool] = None,
         is_grads_batched: bool = False, materialize_grads: bool = False) -> Tuple[Any, ...]:
    """``torch.autograd.grad``: the gradients of ``outputs`` with respect to ``inputs``,
    returned as Tensors instead of being added into ``.grad``. ``materialize_grads=True``
    gives zeros (not None) for an input the outputs do not depend on, and implies
    ``allow_unused`` (torch's rule: both at once, with allow_unused=False, is refused)."""
    if materialize_grads and allow_unused is False:
        raise ValueError("Expected allow_unused to be True or not passed when "
                         "materialize_grads=True, but got: allow_unused=False.")
    if is_grads_batched:
        raise NotImplementedError("autograd.grad(is_grads_batched=True) (vmap over the "
                                  "gradients) is not implemented in tinyattn; call grad once "
                                  "per gradient row")
    allow_unused = bool(allow_unused) or materialize_grads
    refuse_create_graph(create_graph)
    tensor_type = _tensor_type()
    outputs = [outputs] if isinstance(outputs, tensor_type) else list(outputs)
    single = isinstance(inputs, tensor_type)
    inputs = [inputs] if single else list(inputs)
    if grad_outputs is None:
        grad_outputs = [None] * len(outputs)
    elif isinstance(grad_outputs, tensor_type):    # one tensor is one gradient, as torch (not
        grad_outputs = [grad_outputs]              # one for each output)
    capture: Dict[int, Any] = {id(t): None for t in inputs}
    captured_fns = {id(t._ctx): id(t) for t in inputs if t._ctx is not None}
    if len(grad_outputs) != len(outputs):
        raise RuntimeError(f"grad_outputs has {len(grad_outputs)} entries for {len(outputs)} "
                           f"outputs (torch: 'got {len(outputs)} tensors and "
                           f"{len(grad_outputs)} gradients'); give one per output (None for a "
                           f"one-element output)")
    starts = [(out, out._initial_grad(g)) for out, g in zip(outputs, grad_outputs)]
    _run_backward_from(starts, bool(retain_graph), capture, captured_fns)
    results = []
    for i, t in enumerate(inputs):
        g = capture[id(t)]
        if g is None and not allow_unused:
            raise RuntimeError(f"input {i} (shape {t.shape}) was not used to compute the "
                               f"outputs (or does not require grad); pass allow_unused=True "
                               f"to get None for it")
        if g is None and materialize_grads:
            results.append(t.new_zeros(tuple(t.shape)))
            continue
        results.append(None if g is None else tensor_type._wrap(g))
    return tuple(results)


def backward(tensors: Any, grad_tensors: Any = None, retain_graph: Optional[bool] = None,
             create_graph: bool = False, inputs: Any = None) -> None:
    """``torch.autograd.backward``: ``t.backward(g)`` for several outputs at once, in one
    walk of the graph (a node they share runs once, with their gradients summed)."""
    refuse_create_graph(create_graph)
    tensor_type = _tensor_type()
    tensors = [tensors] if isinstance(tensors, tensor_type) else list(tensors)
    if grad_tensors is None:
        grad_tensors = [None] * len(tensors)
    elif isinstance(grad_tensors, tensor_type):    # one tensor is one gradient, as torch
        grad_tensors = [grad_tensors]
    grad_tensors = list(grad_tensors)
    if len(grad_tensors) != len(tensors):
        raise RuntimeError(f"grad_tensors has {len(grad_tensors)} entries for {len(tensors)} "
                           f"tensors; give one per tensor (None for a one-element tensor)")
    if len(tensors) == 1:
        tensors[0].backward(grad_tensors[0], retain_graph=retain_graph, inputs=inputs)
        return
    if inputs is not None:
        targets = [inputs] if isinstance(inputs, tensor_type) else list(inputs)
        found = grad(tensors, targets, grad_outputs=grad_tensors, retain_graph=retain_graph,
                     allow_unused=True)
        for target, g in zip(targets, found):
            if g is not None:
                accumulate_grad(target, g._data)
        return
    for i, t in enumerate(tensors):
        if not t.requires_grad:
            raise RuntimeError(f"element {i} of tensors does not require grad and does not "
                               f"have a grad_fn")
    starts = [(t, t._initial_grad(g)) for t, g in zip(tensors, grad_tensors)]
    _run_backward_from(starts, bool(retain_graph), None, None)
