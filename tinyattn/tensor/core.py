"""``Tensor``: an array, its gradient, and the op that made it (the package docstring,
tinyattn/tensor/__init__.py, says how they fit together). This file holds the class with
its data, gradient, version and autograd methods; conversions and comparisons are inherited
from conversion.py.
"""
from __future__ import annotations

import warnings
import weakref
from typing import Any, List, Optional, Sequence, Tuple, Union

import numpy as np

from .. import autograd, backend, precision, printing
from ..precision import is_floating
from .conversion import TensorConversions
from .dtypes import DTypeLike, normalize_dtype
from .layout import strided
from .saved_data import _read_only_view

__all__ = ["Tensor"]


_NON_LEAF_GRAD_WARNING = (
    "The .grad attribute of a Tensor that is not a leaf Tensor is being accessed. Its .grad "
    "attribute won't be populated during autograd.backward(). If you indeed want the .grad "
    "field to be populated for a non-leaf Tensor, use .retain_grad() on the non-leaf Tensor. "
    "If you access the non-leaf Tensor by mistake, make sure you access the leaf Tensor "
    "instead. See github.com/pytorch/pytorch/pull/30531 for more informations.")


class GradientShapeError(ValueError, RuntimeError):
    """``backward(gradient)`` with a gradient of another shape: a ValueError (as tinyattn
    raised) and a RuntimeError (torch's "Mismatch in shape")."""


class GradientDtypeError(TypeError, RuntimeError):
    """``requires_grad_()`` on a non-float tensor: a TypeError (as tinyattn raised) and a
    RuntimeError (torch's "only Tensors of floating point dtype can require gradients")."""


class Tensor(TensorConversions):
    """An n-dimensional array that remembers how it was computed, for reverse-mode autodiff."""

    __array_priority__ = 1000   # so ``ndarray + Tensor`` defers to Tensor.__radd__
    # Every tensor starts with these; an op's output (``_wrap``) then sets only its data.
    _requires_grad = False
    _grad: Optional["Tensor"] = None
    _ctx: Optional[autograd.Function] = None
    _retains_grad = False
    _hooks: Optional[List[Any]] = None               # register_hook() on a leaf
    _post_accumulate_hooks: Optional[List[Any]] = None   # after .grad += (a leaf's)
    _vc: Optional[autograd.VersionCounter] = None   # created on first need; shared by views
    _is_view = False                                 # shares memory with another tensor
    _has_views = False                               # another tensor shares its memory
    _base: Optional["Tensor"] = None                 # a view's root base (view ops only)
    _view_refs: Optional[List[Any]] = None           # weak references to a base's views
    _alias_refs: Optional[List[Any]] = None          # ... to other tensors on its memory
    _input_record: Any = None       # what the nodes that read it keep (autograd.held_input)
    _origin_vc: Optional[autograd.VersionCounter] = None   # a converted copy's original's

    def __new__(cls, *args: Any, requires_grad: bool = False, dtype: DTypeLike = None,
                device: Optional[str] = None) -> "Tensor":
        if _is_alias_call(cls, args, requires_grad, dtype, device):
            return args[0][...]   # torch.Tensor(t) is t.alias(): t's dtype, memory, gradient
        return object.__new__(cls)

    def __init__(self, *args: Any, requires_grad: bool = False, dtype: DTypeLike = None,
                 device: Optional[str] = None):
        """``Tensor(data)``: a copy of data in the default float dtype (float32 unless set;
        PyTorch's legacy constructor; pass ``dtype=`` for another); ``Tensor(2, 3)``: a
        (2, 3) tensor of zeros. For dtype inference use ``tinyattn.tensor(data)``.
        ``Tensor(t)`` of a tensor is, as torch's, an alias of t (a view: same dtype and memory,
        AliasBackward0), made by ``__new__``; with ``dtype=``, ``device=`` or
        ``requires_grad=`` (which torch refuses there) it is a copy as for other data."""
        if _is_alias_call(type(self), args, requires_grad, dtype, device):
            return                # __new__ returned the alias; Python calls __init__ on it
        want = normalize_dtype(dtype) or precision.get_default_dtype()
        if len(args) == 0:
            data = np.zeros((0,), dtype=want)
        elif all(isinstance(a, (int, np.integer)) and not isinstance(a, bool) for a in args):
            data = np.zeros(_shape(args), dtype=want)
        elif len(args) == 1:
            if isinstance(args[0], (list, tuple, complex)) and np.asarray(
                    _host_array(args[0])).dtype.kind == "c" and want.kind != "c":
                from .creation import _complex_number_error  # noqa: PLC0415 - creation imports core
                raise _complex_number_error(want)
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
        out = object.__new__(cls)       # not Tensor.__new__ (the alias check): the hot path
        out._data, out._requires_grad = data, requires_grad  # the rest: class defaults
        return out

    # ------------------------------------------------------------------ data and grad
    @property
    def data(self) -> Any:
        """The array (NumPy on the CPU, CuPy on a GPU), shared, not copied. Writes into it
        are not counted, as in torch (a pending backward uses what is there); under
        ``detect_anomaly()`` it is read-only while a pending backward needs it."""
        return self._user_array()

    def _user_array(self) -> Any:
        """What ``.data`` hands out (``numpy()`` and ``__array__`` too): the array, or, in
        anomaly mode (opt-in, stricter than torch), a read-only view of it while a pending
        backward needs it. A method of its own so that ``python -m tinyattn run-torch`` can
        give ``.data`` PyTorch's meaning (a Tensor)."""
        if autograd._state.anomaly and self._vc is not None and \
                self._vc.savers is not None and type(self._data) is np.ndarray:
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
        if self._requires_grad and not is_floating(value.dtype) and value.dtype.kind != "c":
            raise GradientDtypeError(
                f"x.data = ...: x requires grad, so its data must be floating point or "
                f"complex, got dtype {value.dtype}; convert the value first (.float())")
        self._bump_version()
        self._data = value
        self._vc, self._is_view, self._has_views = None, False, False
        self._base = self._view_refs = self._alias_refs = None

    @property
    def grad(self) -> Optional["Tensor"]:
        """The gradient, a Tensor like this one (None until a backward reaches it). Read on
        a non-leaf that did not ``retain_grad()``, it warns as torch does (it stays None)."""
        ctx = self._ctx
        # torch warns only while there is no grad: backward(inputs=[y]) fills a non-leaf's
        if ctx is not None and self._requires_grad and self._grad is None and not (
                ctx._retained is not None and ctx._retained() is self):
            warnings.warn(_NON_LEAF_GRAD_WARNING, UserWarning, stacklevel=2)
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
            # torch: RuntimeError; a GradientDtypeError is a TypeError too (it was one here)
            raise GradientDtypeError(f"assigned grad is {value.dtype} on {value.device}, but "
                                     f"the tensor is {self.dtype} on {self.device}; convert "
                                     f"it first")
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
        root = base if base._base is None else base._base
        if view:
            self._base = root
            root._view_refs = _add_weak(root._view_refs, self)
        else:        # detach(): not a view for autograd, but share_memory_() must move it
            root._alias_refs = _add_weak(root._alias_refs, self)

    def _tensors_on_memory(self) -> List["Tensor"]:
        """Every live tensor whose array lies in this tensor's memory, the root base first
        (its array holds every element of the others' arrays)."""
        root = self if self._base is None else self._base
        if type(root._data) is not np.ndarray or \
                not np.may_share_memory(self._data, root._data):
            return [self]
        tensors = [root]
        for refs in (root._view_refs, root._alias_refs):
            for ref in refs or ():
                tensor = ref()
                if tensor is not None and tensor is not root and \
                        type(tensor._data) is np.ndarray and \
                        np.may_share_memory(tensor._data, root._data):
                    tensors.append(tensor)
        return tensors

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
    def layout(self) -> Any:
        """``torch.strided``: every tinyattn tensor is dense (tensor/layout.py)."""
        return strided

    @property
    def is_sparse(self) -> bool:
        """False: tinyattn has no sparse tensors (torch's attribute, for code that checks)."""
        return False

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

    def element_size(self) -> int:
        """Bytes per element (2 for bfloat16), as PyTorch's; memory estimates use it."""
        return int(self._data.dtype.itemsize)

    @property
    def itemsize(self) -> int:
        return int(self._data.dtype.itemsize)

    @property
    def nbytes(self) -> int:
        """numel * element_size, as PyTorch's (a view counts its own elements)."""
        return int(self._data.size) * int(self._data.dtype.itemsize)

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

    def __reversed__(self) -> Any:
        """``reversed(t)``, as PyTorch: a tensor, ``t.flip(0)`` (differentiable, a copy), not
        Python's iterator over rows (d2l's bidirectional RNN passes it on as a tensor); a
        0-d tensor comes back as itself."""
        if self.ndim == 0:
            return self
        return self.flip(0)

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
        # torch's node name, as its type prints it (name() "torch::autograd::CopyBackwards")
        grad_fn = None if self._ctx is None else self._ctx.name().rpartition("::")[2]
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
        if requires_grad and not is_floating(self.dtype) and self.dtype.kind != "c":
            raise GradientDtypeError(
                f"only floating-point and complex tensors can require gradients, but this "
                f"tensor has "
                f"dtype {self.dtype}; convert it first with .float() (or .double())")
        if not requires_grad and self._ctx is not None:
            raise RuntimeError("requires_grad_(False) on a non-leaf tensor: use .detach()")
        self._requires_grad = bool(requires_grad)
        return self

    def retain_grad(self) -> "Tensor":
        """Keep ``.grad`` on this intermediate tensor after backward (leaves always keep it).
        A tensor that does not require grad has no gradient to keep: refused, as torch."""
        if not self.requires_grad:
            raise RuntimeError("can't retain_grad on Tensor that has requires_grad=False "
                               "(call requires_grad_() on the leaf it comes from first)")
        self._retains_grad = True
        if self._ctx is not None:
            self._ctx._retained = weakref.ref(self)
        return self

    def register_hook(self, hook: Any) -> Any:
        """Call ``hook(grad)`` with this tensor's gradient during backward; a Tensor it
        returns replaces the gradient. Returns a handle with ``.remove()``. See
        ``tinyattn.autograd.register_hook``."""
        return autograd.register_hook(self, hook)

    def share_memory_(self) -> "Tensor":
        """Move the data into shared memory (a no-op if it is there already, on a GPU, or
        for an empty tensor), so that processes it is sent to (``tinyattn.multiprocessing``)
        share its numbers: an in-place change in one is seen by all. As torch's, it moves
        the whole memory: the base and every view and ``detach()`` of it keep sharing it
        (the values are copied once; the version stays). Returns self."""
        if type(self._data) is np.ndarray and self._data.size and not self.is_shared():
            from . import shared_memory       # noqa: PLC0415 - only sharing needs mmap
            tensors = self._tensors_on_memory()
            moved = shared_memory.move_to_shared([t._data for t in tensors])
            for tensor, array in zip(tensors, moved):
                tensor._data = array
        return self

    def __getstate__(self) -> dict:
        """Pickled by value (a copy), as ``torch.save`` and ``pickle`` do;
        tinyattn.multiprocessing sends tensors through shared memory instead."""
        state = dict(self.__dict__)
        # the graph is this process's (weak references, nodes): as in torch, an unpickled
        # tensor is a leaf that keeps requires_grad, with versions and views of its own
        for graph_part in ("_input_record", "_ctx", "_vc", "_base", "_view_refs", "_is_view",
                           "_has_views", "_retains_grad", "_alias_refs", "_origin_vc"):
            state.pop(graph_part, None)
        return state

    def is_shared(self) -> bool:
        """True when the data lies in shared memory: after ``share_memory_()``, after the
        tensor (or one sharing its memory) was sent to another process, and in a process
        that received it."""
        if type(self._data) is not np.ndarray:
            return False
        from . import shared_memory           # noqa: PLC0415
        return shared_memory.storage_of(self._data) is not None

    def register_post_accumulate_grad_hook(self, hook: Any) -> Any:
        """Call ``hook(self)`` once backward has added this leaf's whole gradient into
        ``.grad`` (PyTorch's). See ``tinyattn.autograd.hooks``."""
        return autograd.hooks.register_post_accumulate_grad_hook(self, hook)

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
            raise GradientShapeError(
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


# ---------------------------------------------------------------------- data to arrays
def _add_weak(refs: Optional[List[Any]], tensor: "Tensor") -> List[Any]:
    """``refs`` (a list of weak references, made if None) with one to ``tensor`` added."""
    if refs is None:
        refs = []
    elif len(refs) % 64 == 0:            # a parameter viewed every step: drop dead ones
        refs[:] = [ref for ref in refs if ref() is not None]
    refs.append(weakref.ref(tensor))
    return refs


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
        raise TypeError(f"tensor: expected numbers (int, float, complex or bool), got data of type "
                        f"{type(data).__name__} (NumPy dtype {array.dtype})")
    return array


def _holds_tensor(data: Any) -> bool:
    return any(isinstance(d, Tensor) or (isinstance(d, (list, tuple)) and _holds_tensor(d))
               for d in data)


def _from_nested_tensors(data: Any) -> np.ndarray:
    """torch.tensor's reading of lists that hold tensors: the shape comes from the lists (and
    the first elements' lengths), a tensor at the innermost level is a number, so it must
    have one element (``[tensor([0.9]), tensor([2.1])]`` has shape (2,)); the dtype promotes
    the elements' dtypes (a Python float as the default float dtype). Join bigger tensors
    with stack."""
    from ..promotion import promote_types  # noqa: PLC0415 - promotion is a leaf module
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
    dtype = dtypes[0] if dtypes else precision.get_default_dtype()
    for other in dtypes[1:]:
        dtype = promote_types(dtype, other)
    return np.array(values, dtype=dtype).reshape(sizes)


def _is_alias_call(cls: type, args: Tuple[Any, ...], requires_grad: bool, dtype: Any,
                   device: Any) -> bool:
    """``Tensor(t)`` with t a tensor and no options (subclasses such as Parameter build their
    own way)."""
    return cls is Tensor and len(args) == 1 and isinstance(args[0], Tensor) and \
        not requires_grad and dtype is None and device is None


def _number_dtype(value: Any) -> np.dtype:
    if isinstance(value, np.generic):
        return value.dtype
    if isinstance(value, bool):
        return np.dtype(np.bool_)
    return np.dtype(np.int64) if isinstance(value, int) else precision.get_default_dtype()


def _copy_of(data: Any, dtype: np.dtype) -> Any:
    """A new array holding ``data`` as ``dtype`` (never the caller's array itself)."""
    if isinstance(data, Tensor):
        data = data._data
    if backend.device_of(data) != "cpu":
        return data.astype(dtype, copy=True)
    precision.note_dtype(dtype)
    return np.array(_host_array(data), dtype=dtype, copy=True)


def _holds_numbers(dtype: np.dtype) -> bool:
    return dtype.kind in "biufc" or dtype == precision.BFLOAT16


def _shape(shape: Sequence[Any]) -> Tuple[int, ...]:
    if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
        shape = shape[0]
    dims = tuple(int(n) for n in shape)
    if any(n < 0 for n in dims):
        raise RuntimeError(f"a shape cannot have negative sizes, got {dims}")
    return dims
