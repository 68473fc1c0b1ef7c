"""The op-table rows of ops/interpolate.py (tinyattn/optable/__init__.py assembles the
table). The references are written independently: bilinear and bicubic weights from the
formulas, area as window means."""
from __future__ import annotations

from typing import List

import numpy as np

from .. import functional as F
from .cases import case_pair
from .spec import Case, OpSpec, from_pairs

__all__ = ["ROWS"]

_SECTION = "interpolate"


def _cases(rng: np.random.Generator) -> List[Case]:
    return [case_pair("(2, 3, 4, 5)", rng.standard_normal((2, 3, 4, 5)))]


def _bilinear_axis(x: np.ndarray, axis: int, out: int, align_corners: bool) -> np.ndarray:
    n = x.shape[axis]
    values = []
    for dst in range(out):
        src = dst * (n - 1) / (out - 1) if align_corners else max((dst + 0.5) * n / out - 0.5, 0)
        i0 = min(int(np.floor(src)), n - 1)
        lam = src - i0
        i1 = min(i0 + 1, n - 1)
        values.append((1 - lam) * np.take(x, i0, axis) + lam * np.take(x, i1, axis))
    return np.stack(values, axis)


def _bilinear_ref(x: np.ndarray, align_corners: bool = False) -> np.ndarray:
    return _bilinear_axis(_bilinear_axis(x, 2, 7, align_corners), 3, 3, align_corners)


def _cubic(d: float) -> float:
    a, d = -0.75, abs(d)
    if d <= 1:
        return (a + 2) * d ** 3 - (a + 3) * d ** 2 + 1
    return a * d ** 3 - 5 * a * d ** 2 + 8 * a * d - 4 * a if d < 2 else 0.0


def _bicubic_axis(x: np.ndarray, axis: int, out: int) -> np.ndarray:
    n = x.shape[axis]
    values = []
    for dst in range(out):
        src = (dst + 0.5) * n / out - 0.5
        base = int(np.floor(src))
        values.append(sum(_cubic(src - k) * np.take(x, min(max(k, 0), n - 1), axis)
                          for k in range(base - 1, base + 3)))
    return np.stack(values, axis)


def _area_axis(x: np.ndarray, axis: int, out: int) -> np.ndarray:
    n = x.shape[axis]
    return np.stack([np.take(x, range(i * n // out, -(-(i + 1) * n // out)), axis).mean(axis)
                     for i in range(out)], axis)


def _antialias_axis(x: np.ndarray, axis: int, out: int, cubic: bool) -> np.ndarray:
    """PIL's filter, stretched by the scale when downsampling, rows normalised"""
    n = x.shape[axis]
    scale = n / out
    stretch = max(scale, 1.0)
    width = (2.0 if cubic else 1.0) * stretch

    def kernel(d: float) -> float:
        d = abs(d)
        if not cubic:
            return max(0.0, 1 - d)
        a = -0.5
        if d < 1:
            return (a + 2) * d ** 3 - (a + 3) * d ** 2 + 1
        return a * d ** 3 - 5 * a * d ** 2 + 8 * a * d - 4 * a if d < 2 else 0.0
    values = []
    for dst in range(out):
        centre = scale * (dst + 0.5)
        taps = range(max(int(centre - width + 0.5), 0), min(int(centre + width + 0.5), n))
        weights = np.array([kernel((j + 0.5 - centre) / stretch) for j in taps])
        weights = weights / weights.sum()
        values.append(sum(w * np.take(x, j, axis) for w, j in zip(weights, taps)))
    return np.stack(values, axis)


ROWS: List[OpSpec] = from_pairs([
    ("interpolate_bilinear_antialias",
     lambda x: F.interpolate(x, size=(3, 2), mode="bilinear", antialias=True),
     lambda x: _antialias_axis(_antialias_axis(x, 2, 3, False), 3, 2, False), _cases,
     _SECTION),
    ("interpolate_bicubic_antialias",
     lambda x: F.interpolate(x, size=(2, 7), mode="bicubic", antialias=True),
     lambda x: _antialias_axis(_antialias_axis(x, 2, 2, True), 3, 7, True), _cases, _SECTION),
    ("interpolate_bilinear", lambda x: F.interpolate(x, size=(7, 3), mode="bilinear"),
     _bilinear_ref, _cases, _SECTION),
    ("interpolate_bilinear_align_corners",
     lambda x: F.interpolate(x, size=(7, 3), mode="bilinear", align_corners=True),
     lambda x: _bilinear_ref(x, True), _cases, _SECTION),
    ("interpolate_bicubic", lambda x: F.interpolate(x, size=(6, 8), mode="bicubic"),
     lambda x: _bicubic_axis(_bicubic_axis(x, 2, 6), 3, 8), _cases, _SECTION),
    ("interpolate_area", lambda x: F.interpolate(x, size=(3, 2), mode="area"),
     lambda x: _area_axis(_area_axis(x, 2, 3), 3, 2), _cases, _SECTION),
    ("interpolate_nearest", lambda x: F.interpolate(x, scale_factor=1.5, mode="nearest"),
     lambda x: x[:, :, [0, 0, 1, 2, 2, 3]][:, :, :, [0, 0, 1, 2, 2, 3, 4]], _cases, _SECTION),
])
