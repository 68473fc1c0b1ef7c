"""``tinyattn.nn.utils``: PyTorch's gradient clipping and parameter/vector helpers, and
``rnn.pad_sequence`` (batching sequences of different lengths).

``clip_grad_norm_`` and ``clip_grad_value_`` are defined in ``clip_grad.py`` (PyTorch's path,
``torch.nn.utils.clip_grad_norm_``); ``tinyattn.optim`` re-exports them next to the optimizers
that use them (docs/optim.md#clipping).
"""
from __future__ import annotations

from typing import Any, Iterable

from ...autograd import no_grad
from ...ops import cat
from ...tensor import Tensor
from . import fusion, parametrizations, parametrize, rnn, stateless
from .fusion import (fuse_conv_bn_eval, fuse_conv_bn_weights, fuse_linear_bn_eval,
                     fuse_linear_bn_weights)
from .norm_hooks import remove_spectral_norm, remove_weight_norm, spectral_norm, weight_norm
from .clip_grad import (clip_grad_norm, clip_grad_norm_, clip_grad_value_,
                        clip_grads_with_norm_, get_total_norm)

__all__ = ["clip_grad_norm_", "clip_grad_value_", "clip_grad_norm", "get_total_norm",
           "clip_grads_with_norm_", "skip_init", "parameters_to_vector",
           "vector_to_parameters", "rnn", "parametrize", "stateless", "fusion",
           "fuse_conv_bn_eval", "fuse_conv_bn_weights", "fuse_linear_bn_eval",
           "fuse_linear_bn_weights", "parametrizations", "weight_norm",
           "remove_weight_norm", "spectral_norm", "remove_spectral_norm"]


def parameters_to_vector(parameters: Iterable[Tensor]) -> Tensor:
    """All parameters flattened and joined into one vector (differentiable, as PyTorch's)."""
    params = list(parameters)
    if not params:
        raise ValueError("parameters_to_vector: got no parameters")
    return cat([p.reshape(-1) for p in params])


def vector_to_parameters(vec: Tensor, parameters: Iterable[Tensor]) -> None:
    """Copy consecutive slices of ``vec`` into the parameters, in order (the inverse of
    parameters_to_vector). tinyattn copies the values in (a version counted per parameter);
    PyTorch instead points each ``param.data`` at a slice of ``vec``."""
    if not isinstance(vec, Tensor):
        raise TypeError(f"vector_to_parameters expects a Tensor vec, got {type(vec).__name__}")
    params = list(parameters)
    total = sum(p.numel() for p in params)
    if vec.ndim != 1 or vec.numel() != total:
        raise ValueError(f"vector_to_parameters: vec has shape {vec.shape} but the parameters "
                         f"hold {total} numbers; pass a 1-D vector of that length")
    start = 0
    with no_grad():
        for p in params:
            p.copy_(vec[start:start + p.numel()].reshape(p.shape))
            start += p.numel()


def skip_init(module_cls: type, *args: Any, **kwargs: Any) -> Any:
    """``module_cls(*args, **kwargs)`` with its parameters and buffers left uninitialised
    (torch's ``skip_init``: initialise them yourself afterwards). tinyattn builds the module
    and then empties it (``to_empty``); the result is the same module."""
    from ..module import Module  # noqa: PLC0415 - the nn layer, imported where used
    if not isinstance(module_cls, type) or not issubclass(module_cls, Module):
        raise RuntimeError(f"Expected a Module; got {module_cls}")
    device = kwargs.get("device") or "cpu"
    return module_cls(*args, **kwargs).to_empty(device=device)
