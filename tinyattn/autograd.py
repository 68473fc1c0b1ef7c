"""Reverse-mode automatic differentiation: ``Function``, the backward engine, grad modes.

An op is a ``Function`` subclass with ``forward`` (arrays in, array out) and ``backward``
(the gradient of the output in, one gradient per input out), written a few lines apart.
``Function.apply`` runs ``forward`` on the arrays of its ``Tensor`` inputs and, when any input
requires a gradient, links the output to the ``Function`` instance. Each ``Function`` remembers
the ``Function`` that made each of its inputs (``parents``), fixed at the moment it ran: the
graph is a graph of Functions, so an in-place op that later gives a tensor a new history
cannot rewire what was recorded before it.

The engine (``run_backward``) sorts the Functions topologically with an explicit stack (a
chain of 10,000 ops needs no recursion), then visits them from the output back to the leaves,
summing the gradients that reach a Function along several paths and adding each leaf's share
into ``leaf.grad`` (under a lock, so backward passes in several threads add up exactly).
After a backward the saved arrays are freed unless ``retain_graph=True``.

Version counters: every in-place change of a tensor's data (``x.add_(1)``, ``x[0] = 2``,
``with no_grad(): w -= lr * w.grad``) adds one to its version. When an op saves an input's (or
its output's) array for backward, it notes that version; if the backward finds a different one,
the array it needs was overwritten and the gradient would be wrong, so it raises instead
(PyTorch's "modified by an inplace operation"). The engine is explained in
docs/derivations.md#autograd.

PyTorch-style custom functions work too: a subclass whose ``forward`` and ``backward`` are
``@staticmethod``s taking ``ctx`` (``ctx.save_for_backward(...)``, ``ctx.saved_tensors``)
is applied with ``MyFunction.apply(...)`` exactly as in ``torch.autograd.Function``.
"""
from __future__ import annotations

import contextlib
import inspect
import os
import threading
import traceback
import weakref
from typing import TYPE_CHECKING, Any, Dict, Iterator, List, Optional, Sequence, Tuple

import numpy as np

from . import backend
from .precision import is_floating

if TYPE_CHECKING:  # only for annotations; tensor.py imports this module, not the reverse
    from .tensor import Tensor

__all__ = ["Function", "FunctionCtx", "no_grad", "enable_grad", "inference_mode",
           "set_grad_enabled", "is_grad_enabled", "detect_anomaly", "run_backward", "grad",
           "unbroadcast", "VersionCounter", "set_backward_hook", "set_current_module",
           "register_hook", "RemovableHandle"]


class _ThreadState(threading.local):
    """Per-thread switches; the class attributes are each new thread's defaults (read as
    plain attributes: every op checks them, so no getattr fallback on the hot path)."""

    grad_enabled = True
    anomaly = False
    backward_hook: Any = None      # set_backward_hook(); tinyattn.viz.trace_backward uses it
    module: Any = None             # the innermost nn.Module running its forward (Function.module)


_state = _ThreadState()
_grad_lock = threading.Lock()      # leaf gradients are added under it (threads share leaves)
_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep
_UNKNOWN_LINE = "an unknown line: its forward ran outside detect_anomaly()"
_tensor_class: Any = None  # tinyattn.tensor.Tensor, imported on first use (see _tensor_type)
# tinyattn.amp's dispatch hook (autocast, float32 compute of half dtypes), None when neither
# is in use: hook(cls, inputs, options) returns the output, or None to run the op as it is.
dispatch_hook: Any = None


class VersionCounter:
    """How many times a tensor's data was changed in place. Views of a tensor (reshape,
    permute, basic indexing, detach) share their base's counter, as they share its memory.
    ``savers`` holds weak references to the Functions that saved that memory for backward
    (so ``.data`` of the base and of every view is read-only while one is pending)."""

    __slots__ = ("value", "savers")

    def __init__(self) -> None:
        self.value = 0
        self.savers: Optional[List[Any]] = None


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


class _GradMode:
    """``no_grad()``, ``enable_grad()`` and ``set_grad_enabled(mode)``: a context manager
    and a decorator, as in PyTorch."""

    def __init__(self, mode: bool):
        self.mode = bool(mode)
        self.previous: List[bool] = []

    def __enter__(self) -> None:
        self.previous.append(_state.grad_enabled)
        _state.grad_enabled = self.mode

    def __exit__(self, *exc: Any) -> None:
        _state.grad_enabled = self.previous.pop()

    def __call__(self, fn: Any) -> Any:
        mode = self.mode

        def wrapper(*args: Any, **kwargs: Any) -> Any:
            with _GradMode(mode):
                return fn(*args, **kwargs)
        wrapper.__name__, wrapper.__doc__ = fn.__name__, fn.__doc__
        wrapper.__wrapped__ = fn  # type: ignore[attr-defined]
        return wrapper


def no_grad(func: Any = None) -> Any:
    """Inside this block (or decorated function) no graph is recorded: for evaluation and
    parameter updates. ``@no_grad()`` and ``@no_grad`` both decorate, as in PyTorch."""
    return _GradMode(False) if func is None else _GradMode(False)(func)


def enable_grad(func: Any = None) -> Any:
    return _GradMode(True) if func is None else _GradMode(True)(func)


def inference_mode(mode: Any = True) -> Any:
    """PyTorch's ``inference_mode``: here the same as ``no_grad()`` (``mode=False``: recording
    on); also a decorator, with or without parentheses."""
    if callable(mode):
        return _GradMode(False)(mode)
    return _GradMode(not mode)


class set_grad_enabled(_GradMode):  # noqa: N801 - PyTorch's name
    """``set_grad_enabled(False)`` is ``no_grad()``; also callable as a plain function:
    ``set_grad_enabled(False)`` on its own line switches recording off until switched on."""

    def __init__(self, mode: bool):
        super().__init__(mode)
        self.previous.append(_state.grad_enabled)
        _state.grad_enabled = self.mode

    def __enter__(self) -> None:
        pass                      # already switched by __init__, as torch's does

    def __exit__(self, *exc: Any) -> None:
        _state.grad_enabled = self.previous.pop()


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


def set_backward_hook(hook: Any) -> Any:
    """Call ``hook(fn, grad, input_grads)`` after each op's backward in this thread (None
    switches it off); returns the previous hook. For watching the engine work: see
    ``tinyattn.viz.trace_backward``. Off, it costs one attribute read per backward pass."""
    previous, _state.backward_hook = _state.backward_hook, hook
    return previous


def set_current_module(module: Any) -> Any:
    """Make ``module`` the one whose forward is running in this thread (``nn.Module.__call__``
    does it); each Function recorded meanwhile keeps it as ``fn.module``, so a graph can be
    grouped by module (``tinyattn.viz.explore``). Returns the previous one, to restore."""
    previous, _state.module = _state.module, module
    return previous


def _user_frame() -> str:
    """The innermost stack frame outside the tinyattn package, as 'file:line in func: code'."""
    for frame in reversed(traceback.extract_stack()[:-2]):
        if not os.path.abspath(frame.filename).startswith(_PACKAGE_DIR):
            return f"{frame.filename}:{frame.lineno} in {frame.name}: {frame.line}"
    return "<inside tinyattn>"


def _is_finite(array: Any) -> bool:
    xp = backend.get_array_module(array)
    if not is_floating(array.dtype):
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


def _is_static(cls: type, name: str) -> bool:
    return isinstance(inspect.getattr_static(cls, name, None), staticmethod)


class Function:
    """Base class of every differentiable op.

    tinyattn's own style: subclasses implement ``forward(self, *arrays, **options) -> array``
    and ``backward(self, grad) -> gradient or tuple of gradients`` (``None`` for an input that
    needs none; ``self.needs_input_grad[i]`` says which do). A backward never writes into
    ``grad``: it may be a read-only broadcast view, or shared with another branch of the graph.
    Keep what backward needs with ``self.save_for_backward(...)``; read it back as
    ``self.saved``. ``self.recording`` tells forward whether its output joins a graph; when
    it does not (no_grad, or no input needs a gradient) nothing is saved, and an op may take
    a faster path to the same numbers. Ops whose output may share memory with their first
    input (reshape, permute, basic indexing) set ``returns_view = True``.

    PyTorch's style (``@staticmethod forward(ctx, ...)`` on Tensors, ``@staticmethod
    backward(ctx, grad_output)``) is recognised and run by ``_apply_pytorch_style``.
    """

    inputs: Tuple["Tensor", ...] = ()
    parents: Tuple[Optional["Function"], ...] = ()
    needs_input_grad: Tuple[bool, ...] = ()
    recording = False
    saved: Optional[Tuple[Any, ...]] = ()
    created_at: Optional[str] = None
    returns_view = False
    _versions: Tuple[Tuple[VersionCounter, int, int], ...] = ()
    _retained: Any = None          # weakref to the output tensor when it called retain_grad()
    _hooks: Optional[List[Any]] = None   # its output's register_hook() hooks
    _pytorch_style = False
    module: Any = None             # the nn.Module whose forward created it (tinyattn.viz.explore)

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls._pytorch_style = _is_static(cls, "forward")

    def save_for_backward(self, *arrays: Any) -> None:
        self.saved = arrays

    def forward(self, *arrays: Any, **options: Any) -> Any:
        raise NotImplementedError

    def backward(self, grad: Any) -> Any:
        raise NotImplementedError

    @classmethod
    def apply(cls, *inputs: Any, **options: Any) -> Any:
        if dispatch_hook is not None:           # autocast / half dtypes: tinyattn/amp/
            out = dispatch_hook(cls, inputs, options)
            if out is not None:
                return out
        if _op_observer is not None:    # the profiler or checkpoint watches (set_op_observer)
            return _op_observer.apply(cls, inputs, options)
        if cls._pytorch_style:
            return _apply_pytorch_style(cls, inputs, options)
        if len(inputs) > 1:  # one input cannot disagree with itself
            _check_inputs_agree(cls.__name__, inputs)
        fn = cls()
        fn.needs_input_grad = needs = tuple([t._requires_grad for t in inputs])
        fn.recording = track = _state.grad_enabled and any(needs)
        out_data = fn.forward(*[t._data for t in inputs], **options)
        if isinstance(out_data, np.generic):  # NumPy reductions return scalars, not arrays
            out_data = np.asarray(out_data)
        out = (_tensor_class or _tensor_type())._wrap(out_data, track)
        if track:
            fn.inputs = inputs
            fn.parents = tuple([t._ctx for t in inputs])
            out._ctx = fn
            if fn.saved:
                _note_saved(fn, inputs, out)
        else:
            fn.saved = None
        if track and _state.module is not None:
            fn.module = _state.module
        if cls.returns_view and backend.may_share_memory(out_data, inputs[0]._data):
            out._share_memory_with(inputs[0])
        if _state.anomaly:
            fn.created_at = _user_frame()
            if not _is_finite(out_data):
                raise FloatingPointError(
                    f"anomaly: the forward of {cls.__name__} produced NaN or Inf "
                    f"(created at {fn.created_at})")
        return out

    # ------------------------------------------------------------ saved-data checks
    def _check_versions(self) -> None:
        """Raise if an array this op saved was changed in place since (see module doc)."""
        for counter, expected, index in self._versions:
            if counter.value != expected:
                raise RuntimeError(_modified_message(self, index, counter.value, expected))

    def _describe_input(self, index: int) -> str:
        name = type(self).__name__
        if index < 0:
            return f"the output of {name}"
        t = self.inputs[index]
        return f"input {index} of {name} (a tensor of shape {t.shape}, {t.dtype})"


def _note_saved(fn: Function, inputs: Sequence["Tensor"], out: "Tensor") -> None:
    """Record the version of every input (and the output) whose array ``fn`` saved, and mark
    those tensors as saved (``Tensor.data`` then hands out a read-only view)."""
    saved = fn.saved                   # a few arrays: identity tests beat building a set
    records = []
    me = None
    for index, t in enumerate(inputs):
        data = t._data
        for item in saved:
            if item is data:
                me = me or weakref.ref(fn)
                counter = t._mark_saved_by(me)
                records.append((counter, counter.value, index))
                break
    data = out._data
    for item in saved:
        if item is data:
            records.append((out._mark_saved_by(me or weakref.ref(fn)), 0, -1))
            break
    fn._versions = tuple(records)


def _modified_message(fn: Function, index: int, now: int, expected: int) -> str:
    where = f" (op created at {fn.created_at})" if fn.created_at else ""
    return (f"one of the arrays needed for gradient computation has been modified by an "
            f"inplace operation: {fn._describe_input(index)} is at version {now}; expected "
            f"version {expected} instead{where}. The backward of {type(fn).__name__} needs "
            f"that array as it was during the forward. Change a copy instead (x = x + 1 "
            f"rather than x += 1, or x.clone()), or run the in-place update after backward(); "
            f"tinyattn.detect_anomaly() records where each op was created")


def _check_inputs_agree(op: str, inputs: Tuple["Tensor", ...]) -> None:
    """Raise unless the inputs share one device and their floating dtypes agree.

    The common case is decided in one pass: one array type (np.ndarray, cupy.ndarray, ...)
    means one device, and one dtype means nothing to mix. Anything else gets the full checks.
    """
    first = inputs[0]._data
    kind, dtype = type(first), first.dtype
    for t in inputs:
        if type(t._data) is not kind or t._data.dtype != dtype:
            break
    else:
        return
    _check_same_device(op, inputs)
    _check_same_float_dtype(op, inputs)


def _check_same_device(op: str, inputs: Sequence["Tensor"]) -> None:
    devices = {t.device for t in inputs}
    if len(devices) > 1:
        names = " and ".join(sorted(devices))
        raise RuntimeError(
            f"{op}: inputs are on different devices ({names}); move them to one device "
            f"with .to('cpu') or .to('cuda') first")


def _check_same_float_dtype(op: str, inputs: Sequence["Tensor"]) -> None:
    dtypes = {t.dtype for t in inputs if is_floating(t.dtype)}  # kind "f": a floating dtype
    if len(dtypes) > 1:
        names = " and ".join(sorted(str(d) for d in dtypes))
        raise TypeError(
            f"{op}: inputs mix floating dtypes ({names}); tinyattn never upcasts silently. "
            f"Convert one side with .float() or .double() (or .to(dtype)) first")


# ---------------------------------------------------------------- op observers
# tinyattn.profiler (times every op) and tinyattn.utils.checkpoint (finds the tensors a segment
# reads) watch ops through this one slot. When it is None, the usual case, Function.apply and
# the engine pay one global read each.
_op_observer: Any = None


def set_op_observer(observer: Any) -> Any:
    """Install ``observer`` (None: none) and return the one it replaces. While installed,
    ``Function.apply`` calls ``observer.apply(cls, inputs, options)`` and the engine calls
    ``observer.backward(fn, grad)`` instead of ``fn.backward(grad)``; an observer runs the op
    itself by reinstalling the observer it replaced around ``cls.apply(*inputs, **options)``."""
    global _op_observer
    previous, _op_observer = _op_observer, observer
    return previous


# ---------------------------------------------------------------- PyTorch-style functions
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


# ---------------------------------------------------------------- the engine
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


def accumulate_grad(leaf: "Tensor", grad: Any) -> None:
    """``leaf.grad += grad`` (or a copy of grad when there is none yet), thread-safely."""
    with _grad_lock:
        if leaf._grad is None:
            # A copy, so two leaves never share one gradient array (in-place clipping or an
            # optimizer writing into one must not change the other).
            leaf._grad = _tensor_type()._wrap(grad.copy())
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


def _run_backward_from(starts: Sequence[Tuple["Tensor", Any]], retain_graph: bool,
                       capture: Optional[Dict[int, Any]],
                       captured_fns: Optional[Dict[int, int]]) -> None:
    """One backward pass from several (output, d loss / d output) pairs at once, so that
    outputs sharing a graph send their gradients through it together (each Function runs
    once, with the sum), as ``torch.autograd.grad([y, z], ...)`` does."""
    grads: Dict[int, Any] = {}
    held: Dict[int, Tuple["Tensor", Any]] = {}     # leaves with hooks: their summed gradient
    roots: List[Function] = []
    for root, grad in starts:
        if root._ctx is None:
            _deliver_or_hold(root, grad, capture, held)
            continue
        key = id(root._ctx)
        if key not in grads:
            roots.append(root._ctx)
        grads[key] = grad if key not in grads else grads[key] + grad
    if roots:
        _run_functions(roots, grads, held, retain_graph, capture, captured_fns or {})
    for leaf, grad in held.values():       # a leaf's hooks see its whole gradient, once
        _deliver(leaf, _run_hooks(leaf._hooks, grad), capture)


def _run_functions(roots: List[Function], grads: Dict[int, Any],
                   held: Dict[int, Tuple["Tensor", Any]], retain_graph: bool,
                   capture: Optional[Dict[int, Any]], captured_fns: Dict[int, int]) -> None:
    """Visit the Functions from the outputs back to the leaves (the body of the engine)."""
    order = _topological_order(roots)
    leading = None if capture is None else _leading_to_captured(order, capture, captured_fns)
    anomaly = _anomaly_enabled()
    hook = _state.backward_hook
    for fn in reversed(order):
        fn_grad = grads.pop(id(fn), None)
        if fn_grad is None:
            continue
        if leading is not None and id(fn) not in leading and id(fn) not in captured_fns:
            continue                # autograd.grad: nothing asked for lies at or below it
        if fn._hooks:
            fn_grad = _run_hooks(fn._hooks, fn_grad)
        if fn._retained is not None:
            output = fn._retained()
            if output is not None and output._ctx is fn:
                accumulate_grad(output, fn_grad)
        if id(fn) in captured_fns:
            capture[captured_fns[id(fn)]] = fn_grad
        if leading is not None and id(fn) not in leading:
            continue                # no asked-for tensor lies below it: nothing to compute
        if fn.saved is None:
            raise RuntimeError(
                f"trying to backward through the graph a second time (at "
                f"{type(fn).__name__}): its saved arrays were freed by the first backward. "
                f"Pass retain_graph=True to the first .backward() if you need to call it twice")
        if fn._versions:
            fn._check_versions()
        if _op_observer is None:
            input_grads = _as_tuple(fn.backward(fn_grad))
        else:                           # the profiler watches (set_op_observer)
            input_grads = _as_tuple(_op_observer.backward(fn, fn_grad))
        if hook is not None:
            hook(fn, fn_grad, input_grads)
        if not retain_graph:
            fn.saved = None
        for t, parent, needed, g in zip(fn.inputs, fn.parents, fn.needs_input_grad,
                                        input_grads):
            if g is None or not needed:
                continue
            g = _as_array(g)
            if g.shape != t.shape:
                raise RuntimeError(
                    f"internal error: {type(fn).__name__}.backward returned a gradient of "
                    f"shape {g.shape} for an input of shape {t.shape}")
            if anomaly and not _is_finite(g):
                raise FloatingPointError(
                    f"anomaly: the backward of {type(fn).__name__} produced NaN or Inf "
                    f"(op created at {fn.created_at or _UNKNOWN_LINE})")
            if parent is None:
                _deliver_or_hold(t, g, capture, held)
                continue
            key = id(parent)
            grads[key] = g if key not in grads else grads[key] + g


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
        accumulate_grad(leaf, grad)
    elif id(leaf) in capture:
        previous = capture[id(leaf)]
        capture[id(leaf)] = grad if previous is None else previous + grad


# ---------------------------------------------------------------- tensor hooks
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
            raise RuntimeError(f"the hook {name} returned a gradient of shape {result.shape} "
                               f"for a tensor of shape {tuple(grad.shape)}; keep the shape")
        device = backend.device_of(grad)
        if result.device != device:
            raise RuntimeError(f"the hook {name} returned a gradient on {result.device} for a "
                               f"tensor on {device}; return it on {device} "
                               f"(e.g. new_grad.to({device!r}))")
        grad = result._data.astype(grad.dtype, copy=False)
    return grad


def refuse_create_graph(create_graph: bool) -> None:
    if create_graph:
        raise NotImplementedError(
            "create_graph=True (gradients of gradients) is not supported by tinyattn: each "
            "backward is hand-written on arrays and records no graph of its own. Compute "
            "second derivatives by finite differences of autograd.grad, or in PyTorch")


def grad(outputs: Any, inputs: Any, grad_outputs: Any = None, retain_graph: Optional[bool] = None,
         create_graph: bool = False, allow_unused: bool = False) -> Tuple[Any, ...]:
    """``torch.autograd.grad``: the gradients of ``outputs`` with respect to ``inputs``,
    returned as Tensors instead of being added into ``.grad``."""
    refuse_create_graph(create_graph)
    tensor_type = _tensor_type()
    outputs = [outputs] if isinstance(outputs, tensor_type) else list(outputs)
    single = isinstance(inputs, tensor_type)
    inputs = [inputs] if single else list(inputs)
    if grad_outputs is None or isinstance(grad_outputs, tensor_type):
        grad_outputs = [grad_outputs] * len(outputs)
    capture: Dict[int, Any] = {id(t): None for t in inputs}
    captured_fns = {id(t._ctx): id(t) for t in inputs if t._ctx is not None}
    if len(grad_outputs) != len(outputs):
        raise ValueError(f"grad_outputs has {len(grad_outputs)} entries for {len(outputs)} "
                         f"outputs; give one per output (None for a one-element output)")
    starts = [(out, out._initial_grad(g)) for out, g in zip(outputs, grad_outputs)]
    _run_backward_from(starts, bool(retain_graph), capture, captured_fns)
    results = []
    for i, t in enumerate(inputs):
        g = capture[id(t)]
        if g is None and not allow_unused:
            raise RuntimeError(f"input {i} (shape {t.shape}) was not used to compute the "
                               f"outputs (or does not require grad); pass allow_unused=True "
                               f"to get None for it")
        results.append(None if g is None else tensor_type._wrap(g))
    return tuple(results)
