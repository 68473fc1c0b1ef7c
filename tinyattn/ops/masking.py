"""masked_fill and where: choose elements by a boolean mask (docs/derivations.md#masking).

Two conventions meet here, both PyTorch's:
- ``masked_fill(x, mask, value)`` FILLS where ``mask`` is True;
- attention masks (``scaled_dot_product_attention``, ``MultiHeadAttention``) mean True = "may
  attend / keep".
Masks are always boolean. Filling with -inf through ``where`` (rather than adding -1e9) avoids
overflow and NaN: -1e9 is not representable in float16 (max 65504): ``masked_fill`` with it
raises torch's overflow error, and an additive mask holding it overflows to -inf, whose
0 * -inf then turns the kept scores into NaN.
"""
from __future__ import annotations

import warnings
from typing import Any, Tuple

import numpy as np

from .. import backend, precision
from ..broadcast_error import broadcast_error
from ..autograd import Function, keep_versions, unbroadcast
from ..precision import DtypeError, check_fits, integer_scalar, is_floating
from ..promotion import operand_tier, result_type
from ..tensor import Tensor
from .elementwise import _as_dtype, as_operand

__all__ = ["masked_fill", "where", "mask_array"]


def mask_array(mask: Any, op: str, target_shape: Tuple[int, ...], device: str,
               what: str = "mask", layout: str = "", exact: bool = False) -> Any:
    """Validate a boolean mask that must broadcast to (``exact``: equal) ``target_shape``;
    return its array. ``layout`` names the axes in the error message, e.g. "(B, S_k)"."""
    data = mask._data if isinstance(mask, Tensor) else mask
    if not hasattr(data, "dtype"):
        data = np.asarray(data)
    if data.dtype != np.bool_:
        raise DtypeError(
            f"{op}: {what} must be boolean (True = {'fill' if op == 'masked_fill' else 'keep'}), "
            f"got dtype {data.dtype}; convert a 0/1 mask with .bool() (or mask != 0)")
    mask_device = backend.device_of(data)
    if mask_device != device:
        raise RuntimeError(f"{op}: {what} is on {mask_device} but the input is on {device}; "
                           f"move it with .to('{device}')")
    expected = f"{layout} = {tuple(target_shape)}" if layout else f"{tuple(target_shape)}"
    if exact:
        if tuple(data.shape) != tuple(target_shape):
            raise ValueError(f"{op}: {what} of shape {tuple(data.shape)} does not match the "
                             f"expected shape {expected}")
        return data
    try:
        shape = np.broadcast_shapes(tuple(data.shape), tuple(target_shape))
    except ValueError:
        shape = None
    if shape != tuple(target_shape):
        raise ValueError(f"{op}: {what} of shape {tuple(data.shape)} does not broadcast to the "
                         f"expected shape {expected}")
    return data


class MaskedFill(Function):
    """out = value where mask, else x, at the shape x and mask broadcast to (torch's
    out-of-place masked_fill broadcasts both). The filled slots hold the value, the others x:
        dx = unbroadcast(g where not mask, else 0),   dvalue = sum of g where mask
    (value is a number, or a 0-d tensor with its own gradient, cast to x's dtype as torch)."""

    def forward(self, x, *value, mask, number: Any):
        xp = backend.get_array_module(x)
        fill = value[0] if value else xp.asarray(number).astype(x.dtype)
        self.save_for_backward(mask, x.shape, bool(value))
        return xp.where(mask, fill, x)

    def backward(self, grad):
        mask, x_shape, has_value = self.saved
        xp = backend.get_array_module(grad)
        dx = unbroadcast(xp.where(mask, 0, grad), x_shape)
        if not has_value:
            return dx
        return dx, xp.where(mask, grad, 0).sum()


class Where(Function):
    """out = a where condition, else b.   da = g where condition (else 0), db = g elsewhere,
    each unbroadcast to its input's shape."""

    def forward(self, a, b, condition):
        xp = backend.get_array_module(a)
        self.save_for_backward(condition, a.shape, b.shape)
        return xp.where(condition, a, b)

    def backward(self, grad):
        condition, a_shape, b_shape = self.saved
        xp = backend.get_array_module(grad)
        da = unbroadcast(xp.where(condition, grad, 0), a_shape) if self.needs_input_grad[0] \
            else None
        db = unbroadcast(xp.where(condition, 0, grad), b_shape) if self.needs_input_grad[1] \
            else None
        return da, db


def masked_fill(x: Tensor, mask: Any, value: Any) -> Tensor:
    """Fill ``x`` with ``value`` where ``mask`` is True (PyTorch's ``masked_fill``): x and
    mask broadcast together; value is a number or a 0-d tensor (which gets a gradient)."""
    mask_tensor = mask if isinstance(mask, Tensor) else None
    data = mask._data if isinstance(mask, Tensor) else mask
    mask_shape = tuple(np.shape(data) if not hasattr(data, "shape") else data.shape)
    error = broadcast_error([mask_shape, tuple(x.shape)], "masked_fill: mask and input")
    if error is not None:
        raise error
    shape = np.broadcast_shapes(tuple(x.shape), mask_shape)
    mask = mask_array(mask, "masked_fill", shape, x.device)
    if isinstance(value, Tensor):
        if value.ndim != 0:
            raise RuntimeError(f"masked_fill_ only supports a 0-dimensional value tensor, but "
                               f"got tensor with {value.ndim} dimension(s); pass value[0] or "
                               f"value.item() for a one-element tensor")
        if value.dtype.kind == "c" and x.dtype.kind != "c":
            _real_fill(value.item(), x.dtype)
            value = value.real if x.dtype != np.bool_ else value != 0
        check_fits(value.item(), x.dtype, "masked_fill")
        fill = value if value.dtype == x.dtype else value.to(x.dtype)   # x's dtype, as torch
        out = MaskedFill.apply(x, fill, mask=mask.copy(), number=None)
        return keep_versions(out, mask_tensor)    # torch keeps the mask here too
    if isinstance(value, complex) and x.dtype.kind != "c":
        value = _real_fill(value, x.dtype)
    check_fits(value, x.dtype, "masked_fill")        # -1e9 in float16: torch's error
    # into an integer dtype as torch converts a scalar: -1 in uint8 is 255, 300 raises
    value = integer_scalar(value, x.dtype, "masked_fill")
    out = MaskedFill.apply(x, mask=mask.copy(), number=value)   # mask kept for backward
    return keep_versions(out, mask_tensor)    # torch keeps the mask: writing to it raises


def _real_fill(value: complex, dtype: Any) -> Any:
    """A complex fill value for a real or bool tensor, as torch converts it: the real part
    when the imaginary part is 0 (bool: value != 0), else torch's RuntimeError."""
    value = complex(value)
    if dtype == np.bool_:
        return value != 0
    if value.imag != 0:
        raise RuntimeError(f"masked_fill: value cannot be converted to type {dtype} without "
                           f"overflow: {value} has an imaginary part; fill a complex tensor, "
                           f"or pass its real part")
    return value.real


def where(condition: Any, input: Any = None, other: Any = None) -> Any:  # noqa: A002
    """Elements of ``input`` where ``condition`` is True, else of ``other``; either (or both)
    may be a Python number, as in PyTorch: ``where(mask, x, 0.0)``. Two numbers give a tensor
    of the condition's shape (float32 if either is a float, int64 for ints, bool for bools).
    ``where(condition)`` alone is ``nonzero(as_tuple=True)``: the indices of the True
    elements, one int64 tensor per dim."""
    if input is None and other is None:
        data = condition._data if isinstance(condition, Tensor) else np.asarray(condition)
        xp = backend.get_array_module(data)
        return tuple(Tensor._wrap(i.astype(np.int64)) for i in xp.nonzero(data))
    if input is None or other is None:
        raise TypeError("where takes (condition, input, other), or (condition) alone")
    if not isinstance(input, Tensor) and not isinstance(other, Tensor):
        if not isinstance(condition, Tensor):
            raise TypeError("where: with two numbers the condition must be a bool tensor")
        xp = backend.get_array_module(condition._data)
        dtype = _scalar_dtype(input, other)
        input = Tensor._wrap(xp.asarray(input, dtype=dtype))
        other = Tensor._wrap(xp.asarray(other, dtype=dtype))
    for number, tensor in ((input, other), (other, input)):   # 300 into uint8: torch's error
        if isinstance(number, (int, np.integer)) and not isinstance(number, (bool, np.bool_)) \
                and isinstance(tensor, Tensor) and tensor.dtype.kind in "iu":
            converted = integer_scalar(number, tensor.dtype, "where")
            input, other = (converted, other) if number is input else (input, converted)
    input, other = _complex_number_meets_real(input, other)
    if not isinstance(input, Tensor):
        input = as_operand(input, other)
    other = as_operand(other, input)
    if input.dtype != other.dtype and not (     # two float tensors: Function.apply promotes
            is_floating(input.dtype) and is_floating(other.dtype)
            and operand_tier(input) == operand_tier(other)):
        target = result_type(input, other)      # torch's: a 0-d does not widen a tensor
        input, other = _as_dtype(input, target, input), _as_dtype(other, target, other)
    try:
        shape = np.broadcast_shapes(input.shape, other.shape)
        cond = condition._data if isinstance(condition, Tensor) else condition
        shape = np.broadcast_shapes(shape, tuple(np.shape(cond)) if not hasattr(cond, "shape")
                                    else tuple(cond.shape))
    except ValueError:
        raise broadcast_error([tuple(getattr(condition, "shape", ())), input.shape,
                               other.shape], "where: condition, input and other") or \
            RuntimeError(f"where: condition, input and other do not broadcast together "
                           f"(shapes {getattr(condition, 'shape', None)}, {input.shape}, "
                           f"{other.shape})") from None
    if isinstance(condition, Tensor) and condition.dtype == np.uint8:   # torch: deprecated
        warnings.warn("where received a uint8 condition tensor. This behavior is deprecated and "
                      "will be removed in a future version of PyTorch. Use a boolean condition "
                      "instead.", UserWarning, stacklevel=backend.user_stacklevel())
        condition = Tensor._wrap(condition._data != 0)
    cond = mask_array(condition, "where", shape, input.device, what="condition")
    out = Where.apply(input, other, condition=cond.copy())   # kept for backward
    return keep_versions(out, condition if isinstance(condition, Tensor) else None)


def _complex_number_meets_real(input: Any, other: Any) -> Any:
    """where(c, x, 2j) with a real x: torch's result is complex (complex128 for float64, else
    complex64; float16 would be complex32, which tinyattn lacks): x converted, 2j in it."""
    for number, tensor in ((input, other), (other, input)):
        if isinstance(number, complex) and isinstance(tensor, Tensor) \
                and tensor.dtype.kind != "c":
            if tensor.dtype == np.float16:
                raise RuntimeError("where: a float16 tensor with a complex number gives "
                                   "torch's complex32, a dtype tinyattn does not have; "
                                   "convert the tensor with .float() first")
            want = np.complex128 if tensor.dtype == np.float64 else np.complex64
            converted = tensor.to(want)
            value = Tensor._wrap(backend.get_array_module(converted._data).asarray(
                number, dtype=want))
            return (value, converted) if number is input else (converted, value)
    return input, other


def _scalar_dtype(a: Any, b: Any) -> Any:
    """PyTorch's result dtype for two Python numbers: bool, int64, or the default float or
    complex dtype (float32 and complex64 unless set_default_dtype changed them)."""
    if isinstance(a, bool) and isinstance(b, bool):
        return np.bool_
    if isinstance(a, complex) or isinstance(b, complex):
        return precision.number_complex_dtype()
    if isinstance(a, float) or isinstance(b, float):
        return precision.get_default_dtype()
    return np.int64
