"""``torch.histogram``: counts of a float tensor's values in bins (no gradient, as torch).

    hist, bin_edges = torch.histogram(x, bins=4)            # 4 equal bins over [min, max]
    torch.histogram(x, bins=edges_tensor, weight=w, density=True)

An element equal to the last edge falls in the last bin; values outside the range are not
counted. With ``density=True`` each count is divided by (total weight * bin width), so the
histogram integrates to 1.
"""
from __future__ import annotations

import math
from typing import Any, Optional, Sequence

import numpy as np

from .. import backend
from ..precision import is_floating
from ..tensor import Tensor
from ..spaced_values import linspace_values
from .return_types import return_type

__all__ = ["histogram", "HistogramResult"]

HistogramResult = return_type("histogram", ["hist", "bin_edges"])


def histogram(input: Tensor, bins: Any = 100, *,  # noqa: A002 - torch's names (bins: 100)
              range: Optional[Sequence[float]] = None,  # noqa: A002
              weight: Optional[Tensor] = None, density: bool = False) -> HistogramResult:
    """``torch.histogram(input, bins, *, range=None, weight=None, density=False)``."""
    if not isinstance(input, Tensor):
        raise TypeError(f"histogram: expected a Tensor, got {type(input).__name__}")
    if not is_floating(input.dtype) or input.dtype == np.dtype("float16"):
        raise RuntimeError(f'"histogramdd" not implemented for \'{input.dtype}\'; convert the '
                           f"input with .float()")
    values = backend.to_host(input._data).astype(np.float64).reshape(-1)
    weights = None
    if weight is not None:
        if not isinstance(weight, Tensor) or tuple(weight.shape) != tuple(input.shape):
            raise RuntimeError(f"histogram: weight must be a tensor of the input's shape "
                               f"{tuple(input.shape)}")
        weights = backend.to_host(weight._data).astype(np.float64).reshape(-1)
    if isinstance(bins, Tensor):
        edges = backend.to_host(bins._data).astype(np.float64).reshape(-1)
        if edges.size < 2 or np.any(np.diff(edges) < 0):
            raise RuntimeError("histogram: bins must be a 1-D tensor of at least 2 "
                               "increasing edges")
    else:
        if isinstance(bins, bool) or not isinstance(bins, (int, np.integer)) or bins < 1:
            raise RuntimeError(f"histogram: bins must be a positive int or a tensor of edges, "
                               f"got {bins!r}")
        if range is not None:
            low, high = float(range[0]), float(range[1])
        elif values.size:
            low, high = float(values.min()), float(values.max())
        else:
            low, high = 0.0, 1.0                    # torch's range for no values: [0, 1]
        if not (math.isfinite(low) and math.isfinite(high)):
            raise RuntimeError(f"torch.histogramdd: dimension 0's range [{low}, {high}] is "
                               f"not finite")
        if low > high:
            raise RuntimeError(f"histogram: min ({low}) must not exceed max ({high})")
        if low == high:
            low, high = low - 0.5, high + 0.5       # torch widens an empty range the same way
        edges = linspace_values(low, high, int(bins) + 1, input.dtype)  # torch's linspace
    dtype = input.dtype
    edges = edges.astype(dtype)                             # the edges torch computes with
    hist = _counts(values.astype(dtype), edges, weights, dtype)
    if density:                               # hist / (total * bin width), in the dtype
        with np.errstate(invalid="ignore", divide="ignore"):
            hist = hist / hist.sum(dtype=dtype) / np.diff(edges)
    device = backend.device_of(input._data)
    wrap = lambda array: Tensor._wrap(backend.to_device(array.astype(dtype), device))  # noqa
    return HistogramResult(wrap(hist), wrap(edges))


def _counts(values: np.ndarray, edges: np.ndarray, weights: Any, dtype: np.dtype) -> np.ndarray:
    """The (weighted) count per bin, in the input's dtype: each element's weight is added to
    its bin in element order with the dtype's rounding, as torch's CPU kernel accumulates
    (a float32 sum of weights differs from a float64 one rounded once). Bin i holds
    edges[i] <= x < edges[i + 1]; the last bin also holds x == edges[-1]; values outside
    (and NaN) are not counted."""
    hist = np.zeros(edges.size - 1, dtype=dtype)
    inside = (values >= edges[0]) & (values <= edges[-1])
    where = np.minimum(np.searchsorted(edges, values[inside], side="right") - 1,
                       edges.size - 2)
    added = (np.ones(where.size, dtype=dtype) if weights is None
             else weights[inside].astype(dtype))
    np.add.at(hist, where, added)             # unbuffered: in element order, as torch
    return hist
