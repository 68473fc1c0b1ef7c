"""``Function``: the base class of every op, and what ``Function.apply`` checks.

An op is a ``Function`` subclass with ``forward`` (arrays in, array out) and ``backward``
(the gradient of the output in, one gradient per input out), written a few lines apart.
``Function.apply`` runs ``forward`` on the arrays of its ``Tensor`` inputs and, when any input
requires a gradient, links the output to the ``Function`` instance. Each ``Function`` remembers
the ``Function`` that made each of its inputs (``parents``), fixed at the moment it ran: the
graph is a graph of Functions, so an in-place op that later gives a tensor a new history
cannot rewire what was recorded before it.

Version counters: every in-place change of a tensor's data (``x.add_(1)``, ``x[0] = 2``,
``with no_grad(): w -= lr * w.grad``) adds one to its version. When an op saves an input's (or
its output's) array for backward, it notes that version; if the backward finds a different one,
the array it needs was overwritten and the gradient would be wrong, so it raises instead
(PyTorch's "modified by an inplace operation").

Three slots let higher layers watch or redirect ops without autograd importing them; each
costs one read per op while empty: ``dispatch_hook`` (tinyattn.amp's autocast),
``_op_observer`` (``set_op_observer``: the profiler, checkpointing) and
``_pytorch_style_apply`` (filled by pytorch_function.py, which builds on ``Function``).
"""
from __future__ import annotations

import functools
import inspect
import operator
import re
import weakref
from typing import TYPE_CHECKING, Any, Dict, List, Optional, Sequence, Tuple

import numpy as np

from .. import backend
from .. import precision
from .. import promotion
from ..broadcast_error import from_numpy_error
from ..precision import is_floating
from .grad_mode import _state, _user_frame

if TYPE_CHECKING:  # only for annotations; the tensor package imports this one, not the reverse
    from ..tensor import Tensor

__all__ = ["Function", "VersionCounter", "InputRecord", "held_input", "is_input", "unbroadcast",
           "set_op_observer", "keep_versions", "name_node", "converted_copy"]

_tensor_class: Any = None  # tinyattn.tensor.Tensor, imported on first use (see _tensor_type)
_new_tensor = object.__new__               # a Tensor without __init__: apply sets its fields
_data_of = operator.attrgetter("_data")    # map() with these runs in C: no frame per input
_requires_grad_of = operator.attrgetter("_requires_grad")
_ctx_of = operator.attrgetter("_ctx")
# tinyattn.amp's dispatch hook (autocast, float32 compute of half dtypes), None when neither
# is in use: hook(cls, inputs, options) returns the output, or None to run the op as it is.
dispatch_hook: Any = None
# PyTorch-style Functions (static forward(ctx, ...)) are run by pytorch_function.py, which
# subclasses Function and so is imported after this module; it fills this slot.
_pytorch_style_apply: Any = None


class VersionCounter:
    """How many times a tensor's data was changed in place. Views of a tensor (reshape,
    permute, basic indexing, detach) share their base's counter, as they share its memory.
    ``savers`` holds weak references to the Functions that saved that memory for backward
    (so ``.data`` of the base and of every view is read-only while one is pending)."""

    __slots__ = ("value", "savers", "prune_at")

    def __init__(self) -> None:
        self.value = 0
        self.savers: Optional[List[Any]] = None
        self.prune_at = 32         # prune() when savers grows this long

    def add_saver(self, fn_ref: Any) -> None:
        """Add a weak reference to a Function that saved this memory for its backward."""
        if self.savers is None:
            self.savers = [fn_ref]
            return
        if len(self.savers) >= self.prune_at:
            self.prune()
        self.savers.append(fn_ref)

    def prune(self) -> None:
        """Drop the references to Functions that are gone. Run whenever the list doubles, so
        a parameter used by every step of a long training loop holds a list as long as its
        live savers, not one entry for every op that ever read it."""
        savers = self.savers
        savers[:] = [ref for ref in savers if ref() is not None]
        self.prune_at = max(32, 2 * len(savers))


def _tensor_type() -> Any:
    """``Tensor``, imported once: the tensor package imports this one, so a top-level import here
    would be circular, and an import statement inside ``apply`` costs a microsecond per op."""
    global _tensor_class
    if _tensor_class is None:
        from ..tensor import Tensor  # noqa: PLC0415 - same layer; avoids an import cycle
        _tensor_class = Tensor
    return _tensor_class


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
    if extra > 0:               # long float32 sums accumulate in float64 (backend.py)
        grad = backend.accurate_sum(grad, tuple(range(extra)))
    axes = tuple(i for i, n in enumerate(shape) if n == 1 and grad.shape[i] != 1)
    if axes:
        grad = backend.accurate_sum(grad, axes, True)
    return grad


def _is_static(cls: type, name: str) -> bool:
    return isinstance(inspect.getattr_static(cls, name, None), staticmethod)


class InputRecord:
    """How a node holds an input that another op made: its shape, dtype and maker (the
    ``Function`` that made it), not the tensor. As in torch, where a node keeps its parents'
    nodes and only what its backward saved, an activation no backward saved (the output of
    ``out_proj`` read only by the residual ``Add``) is freed in the forward as soon as the
    program lets go of it, instead of living until the backward (docs/benchmarks.md). The
    walk needs input tensors only for the leaves (``.grad`` goes there), which are kept.

    Pictures of the graph still show values where the array lives on (an op saved it, or the
    program holds it): ``_data`` is the array if still alive, else None; ``still_held()`` is
    the tensor itself while the program holds it. One record per tensor and maker, shared by
    every op that reads it (``held_input``), so a drawing finds one node per tensor."""

    __slots__ = ("shape", "dtype", "requires_grad", "_ctx", "_tensor", "_array")
    _grad = grad = None
    is_leaf = False

    def __init__(self, t: Any) -> None:
        self.shape, self.dtype, self.requires_grad, self._ctx = (
            t.shape, t.dtype, t._requires_grad, t._ctx)
        self._tensor = weakref.ref(t)
        try:
            self._array: Any = weakref.ref(t._data)
        except TypeError:           # an array type without weak references: no values
            self._array = _no_array

    @property
    def _data(self) -> Any:
        """The tensor's array while something (a saved copy, the program) keeps it; else None."""
        return self._array()

    def still_held(self) -> Any:
        """The tensor itself if something else still holds it, else this record."""
        t = self._tensor()
        return self if t is None else t

    @property
    def ndim(self) -> int:
        return len(self.shape)

    def __repr__(self) -> str:
        return f"<input of shape {tuple(self.shape)}, {self.dtype}, made by another op>"


class AccumulateGrad:
    """The node torch shows for a leaf in ``next_functions``: ``variable`` is the leaf, whose
    ``.grad`` the backward adds into."""

    next_functions: Tuple[Any, ...] = ()

    def __init__(self, variable: Any) -> None:
        self.variable = variable

    def name(self) -> str:
        return "torch::autograd::AccumulateGrad"

    def __repr__(self) -> str:
        return f"<AccumulateGrad object at {hex(id(self))}>"


def _no_array() -> None:
    return None


def held_input(t: Any) -> Any:
    """What a node keeps of input ``t``: ``t`` itself for a leaf (parent None), else its
    ``InputRecord`` (made once per tensor and maker, kept on the tensor)."""
    if t._ctx is None or type(t) is InputRecord:
        return t
    record = t._input_record
    if record is None or record._ctx is not t._ctx:    # new, or t was changed in place since
        record = t._input_record = InputRecord(t)
    return record


def is_input(held: Any, t: Any) -> bool:
    """Is ``held`` (an entry of a node's ``inputs``) tensor ``t`` or its record?"""
    return held is t or (type(held) is InputRecord and held._tensor() is t)


def release_inputs(fn: "Function") -> None:
    """Nodes built outside ``Function.apply`` (PyTorch-style Functions, checkpoint) hold
    their input tensors until their backward has run; then (without ``retain_graph``) the
    engine replaces the ones other ops made by their records; leaves stay."""
    fn.inputs = tuple(t if parent is None else held_input(t)
                      for t, parent in zip(fn.inputs, fn.parents))


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
    # float16/bfloat16 inputs: False (most ops) computes in float32 and rounds once, as torch's
    # CPU kernels do; True runs forward on the half arrays, for the ops whose torch kernel
    # rounds at each step (floor division: ops/division.py)
    computes_in_half = False
    # Floating inputs of different dtypes: True promotes them as torch's result_type does
    # (float32 with float64 runs in float64), as torch's pointwise ops, losses, where and cat
    # do; False refuses, for the ops torch refuses (matmul, scatter, index_put, the norms...)
    promotes_inputs = True
    # Complex inputs: False (most ops) refuses them with a TypeError naming the op, so no op
    # whose forward or backward was written for real numbers computes a complex result
    # silently wrong; True for the ops checked for complex (tinyattn/ops/complex_numbers.py)
    accepts_complex = False
    # Inputs (by position; -1: the output) that torch's backward saves where this one keeps
    # something derived (relu keeps x > 0, torch its result): an in-place change to them makes
    # this backward raise too, exactly when torch's does (docs/pytorch.md).
    versions_checked: Tuple[int, ...] = ()
    _versions: Sequence[Tuple[VersionCounter, int, int]] = ()  # (counter, version, input)
    _retained: Any = None          # weakref to the output tensor when it called retain_grad()
    _hooks: Optional[List[Any]] = None   # its output's register_hook() hooks
    _pytorch_style = False
    module: Any = None             # the nn.Module whose forward created it (tinyattn.viz.explore)
    # apply() keeps records of the inputs other ops made (InputRecord); a node built by hand
    # with the tensors themselves (checkpoint, PyTorch-style Functions) says so here, and the
    # engine swaps them for records once its backward has run (release_inputs).
    keeps_input_tensors = False

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls._pytorch_style = _is_static(cls, "forward")

    def save_for_backward(self, *arrays: Any) -> None:
        self.saved = arrays

    def forward(self, *arrays: Any, **options: Any) -> Any:
        raise NotImplementedError

    def backward(self, grad: Any) -> Any:
        raise NotImplementedError


    def name(self) -> str:
        """torch's name for this node (``y.grad_fn.name()``, and what ``print(y.grad_fn)``
        and a tensor's ``grad_fn=<...>`` show): ``<Class>Backward0``, or the name torch gives
        the op where it differs (``torch_node_name``). ``type(y.grad_fn)`` is tinyattn's own
        Function, whose forward and backward are the ones that ran."""
        return torch_node_name(self)

    def __repr__(self) -> str:      # torch: name() "torch::autograd::CopyBackwards", printed
        return f"<{self.name().rpartition('::')[2]} object at {hex(id(self))}>"   # CopyBackwards

    @property
    def next_functions(self) -> Tuple[Tuple[Any, int], ...]:
        """torch's ``grad_fn.next_functions``: per tensor input, ``(node that made it, 0)``,
        ``(AccumulateGrad, 0)`` for a leaf that requires grad, else ``(None, 0)``. (tinyattn
        keeps a Python number operand as an option, so ``x * 2`` lists one input, where torch
        adds ``(None, 0)`` for the 2.)"""
        out: List[Tuple[Any, int]] = []
        for t, parent in zip(self.inputs or (), self.parents or ()):
            if parent is not None:
                out.append((parent, 0))
            elif getattr(t, "_requires_grad", False):
                out.append((AccumulateGrad(t), 0))
            else:
                out.append((None, 0))
        return tuple(out)

    @classmethod
    def apply(cls, *inputs: Any, **options: Any) -> Any:
        """Run ``forward`` on the inputs' arrays and, when recording, link the output to the
        graph. This runs for every op, so every check is one cheap test in the common case:
        the inputs' agreement (one device, one floating dtype) is an identity test of their
        array types and dtypes; the saved arrays' versions are noted by identity; autocast and
        anomaly mode cost one read each when off. One- and two-input ops (nearly all) take
        unrolled paths. benchmarks/cases/small_op.py times the whole path beside torch's."""
        if dispatch_hook is not None:           # autocast / half dtypes: tinyattn/amp/
            out = dispatch_hook(cls, inputs, options)
            if out is not None:
                return out
        if _op_observer is not None:    # the profiler or checkpoint watches (set_op_observer)
            return _op_observer.apply(cls, inputs, options)
        if cls._pytorch_style:
            return _pytorch_style_apply(cls, inputs, options)
        if _complex_on and not cls.accepts_complex:  # one read while no complex tensor exists
            _refuse_complex(cls, inputs)
        fn = cls()
        state = _state
        try:              # zero cost unless raised: NumPy's broadcasting ValueError
            if len(inputs) == 2:
                a, b = inputs
                x, y = a._data, b._data
                if type(x) is not type(y) or (x.dtype is not y.dtype and x.dtype != y.dtype):
                    promoted = _check_inputs_agree(cls, inputs)
                    if promoted is not None:            # float32 * float64: both as float64
                        return cls.apply(*promoted, **options)
                fn.needs_input_grad = (a._requires_grad, b._requires_grad)
                fn.recording = track = state.grad_enabled and (a._requires_grad or b._requires_grad)
                out_data = fn.forward(x, y, **options) if options else fn.forward(x, y)
                parents = (a._ctx, b._ctx)
            elif len(inputs) == 1:
                a = inputs[0]
                fn.needs_input_grad = (a._requires_grad,)
                fn.recording = track = state.grad_enabled and a._requires_grad
                out_data = fn.forward(a._data, **options) if options else fn.forward(a._data)
                parents = (a._ctx,)
            else:
                if inputs:
                    promoted = _check_inputs_agree(cls, inputs)
                    if promoted is not None:
                        return cls.apply(*promoted, **options)
                fn.needs_input_grad = needs = tuple(map(_requires_grad_of, inputs))
                fn.recording = track = state.grad_enabled and True in needs
                out_data = fn.forward(*map(_data_of, inputs), **options)
                parents = tuple(map(_ctx_of, inputs))
        except ValueError as exc:      # -> torch's RuntimeError naming the sizes
            error = from_numpy_error(exc, [t.shape for t in inputs if hasattr(t, "shape")],
                                     _op_name_in_errors(cls))
            if error is None:
                raise
            raise error from None
        if isinstance(out_data, np.generic):  # NumPy reductions return scalars, not arrays
            scalar, out_data = out_data, np.asarray(out_data)
            if fn.saved and any(item is scalar for item in fn.saved):
                # a backward that saved its scalar result keeps the output's array instead,
                # so a later in-place write to the output is seen (torch's version check)
                fn.saved = tuple(out_data if item is scalar else item for item in fn.saved)
        out = _new_tensor(_tensor_class or _tensor_type())
        out._data, out._requires_grad = out_data, track
        if track:
            # Leaves as they are; inputs other ops made as records (InputRecord): a node
            # keeps its parents' nodes, not their outputs, so what no backward saved is freed.
            fn.inputs = inputs if parents.count(None) == len(parents) else \
                tuple(map(held_input, inputs))
            fn.parents = parents
            fn.module = state.module    # the explorer's module recording: one read
            out._ctx = fn
            if fn.saved or fn.versions_checked:
                _note_saved(fn, inputs, out)
        else:
            fn.saved = None
        if cls.returns_view and _is_view_of(out_data, inputs[0]._data):
            out._share_memory_with(inputs[0])
        if state.anomaly:
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
        if index >= len(self.inputs):
            return f"a tensor {name} keeps beside its inputs (an index: keep_versions)"
        t = self.inputs[index]
        return f"input {index} of {name} (a tensor of shape {t.shape}, {t.dtype})"


def _is_view_of(out_data: Any, source: Any) -> bool:
    """Whether a view op's result is a view of its input. An empty view shares no bytes (so
    ``may_share_memory`` says no), yet it is a view: torch's ``b.mT`` of an empty ``b`` shares
    b's version counter, so ``b.add_(1)`` after ``a @ b.mT`` makes the backward raise."""
    if backend.may_share_memory(out_data, source):
        return True
    if getattr(out_data, "size", 1) != 0:
        return False
    return _root(out_data) is _root(source)


def _root(array: Any) -> Any:
    while getattr(array, "base", None) is not None:
        array = array.base
    return array


def _note_saved(fn: Function, inputs: Sequence["Tensor"], out: "Tensor") -> None:
    """Record the version of every input (and the output) whose array ``fn`` saved, and mark
    those tensors as saved (``Tensor.data`` then hands out a read-only view). It runs for
    every recorded op that saves anything, so it is written for speed: identity tests over
    the few saved items (no set, no id() calls), one weak reference shared by all of them,
    and nothing at all when only shapes were saved."""
    saved = fn.saved or ()
    checked = fn.versions_checked
    records: List[Any] = []
    index = 0
    for t in inputs:
        data = t._data
        for item in saved if index not in checked else (data,):
            if item is data:
                if not records:
                    me = weakref.ref(fn)
                counter = t._vc
                if counter is None:
                    counter = t._vc = VersionCounter()
                savers = counter.savers
                if savers is None:
                    counter.savers = [me]
                elif len(savers) < counter.prune_at:
                    savers.append(me)
                else:
                    counter.add_saver(me)       # prunes the dead references first
                records.append((counter, counter.value, index))
                origin = t._origin_vc       # a dtype-converted copy: its original too
                if origin is not None:
                    records.append((origin, origin.value, index))
                break
        index += 1
    data = out._data
    for item in saved if -1 not in checked else (data,):
        if item is data:
            records.append((out._mark_saved_by(me if records else weakref.ref(fn)), 0, -1))
            break
    if records:
        fn._versions = records


def converted_copy(copy: "Tensor", original: Any) -> "Tensor":
    """Mark ``copy`` as ``original`` converted to another dtype for an op (``x * w`` with
    x float64 and an int32 or float32 w multiplies x by a float64 copy of w). torch's op
    reads and saves the original itself, so a later in-place write to it makes the
    backward raise; an op that saves ``copy`` notes the original's version too
    (``_note_saved``), so tinyattn's raises exactly then. Returns ``copy``."""
    if copy is not original and hasattr(original, "_version_counter") and \
            hasattr(copy, "_version_counter"):
        copy._origin_vc = original._version_counter()
    return copy


def keep_versions(out: "Tensor", *tensors: Any) -> "Tensor":
    """Note the versions of ``tensors`` (not None) in the Function that made ``out``, as if
    it had saved them: tensors that reach the op as arrays or options, not as inputs (the
    index of gather, scatter, index_select; a mask), which torch's backward keeps. An
    in-place change to one of them after the op then makes the backward raise, as torch's
    does. It keeps a reference to each version counter, no copy; nothing when ``out`` is not
    recorded. Returns ``out``."""
    fn = out._ctx
    if fn is None or fn.saved is None or not out._requires_grad:
        return out
    records = list(fn._versions)
    start = len(fn.inputs)
    for k, t in enumerate(tensors):
        if t is not None and hasattr(t, "_version_counter"):
            counter = t._version_counter()
            records.append((counter, counter.value, start + k))
    fn._versions = records
    return out


def _modified_message(fn: Function, index: int, now: int, expected: int) -> str:
    where = f" (op created at {fn.created_at})" if fn.created_at else ""
    return (f"one of the arrays needed for gradient computation has been modified by an "
            f"inplace operation: {fn._describe_input(index)} is at version {now}; expected "
            f"version {expected} instead{where}. The backward of {type(fn).__name__} needs "
            f"that array as it was during the forward. Change a copy instead (x = x + 1 "
            f"rather than x += 1, or x.clone()), or run the in-place update after backward(); "
            f"tinyattn.detect_anomaly() records where each op was created")


def _check_inputs_agree(cls: type, inputs: Tuple["Tensor", ...]
                        ) -> Optional[Tuple["Tensor", ...]]:
    """Raise unless the inputs share one device; when their floating dtypes differ, return
    them promoted to torch's result dtype (None when nothing changes).

    The common case is decided in one pass: one array type (np.ndarray, cupy.ndarray, ...)
    means one device, and one dtype means nothing to mix. Anything else gets the full checks.
    A promotion is a differentiable ``to(dtype)`` of the narrower inputs, so their gradients
    come back in their own dtypes, as in torch. It raises instead under the strict mode
    (``tinyattn.set_strict_promotion``) and for the ops torch refuses (``promotes_inputs``).
    """
    first = inputs[0]._data
    kind, dtype = type(first), first.dtype
    for t in inputs:
        if type(t._data) is not kind or t._data.dtype != dtype:
            break
    else:
        return None
    op = cls.__name__
    _check_same_device(op, inputs)
    # complex counts with the floats: complex64 with float64 is complex128, as torch (NumPy's
    # cast of the complex one to float64 dropped its imaginary part)
    floats = [t for t in inputs if is_floating(t.dtype) or t.dtype.kind == "c"]
    dtypes = {t.dtype for t in floats}
    if len(dtypes) < 2:
        return None
    if promotion.is_strict_promotion():
        raise promotion.float_mix_error(op, dtypes)
    if not cls.promotes_inputs:        # type: ignore[attr-defined]
        names = " and ".join(sorted(str(d) for d in dtypes))
        raise RuntimeError(            # torch's error type for this refusal
            f"{op}: expected all floating inputs to have the same dtype, got {names}; "
            f"torch refuses this mix too (no type promotion here). Convert one side with "
            f".float() or .double() (or .to(dtype)) first")
    target = promotion.result_type(*floats)
    return tuple(converted_copy(t.to(target), t) if (is_floating(t.dtype) or t.dtype.kind == "c")
                 and t.dtype != target else t for t in inputs)


# True once any complex tensor or dtype was made (precision.on_complex): until then
# Function.apply pays one global read for the complex check.
_complex_on = False


def _switch_complex_on() -> None:
    global _complex_on
    _complex_on = True


precision.on_complex(_switch_complex_on)


def _refuse_complex(cls: type, inputs: Sequence[Any]) -> None:
    """Raise a TypeError naming the op when one of its inputs is complex and the op was not
    checked for complex numbers (``accepts_complex``): a loud refusal, never a result that a
    forward or backward written for real numbers would get silently wrong."""
    for t in inputs:
        dtype = getattr(t, "dtype", None)
        if dtype is not None and getattr(dtype, "kind", "") == "c":
            raise TypeError(
                f"{cls.__name__}: complex tensors ({dtype}) are not supported by this op in "
                f"tinyattn (complex numbers work in: + - * / neg exp matmul square reciprocal, "
                f"real, imag, conj, abs, angle, view_as_real, view_as_complex, where, "
                f"masked_fill, diag, torch.fft and the shape ops); "
                f"work on x.real and x.imag (or torch.view_as_real(x)) instead")


def _check_same_device(op: str, inputs: Sequence["Tensor"]) -> None:
    devices = {t.device for t in inputs}
    if len(devices) > 1:
        names = " and ".join(sorted(devices))
        raise RuntimeError(
            f"{op}: inputs are on different devices ({names}); move them to one device "
            f"with .to('cpu') or .to('cuda') first")


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


# ------------------------------------------------------------------ torch's node names
def _linear_name(fn: Function) -> str:
    """F.linear: addmm (with bias) / mm on 2-D inputs; a view of one product otherwise."""
    x = fn.inputs[0] if fn.inputs else None
    with_bias = len(fn.inputs) > 2
    if x is not None and getattr(x, "ndim", 2) == 2:
        return "AddmmBackward0" if with_bias else "MmBackward0"
    if x is not None and getattr(x, "ndim", 2) == 1 and not with_bias:
        return "SqueezeBackward4"          # matmul of a vector and the transposed weight
    return "ViewBackward0" if with_bias else "UnsafeViewBackward0"


def _matmul_name(fn: Function) -> str:
    """torch.matmul's last step: dot, mm, mv, a squeeze of the vector-matrix product, else
    a view of a bmm (3-d @ 3-d too: torch.bmm names it BmmBackward0, ops/matmul.py)."""
    dims = [getattr(t, "ndim", 2) for t in fn.inputs[:2]]
    if dims == [1, 1]:
        return "DotBackward0"
    if dims == [2, 2]:
        return "MmBackward0"
    if dims == [2, 1]:
        return "MvBackward0"
    if dims == [1, 2]:
        return "SqueezeBackward4"
    if dims[0] == 2:          # a matrix times a batch: torch transposes, then copies
        return "CloneBackward0"
    return "UnsafeViewBackward0"


def _getitem_name(fn: Function) -> str:
    """The last indexing step torch takes: an int selects, a slice slices, None unsqueezes,
    an array or a mask indexes."""
    try:
        index = fn.saved[2]
    except (AttributeError, IndexError, TypeError):
        return "SliceBackward0"
    if isinstance(index, slice):        # x[:] alone slices, even in full (x[:, :] aliases)
        return "SliceBackward0"
    parts = index if isinstance(index, tuple) else (index,)
    if any(hasattr(p, "shape") and getattr(p, "ndim", 0) > 0 or isinstance(p, list)
           or p is True or p is False for p in parts):     # x[True]: a 0-d mask, indexed
        return "IndexBackward0"
    for part in reversed(parts):
        if part is Ellipsis or (isinstance(part, slice) and part == slice(None)):
            continue
        if part is None:
            return "UnsqueezeBackward0"
        if isinstance(part, slice):
            return "SliceBackward0"
        return "SelectBackward0"
    return "AliasBackward0"


def _unfold_name(fn: Function) -> str:
    """Tensor.unfold (ops/picks.py) is torch's UnfoldBackward0; F.unfold (ops/conv.py) is
    torch's im2col."""
    return "Im2ColBackward0" if type(fn).__module__.endswith(".conv") else "UnfoldBackward0"


def _grid_sample_name(fn: Function) -> str:
    """grid_sample's kernel: grid_sampler_2d for 4-D input, grid_sampler_3d for 5-D."""
    x = fn.inputs[0] if fn.inputs else None
    return f"GridSampler{3 if len(getattr(x, 'shape', ())) == 5 else 2}DBackward0"


def _setitem_name(fn: Function) -> str:
    """``x[index] = value``: torch writes through a view of x (CopySlices) when the index
    selects (an int, a partial slice, None), index_put when it is index arrays or a mask among
    full slices, and fill_ (a 0-d value) or copy_ when it names the whole tensor."""
    try:
        index, value_shape = fn.saved[0], fn.saved[1]
    except (IndexError, TypeError):
        return "torch::autograd::CopySlices"
    parts = index if isinstance(index, tuple) else (index,)
    advanced = False
    for p in parts:
        if p is Ellipsis or (isinstance(p, slice) and p == slice(None)):
            continue
        if isinstance(p, list) or (hasattr(p, "shape") and getattr(p, "ndim", 0) > 0):
            advanced = True
            continue
        return "torch::autograd::CopySlices"        # an int, a slice, None, True
    if advanced:
        return "IndexPutBackward0"
    return "FillBackward3" if len(value_shape) == 0 else "torch::autograd::CopyBackwards"


_TORCH_NODE_NAMES: Dict[str, Any] = {
    "Linear": _linear_name, "Matmul": _matmul_name, "GetItem": _getitem_name,
    "CrossEntropy": "NllLossBackward0", "LayerNorm": "NativeLayerNormBackward0",
    "BatchNorm": "NativeBatchNormBackward0", "Concat": "CatBackward0",
    "Reshape": "ViewBackward0", "Dropout": "MulBackward0", "Convert": "ToCopyBackward0",
    "AddcDiv": "AddcdivBackward0", "AddcMul": "AddcmulBackward0", "Log1p": "Log1PBackward0",
    "LogSumExp": "LogsumexpBackward0", "NanSum": "NansumBackward0",
    "LogCumSumExp": "LogcumsumexpBackward0", "BCE": "BinaryCrossEntropyBackward0",
    "BCEWithLogits": "BinaryCrossEntropyWithLogitsBackward0", "Square": "PowBackward0",
    "MedianAll": "MedianBackward0", "NanMedianAll": "NanmedianBackward0",
    "CTCLoss": "CtcLossBackward0", "Erfcx": "SpecialErfcxBackward0",
    "I0e": "SpecialI0EBackward0", "I1": "SpecialI1Backward0", "I1e": "SpecialI1EBackward0",
    "LogNdtr": "SpecialLogNdtrBackward0", "Ndtri": "SpecialNdtriBackward0",
    "Xlog1py": "SpecialXlog1PyBackward0", "Entr": "SpecialEntrBackward0",
    "Det": "LinalgDetBackward0", "Inv": "LinalgInvExBackward0",
    "Pinv": "LinalgPinvBackward0", "MatrixExp": "LinalgMatrixExpBackward0",
    "Solve": "LinalgSolveExBackward0", "CholeskyEx": "LinalgCholeskyExBackward0",
    "Prelu": "PreluKernelBackward0", "GroupNorm": "NativeGroupNormBackward0",
    "ComplexAbs": "AbsBackward0", "MakeComplex": "ComplexBackward0",
    "C2C": "FftC2CBackward0", "R2C": "FftR2CBackward0", "C2R": "FftC2RBackward0",
    "Clamp": "ClampBackward1", "ClampTensor": "ClampBackward0",   # clamp(Scalar) / clamp(Tensor)
    "PowTensor": "PowBackward1",             # pow(Tensor, Tensor)
    "RPow": "PowBackward2",                  # pow(Scalar, Tensor)
    # names42: fused here, composed or renamed in torch (its last step names the result)
    "Norm": "LinalgVectorNormBackward0",     # torch.norm, Tensor.norm, linalg.*_norm
    "ConvolutionTranspose": "ConvolutionBackward0", "ChannelDropout": "MulBackward0",
    "Unfold": _unfold_name, "Fold": "Col2ImBackward0", "GridSample": _grid_sample_name,
    "RMSNorm": "MulBackward0", "LocalResponseNorm": "DivBackward0",
    "Softsign": "DivBackward0", "NanMean": "DivBackward0",
    "Eigvalsh": "LinalgEighBackward0", "Svdvals": "LinalgSvdBackward0",
    "SolveTriangular": "LinalgSolveTriangularBackward0",
    "LstsqSolution": "LinalgLstsqBackward0", "Prod": "ProdBackward1",   # prod(x, dim)
    "MaskedFill": lambda fn: f"MaskedFillBackward{int(len(fn.inputs) > 1)}",  # value: a tensor
    "RepeatInterleave": "ViewBackward0", "RepeatCounts": "IndexSelectBackward0",
    "BernoulliDraw": "BernoulliBackward0", "SetItem": _setitem_name, "CopySlices": "torch::autograd::CopySlices",   # a view written
}


def name_node(out: Any, name: Any) -> Any:
    """Give ``out``'s node torch's name for the op that made it (a str, or another node
    whose name to take): a composite op's last step otherwise names it (``topk`` ends in a
    gather, ``kthvalue`` in a view). Returns ``out``; nothing when it is not recorded."""
    fn = getattr(out, "_ctx", None)
    if fn is not None:
        fn.torch_name = name
    return out


def names_node(name: str) -> Any:
    """Decorator: the op's result gets torch's node ``name`` (``name_node``), for a composite
    op whose every return path is torch's one node (``addmm`` composes matmul and add)."""
    def decorate(op: Any) -> Any:
        @functools.wraps(op)
        def named(*args: Any, **kwargs: Any) -> Any:
            return name_node(op(*args, **kwargs), name)
        return named
    return decorate


def _op_name_in_errors(cls: type) -> str:
    """The op an error names: torch's node name without ``Backward<n>`` (PowTensor's
    PowBackward1 -> ``pow``), else the class name, lower case."""
    rule = _TORCH_NODE_NAMES.get(cls.__name__)
    name = rule if isinstance(rule, str) else cls.__name__
    return re.sub(r"Backward\d+$", "", name).lower()


def torch_node_name(fn: Function) -> str:
    """torch's name of ``fn``'s node (see ``Function.name``): the name a composite op gave
    its output's node (``name_node``), or the rule for its class, or ``<Class>Backward0``."""
    given = fn.__dict__.get("torch_name")
    if given is not None:
        return given if isinstance(given, str) else torch_node_name(given)
    rule = _TORCH_NODE_NAMES.get(type(fn).__name__)
    if rule is None:
        return f"{type(fn).__name__}Backward0"
    return rule if isinstance(rule, str) else rule(fn)
