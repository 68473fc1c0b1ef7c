"""``Tensor``: an array, its gradient, and the op that made it; plus the creation functions.

A ``Tensor`` holds ``.data`` (a NumPy or CuPy array), ``.grad`` (an array of the same shape
and type, or None) and, when it was produced by an op that must be differentiated, ``._ctx``,
the ``Function`` instance that made it. Arithmetic and the op methods (``x.softmax(-1)``,
``x.sum(dim, keepdim)``, ...) are attached by ``tinyattn.ops``, one explicit line each.

dtype policy: float32 unless asked otherwise; float64 fully supported; no op ever turns a
float32 tensor into a float64 one. Python numbers combined with a tensor take its dtype.
"""
from __future__ import annotations

from typing import Any, Optional, Sequence, Tuple, Union

import numpy as np

from . import autograd, backend

__all__ = ["Tensor", "tensor", "zeros", "ones", "zeros_like", "ones_like", "randn", "rand",
           "arange", "full", "as_tensor"]

DTypeLike = Union[str, type, np.dtype, None]

_DTYPE_NAMES = {
    "float16": np.float16, "float32": np.float32, "float64": np.float64,
    "half": np.float16, "float": np.float32, "double": np.float64,
    "int32": np.int32, "int64": np.int64, "long": np.int64, "bool": np.bool_,
}


def normalize_dtype(dtype: DTypeLike) -> Optional[np.dtype]:
    if dtype is None:
        return None
    if isinstance(dtype, str):
        if dtype not in _DTYPE_NAMES:
            raise TypeError(f"unknown dtype {dtype!r}: use one of {sorted(_DTYPE_NAMES)}")
        return np.dtype(_DTYPE_NAMES[dtype])
    return np.dtype(dtype)


class Tensor:
    """An n-dimensional array that remembers how it was computed, for reverse-mode autodiff."""

    __array_priority__ = 1000  # so ``ndarray + Tensor`` defers to Tensor.__radd__
    # Every tensor starts with these; an op's output (``_wrap``) then sets only its data.
    grad: Any = None
    _ctx: Optional[autograd.Function] = None
    _retains_grad = False

    def __init__(self, data: Any, requires_grad: bool = False, dtype: DTypeLike = None,
                 device: Optional[str] = None):
        if isinstance(data, Tensor):
            data = data.data
        if not isinstance(data, np.ndarray) and backend.device_of(data) == "cpu":
            data = _host_array(data)  # a list or a number: Python floats become float32
            if dtype is None and data.dtype == np.float64:
                data = data.astype(np.float32)
        if device is not None:
            data = backend.to_device(data, device)
        dtype = normalize_dtype(dtype)
        if dtype is not None and data.dtype != dtype:
            data = data.astype(dtype)
        self.data = data
        self.grad: Any = None
        self._ctx: Optional[autograd.Function] = None
        self._retains_grad = False
        self.requires_grad = False
        if requires_grad:
            self.requires_grad_(True)

    @classmethod
    def _wrap(cls, data: Any, requires_grad: bool = False) -> "Tensor":
        """Wrap an array an op produced, with no checks or copies (the fast path)."""
        out = cls.__new__(cls)
        out.data, out.requires_grad = data, requires_grad   # grad, _ctx: the class defaults
        return out

    # ------------------------------------------------------------------ properties
    @property
    def shape(self) -> Tuple[int, ...]:
        return tuple(self.data.shape)

    @property
    def dtype(self) -> np.dtype:
        return self.data.dtype

    @property
    def device(self) -> str:
        return backend.device_of(self.data)

    @property
    def ndim(self) -> int:
        return self.data.ndim

    @property
    def is_leaf(self) -> bool:
        return self._ctx is None

    def size(self, dim: Optional[int] = None) -> Union[int, Tuple[int, ...]]:
        return self.shape if dim is None else self.shape[dim]

    def numel(self) -> int:
        return int(self.data.size)

    def dim(self) -> int:
        return self.data.ndim

    def __len__(self) -> int:
        if self.ndim == 0:
            raise TypeError("len() of a 0-d tensor")
        return self.shape[0]

    def __repr__(self) -> str:
        body = np.array2string(self.numpy(), precision=4, separator=", ", threshold=50)
        extras = [f"dtype={self.dtype}"]
        if self.device != "cpu":
            extras.append(f"device='{self.device}'")
        if self._ctx is not None:
            extras.append(f"grad_fn=<{type(self._ctx).__name__}>")
        elif self.requires_grad:
            extras.append("requires_grad=True")
        return f"tensor({body}, {', '.join(extras)})"

    __hash__ = object.__hash__  # comparisons return tensors, identity stays the hash

    # ------------------------------------------------------------------ autograd
    def requires_grad_(self, requires_grad: bool = True) -> "Tensor":
        if requires_grad and not np.issubdtype(self.dtype, np.floating):
            raise TypeError(
                f"only floating-point tensors can require gradients, but this tensor has "
                f"dtype {self.dtype}; convert it first with .float() (or .double())")
        if not requires_grad and self._ctx is not None:
            raise RuntimeError("requires_grad_(False) on a non-leaf tensor: use .detach()")
        self.requires_grad = bool(requires_grad)
        return self

    def retain_grad(self) -> "Tensor":
        """Keep ``.grad`` on this intermediate tensor after backward (leaves always keep it)."""
        self._retains_grad = True
        return self

    def backward(self, grad: Any = None, retain_graph: bool = False) -> None:
        """Compute d(self)/d(leaf) for every leaf that requires grad; add it to ``leaf.grad``."""
        if not self.requires_grad:
            raise RuntimeError(
                "backward() on a tensor that does not require grad: no input of the "
                "computation had requires_grad=True (or it ran inside no_grad())")
        xp = backend.get_array_module(self.data)
        if grad is None:
            if self.data.size != 1:
                raise RuntimeError(
                    f"backward() without a gradient works only for a single-element output, "
                    f"but this tensor has shape {self.shape}; reduce it first (e.g. .sum() or "
                    f".mean()), or pass grad= an array of shape {self.shape}")
            grad = xp.ones(self.data.shape, dtype=self.dtype)
        else:
            grad = grad.data if isinstance(grad, Tensor) else grad
            grad = backend.to_device(xp.asarray(grad) if xp is np else grad, self.device)
            if tuple(grad.shape) != self.shape:
                raise ValueError(
                    f"backward(grad): grad has shape {tuple(grad.shape)} but the tensor has "
                    f"shape {self.shape}; they must match")
            grad = grad.astype(self.dtype, copy=False)
        autograd.run_backward(self, grad, retain_graph=retain_graph)

    def detach(self) -> "Tensor":
        """The same data, cut from the graph (no gradient flows through it)."""
        return Tensor._wrap(self.data, requires_grad=False)

    def zero_grad(self) -> None:
        self.grad = None

    # ------------------------------------------------------------------ conversion
    def numpy(self) -> np.ndarray:
        """A host NumPy copy of the data (an explicit device-to-host transfer)."""
        return backend.to_host(self.data)

    def tolist(self) -> Any:
        return self.numpy().tolist()

    def item(self) -> Union[float, int, bool]:
        if self.data.size != 1:
            raise ValueError(f"item() needs a single-element tensor, got shape {self.shape}")
        return self.numpy().reshape(()).item()

    def to(self, device_or_dtype: Any = None, dtype: DTypeLike = None) -> "Tensor":
        """``.to('cuda')``, ``.to('cpu')``, ``.to(np.float64)`` or ``.to('cuda', 'float64')``.

        Differentiable: a gradient flows back across a device or dtype change.
        """
        from .ops import convert  # noqa: PLC0415 - ops sit above tensor in the layers
        device = None
        if device_or_dtype is not None:
            if isinstance(device_or_dtype, str) and device_or_dtype not in _DTYPE_NAMES:
                device = backend.normalize_device(device_or_dtype)  # a clear error if bad
            else:
                dtype = device_or_dtype
        return convert(self, device=device, dtype=normalize_dtype(dtype))

    def float(self) -> "Tensor":
        return self.to(np.float32)

    def double(self) -> "Tensor":
        return self.to(np.float64)

    def half(self) -> "Tensor":
        return self.to(np.float16)

    def long(self) -> "Tensor":
        return Tensor._wrap(self.data.astype(np.int64))

    def bool(self) -> "Tensor":
        return Tensor._wrap(self.data.astype(np.bool_))

    def cpu(self) -> "Tensor":
        return self.to("cpu")

    def cuda(self) -> "Tensor":
        return self.to("cuda")

    # ---------------------------------------------------- comparisons and logic (no grad)
    def _compare(self, other: Any, name: str) -> "Tensor":
        other_data = other.data if isinstance(other, Tensor) else other
        return Tensor._wrap(getattr(self.data, name)(other_data))

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
        return Tensor._wrap(~self.data)

    def __bool__(self) -> bool:
        if self.data.size != 1:
            raise RuntimeError(
                f"the truth value of a tensor with {self.data.size} elements is ambiguous; "
                f"use .any() or .all()")
        return bool(self.item())

    def any(self) -> "Tensor":
        return Tensor._wrap(self.data.any())

    def all(self) -> "Tensor":
        return Tensor._wrap(self.data.all())

    def argmax(self, dim: Optional[int] = None, keepdim: bool = False) -> "Tensor":
        out = self.data.argmax(axis=dim)
        if keepdim and dim is not None:
            out = backend.get_array_module(out).expand_dims(out, dim)
        return Tensor._wrap(out)


# ---------------------------------------------------------------------- creation
def tensor(data: Any, requires_grad: bool = False, dtype: DTypeLike = None,
           device: str = "cpu") -> Tensor:
    """A new leaf tensor from a list, number or array (floats default to float32)."""
    if isinstance(data, Tensor):
        data = data.data
    if isinstance(data, np.ndarray):
        data = data.copy()  # a new leaf never aliases the caller's array
    return Tensor(data, requires_grad=requires_grad, dtype=dtype, device=device)


def as_tensor(data: Any, dtype: DTypeLike = None, device: Optional[str] = None) -> Tensor:
    """``data`` itself when it is already a Tensor of that dtype and device, else a new one."""
    if isinstance(data, Tensor):
        want_dtype = normalize_dtype(dtype)
        if (want_dtype is None or data.dtype == want_dtype) and (
                device is None or data.device == backend.normalize_device(device)):
            return data
        data = data.data
    return Tensor(data, dtype=dtype, device=device)


def _host_array(data: Any) -> np.ndarray:
    """np.asarray with errors a learner can act on (ragged lists, strings, objects)."""
    try:
        array = np.asarray(data)
    except ValueError:
        raise ValueError("tensor: the data is ragged (nested lists of different lengths); "
                         "every row must have the same length") from None
    if array.dtype.kind not in "biuf":
        raise TypeError(f"tensor: expected numbers (int, float or bool), got data of type "
                        f"{type(data).__name__} (NumPy dtype {array.dtype})")
    return array


def _shape(shape: Sequence[Any]) -> Tuple[int, ...]:
    if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
        shape = shape[0]
    dims = tuple(int(n) for n in shape)
    if any(n < 0 for n in dims):
        raise ValueError(f"a shape cannot have negative sizes, got {dims}")
    return dims


def _float_dtype(dtype: DTypeLike) -> np.dtype:
    return normalize_dtype(dtype) or np.dtype(np.float32)


def zeros(*shape: Any, dtype: DTypeLike = None, device: str = "cpu",
          requires_grad: bool = False) -> Tensor:
    xp = backend.array_module_for(device)
    return Tensor(xp.zeros(_shape(shape), dtype=_float_dtype(dtype)), requires_grad=requires_grad)


def ones(*shape: Any, dtype: DTypeLike = None, device: str = "cpu",
         requires_grad: bool = False) -> Tensor:
    xp = backend.array_module_for(device)
    return Tensor(xp.ones(_shape(shape), dtype=_float_dtype(dtype)), requires_grad=requires_grad)


def full(shape: Sequence[int], value: float, dtype: DTypeLike = None, device: str = "cpu",
         requires_grad: bool = False) -> Tensor:
    xp = backend.array_module_for(device)
    return Tensor(xp.full(tuple(shape), value, dtype=_float_dtype(dtype)),
                  requires_grad=requires_grad)


def zeros_like(x: Tensor, requires_grad: bool = False) -> Tensor:
    return zeros(x.shape, dtype=x.dtype, device=x.device, requires_grad=requires_grad)


def ones_like(x: Tensor, requires_grad: bool = False) -> Tensor:
    return ones(x.shape, dtype=x.dtype, device=x.device, requires_grad=requires_grad)


def randn(*shape: Any, dtype: DTypeLike = None, device: str = "cpu", requires_grad: bool = False,
          generator: Any = None) -> Tensor:
    """Standard normal samples from ``generator`` (default: the device's seeded generator)."""
    data = backend.standard_normal(_shape(shape), device, _float_dtype(dtype), generator)
    return Tensor(data, requires_grad=requires_grad)


def rand(*shape: Any, dtype: DTypeLike = None, device: str = "cpu", requires_grad: bool = False,
         generator: Any = None) -> Tensor:
    """Uniform samples in [0, 1) from ``generator`` (default: the device's seeded generator)."""
    data = backend.uniform(_shape(shape), device, _float_dtype(dtype), generator)
    return Tensor(data, requires_grad=requires_grad)


def arange(start: float, end: Optional[float] = None, step: float = 1, dtype: DTypeLike = None,
           device: str = "cpu") -> Tensor:
    """Like ``torch.arange``: integers give int64, any float argument gives float32."""
    if end is None:
        start, end = 0, start
    xp = backend.array_module_for(device)
    dtype = normalize_dtype(dtype)
    if dtype is None:
        is_int = all(float(v).is_integer() and not isinstance(v, float) for v in (start, end, step))
        dtype = np.dtype(np.int64) if is_int else np.dtype(np.float32)
    return Tensor(xp.arange(start, end, step, dtype=dtype))
