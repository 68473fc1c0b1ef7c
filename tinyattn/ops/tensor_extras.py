"""More of torch's Tensor surface, built from ops tinyattn already has: the aliases torch keeps
(``x.multiply(y)``, ``x.greater(y)``, ``x.absolute()``), the in-place forms of existing ops
(``x.eq_(y)``, ``x.cumsum_(0)``, ``x.tril_()``), the in-place shape changes (``x.unsqueeze_(0)``,
``x.t_()``), the random fills (``x.exponential_()``, ``x.random_(0, 10)``), ``x.where(c, y)``,
and what a tensor says about its memory (``x.stride()``, ``x.data_ptr()``, ``x.element_size()``).

Nothing here has a derivative of its own: an alias is the op, an in-place form is the op
written back into x (ops/inplace.py: a version counted, a leaf that requires grad refused), an
in-place shape change is the view op whose result x becomes, and a random fill is a constant.
"""
from __future__ import annotations

import inspect
import math
from typing import Any, Callable, Dict, Optional

import numpy as np

from .. import backend
from ..autograd import is_grad_enabled, no_grad
from ..precision import is_floating
from ..tensor import Tensor
from .inplace import _in_place, _refuse_leaf
from .inplace_of import in_place_of
from .masking import where

__all__ = ["register_tensor_extras", "METHOD_ALIASES", "IN_PLACE_OF", "RESHAPE_IN_PLACE"]

# torch's second names for an existing Tensor method (both names are torch's)
METHOD_ALIASES: Dict[str, str] = {
    "absolute": "abs", "absolute_": "abs_", "multiply": "mul", "multiply_": "mul_",
    "divide": "div", "divide_": "div_", "subtract": "sub", "subtract_": "sub_",
    "negative": "neg", "negative_": "neg_", "fix": "trunc", "fix_": "trunc_", "ger": "outer",
    "greater": "gt", "greater_equal": "ge", "less": "lt", "less_equal": "le",
    "not_equal": "ne", "arctan2": "atan2", "ndimension": "dim",
}

# x.<name>_(...) is x.<name>(...) written into x
IN_PLACE_OF = ("eq", "ne", "lt", "gt", "le", "ge", "cumsum", "cumprod", "round", "sgn",
               "nan_to_num", "log2", "log10", "sinh", "cosh", "tan", "atan", "asin", "acos",
               "exp2", "logical_and", "logical_or", "logical_xor", "logical_not", "addmm",
               "tril", "triu", "atan2")
IN_PLACE_ALIASES = {"greater_": "gt_", "greater_equal_": "ge_", "less_": "lt_",
                    "less_equal_": "le_", "not_equal_": "ne_", "arccos_": "acos_",
                    "arcsin_": "asin_", "arctan_": "atan_", "arctan2_": "atan2_",
                    "arccosh_": "acosh_", "arcsinh_": "asinh_", "arctanh_": "atanh_"}

# x.<name>_(...): x becomes the view x.<name>(...) (its shape and strides change)
RESHAPE_IN_PLACE = ("unsqueeze", "squeeze", "t", "transpose")


# x.t_(), x.squeeze_(1), ...: torch's nodes for the in-place overloads of the view ops
_IN_PLACE_NODE = {"TBackward0": "TBackward1", "TransposeBackward0": "TransposeBackward1",
                  "UnsqueezeBackward0": "UnsqueezeBackward1", "SqueezeBackward0": "SqueezeBackward3",
                  "SqueezeBackward1": "SqueezeBackward4", "SqueezeBackward2": "SqueezeBackward5"}


def _reshape_in_place(name: str) -> Callable[..., Tensor]:
    view_name = name[:-1]

    def method(self: Tensor, *args: Any, **kwargs: Any) -> Tensor:
        view = getattr(Tensor, view_name)
        if not (is_grad_enabled() and self.requires_grad):
            with no_grad():
                result = view(self, *args, **kwargs)
            self._data = result._data
            self._bump_version()
            return self
        if self._ctx is None and self._base is None:
            _refuse_leaf(self, name)
        if self._base is not None or self._view_refs:
            raise RuntimeError(
                f"{name}: tinyattn does not change the shape of a view, or of a tensor that "
                f"has views, in place while gradients are recorded (its views would keep the "
                f"old shape); write y = x.{view_name}(...) instead")
        before = Tensor._wrap(self._data, True)          # the tensor as it was, in the graph
        before._ctx, before._vc = self._ctx, self._version_counter()
        result = view(before, *args, **kwargs)
        self._data, self._ctx = result._data, result._ctx
        if result._ctx is not None:             # torch's in-place overloads' nodes
            in_place = _IN_PLACE_NODE.get(result._ctx.name())
            if in_place is not None:
                result._ctx.torch_name = in_place
        self._bump_version()
        return self
    method.__name__ = method.__qualname__ = name
    method.__doc__ = f"``x.{name}(...)``: x becomes ``x.{view_name}(...)`` (in place)."
    try:                                  # torch's parameter names: the view op's own
        method.__signature__ = inspect.signature(getattr(Tensor, view_name))  # type: ignore
    except (TypeError, ValueError):
        pass
    return method


# ------------------------------------------------------------------ random fills
def _float_draws(x: Tensor, generator: Any) -> Any:
    return backend.uniform(x.shape, x.device, np.float64, generator)


def _fill(x: Tensor, name: str, values: Any) -> Tensor:
    from .inplace import random_write
    return random_write(x, name, values.astype(x.dtype))


def _need_float(x: Tensor, name: str) -> None:
    if not is_floating(x.dtype):
        raise RuntimeError(f'"{name}" not implemented for \'{x.dtype}\' (as torch): it fills '
                           f"floating-point tensors")


def exponential_(x: Tensor, lambd: float = 1.0, *, generator: Any = None) -> Tensor:
    """Samples of Exp(lambd): -log(1 - u) / lambd for u uniform in [0, 1)."""
    _need_float(x, "exponential_")
    if not lambd > 0:
        raise RuntimeError(f"exponential_ expects lambda > 0.0, but found lambda={lambd}")
    xp = backend.get_array_module(x._data)
    return _fill(x, "exponential_", -xp.log1p(-_float_draws(x, generator)) / lambd)


def log_normal_(x: Tensor, mean: float = 1.0, std: float = 2.0, *,
                generator: Any = None) -> Tensor:
    """Samples of exp(N(mean, std^2))."""
    _need_float(x, "log_normal_")
    if not std > 0:
        raise RuntimeError(f"log_normal_ expects std > 0.0, but found std={std}")
    xp = backend.get_array_module(x._data)
    z = backend.standard_normal(x.shape, x.device, np.float64, generator)
    return _fill(x, "log_normal_", xp.exp(mean + std * z))


def cauchy_(x: Tensor, median: float = 0.0, sigma: float = 1.0, *,
            generator: Any = None) -> Tensor:
    """Samples of Cauchy(median, sigma): median + sigma tan(pi (u - 1/2))."""
    _need_float(x, "cauchy_")
    if not sigma > 0:
        raise RuntimeError(f"cauchy_ expects sigma > 0.0, but found sigma={sigma}")
    xp = backend.get_array_module(x._data)
    return _fill(x, "cauchy_", median + sigma * xp.tan(math.pi * (_float_draws(x, generator)
                                                                   - 0.5)))


def geometric_(x: Tensor, p: float, *, generator: Any = None) -> Tensor:
    """The number of Bernoulli(p) trials up to the first success: 1, 2, 3, ..."""
    if not 0 < p < 1:
        raise RuntimeError(f"geometric_ expects p to be in (0, 1), but got p={p}")
    xp = backend.get_array_module(x._data)
    trials = xp.ceil(xp.log1p(-_float_draws(x, generator)) / math.log1p(-p))
    return _fill(x, "geometric_", xp.maximum(trials, 1))


def _random_upper(dtype: np.dtype) -> int:
    """torch's default exclusive upper bound of random_(): every integer the dtype holds
    exactly (2**mantissa + 1 for a float: float32 draws from [0, 2**24])."""
    if dtype == np.bool_:
        return 2
    if dtype.kind in "iu":
        return int(np.iinfo(dtype).max) + 1
    digits = {2: 11, 4: 24, 8: 53}[dtype.itemsize] if dtype.kind == "f" else 8   # bfloat16: 8
    return 2 ** digits + 1


def random_(x: Tensor, from_: int = 0, to: Optional[int] = None, *,
            generator: Any = None) -> Tensor:
    """Integers uniform in [from_, to - 1]; ``random_(n)`` is [0, n - 1]; ``random_()`` is
    every integer the dtype holds exactly."""
    if to is None and from_ != 0:
        from_, to = 0, from_
    upper = _random_upper(np.dtype(x.dtype)) if to is None else int(to)
    if not from_ < upper:
        raise RuntimeError(f"random_ expects 'from' to be less than 'to', but got from={from_}"
                           f" >= to={upper}")
    draws = backend.integers(int(from_), upper, x.shape, x.device, generator)
    return _fill(x, "random_", draws)


# ------------------------------------------------------------------ memory
def stride(x: Tensor, dim: Optional[int] = None) -> Any:
    """Elements (not bytes) to step in memory along each dimension, as torch counts them.

    NumPy gives a new empty array all-zero strides; torch gives an empty tensor the
    contiguous strides it gives any shape, counting a dimension of size 0 as 1
    (``torch.zeros(2, 0, 4).stride() == (4, 4, 1)``): those are returned then."""
    data = x._data
    if data.size == 0 and not any(data.strides):
        steps, step = [], 1
        for size in reversed(data.shape):
            steps.append(step)
            step *= max(size, 1)
        steps = tuple(reversed(steps))
    else:
        steps = tuple(s // data.itemsize for s in data.strides)
    return steps if dim is None else steps[dim]


def _root_array(array: Any) -> Any:
    while getattr(array, "base", None) is not None and hasattr(array.base, "strides"):
        array = array.base
    return array


def _address(array: Any) -> int:
    if isinstance(array, np.ndarray):
        return array.__array_interface__["data"][0]
    return int(array.data.ptr)                        # CuPy


def data_ptr(x: Tensor) -> int:
    """The address of the first element (views of one array differ by their offset)."""
    return _address(x._data)


def storage_offset(x: Tensor) -> int:
    """Elements between the start of the memory x views and x's first element."""
    return (_address(x._data) - _address(_root_array(x._data))) // x._data.itemsize


def is_signed(x: Tensor) -> bool:
    return np.dtype(x.dtype).kind in "ifc" or is_floating(x.dtype)


def is_complex(x: Tensor) -> bool:
    return x.dtype.kind == "c"                      # complex64, complex128


def is_nonzero(x: Tensor) -> bool:
    if x.numel() != 1:
        raise RuntimeError("Boolean value of Tensor with more than one value is ambiguous"
                           if x.numel() else "Boolean value of Tensor with no values is "
                           "ambiguous")
    return bool(x._data.reshape(()))


def is_same_size(x: Tensor, other: Tensor) -> bool:
    return tuple(x.shape) == tuple(other.shape)


def get_device(x: Tensor) -> int:
    """-1 on the CPU (torch's answer), the GPU's index on CUDA."""
    return -1 if x.device == "cpu" else int(str(x.device).partition(":")[2] or 0)


def where_method(x: Tensor, condition: Any, other: Any) -> Tensor:
    """``x.where(condition, other)`` is ``torch.where(condition, x, other)``."""
    return where(condition, x, other)


def register_tensor_extras() -> None:
    """Attach all of the above to Tensor (called once by ops/__init__.py)."""
    for alias, name in METHOD_ALIASES.items():
        if not hasattr(Tensor, alias):
            setattr(Tensor, alias, getattr(Tensor, name))
    for name in IN_PLACE_OF:
        if not hasattr(Tensor, name + "_"):
            setattr(Tensor, name + "_", in_place_of(getattr(Tensor, name), name + "_"))
    for name in RESHAPE_IN_PLACE:
        setattr(Tensor, name + "_", _reshape_in_place(name + "_"))
    for alias, name in {**IN_PLACE_ALIASES, "swapaxes_": "transpose_",
                        "swapdims_": "transpose_"}.items():
        if not hasattr(Tensor, alias) and hasattr(Tensor, name):
            setattr(Tensor, alias, getattr(Tensor, name))
    for function in (exponential_, log_normal_, cauchy_, geometric_, random_, stride,
                     data_ptr, storage_offset, is_signed, is_complex,
                     is_nonzero, is_same_size, get_device):
        setattr(Tensor, function.__name__, function)
    Tensor.where = where_method
