"""Exercise 02, reductions: reference solution for sum_backward and mean_backward.

Derivation (docs/derivations.md#reductions)
    out = sum of x over some axes. Each x element appears in exactly one sum, with
    coefficient 1, so d out[j] / d x[i] = 1 when x[i] was summed into out[j], else 0:
    dx[i] = grad[j], the output gradient copied back along the reduced axes.
    Copying needs the reduced axes back as size-1 axes first (np.expand_dims), or NumPy
    broadcasts grad against the wrong axis (a (4,) grad against a (4, 4) x lines up with
    the LAST axis, whatever axis was reduced).
    mean = sum / N, with N the number of elements reduced into each output, so
    dx = grad / N, copied the same way.
"""
import numpy as np


def sum_forward(x, axis, keepdims):
    """out = x.sum(axis=axis, keepdims=keepdims); axis: an int, a tuple of ints, or None
    (all axes). Given; do not change."""
    out = np.asarray(x.sum(axis=axis, keepdims=keepdims))
    return out, (x.shape, axis, keepdims)


def reduced_axes(shape, axis):
    """The reduced axes as a sorted tuple of non-negative ints."""
    if axis is None:
        return tuple(range(len(shape)))
    axes = (axis,) if isinstance(axis, int) else axis
    return tuple(sorted(a % len(shape) for a in axes))


def expand_back(grad, shape, axis, keepdims):
    """Put the reduced axes back with size 1 (unless keepdims kept them), then copy along
    them: (3,) -> (3, 1) -> (3, 4) for x (3, 4) summed over axis 1."""
    if not keepdims:
        grad = np.expand_dims(grad, reduced_axes(shape, axis))
    return np.broadcast_to(grad, shape)


def sum_backward(grad, cache):
    """Return dx, of x's shape."""
    shape, axis, keepdims = cache
    return expand_back(grad, shape, axis, keepdims)


def mean_forward(x, axis, keepdims):
    """out = x.mean(axis=axis, keepdims=keepdims). Given; do not change."""
    out = np.asarray(x.mean(axis=axis, keepdims=keepdims))
    return out, (x.shape, axis, keepdims)


def mean_backward(grad, cache):
    """Return dx, of x's shape."""
    shape, axis, keepdims = cache
    count = 1
    for a in reduced_axes(shape, axis):
        count *= shape[a]
    return expand_back(grad, shape, axis, keepdims) / count
