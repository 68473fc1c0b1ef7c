"""In-place ops: ``add_``, ``sub_``, ``mul_``, ``div_``, ``pow_``, ``neg_``, ``clamp_``,
``masked_fill_``, ``zero_``, ``fill_``, ``copy_``, ``uniform_``, ``normal_``, item assignment
``x[index] = value``, and the operators ``+=``, ``-=``, ``*=``, ``/=``.

Each one writes its result into the tensor's own array and adds one to the tensor's version
(docs/derivations.md#in-place-ops). Three cases, as in PyTorch:

- No gradient is being recorded (inside ``no_grad()``, or nothing involved requires one):
  the array is simply overwritten. This is how parameters are updated by hand:
  ``with no_grad(): w -= lr * w.grad``. A graph that saved w before then refuses to
  backward (its version moved on) instead of computing a wrong gradient.
- A leaf that requires grad (a parameter) while recording: refused, as PyTorch does, because
  its gradient would have nothing to refer to.
- Any other tensor while recording: the op is computed out of place from the tensor as it
  was, written into the tensor's array, and the tensor takes the new op as its history, so
  ``h = x @ w; h += b`` differentiates like ``h = x @ w + b``. Ops recorded earlier keep
  the history they saw (the engine's graph links Functions, not tensors).

- A view (``x[0]``, ``x[:, 0]``, ``x.reshape(...)``) of such a tensor, or a tensor that has
  views: as PyTorch, the write goes into the shared memory, the base takes a new history
  (CopySlices) and every live view reads from it (ops/view_writes.py). A view of a leaf that
  requires grad is refused, as in PyTorch.
"""
from __future__ import annotations

import re
import weakref
from typing import Any, Callable, Optional, Sequence

import numpy as np

from .. import backend, precision
from ..broadcast_error import broadcast_error, expand_error
from ..autograd import Function, is_grad_enabled, name_node, no_grad, unbroadcast
from ..autograd.function import is_input
from ..tensor import Tensor
from .clamp_bounds import clamp
from .division import divide, floor_divide, fmod, remainder
from .elementwise import add, as_operand, convert, mul, neg, pow, sub
from .masking import masked_fill
from .overlap import check_no_partial_overlap, written_region
from .view_writes import rebase_views, write_through_view
from .shape import _index_to_arrays, torch_index_steps
from .torch_keywords import _scalar_type
from ..precision import check_fits, integer_scalar, is_floating
from ..promotion import can_cast

__all__ = ["add_", "sub_", "mul_", "div_", "pow_", "neg_", "clamp_", "masked_fill_", "zero_",
           "fill_", "copy_", "uniform_", "normal_", "setitem", "remainder_", "fmod_",
           "floor_divide_", "iadd", "isub", "imul", "itruediv", "ifloordiv", "imod", "ipow"]


def _assign(array: Any, index: Any, value: Any) -> None:
    """``array[index] = value`` with PyTorch's indexing rule (ops.shape.torch_index_steps):
    the first step, integers only, is a view, so assigning into it writes into ``array``."""
    steps = torch_index_steps(index)
    target = array if len(steps) == 1 else array[steps[0]]
    target[steps[-1]] = _drop_leading_ones(value, target[steps[-1]].ndim)


def _drop_leading_ones(value: Any, ndim: int) -> Any:
    """value without the leading size-1 dimensions it has beyond ``ndim`` (torch drops them:
    ``out[0] = h`` with h (1, 3) fills a row of 3); other extra dimensions are an error."""
    shape = getattr(value, "shape", ())
    extra = len(shape) - ndim
    if extra <= 0:
        return value
    if any(n != 1 for n in shape[:extra]):
        raise ValueError(f"x[index] = value: value of shape {tuple(shape)} cannot be broadcast "
                         f"to the {ndim}-d selection (only leading size-1 dimensions can be "
                         f"dropped)")
    return value.reshape(shape[extra:])


def _select(array: Any, index: Any) -> Any:
    for step in torch_index_steps(index):
        array = array[step]
    return array


class SetItem(Function):
    """out = x with out[index] = value (value broadcast to the selected shape).

    The selected elements of x are replaced, so they get no gradient, and each element of
    value is copied into the selection, so it collects the gradient of every place it landed:
        dx = g with g[index] set to 0,     dvalue = g[index] summed back to value's shape.
    Leading size-1 dimensions of value beyond the selection's are dropped, as torch does
    (h of shape (1, 3) fills a row of 3), and dvalue gets them back by a reshape.
    """

    def forward(self, x, value, index: Any):
        out = x.copy()
        _assign(out, index, value)
        self.save_for_backward(index, value.shape)
        return out

    def backward(self, grad):
        index, value_shape = self.saved
        dx = dvalue = None
        if self.needs_input_grad[0]:
            dx = grad.copy()
            _assign(dx, index, 0)
        if self.needs_input_grad[1]:
            xp = backend.get_array_module(grad)
            picked = xp.asarray(_select(grad, index))                # the selection's shape
            kept = value_shape[max(len(value_shape) - picked.ndim, 0):]   # leading 1s dropped
            dvalue = unbroadcast(picked, kept).reshape(value_shape)
        return dx, dvalue


# ------------------------------------------------------------------ the machinery
def _refuse_leaf(target: Tensor, name: str) -> None:
    raise RuntimeError(
        f"{name}: a leaf tensor that requires grad (a parameter, shape {target.shape}) is being "
        f"changed in place while gradients are recorded; its gradient would have nothing to "
        f"refer to. Wrap updates in `with tinyattn.no_grad():` (e.g. `with no_grad(): w -= lr "
        f"* w.grad`), or write w = w - ... to make a new, non-leaf tensor")


def _refuse_view_of_leaf(target: Tensor, name: str) -> None:
    raise RuntimeError(
        f"{name}: a view of a leaf tensor that requires grad (a parameter) is being changed "
        f"in place while gradients are recorded, as torch refuses too. Clone it first "
        f"(y = w.clone(); y[...] = ...) or wrap the update in `with tinyattn.no_grad():`")


def _write(target: Tensor, result: Tensor, name: str) -> None:
    """Copy ``result`` into ``target``'s array: same shape, a dtype it can take."""
    if result.shape != target.shape:
        raise RuntimeError(f"{name}: the result has shape {result.shape} but the tensor being "
                           f"updated in place has shape {target.shape}; an in-place op cannot "
                           f"change a tensor's shape (the other operand must broadcast to "
                           f"{target.shape})")
    if target.dtype.kind == "c" and result.dtype.kind != "c" and name in ("abs_", "absolute_"):
        raise RuntimeError("In-place abs is not supported for complex tensors.")   # as torch
    if not can_cast(result.dtype, target.dtype):
        raise RuntimeError(f"{name}: the result is {result.dtype}, which cannot be stored in "
                           f"this {target.dtype} tensor in place; convert the tensor first "
                           f"(x = x.float()) or use the out-of-place op")
    _store(target, lambda array: backend.get_array_module(array).copyto(
        array, result._data, casting="unsafe"), name)   # can_cast said it may: torch's rule


def _store(target: Tensor, write: Callable[[Any], None], name: str) -> None:
    """Run ``write(target's array)``, turning NumPy's read-only error into a clear one.

    An ``expand()``ed array repeats elements with stride 0: NumPy marks it read-only, CuPy does
    not, so the stride is checked too (a write there would land on one element many times)."""
    data = target._data
    if data.size and any(step == 0 and n > 1 for step, n in zip(data.strides, data.shape)):
        raise _read_only_error(name)
    try:
        write(data)
    except ValueError as exc:
        if "read-only" not in str(exc):
            raise
        raise _read_only_error(name, getattr(data, "_owner_op", None)) from None
    target._bump_version()


def _read_only_error(name: str, saved_by: Optional[str] = None) -> RuntimeError:
    if saved_by is not None:        # .data (or .numpy()) of a tensor a pending backward needs
        return RuntimeError(
            f"{name}: these values were handed out by .data while a backward that has not run "
            f"yet needs them ({saved_by} saved them), so they are read-only. Change them after "
            f"loss.backward() (an optimizer step's place), or under no_grad() before the "
            f"forward; PyTorch lets such a change through and its backward silently "
            f"differentiates the new values (docs/pytorch.md)")
    return RuntimeError(f"{name}: this tensor's memory is read-only (an expand()ed tensor or a "
                        f"read-only array shares it); clone() it before changing it in place")


def _in_place(target: Tensor, name: str, compute: Callable[[Tensor], Tensor],
              others: Sequence[Any] = (), check_overlap: bool = True) -> Tensor:
    """Apply ``compute`` (the op, out of place) and write its result into ``target``.
    An operand sharing part of target's memory is refused, as torch refuses it."""
    if check_overlap:
        for other in others:
            if isinstance(other, Tensor):
                check_no_partial_overlap(target._data, other._data, name)
    recording = is_grad_enabled() and (target.requires_grad or any(
        isinstance(o, Tensor) and o.requires_grad for o in others))
    if not recording:
        with no_grad():
            result = compute(target)
        _write(target, result, name)
        return target
    base = target._base
    if target._ctx is None and target.requires_grad and base is None:
        _refuse_leaf(target, name)
    if base is not None and base._ctx is None and base.requires_grad:
        _refuse_view_of_leaf(target, name)
    before = Tensor._wrap(target._data, target.requires_grad)   # the tensor as it was
    before._ctx, before._vc = target._ctx, target._version_counter()
    result = compute(before)
    _keep_original(result._ctx, before)
    if result.dtype != target.dtype and is_floating(result.dtype) and is_floating(target.dtype):
        result = convert(result, dtype=target.dtype)   # autocast promoted it (h16 += b32):
    _write(target, result, name)                       # the graph records the cast back
    if base is not None:            # the base takes CopySlices, its views AsStrided
        write_through_view(base, target, result)
        return target
    target._ctx, target._requires_grad = result._ctx, result.requires_grad
    if target._retains_grad and target._ctx is not None:
        target._ctx._retained = weakref.ref(target)
    if target._view_refs:           # its views now read the new values
        rebase_views(target)
    return target


def _keep_original(fn: Optional[Function], before: Tensor) -> None:
    """If the op just recorded kept, for its backward, the very array it is about to
    overwrite (``y.pow_(2)`` keeps y for 2 y; ``y.mul_(w)`` keeps y for dw = g y), hand it a
    copy of the old values, as PyTorch's in-place ops do; its version record for that input
    goes too, since the copy cannot change. Only such ops pay for the copy. The target read
    as the OTHER operand (``y *= y``) keeps its record, so that backward still raises."""
    if fn is None or not fn._versions:
        return
    _drop_converted_target(fn, before)
    kept = bool(fn.saved) and any(item is before._data for item in fn.saved)
    checked = any(i >= 0 and is_input(fn.inputs[i], before) for i in fn.versions_checked)
    if not (kept or checked):   # versions_checked: it kept only something derived (a mask)
        return
    if kept:
        original = before._data.copy()
        fn.saved = tuple(original if item is before._data else item for item in fn.saved)
    fn._versions = tuple(record for record in fn._versions
                         if not 0 <= record[2] < len(fn.inputs)
                         or not is_input(fn.inputs[record[2]], before))


def _drop_converted_target(fn: Function, before: Tensor) -> None:
    """``y.mul_(w)`` with a float32 y and a float64 w that requires grad multiplies a float64
    copy of y, which the op keeps together with y's version (converted_copy). That copy
    holds the old values, as torch's saved copy of self does, so the write into y that
    follows must not make the backward raise: the record goes. The target read as the other
    operand itself (``y *= y``, no copy) keeps its record."""
    counter = before._vc
    if counter is None:
        return
    kept = []
    for record in fn._versions:
        index = record[2]
        if record[0] is counter and 0 <= index < len(fn.inputs):
            held = fn.inputs[index]
            tensor = held.still_held() if hasattr(held, "still_held") else held
            if getattr(tensor, "_vc", None) is not counter:
                continue                # a converted copy of the target: it cannot change
        kept.append(record)
    if len(kept) != len(fn._versions):
        fn._versions = kept


# ------------------------------------------------------------------ the ops
def add_(x: Tensor, other: Any, alpha: float = 1) -> Tensor:
    return _in_place(x, "add_", lambda t: add(t, other, alpha=alpha), (other,))


def sub_(x: Tensor, other: Any, alpha: float = 1) -> Tensor:
    return _in_place(x, "sub_", lambda t: sub(t, other, alpha=alpha), (other,))


def mul_(x: Tensor, other: Any) -> Tensor:
    return _in_place(x, "mul_", lambda t: mul(t, other), (other,))


def div_(x: Tensor, other: Any, *, rounding_mode: Any = None) -> Tensor:
    return _in_place(x, "div_", lambda t: divide(t, other, rounding_mode=rounding_mode),
                     (other,))


def pow_(x: Tensor, exponent: float) -> Tensor:
    return _in_place(x, "pow_", lambda t: pow(t, exponent), (exponent,))


def remainder_(x: Tensor, other: Any) -> Tensor:
    return _in_place(x, "remainder_", lambda t: remainder(t, other), (other,))


def fmod_(x: Tensor, other: Any) -> Tensor:
    return _in_place(x, "fmod_", lambda t: fmod(t, other), (other,))


def floor_divide_(x: Tensor, other: Any) -> Tensor:
    return _in_place(x, "floor_divide_", lambda t: floor_divide(t, other), (other,))


def neg_(x: Tensor) -> Tensor:
    return _in_place(x, "neg_", neg)


def clamp_(x: Tensor, min: Optional[float] = None,  # noqa: A002 - PyTorch's names
           max: Optional[float] = None) -> Tensor:  # noqa: A002
    return _in_place(x, "clamp_", lambda t: clamp(t, min, max), (min, max))


def masked_fill_(x: Tensor, mask: Any, value: float) -> Tensor:
    return _in_place(x, "masked_fill_", lambda t: masked_fill(t, mask, value))


def _real_scalar(value: Any, dtype: np.dtype, op: str) -> Any:
    """A Python complex number written into a real tensor, as torch converts the Scalar:
    its real part when the imaginary part is 0 (``x[0] = 1 + 0j``), else refused (NumPy would
    raise a TypeError naming neither, or drop the imaginary part)."""
    if not isinstance(value, (complex, np.complexfloating)) or dtype.kind == "c":
        return value
    if value.imag != 0:
        raise RuntimeError(f"value cannot be converted to type {dtype.name} without overflow "
                           f"({op}: the complex number {value!r} into a {dtype.name} tensor, "
                           f"as torch refuses it)")
    return value.real


def setitem(x: Tensor, index: Any, value: Any) -> None:
    """``x[index] = value`` (``Tensor.__setitem__``), with PyTorch's indexing rules."""
    value = _real_scalar(value, x.dtype, "x[index] = value")
    if not (isinstance(value, Tensor) and value.ndim) and any(
            isinstance(p, Tensor) and p.dtype == np.uint8 and p.ndim
            for p in (index if isinstance(index, tuple) else (index,))):
        raise RuntimeError("masked_fill_ only supports boolean masks, but got mask with dtype "
                           "unsigned char (as torch: x[uint8 mask] = a number is refused; "
                           "use mask.bool())")
    index = _index_to_arrays(index, x.device, x.ndim)
    if isinstance(value, Tensor) and value.dtype != x.dtype and _advanced(index):
        # torch's index_put refuses it (a float written into an int tensor would truncate);
        # basic indexing (x[0:2] = v) converts, as copy_ does
        raise RuntimeError(f"Index put requires the source and destination dtypes match, got "
                           f"{_scalar_type(x.dtype)} for the destination and "
                           f"{_scalar_type(value.dtype)} for the source. (x[index] = value "
                           f"with a tensor index: convert the value, value.to(x.dtype))")
    value = integer_scalar(value, x.dtype, "x[index] = value")  # -1 in uint8: 255; 300 raises
    if isinstance(value, Tensor) and value.device != x.device:
        value = convert(value, device=x.device)
    if isinstance(value, Tensor):   # x[1:4] = x[0:3] would write a shifted copy: torch refuses
        check_no_partial_overlap(written_region(x._data, index), value._data, "x[index] = value")
    recording = is_grad_enabled() and (x.requires_grad or (isinstance(value, Tensor)
                                                           and value.requires_grad))
    if not recording:
        data = value._data if isinstance(value, Tensor) else value
        if isinstance(value, Tensor) and value.dtype != x.dtype:
            data = precision.cast(data, x.dtype)     # torch's rounding into float16
        try:
            _store(x, lambda array: _assign(array, index, data), "x[index] = value")
        except IndexError as exc:
            raise IndexError(f"assigning into a tensor of shape {x.shape}: {exc}") from None
        except ValueError as exc:          # torch: RuntimeError (a shape mismatch)
            shapes = re.findall(r"shape \(([\d,]*)\)", str(exc))       # NumPy's from/into
            if len(shapes) == 2:
                source, into = ([int(n) for n in s.split(",") if n] for s in shapes)
                error = expand_error(source, into, "x[index] = value")
                if error is not None:
                    raise error from None
            raise RuntimeError(f"shape mismatch: x[index] = value: the value does not "
                               f"broadcast to the selection of a tensor of shape {x.shape} "
                               f"({exc})") from None
        return
    value = as_operand(value, x)
    if value.dtype != x.dtype:
        value = convert(value, dtype=x.dtype)
    _in_place(x, "x[index] = value", lambda t: SetItem.apply(t, value, index=index), (value,),
              check_overlap=False)


def _advanced(index: Any) -> bool:
    """Does the (converted) index hold an index array (torch's index_put path)?"""
    parts = index if isinstance(index, tuple) else (index,)
    return any(hasattr(p, "shape") and not np.isscalar(p) for p in parts)


def _named_write(x: Tensor, before: Any, name: str) -> Tensor:
    """Name the node an in-place write just gave x (none when it recorded nothing)."""
    if x._ctx is not before:
        name_node(x, name)
    return x


def zero_(x: Tensor) -> Tensor:
    before = x._ctx
    return _named_write(fill_(x, 0), before, "ZeroBackward0")


def fill_(x: Tensor, value: Any) -> Tensor:
    if isinstance(value, Tensor) and value.ndim != 0:      # torch refuses; it never broadcasts
        raise RuntimeError(f"fill_ only supports 0-dimension value tensor but got tensor with "
                           f"{value.ndim} dimensions (shape {tuple(value.shape)}); use "
                           f"x.copy_(value) to broadcast a tensor into x, or pass value[0] "
                           f"/ value.item()")
    value = _real_scalar(value, x.dtype, "fill_")
    check_fits(value, x.dtype, "fill_")
    value = integer_scalar(value, x.dtype, "fill_")      # -1 in uint8 is 255; 300 raises
    before = x._ctx
    setitem(x, Ellipsis, value)         # torch: fill_.Tensor (a tensor value), fill_.Scalar
    return _named_write(x, before, "FillBackward3" if isinstance(value, Tensor)
                        else "FillBackward2")


def copy_(x: Tensor, src: Any) -> Tensor:
    """Copy ``src`` (broadcast to x's shape, converted to x's dtype and device) into x."""
    if isinstance(src, Tensor):     # overlap first (torch's order), before a dtype change copies
        check_no_partial_overlap(x._data, src._data, "copy_")
        error = broadcast_error([x.shape, src.shape], "copy_") or \
            expand_error(src.shape, x.shape, "copy_: src to the tensor's shape")
        if error is not None:
            raise error
    if isinstance(src, Tensor) and src.dtype != x.dtype:
        src = convert(src, dtype=x.dtype)
    before = x._ctx
    setitem(x, Ellipsis, src)
    return _named_write(x, before, "torch::autograd::CopyBackwards")


_UNSET = object()


def uniform_(x: Tensor, low: Any = _UNSET, high: Any = _UNSET, *, generator: Any = None,
             **bounds: Any) -> Tensor:
    """``x.uniform_(from=0, to=1, *, generator=None)``: fill with samples from U(from, to)
    drawn from the default generator (or ``generator``). torch names the bounds ``from`` and
    ``to`` (``from`` is a Python keyword: pass them by position, or as ``**{"from": a}``);
    ``a=``/``b=`` are ``nn.init.uniform_``'s names and are refused here, as torch refuses
    them."""
    for name, given in (("from", low), ("to", high)):
        if name in bounds and given is not _UNSET:
            raise TypeError(f"uniform_() got multiple values for argument '{name}' (as torch)")
    unknown = sorted(set(bounds) - {"from", "to"})
    if unknown:
        raise TypeError(f"uniform_() got an unexpected keyword argument '{unknown[0]}' (as "
                        f"torch: the bounds are from= and to=, or by position, "
                        f"x.uniform_(-r, r); nn.init.uniform_(x, a=-r, b=r) is the one that "
                        f"takes a= and b=)")
    low = bounds.get("from", 0.0 if low is _UNSET else low)
    high = bounds.get("to", 1.0 if high is _UNSET else high)
    draws = backend.uniform(x.shape, x.device, x.dtype, generator)
    return _fill_random(x, draws * (high - low) + low, "uniform_")


def normal_(x: Tensor, mean: float = 0.0, std: float = 1.0, generator: Any = None) -> Tensor:
    """Fill with samples from N(mean, std^2) drawn from the default generator."""
    if not std >= 0:              # NaN too
        raise RuntimeError(f"normal_ expects std >= 0.0, but found std {std} (as torch); a "
                           f"standard deviation is never negative")
    draws = backend.standard_normal(x.shape, x.device, x.dtype, generator)
    return _fill_random(x, draws * std + mean, "normal_")


def _fill_random(x: Tensor, draws: Any, name: str) -> Tensor:
    if not is_floating(x.dtype):
        raise TypeError(f"{name} fills floating-point tensors, got {x.dtype}")
    return random_write(x, name, draws.astype(x.dtype, copy=False))


def random_write(x: Tensor, name: str, values: Any) -> Tensor:
    """x (in place) = ``values``, random draws. Recorded as torch records it: x keeps
    requires_grad and gets a node whose gradient is zero (``x.clone().uniform_()`` has
    ``UniformBackward0``: torch's node per fill, named after the op)."""
    node = "".join(part.capitalize() for part in name.rstrip("_").split("_")) + "Backward0"

    def compute(t: Tensor) -> Tensor:
        if not (t.requires_grad and is_grad_enabled()):
            return Tensor._wrap(values)
        out = SetItem.apply(t, Tensor._wrap(values), index=Ellipsis)   # dx = 0 everywhere
        return name_node(out, node)
    return _in_place(x, name, compute)


# Operators: Python calls x.__iadd__(y) for x += y and binds x to what it returns.
def iadd(x: Tensor, other: Any) -> Tensor:
    return add_(x, other)


def isub(x: Tensor, other: Any) -> Tensor:
    return sub_(x, other)


def imul(x: Tensor, other: Any) -> Tensor:
    return mul_(x, other)


def itruediv(x: Tensor, other: Any) -> Tensor:
    return div_(x, other)


def ifloordiv(x: Tensor, other: Any) -> Tensor:
    return floor_divide_(x, other)


def imod(x: Tensor, other: Any) -> Tensor:
    return remainder_(x, other)


def ipow(x: Tensor, exponent: Any) -> Tensor:
    return pow_(x, exponent)
