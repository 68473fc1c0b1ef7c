"""More of torch's creation functions: ``torch.range`` (deprecated, end included),
``torch.scalar_tensor``, ``torch.asarray`` (shares memory where it can, as torch's) and
``torch.empty_strided`` (a tensor with the strides asked for).

Each takes torch's keywords (dtype=, device=, requires_grad=) and gives torch's dtypes:
range and scalar_tensor make the default float dtype (float32 unless set) unless told
otherwise, asarray infers as ``torch.tensor`` does, or keeps the dtype of an array or tensor.
"""
from __future__ import annotations

import math
import warnings
from typing import Any, Optional

import numpy as np

from . import backend
from .factories import _device, _float_dtype, _leaf, _number, _placement, _size, _write_out
from .precision import integer_scalar, scalar_type_name
from .tensor import DTypeLike, Tensor, as_tensor, normalize_dtype, tensor

__all__ = ["range", "scalar_tensor", "asarray", "empty_strided"]

_RANGE_WARNING = ("torch.range is deprecated and will be removed in a future release because "
                  "its behavior is inconsistent with Python's range builtin. Instead, use "
                  "torch.arange, which produces values in [start, end).")


def range(start: Any = 0, end: Any = None, step: Any = 1, *,  # noqa: A001 - torch's name
          out: Optional[Tensor] = None, dtype: DTypeLike = None, layout: Any = None,
          device: Any = None, requires_grad: bool = False) -> Tensor:
    """``torch.range(start, end, step=1)``: start, start + step, ... up to and including
    end, floor((end - start) / step) + 1 values, in the default float dtype (float32 unless
    set) even for whole-number arguments (``dtype=`` for another). Warns that it is deprecated, as
    torch does; ``arange`` excludes the end."""
    _placement("range", layout, False)
    if end is None:
        raise TypeError('range() missing 1 required positional arguments: "end"')
    warnings.warn(_RANGE_WARNING, UserWarning, stacklevel=backend.user_stacklevel())
    start, end, step = (_number(v, "range", name) for v, name in
                        ((start, "start"), (end, "end"), (step, "step")))
    want = _float_dtype(dtype if dtype is not None else (out.dtype if out is not None else None))
    if want.kind in "iu":                       # torch's integer kernel: whole numbers
        start, end, step = int(start), int(end), int(step)
    for v in (start, end, step):
        if isinstance(v, float) and not math.isfinite(v):
            raise RuntimeError(f"unsupported range: {start} -> {end} (start, end and step must "
                               f"be finite)")
    if step == 0:
        raise RuntimeError("step must be nonzero")
    if (end - start) * step < 0:
        raise RuntimeError(f"upper bound and lower bound inconsistent with step sign (start="
                           f"{start}, end={end}, step={step})")
    count = int(math.floor((end - start) / step)) + 1
    if want.kind in "iu":
        values = start + step * np.arange(count, dtype=np.int64)
    else:
        values = float(start) + float(step) * np.arange(count, dtype=np.float64)
    values = values.astype(want)
    if out is not None:
        return _write_out("range", out, values, requires_grad, warn_resize=True)
    return _leaf(backend.to_device(values, _device(device)), requires_grad)


def scalar_tensor(s: Any, *, dtype: DTypeLike = None, layout: Any = None, device: Any = None,
                  pin_memory: Any = None, requires_grad: bool = False) -> Tensor:
    """``torch.scalar_tensor(s)``: a 0-d tensor holding the number s, in the default float
    dtype (float32 unless set) unless ``dtype=`` says otherwise (``scalar_tensor(3)`` is
    ``tensor(3.)``)."""
    _placement("scalar_tensor", layout, pin_memory)
    value = _number(s, "scalar_tensor", "s")
    want = _float_dtype(dtype)
    if want.kind in "iu" and not isinstance(value, complex):
        value = integer_scalar(value, want, "scalar_tensor")
    array = np.asarray(value).astype(want)
    return _leaf(backend.to_device(array, _device(device)), requires_grad)


_torch_type = scalar_type_name      # torch's ScalarType name (float32 -> Float)


_ASARRAY_GRAD_WARNING = (
    "torch.asarray: unspecified requires_grad now defaults to obj.requires_grad instead of "
    "False. Pass requires_grad=False explicitly to get the old behavior and silence this "
    "warning.")


def asarray(obj: Any, *, dtype: DTypeLike = None, device: Any = None,
            copy: Optional[bool] = None, requires_grad: Optional[bool] = None) -> Tensor:
    """``torch.asarray(obj)``: a tensor from a tensor, a NumPy array, a number or a
    (nested) sequence. A tensor or array of the dtype and device asked for is shared, not
    copied (a tensor is returned itself), unless ``copy=True``; ``copy=False`` refuses what
    would need a copy (torch's ValueError "can't alias"). Sequences and numbers are new
    tensors with ``torch.tensor``'s dtypes.

    Gradients as torch 2.13's: a tensor's copy (another dtype, ``copy=True``) is
    differentiable (``.to``, ``clone``); ``requires_grad=True``/``False`` is then set on the
    result, which for a shared tensor is the tensor itself (``asarray(w,
    requires_grad=False)`` turns w's off, as in torch), and False detaches a copy. Left
    unspecified for a tensor that requires grad, it stays on, with torch's warning."""
    want = normalize_dtype(dtype)
    target = None if device is None else backend.normalize_device(device)
    if isinstance(obj, (Tensor, np.ndarray)):
        have = np.dtype(obj.dtype)
        here = obj.device if isinstance(obj, Tensor) else "cpu"
        changes = (want is not None and want != have) or (target is not None and target != here)
        if changes and copy is False:
            if want is not None and want != have:
                raise ValueError(f"can't alias tensor with dtype '{_torch_type(have)}' into "
                                 f"dtype '{_torch_type(want)}'.")
            raise ValueError(f"can't alias tensor from device '{here}' to device '{target}'.")
        if isinstance(obj, Tensor):
            out = obj.clone() if copy and not changes else obj
            if changes:
                out = out.to(device=target, dtype=want)
        else:
            out = as_tensor(obj.copy() if copy else obj, dtype=want, device=target)
    else:
        if copy is False:
            raise ValueError("can't alias arbitrary sequence into a tensor.")
        out = tensor(obj, dtype=want, device=target)
    if requires_grad is None:
        if isinstance(obj, Tensor) and obj.requires_grad:
            warnings.warn(_ASARRAY_GRAD_WARNING, UserWarning, stacklevel=backend.user_stacklevel())
    elif out is obj or out.is_leaf:
        out.requires_grad_(bool(requires_grad))
    elif not requires_grad:
        out = out.detach()
    return out


def empty_strided(size: Any, stride: Any, *, dtype: DTypeLike = None, layout: Any = None,
                  device: Any = None, requires_grad: bool = False,
                  pin_memory: Any = None) -> Tensor:
    """``torch.empty_strided(size, stride)``: a tensor of ``size`` whose ``stride()`` is
    ``stride`` (in elements), over just the memory those strides reach. torch leaves the
    values uninitialised; they are zeros here."""
    _placement("empty_strided", layout, pin_memory)
    shape = _size((size,), None, "empty_strided")
    steps = tuple(int(s) for s in stride)
    if len(steps) != len(shape):
        raise RuntimeError(f"mismatch in length of strides and shape (size {list(shape)}, "
                           f"stride {list(steps)})")
    if any(s < 0 for s in steps):
        raise RuntimeError(f"as_strided: Negative strides are not supported at the moment, "
                           f"got strides: {list(steps)}")
    want = _float_dtype(dtype)
    needed = 0 if 0 in shape else 1 + sum((n - 1) * s for n, s in zip(shape, steps))
    xp = backend.array_module_for(_device(device))
    memory = xp.zeros(needed, dtype=want)
    data = xp.lib.stride_tricks.as_strided(memory, shape, tuple(s * want.itemsize
                                                                for s in steps))
    return _leaf(data, requires_grad)
