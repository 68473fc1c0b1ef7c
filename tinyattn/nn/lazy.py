"""Lazy layers: ``nn.LazyLinear(out_features)`` and ``nn.LazyBatchNorm1d/2d/3d()`` learn their input
size from the first batch, as PyTorch's do.

Until the first forward their parameters are ``UninitializedParameter``s: they are listed by
``parameters()`` and ``state_dict()``, so an optimizer may be made before a dry run (the same
objects are filled in place later), but reading their shape or values raises PyTorch's error.
The first forward creates them (initialised as ``Linear`` / ``BatchNorm1d`` would be) and the
module becomes a ``Linear`` / ``BatchNorm1d``. ``load_state_dict`` of arrays fills them too.
"""
from __future__ import annotations

from typing import Any, Dict, Optional

import numpy as np

from ..precision import get_default_dtype

from ..tensor import Tensor
from .batchnorm import BatchNorm1d, BatchNorm2d, BatchNorm3d
from .instancenorm import InstanceNorm1d, InstanceNorm2d, InstanceNorm3d
from .layers import Linear
from .module import Module, Parameter

__all__ = ["LazyInstanceNorm1d", "LazyInstanceNorm2d", "LazyInstanceNorm3d",
           "UninitializedParameter", "UninitializedBuffer", "LazyLinear", "LazyBatchNorm1d",
           "LazyBatchNorm2d", "LazyBatchNorm3d",
           "materialize_from_state"]

_UNINITIALIZED = ("Can't access the shape of an uninitialized parameter or buffer. This error "
                  "usually happens in `load_state_dict` when trying to load an uninitialized "
                  "parameter into an initialized one. Call `forward` to initialize the "
                  "parameters before accessing their attributes.")


class _Uninitialized:
    """Data not known yet: any read raises; ``materialize(shape)`` gives it zeros of that
    shape and makes it a plain ``cls_to_become``."""

    cls_to_become: type = Tensor
    _is_uninitialized = True          # Module.to leaves it alone (nothing to move yet)

    def __new__(cls, requires_grad: bool = True, device: Any = None, dtype: Any = None) -> Any:
        return Tensor.__new__(cls)

    def __init__(self, requires_grad: bool = True, device: Any = None, dtype: Any = None):
        self._requires_grad = bool(requires_grad)
        self._lazy_dtype = np.dtype(dtype or get_default_dtype())   # as torch: the default
        #                                                  at construction, not at materialize

    @property
    def _data(self) -> Any:
        raise RuntimeError(_UNINITIALIZED)

    def _user_array(self) -> Any:
        """``.data`` before materialisation: as in torch, an empty 1-d array (shape (0,)) of
        the parameter's dtype, not linked to it. ``p.data.normal_(0, 0.01)`` on a lazy layer
        (d2l's concise linear regression) is then a no-op there and here; the first forward
        initialises the parameter as the layer does. Every other read still raises."""
        return np.empty((0,), dtype=self._lazy_dtype)

    def materialize(self, shape: Any, device: Any = None, dtype: Any = None) -> None:
        array = np.zeros(tuple(int(n) for n in shape), dtype=dtype or self._lazy_dtype)
        self.__class__ = self.cls_to_become
        self._data = array
        if device is not None and str(device) != "cpu":
            self.data = Tensor._wrap(array).to(device)._data

    def numel(self) -> int:
        raise RuntimeError(_UNINITIALIZED)

    def __repr__(self) -> str:
        return f"<{type(self).__name__}>"


class UninitializedParameter(_Uninitialized, Parameter):
    """A parameter whose shape is not known yet (PyTorch's name)."""

    cls_to_become = Parameter


class UninitializedBuffer(_Uninitialized, Tensor):
    """A buffer whose shape is not known yet (running statistics of LazyBatchNorm1d)."""

    cls_to_become = Tensor

    def __init__(self, requires_grad: bool = False, device: Any = None, dtype: Any = None):
        super().__init__(False, device, dtype)


def _has_uninitialized(module: Module) -> bool:
    return any(isinstance(v, _Uninitialized) for v in vars(module).values())


def materialize_from_state(module: Module, state: Dict[str, Any]) -> None:
    """``load_state_dict`` into a module with lazy parts: give every uninitialized parameter
    or buffer the shape of its entry in ``state`` (the copy that follows fills the values)."""
    for prefix, sub in module.named_modules():
        for name, value in list(vars(sub).items()):
            key = f"{prefix}.{name}" if prefix else name
            if isinstance(value, _Uninitialized) and key in state \
                    and not isinstance(state[key], _Uninitialized):   # both lazy: kept lazy
                entry = state[key]
                array = entry._data if isinstance(entry, Tensor) else np.asarray(entry)
                value.materialize(np.shape(array), dtype=value._lazy_dtype)
                if isinstance(sub, _LazyModule):
                    sub._infer_sizes()


class _LazyModule(Module):
    """What LazyLinear and LazyBatchNorm1d share: materialise, then become ``cls_to_become``."""

    cls_to_become: type = Module

    def _note_lazy_move(self, device: Any, dtype: Any) -> None:
        """``model.to(device)`` / ``.double()`` before the first forward (torch allows it):
        the parameters are made there, in that dtype, when the first input comes."""
        if device is not None and hasattr(self, "_device"):
            self._device = device
        if dtype is not None:
            if hasattr(self, "_dtype"):
                self._dtype = dtype
            for value in vars(self).values():
                if isinstance(value, _Uninitialized):
                    value._lazy_dtype = np.dtype(dtype)

    def has_uninitialized_params(self) -> bool:
        return _has_uninitialized(self)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if _has_uninitialized(self):
            if not args or not isinstance(args[0], Tensor):
                raise TypeError(f"{type(self).__name__}: the first call must get a tensor, "
                                f"whose sizes decide the parameters' shapes")
            self.initialize_parameters(args[0])
        if type(self) is not self.cls_to_become and not _has_uninitialized(self):
            self.__class__ = self.cls_to_become
        return Module.__call__(self, *args, **kwargs)

    def load_state_dict(self, state: Dict[str, Any], strict: bool = True,
                        assign: bool = False) -> Any:
        materialize_from_state(self, state)
        return super().load_state_dict(state, strict, assign)

    def __repr__(self) -> str:
        if _has_uninitialized(self):
            return f"{type(self).__name__}({self.extra_repr()})"
        return super().__repr__()

    def _infer_sizes(self) -> None:
        """After loading: read the input size back from the loaded shapes."""

    def initialize_parameters(self, x: Tensor) -> None:
        raise NotImplementedError


class LazyLinear(_LazyModule):
    """``nn.LazyLinear(out_features, bias=True)``: a Linear whose in_features is the last
    size of its first input."""

    cls_to_become = Linear

    def __init__(self, out_features: int, bias: bool = True, device: Optional[str] = None,
                 dtype: Any = None):
        self.in_features, self.out_features = 0, int(out_features)
        self._device, self._dtype = device, dtype
        self.weight = UninitializedParameter(dtype=dtype)
        self.bias = UninitializedParameter(dtype=dtype) if bias else None

    def initialize_parameters(self, x: Tensor) -> None:
        if x.ndim == 0:
            raise ValueError("LazyLinear: the first input must have at least one dim")
        made = Linear(x.shape[-1], self.out_features, bias=self.bias is not None,
                      device=self._device, dtype=self._dtype or x.dtype)
        self.in_features = x.shape[-1]
        _fill(self.weight, made.weight)
        if self.bias is not None:
            _fill(self.bias, made.bias)

    def _infer_sizes(self) -> None:
        if not isinstance(self.weight, _Uninitialized):
            self.in_features = self.weight.shape[1]

    def forward(self, x: Tensor) -> Tensor:
        return Linear.forward(self, x)

    def extra_repr(self) -> str:
        return (f"in_features={self.in_features}, out_features={self.out_features}, "
                f"bias={self.bias is not None}")


class LazyBatchNorm1d(_LazyModule):
    """``nn.LazyBatchNorm1d()``: a BatchNorm1d whose num_features is dim 1 of its first
    input ((N, C) or (N, C, L))."""

    cls_to_become = BatchNorm1d

    def __init__(self, eps: float = 1e-5, momentum: Optional[float] = 0.1, affine: bool = True,
                 track_running_stats: bool = True, device: Optional[str] = None,
                 dtype: Any = None):
        self.num_features, self.eps, self.momentum = 0, float(eps), momentum
        self.affine, self.track_running_stats = affine, track_running_stats
        self._device, self._dtype = device, dtype
        self.weight = UninitializedParameter(dtype=dtype) if affine else None
        self.bias = UninitializedParameter(dtype=dtype) if affine else None
        for name in ("running_mean", "running_var", "num_batches_tracked"):
            kind = np.int64 if name == "num_batches_tracked" else dtype
            self.register_buffer(name, UninitializedBuffer(dtype=kind)
                                 if track_running_stats else None)

    def _check_first_input(self, x: Tensor) -> None:
        target = self.cls_to_become
        if x.ndim not in target._input_dims:
            dims = " or ".join(f"{n}-D" for n in target._input_dims)
            raise ValueError(f"{type(self).__name__}: expected a {dims} "
                             f"{target._input_layout} input, got shape {x.shape}")

    def initialize_parameters(self, x: Tensor) -> None:
        self._check_first_input(x)
        made = self.cls_to_become(x.shape[1], self.eps, self.momentum, self.affine,
                                  self.track_running_stats, device=self._device,
                                  dtype=self._dtype or x.dtype)
        self.num_features = x.shape[1]
        for name in ("weight", "bias", "running_mean", "running_var", "num_batches_tracked"):
            if getattr(self, name) is not None:
                _fill(getattr(self, name), getattr(made, name))

    def _infer_sizes(self) -> None:
        for value in (self.weight, self.running_mean):
            if value is not None and not isinstance(value, _Uninitialized):
                self.num_features = value.shape[0]

    def forward(self, x: Tensor) -> Tensor:
        return self.cls_to_become.forward(self, x)

    def extra_repr(self) -> str:
        return (f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, "
                f"affine={self.affine}, track_running_stats={self.track_running_stats}")



class LazyBatchNorm2d(LazyBatchNorm1d):
    """``nn.LazyBatchNorm2d()``: a BatchNorm2d whose num_features is dim 1 of its first
    (N, C, H, W) input (d2l's ResNet, DenseNet, GoogLeNet and batch-norm chapters)."""

    cls_to_become = BatchNorm2d


class LazyBatchNorm3d(LazyBatchNorm1d):
    """``nn.LazyBatchNorm3d()``: a BatchNorm3d whose num_features is dim 1 of its first
    (N, C, D, H, W) input."""

    cls_to_become = BatchNorm3d


class LazyInstanceNorm1d(LazyBatchNorm1d):
    """``nn.LazyInstanceNorm1d()``: an InstanceNorm1d whose num_features is dim 1 of its
    first input. torch's defaults differ from InstanceNorm1d's: ``affine=True`` and
    ``track_running_stats=True`` (kept here, as torch's)."""

    cls_to_become = InstanceNorm1d

    def _check_first_input(self, x: Tensor) -> None:
        if x.ndim < 2:
            raise ValueError(f"{type(self).__name__}: the first input needs a channel dim "
                             f"(dim 1), got shape {x.shape}")

    def extra_repr(self) -> str:
        return InstanceNorm1d.extra_repr(self)


class LazyInstanceNorm2d(LazyInstanceNorm1d):
    """``nn.LazyInstanceNorm2d()``: an InstanceNorm2d whose num_features is dim 1 of its
    first input (affine and tracking by default, as torch's)."""

    cls_to_become = InstanceNorm2d


class LazyInstanceNorm3d(LazyInstanceNorm1d):
    """``nn.LazyInstanceNorm3d()``: an InstanceNorm3d whose num_features is dim 1 of its
    first input (affine and tracking by default, as torch's)."""

    cls_to_become = InstanceNorm3d


def _fill(target: _Uninitialized, made: Tensor) -> None:
    """Materialise ``target`` in place with ``made``'s values (so an optimizer made before
    the first forward holds the filled-in object)."""
    target.materialize(made.shape, dtype=made.dtype)
    target._data = made._data
