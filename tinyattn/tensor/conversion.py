"""The ``Tensor`` methods that convert or compare: ``numpy``, ``item``, ``to``, ``float``,
``double``, ..., and the comparison and logic operators (``==``, ``<``, ``&``, ``~``), which
record no graph. ``Tensor`` (core.py) inherits them from ``TensorConversions``.
"""
from __future__ import annotations

import warnings
from typing import Any, Optional, Union

import numpy as np

from .. import backend, precision
from ..broadcast_error import from_numpy_error
from ..promotion import compared_operands
from .dtypes import DTypeLike, is_device_name, normalize_dtype
from .memory_format import check_memory_format

__all__ = ["TensorConversions"]

_tensor_class: Any = None


def _plain_tensor() -> Any:
    """``Tensor``, imported once: core.py defines it on top of this class, so a top-level
    import here would be circular. Results are plain Tensors (never a Parameter)."""
    global _tensor_class
    if _tensor_class is None:
        from .core import Tensor  # noqa: PLC0415 - core.py imports this module
        _tensor_class = Tensor
    return _tensor_class


_LEGACY_TYPE_NAMES = {"float32": "FloatTensor", "float64": "DoubleTensor",
                      "float16": "HalfTensor", "bfloat16": "BFloat16Tensor",
                      "int64": "LongTensor", "int32": "IntTensor", "int16": "ShortTensor",
                      "int8": "CharTensor", "uint8": "ByteTensor", "bool": "BoolTensor"}


def legacy_type_target(dst_type: Any) -> Any:
    """``(device, dtype)`` that ``x.type(dst_type)`` / ``Module.type(dst_type)`` converts to:
    a dtype gives ``(None, dtype)``; torch's legacy name ``'torch.DoubleTensor'`` (or
    ``'torch.cuda.DoubleTensor'``) gives its dtype and device ('cpu' or 'cuda')."""
    if not isinstance(dst_type, str) or not dst_type.endswith("Tensor"):
        return None, dst_type
    prefix, _, name = dst_type.rpartition(".")
    by_name = {legacy: dtype for dtype, legacy in _LEGACY_TYPE_NAMES.items()}
    if prefix not in ("torch", "torch.cuda") or name not in by_name:
        raise ValueError(f"invalid type: '{dst_type}' (a dtype such as torch.float64, or a "
                         f"legacy name such as 'torch.DoubleTensor')")
    return ("cuda" if prefix == "torch.cuda" else "cpu"), by_name[name]


_float_of_grad_warned = [False]


def _warn_float_of_grad_tensor() -> None:
    """torch warns once per process when ``float(t)`` (``math.exp(t)``, ...) reads a tensor
    that requires grad; ``t.item()``, ``int(t)`` and ``f"{t:.2f}"`` stay quiet there too."""
    if not _float_of_grad_warned[0]:
        _float_of_grad_warned[0] = True
        warnings.warn("Converting a tensor with requires_grad=True to a scalar may lead to "
                      "unexpected behavior.\nConsider using tensor.detach() first.",
                      UserWarning, stacklevel=3)


class TensorConversions:
    """Conversion and comparison methods of ``Tensor`` (see the module docstring)."""

    # ------------------------------------------------------------------ conversion
    def numpy(self, *, force: bool = False) -> np.ndarray:
        """The data as a NumPy array: the same memory on the CPU (read-only while a pending
        backward needs it), a copy from a GPU. ``force=True`` (torch's) is accepted: here
        numpy() already detaches and copies from a GPU."""
        if self.device == "cpu":
            return self._user_array()
        return backend.to_host(self._data)

    def tolist(self) -> Any:
        return backend.to_host(self._data).tolist()

    def item(self) -> Union[float, int, bool]:
        if self._data.size != 1:
            raise RuntimeError(f"item() needs a single-element tensor, got shape {self.shape}: "
                               f"a Tensor with {self.numel()} elements cannot be converted to "
                               f"Scalar")
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
        if self._requires_grad:
            _warn_float_of_grad_tensor()
        return float(self._real_item("float"))

    def __int__(self) -> int:
        return int(self._real_item("int"))

    def __complex__(self) -> complex:
        if self._data.size != 1:
            self._real_item("complex")      # raises torch's ValueError
        return complex(self.item())

    def _real_item(self, name: str) -> Any:
        if self._data.size != 1:            # torch: ValueError here, RuntimeError in item()
            raise ValueError(f"only one element tensors can be converted to Python scalars: "
                             f"{name}() got a tensor of shape {tuple(self.shape)}; take "
                             f"one element (t[0]) or reduce it (t.sum()) first")
        value = self.item()
        if isinstance(value, complex):      # Python would say "can't convert complex"
            raise RuntimeError(f"value cannot be converted to type {name} without overflow "
                               f"(a complex value {value}, as torch says); take .real or "
                               f".abs() first")
        return value

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
        ``non_blocking`` and ``memory_format`` are accepted as in PyTorch and change no value
        (every copy here completes before ``to`` returns; memory is always row-major; a
        channels-last format gives a copy, never x itself, as torch's).

        Differentiable: a gradient flows back across a device or dtype change.
        """
        from ..ops import convert  # noqa: PLC0415 - ops sit above tensor in the layers
        flags = 0
        for arg in args:
            if isinstance(arg, bool):   # .to(device, dtype, non_blocking, copy) positionally
                if flags:
                    copy = arg          # the second: copy (torch's order; it was ignored)
                else:
                    non_blocking = arg
                flags += 1
            elif isinstance(arg, TensorConversions):
                device, dtype = arg.device, arg.dtype
            elif is_device_name(arg):
                device = arg
            else:
                dtype = arg
        if device is not None:
            device = backend.normalize_device(device)   # a clear error if bad
        check_memory_format(self.shape, memory_format, "to")
        out = convert(self, device=device, dtype=normalize_dtype(dtype))
        # torch copies into a channels-last layout whatever the strides were: the result is
        # never x itself, so writing to it leaves x (tinyattn's copy stays row-major)
        if str(memory_format) in ("torch.channels_last", "torch.channels_last_3d"):
            copy = True
        if copy and out is self:
            from ..ops import clone  # noqa: PLC0415
            out = clone(self)
            if out._ctx is not None:            # torch's _to_copy node, as for a conversion
                out._ctx.torch_name = "ToCopyBackward0"
        return out

    def type(self, dtype: DTypeLike = None) -> Any:
        """``x.type()``: torch's legacy type name, ``'torch.FloatTensor'`` (``'torch.cuda.
        FloatTensor'`` on a GPU); ``x.type(dtype)``: ``x.to(dtype)``."""
        if dtype is None:
            name = _LEGACY_TYPE_NAMES.get(np.dtype(self.dtype).name, "Tensor")
            return f"torch.cuda.{name}" if str(self.device).startswith("cuda") else \
                f"torch.{name}"
        device, dtype = legacy_type_target(dtype)
        return self.to(dtype) if device is None else self.to(device, dtype)

    def float(self, *, memory_format: Any = None) -> "Tensor":
        return self.to(np.float32, memory_format=memory_format)

    def double(self, *, memory_format: Any = None) -> "Tensor":
        return self.to(np.float64, memory_format=memory_format)

    def cfloat(self, *, memory_format: Any = None) -> "Tensor":
        return self.to(np.complex64, memory_format=memory_format)

    def cdouble(self, *, memory_format: Any = None) -> "Tensor":
        return self.to(np.complex128, memory_format=memory_format)

    def half(self, *, memory_format: Any = None) -> "Tensor":
        return self.to(np.float16, memory_format=memory_format)

    def bfloat16(self, *, memory_format: Any = None) -> "Tensor":
        return self.to(precision.BFLOAT16, memory_format=memory_format)

    def long(self, *, memory_format: Any = None) -> "Tensor":
        return self.to(np.int64, memory_format=memory_format)

    def int(self, *, memory_format: Any = None) -> "Tensor":
        return self.to(np.int32, memory_format=memory_format)

    def short(self, *, memory_format: Any = None) -> "Tensor":
        return self.to(np.int16, memory_format=memory_format)

    def char(self, *, memory_format: Any = None) -> "Tensor":
        return self.to(np.int8, memory_format=memory_format)

    def byte(self, *, memory_format: Any = None) -> "Tensor":
        return self.to(np.uint8, memory_format=memory_format)

    def bool(self, *, memory_format: Any = None) -> "Tensor":
        return self.to(np.bool_, memory_format=memory_format)

    def cpu(self) -> "Tensor":
        return self.to("cpu")

    def cuda(self) -> "Tensor":
        return self.to("cuda")

    def is_floating_point(self) -> bool:
        return precision.is_floating(self.dtype)

    # ---------------------------------------------------- comparisons and logic (no grad)
    def _compare(self, other: Any, name: str, promote: bool = True) -> "Tensor":
        other_data = other._data if isinstance(other, TensorConversions) else other
        mine = self._data
        if name not in ("__eq__", "__ne__"):
            precision.refuse_complex_order(name.strip("_"), mine, other_data)
        if promote and (isinstance(other_data, (bool, int, float, complex, np.generic))
                        or isinstance(other, TensorConversions)):  # torch's promotion first
            mine, other_data = compared_operands(mine, other_data)
        try:
            result = getattr(mine, name)(other_data)
        except ValueError as exc:           # NumPy's broadcasting error: torch's RuntimeError
            error = from_numpy_error(exc, [self.shape] + ([other.shape] if isinstance(
                other, TensorConversions) else []), name.strip("_"))
            if error is None:
                raise
            raise error from None
        if result is NotImplemented:       # e.g. pytest.approx: let the other side decide
            return NotImplemented
        return _plain_tensor()._wrap(backend.get_array_module(self._data).asarray(result))

    def __eq__(self, other: Any) -> "Tensor":  # type: ignore[override]
        if other is None:                  # torch: x == None is False, not a tensor
            return False  # type: ignore[return-value]
        return self._compare(other, "__eq__")

    def __ne__(self, other: Any) -> "Tensor":  # type: ignore[override]
        if other is None:
            return True  # type: ignore[return-value]
        return self._compare(other, "__ne__")

    def __contains__(self, element: Any) -> bool:
        """``v in x``: whether any element of x equals v (a number or a tensor), as torch's."""
        if isinstance(element, (bool, int, float, np.number)) or hasattr(element, "_data"):
            return bool((self == element).any())
        raise RuntimeError(f"Tensor.__contains__ only supports Tensor or scalar, but you "
                           f"passed in a {type(element)}.")

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
        return self._compare(other, name, promote=False)

    def __and__(self, other: Any) -> "Tensor":
        return self._logic(other, "__and__")

    def __or__(self, other: Any) -> "Tensor":
        return self._logic(other, "__or__")

    def __xor__(self, other: Any) -> "Tensor":
        return self._logic(other, "__xor__")

    def __invert__(self) -> "Tensor":
        if self.dtype != np.bool_:
            raise TypeError(f"~ works on bool tensors (masks), got {self.dtype}")
        return _plain_tensor()._wrap(~self._data)

    def logical_not(self) -> "Tensor":
        return _plain_tensor()._wrap(backend.get_array_module(self._data).logical_not(self._data))

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
        dim = tuple(dim) if isinstance(dim, list) else dim      # x.any(dim=[0, 1]) as torch
        keep = bool(keepdims) if keepdims is not None else keepdim
        xp = backend.get_array_module(self._data)
        return _plain_tensor()._wrap(_uint8_kept(self._data, xp.asarray(
            self._data.any(axis=dim, keepdims=keep))))

    def all(self, dim: Optional[int] = None, keepdim: bool = False, *, axis: Any = None,
            out: Any = None, keepdims: Any = None) -> "Tensor":
        dim = axis if dim is None else dim
        dim = tuple(dim) if isinstance(dim, list) else dim      # x.all(dim=[0, 1]) as torch
        keep = bool(keepdims) if keepdims is not None else keepdim
        xp = backend.get_array_module(self._data)
        return _plain_tensor()._wrap(_uint8_kept(self._data, xp.asarray(
            self._data.all(axis=dim, keepdims=keep))))


def _uint8_kept(data: Any, result: Any) -> Any:
    """torch's any/all of a uint8 tensor is uint8 (0 or 1), of any other dtype bool."""
    return result.astype(np.uint8) if data.dtype == np.uint8 else result
