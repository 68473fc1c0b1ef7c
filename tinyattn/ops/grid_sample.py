"""``F.grid_sample`` and ``F.affine_grid``: sampling an input at the points of a grid
(docs/derivations.md#grid-sample-and-affine-grid).

``grid_sample(input, grid)``: input (N, C, H, W) or (N, C, D, H, W), grid (N, H', W', 2) or
(N, D', H', W', 3) of normalised coordinates in [-1, 1] (grid[..., 0] is x, along W; [..., 1]
is y, along H; [..., 2] is z, along D). Each coordinate u goes to a pixel coordinate
``ix = (u + 1) (size - 1) / 2`` (align_corners=True: -1 and 1 are the centres of the corner
pixels) or ``ix = ((u + 1) size - 1) / 2`` (False: they are the corners' outer edges), then
through the padding mode: ``zeros`` leaves it (taps outside read 0), ``border`` clips it to
[0, size - 1], ``reflection`` reflects it about the edges (about the centres of the corner
pixels with align_corners, their outer edges without) and clips. Then

- ``bilinear``: the 2^d pixels around ix, weights prod_k (1 - f_k) or f_k (f = ix - floor ix);
- ``nearest``: the pixel at ix rounded half to even (torch's nearbyint);
- ``bicubic`` (4-D only): the 4 x 4 pixels floor(ix) - 1 .. floor(ix) + 2, Keys' weights
  (A = -0.75) of t = ix - floor(ix); the padding mode applies to each tap's index (the
  coordinate itself is not clipped).

Backward: out is linear in input, so d input is the transpose: each output gradient is
scattered to the taps it read, with their weights. d grid: the weights depend on ix only
through f (t), so d out / d u = sum over taps of value * d weight / d f * (d ix / d u), with
d ix / d u = (size - 1) / 2 or size / 2 times the padding's slope (1 inside, 0 where clipped,
-1 where reflected an odd number of times; bicubic: 1). nearest gives grid a zero gradient.

float16/bfloat16: the forward rounds every step to the half dtype in torch's order (its CPU
kernel's scalar path), bit for bit; the backward computes in float32 and rounds once.

``affine_grid(theta, size)``: the base grid of normalised pixel centres (x, y[, z], 1) times
theta^T, a (batched) matrix product, differentiated as one.
"""
from __future__ import annotations

import warnings
from typing import Any, List, Sequence, Tuple

import numpy as np

from .. import backend
from ..autograd import Function
from ..precision import is_low_precision, scalar_type_name
from ..tensor import Tensor
from .matmul import matmul

__all__ = ["grid_sample", "affine_grid"]

_MODES = ("bilinear", "nearest", "bicubic")
_PADDINGS = ("zeros", "border", "reflection")
_A = -0.75


def _unnormalize(xp: Any, u: Any, size: int, align_corners: bool) -> Tuple[Any, float]:
    """pixel coordinate of normalised u, and d ix / d u"""
    if align_corners:
        return (u + 1) / 2 * (size - 1), (size - 1) / 2
    return ((u + 1) * size - 1) / 2, size / 2


def _reflect(xp: Any, x: Any, twice_low: int, twice_high: int) -> Tuple[Any, Any]:
    """x reflected into [twice_low / 2, twice_high / 2], and the slope (+1 or -1)"""
    if twice_low == twice_high:
        return xp.zeros_like(x), xp.zeros_like(x)
    low = twice_low / 2
    span = (twice_high - twice_low) / 2
    shifted = x - low
    slope = xp.where(shifted < 0, -1.0, 1.0).astype(x.dtype)
    shifted = xp.abs(shifted)
    extra = xp.fmod(shifted, span)
    flips = xp.floor(shifted / span)
    even = (flips % 2) == 0
    return (xp.where(even, extra + low, span - extra + low).astype(x.dtype),
            (slope * xp.where(even, 1.0, -1.0)).astype(x.dtype))


def _clip(xp: Any, x: Any, size: int) -> Tuple[Any, Any]:
    inside = (x > 0) & (x < size - 1)
    return xp.clip(x, 0, size - 1).astype(x.dtype), inside.astype(x.dtype)


def _pad(xp: Any, x: Any, size: int, padding: str, align_corners: bool) -> Tuple[Any, Any]:
    """torch's compute_coordinates: the coordinate after the padding mode, and its slope"""
    if padding == "border":
        return _clip(xp, x, size)
    if padding == "reflection":
        if align_corners:
            x, slope = _reflect(xp, x, 0, 2 * (size - 1))
        else:
            x, slope = _reflect(xp, x, -1, 2 * size - 1)
        x, inside = _clip(xp, x, size)
        return x, slope * inside
    return x, xp.ones_like(x)


def _cubic(t: Any) -> Tuple[List[Any], List[Any]]:
    """Keys' weights at distances 1 + t, t, 1 - t, 2 - t and their derivatives in t"""
    def near(x: Any) -> Any:
        return ((_A + 2) * x - (_A + 3)) * x * x + 1

    def far(x: Any) -> Any:
        return ((_A * x - 5 * _A) * x + 8 * _A) * x - 4 * _A

    def near_slope(x: Any) -> Any:
        return (3 * (_A + 2) * x - 2 * (_A + 3)) * x

    def far_slope(x: Any) -> Any:
        return (3 * _A * x - 10 * _A) * x + 8 * _A
    s = 1 - t
    return ([far(t + 1), near(t), near(s), far(s + 1)],
            [far_slope(t + 1), near_slope(t), -near_slope(s), -far_slope(s + 1)])


class GridSample(Function):
    """out[n, c, p] = sum over taps q of w_q(p) input[n, c, idx_q(p)] (0 for a tap outside
    with zeros padding); the taps and weights depend on grid[n, p] only."""
    versions_checked = (0, 1)
    # float16/bfloat16: bilinear and nearest run in the half dtype, rounding every step as
    # torch's CPU kernel does (its scalar fallback); bicubic computes in float32 and rounds
    # once (torch's order of roundings there is not reproduced: a skip-table row)
    computes_in_half = True

    def _taps(self, xp: Any, grid: Any, spatial: Sequence[int]):
        """per tap: the flat index into (N * prod(spatial)), its validity, its weight, and
        per dim the weight's derivative factor (for d grid)"""
        mode, padding, corners = self.mode, self.padding, self.corners
        d = len(spatial)
        n = grid.shape[0]
        per_dim = []           # per spatial dim j (D, H, W order): list of (index, valid, w, dw)
        for j, size in enumerate(spatial):
            u = grid[..., d - 1 - j]
            ix, scale = _unnormalize(xp, u, size, corners)
            options = []
            if mode == "bicubic":
                base = xp.floor(ix)
                t = ix - base
                weights, slopes = _cubic(t)
                for k in range(4):
                    at, _ = _pad(xp, base - 1 + k, size, padding, corners)
                    at = at.astype(np.int64) if padding != "zeros" else at
                    valid = (at >= 0) & (at <= size - 1)
                    options.append((xp.clip(at, 0, size - 1).astype(np.int64), valid,
                                    weights[k], slopes[k] * scale))
            else:
                ix, slope = _pad(xp, ix, size, padding, corners)
                if mode == "nearest":
                    at = xp.rint(ix)
                    valid = (at >= 0) & (at <= size - 1)
                    options.append((xp.clip(at, 0, size - 1).astype(np.int64), valid,
                                    xp.ones_like(ix), xp.zeros_like(ix)))
                else:
                    low = xp.floor(ix)
                    # torch's weights: (low + 1) - ix and ix - low (not 1 - f: in a half
                    # dtype, where torch rounds every step, the two differ)
                    for k, (w, dw) in enumerate((((low + 1) - ix, -1.0), (ix - low, 1.0))):
                        at = low + k
                        valid = (at >= 0) & (at <= size - 1)
                        options.append((xp.clip(at, 0, size - 1).astype(np.int64), valid, w,
                                        dw * slope * scale))
            per_dim.append(options)
        batch = xp.arange(n).reshape((n,) + (1,) * d)
        for choice in np.ndindex(*[len(o) for o in per_dim]):
            flat, valid, weight = batch, True, None
            for j, k in enumerate(choice):
                at, ok, _, _ = per_dim[j][k]
                flat = flat * spatial[j] + at
                valid = valid & ok
            for j in reversed(range(d)):     # torch's product order: x, then y, then z
                w = per_dim[j][choice[j]][2]
                weight = w if weight is None else weight * w
            slopes = []
            for j in range(d):              # d weight / d u_j: the other dims' weights kept
                factor = per_dim[j][choice[j]][3]
                for i, k in enumerate(choice):
                    if i != j:
                        factor = factor * per_dim[i][k][2]
                slopes.append(factor)
            yield flat, valid, weight, slopes

    def forward(self, x, grid, mode: str, padding: str, corners: bool):
        xp = backend.get_array_module(x)
        self.mode, self.padding, self.corners = mode, padding, corners
        self.save_for_backward(x, grid)
        if is_low_precision(x.dtype) and mode == "bicubic":
            return self._bicubic_in_half(xp, x, grid)
        return self._sample(xp, x, grid)

    def _bicubic_in_half(self, xp: Any, x: Any, grid: Any) -> Any:
        """bicubic in a half dtype in torch's order, each step rounded: along x, each of
        the 4 rows' taps weighted and summed left to right (x0 c0 + x1 c1 + x2 c2 + x3 c3),
        then those 4 sums along y the same way; the weights from Keys' polynomials with
        every product and sum rounded."""
        dtype = x.dtype
        n, c, height, width = x.shape
        rows = xp.moveaxis(x, 1, -1).reshape(-1, c)
        batch = xp.arange(n).reshape(n, 1, 1)

        def weights(t: Any) -> List[Any]:
            def near(v: Any) -> Any:
                return ((v * (_A + 2) - (_A + 3)) * v * v + 1).astype(dtype)

            def far(v: Any) -> Any:
                return (((v * _A - 5 * _A) * v + 8 * _A) * v - 4 * _A).astype(dtype)
            s = (1.0 - t).astype(dtype)
            return [far((t + 1.0).astype(dtype)), near(t), near(s), far((s + 1.0).astype(dtype))]

        def line(values: List[Any], w: List[Any]) -> Any:
            total = values[0] * w[0][..., None]
            for value, weight in zip(values[1:], w[1:]):
                total = total + value * weight[..., None]
            return total.astype(dtype)
        coords = []
        for k, size in ((0, width), (1, height)):
            u = grid[..., k]
            ix = (((u + 1) / 2 * (size - 1)) if self.corners
                  else (((u + 1) * size - 1) / 2)).astype(dtype)
            low = xp.floor(ix)
            coords.append((low, weights((ix - low).astype(dtype)), size))
        (low_x, wx, _), (low_y, wy, _) = coords
        taps_x = [self._tap(xp, low_x - 1 + i, width) for i in range(4)]
        sums = []
        for j in range(4):
            at_y, ok_y = self._tap(xp, low_y - 1 + j, height)
            values = [xp.where((ok_y & ok_x)[..., None],
                               rows[(batch * height + at_y) * width + at_x], 0).astype(dtype)
                      for at_x, ok_x in taps_x]
            sums.append(line(values, wx))
        return xp.ascontiguousarray(xp.moveaxis(line(sums, wy), -1, 1))

    def _tap(self, xp: Any, at: Any, size: int) -> Tuple[Any, Any]:
        """a tap's index after the padding mode (clipped for the gather) and whether it is
        inside"""
        if self.padding != "zeros":
            at, _ = _pad(xp, at, size, self.padding, self.corners)
        valid = (at >= 0) & (at <= size - 1)
        return xp.clip(at, 0, size - 1).astype(np.int64), valid

    def _sample(self, xp: Any, x: Any, grid: Any) -> Any:
        n, c = x.shape[:2]
        spatial = x.shape[2:]
        rows = xp.moveaxis(x, 1, -1).reshape(-1, c)             # (N * prod(spatial), C)
        out = xp.zeros(grid.shape[:-1] + (c,), dtype=x.dtype)
        for flat, valid, weight, _ in self._taps(xp, grid, spatial):
            out = out + (weight * valid)[..., None] * rows[flat]
        return xp.ascontiguousarray(xp.moveaxis(out, -1, 1))

    def backward(self, grad):
        x, grid = self.saved
        xp = backend.get_array_module(grad)
        if is_low_precision(grad.dtype):         # the gradients in float32, rounded once
            dx, dgrid = self._gradients(xp, grad.astype(np.float32), x.astype(np.float32),
                                        grid.astype(np.float32))
            return (None if dx is None else dx.astype(grad.dtype),
                    None if dgrid is None else dgrid.astype(grad.dtype))
        return self._gradients(xp, grad, x, grid)

    def _gradients(self, xp: Any, grad: Any, x: Any, grid: Any):
        c = x.shape[1]
        spatial = x.shape[2:]
        rows = xp.moveaxis(x, 1, -1).reshape(-1, c)
        g = xp.moveaxis(grad, 1, -1)                              # (N, *out, C)
        dx = xp.zeros_like(rows) if self.needs_input_grad[0] else None
        dgrid = xp.zeros_like(grid)
        for flat, valid, weight, slopes in self._taps(xp, grid, spatial):
            if dx is not None:
                backend.scatter_add(dx, flat.reshape(-1),
                                    ((weight * valid)[..., None] * g).reshape(-1, c))
            if self.needs_input_grad[1] and self.mode != "nearest":
                along = (rows[flat] * g).sum(axis=-1) * valid    # (N, *out)
                for j, slope in enumerate(slopes):
                    dgrid[..., len(spatial) - 1 - j] += along * slope
        if dx is not None:
            dx = xp.ascontiguousarray(xp.moveaxis(dx.reshape((x.shape[0],) + tuple(spatial)
                                                             + (c,)), -1, 1))
        return dx, (dgrid if self.needs_input_grad[1] else None)


_ALIGN_WARNING = ("Default grid_sample and affine_grid behavior has changed to "
                  "align_corners=False since 1.3.0. Please specify align_corners=True if the "
                  "old behavior is desired. See the documentation of grid_sample for details.")


def grid_sample(input: Tensor, grid: Tensor, mode: str = "bilinear",  # noqa: A002
                padding_mode: str = "zeros", align_corners: Any = None) -> Tensor:
    """``F.grid_sample``: input sampled at grid's normalised points (module docstring)."""
    if mode not in _MODES:
        raise ValueError(f"nn.functional.grid_sample(): expected mode to be 'bilinear', "
                         f"'nearest' or 'bicubic', but got: '{mode}'")
    if padding_mode not in _PADDINGS:
        raise ValueError(f"nn.functional.grid_sample(): expected padding_mode to be 'zeros', "
                         f"'border', or 'reflection', but got: '{padding_mode}'")
    if align_corners is None:
        warnings.warn(_ALIGN_WARNING, stacklevel=2)
        align_corners = False
    if not isinstance(input, Tensor) or not isinstance(grid, Tensor):
        raise TypeError(f"grid_sample(): expected input and grid to be Tensors, got "
                        f"{type(input).__name__} and {type(grid).__name__}")
    if input.dtype != grid.dtype:
        raise RuntimeError(f"grid_sampler(): expected input and grid to have same dtype, but "
                           f"input has {_name(input.dtype)} and grid has {_name(grid.dtype)}")
    if input.ndim not in (4, 5):
        raise RuntimeError(f"grid_sampler(): expected 4D or 5D input and grid with same "
                           f"number of dimensions, but got input with sizes "
                           f"{list(input.shape)} and grid with sizes {list(grid.shape)}")
    if grid.ndim != input.ndim or grid.shape[0] != input.shape[0]:
        if grid.ndim == input.ndim:
            raise RuntimeError(f"grid_sampler(): expected grid and input to have same batch "
                               f"size, but got input with sizes {list(input.shape)} and grid "
                               f"with sizes {list(grid.shape)}")
        raise RuntimeError(f"grid_sampler(): expected 4D or 5D input and grid with same "
                           f"number of dimensions, but got input with sizes "
                           f"{list(input.shape)} and grid with sizes {list(grid.shape)}")
    if grid.shape[-1] != input.ndim - 2:
        raise RuntimeError(f"grid_sampler(): expected grid to have size {input.ndim - 2} in "
                           f"last dimension, but got grid with sizes {list(grid.shape)}")
    if any(s == 0 for s in input.shape[2:]):
        raise RuntimeError(f"grid_sampler(): expected input to have non-empty spatial "
                           f"dimensions, but input has sizes {list(input.shape)} with "
                           f"dimension 2 being empty")
    if mode == "bicubic" and input.ndim != 4:
        raise RuntimeError("grid_sampler(): bicubic interpolation only supports 4D input")
    if input.dtype.kind not in "fV":
        raise RuntimeError(f'"grid_sampler_2d_cpu" not implemented for '
                           f"'{_name(input.dtype)}'")
    return GridSample.apply(input, grid, mode=mode, padding=padding_mode,
                            corners=bool(align_corners))


_name = scalar_type_name    # torch's ScalarType name (float32 -> Float)


def _base_coordinates(steps: int, align_corners: bool, dtype: Any) -> np.ndarray:
    """torch's linspace_from_neg_one: steps points from -1 to 1 (align_corners), scaled by
    (steps - 1) / steps without (the pixel centres); one point: 0"""
    if steps <= 1:
        return np.zeros(1, dtype=dtype)
    points = np.linspace(-1, 1, steps, dtype=np.float64).astype(dtype)
    if not align_corners:
        points = (points * (steps - 1) / steps).astype(dtype)
    return points


def affine_grid(theta: Tensor, size: Sequence[int], align_corners: Any = None) -> Tensor:
    """``F.affine_grid``: theta (N, 2, 3) with size (N, C, H, W) gives (N, H, W, 2); theta
    (N, 3, 4) with size (N, C, D, H, W) gives (N, D, H, W, 3): grid[n, p] = theta[n] @
    (x_p, y_p[, z_p], 1), the base points the normalised pixel centres (or corners with
    align_corners). The gradient to theta: that of a batched matrix product."""
    if align_corners is None:
        warnings.warn(_ALIGN_WARNING, stacklevel=2)
        align_corners = False
    if not isinstance(theta, Tensor) or theta.dtype.kind not in "fV":
        raise ValueError(f"Expected theta to have floating point type, but got "
                         f"{getattr(theta, 'dtype', type(theta).__name__)}")
    size = [int(s) for s in size]
    if len(size) == 4:
        if theta.ndim != 3 or tuple(theta.shape[1:]) != (2, 3):
            raise ValueError(f"Expected a batch of 2D affine matrices of shape Nx2x3 for size "
                             f"{tuple(size)}. Got {tuple(theta.shape)}.")
        spatial = size[-2:]
    elif len(size) == 5:
        if theta.ndim != 3 or tuple(theta.shape[1:]) != (3, 4):
            raise ValueError(f"Expected a batch of 3D affine matrices of shape Nx3x4 for size "
                             f"{tuple(size)}. Got {tuple(theta.shape)}.")
        spatial = size[-3:]
    else:
        raise NotImplementedError(f"affine_grid only supports 4D and 5D sizes, for 2D and 3D "
                                  f"affine transforms, respectively. Got size {tuple(size)}.")
    if min(size) <= 0:
        raise ValueError(f"Expected non-zero, positive output size. Got {tuple(size)}")
    if align_corners and min(spatial) == 1:
        warnings.warn("Since version 1.3.0, affine_grid behavior has changed for unit-size "
                      "grids when align_corners=True. This is not an intended use case of "
                      "affine_grid. See the documentation of affine_grid for details.",
                      stacklevel=2)
    if theta.shape[0] != size[0]:
        raise ValueError(f"Expected theta batch size {theta.shape[0]} to match size[0] "
                         f"{size[0]}")
    dtype = np.float32 if theta.dtype.itemsize < 4 else theta.dtype
    axes = [_base_coordinates(s, bool(align_corners), dtype) for s in spatial]   # D, H, W
    mesh = np.meshgrid(*axes, indexing="ij")
    base = np.stack(list(reversed(mesh)) + [np.ones_like(mesh[0])], axis=-1)     # x, y, z, 1
    points = int(np.prod(spatial))
    base_t = Tensor._wrap(backend.to_device(
        base.reshape(1, points, len(spatial) + 1).astype(theta.dtype), theta.device))
    grid = matmul(base_t, theta.transpose(1, 2))           # (N, points, d)
    return grid.reshape(size[0], *spatial, len(spatial))
