"""The op-table rows of ops/grid_sample.py (tinyattn/optable/__init__.py assembles the table).
The references are written independently, one sample point at a time: the pixel coordinate,
the padding rule, then the taps and their weights."""
from __future__ import annotations

import math
from typing import List

import numpy as np

from .. import functional as F
from .cases import case_pair
from .spec import Case, OpSpec, from_pairs

__all__ = ["ROWS"]

_SECTION = "grid-sample-and-affine-grid"


def _cases_2d(rng: np.random.Generator) -> List[Case]:
    return [case_pair("(2, 3, 4, 5) (2, 3, 4, 2)", rng.standard_normal((2, 3, 4, 5)),
                      rng.uniform(-1.3, 1.3, (2, 3, 4, 2)))]


def _cases_3d(rng: np.random.Generator) -> List[Case]:
    return [case_pair("(1, 2, 3, 4, 3) (1, 2, 3, 2, 3)", rng.standard_normal((1, 2, 3, 4, 3)),
                      rng.uniform(-1.3, 1.3, (1, 2, 3, 2, 3)))]


def _theta_cases(rng: np.random.Generator) -> List[Case]:
    return [case_pair("(2, 2, 3)", rng.standard_normal((2, 2, 3)))]


def _pixel(u: float, size: int, corners: bool, padding: str) -> float:
    x = (u + 1) / 2 * (size - 1) if corners else ((u + 1) * size - 1) / 2
    if padding == "border":
        return min(max(x, 0.0), size - 1.0)
    if padding == "reflection":
        low, high = (0.0, size - 1.0) if corners else (-0.5, size - 0.5)
        period = 2 * (high - low)
        if period == 0:
            return 0.0
        x = (x - low) % period
        x = low + (x if x <= high - low else period - x)
        return min(max(x, 0.0), size - 1.0)
    return x


def _value(x: np.ndarray, n: int, index: tuple) -> np.ndarray:
    if all(0 <= i < s for i, s in zip(index, x.shape[2:])):
        return x[(n, slice(None)) + index]
    return np.zeros(x.shape[1])


def _linear_ref(x: np.ndarray, grid: np.ndarray, corners: bool = False,
                padding: str = "zeros") -> np.ndarray:
    d = grid.shape[-1]
    out = np.zeros((x.shape[0], x.shape[1]) + grid.shape[1:-1])
    for n in range(x.shape[0]):
        for p in np.ndindex(*grid.shape[1:-1]):
            coords = [_pixel(grid[(n,) + p + (d - 1 - j,)], x.shape[2 + j], corners, padding)
                      for j in range(d)]
            total = np.zeros(x.shape[1])
            for corner in np.ndindex(*(2,) * d):
                weight, index = 1.0, []
                for c, bit in zip(coords, corner):
                    low = math.floor(c)
                    weight *= (c - low) if bit else (1 - (c - low))
                    index.append(low + bit)
                total += weight * _value(x, n, tuple(index))
            out[(n, slice(None)) + p] = total
    return out


def _keys(d: float) -> float:
    a, d = -0.75, abs(d)
    if d <= 1:
        return (a + 2) * d ** 3 - (a + 3) * d ** 2 + 1
    return a * d ** 3 - 5 * a * d ** 2 + 8 * a * d - 4 * a if d < 2 else 0.0


def _bicubic_border_ref(x: np.ndarray, grid: np.ndarray) -> np.ndarray:
    h, w = x.shape[2:]
    out = np.zeros((x.shape[0], x.shape[1]) + grid.shape[1:-1])
    for n in range(x.shape[0]):
        for p in np.ndindex(*grid.shape[1:-1]):
            cx = ((grid[n][p][0] + 1) * w - 1) / 2
            cy = ((grid[n][p][1] + 1) * h - 1) / 2
            total = np.zeros(x.shape[1])
            for i in range(math.floor(cy) - 1, math.floor(cy) + 3):
                for j in range(math.floor(cx) - 1, math.floor(cx) + 3):
                    total += (_keys(cy - i) * _keys(cx - j)
                              * x[n, :, min(max(i, 0), h - 1), min(max(j, 0), w - 1)])
            out[(n, slice(None)) + p] = total
    return out


def _affine_ref(theta: np.ndarray) -> np.ndarray:
    h, w = 3, 4
    ys, xs = (2 * np.arange(h) + 1) / h - 1, (2 * np.arange(w) + 1) / w - 1
    base = np.stack([np.broadcast_to(xs, (h, w)), np.broadcast_to(ys[:, None], (h, w)),
                     np.ones((h, w))], -1)
    return np.einsum("hwk,nik->nhwi", base, theta)


ROWS: List[OpSpec] = from_pairs([
    ("grid_sample_bilinear_zeros",
     lambda x, g: F.grid_sample(x, g, align_corners=False), _linear_ref, _cases_2d, _SECTION),
    ("grid_sample_bilinear_reflection",
     lambda x, g: F.grid_sample(x, g, padding_mode="reflection", align_corners=True),
     lambda x, g: _linear_ref(x, g, True, "reflection"), _cases_2d, _SECTION),
    ("grid_sample_trilinear_border",
     lambda x, g: F.grid_sample(x, g, padding_mode="border", align_corners=False),
     lambda x, g: _linear_ref(x, g, False, "border"), _cases_3d, _SECTION),
    ("grid_sample_bicubic_border",
     lambda x, g: F.grid_sample(x, g, mode="bicubic", padding_mode="border",
                                align_corners=False), _bicubic_border_ref, _cases_2d, _SECTION),
    ("affine_grid", lambda t: F.affine_grid(t, (2, 1, 3, 4), align_corners=False),
     _affine_ref, _theta_cases, _SECTION),
])
