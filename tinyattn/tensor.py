"""``Tensor``: an array, its gradient, and the op that made it; ``tensor``, ``as_tensor`` and
``from_numpy`` (the other creation functions, zeros, randn, arange, ..., are in factories.py).

A ``Tensor`` holds ``.data`` (a NumPy or CuPy array), ``.grad`` (a Tensor of the same shape and
dtype, or None) and, when it was produced by an op that must be differentiated, ``._ctx``,
the ``Function`` instance that made it. Arithmetic and the op methods (``x.softmax(-1)``,
``x.sum(dim, keepdim)``, ...) are attached by ``tinyattn.ops``, one explicit line each; so are
the in-place ops (``add_``, ``x[i] = v``, ``-=``), which count each change in the tensor's
version (see ``tinyattn.autograd``).

Construction follows PyTorch: ``tensor(data)`` copies data and infers the dtype (float32 for
Python floats, int64 for ints, bool; a NumPy array keeps its dtype); ``Tensor(data)`` copies
data into a float32 tensor (PyTorch's legacy constructor) and ``Tensor(2, 3)`` makes a (2, 3)
tensor of zeros; ``from_numpy(array)`` and ``as_tensor(array)`` share the array's memory.

dtype policy: float32 unless asked otherwise; float64 fully supported; no op ever turns a
float32 tensor into a float64 one. Python numbers combined with a tensor take its dtype.

Library code reads a tensor's array as ``t._data``. User code reads ``t.data``, which is the
same array, except while an op has saved it for a backward that has not run yet: then ``.data``
is a read-only view, so that writing into it (which would make that backward silently wrong)
raises an error that says what to do instead (CPU arrays; on a GPU the array is returned).
"""
from __future__ import annotations

import weakref
from typing import Any, List, Optional, Sequence, Tuple, Union

import numpy as np

from . import autograd, backend, precision, printing
from .precision import is_floating

__all__ = ["Tensor", "SavedDataWriteError", "tensor", "as_tensor", "from_numpy",
           "normalize_dtype", "zeros", "ones", "zeros_like", "ones_like", "randn", "rand",
           "arange", "full"]

DTypeLike = Union[str, type, np.dtype, None]

_DTYPE_NAMES = {
    "float16": np.float16, "float32": np.float32, "float64": np.float64,
    "half": np.float16, "float": np.float32, "double": np.float64,
    "int8": np.int8, "int16": np.int16, "int32": np.int32, "int64": np.int64,
    "uint8": np.uint8, "int": np.int32, "long": np.int64, "short": np.int16,
    "bool": np.bool_, "bfloat16": precision.BFLOAT16,
}


def normalize_dtype(dtype: DTypeLike) -> Optional[np.dtype]:
    if dtype is None:
        return None
    if isinstance(dtype, str):
        name = dtype[len("torch."):] if dtype.startswith("torch.") else dtype
        if name not in _DTYPE_NAMES:
            raise TypeError(f"unknown dtype {dtype!r}: use one of {sorted(_DTYPE_NAMES)}")
        found = np.dtype(_DTYPE_NAMES[name])
        precision.note_dtype(found)
        return found
    if dtype is float:
        return np.dtype(np.float32)     # as torch: the Python type float means float32
    if dtype is int:
        return np.dtype(np.int64)
    if dtype is bool:
        return np.dtype(np.bool_)
    found = np.dtype(dtype)
    precision.note_dtype(found)
    return found


class SavedDataWriteError(RuntimeError):
    """Writing into ``.data`` of a tensor whose array a pending backward needs."""


class _SavedArray(np.ndarray):
    """What ``Tensor.data`` hands out while the array is saved for a pending backward: a
    read-only view whose writes raise ``SavedDataWriteError`` with advice, and whose
    arithmetic gives plain arrays."""

    _owner_op = "an op"

    def _guarded(name: str) -> Any:         # noqa: N805 - builds the methods below
        def write(self: "_SavedArray", *args: Any, **kwargs: Any) -> Any:
            if self.flags.writeable:        # a copy (astype, flatten, ...): its own memory
                return getattr(np.ndarray, name)(self, *args, **kwargs)
            return self._refuse()
        return write

    def copy(self, order: str = "C") -> np.ndarray:
        """A copy is new memory no backward saved: a plain, writable array."""
        return np.array(self.view(np.ndarray), order=order, copy=True)

    def astype(self, dtype: Any, *args: Any, **kwargs: Any) -> np.ndarray:
        return self.view(np.ndarray).astype(dtype, *args, **kwargs)

    def _refuse(self, *args: Any, **kwargs: Any) -> None:
        raise SavedDataWriteError(
            f"this tensor's array is saved for the backward of {self._owner_op}, which has not "
            f"run yet; writing into .data now would make that gradient silently wrong. Update "
            f"it with an in-place op that tinyattn counts, e.g. `with tinyattn.no_grad(): "
            f"x.sub_(delta)` or `x[...] = value` (a backward through the old graph then raises "
            f"instead of being wrong), call .backward() first, or change a copy: "
            f"x.detach().clone()")

    __setitem__ = _guarded("__setitem__")
    fill = _guarded("fill")
    sort = _guarded("sort")
    del _guarded

    def __array_ufunc__(self, ufunc: Any, method: str, *inputs: Any, **kwargs: Any) -> Any:
        outs = kwargs.get("out", ())
        if any(isinstance(o, _SavedArray) and not o.flags.writeable for o in outs):
            self._refuse()
        if outs:
            kwargs["out"] = tuple(o.view(np.ndarray) if isinstance(o, _SavedArray) else o
                                  for o in outs)
        inputs = tuple(i.view(np.ndarray) if isinstance(i, _SavedArray) else i for i in inputs)
        return getattr(ufunc, method)(*inputs, **kwargs)

    def __array_wrap__(self, array: Any, context: Any = None, return_scalar: bool = False) -> Any:
        if isinstance(array, np.ndarray):
            array = array.view(np.ndarray)
            return array[()] if return_scalar else array
        return array


def _read_only_view(array: np.ndarray, op_name: str) -> np.ndarray:
    view = array.view(_SavedArray)
    view.flags.writeable = False
    view._owner_op = op_name
    return view


class Tensor:
    """An n-dimensional array that remembers how it was computed, for reverse-mode autodiff."""

    __array_priority__ = 1000   # so ``ndarray + Tensor`` defers to Tensor.__radd__
    # Every tensor starts with these; an op's output (``_wrap``) then sets only its data.
    _requires_grad = False
    _grad: Optional["Tensor"] = None
    _ctx: Optional[autograd.Function] = None
    _retains_grad = False
    _hooks: Optional[List[Any]] = None               # register_hook() on a leaf
    _vc: Optional[autograd.VersionCounter] = None   # created on first need; shared by views
    _is_view = False                                 # shares memory with another tensor
    _has_views = False                               # another tensor shares its memory
    _base: Optional["Tensor"] = None                 # a view's root base (view ops only)
    _view_refs: Optional[List[Any]] = None           # weak references to a base's views

    def __init__(self, *args: Any, requires_grad: bool = False, dtype: DTypeLike = None,
                 device: Optional[str] = None):
        """``Tensor(data)``: a float32 copy of data (PyTorch's legacy constructor; pass
        ``dtype=`` for another); ``Tensor(2, 3)``: a (2, 3) tensor of zeros. For dtype
        inference use ``tinyattn.tensor(data)``."""
        want = normalize_dtype(dtype) or np.dtype(np.float32)
        if len(args) == 0:
            data = np.zeros((0,), dtype=want)
        elif all(isinstance(a, (int, np.integer)) and not isinstance(a, bool) for a in args):
            data = np.zeros(_shape(args), dtype=want)
        elif len(args) == 1:
            data = _copy_of(args[0], want)
        else:
            raise TypeError(f"Tensor(*sizes) takes whole numbers, or Tensor(data) one sequence "
                            f"or array; got {len(args)} arguments: {args!r}. Keyword options "
                            f"are requires_grad=, dtype= and device=")
        if device is not None:
            data = backend.to_device(data, device)
        self._data = data
        if requires_grad:
            self.requires_grad_(True)

    @classmethod
    def _wrap(cls, data: Any, requires_grad: bool = False) -> "Tensor":
        """Wrap an array an op produced, with no checks or copies (the fast path)."""
        out = cls.__new__(cls)
        out._data, out._requires_grad = data, requires_grad  # the rest: class defaults
        return out

    # ------------------------------------------------------------------ data and grad
    @property
    def data(self) -> Any:
        """The array (NumPy on the CPU, CuPy on a GPU), shared, not copied. Read-only while a
        pending backward needs it (see the module docstring)."""
        return self._user_array()

    def _user_array(self) -> Any:
        """What ``.data`` hands out (``numpy()`` and ``__array__`` too): the array, or a
        read-only view of it while a pending backward needs it. A method of its own so that
        ``python -m tinyattn run-torch`` can give ``.data`` PyTorch's meaning (a Tensor)."""
        if self._vc is not None and self._vc.savers is not None and \
                type(self._data) is np.ndarray:
            op = self._live_saver()
            if op is not None:
                return _read_only_view(self._data, op)
        return self._data

    @data.setter
    def data(self, value: Any) -> None:
        """Replace the array (PyTorch's ``x.data = ...``). It counts as an in-place change: a
        pending backward that saved the old array raises rather than differentiate the old
        values (PyTorch would silently use the new ones). The new array belongs to this tensor
        alone (a fresh version counter: its old views keep the old array and counter)."""
        if isinstance(value, Tensor):
            value = value._data
        if not hasattr(value, "shape") or not hasattr(value, "dtype"):
            raise TypeError(f"x.data = ... takes an array or a Tensor, got "
                            f"{type(value).__name__}")
        self._bump_version()
        self._data = value
        self._vc, self._is_view, self._has_views = None, False, False
        self._base = self._view_refs = None

    @property
    def grad(self) -> Optional["Tensor"]:
        """The gradient, a Tensor like this one (None until a backward reaches it)."""
        return self._grad

    @grad.setter
    def grad(self, value: Optional["Tensor"]) -> None:
        if value is None:
            self._grad = None
            return
        if not isinstance(value, Tensor):
            raise TypeError(f"assigned grad must be a Tensor or None, got "
                            f"{type(value).__name__} {value!r}; to clear it use x.grad = None "
                            f"(or x.grad.zero_() to keep zeros)")
        if value.shape != self.shape:
            raise RuntimeError(f"assigned grad has shape {value.shape}, but the tensor has "
                               f"shape {self.shape}; they must match")
        if value.dtype != self.dtype or value.device != self.device:
            raise TypeError(f"assigned grad is {value.dtype} on {value.device}, but the tensor "
                            f"is {self.dtype} on {self.device}; convert it first")
        self._grad = value

    # ------------------------------------------------------------ versions and views
    @property
    def _version(self) -> int:
        """How many in-place changes this tensor's data has seen (PyTorch's ``_version``)."""
        return 0 if self._vc is None else self._vc.value

    def _version_counter(self) -> autograd.VersionCounter:
        if self._vc is None:
            self._vc = autograd.VersionCounter()
        return self._vc

    def _bump_version(self) -> None:
        self._version_counter().value += 1

    def _mark_saved_by(self, fn_ref: Any) -> autograd.VersionCounter:
        """Note that a Function (``fn_ref``, a weak reference to it) saved this memory for its
        backward; return the version counter (shared with views: they share the memory)."""
        counter = self._vc
        if counter is None:
            counter = self._vc = autograd.VersionCounter()
        counter.add_saver(fn_ref)
        return counter

    def _live_saver(self) -> Optional[str]:
        """The name of an op whose pending backward needs this memory, if there is one."""
        counter = self._version_counter()
        live = [ref for ref in counter.savers if ref() is not None and ref().saved is not None]
        counter.savers = live or None
        return type(live[0]()).__name__ if live else None

    def _share_memory_with(self, base: "Tensor", view: bool = True) -> None:
        """This tensor shares ``base``'s memory: one version counter for both. A view (made
        by a view op, not by ``detach``) also records its root base, and the base keeps a
        weak list of its views, so an in-place write through one of them gives the base a
        new history (ops/view_writes.py, torch's CopySlices)."""
        self._vc = base._version_counter()
        self._is_view = True
        base._has_views = True
        if view:
            root = base if base._base is None else base._base
            self._base = root
            refs = root._view_refs
            if refs is None:
                refs = root._view_refs = []
            elif len(refs) % 64 == 0:        # a parameter viewed every step: drop dead ones
                refs[:] = [ref for ref in refs if ref() is not None]
            refs.append(weakref.ref(self))

    # ------------------------------------------------------------------ properties
    @property
    def shape(self) -> Tuple[int, ...]:
        """A tuple subclass that prints as ``torch.Size([2, 3])`` under run-torch."""
        return printing.Size(self._data.shape)

    @property
    def dtype(self) -> np.dtype:
        return self._data.dtype

    @property
    def device(self) -> str:
        return backend.device_of(self._data)

    @property
    def ndim(self) -> int:
        return self._data.ndim

    @property
    def is_leaf(self) -> bool:
        return self._ctx is None

    @property
    def grad_fn(self) -> Optional[autograd.Function]:
        """The Function that made this tensor (None for a leaf), as PyTorch's ``grad_fn``."""
        return self._ctx

    def size(self, dim: Optional[int] = None) -> Union[int, Tuple[int, ...]]:
        return self.shape if dim is None else self.shape[dim]

    def numel(self) -> int:
        return int(self._data.size)

    nelement = numel                # PyTorch's older name, still common in tutorials

    def dim(self) -> int:
        return self._data.ndim

    def is_contiguous(self) -> bool:
        """True when the elements are laid out in row-major order (what ``view`` needs);
        ``contiguous()`` makes such a copy when they are not."""
        return bool(self._data.flags.c_contiguous)

    def __len__(self) -> int:
        if self.ndim == 0:
            raise TypeError("len() of a 0-d tensor")
        return self.shape[0]

    def __iter__(self) -> Any:
        """Iterate over the first dim (each item a differentiable slice), as PyTorch does."""
        if self.ndim == 0:
            raise TypeError("iteration over a 0-d tensor")
        return (self[i] for i in range(self.shape[0]))

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        """``np.asarray(tensor)`` and NumPy functions on a tensor: its host array, as PyTorch
        allows, for CPU tensors that do not require grad (``np.exp(x)`` on one that does
        would silently cut it from the graph: use tinyattn's ops, or x.detach())."""
        if self.requires_grad:
            raise TypeError(f"can't convert a tensor that requires grad (shape {self.shape}) "
                            f"to a NumPy array implicitly: the result would be cut from the "
                            f"graph and get no gradient. Use tinyattn's ops (tinyattn.exp(x), "
                            f"x.sum(), ...) to keep it differentiable, or x.detach().numpy() "
                            f"if you only want the values")
        if self.device != "cpu":
            raise TypeError(f"can't convert a {self.device} tensor to a NumPy array "
                            f"implicitly; use .cpu() or .numpy() first")
        array = self._user_array()
        return array if dtype is None else array.astype(dtype, copy=False)

    def __repr__(self) -> str:
        """As PyTorch prints it (tinyattn/printing.py): ``tensor([1.5000, 2.0000])``,
        ``tensor([1, 2], dtype=int32)``, ``tensor(4., grad_fn=<SumBackward0>)``."""
        grad_fn = None if self._ctx is None else f"{type(self._ctx).__name__}Backward0"
        return printing.tensor_repr(backend.to_host(self._data), self.device, grad_fn,
                                    self.requires_grad)

    __hash__ = object.__hash__  # comparisons return tensors, identity stays the hash

    # ------------------------------------------------------------------ autograd
    @property
    def requires_grad(self) -> bool:
        return self._requires_grad

    @requires_grad.setter
    def requires_grad(self, value: bool) -> None:
        """``x.requires_grad = flag``, for leaves only, as PyTorch: switching a computed
        tensor off would silently drop its path from every gradient that flows through it."""
        if self._ctx is not None:
            raise RuntimeError("requires_grad can only be set on a leaf tensor (one not "
                               "computed by an op); to use a computed tensor as a constant, "
                               "take y = y.detach()")
        self.requires_grad_(bool(value))

    def requires_grad_(self, requires_grad: bool = True) -> "Tensor":
        if requires_grad and not is_floating(self.dtype):
            raise TypeError(
                f"only floating-point tensors can require gradients, but this tensor has "
                f"dtype {self.dtype}; convert it first with .float() (or .double())")
        if not requires_grad and self._ctx is not None:
            raise RuntimeError("requires_grad_(False) on a non-leaf tensor: use .detach()")
        self._requires_grad = bool(requires_grad)
        return self

    def retain_grad(self) -> "Tensor":
        """Keep ``.grad`` on this intermediate tensor after backward (leaves always keep it)."""
        self._retains_grad = True
        if self._ctx is not None:
            self._ctx._retained = weakref.ref(self)
        return self

    def register_hook(self, hook: Any) -> Any:
        """Call ``hook(grad)`` with this tensor's gradient during backward; a Tensor it
        returns replaces the gradient. Returns a handle with ``.remove()``. See
        ``tinyattn.autograd.register_hook``."""
        return autograd.register_hook(self, hook)

    @property
    def retains_grad(self) -> bool:
        return self._retains_grad and self._ctx is not None

    def _initial_grad(self, grad: Any) -> Any:
        """The gradient a backward starts from: ones for a one-element tensor, else ``grad``
        checked against this tensor's shape, dtype and device."""
        if not self.requires_grad:
            raise RuntimeError(
                "backward() on a tensor that does not require grad: no input of the "
                "computation had requires_grad=True (or it ran inside no_grad())")
        xp = backend.get_array_module(self._data)
        if grad is None:
            if self._data.size != 1:
                raise RuntimeError(
                    f"backward() without a gradient works only for a single-element output, "
                    f"but this tensor has shape {self.shape}; reduce it first (e.g. .sum() or "
                    f".mean()), or pass grad= an array of shape {self.shape}")
            return xp.ones(self._data.shape, dtype=self.dtype)
        grad = grad._data if isinstance(grad, Tensor) else grad
        grad = backend.to_device(xp.asarray(grad) if xp is np else grad, self.device)
        if tuple(grad.shape) != self.shape:
            raise ValueError(
                f"backward(grad): grad has shape {tuple(grad.shape)} but the tensor has "
                f"shape {self.shape}; they must match")
        return grad.astype(self.dtype, copy=False)

    def backward(self, gradient: Any = None, retain_graph: Optional[bool] = None,
                 create_graph: bool = False, inputs: Any = None, grad: Any = None) -> None:
        """Compute d(self)/d(leaf) for every leaf that requires grad; add it to ``leaf.grad``.

        ``gradient`` (PyTorch's name; ``grad`` is accepted too) is d(loss)/d(self), needed
        when self has more than one element. ``inputs``: add into the ``.grad`` of these
        tensors only, as PyTorch. ``create_graph=True`` (higher-order gradients) is not
        supported: the backward passes compute on arrays and record nothing."""
        autograd.refuse_create_graph(create_graph)
        gradient = gradient if gradient is not None else grad
        if inputs is not None:
            targets = [inputs] if isinstance(inputs, Tensor) else list(inputs)
            if not targets:
                raise RuntimeError("backward(inputs=[]): the inputs list is empty, so no "
                                   "gradient would be kept; leave inputs out to fill every "
                                   "leaf's .grad, or name the tensors you want")
            for i, target in enumerate(targets):
                if not isinstance(target, Tensor) or not target.requires_grad:
                    raise RuntimeError(f"backward(inputs=...): input {i} does not require "
                                       f"grad, so it can get no gradient; create it with "
                                       f"requires_grad=True or leave it out")
            found = autograd.grad(self, targets, grad_outputs=gradient,
                                  retain_graph=retain_graph, allow_unused=True)
            for target, g in zip(targets, found):
                retained = (target._ctx is not None and target._ctx._retained is not None
                            and target._ctx._retained() is target)
                if g is not None and not retained:      # a retained one was filled already
                    autograd.accumulate_grad(target, g._data)
            return
        start = self._initial_grad(gradient)
        autograd.run_backward(self, start, retain_graph=bool(retain_graph))

    def detach(self) -> "Tensor":
        """The same data, cut from the graph (no gradient flows through it). It shares this
        tensor's memory and version counter, as in PyTorch."""
        out = Tensor._wrap(self._data)
        out._share_memory_with(self, view=False)
        return out

    def zero_grad(self) -> None:
        self._grad = None

    # ------------------------------------------------------------------ conversion
    def numpy(self) -> np.ndarray:
        """The data as a NumPy array: the same memory on the CPU (read-only while a pending
        backward needs it), a copy from a GPU."""
        if self.device == "cpu":
            return self._user_array()
        return backend.to_host(self._data)

    def tolist(self) -> Any:
        return backend.to_host(self._data).tolist()

    def item(self) -> Union[float, int, bool]:
        if self._data.size != 1:
            raise ValueError(f"item() needs a single-element tensor, got shape {self.shape}")
        return backend.to_host(self._data).reshape(()).item()

    def __format__(self, spec: str) -> str:
        """As PyTorch: a 0-d tensor formats its value (``f"{loss:.4f}"``, ``f"{n} steps"``);
        any other tensor prints its repr, and only with an empty spec."""
        if self._data.ndim == 0:
            return format(self.item(), spec)
        if spec:
            raise TypeError(f"unsupported format string {spec!r} passed to Tensor.__format__ "
                            f"(a tensor of shape {tuple(self.shape)}): only a 0-d tensor "
                            f"takes a format spec; format t.item() (one element) instead")
        return repr(self)

    def __float__(self) -> float:
        return float(self.item())

    def __int__(self) -> int:
        return int(self.item())

    def __index__(self) -> int:
        if self.dtype.kind not in "iu" or self._data.size != 1:
            raise TypeError(f"only integer tensors of a single element can be converted to an "
                            f"index, got {self.dtype} of shape {self.shape}")
        return int(self.item())

    def to(self, *args: Any, dtype: DTypeLike = None, device: Any = None,
           copy: bool = False, non_blocking: bool = False, memory_format: Any = None
           ) -> "Tensor":
        """``.to('cuda')``, ``.to('cpu')``, ``.to(tinyattn.float64)``, ``.to('cuda',
        'float64')``, ``.to(other_tensor)`` or keywords ``device=``, ``dtype=``.
        ``non_blocking`` and ``memory_format`` are accepted as in PyTorch and change nothing
        (every copy here completes before ``to`` returns; memory is always row-major).

        Differentiable: a gradient flows back across a device or dtype change.
        """
        from .ops import convert  # noqa: PLC0415 - ops sit above tensor in the layers
        for arg in args:
            if isinstance(arg, bool):         # .to(device, dtype, non_blocking) positionally
                non_blocking = arg
            elif isinstance(arg, Tensor):
                device, dtype = arg.device, arg.dtype
            elif _is_device_name(arg):
                device = arg
            else:
                dtype = arg
        if device is not None:
            device = backend.normalize_device(device)   # a clear error if bad
        out = convert(self, device=device, dtype=normalize_dtype(dtype))
        if copy and out is self:
            from .ops import clone  # noqa: PLC0415
            out = clone(self)
        return out

    def type(self, dtype: DTypeLike = None) -> Any:
        if dtype is None:
            return f"{self.device}:{self.dtype}"
        return self.to(dtype)

    def float(self) -> "Tensor":
        return self.to(np.float32)

    def double(self) -> "Tensor":
        return self.to(np.float64)

    def half(self) -> "Tensor":
        return self.to(np.float16)

    def bfloat16(self) -> "Tensor":
        return self.to(precision.BFLOAT16)

    def long(self) -> "Tensor":
        return self.to(np.int64)

    def int(self) -> "Tensor":
        return self.to(np.int32)

    def bool(self) -> "Tensor":
        return self.to(np.bool_)

    def cpu(self) -> "Tensor":
        return self.to("cpu")

    def cuda(self) -> "Tensor":
        return self.to("cuda")

    def is_floating_point(self) -> bool:
        return precision.is_floating(self.dtype)

    # ---------------------------------------------------- comparisons and logic (no grad)
    def _compare(self, other: Any, name: str) -> "Tensor":
        other_data = other._data if isinstance(other, Tensor) else other
        result = getattr(self._data, name)(other_data)
        if result is NotImplemented:       # e.g. pytest.approx: let the other side decide
            return NotImplemented
        return Tensor._wrap(backend.get_array_module(self._data).asarray(result))

    def __eq__(self, other: Any) -> "Tensor":  # type: ignore[override]
        return self._compare(other, "__eq__")

    def __ne__(self, other: Any) -> "Tensor":  # type: ignore[override]
        return self._compare(other, "__ne__")

    def __lt__(self, other: Any) -> "Tensor":
        return self._compare(other, "__lt__")

    def __le__(self, other: Any) -> "Tensor":
        return self._compare(other, "__le__")

    def __gt__(self, other: Any) -> "Tensor":
        return self._compare(other, "__gt__")

    def __ge__(self, other: Any) -> "Tensor":
        return self._compare(other, "__ge__")

    def _logic(self, other: Any, name: str) -> "Tensor":
        if self.dtype != np.bool_:
            raise TypeError(f"{name.strip('_')} works on bool tensors (masks), got {self.dtype}")
        return self._compare(other, name)

    def __and__(self, other: Any) -> "Tensor":
        return self._logic(other, "__and__")

    def __or__(self, other: Any) -> "Tensor":
        return self._logic(other, "__or__")

    def __xor__(self, other: Any) -> "Tensor":
        return self._logic(other, "__xor__")

    def __invert__(self) -> "Tensor":
        if self.dtype != np.bool_:
            raise TypeError(f"~ works on bool tensors (masks), got {self.dtype}")
        return Tensor._wrap(~self._data)

    def logical_not(self) -> "Tensor":
        return Tensor._wrap(backend.get_array_module(self._data).logical_not(self._data))

    def __bool__(self) -> bool:
        if self._data.size != 1:
            raise RuntimeError(
                f"the truth value of a tensor with {self._data.size} elements is ambiguous; "
                f"use .any() or .all()")
        return bool(self.item())

    def any(self, dim: Optional[int] = None, keepdim: bool = False, *, axis: Any = None,
            out: Any = None, keepdims: Any = None) -> "Tensor":
        """True where any element (along ``dim``) is non-zero. ``axis``/``keepdims``: NumPy's
        spellings, so ``np.any(tensor)`` works as well."""
        dim = axis if dim is None else dim
        keep = bool(keepdims) if keepdims is not None else keepdim
        xp = backend.get_array_module(self._data)
        return Tensor._wrap(xp.asarray(self._data.any(axis=dim, keepdims=keep)))

    def all(self, dim: Optional[int] = None, keepdim: bool = False, *, axis: Any = None,
            out: Any = None, keepdims: Any = None) -> "Tensor":
        dim = axis if dim is None else dim
        keep = bool(keepdims) if keepdims is not None else keepdim
        xp = backend.get_array_module(self._data)
        return Tensor._wrap(xp.asarray(self._data.all(axis=dim, keepdims=keep)))


def _is_device_name(value: Any) -> bool:
    if not isinstance(value, str):
        return False
    name = value[len("torch."):] if value.startswith("torch.") else value
    return name not in _DTYPE_NAMES


# ---------------------------------------------------------------------- creation
def _host_array(data: Any) -> np.ndarray:
    """np.asarray with errors a learner can act on (ragged lists, strings, objects)."""
    if isinstance(data, (list, tuple)) and _holds_tensor(data):
        return _from_nested_tensors(data)
    try:
        array = np.asarray(data)
    except ValueError:
        raise ValueError("tensor: the data is ragged (nested lists of different lengths); "
                         "every row must have the same length") from None
    if not _holds_numbers(array.dtype):
        raise TypeError(f"tensor: expected numbers (int, float or bool), got data of type "
                        f"{type(data).__name__} (NumPy dtype {array.dtype})")
    return array


def _holds_tensor(data: Any) -> bool:
    return any(isinstance(d, Tensor) or (isinstance(d, (list, tuple)) and _holds_tensor(d))
               for d in data)


def _from_nested_tensors(data: Any) -> np.ndarray:
    """torch.tensor's reading of lists that hold tensors: the shape comes from the lists (and
    the first elements' lengths), a tensor at the innermost level is a number, so it must
    have one element (``[tensor([0.9]), tensor([2.1])]`` has shape (2,)); the dtype promotes
    the elements' dtypes (a Python float as float32). Join bigger tensors with stack."""
    from .promotion import promote_types  # noqa: PLC0415 - promotion is a leaf module
    sizes: List[int] = []
    first = data
    while isinstance(first, (list, tuple, np.ndarray)):
        sizes.append(len(first))
        if not len(first):
            break
        first = first[0]
    values: List[Any] = []
    dtypes: List[np.dtype] = []

    def store(item: Any, depth: int) -> None:
        if depth == len(sizes):
            if isinstance(item, Tensor):
                if item.numel() != 1:
                    raise ValueError(
                        f"tensor: only one element tensors can be converted to Python scalars "
                        f"(a list element is a tensor of shape {item.shape}); to join tensors "
                        f"into one, use stack(list_of_tensors) or cat")
                dtypes.append(item.dtype)
                values.append(item.reshape(()).item())
            elif isinstance(item, (bool, int, float, np.generic)):
                dtypes.append(_number_dtype(item))
                values.append(item)
            else:
                raise TypeError(f"tensor: expected a number at depth {depth}, got "
                                f"{type(item).__name__} (the first element sets the nesting)")
            return
        if isinstance(item, Tensor):
            item = [item[i] for i in range(item.shape[0])] if item.ndim else [item]
        if not isinstance(item, (list, tuple, np.ndarray)) or len(item) != sizes[depth]:
            got = len(item) if hasattr(item, "__len__") else type(item).__name__
            raise ValueError(f"tensor: expected sequence of length {sizes[depth]} at dim "
                             f"{depth} (got {got})")
        for element in item:
            store(element, depth + 1)

    store(data, 0)
    dtype = dtypes[0] if dtypes else np.dtype(np.float32)
    for other in dtypes[1:]:
        dtype = promote_types(dtype, other)
    return np.array(values, dtype=dtype).reshape(sizes)


def _number_dtype(value: Any) -> np.dtype:
    if isinstance(value, np.generic):
        return value.dtype
    if isinstance(value, bool):
        return np.dtype(np.bool_)
    return np.dtype(np.int64 if isinstance(value, int) else np.float32)


def _copy_of(data: Any, dtype: np.dtype) -> Any:
    """A new array holding ``data`` as ``dtype`` (never the caller's array itself)."""
    if isinstance(data, Tensor):
        data = data._data
    if backend.device_of(data) != "cpu":
        return data.astype(dtype, copy=True)
    precision.note_dtype(dtype)
    return np.array(_host_array(data), dtype=dtype, copy=True)


def tensor(data: Any, dtype: DTypeLike = None, device: Optional[str] = None,
           requires_grad: bool = False) -> Tensor:
    """A new leaf tensor holding a copy of ``data`` (a list, number, array or Tensor).

    dtype as ``torch.tensor``: Python floats give float32, ints int64, bools bool; a NumPy
    array (or Tensor) keeps its dtype."""
    want = normalize_dtype(dtype)
    source = data._data if isinstance(data, Tensor) else data
    if backend.device_of(source) == "cpu":
        array = _host_array(source)
        if want is None and array.dtype == np.float64 and not isinstance(
                source, (np.ndarray, np.generic)) and not (
                isinstance(source, (list, tuple)) and _holds_tensor(source)):
            want = np.dtype(np.float32)      # Python floats: the default float dtype
        array = np.array(array, dtype=want or array.dtype, copy=True)
        precision.note_dtype(array.dtype)
    else:
        array = source.astype(want or source.dtype, copy=True)
    out = Tensor._wrap(array if device is None else backend.to_device(array, device))
    if requires_grad:
        out.requires_grad_(True)
    return out


def as_tensor(data: Any, dtype: DTypeLike = None, device: Optional[str] = None) -> Tensor:
    """``data`` itself when it is already a Tensor of that dtype and device; a NumPy array of
    the right dtype is shared, not copied (as ``torch.as_tensor``); otherwise a new tensor."""
    want = normalize_dtype(dtype)
    target = None if device is None else backend.normalize_device(device)
    if isinstance(data, Tensor):
        if (want is None or data.dtype == want) and (target is None or data.device == target):
            return data
        return data.to(device=target, dtype=want)
    if isinstance(data, np.ndarray) and _holds_numbers(data.dtype) and (
            want is None or data.dtype == want) and target in (None, "cpu"):
        precision.note_dtype(data.dtype)
        return Tensor._wrap(data)
    if backend.device_of(data) != "cpu" and (want is None or data.dtype == want) and (
            target is None or backend.device_of(data) == target):
        return Tensor._wrap(data)
    return tensor(data, dtype=dtype, device=device)


def from_numpy(array: np.ndarray) -> Tensor:
    """A tensor sharing ``array``'s memory (writes to one show in the other), as
    ``torch.from_numpy``."""
    if not isinstance(array, np.ndarray):
        raise TypeError(f"from_numpy expects a NumPy array, got {type(array).__name__}")
    if not _holds_numbers(array.dtype):
        raise TypeError(f"from_numpy: unsupported dtype {array.dtype}; tinyattn tensors hold "
                        f"bool, integer or floating-point numbers")
    precision.note_dtype(array.dtype)
    return Tensor._wrap(array)


def _holds_numbers(dtype: np.dtype) -> bool:
    return dtype.kind in "biuf" or dtype == precision.BFLOAT16


def _shape(shape: Sequence[Any]) -> Tuple[int, ...]:
    if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
        shape = shape[0]
    dims = tuple(int(n) for n in shape)
    if any(n < 0 for n in dims):
        raise ValueError(f"a shape cannot have negative sizes, got {dims}")
    return dims


_MOVED_TO_FACTORIES = {"zeros", "ones", "zeros_like", "ones_like", "randn", "rand", "arange",
                       "full"}


def __getattr__(name: str) -> Any:
    """The creation functions live in tinyattn/factories.py (which imports this module); the
    ones that used to be here stay importable from here (``from .tensor import zeros``)."""
    if name in _MOVED_TO_FACTORIES:
        from . import factories  # noqa: PLC0415 - factories imports this module
        return getattr(factories, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
