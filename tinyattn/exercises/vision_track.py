"""Exercises 29-30 of the ops track: convolution and max pooling (issue 36).

29 conv2d: the backward of F.conv2d for the input and the weight (stride, padding,
dilation). 30 max_pool: routing the gradient of F.max_pool2d to each window's maximum, ties
as torch breaks them. The cases are built here; each ``Mistake`` is a classic wrong backward
recomputed from the reference cache (a flipped kernel, the stride or the dilation forgotten
in the backward, the padding cropped from the wrong end, every tied maximum served, the last
one served, overlapping windows overwriting each other), so the checker can name it.

Max pooling is not differentiable where a window holds its maximum twice, and there a
numeric check sees half of the gradient on each tied element; the right answer (torch's
rule) would fail it. So the gradient-check cases use distinct values, and the tie cases set
``Case.exact_rule``: every gradient is compared with the reference rule instead.
"""
from __future__ import annotations

import itertools
import math
from typing import Any, List, Optional, Tuple

import numpy as np

from .course import DERIVATIONS, Case, Diagnosis, Exercise, Mistake, Part

__all__ = ["VISION_EXERCISES", "conv2d_cases", "max_pool_cases", "TIES"]


def _pair(value: Any) -> Tuple[int, int]:
    return (value, value) if isinstance(value, (int, np.integer)) else tuple(value)


def _taps(kh: int, kw: int, out_hw, stride, dilation) -> Tuple[slice, slice]:
    """The slices of the padded input that tap (kh, kw) reads (the exercise's taps())."""
    return tuple(slice(k * d, k * d + s * (n - 1) + 1, s)
                 for k, n, s, d in zip((kh, kw), out_hw, stride, dilation))


def _pad(x: np.ndarray, padding, value: float = 0.0) -> np.ndarray:
    (ph, pw) = padding
    return np.pad(x, ((0, 0), (0, 0), (ph, ph), (pw, pw)), constant_values=value)


def _crop(xpad: np.ndarray, padding, shape, wrong_end: bool = False) -> np.ndarray:
    (ph, pw), (h, w) = padding, shape[2:]
    return xpad[:, :, :h, :w] if wrong_end else xpad[:, :, ph:ph + h, pw:pw + w]


def _distinct(rng: np.random.Generator, *shape: int) -> np.ndarray:
    """Values 0.1 apart in random places: no window of a max pooling holds a tie."""
    return (rng.permutation(math.prod(shape)) * 0.1 - 0.05 * math.prod(shape)).reshape(shape)


# ------------------------------------------------------------------ 29 conv2d
def conv2d_cases(rng: np.random.Generator) -> List[Case]:
    specs = [("stride 1, no padding", (1, 2, 4, 4), (3, 2, 2, 2), 1, 0, 1),
             ("stride 2, padding 1", (2, 2, 5, 5), (2, 2, 3, 3), 2, 1, 1),
             ("dilation 2", (1, 2, 5, 5), (2, 2, 2, 2), 1, 0, 2),
             ("stride (2, 1), padding (1, 0), a 2 x 3 kernel", (1, 2, 4, 5), (2, 2, 2, 3),
              (2, 1), (1, 0), 1),
             ("a kernel as large as the input: one output pixel", (2, 1, 3, 3), (2, 1, 3, 3),
              1, 0, 1)]
    cases = []
    for label, xs, ws, stride, padding, dilation in specs:
        n, c, h, w = xs
        cases.append(Case(label, {"x": rng.standard_normal(xs), "weight": rng.standard_normal(
            ws), "bias": rng.standard_normal(ws[0])},
            {"stride": stride, "padding": padding, "dilation": dilation},
            dims={"N": n, "C": c, "H": h, "W": w, "O": ws[0], "KH": ws[2], "KW": ws[3]}))
    return cases


def _conv_grads(grad, cache, flip=False, unit_stride=False, unit_dilation=False,
                wrong_end=False, overwrite=False):
    """(dx, dweight) with one classic mistake switched on."""
    x, weight, stride, padding, dilation = cache
    stride = (1, 1) if unit_stride else stride
    dilation = (1, 1) if unit_dilation else dilation
    used = weight[:, :, ::-1, ::-1] if flip else weight
    xpad = _pad(x, padding)
    dxpad, dweight = np.zeros_like(xpad), np.zeros_like(weight)
    for kh, kw in itertools.product(range(weight.shape[2]), range(weight.shape[3])):
        rows, cols = _taps(kh, kw, grad.shape[2:], stride, dilation)
        window = xpad[:, :, rows, cols]
        if window.shape[2:] != grad.shape[2:]:
            raise ValueError("this mistake does not fit these sizes")
        dweight[:, :, kh, kw] = np.einsum("nohw,nchw->oc", grad, window)
        back = np.einsum("nohw,oc->nchw", grad, used[:, :, kh, kw])
        if overwrite:                           # dxpad[slice] = ...: the last tap wins
            dxpad[:, :, rows, cols] = back
        else:
            dxpad[:, :, rows, cols] += back
    dweight = dweight[:, :, ::-1, ::-1] if flip else dweight
    return _crop(dxpad, padding, x.shape, wrong_end), dweight


def _conv(which: int, **mistake):
    return lambda grad, cache: _conv_grads(grad, cache, **mistake)[which]


_FLIP = ("Flipped kernel: your gradient is the right one with the kernel turned by 180 "
         "degrees. The forward is a cross-correlation (PyTorch does not flip the kernel): tap "
         "(kh, kw) reads xpad[i sh + kh dh, ...] with weight[..., kh, kw]. In the backward, "
         "send grad back through weight[:, :, kh, kw] into the very slice tap (kh, kw) read. "
         "(Written as one full correlation of grad, dx uses the flipped kernel; flipping "
         "twice, or on the wrong side, turns it back.)")
_CONV_STRIDE = ("The stride is not applied in the backward: output pixel i read xpad[i sh + "
                "kh dh], so its gradient goes back there, every sh-th row (and sw-th column), "
                "not to consecutive ones. Use the same slices as the forward (taps() with "
                "the cache's stride).")
_CONV_DILATION = ("The dilation is ignored in the backward: tap kh reads row i sh + kh dh, "
                  "so its gradient goes back to that row, dh apart from the next tap's, not "
                  "to the adjacent one. Use the same slices as the forward (taps() with the "
                  "cache's dilation).")
CONV_MISTAKES = [
    Mistake("x", "flipped_kernel", _FLIP, _conv(0, flip=True)),
    Mistake("weight", "flipped_kernel", _FLIP, _conv(1, flip=True)),
    Mistake("x", "conv_stride", _CONV_STRIDE, _conv(0, unit_stride=True)),
    Mistake("weight", "conv_stride", _CONV_STRIDE, _conv(1, unit_stride=True)),
    Mistake("x", "conv_dilation", _CONV_DILATION, _conv(0, unit_dilation=True)),
    Mistake("weight", "conv_dilation", _CONV_DILATION, _conv(1, unit_dilation=True)),
    Mistake("x", "overlap_overwrite",
            "Overlapping windows overwrite each other: an input pixel is read by several "
            "taps (and windows), so its gradient is the SUM of what each sends back; "
            "dxpad[slice] = ... keeps only the last tap's. Use dxpad[slice] += ....",
            _conv(0, overwrite=True)),
    Mistake("x", "padding_crop",
            "The padding is cropped from the wrong end: xpad has padding rows at the top "
            "AND the bottom (columns on both sides), so dx = dxpad[:, :, ph:ph + H, pw:pw + "
            "W]; dxpad[:, :, :H, :W] keeps the top padding and loses real rows.",
            _conv(0, wrong_end=True)),
]


def _padding_shape_hint(name: str, got, want, case: Case) -> Optional[Diagnosis]:
    """dx with the padding left on (or cropped on one side only): say so."""
    if name != "x" or len(got) != 4 or tuple(got[:2]) != tuple(want[:2]):
        return None
    (ph, pw) = _pair(case.consts.get("padding", 0))
    h, w = want[2:]
    if tuple(got[2:]) == (h + 2 * ph, w + 2 * pw):
        return Diagnosis("padding", (
            f"The padding is not removed: dx has the padded input's shape {tuple(got)}, x has "
            f"{tuple(want)}. The padding is not an input: compute the gradient of the padded "
            f"xpad, then crop it, dx = dxpad[:, :, {ph}:{ph} + H, {pw}:{pw} + W]."))
    if tuple(got[2:]) == (h + ph, w + pw):
        return Diagnosis("padding", (
            f"The padding is removed on one side only: dx has shape {tuple(got)}, x has "
            f"{tuple(want)}. xpad has padding on both sides: dx = dxpad[:, :, ph:ph + H, "
            f"pw:pw + W]."))
    return None


# ------------------------------------------------------------------ 30 max pooling
TIES = ("Ties: some windows here hold their maximum more than once. The max is not "
        "differentiable there, so this case has no numeric check: the gradient must follow "
        "PyTorch's rule, all of a window's grad to the FIRST maximum in row-major order "
        "(smallest kh, then smallest kw), one element per window: the index "
        "F.max_pool2d(..., return_indices=True) returns.")


def max_pool_cases(rng: np.random.Generator) -> List[Case]:
    specs = [("2 x 2 windows, stride 2", (2, 2, 4, 4), 2, None, 0, 1),
             ("overlapping windows: kernel 3, stride 1", (1, 2, 5, 5), 3, 1, 0, 1),
             ("kernel 3, stride 2, padding 1", (1, 1, 5, 5), 3, 2, 1, 1),
             ("dilation 2, stride (1, 2), a 2 x 3 kernel", (1, 2, 5, 7), (2, 3), (1, 2), 0, 2),
             ("tied maxima (values 0, 1, 2), overlapping windows", (2, 2, 4, 4), 2, 1, 0, 1),
             ("tied maxima, kernel 3, stride 2, padding 1", (1, 2, 5, 5), 3, 2, 1, 1)]
    cases = []
    for label, xs, kernel, stride, padding, dilation in specs:
        tied = label.startswith("tied")
        x = rng.integers(0, 3, xs).astype(np.float64) if tied else _distinct(rng, *xs)
        (kh, kw) = _pair(kernel)
        cases.append(Case(label, {"x": x}, {"kernel_size": kernel, "stride": stride,
                                            "padding": padding, "dilation": dilation},
                          dims={"N": xs[0], "C": xs[1], "H": xs[2], "W": xs[3], "KH": kh,
                                "KW": kw}, exact_rule=TIES if tied else ""))
    return cases


def _pool_dx(grad, cache, last=False, every=False, unit_stride=False, unit_dilation=False,
             overwrite=False):
    """dx of max pooling with one classic mistake switched on."""
    x, out, kernel, stride, padding, dilation = cache
    stride = (1, 1) if unit_stride else stride
    dilation = (1, 1) if unit_dilation else dilation
    xpad = _pad(x, padding, -np.inf)
    dxpad = np.zeros_like(xpad)
    taken = np.zeros(out.shape, dtype=bool)
    order = list(itertools.product(range(kernel[0]), range(kernel[1])))
    for kh, kw in order[::-1] if last else order:
        rows, cols = _taps(kh, kw, out.shape[2:], stride, dilation)
        hit = (xpad[:, :, rows, cols] == out) & (True if every else ~taken)
        if overwrite:                           # dxpad[slice] = g: a later tap's write wins
            dxpad[:, :, rows, cols] = np.where(hit, grad, dxpad[:, :, rows, cols])
        else:
            dxpad[:, :, rows, cols] += np.where(hit, grad, 0.0)
        taken |= hit
    return _crop(dxpad, padding, x.shape)


def _pool_fancy_assign(grad, cache):
    """dx[winner] = g with NumPy's fancy assignment: of two windows with one winner, the
    later one's gradient is kept (the classic dx[idx] = g)."""
    x, out, kernel, stride, padding, dilation = cache
    winners = np.zeros(out.shape, dtype=np.int64)   # each window's winner, flat in (H, W)
    xpad_index = _pad(np.arange(x[0, 0].size).reshape((1, 1) + x.shape[2:]), padding, -1)
    taken = np.zeros(out.shape, dtype=bool)
    xpad = _pad(x, padding, -np.inf)
    for kh, kw in itertools.product(range(kernel[0]), range(kernel[1])):
        rows, cols = _taps(kh, kw, out.shape[2:], stride, dilation)
        first = (xpad[:, :, rows, cols] == out) & ~taken
        winners = np.where(first, xpad_index[:, :, rows, cols], winners)
        taken |= first
    planes = x.shape[0] * x.shape[1]
    dx = np.zeros((planes, x[0, 0].size))
    dx[np.arange(planes)[:, None], winners.reshape(planes, -1)] = grad.reshape(planes, -1)
    return dx.reshape(x.shape)


_OVERWRITE = ("Overlapping windows overwrite each other: when two windows pick the same "
              "element, its gradient is the SUM of both windows' grads, but an assignment "
              "(dx[idx] = g, or dx[slice] = ...) keeps only the last. Add instead: "
              "np.add.at(dx, idx, g), or dx[slice] += ...")
POOL_MISTAKES = [
    Mistake("x", "ties_every", "Every tied maximum gets the window's gradient: where a window "
            "holds its maximum twice, only ONE element (PyTorch's: the first in row-major "
            "order) takes grad; the others get 0. Stop at the first match in each window.",
            lambda g, c: _pool_dx(g, c, every=True)),
    Mistake("x", "ties_last", "The gradient goes to the LAST tied maximum of a window: "
            "PyTorch gives it to the FIRST one in row-major order (smallest kh, then kw), "
            "as np.argmax does. (A loop with >= instead of >, or the taps walked backwards, "
            "keeps the last.)", lambda g, c: _pool_dx(g, c, last=True)),
    Mistake("x", "pool_stride", "Gradient routed into the wrong windows: the stride is not "
            "applied in the backward. Window (i, j) starts at row i * sh - ph, column "
            "j * sw - pw, not at (i, j): use the forward's slices (taps() with the cache's "
            "stride).", lambda g, c: _pool_dx(g, c, unit_stride=True)),
    Mistake("x", "pool_dilation", "Gradient routed to the wrong element of each window: the "
            "dilation is ignored in the backward. Tap kh of a window sits at row i * sh + "
            "kh * dh (dh apart), so the winner found at tap kh lies there.",
            lambda g, c: _pool_dx(g, c, unit_dilation=True)),
    Mistake("x", "overlap_overwrite", _OVERWRITE, lambda g, c: _pool_dx(g, c, overwrite=True)),
    Mistake("x", "overlap_overwrite", _OVERWRITE, _pool_fancy_assign),
]

VISION_EXERCISES: List[Exercise] = [
    Exercise(29, "conv2d", "2-D convolution: the gradients of the input and the weight",
             f"{DERIVATIONS}#convolution",
             [Part("conv2d", ("x", "weight", "bias"), conv2d_cases, mistakes=CONV_MISTAKES,
                   shape_hint=_padding_shape_hint)]),
    Exercise(30, "max_pool", "max pooling: routing the gradient, ties as torch",
             f"{DERIVATIONS}#pooling",
             [Part("max_pool2d", ("x",), max_pool_cases, mistakes=POOL_MISTAKES,
                   shape_hint=_padding_shape_hint)]),
]
