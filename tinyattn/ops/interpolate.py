"""``F.interpolate``: resizing the spatial dims of (N, C, *spatial) inputs
(docs/derivations.md#interpolate).

Every mode resizes each spatial dim on its own (separably), and along one dim every output
element is a fixed weighted sum of input elements: out = M x along that axis, with M an
(out, in) matrix built from torch's index and weight rules:

- ``nearest``: src = min(floor(dst * scale), in - 1) in float32 (out == in: the identity;
  out == 2 in: dst // 2, torch's shortcuts); ``nearest-exact``: floor((dst + 0.5) * scale).
- ``linear``/``bilinear``/``trilinear``: src = scale (dst + 0.5) - 0.5, clamped at 0
  (align_corners=False, half-pixel centres) or src = dst (in - 1) / (out - 1)
  (align_corners=True); weights 1 - l and l on floor(src) and the next element (the same one
  at the last edge).
- ``bicubic``: the same src, not clamped; Keys' cubic convolution with A = -0.75 on the four
  elements floor(src) - 1 .. floor(src) + 2, indices clamped into [0, in - 1].
- ``area``: adaptive average pooling: mean over [floor(i in / out), ceil((i + 1) in / out)).
- ``antialias=True`` (bilinear, bicubic): torch's PIL-style filter, widened by the scale
  when downsampling, each output's weights divided by their sum (_antialias_matrix).
scale = in / out, or 1 / scale_factor when a scale factor is given and not recomputed.
Weights are computed in the input's precision (float32 for float32 and half inputs), as
torch's kernels compute them; for float16/bfloat16 torch's linear, trilinear and bicubic
kernels then store them in the half dtype, and so does tinyattn (the sums stay float32,
rounded once).
uint8 bilinear/bicubic follow torch's integer kernel (_resample_uint8).

The backward of out = M x is dx = M^T g along the same axis: each output gradient is
scattered back to the inputs it read, with the same weights (the adjoint).
"""
from __future__ import annotations

import math
from typing import Any, List, Optional, Tuple

import numpy as np

from .. import backend
from ..autograd import Function, name_node
from ..tensor import Tensor
from ..precision import is_low_precision
from .pad import PadByIndex

__all__ = ["interpolate", "upsample", "upsample_nearest", "upsample_bilinear"]

_MODES = ("nearest", "linear", "bilinear", "bicubic", "trilinear", "area", "nearest-exact")
_LINEAR_DIMS = {"linear": 3, "bilinear": 4, "trilinear": 5, "bicubic": 4}


class Resample(Function):
    """out = x with M_k applied along spatial axis k, for each (axis, M_k) (M_k: (out, in)).

    Each step is linear, out[..., o, ...] = sum_i M[o, i] x[..., i, ...], so its adjoint
    gives the gradient: dx[..., i, ...] = sum_o M[o, i] g[..., o, ...], i.e. M^T applied
    along the same axis, the steps taken in reverse order.
    """

    def forward(self, x, maps: Tuple[Tuple[int, Any], ...]):
        xp = backend.get_array_module(x)
        self.save_for_backward(maps)
        dtype = x.dtype
        x = x.astype(_compute(dtype), copy=False)
        # the last axis first: torch's kernel sums the innermost dim's taps, then weighs
        # those sums along the next dim out (float32 sums for half inputs, one rounding)
        for axis, matrix in reversed(maps):
            # (.., in, ..) -> (.., out, ..)
            x = xp.moveaxis(xp.tensordot(xp.asarray(matrix, dtype=x.dtype), x,
                                         axes=([1], [axis])), 0, axis)
        return x.astype(dtype, copy=False)

    def backward(self, grad):
        (maps,) = self.saved
        xp = backend.get_array_module(grad)
        dtype = grad.dtype
        grad = grad.astype(_compute(dtype), copy=False)
        for axis, matrix in maps:
            grad = xp.moveaxis(xp.tensordot(xp.asarray(matrix, dtype=grad.dtype).T, grad,
                                            axes=([1], [axis])), 0, axis)
        return grad.astype(dtype, copy=False)


def _compute(dtype: Any) -> Any:
    """float16/bfloat16 are resampled in float32 (torch's CPU kernels sum in float32 and
    round once)."""
    return np.float32 if is_low_precision(dtype) else dtype


class ResampleArea(Resample):
    """Resample for mode "area" (torch's adaptive average pooling, whose backward saves the
    input): an in-place write to the input before backward raises, as in torch.

    A float16/bfloat16 5-D input is pooled as torch's 3-D kernel does, all in the half
    dtype: the window's elements summed one at a time (depth, then height, then width
    outermost to innermost) with a rounding after each addition, then divided by the
    window's depth, height and width in turn, rounding after each. The backward is the same
    linear map's transpose as for the other dtypes."""
    versions_checked = (0,)
    computes_in_half = True        # Resample's forward rounds once itself for the others

    def forward(self, x, maps: Tuple[Tuple[int, Any], ...]):
        if not (is_low_precision(x.dtype) and len(maps) == 3):
            return super().forward(x, maps)
        self.save_for_backward(maps)
        xp = backend.get_array_module(x)
        windows = [_area_windows(xp, *matrix.shape[::-1]) for _, matrix in maps]
        longest = [int((end - start).max()) if end.size else 0          # on the host
                   for start, end in (_area_windows(np, *m.shape[::-1]) for _, m in maps)]
        shape = x.shape[:2] + tuple(int(m.shape[0]) for _, m in maps)
        total = xp.zeros(shape, dtype=x.dtype)
        for offsets in np.ndindex(*longest):
            picks, keep = [], True
            for k, (offset, (start, end)) in enumerate(zip(offsets, windows)):
                at = start + offset
                inside = at < end
                picks.append(xp.minimum(at, end - 1).reshape(
                    [-1 if j == k else 1 for j in range(3)]))
                keep = keep & inside.reshape([-1 if j == k else 1 for j in range(3)])
            value = x[:, :, picks[0], picks[1], picks[2]]
            total = (total + xp.where(keep, value, 0).astype(x.dtype)).astype(x.dtype)
        for k, (start, end) in enumerate(windows):
            size = (end - start).reshape([-1 if j == k else 1 for j in range(3)])
            total = (total.astype(np.float32) / size.astype(np.float32)).astype(x.dtype)
        return total


def _scale(in_size: int, out_size: int, scale_factor: Optional[float], dtype: Any) -> Any:
    """torch's compute_scales_value: 1 / scale_factor when given (> 0), else in / out."""
    if scale_factor is not None and scale_factor > 0:
        return dtype(1.0 / scale_factor)
    return dtype(in_size) / dtype(out_size)


def _nearest_index(xp: Any, in_size: int, out_size: int, scale_factor: Optional[float],
                   exact: bool) -> Any:
    """torch's nearest / nearest-exact source index of every output position, built by ``xp``
    (the input's array module) so that it is born on the input's device."""
    dst = xp.arange(out_size)
    if not exact and out_size == in_size:
        return dst
    if not exact and out_size == 2 * in_size:
        return dst >> 1
    scale = _scale(in_size, out_size, scale_factor, np.float32)
    offset = np.float32(0.5 if exact else 0.0)
    src = xp.floor((dst.astype(np.float32) + offset) * scale).astype(np.int64)
    return xp.minimum(src, in_size - 1)


def _source(xp: Any, in_size: int, out_size: int, scale_factor: Optional[float],
            align_corners: bool, cubic: bool, dtype: Any) -> Any:
    """torch's area_pixel_compute_source_index for every output position."""
    dst = xp.arange(out_size).astype(dtype)
    if align_corners:
        scale = dtype(in_size - 1) / dtype(out_size - 1) if out_size > 1 else dtype(0)
        return dst * scale
    # scale (dst + 0.5) - 0.5 is one fused multiply-add in torch's compiled float32 kernel:
    # the product is not rounded before the subtraction (float64 holds it exactly)
    scale = np.float64(_scale(in_size, out_size, scale_factor, dtype))
    src = ((dst.astype(np.float64) + 0.5) * scale - 0.5).astype(dtype)
    return src if cubic else xp.maximum(src, dtype(0))


def _guarded(xp: Any, src: Any, in_size: int) -> Tuple[Any, Any]:
    """torch's guard_index_and_lambda: the floor index (at most in - 1) and l in [0, 1]."""
    index = xp.minimum(xp.floor(src).astype(np.int64), in_size - 1)
    return index, xp.clip(src - index, 0, 1).astype(src.dtype)


def _one_hot(xp: Any, index: Any, in_size: int, dtype: Any) -> Any:
    """(out, in): 1 at [o, index[o]], 0 elsewhere. Adding w * _one_hot(...) gives the same
    sums, rounded the same, as a scatter-add of w at index (w * 0 and 0 + w are exact), with
    no scatter, which CuPy lacks as ``ufunc.at``."""
    return (index[:, None] == xp.arange(in_size)[None, :]).astype(dtype)


def _linear_matrix(xp: Any, in_size: int, out_size: int, scale_factor: Optional[float],
                   align_corners: bool, dtype: Any, half: Any = None) -> Any:
    """With ``half`` (a float16/bfloat16 input): torch stores the weights in the input's
    dtype: l rounded to it, and 1 - l computed from the rounded l, then rounded."""
    index, lam = _guarded(xp, _source(xp, in_size, out_size, scale_factor, align_corners,
                                      False, dtype), in_size)
    following = index + (index < in_size - 1)
    if half is not None:
        lam = lam.astype(half).astype(dtype)
        matrix = (1 - lam).astype(half).astype(dtype)[:, None] * _one_hot(xp, index, in_size,
                                                                          dtype)
        return matrix + lam[:, None] * _one_hot(xp, following, in_size, dtype)
    matrix = (1 - lam)[:, None] * _one_hot(xp, index, in_size, dtype)
    return matrix + lam[:, None] * _one_hot(xp, following, in_size, dtype)


def _cubic_weights(t: Any) -> List[Any]:
    """Keys' cubic convolution (A = -0.75) at distances 1 + t, t, 1 - t, 2 - t. The
    constants are Python floats (a, a + 2, ... are exact in float32), which take t's dtype
    and, unlike NumPy scalars on the left, never call NumPy on a device array."""
    a = -0.75

    def near(x: Any) -> Any:       # |x| <= 1
        return ((a + 2) * x - (a + 3)) * x * x + 1

    def far(x: Any) -> Any:        # 1 < |x| < 2
        return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a
    one = 1.0
    return [far(t + one), near(t), near(one - t), far(one - t + one)]


def _fused_cubic_weights(t: Any) -> List[Any]:
    """Keys' weights as torch's compiled float32 kernel evaluates them for half inputs: each
    multiply-then-add of the polynomials is one fused multiply-add (the product is not
    rounded; float64 holds it exactly), then float32 rounding after each fused step."""
    a, f32, f64 = -0.75, np.float32, np.float64

    def step(u: Any, x: Any, c: float) -> Any:         # fma(u, x, c) rounded to float32
        return (u.astype(f64) * x + c).astype(f32)

    def near(x: Any) -> Any:       # fma(fma(a + 2, x, -(a + 3)) * x, x, 1)
        x = x.astype(f64)
        u = ((a + 2) * x - (a + 3)).astype(f32)
        return step((u.astype(f64) * x).astype(f32), x, 1.0)

    def far(x: Any) -> Any:        # fma(fma(fma(a, x, -5 a), x, 8 a), x, -4 a)
        x = x.astype(f64)
        u = (a * x - 5 * a).astype(f32)
        return step(step(u, x, 8 * a), x, -4 * a)
    return [far(t + 1.0), near(t), near(1.0 - t), far(1.0 - t + 1.0)]


def _cubic_matrix(xp: Any, in_size: int, out_size: int, scale_factor: Optional[float],
                  align_corners: bool, dtype: Any, half: Any = None) -> Any:
    """With ``half``: the weights (fused, _fused_cubic_weights) rounded to the input's
    dtype, as torch stores them."""
    index, t = _guarded(xp, _source(xp, in_size, out_size, scale_factor, align_corners,
                                    True, dtype), in_size)
    matrix = xp.zeros((out_size, in_size), dtype=dtype)
    weights = (_cubic_weights(t) if half is None else
               [w.astype(half).astype(dtype) for w in _fused_cubic_weights(t)])
    for k, weight in enumerate(weights):      # taps clipped at the edges add up
        taps = xp.clip(index - 1 + k, 0, in_size - 1)
        matrix = matrix + weight[:, None] * _one_hot(xp, taps, in_size, dtype)
    return matrix


def _area_windows(xp: Any, in_size: int, out_size: int) -> Tuple[Any, Any]:
    """Adaptive average pooling's windows: output o averages inputs [floor(o in / out),
    ceil((o + 1) in / out))."""
    rows = xp.arange(out_size)
    return (rows * in_size) // out_size, -((-(rows + 1) * in_size) // out_size)


def _area_matrix(xp: Any, in_size: int, out_size: int, dtype: Any) -> Any:
    """Adaptive average pooling: output o averages inputs [floor(o in / out),
    ceil((o + 1) in / out))."""
    start, end = _area_windows(xp, in_size, out_size)
    cols = xp.arange(in_size)[None, :]
    inside = (cols >= start[:, None]) & (cols < end[:, None])
    weight = 1 / (end - start).astype(dtype)
    return xp.where(inside, weight[:, None], dtype(0)).astype(dtype)


def _antialias_matrix(xp: Any, in_size: int, out_size: int, scale_factor: Optional[float],
                      align_corners: bool, dtype: Any, cubic: bool) -> Any:
    """torch's antialiased (PIL-style) resampling along one dim: the filter (the triangle
    max(0, 1 - |d|), or Keys' cubic with A = -0.5 for bicubic) is stretched by the scale
    when downsampling (scale = in / out > 1: support = half-width * scale, distances
    divided by the scale), so every output averages all the inputs under it. Output o is
    centred at c = scale (o + 0.5) and reads inputs [int(c - support + 0.5),
    int(c + support + 0.5)) clipped to [0, in); input j sits at distance
    (j - c + 0.5) / scale; the weights are divided by their sum (0 when that is 0). The scale
    is (in - 1) / (out - 1) with align_corners, else 1 / scale_factor or in / out (as the
    other modes); computed in the input's precision (float32 or float64)."""
    if align_corners:
        scale = dtype(in_size - 1) / dtype(out_size - 1) if out_size > 1 else dtype(0)
    else:
        scale = _scale(in_size, out_size, scale_factor, dtype)
    half_width = 2.0 if cubic else 1.0
    # Python floats holding the dtype's values (a NumPy scalar on the left of a device
    # array would call NumPy on it); they take the array's dtype
    support = float(dtype(half_width * scale if scale >= 1 else half_width))
    inverse = float(dtype(1 / scale if scale >= 1 else 1))
    centre = (xp.arange(out_size).astype(dtype) + 0.5) * float(scale)
    low = xp.maximum((centre - support + 0.5).astype(np.int64), 0)
    high = xp.minimum((centre + support + 0.5).astype(np.int64), in_size)
    cols = xp.arange(in_size)
    inside = (cols[None, :] >= low[:, None]) & (cols[None, :] < high[:, None])
    d = xp.abs((cols.astype(dtype)[None, :] - centre[:, None] + 0.5) * inverse)
    d = d.astype(dtype)
    if cubic:
        a = -0.5
        near = ((a + 2) * d - (a + 3)) * d * d + 1
        far = (((d - 5) * d + 8) * d - 4) * a
        weight = xp.where(d < 1, near, xp.where(d < 2, far, 0))
    else:
        weight = xp.maximum(1 - d, 0)
    weight = xp.where(inside, weight, 0).astype(dtype)
    total = weight.sum(axis=1, keepdims=True)
    safe = xp.where(total != 0, total, 1)
    return xp.where(total != 0, weight * (1 / safe), 0).astype(dtype)


def _sizes(input: Tensor, size: Any, scale_factor: Any, mode: str,  # noqa: A002
           recompute_scale_factor: Optional[bool]
           ) -> Tuple[List[int], List[Optional[float]]]:
    """torch's rules: exactly one of size / scale_factor, one per spatial dim (or one for
    all); the output size and the scale factors the kernels see."""
    dim = input.ndim - 2
    spatial = list(input.shape[2:])
    if size is not None and scale_factor is not None:
        raise ValueError("only one of size or scale_factor should be defined")
    scales: List[Optional[float]] = [None] * dim
    if size is not None:
        if isinstance(size, (list, tuple)):
            if len(size) != dim:
                raise ValueError(f"Input and output must have the same number of spatial "
                                 f"dimensions, but got input with spatial dimensions of "
                                 f"{spatial} and output size of {size}. Please provide input "
                                 f"tensor in (N, C, d1, d2, ...,dK) format and output size in "
                                 f"(o1, o2, ...,oK) format.")
            if not all(isinstance(s, (int, np.integer)) and not isinstance(s, bool)
                       for s in size):
                raise TypeError(f"expected size to be one of int or Tuple[int] or Tuple[int, "
                                f"int] or Tuple[int, int, int], but got size with types "
                                f"{[type(s) for s in size]}")
            output = [int(s) for s in size]
        else:
            output = [int(size)] * dim
        if recompute_scale_factor:
            raise ValueError("recompute_scale_factor is not meaningful with an explicit size.")
        return output, scales
    if scale_factor is None:
        raise ValueError("either size or scale_factor should be defined")
    if isinstance(scale_factor, (list, tuple)):
        if len(scale_factor) != dim:
            raise ValueError(f"Input and scale_factor must have the same number of spatial "
                             f"dimensions, but got input with spatial dimensions of {spatial} "
                             f"and scale_factor of shape {scale_factor}. Please provide input "
                             f"tensor in (N, C, d1, d2, ...,dK) format and scale_factor in "
                             f"(s1, s2, ...,sK) format.")
        factors = [float(f) for f in scale_factor]
    else:
        factors = [float(scale_factor)] * dim
    output = [math.floor(float(n) * f) for n, f in zip(spatial, factors)]
    if mode == "area" or recompute_scale_factor:
        return output, scales            # the kernels recompute scale = in / out
    return output, list(factors)


def _check_mode(input: Tensor, mode: str, align_corners: Optional[bool],  # noqa: A002
                antialias: bool) -> None:
    if mode in ("nearest", "area", "nearest-exact"):
        if align_corners is not None:
            raise ValueError("align_corners option can only be set with the interpolating "
                             "modes: linear | bilinear | bicubic | trilinear")
    if antialias:
        if not (mode in ("bilinear", "bicubic") and input.ndim == 4):
            raise ValueError("Anti-alias option is restricted to bilinear, bicubic, and "
                             "lanczos modes and requires a 4-D tensor as input")
        if is_low_precision(input.dtype):
            name = "Half" if input.dtype == np.float16 else "BFloat16"
            raise NotImplementedError(f'"compute_index_ranges_weights" not implemented for '
                                      f"'{name}' (torch's antialiased interpolation on the "
                                      f"CPU takes float32, float64 and uint8: convert with "
                                      f".float() first)")
    needed = _LINEAR_DIMS.get(mode)
    if mode in _MODES and input.ndim in (3, 4, 5) and (needed is None or needed == input.ndim):
        return
    if needed is not None and input.ndim in (3, 4, 5) and mode != "bicubic":
        raise NotImplementedError(f"Got {input.ndim}D input, but {mode} mode needs {needed}D "
                                  f"input")
    raise NotImplementedError(f"Input Error: Only 3D, 4D and 5D input Tensors supported (got "
                              f"{input.ndim}D) for the modes: nearest | linear | bilinear | "
                              f"bicubic | trilinear | lanczos | area | nearest-exact (got "
                              f"{mode})")


def interpolate(input: Tensor, size: Any = None, scale_factor: Any = None,  # noqa: A002
                mode: str = "nearest", align_corners: Optional[bool] = None,
                recompute_scale_factor: Optional[bool] = None,
                antialias: bool = False) -> Tensor:
    """``F.interpolate``: resize the spatial dims of (N, C, L), (N, C, H, W) or
    (N, C, D, H, W) to ``size`` or by ``scale_factor`` (the output size is
    floor(in * scale_factor)); modes nearest, nearest-exact, linear (3-D), bilinear and
    bicubic (4-D), trilinear (5-D) and area; ``align_corners`` for the interpolating modes;
    ``antialias`` for bilinear and bicubic."""
    _check_mode(input, mode, align_corners, antialias)
    output, scales = _sizes(input, size, scale_factor, mode, recompute_scale_factor)
    spatial = list(input.shape[2:])
    if any(n <= 0 for n in spatial) or (mode != "area" and any(o <= 0 for o in output)):
        names = ("D", "H", "W")[-len(spatial):]       # area (adaptive pooling) may give 0
        shown = [", ".join(f"{k}: {v}" for k, v in zip(names, sizes))
                 for sizes in (spatial, output)]
        raise RuntimeError(f"Input and output sizes should be greater than 0, but got input "
                           f"({shown[0]}) output ({shown[1]})")
    axes = range(2, input.ndim)
    if mode in ("nearest", "nearest-exact"):
        xp = backend.get_array_module(input._data)
        reads = tuple((axis, _nearest_index(xp, n, o, s, mode == "nearest-exact"))
                      for axis, n, o, s in zip(axes, spatial, output, scales))
        return name_node(PadByIndex.apply(input, reads=reads), _node_name(mode, input, output))
    if input.dtype == np.uint8 and mode in ("bilinear", "bicubic"):
        return _resample_uint8(input, mode, output, scales, bool(align_corners), antialias)
    if input.dtype.kind not in "fV":
        raise NotImplementedError(f"interpolate: mode {mode!r} of an integer ({input.dtype}) "
                                  f"input: torch takes only uint8 with bilinear and bicubic "
                                  f"(and refuses this one); convert it with .float() first")
    dtype = np.float64 if input.dtype == np.float64 else np.float32
    # torch stores linear, trilinear and bicubic weights in a half input's dtype; its
    # bilinear kernel keeps them in float32
    half = input.dtype if is_low_precision(input.dtype) and mode != "bilinear" else None
    corners = bool(align_corners)
    xp = backend.get_array_module(input._data)       # the weights are born on input's device
    if mode == "area":
        maps = [_area_matrix(xp, n, o, dtype) for n, o in zip(spatial, output)]
    elif antialias:
        maps = [_antialias_matrix(xp, n, o, s, corners, dtype, mode == "bicubic")
                for n, o, s in zip(spatial, output, scales)]
    elif mode == "bicubic":
        maps = [_cubic_matrix(xp, n, o, s, corners, dtype, half)
                for n, o, s in zip(spatial, output, scales)]
    else:
        maps = [_linear_matrix(xp, n, o, s, corners, dtype, half)
                for n, o, s in zip(spatial, output, scales)]
    function = ResampleArea if mode == "area" else Resample
    return name_node(function.apply(input, maps=tuple(zip(axes, maps))),
                     _node_name(mode, input, output, antialias))


def _node_name(mode: str, input: Tensor, output: Any, antialias: bool = False) -> str:  # noqa: A002
    """torch's grad_fn name for the mode: its upsample kernel's (``UpsampleBilinear2D``,
    ``...Aa`` with antialias), and for "area" adaptive average pooling's: a mean to one
    element, and a 1-D input unsqueezed into the 2-D kernel, then squeezed."""
    spatial = input.ndim - 2
    if mode == "area":
        if spatial == 1:
            return "SqueezeBackward1"
        return "MeanBackward1" if all(o == 1 for o in output) else \
            f"AdaptiveAvgPool{spatial}DBackward0"
    kind = {"nearest": "Nearest", "nearest-exact": "NearestExact"}.get(mode, mode.capitalize())
    return f"Upsample{kind}{spatial}D{'Aa' if antialias else ''}Backward0"


def _fixed_point(matrix: np.ndarray) -> Tuple[np.ndarray, int]:
    """torch's uint8 weights: the float64 weights times 2^p rounded half away from zero to
    integers, p the largest precision (at most 22 bits) whose largest weight still fits in
    a signed 16-bit integer."""
    largest = float(matrix.max()) if matrix.size else 0.0
    bits = 0
    while bits < 22 and int(0.5 + largest * (1 << (bits + 1))) < (1 << 15):
        bits += 1
    scaled = matrix * (1 << bits)
    return np.where(scaled < 0, np.trunc(scaled - 0.5), np.trunc(scaled + 0.5)).astype(
        np.int64), bits


def _resample_uint8(input: Tensor, mode: str, output: List[int],  # noqa: A002
                    scales: List[Optional[float]], corners: bool, antialias: bool) -> Tensor:
    """uint8 bilinear/bicubic as torch's CPU kernel: one pass per dim, the last (width)
    first, each in integers: sum of fixed-point weights (_fixed_point) times the pixels, plus
    2^(p-1), shifted right by p (rounding to nearest, halves up), clamped to [0, 255] and
    stored as uint8 before the next pass. No gradient (an integer tensor has none)."""
    x = input._data
    xp = backend.get_array_module(x)
    spatial = list(input.shape[2:])
    for axis, n, o, s in reversed(list(zip(range(2, input.ndim), spatial, output, scales))):
        if antialias:
            matrix = _antialias_matrix(np, n, o, s, corners, np.float64, mode == "bicubic")
        elif mode == "bicubic":
            matrix = _cubic_matrix(np, n, o, s, corners, np.float64)
        else:
            matrix = _linear_matrix(np, n, o, s, corners, np.float64)
        weights, bits = _fixed_point(matrix)
        weights = backend.to_device(weights, backend.device_of(x))
        y = xp.moveaxis(xp.tensordot(weights, x.astype(np.int64), axes=([1], [axis])), 0, axis)
        x = xp.clip((y + (1 << (bits - 1))) >> bits, 0, 255).astype(np.uint8)
    return Tensor._wrap(xp.ascontiguousarray(x))


def upsample(input: Tensor, size: Any = None, scale_factor: Any = None,  # noqa: A002
             mode: str = "nearest", align_corners: Optional[bool] = None) -> Tensor:
    """``F.upsample``: deprecated in torch in favour of ``interpolate`` (and warns)."""
    import warnings
    warnings.warn("`nn.functional.upsample` is deprecated. Use `nn.functional.interpolate` "
                  "instead.", stacklevel=2)
    return interpolate(input, size, scale_factor, mode, align_corners)


def upsample_nearest(input: Tensor, size: Any = None,  # noqa: A002
                     scale_factor: Any = None) -> Tensor:
    """``F.upsample_nearest``: deprecated; ``interpolate(..., mode="nearest")``."""
    import warnings
    warnings.warn("`nn.functional.upsample_nearest` is deprecated. Use "
                  "`nn.functional.interpolate` instead.", stacklevel=2)
    return interpolate(input, size, scale_factor, mode="nearest")


def upsample_bilinear(input: Tensor, size: Any = None,  # noqa: A002
                      scale_factor: Any = None) -> Tensor:
    """``F.upsample_bilinear``: deprecated; ``interpolate(..., mode="bilinear",
    align_corners=True)``."""
    import warnings
    warnings.warn("`nn.functional.upsample_bilinear` is deprecated. Use "
                  "`nn.functional.interpolate` instead.", stacklevel=2)
    return interpolate(input, size, scale_factor, mode="bilinear", align_corners=True)
