"""Reverse-mode automatic differentiation: ``Function``, the backward engine, grad modes.

An op is a ``Function`` subclass with ``forward`` (arrays in, array out) and ``backward``
(the gradient of the output in, one gradient per input out), written a few lines apart.
``Function.apply`` wraps the arrays of its ``Tensor`` inputs, runs ``forward``, and, when any
input requires a gradient, links the output to the ``Function`` instance so the engine can
walk back through it.

The engine (``run_backward``) sorts the graph topologically with an explicit stack (a chain of
10,000 ops needs no recursion), then visits nodes from the output back to the leaves, summing
the gradients that reach a tensor along several paths. After a backward the saved arrays are
freed unless ``retain_graph=True``. The engine is explained in docs/derivations.md#autograd.
"""
from __future__ import annotations

import contextlib
import os
import threading
import traceback
from typing import TYPE_CHECKING, Any, Iterator, List, Optional, Tuple

import numpy as np

from . import backend

if TYPE_CHECKING:  # only for annotations; tensor.py imports this module, not the reverse
    from .tensor import Tensor

__all__ = ["Function", "no_grad", "enable_grad", "is_grad_enabled", "detect_anomaly",
           "run_backward", "unbroadcast"]

class _ThreadState(threading.local):
    """Per-thread switches; the class attributes are each new thread's defaults (read as
    plain attributes: every op checks them, so no getattr fallback on the hot path)."""

    grad_enabled = True
    anomaly = False


_state = _ThreadState()
_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep
_UNKNOWN_LINE = "an unknown line: its forward ran outside detect_anomaly()"
_tensor_class: Any = None  # tinyattn.tensor.Tensor, imported on first use (see _tensor_type)


def is_grad_enabled() -> bool:
    return _state.grad_enabled


def _anomaly_enabled() -> bool:
    return _state.anomaly


def _tensor_type() -> Any:
    """``Tensor``, imported once: tensor.py imports this module, so a top-level import here
    would be circular, and an import statement inside ``apply`` costs a microsecond per op."""
    global _tensor_class
    if _tensor_class is None:
        from .tensor import Tensor  # noqa: PLC0415 - same layer; avoids an import cycle
        _tensor_class = Tensor
    return _tensor_class


@contextlib.contextmanager
def no_grad() -> Iterator[None]:
    """Inside this block no graph is recorded (for evaluation and parameter updates)."""
    previous = is_grad_enabled()
    _state.grad_enabled = False
    try:
        yield
    finally:
        _state.grad_enabled = previous


@contextlib.contextmanager
def enable_grad() -> Iterator[None]:
    previous = is_grad_enabled()
    _state.grad_enabled = True
    try:
        yield
    finally:
        _state.grad_enabled = previous


@contextlib.contextmanager
def detect_anomaly() -> Iterator[None]:
    """Raise at the first op whose forward or backward makes NaN or Inf.

    The error names the op and the line of user code that created it. Slower: it checks
    every array and records a stack for every op, so use it while debugging only.
    """
    previous = _anomaly_enabled()
    _state.anomaly = True
    try:
        yield
    finally:
        _state.anomaly = previous


def _user_frame() -> str:
    """The innermost stack frame outside the tinyattn package, as 'file:line in func: code'."""
    for frame in reversed(traceback.extract_stack()[:-2]):
        if not os.path.abspath(frame.filename).startswith(_PACKAGE_DIR):
            return f"{frame.filename}:{frame.lineno} in {frame.name}: {frame.line}"
    return "<inside tinyattn>"


def _is_finite(array: Any) -> bool:
    xp = backend.get_array_module(array)
    if not xp.issubdtype(array.dtype, xp.floating):
        return True
    return bool(xp.isfinite(array).all())


def unbroadcast(grad: Any, shape: Tuple[int, ...]) -> Any:
    """Sum ``grad`` down to ``shape``: the backward of NumPy broadcasting.

    Broadcasting copies an input along new leading axes and along axes of size 1; the copies
    each pass their gradient back, so the input's gradient is the sum over those axes.
    """
    if grad.shape == tuple(shape):
        return grad
    extra = grad.ndim - len(shape)
    if extra > 0:
        grad = grad.sum(axis=tuple(range(extra)))
    axes = tuple(i for i, n in enumerate(shape) if n == 1 and grad.shape[i] != 1)
    if axes:
        grad = grad.sum(axis=axes, keepdims=True)
    return grad


class Function:
    """Base class of every differentiable op.

    Subclasses implement ``forward(self, *arrays, **options) -> array`` and
    ``backward(self, grad) -> gradient or tuple of gradients`` (``None`` for an input that needs
    none; ``self.needs_input_grad[i]`` says which do). A backward never writes into ``grad``:
    it may be a read-only broadcast view, or shared with another branch of the graph. Keep
    what backward needs with ``self.save_for_backward(...)``; read it back as ``self.saved``.
    """

    inputs: Tuple["Tensor", ...] = ()
    needs_input_grad: Tuple[bool, ...] = ()
    saved: Optional[Tuple[Any, ...]] = ()
    created_at: Optional[str] = None

    def save_for_backward(self, *arrays: Any) -> None:
        self.saved = arrays

    def forward(self, *arrays: Any, **options: Any) -> Any:
        raise NotImplementedError

    def backward(self, grad: Any) -> Any:
        raise NotImplementedError

    @classmethod
    def apply(cls, *inputs: "Tensor", **options: Any) -> "Tensor":
        if len(inputs) > 1:  # one input cannot disagree with itself
            _check_inputs_agree(cls.__name__, inputs)
        fn = cls()
        fn.needs_input_grad = tuple([t.requires_grad for t in inputs])
        out_data = fn.forward(*[t.data for t in inputs], **options)
        if isinstance(out_data, np.generic):  # NumPy reductions return scalars, not arrays
            out_data = np.asarray(out_data)
        track = any(fn.needs_input_grad) and _state.grad_enabled
        out = _tensor_type()._wrap(out_data, requires_grad=track)
        if track:
            fn.inputs = inputs
            out._ctx = fn
        else:
            fn.saved = None
        if _state.anomaly:
            fn.created_at = _user_frame()
            if not _is_finite(out_data):
                raise FloatingPointError(
                    f"anomaly: the forward of {cls.__name__} produced NaN or Inf "
                    f"(created at {fn.created_at})")
        return out


def _check_inputs_agree(op: str, inputs: Tuple["Tensor", ...]) -> None:
    """Raise unless the inputs share one device and their floating dtypes agree.

    The common case is decided in one pass: one array type (np.ndarray, cupy.ndarray, ...)
    means one device, and one dtype means nothing to mix. Anything else gets the full checks.
    """
    first = inputs[0].data
    kind, dtype = type(first), first.dtype
    for t in inputs:
        if type(t.data) is not kind or t.data.dtype != dtype:
            break
    else:
        return
    _check_same_device(op, inputs)
    _check_same_float_dtype(op, inputs)


def _check_same_device(op: str, inputs: Tuple["Tensor", ...]) -> None:
    devices = {t.device for t in inputs}
    if len(devices) > 1:
        names = " and ".join(sorted(devices))
        raise RuntimeError(
            f"{op}: inputs are on different devices ({names}); move them to one device "
            f"with .to('cpu') or .to('cuda') first")


def _check_same_float_dtype(op: str, inputs: Tuple["Tensor", ...]) -> None:
    dtypes = {t.dtype for t in inputs if t.dtype.kind == "f"}  # kind "f": a floating dtype
    if len(dtypes) > 1:
        names = " and ".join(sorted(str(d) for d in dtypes))
        raise TypeError(
            f"{op}: inputs mix floating dtypes ({names}); tinyattn never upcasts silently. "
            f"Convert one side with .float() or .double() (or .to(dtype)) first")


def _topological_order(root: "Tensor") -> List["Tensor"]:
    """Tensors reachable from ``root`` through recorded ops, inputs before outputs."""
    order: List["Tensor"] = []
    visited = set()
    stack: List[Tuple["Tensor", bool]] = [(root, False)]
    while stack:
        node, children_done = stack.pop()
        if children_done:
            order.append(node)
            continue
        if id(node) in visited:
            continue
        visited.add(id(node))
        stack.append((node, True))
        if node._ctx is not None:
            for parent in node._ctx.inputs:
                if parent.requires_grad and id(parent) not in visited:
                    stack.append((parent, False))
    return order


def _as_tuple(grads: Any) -> tuple:
    return grads if isinstance(grads, tuple) else (grads,)


def run_backward(root: "Tensor", grad: Any, retain_graph: bool = False) -> None:
    """Push ``grad`` (d loss / d root) back to every leaf that requires a gradient."""
    order = _topological_order(root)
    grads = {id(root): grad}
    anomaly = _anomaly_enabled()
    for node in reversed(order):
        node_grad = grads.pop(id(node), None)
        if node_grad is None:
            continue
        fn = node._ctx
        if fn is None or node._retains_grad:
            # A copy, so two leaves never share one gradient array (in-place clipping or an
            # optimizer writing into one must not change the other).
            node.grad = node_grad.copy() if node.grad is None else node.grad + node_grad
        if fn is None:
            continue
        if fn.saved is None:
            raise RuntimeError(
                f"trying to backward through the graph a second time (at "
                f"{type(fn).__name__}): its saved arrays were freed by the first backward. "
                f"Pass retain_graph=True to the first .backward() if you need to call it twice")
        input_grads = _as_tuple(fn.backward(node_grad))
        if not retain_graph:
            fn.saved = None
        for parent, parent_grad in zip(fn.inputs, input_grads):
            if parent_grad is None or not parent.requires_grad:
                continue
            if parent_grad.shape != parent.shape:
                raise RuntimeError(
                    f"internal error: {type(fn).__name__}.backward returned a gradient of "
                    f"shape {parent_grad.shape} for an input of shape {parent.shape}")
            if anomaly and not _is_finite(parent_grad):
                raise FloatingPointError(
                    f"anomaly: the backward of {type(fn).__name__} produced NaN or Inf "
                    f"(op created at {fn.created_at or _UNKNOWN_LINE})")
            key = id(parent)
            grads[key] = parent_grad if key not in grads else grads[key] + parent_grad
