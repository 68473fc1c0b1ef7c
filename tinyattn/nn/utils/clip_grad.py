"""``clip_grad_norm_``: rescale all gradients together so their global norm is at most max_norm;
``clip_grad_value_``: clamp each gradient element to [-clip_value, clip_value].

With the gradients of every parameter seen as one long vector g (see docs/optim.md#clipping)::

    total = ||g||_p = (sum_i |g_i|^p)^(1/p)          (max_i |g_i| when p = inf)
    g    <- g * min(1, max_norm / (total + 1e-6))

The gradient keeps its direction; only its length is capped. Under SGD that caps the update;
Adam's update does not scale with the gradient, so there clipping mainly keeps one spike out of
Adam's moments (docs/optim.md#clipping). As in PyTorch, the scale is applied unconditionally
(it is exactly 1 when nothing needs clipping), so no decision is taken on the host; only the
returned norm is copied to the host, once.
"""
from __future__ import annotations

import functools
import math
import numbers
from typing import Any, Iterable, Union

import numpy as np

from ...precision import get_default_dtype

from ... import backend
from ...tensor import Tensor

__all__ = ["clip_grad_norm_", "clip_grad_value_", "get_total_norm", "clip_grads_with_norm_",
           "clip_grad_norm"]


def clip_grad_norm_(parameters: Union[Tensor, Iterable[Tensor]], max_norm: float,
                    norm_type: Union[float, str] = 2.0, error_if_nonfinite: bool = False,
                    foreach: Any = None) -> Tensor:
    """Scale the gradients of ``parameters`` in place so that their global norm is at most
    ``max_norm``; return the global norm before clipping as a 0-d tensor on the gradients'
    device, as PyTorch does (``norm.item()`` or ``float(norm)`` reads it on the host).

    Args:
        parameters: a Tensor or an iterable of Tensors (``model.parameters()``); those whose
            ``.grad`` is None are skipped.
        max_norm: the largest norm allowed (>= 0; ``float("inf")`` clips nothing and only
            measures the norm, a common use).
        norm_type: p of the p-norm (> 0), or ``float("inf")`` (also the string ``"inf"``,
            which torch takes through ``float()``) for the largest absolute value.
        foreach: accepted for torch's signature (there is one implementation).
        error_if_nonfinite: raise a RuntimeError instead of scaling when the norm is NaN or
            infinite (costs one extra device-to-host read).
    """
    if isinstance(parameters, Tensor):
        parameters = [parameters]
    for name, value in (("max_norm", max_norm), ("norm_type", norm_type)):
        if isinstance(value, str):
            try:
                value = float(value)             # torch's float(norm_type): "inf" works
            except ValueError:
                raise TypeError(f"{name} must be a real number, got {value!r}") from None
        if isinstance(value, bool) or not isinstance(value, numbers.Real):
            raise TypeError(f"{name} must be a real number, got {value!r}")
    max_norm, norm_type = float(max_norm), float(norm_type)
    if not max_norm >= 0:
        raise ValueError(f"max_norm must be >= 0, got {max_norm}: it is the largest global "
                         f"gradient norm allowed (1.0 is a common choice; float('inf') only "
                         f"measures the norm)")
    if not norm_type > 0:
        raise ValueError(f"norm_type must be > 0 or float('inf'), got {norm_type}")
    grads = [p.grad for p in parameters if p.grad is not None]
    if not grads:
        return Tensor._wrap(np.zeros((), dtype=get_default_dtype()))
    total = get_total_norm(grads, norm_type, error_if_nonfinite)
    _scale(grads, max_norm, total._data)
    return total


def _total(arrays: list, norm_type: float) -> Any:
    xp = backend.get_array_module(arrays[0])
    # float16 squares overflow above 256: the norm is taken in float32 (as torch accumulates)
    wide = [g.astype(xp.float32) if g.dtype == xp.float16 else g for g in arrays]
    if math.isinf(norm_type):
        maxima = [xp.max(xp.abs(g)) for g in wide if g.size > 0]
        return functools.reduce(xp.maximum, maxima) if maxima else xp.zeros((), wide[0].dtype)
    if norm_type == 2.0:
        return xp.sqrt(sum(xp.sum(g * g) for g in wide))
    return sum(xp.sum(xp.abs(g) ** norm_type) for g in wide) ** (1.0 / norm_type)


def _scale(grads: list, max_norm: float, total: Any) -> None:
    xp = backend.get_array_module(total)
    # max_norm inf: the scale is min(inf / norm, 1) = 1 (NaN for a non-finite norm, as torch)
    with np.errstate(invalid="ignore", over="ignore"):  # a NaN/Inf norm scales to NaN, as torch
        scale = xp.minimum(max_norm / (total + 1e-6), 1.0)  # a 0-d array, on the device
        for g in grads:
            g._data *= scale
            g._bump_version()


def get_total_norm(tensors: Union[Tensor, Iterable[Tensor]], norm_type: float = 2.0,
                   error_if_nonfinite: bool = False, foreach: Any = None) -> Tensor:
    """The p-norm of ``tensors`` seen as one vector (torch's ``get_total_norm``; pass the
    gradients, ``[p.grad for p in params if p.grad is not None]``), a 0-d tensor."""
    tensors = [tensors] if isinstance(tensors, Tensor) else [t for t in tensors
                                                               if t is not None]
    norm_type = float(norm_type)
    if not tensors:
        return Tensor._wrap(np.zeros((), dtype=get_default_dtype()))
    total = _total([t._data for t in tensors], norm_type)
    if error_if_nonfinite and not bool(backend.to_host(
            backend.get_array_module(total).isfinite(total))):
        raise RuntimeError(f"the total norm of order {norm_type} of the gradients is "
                           f"non-finite ({float(backend.to_host(total))}), so it cannot be "
                           f"clipped; look for the NaN/Inf with tinyattn.detect_anomaly()")
    return Tensor._wrap(backend.get_array_module(total).asarray(total))


def clip_grads_with_norm_(parameters: Union[Tensor, Iterable[Tensor]], max_norm: float,
                          total_norm: Tensor, foreach: Any = None) -> None:
    """Scale the gradients of ``parameters`` by min(1, max_norm / (total_norm + 1e-6)) in
    place (torch's second half of ``clip_grad_norm_``, the norm from ``get_total_norm``)."""
    if isinstance(parameters, Tensor):
        parameters = [parameters]
    grads = [p.grad for p in parameters if p.grad is not None]
    if grads:
        total = total_norm._data if isinstance(total_norm, Tensor) else np.asarray(total_norm)
        _scale(grads, float(max_norm), total)


def clip_grad_norm(parameters: Union[Tensor, Iterable[Tensor]], max_norm: float,
                   norm_type: float = 2.0, error_if_nonfinite: bool = False,
                   foreach: Any = None) -> Tensor:
    """torch's deprecated name of ``clip_grad_norm_`` (its FutureWarning too)."""
    import warnings
    warnings.warn("`torch.nn.utils.clip_grad_norm` is now deprecated in favor of "
                  "`torch.nn.utils.clip_grad_norm_`.", FutureWarning, stacklevel=2)
    return clip_grad_norm_(parameters, max_norm, norm_type, error_if_nonfinite, foreach)


def clip_grad_value_(parameters: Union[Tensor, Iterable[Tensor]], clip_value: float,
                     foreach: Any = None) -> None:
    """Clamp every gradient element of ``parameters`` into [-clip_value, clip_value] in place
    (``torch.nn.utils.clip_grad_value_``). Unlike clip_grad_norm_, this changes the direction
    of the update. Parameters whose ``.grad`` is None are skipped."""
    if isinstance(parameters, Tensor):
        parameters = [parameters]
    if isinstance(clip_value, bool) or not isinstance(clip_value, numbers.Real):
        raise TypeError(f"clip_value must be a real number, got {clip_value!r}")
    clip_value = float(clip_value)
    if not clip_value >= 0:
        raise ValueError(f"clip_value must be >= 0, got {clip_value}")
    for p in parameters:
        if p.grad is not None:
            xp = backend.get_array_module(p.grad._data)
            xp.clip(p.grad._data, -clip_value, clip_value, out=p.grad._data)
            p.grad._bump_version()
