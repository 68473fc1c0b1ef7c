"""torch.cov and torch.corrcoef, composed of ops with their own backwards (means, products,
sums, sqrt, clamp), so their gradients follow from those (docs/derivations.md#covariance-and-
correlation). Rows are variables, columns observations, as torch.
"""
from __future__ import annotations

import warnings
from typing import Any, Optional

import numpy as np

from ..precision import get_default_dtype, is_floating, scalar_type_name
from ..tensor import Tensor

__all__ = ["cov", "corrcoef"]

_torch_name = scalar_type_name    # torch's ScalarType name (float32 -> Float)


def _check_weights(name: str, w: Optional[Tensor], observations: int, integral: bool) -> None:
    if w is None:
        return
    if not isinstance(w, Tensor):
        raise TypeError(f"cov(): {name} must be a Tensor, not {type(w).__name__}")
    if w.ndim > 1:
        raise RuntimeError(f"cov(): expected {name} to have one or fewer dimensions but got "
                           f"{name} with {w.ndim} dimensions")
    if w.numel() != observations:
        raise RuntimeError(f"cov(): expected {name} to have the same numel as there are "
                           f"observations in the input but got {w.numel()} != {observations}")
    kind_ok = (not is_floating(w.dtype) and np.dtype(w.dtype) != np.bool_) if integral \
        else is_floating(w.dtype)
    if not kind_ok:
        want = "integral" if integral else "floating point"
        raise RuntimeError(f"cov(): expected {name} to have {want} dtype but got {name} with "
                           f"{_torch_name(w.dtype)} dtype")
    if bool((w.detach() < 0).any().item()):
        raise RuntimeError(f"cov(): {name} cannot be negative")


def cov(input: Tensor, *, correction: int = 1,  # noqa: A002 - torch's names
        fweights: Optional[Tensor] = None, aweights: Optional[Tensor] = None) -> Tensor:
    """The covariance matrix of the rows of ``input`` (``torch.cov``): (vars, obs) ->
    (vars, vars), a 1-D input -> 0-d. ``fweights`` (integer repeat counts) and ``aweights``
    (floating importance weights) weight the observations; ``correction`` is subtracted from
    the weight sum (1: Bessel's correction). Integer input gives the default float dtype."""
    if input.dtype.kind == "c":
        raise TypeError(f"cov: complex tensors ({input.dtype}) are not supported by this op "
                        f"in tinyattn; work on x.real and x.imag instead")
    if input.ndim > 2:
        raise RuntimeError(f"cov(): expected input to have two or fewer dimensions but got an "
                           f"input with {input.ndim} dimensions")
    x = input.reshape(1, -1) if input.ndim < 2 else input
    if not is_floating(x.dtype):
        x = x.to(get_default_dtype())
    observations = x.shape[1]
    _check_weights("fweights", fweights, observations, integral=True)
    _check_weights("aweights", aweights, observations, integral=False)
    w = fweights
    if aweights is not None:
        w = aweights if w is None else w * aweights
    if w is None:
        w_sum: Any = float(observations)
        average = x.mean(1)                                         # (vars,)
    else:
        w_sum = w.sum()
        average = (x * w).sum(1) / w_sum
    if w is not None and aweights is not None and correction != 0:
        norm_factor = w_sum - correction * (w * aweights).sum() / w_sum
    else:
        norm_factor = w_sum - correction
    if bool(np.asarray(norm_factor.detach().numpy() if isinstance(norm_factor, Tensor)
                       else norm_factor) <= 0):
        warnings.warn("cov(): degrees of freedom is <= 0. Correction should be strictly less "
                      "than the number of observations.", UserWarning, stacklevel=2)
        norm_factor = norm_factor * 0
    centred = x - average.unsqueeze(1)                              # (vars, obs)
    weighted = centred if w is None else centred * w
    product = centred @ weighted.mT                                 # (vars, vars)
    with np.errstate(divide="ignore", invalid="ignore"):
        return (product / norm_factor).squeeze()


def corrcoef(input: Tensor) -> Tensor:  # noqa: A002 - torch's name
    """The Pearson correlation coefficients of the rows of ``input`` (``torch.corrcoef``):
    cov(x) / (std_i std_j), clipped to [-1, 1]; a 1-D input gives 1 (NaN for a constant)."""
    c = cov(input)
    if c.ndim == 0:
        return c / c
    std = c.diagonal().sqrt()
    c = c / std.unsqueeze(1)
    c = c / std.unsqueeze(0)
    return c.clamp(-1, 1)
